"""The render reuses what it built for a device at the last render (its lines by family, a
series' line while its value is unchanged). Whatever it reuses, a render must be the bytes
a render with nothing remembered gives, poll after poll, as counters move, a gauge changes
and an interface leaves and comes back."""

from __future__ import annotations

import dataclasses
import itertools

from nicwatch.exporter import render as R
from nicwatch.model import SeriesKey
from nicwatch.tracker import Tracker

from snapshot_helpers import mlx5_collector, mlx5_stats, write_stats


def cold(tracked, stats, openmetrics, rates):
    """A render that remembers nothing (a fresh Renderer)."""
    return R.render(tracked, stats, openmetrics, rates=rates)


def test_a_render_is_the_same_bytes_with_or_without_what_earlier_renders_left(tmp_path):
    path = tmp_path / "eth2.txt"
    stats = mlx5_stats(4)
    collector = mlx5_collector(path)
    tracker = Tracker()
    mtu = SeriesKey("nic_mtu_bytes")
    bodies = []
    renderer = R.Renderer()  # kept across polls, as the daemon keeps its own
    for poll in range(8):
        if poll in (1, 2, 6):  # some polls move counters, the others leave them
            for j, name in enumerate(stats):
                stats[name] += (poll * 7 + j) % 13
        write_stats(path, stats)
        samples = collector.poll().samples
        if poll == 4:  # a gauge changes, with no counter moving
            samples = tuple(dataclasses.replace(s, gauges={**s.gauges, mtu: 1500.0 + poll})
                            for s in samples)
        if poll == 5:  # the interface is gone for a poll
            samples = ()
        tracked = tracker.update(samples)
        stats_ = R.SelfStats(polls=poll)
        for openmetrics in (False, True):
            for rates in (False, True):
                warm = renderer.render(tracked, stats_, openmetrics, rates=rates)
                assert warm == cold(tracked, stats_, openmetrics, rates), (poll, openmetrics,
                                                                           rates)
        bodies.append(renderer.render(tracked, stats_, False))
    # What the test moved shows: counters moved at polls 1, 2 and 6, the MTU at 4 only (after
    # a poll with none moving, so the records of the tracker are the same as before).
    changed = [a != b for a, b in itertools.pairwise(bodies)]
    assert all(changed), changed  # every poll differs at least in its polls count
    assert b'nic_mtu_bytes{device="eth2"} 1504' in bodies[4]
    assert b'nic_mtu_bytes{device="eth2"} 1504' not in bodies[6]
    assert b'device="eth2"' not in bodies[5] and b'device="eth2"' in bodies[6]
