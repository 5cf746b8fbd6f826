"""netdevsim ethtool: rings, channels, PAUSE settings and statistics (debugfs
``report_stats_rx/tx``), FEC settings and statistics, link modes, as `ethtool` prints them and
as nicwatch reports them."""

from __future__ import annotations

from labkit import (
    DEBUGFS,
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

DEV = 11
CHECK = """
[[expect]]
interfaces = "{p0}"
rx_ring = 1024
tx_ring = 512
channels = 2
fec_mode = "rs"
pause_autoneg = false
pause_rx = true
pause_tx = true

[[expect]]
interfaces = "{p1}"
rx_ring = 1024
"""

# ethtool's arguments for each query ("DEV": the port). ethtool 6.1 prints JSON only for
# --show-fec and -a, and its -a JSON is wrong (it prints every flag as true: the text is
# the reference for PAUSE).
QUERIES = {
    "info": ["-i", "DEV"], "rings": ["-g", "DEV"], "channels": ["-l", "DEV"],
    "pause_stats": ["-I", "-a", "DEV"], "fec_stats": ["-I", "--show-fec", "DEV"],
    "settings": ["DEV"], "stats": ["-S", "DEV"],
}
JSON = {"fec_stats": ["-I", "--show-fec", "DEV"], "pause_stats": ["-I", "-a", "DEV"]}


def kernel(port: str) -> dict[str, object]:
    """What ethtool and ip say about ``port``; a query the driver does not support is
    recorded as failed (that is a fact to compare too)."""
    out: dict[str, object] = {"ip": tool_json("ip", "-j", "-s", "link", "show", "dev", port)}
    for prefix, queries in (("", QUERIES), ("json_", JSON)):
        for key, template in queries.items():
            argv = ["ethtool", *(["--json"] if prefix else []),
                    *(port if a == "DEV" else a for a in template)]
            try:
                out[prefix + key] = sh(*argv)
            except Exception as e:
                out[prefix + key] = {"failed": str(e)}
    return out


def run() -> dict[str, object]:
    p0, p1 = nsim_new(DEV, 2, queues=4)
    linked = nsim_link(p0, p1)
    for port in (p0, p1):
        sh("ip", "link", "set", port, "up")
    sh("ethtool", "-G", p0, "rx", "1024", "tx", "512")
    sh("ethtool", "-L", p0, "combined", "2")
    sh("ethtool", "-A", p0, "autoneg", "off", "rx", "on", "tx", "on")
    sh("ethtool", "--set-fec", p0, "encoding", "rs")
    # The first port reports PAUSE statistics (the default from 6.x on, not in 6.1), the
    # second none: absent, which nicwatch must not show as 0 (debugfs names ports by index).
    for index, on in ((0, "1"), (1, "0")):
        for direction in ("rx", "tx"):
            write(DEBUGFS / f"netdevsim{DEV}/ports/{index}/ethtool/pause/"
                  f"report_stats_{direction}", on)
    daemon = serve("--interfaces.include", f"nsim{DEV}p[0-9]+")
    before = {port: kernel(port) for port in (p0, p1)}
    metrics = daemon.fresh()
    include = ["--interfaces.include", f"nsim{DEV}p[0-9]+"]
    show = nicwatch_json("show", "--json", *include)
    with open("/tmp/nsim_ethtool.toml", "w") as f:
        f.write(CHECK.format(p0=p0, p1=p1))
    check = nicwatch_cmd("check", "--config", "/tmp/nsim_ethtool.toml", "--json", *include)
    snap = nicwatch_cmd("snapshot", "-o", "/tmp/nsim_ethtool.snapshot.json", "--label", "lab",
                        *include)
    after = {port: kernel(port) for port in (p0, p1)}
    return {
        "ports": [p0, p1], "linked": linked,
        "kernel_before": before, "kernel_after": after,
        "metrics": metrics_lines(metrics, "nic_", "nicwatch_source_errors"),
        "show": show, "check": check,
        "snapshot": {"status": snap[0], "stderr": snap[2],
                     "text": open("/tmp/nsim_ethtool.snapshot.json").read()
                     if snap[0] == 0 else None},
    }
