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


def test_a_family_text_kept_from_the_last_render_is_never_served_stale(tmp_path):
    """Whole families are reused too (a canonical family none of whose devices changed, a
    consumer's family whose series are equal); a consumer's changed series, a peak window
    changed by a reload (the peak families' HELP) and a device leaving all show at once, in
    both formats, and the render stays the bytes of one that remembers nothing."""
    from nicwatch import metrics

    path = tmp_path / "eth2.txt"
    stats = mlx5_stats(4)
    collector = mlx5_collector(path)
    tracker = Tracker()
    renderer = R.Renderer()
    served = []
    for poll in range(9):
        if poll in (2, 8):
            for j, name in enumerate(stats):
                stats[name] += j % 5
        write_stats(path, stats)
        samples = collector.poll().samples if poll != 7 else ()
        tracked = tracker.update(samples)
        uevents = float(poll // 3)  # changes at poll 3 and 6 only
        extra = [metrics.extra(metrics.UEVENTS, (((("outcome", "taken"),), uevents),)),
                 metrics.extra(metrics.RDMA_PORTS, ((((), 2.0),)))]
        # a reload's new peak window at poll 5, when no tracked value moved since poll 3
        stats_ = R.SelfStats(polls=poll, peak_window=60.0 if poll < 5 else 30.0)
        for openmetrics in (True, False, True):
            warm = renderer.render(tracked, stats_, openmetrics, extra)
            assert warm == R.render(tracked, stats_, openmetrics, extra), (poll, openmetrics)
        served.append(warm)
    assert b'nicwatch_uevents_total{outcome="taken"} 1' in served[3]
    assert b"within the last 30 s" in served[5] and b"within the last 60 s" in served[4]
    assert b'device="eth2"' not in served[7] and b'device="eth2"' in served[8]
