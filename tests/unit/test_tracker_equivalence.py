"""The array path of the tracker against the object path it replaced (tests/helpers/
object_tracker.py, the tracker before the change, verbatim), on randomized recorded polls:
every tracked value, rate and peak, the order of the series, the resets by reason and the
wrap-safe interval and ambiguity agree, poll after poll.

The polls mix what the tracker decides on: counters that rise, stay, fall (resets), wrap at
2**32 fast or too fast for the link, saturate (8-bit PMA counters), 32- and 64-bit series and
sub-unit scales, peaked families, a VF's counters, series missing from a poll and back, stat
sets that change, idle interfaces (nothing moved, for several polls: the tracker skips
those whole), interfaces replaced (new ifindex or driver) or gone and back (before and
after the retention), a line rate that appears, changes and goes, RDMA ports with and
without a rate, and polls that come at the same instant.

One behaviour changed, on purpose, with the two paths made one: an RDMA port that comes back
after the retention is forgotten like an interface (test_tracker_rdma.py); the reference is
told so."""

from __future__ import annotations

import random
from types import MappingProxyType

import object_tracker
import pytest

from nicwatch.metrics import LINK_SPEED_BYTES_PER_SECOND, RAW_COUNTER
from nicwatch.model import (
    CounterValue,
    NetClass,
    NicIdentity,
    RdmaPort,
    RdmaSample,
    Reading,
    Sample,
    SeriesKey,
)
from nicwatch.normalize.sriov import SOURCE as VF_SOURCE
from nicwatch.tracker import WRAP32, Tracker

LINE = SeriesKey(LINK_SPEED_BYTES_PER_SECOND.name)
# (key, width, scale, saturates, source)
SERIES = (
    (SeriesKey("nic_rx_bytes_total"), 64, 1.0, False, "ethtool_netlink"),  # peaked
    (SeriesKey("nic_rx_packets_total"), 32, 1.0, False, "ethtool_ioctl"),
    (SeriesKey("nic_tx_bytes_total"), 32, 1.0, False, "ethtool_ioctl"),  # peaked, 32-bit
    (SeriesKey("nic_rx_pause_duration_seconds_total", (("priority", "3"),)), 64, 1e-6, False,
     "ethtool_ioctl"),
    (SeriesKey("nic_rx_pause_duration_seconds_total", (("priority", "4"),)), 32, 1e-6, False,
     "ethtool_ioctl"),
    (SeriesKey("nic_fec_corrected_bit_errors_total"), 64, 1.0, False, "ethtool_netlink"),
    (SeriesKey(RAW_COUNTER.name, (("stat", "rx_vport_bytes"),)), 32, 1.0, False,
     "ethtool_ioctl"),
    (SeriesKey(RAW_COUNTER.name, (("stat", "rx_wqe_err"),)), 32, 1.0, False, "ethtool_ioctl"),
    (SeriesKey("nic_vf_rx_bytes_total", (("vf", "0"),)), 64, 1.0, False, VF_SOURCE),
    (SeriesKey("nic_vf_rx_packets_total", (("vf", "0"),)), 32, 1.0, False, VF_SOURCE),
    (SeriesKey("nic_rx_crc_errors_total"), 64, 0.5, False, "sysfs"),
)
PORT_SERIES = (
    (SeriesKey("nic_rdma_link_downed_total", (("port", "1"), ("rdma_device", "mlx5_0"))), 8,
     1.0, True, "rdma"),
    (SeriesKey("nic_rdma_rx_bytes_total", (("port", "1"), ("rdma_device", "mlx5_0"))), 32, 4.0,
     True, "rdma"),
    (SeriesKey("nic_rdma_out_of_buffer_drops_total", (("port", "1"),
                                                      ("rdma_device", "mlx5_0"))),
     32, 1.0, False, "rdma"),
    (SeriesKey("nic_rdma_tx_bytes_total", (("port", "1"), ("rdma_device", "mlx5_0"))), 64, 1.0,
     False, "rdma"),
)


