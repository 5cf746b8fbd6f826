"""e1000e, QEMU's emulated Intel 82574: two ports on one QEMU hub, ``hub0b`` in a namespace;
traffic between them (it never leaves QEMU); nicwatch's counters, rings, PAUSE and link
settings against `ethtool` and `ip -s -j link` on both sides. A third e1000e, ``rootbus0``,
sits on the root bus (no root port): its PCIe link attributes and what nicwatch makes of them."""

from __future__ import annotations

import os
import socket
import time

from labkit import (
    ethtool,
    link_json,
    metrics_lines,
    netns,
    nicwatch_cmd,
    nicwatch_json,
    read,
    serve,
    sh,
    tool_json,
    wait_for,
    write,
)

A, B = "hub0a", "hub0b"
ROOT_BUS = "rootbus0"  # an e1000e on q35's root bus: an integrated endpoint, no link registers
LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
ADDR_A, ADDR_B = "198.18.1.1", "198.18.1.2"
DATAGRAMS = 3000
SIZE = 1200


def kernel(port: str, ns: str | None = None) -> dict[str, object]:
    """What the kernel says of ``port``. `ethtool -S` and `ip -s link` are two reads; they
    are taken between two equal `ip` readings (up to five tries), so both show the same
    packets (a CI run once saw 70 bytes arrive between them)."""
    for _ in range(5):
        first = link_json(port, stats=True, ns=ns)
        stats = ethtool("-S", port, ns=ns)
        ip = link_json(port, stats=True, ns=ns)
        if ip["stats64"] == first["stats64"]:
            break
    return {
        "stats": stats,
        "ip": ip,
        "settings": ethtool(port, ns=ns),
        "rings": ethtool("-g", port, ns=ns),
        "pause": ethtool("-a", port, ns=ns),
        "channels": sh("ethtool", "-l", port, ns=ns, check=False),
        "info": ethtool("-i", port, ns=ns),
    }


def quiet(port: str, ns: str | None = None) -> None:
    """Wait until the port's counters stop moving (ARP and the last replies settle)."""
    def still() -> bool:
        a = link_json(port, stats=True, ns=ns)["stats64"]
        time.sleep(1.5)
        return bool(a == link_json(port, stats=True, ns=ns)["stats64"])
    wait_for(f"{port} quiet", still, 60, 0)


def run() -> dict[str, object]:
    peer = netns("hubpeer")
    sh("ip", "link", "set", B, "netns", peer)
    # No IPv6 on the two ports: its router solicitations go on with backoff (RFC 7559) long
    # after the links settle, and a 70-byte one once moved a counter between two readings.
    write(f"/proc/sys/net/ipv6/conf/{A}/disable_ipv6", "1")
    sh("sh", "-c", f"echo 1 > /proc/sys/net/ipv6/conf/{B}/disable_ipv6", ns=peer)
    sh("ip", "addr", "add", f"{ADDR_A}/24", "dev", A)
    sh("ip", "link", "set", A, "up")
    sh("ip", "-n", peer, "addr", "add", f"{ADDR_B}/24", "dev", B)
    sh("ip", "-n", peer, "link", "set", B, "up")
    wait_for("carrier on both e1000e", lambda: read(f"/sys/class/net/{A}/carrier") == "1"
             and sh("cat", f"/sys/class/net/{B}/carrier", ns=peer).strip() == "1", 60)
    ping = sh("ping", "-c", "20", "-i", "0.05", ADDR_B, check=False)
    # A UDP burst from A to B (nobody listens on B: B's kernel answers with ICMP port
    # unreachable, rate-limited, so B also sends).
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        payload = b"\xa5" * SIZE
        for _ in range(DATAGRAMS):
            s.sendto(payload, (ADDR_B, 9))
    quiet(A)
    quiet(B, peer)
    daemon = serve("--interfaces.include", A)
    before = {A: kernel(A), B: kernel(B, peer)}
    metrics = daemon.fresh()
    show = nicwatch_json("show", "--json", "--interfaces.include", A)
    # nicwatch in the peer's namespace, as `ip netns exec` would run it there.
    peer_show = nicwatch_json("show", "--json", "--interfaces.include", B, ns=peer)
    snap = nicwatch_cmd("snapshot", "-o", "/tmp/e1000e.snapshot.json", "--interfaces.include", A)
    after = {A: kernel(A), B: kernel(B, peer)}
    device = f"/sys/class/net/{ROOT_BUS}/device"
    root_bus = {"device": os.path.realpath(device),
                "link": {f: read(f"{device}/{f}") for f in LINK_FILES},
                "show": nicwatch_json("show", "--json", "--interfaces.include", ROOT_BUS)}
    return {
        "ports": [A, B], "datagrams": DATAGRAMS, "size": SIZE, "ping": ping,
        "kernel_before": before, "kernel_after": after,
        "metrics": metrics_lines(metrics, "nic_", "nicwatch_source_errors"),
        "show": show, "peer_show": peer_show,
        "snapshot": {"status": snap[0], "stderr": snap[2],
                     "text": open("/tmp/e1000e.snapshot.json").read() if snap[0] == 0 else None},
        "addresses": tool_json("ip", "-j", "addr", "show", "dev", A),
        "root_bus": root_bus,
    }
