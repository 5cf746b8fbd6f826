"""netdevsim SR-IOV: VFs enabled through ``sriov_numvfs`` and configured with `ip link set
... vf N ...`, in legacy mode and then in switchdev mode (VF representors), as `ip -j link
show` and `devlink -j port show` print them and as nicwatch reports them."""

from __future__ import annotations

import os

from labkit import (
    NSIM_BUS,
    Daemon,
    metrics_lines,
    nicwatch_cmd,
    nicwatch_json,
    nsim_new,
    read,
    serve,
    sh,
    tool_json,
    wait_for,
    write,
)

DEV = 13
VFS = 3
CHECK = """
[[expect]]
interfaces = "{pf}"
sriov_vfs = 3
"""


def observe(daemon: Daemon, pf: str, include: str) -> dict[str, object]:
    kernel = tool_json("ip", "-j", "-d", "link", "show", "dev", pf)
    metrics = daemon.fresh()
    args = ["--interfaces.include", include, "--collector.vfs"]
    show = nicwatch_json("show", "--json", *args)
    check = nicwatch_cmd("check", "--config", "/tmp/nsim_sriov.toml", "--json", *args)
    snap = nicwatch_cmd("snapshot", "-o", "/tmp/nsim_sriov.snapshot.json", *args)
    return {
        "kernel": kernel,
        "kernel_after": tool_json("ip", "-j", "-d", "link", "show", "dev", pf),
        "devlink_ports": tool_json("devlink", "-j", "port", "show"),
        "eswitch": tool_json("devlink", "-j", "dev", "eswitch", "show",
                             f"netdevsim/netdevsim{DEV}"),
        "links": tool_json("ip", "-j", "-d", "link", "show"),
        "metrics": metrics_lines(metrics, "nic_vf", "nic_sriov", "nic_devlink_port",
                                 "nic_info", "nicwatch_source_errors"),
        "show": show, "check": check,
        "snapshot": {"status": snap[0], "stderr": snap[2],
                     "text": open("/tmp/nsim_sriov.snapshot.json").read()
                     if snap[0] == 0 else None},
    }


def run() -> dict[str, object]:
    (pf,) = nsim_new(DEV, 1)
    sh("ip", "link", "set", pf, "up")
    device = NSIM_BUS / "devices" / f"netdevsim{DEV}"
    files = sorted(os.listdir(device))
    write(device / "sriov_numvfs", str(VFS))
    sh("ip", "link", "set", pf, "vf", "0", "mac", "52:54:00:6c:62:00", "vlan", "100", "qos", "2")
    sh("ip", "link", "set", pf, "vf", "1", "max_tx_rate", "500", "min_tx_rate", "100")
    sh("ip", "link", "set", pf, "vf", "1", "spoofchk", "off")
    sh("ip", "link", "set", pf, "vf", "2", "trust", "on")
    sh("ip", "link", "set", pf, "vf", "2", "state", "disable")
    with open("/tmp/nsim_sriov.toml", "w") as f:
        f.write(CHECK.format(pf=pf))
    daemon = serve("--interfaces.include", f"nsim{DEV}.*", "--collector.vfs")
    legacy = observe(daemon, pf, f"nsim{DEV}.*")
    sh("devlink", "dev", "eswitch", "set", f"netdevsim/netdevsim{DEV}", "mode", "switchdev")
    net = device / "net"
    wait_for("VF representors", lambda: len(os.listdir(net)) >= 1 + VFS, 30)
    for netdev in sorted(os.listdir(net)):
        port_name = read(net / netdev / "phys_port_name")
        if port_name.startswith("pf"):
            sh("ip", "link", "set", netdev, "name", f"nsim{DEV}{port_name}")
    for netdev in sorted(os.listdir(net)):
        sh("ip", "link", "set", netdev, "up")
    switchdev = observe(daemon, pf, f"nsim{DEV}.*")
    return {"pf": pf, "vfs": VFS, "device_files": files,
            "sriov_numvfs": read(device / "sriov_numvfs"),
            "legacy": legacy, "switchdev": switchdev}
