"""The realistic host of the benchmarks: ConnectX-class ports with the statistic set a real
mlx5_core port reports, on a DGX-class host (8-10 ports).

The demo's simulation (nicwatch/demo/simulate.py) gives each port 8 channels and 167
statistic names: enough to show every diagnosis, far fewer than a real port. A ConnectX port
on a host with 64 or more CPUs opens 63 channels by default (mlx5e's default is the number of
completion vectors, capped by the CPUs), and `ethtool -S` then lists, in the driver's order,
the global groups once and per channel 6 ``chN_*``, 41 ``rxN_*`` and 27 ``txN_*`` names
(``txN`` per channel and traffic class: ``tx{channel + tc * channels}``). Those name lists are
taken from the mlx5_core dump in tests/fixtures/ethtool/mlx5_core.txt (4 channels, the
format of the mlx5e stats groups: 251 global names, 74 per channel; the field names agree
with the real ConnectX-4 Lx dump in isc-projects/ethq tests/mlx5_core, which has fewer
groups, being from a 4.15 kernel) and expanded to ``CHANNELS`` channels the way the driver
numbers them: 251 + 63 x 74 = 4,913 names per port.

Values: the simulation's counters for every name it knows (so rates, PFC, FEC and the
diagnoses behave as in the demo), the per-channel packet, byte, completion and poll counts
advancing (the traffic split over the channels), and every other name at the fixture's
value, fixed, as most of a real port's ~4,900 counters are between two polls.

RDMA counters and the PCIe tree are the simulation's (hw_counters per RDMA port, each port's
function under a root port of its own, written as a sysfs tree).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from nicwatch.demo import simulate
from nicwatch.model import DriverInfo, StatSet

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ethtool" / \
    "mlx5_core.txt"
CHANNELS = 63  # mlx5e's default on a host with 64 or more CPUs (one is kept for async events)
FIXTURE_CHANNELS = 4
_PER_CHANNEL = re.compile(r"^(ch|rx|tx)(\d+)_(.*)$")
# Per-channel counters that move with traffic: their values advance each poll.
_MOVING = ("packets", "bytes", "events", "poll", "cqes", "csum_unnecessary", "arm")


def fixture_stats() -> list[tuple[str, int]]:
    out = []
    for line in FIXTURE.read_text().splitlines():
        name, sep, value = line.strip().rpartition(":")
        if sep and name and name != "NIC statistics":
            out.append((name, int(value)))
    return out


def stat_names(channels: int = CHANNELS) -> tuple[tuple[str, ...], dict[str, int]]:
    """The expanded name list, in the driver's order, and each name's fixed value. The
    fixture's per-channel groups (``ch0..3``, ``rx0..3``, ``tx0..3``) are replaced, where the
    first of them stands, by the same groups for ``channels`` channels: channel-major for
    ``chN``/``rxN`` (the driver loops channels, then the descriptor), as are ``txN``."""
    fixed: dict[str, int] = {}
    names: list[str] = []
    groups: dict[str, list[str]] = {}  # prefix -> field names of channel 0, in order
    group_at: dict[str, int] = {}  # prefix -> where in `names` the group goes
    for name, value in fixture_stats():
        m = _PER_CHANNEL.match(name)
        if m:
            prefix, ch, field = m.group(1), int(m.group(2)), m.group(3)
            if ch >= FIXTURE_CHANNELS:  # not a per-channel name (tx_prio...: no digit first)
                names.append(name)
                fixed[name] = value
                continue
            if prefix not in group_at:
                group_at[prefix] = len(names)
                names.append(f"\0{prefix}")  # placeholder
            if ch == 0:
                groups.setdefault(prefix, []).append(field)
            fixed[f"{prefix}{ch}_{field}"] = value
        else:
            names.append(name)
            fixed[name] = value
    expanded: list[str] = []
    for name in names:
        if name.startswith("\0"):
            prefix = name[1:]
            for ch in range(channels):
                for field in groups[prefix]:
                    full = f"{prefix}{ch}_{field}"
                    expanded.append(full)
                    fixed.setdefault(full, fixed[f"{prefix}{ch % FIXTURE_CHANNELS}_{field}"])
        else:
            expanded.append(name)
    # The simulation's own names (PFC on priority 3, pause storm, PCIe stalls) that the
    # fixture lacks, so every diagnosis of the demo still has its counters.
    have = set(expanded)
    expanded += [n for n in simulate.stat_names() if n not in have]
    return tuple(expanded), fixed


class RealisticEthtool(simulate.SimulatedEthtool):
    """The simulation's ethtool ioctls, with a real port's ~4,900 statistic names."""

    GENERATION = 2

    def __init__(self, simulation: simulate.Simulation, channels: int = CHANNELS) -> None:
        super().__init__(simulation)
        self._names, self._fixed = stat_names(channels)
        self.channels_n = channels
        moving = []
        simulated = set(simulate.stat_names())
        for i, name in enumerate(self._names):
            m = _PER_CHANNEL.match(name)
            if m and m.group(3).endswith(_MOVING) and name not in simulated:
                moving.append((i, m.group(1), int(m.group(2)) % channels, m.group(3)))
        self._moving = moving
        self._template = [self._fixed.get(n, 0) for n in self._names]
        self._simulated = [(i, n) for i, n in enumerate(self._names) if n in simulated]

    def statistics(self, ifname: str) -> StatSet:
        port = self._port(ifname)
        sim = self.simulation.ethtool_stats(port.name)
        c = self.simulation.counters(port.name)
        values = self._template[:]  # the fixed values; then what moves
        for i, name in self._simulated:
            values[i] = sim[name]
        share = {"rx": (c["netdev_rx_packets"], c["netdev_rx_bytes"]),
                 "tx": (c["netdev_tx_packets"], c["netdev_tx_bytes"]),
                 "ch": (c["poll_events"], c["poll_events"])}
        n = self.channels_n
        for i, prefix, ch, field in self._moving:
            packets, nbytes = share[prefix]
            base = nbytes if field.endswith("bytes") else packets
            values[i] = int(base * (1 + ch % 5) / (3 * n))
        return StatSet(self._names, tuple(values), self.GENERATION)

    def driver_info(self, ifname: str) -> DriverInfo:
        return replace(super().driver_info(ifname), n_stats=len(self._names))


if __name__ == "__main__":
    names, _ = stat_names()
    print(len(names), "names per port")
