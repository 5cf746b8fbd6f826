"""The link physics consumer reads an interface's counter rates only where a lane rate makes
a bit error ratio of them: a link without one (a veth, a link down) costs no pass over its
counters (before: a dict of every counter's rate was built for every interface, twice a poll
with the expectation checks), and one with a lane rate gets the same verdicts as before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nicwatch.consumers.linkphysics import physics_of, rates_of
from nicwatch.model import SeriesKey
from nicwatch.normalize.linkphysics import evaluate


class Watched(dict):
    """Counters whose reads are counted."""

    reads = 0

    def items(self):
        Watched.reads += 1
        return super().items()

    def __iter__(self):
        Watched.reads += 1
        return super().__iter__()


def tracked(device: str, speed_mbps: int | None, lanes: int, lane_errors: float):
    gauges = {SeriesKey("nic_fec_mode_info", (("active", "rs"), ("configured", "rs"))): 1.0}
    if speed_mbps:
        gauges[SeriesKey("nic_link_speed_bytes_per_second")] = speed_mbps * 125_000.0
        gauges[SeriesKey("nic_link_lanes")] = float(lanes)
    counters = Watched({SeriesKey("nic_fec_lane_bit_errors_total", (("lane", str(n)),)):
                        SimpleNamespace(rate=lane_errors) for n in range(lanes)})
    counters[SeriesKey("nic_rx_packets_total")] = SimpleNamespace(rate=None)
    identity = SimpleNamespace(device=device)
    return SimpleNamespace(sample=SimpleNamespace(gauges=gauges, identity=identity),
                           counters=counters)


def test_rates_are_read_only_for_a_link_with_a_lane_rate():
    Watched.reads = 0
    assert physics_of([tracked("veth0", None, 4, 5.0)]) == {}
    assert Watched.reads == 0
    got = physics_of([tracked("ens1", 400_000, 8, 1e-4 * 53.125e9)])
    assert Watched.reads > 0 and got["ens1"].ber["5"] == pytest.approx(1e-4)


def test_the_lazy_rates_are_the_rates():
    ts = tracked("ens1", 400_000, 8, 7.0)
    lazy = rates_of(ts)
    eager = {key: value.rate for key, value in ts.counters.items()}
    assert dict(lazy.items()) == eager and len(lazy) == len(eager) and set(lazy) == set(eager)
    assert evaluate(ts.sample, lazy) == evaluate(ts.sample, eager)
