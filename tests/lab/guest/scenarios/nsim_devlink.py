"""netdevsim devlink: the device's health reporters (``empty``, ``dummy``), an error injected
through debugfs ``health/break_health`` and recovered, a recovery made to fail
(``fail_recover``: the reporter stays in error until ``devlink health recover``), and the
devlink ports, as `devlink -j` prints them and as nicwatch reports them (/metrics served to
the host, `show --json`, `check`)."""

from __future__ import annotations

import errno

from labkit import (
    DEBUGFS,
    Daemon,
    host_scrape,
    metrics_lines,
    nicwatch_cmd,
    nicwatch_json,
    nsim_link,
    nsim_new,
    serve,
    sh,
    tool_json,
    write,
)

DEV = 12
HANDLE = f"netdevsim/netdevsim{DEV}"
CHECK = """
[[expect]]
interfaces = "nsim12p[0-9]+"
devlink_health = "healthy"
"""


def step(daemon: Daemon, name: str) -> dict[str, object]:
    kernel = tool_json("devlink", "-j", "health", "show")
    metrics = daemon.fresh()
    include = ["--interfaces.include", f"nsim{DEV}p[0-9]+"]
    show = nicwatch_json("show", "--json", *include)
    check = nicwatch_cmd("check", "--config", "/tmp/nsim_devlink.toml", "--json", *include)
    kernel_after = tool_json("devlink", "-j", "health", "show")
    return {"step": name, "kernel": kernel, "kernel_after": kernel_after,
            "metrics": metrics_lines(metrics, "nic_devlink", "nic_info", "nic_firmware",
                                     "nicwatch_source_errors"),
            "show": show, "check": check}


def inject(path) -> str:
    """Write debugfs break_health; the errno name the write failed with, or "ok"."""
    try:
        write(path, "1")
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, str(e.errno))
    return "ok"


def run() -> dict[str, object]:
    p0, p1 = nsim_new(DEV, 2)
    nsim_link(p0, p1)
    for port in (p0, p1):
        sh("ip", "link", "set", port, "up")
    with open("/tmp/nsim_devlink.toml", "w") as f:
        f.write(CHECK)
    health = DEBUGFS / f"netdevsim{DEV}/health"
    daemon = serve("--interfaces.include", f"nsim{DEV}p[0-9]+")
    steps = [step(daemon, "initial")]
    injected = [inject(health / "break_health")]  # an error the reporter recovers from
    steps.append(step(daemon, "recovered"))
    write(health / "fail_recover", "1")
    # This time the recovery fails: the write itself fails with the recovery's error, and
    # the reporter stays in state error.
    injected.append(inject(health / "break_health"))
    steps.append(step(daemon, "failed_recovery"))
    host_scrape("devlink_error")
    write(health / "fail_recover", "0")
    sh("devlink", "health", "recover", HANDLE, "reporter", "dummy")
    steps.append(step(daemon, "recovered_by_hand"))
    return {
        "ports": [p0, p1], "handle": HANDLE, "steps": steps, "injected": injected,
        "dev": tool_json("devlink", "-j", "dev", "show"),
        "dev_info": tool_json("devlink", "-j", "dev", "info", HANDLE),
        "port": tool_json("devlink", "-j", "port", "show"),
        "links": tool_json("ip", "-j", "link", "show"),
    }
