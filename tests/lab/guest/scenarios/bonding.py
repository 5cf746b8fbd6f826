"""Bonding and VLAN: an active-backup bond over two e1000e on QEMU's hub 1 with a VLAN on it,
talking to a third e1000e in a namespace. nicwatch polls the physical members, says which bond
each belongs to and which one is active (before and after a failover), and does not count
the bond or the VLAN as interfaces of their own; `ip -j -d link`, /proc/net/bonding and the
bond's sysfs files are the reference."""

from __future__ import annotations

import socket
import time

from labkit import (
    Daemon,
    host_scrape,
    link_json,
    metrics_lines,
    netns,
    nicwatch_json,
    read,
    serve,
    sh,
    tool_json,
    wait_for,
)

M1, M2, PEER = "bond1", "bond2", "bondpeer"
BOND, VLAN = "bond0", "bond0.100"
ADDR, ADDR_PEER = "198.18.2.1", "198.18.2.2"


def burst(count: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _ in range(count):
            s.sendto(b"\x5a" * 1000, (ADDR_PEER, 9))


def quiet() -> None:
    def still() -> bool:
        a = [link_json(n, stats=True)["stats64"] for n in (M1, M2, BOND)]
        time.sleep(1.5)
        return a == [link_json(n, stats=True)["stats64"] for n in (M1, M2, BOND)]
    wait_for("bond quiet", still, 60, 0)


def kernel() -> dict[str, object]:
    return {
        "links": tool_json("ip", "-j", "-s", "-d", "link", "show"),
        "proc_bonding": read(f"/proc/net/bonding/{BOND}"),
        "active_slave": read(f"/sys/class/net/{BOND}/bonding/active_slave"),
        "mode": read(f"/sys/class/net/{BOND}/bonding/mode"),
        "slaves": read(f"/sys/class/net/{BOND}/bonding/slaves"),
    }


def observe(daemon: Daemon, tag: str) -> dict[str, object]:
    quiet()
    before = kernel()
    metrics = daemon.fresh()
    host_scrape(f"bonding_{tag}")
    show = nicwatch_json("show", "--json")  # the default selection: device-backed only
    return {"kernel": before, "kernel_after": kernel(),
            "metrics": metrics_lines(metrics, "nic_", "nicwatch_interfaces"),
            "show": show}


def run() -> dict[str, object]:
    sh("modprobe", "bonding", "max_bonds=0")
    sh("modprobe", "8021q")
    sh("ip", "link", "add", BOND, "type", "bond", "mode", "active-backup", "miimon", "100")
    for member in (M1, M2):
        sh("ip", "link", "set", member, "down")
        sh("ip", "link", "set", member, "master", BOND)
    enslaved_at = {n: link_json(n, stats=True)["stats64"] for n in (M1, M2)}
    sh("ip", "link", "set", BOND, "up")
    sh("ip", "link", "add", "link", BOND, "name", VLAN, "type", "vlan", "id", "100")
    sh("ip", "addr", "add", f"{ADDR}/24", "dev", VLAN)
    sh("ip", "link", "set", VLAN, "up")
    peer = netns("bondns")
    sh("ip", "link", "set", PEER, "netns", peer)
    sh("ip", "-n", peer, "link", "set", PEER, "up")
    sh("ip", "-n", peer, "link", "add", "link", PEER, "name", f"{PEER}.100", "type", "vlan",
       "id", "100")
    sh("ip", "-n", peer, "addr", "add", f"{ADDR_PEER}/24", "dev", f"{PEER}.100")
    sh("ip", "-n", peer, "link", "set", f"{PEER}.100", "up")
    wait_for("an active bond member",
             lambda: read(f"/sys/class/net/{BOND}/bonding/active_slave"), 60)
    ping = sh("ping", "-c", "10", "-i", "0.05", ADDR_PEER, check=False)
    burst(1000)
    daemon = serve()  # the default selection: device-backed interfaces only
    first = observe(daemon, "first")
    # Fail over: the other member becomes active.
    active = read(f"/sys/class/net/{BOND}/bonding/active_slave")
    other = M2 if active == M1 else M1
    sh("ip", "link", "set", BOND, "type", "bond", "active_slave", other)
    wait_for("failover", lambda: read(f"/sys/class/net/{BOND}/bonding/active_slave") == other, 30)
    burst(500)
    second = observe(daemon, "failover")
    return {"members": [M1, M2], "bond": BOND, "vlan": VLAN, "enslaved_at": enslaved_at,
            "ping": ping, "first": first, "failover": second,
            "peer": link_json(PEER, stats=True, ns=peer)}
