"""soft-RoCE: an rxe device over a netdevsim port (linked to a peer in a namespace, so it has
carrier), its RDMA port and hw_counters as `rdma -j` prints them and as nicwatch reports
them, and real RDMA traffic (ibv_rc_pingpong over rxe loopback, then perftest's ib_write_bw)
run under `nicwatch record`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from labkit import (
    metrics_lines,
    netns,
    nicwatch_cmd,
    nicwatch_json,
    nsim_link,
    nsim_new,
    serve,
    sh,
    spawn,
    tool_json,
    wait_for,
)

DEV = 14
ADDRESS = "198.18.14.1"
ITERS = 200


def rdma_state() -> dict[str, object]:
    return {
        "link": tool_json("rdma", "-j", "link", "show"),
        "dev": tool_json("rdma", "-j", "dev", "show"),
        "statistic": tool_json("rdma", "-j", "statistic", "show", "link", "rxe0/1"),
    }


def recorded(name: str, netdev: str, client: list[str], server: list[str]) -> dict[str, object]:
    """``client`` under `nicwatch record` while ``server`` runs; the kernel's counters
    before and after."""
    before = rdma_state()
    srv = spawn(*server)
    time.sleep(1.0)
    out = f"/tmp/record-{name}"
    rec = nicwatch_cmd("record", "-o", out, "--interval", "1s", "--interfaces.include",
                       netdev, "--", *client, timeout=600)
    try:
        server_out, _ = srv.communicate(timeout=60)
    except Exception:
        srv.kill()
        server_out, _ = srv.communicate()
    after = rdma_state()
    files = sorted(os.listdir(out)) if os.path.isdir(out) else []
    report = None
    if "report.json" in files:
        report = json.loads(Path(out, "report.json").read_text())
    return {"status": rec[0], "stdout": rec[1], "stderr": rec[2][-4000:],
            "server": {"argv": server, "status": srv.returncode, "output": server_out[-4000:]},
            "client": client, "files": files, "report": report,
            "kernel_before": before, "kernel_after": after}


def run() -> dict[str, object]:
    p0, p1 = nsim_new(DEV, 2)
    peer = netns("rxepeer")
    sh("ip", "link", "set", p1, "netns", peer)
    linked = nsim_link(p0, p1, ns_b=peer)
    sh("ip", "addr", "add", f"{ADDRESS}/24", "dev", p0)
    sh("ip", "link", "set", p0, "up")
    sh("ip", "-n", peer, "addr", "add", "198.18.14.2/24", "dev", p1)
    sh("ip", "-n", peer, "link", "set", p1, "up")
    sh("rdma", "link", "add", "rxe0", "type", "rxe", "netdev", p0)
    wait_for("rxe0 ACTIVE", lambda: "ACTIVE" in sh("rdma", "link", "show", "rxe0/1"), 30)
    daemon = serve("--interfaces.include", p0)
    idle = rdma_state()
    metrics = daemon.fresh()
    include = ["--interfaces.include", p0]
    show = nicwatch_json("show", "--json", *include)
    idle_after = rdma_state()
    pingpong = recorded(
        "pingpong", p0,
        ["ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", str(ITERS), ADDRESS],
        ["ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", str(ITERS)])
    write_bw = recorded(
        "write_bw", p0,
        ["ib_write_bw", "-d", "rxe0", "-x", "1", "-n", "200", "-s", "4096", ADDRESS],
        ["ib_write_bw", "-d", "rxe0", "-x", "1", "-n", "200", "-s", "4096"])
    metrics_after = daemon.fresh()
    snap = nicwatch_cmd("snapshot", "-o", "/tmp/rxe.snapshot.json", *include)
    final = rdma_state()
    return {
        "netdev": p0, "linked": linked, "iters": ITERS,
        "idle": idle, "idle_after": idle_after,
        "metrics": metrics_lines(metrics, "nic_rdma", "nic_info", "nicwatch_source_errors"),
        "show": show, "pingpong": pingpong, "write_bw": write_bw,
        "metrics_after": metrics_lines(metrics_after, "nic_rdma", "nic_info"),
        "final": final,
        "snapshot": {"status": snap[0], "stderr": snap[2],
                     "text": open("/tmp/rxe.snapshot.json").read() if snap[0] == 0 else None},
        "sysfs_files": sorted(os.listdir("/sys/class/infiniband/rxe0/ports/1/hw_counters")),
    }
