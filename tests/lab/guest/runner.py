"""The lab guest's scenario runner (started by /init; see tests/lab/qemu.py for the console
protocol). Names the emulated NICs by their MAC addresses, starts ``nicwatch serve`` on the
management NIC, runs each scenario of /lab/guest/scenarios in order, reports each one's
evidence (or its traceback), then the guest's facts (kernel, tool versions, dmesg, the
daemon's log), and leaves through QEMU's isa-debug-exit port: status 0 when it got to the
end, whatever the scenarios found (the host-side tests judge them)."""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
import traceback
from pathlib import Path

T0 = time.monotonic()
import labkit  # noqa: E402  (imports nicwatch: the time it takes is reported)
from labkit import PLAN, emit, event, read, sh, stop_serving, write  # noqa: E402

IMPORT_SECONDS = time.monotonic() - T0

# In this order: each scenario leaves its devices in place, and none depends on another.
SCENARIOS = ("nsim_ethtool", "nsim_devlink", "nsim_sriov", "rxe", "e1000e", "bonding")


def exit_qemu(status: int) -> None:
    """isa-debug-exit: QEMU exits with 2 * status + 1."""
    fd = os.open("/dev/port", os.O_WRONLY)
    os.lseek(fd, 0xF4, os.SEEK_SET)
    os.write(fd, bytes([status]))


def name_nics() -> dict[str, str]:
    """Rename each NIC to its role by MAC address (the kernel named them ethN in probe
    order; there is no udev here)."""
    roles = {mac: role for role, mac in PLAN["e1000e"].items()}
    roles[PLAN["mgmt"]["mac"]] = "mgmt0"
    found = {}
    for netdev in sorted(Path("/sys/class/net").iterdir()):
        role = roles.get(read(netdev / "address"))
        if role is not None:
            if netdev.name != role:
                sh("ip", "link", "set", netdev.name, "name", role)
            found[role] = os.path.basename(os.path.realpath(f"/sys/class/net/{role}/device"))
    return found


def setup() -> dict[str, object]:
    for knob in ("all", "default"):
        write(f"/proc/sys/net/ipv6/conf/{knob}/disable_ipv6", "1")
    sh("ip", "link", "set", "lo", "up")
    nics = labkit.wait_for("the emulated NICs", lambda: (
        len([n for n in os.listdir("/sys/class/net") if n != "lo"]) >= len(PLAN["e1000e"]) + 1),
        60)
    del nics
    found = name_nics()
    mgmt = PLAN["mgmt"]
    sh("ip", "addr", "add", f"{mgmt['address']}/{mgmt['prefix']}", "dev", "mgmt0")
    sh("ip", "link", "set", "mgmt0", "up")
    return {"nics": found}


def facts() -> dict[str, object]:
    def out(*argv: str) -> str:
        try:
            return sh(*argv).strip()
        except Exception as e:  # a tool's version is a fact, its absence too
            return f"unavailable: {e}"

    return {
        "uname": platform.uname()._asdict(),
        "proc_version": read("/proc/version"),
        "cmdline": read("/proc/cmdline"),
        "python": sys.version,
        "ethtool": out("ethtool", "--version"),
        "iproute2": out("ip", "-V"),
        "modules": read("/proc/modules").splitlines(),
        "tainted": read("/proc/sys/kernel/tainted"),
        "import_seconds": round(IMPORT_SECONDS, 2),
        "importtime": (sh("sh", "-c", "python3 -X importtime -c 'import nicwatch.cli.main' 2>&1",
                          check=False, timeout=600) if PLAN.get("importtime") else None),
        "seconds": round(time.monotonic() - T0, 1),
    }


def main() -> int:
    event(f"runner started (imports {IMPORT_SECONDS:.1f} s)")
    wanted = PLAN.get("scenarios") or list(SCENARIOS)
    try:
        emit("setup", "guest", setup())
        for name in SCENARIOS:
            if name not in wanted:
                continue
            module = importlib.import_module(f"scenarios.{name}")
            labkit.run_scenario(name, module.run)
            emit("log", f"serve-{name}", stop_serving())
    except BaseException:
        emit("error", "runner", traceback.format_exc())
    finally:
        try:
            emit("log", "dmesg", sh("dmesg", check=False))
            emit("facts", "guest", facts())
        except BaseException:
            emit("error", "teardown", traceback.format_exc())
    event("runner done")
    return 0


if __name__ == "__main__":
    status = 1
    try:
        status = main()
    finally:
        sys.stdout.flush()
        exit_qemu(status)