def _step(rng: random.Random, raw: int, width: int, saturates: bool) -> int:
    top = (1 << width) - 1
    roll = rng.random()
    if roll < 0.35:
        return raw  # unchanged: most counters between two polls
    if roll < 0.42:
        return rng.randrange(0, max(1, raw // 2 + 1))  # fell: a reset, or a wrap to decide
    if roll < 0.50 and width == 32:
        return (raw + rng.choice((2**31, 2**32 - 5, 3 * 2**30, 1000))) % WRAP32  # wrapped
    if roll < 0.55:
        return min(top, raw + rng.randrange(2**20, 2**33)) if saturates else \
            (raw + rng.randrange(2**20, 2**33)) % (top + 1)
    if saturates and roll < 0.60:
        return top  # stuck at its maximum
    bump = rng.choice((1, 7, 1500, 10**6, 10**9))
    return min(top, raw + bump) if saturates else (raw + bump) % (top + 1)


class World:
    """The interfaces and ports of one host, moved on by a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.t = 100.0
        self.ifaces = {f"eth{i}": self._fresh_iface(i) for i in range(3)}
        self.ports = {f"mlx5_{i}/1": {s[0]: self.rng.randrange(0, (1 << s[1]))
                                      for s in PORT_SERIES} for i in range(2)}
        self.rates = {name: self.rng.choice((None, 0, 1.25e9, 5e10)) for name in self.ports}

    def _fresh_iface(self, i: int) -> dict:
        return {"ifindex": 10 + i, "driver": "mlx5_core", "generation": 1,
                "line": self.rng.choice((None, 3.125e9, 5e10)),
                "values": {s[0]: self.rng.randrange(0, 1 << min(s[1], 40)) for s in SERIES}}

    def poll(self) -> tuple[list[Sample], list[RdmaSample]]:
        rng = self.rng
        self.t += rng.choice((0.0, 0.001, 1.0, 5.0, 5.0, 5.0, 30.0, 90.0, 700.0))
        samples = []
        for name, st in self.ifaces.items():
            if rng.random() < 0.08:
                continue  # gone this poll (deleted, moved, unselected)
            if rng.random() < 0.05:
                st["generation"] += 1  # the driver's statistic set changed
            if rng.random() < 0.04:
                st["ifindex"] += 100  # replaced under the same name
            if rng.random() < 0.02:
                st["driver"] = rng.choice(("mlx5_core", "ice", None))
            if rng.random() < 0.1:
                st["line"] = rng.choice((None, 0.0, 3.125e9, 5e10, 1e11))
            # an idle interface: nothing moved, every series there in the same order (runs
            # of these are what the tracker skips whole)
            idle = rng.random() < 0.45
            counters = {}
            for key, width, scale, saturates, source in SERIES:
                if not idle:
                    st["values"][key] = _step(rng, st["values"][key], width, saturates)
                if not idle and rng.random() < 0.07:
                    continue  # this series missed the poll (a source failed)
                counters[key] = CounterValue(st["values"][key], source, width, scale, saturates)
            if not idle and rng.random() < 0.3:  # the order a poll lists its series may change
                items = list(counters.items())
                rng.shuffle(items)
                counters = dict(items)
            gauges = {LINE: st["line"]} if st["line"] is not None else {}
            mono = self.t + rng.random() * 0.01
            ident = NicIdentity(name, st["ifindex"], st["driver"], None, None, None, None, None)
            reading = Reading(name, mono, mono, NetClass(name, *[None] * 13))
            samples.append(Sample(ident, mono, mono, counters, gauges, frozenset(),
                                  st["generation"] if rng.random() > 0.1 else None, reading))
        ports = []
        for key, values in self.ports.items():
            if rng.random() < 0.08:
                continue
            if rng.random() < 0.1:
                self.rates[key] = rng.choice((None, 0, 1.25e9, 5e10))
            counters = {}
            for skey, width, scale, saturates, source in PORT_SERIES:
                values[skey] = _step(rng, values[skey], width, saturates)
                if rng.random() < 0.05:
                    continue
                counters[skey] = CounterValue(values[skey], source, width, scale, saturates)
            device, port = key.split("/")
            rate = self.rates[key]
            record = RdmaPort(device, int(port), "InfiniBand", "ACTIVE", "LinkUp",
                              None if rate is None else int(rate), None, None, None,
                              MappingProxyType({}), MappingProxyType({}), (), driver="mlx5")
            ports.append(RdmaSample(record, self.t, self.t, counters, {}))
        return samples, ports


def _view(counters) -> list[tuple]:
    return [(k, t.value, t.rate, t.peak) for k, t in counters.items()]


@pytest.mark.parametrize("seed", range(60))
def test_the_array_path_tracks_every_poll_as_the_object_path(seed: int) -> None:
    world = World(seed)
    new = Tracker(peak_window=20.0, retention=600.0, max_departed=2)
    old = object_tracker.Tracker(peak_window=20.0, retention=600.0, max_departed=2)
    compared = 0
    for n in range(60):
        samples, ports = world.poll()
        got, want = new.update(samples), old.update(samples)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            where = f"seed {seed} poll {n} {g.sample.identity.device}"
            assert _view(g.counters) == _view(w.counters), where
            assert g.resets == w.resets, where
            assert (g.wrap_safe_interval, g.wrap_ambiguous) == \
                (w.wrap_safe_interval, w.wrap_ambiguous), where
            compared += len(g.counters)
        if ports:
            # The one change: an RDMA port back after the retention is forgotten, as an
            # interface is (the object path forgot it only after tracking it again).
            oldest = max(p.monotonic for p in ports) - old.retention
            for key in [k for k, d in old._departed_ports.items() if d.monotonic < oldest]:
                del old._departed_ports[key]
        got_ports, want_ports = new.update_rdma(ports), old.update_rdma(ports)
        for g, w in zip(got_ports, want_ports, strict=True):
            where = f"seed {seed} poll {n} {g.sample.key}"
            assert _view(g.counters) == _view(w.counters), where
            assert g.resets == w.resets, where
    assert compared > 1000  # the polls did carry series
