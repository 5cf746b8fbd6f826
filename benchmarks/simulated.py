"""A simulated mlx5 port at production scale, for benchmarks only.

No ConnectX card can be reached from this machine, so this test double stands in for the
ioctl source: it answers GDRVINFO as mlx5_core and GSTATS with ~4,900 real mlx5 statistic
names: the port-wide names of tests/fixtures/ethtool/mlx5_core.txt plus its per-channel
names (``chN_``, ``rxN_``, ``txN_``) repeated for 63 channels, parsed with nicwatch's own
`ethtool -S` parser. Everything after the read (normalize, track, render, serve) is the
real pipeline; only the "read" stage of this scenario is not a kernel read.
"""

from __future__ import annotations

import re
from pathlib import Path

from nicwatch.sources import ethtool_text
from nicwatch.model import Channels, DriverInfo, Rings, StatSet

FIXTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/ethtool/mlx5_core.txt"
CHANNELS = 63
_PER_CHANNEL = re.compile(r"(ch|rx|tx)(\d+)_(.+)")


def mlx5_names(channels: int = CHANNELS) -> tuple[str, ...]:
    """Port-wide names in fixture order, then every per-channel name for each channel."""
    parsed = ethtool_text.parse(FIXTURE.read_text())
    port, templates = [], []
    for name in parsed.names:
        m = _PER_CHANNEL.fullmatch(name)
        if m is None:
            port.append(name)
        elif m.group(2) == "0":
            templates.append((m.group(1), m.group(3)))
    per_channel = [f"{kind}{c}_{stat}" for kind in ("ch", "rx", "tx") for c in range(channels)
                   for k, stat in templates if k == kind]
    return tuple(port + per_channel)


class SimulatedMlx5Ioctl:
    """Answers like EthtoolIoctl for every interface, as an mlx5 port; values grow by a
    different step per statistic on every read, like live counters."""

    def __init__(self, channels: int = CHANNELS) -> None:
        self.names = mlx5_names(channels)
        self._reads: dict[str, int] = {}

    def close(self) -> None:
        pass

    def forget(self, ifname: str) -> None:
        self._reads.pop(ifname, None)

    def driver_info(self, ifname: str) -> DriverInfo:
        return DriverInfo("mlx5_core", "6.18.0", "28.39.1002 (MT_0000000838)",
                          "0000:3b:00.0", len(self.names))

    def perm_address(self, ifname: str) -> str:
        return "0c:42:a1:00:00:01"

    def statistics(self, ifname: str) -> StatSet:
        n = self._reads[ifname] = self._reads.get(ifname, 0) + 1
        return StatSet(self.names, tuple(n * (i % 97) for i in range(len(self.names))), 1)

    def rings(self, ifname: str) -> Rings:
        return Rings(rx=8192, tx=8192, rx_max=8192, tx_max=8192)

    def channels(self, ifname: str) -> Channels:
        return Channels(None, None, None, CHANNELS, None, None, None, CHANNELS)
