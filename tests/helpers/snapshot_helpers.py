"""Shared by the snapshot, recorder, record and report tests: a ConnectX-7 port on the
cx7-gen5-healthy sysfs fixture tree whose `ethtool -S` counters the test rewrites between
polls, and an mlx5-scale statistic set (~4,900 names) grown from the mlx5 fixture."""

import itertools
import re
import subprocess
import sys
from pathlib import Path

from nicwatch.collect import Collector, Selection
from nicwatch.model import Channels, Rings
from nicwatch.pasted import ethtool_text
from nicwatch.sources.host import HostInfo

from fixture_ethtool import RecordedEthtool
from paths import TESTS

HERE = TESTS
SYSFS = HERE / "fixtures" / "sysfs"
MLX5_TEXT = HERE / "fixtures" / "ethtool" / "mlx5_core.txt"
SNAPSHOT_CLI = [sys.executable, "-m", "nicwatch.cli.snapshot"]
HOST = HostInfo("testhost", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1_790_000_000.0,
                "6.18.0-test", "#1 SMP PREEMPT_DYNAMIC")
T0 = 1_790_000_100.0


def mlx5_stats(channels: int = 4) -> dict[str, int]:
    """The mlx5 fixture's statistics, with its per-channel names (ch0_, rx0_, tx0_ ...)
    repeated for ``channels`` channels: 63 gives ~4,900 names, a real ConnectX port."""
    parsed = ethtool_text.parse(MLX5_TEXT.read_text())
    port, per_channel = {}, {}
    for name, value in zip(parsed.names, parsed.values, strict=False):
        m = re.fullmatch(r"(ch|rx|tx)(\d+)_(.+)", name)
        if m is None:
            port[name] = value
        elif m.group(2) == "0":
            per_channel[(m.group(1), m.group(3))] = value
    return port | {f"{kind}{c}_{rest}": value + c for c in range(channels)
                   for (kind, rest), value in per_channel.items()}


def write_stats(path: Path, stats: dict[str, int]) -> None:
    path.write_text("NIC statistics:\n" + "".join(f"     {n}: {v}\n" for n, v in stats.items()))


def mlx5_collector(stats_file: Path, interval: float = 5.0) -> Collector:
    """eth2 of cx7-gen5-healthy (PCIe Gen5 x16, AER counts) reading ``stats_file``; every
    poll is ``interval`` seconds after the previous one."""
    ports = {"eth2": {"stats": stats_file, "driver": "mlx5_core",
                      "perm_address": "b8:3f:d2:41:00:00",
                      "rings": Rings(8192, 8192, 8192, 8192),
                      "channels": Channels(None, None, None, 63, None, None, None, 63)}}
    wall, mono = itertools.count(T0, interval), itertools.count(1000.0, interval)
    return Collector(SYSFS / "cx7-gen5-healthy", Selection(), ioctl=RecordedEthtool(ports),
                     clock=wall.__next__, monotonic=mono.__next__)


def neighbours(pair) -> None:
    """Permanent ARP entries on both ends, so no ARP packet moves a counter."""
    for ns, dev, peer_ns, peer_dev, peer_addr in (
            (pair.ns_a, pair.a, pair.ns_b, pair.b, pair.addr_b),
            (pair.ns_b, pair.b, pair.ns_a, pair.a, pair.addr_a)):
        mac = subprocess.run(["ip", "netns", "exec", peer_ns, "cat",
                              f"/sys/class/net/{peer_dev}/address"], check=True,
                             capture_output=True, text=True).stdout.strip()
        subprocess.run(["ip", "-n", ns, "neigh", "replace", peer_addr, "lladdr", mac, "dev",
                        dev, "nud", "permanent"], check=True)


def udp_sender(src: str, dst: str, count: int, size: int) -> str:
    """Python code that sends ``count`` UDP datagrams of ``size`` bytes from src to dst."""
    return (f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.bind(('{src}', 0)); "
            f"[s.sendto(b'x' * {size}, ('{dst}', 9)) for _ in range({count})]; print('sent')")


# Bytes a UDP datagram adds on a veth: UDP 8 + IPv4 20 + Ethernet 14 (no FCS in skb->len).
UDP_OVERHEAD = 42
