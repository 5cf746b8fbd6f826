"""Windows from running totals against windows summed over their steps (the code before,
tests/helpers/object_windows.py), on randomized steps: the same deltas (to the bit, in the
same order), peaks, seconds, polls and notes, window after window. The steps mix whole and
fractional increases (pause microseconds), totals past 2**53, series that appear, skip steps
and leave, zero-length steps, and windows that drop several steps at once."""

from __future__ import annotations

import random

import object_windows
import pytest

from nicwatch.consumers.diagnosis.windows import Recent, Step
from nicwatch.model import SeriesKey

KEYS = (SeriesKey("nic_rx_bytes_total"), SeriesKey("nic_tx_pause_frames_total"),
        SeriesKey("nic_rx_pause_duration_seconds_total", (("priority", "3"),)),
        SeriesKey("nic_tx_pause_duration_seconds_total"), SeriesKey("nic_rx_crc_errors_total"),
        SeriesKey("nic_rdma_rx_bytes_total", (("port", "1"), ("rdma_device", "mlx5_0"))))


def _increase(rng: random.Random) -> float:
    return rng.choice((
        0.0, 0.0, float(rng.randrange(0, 10**6)), float(rng.randrange(0, 10**12)),
        rng.randrange(0, 10**6) * 1e-6, rng.random(), float(2**53 + rng.randrange(0, 4)),
        rng.randrange(0, 100)))


@pytest.mark.parametrize("seed", range(40))
def test_running_totals_give_the_windows_the_sums_over_the_steps_gave(seed: int) -> None:
    rng = random.Random(seed)
    span = rng.choice((None, 10.0, 30.0))
    new, old = Recent(span), object_windows.Recent(span)
    t = 0.0
    windows = 0
    for _ in range(120):
        device = rng.choice(("eth0", "eth1"))
        seconds = rng.choice((0.0, 0.5, 1.0, 5.0, 5.0, 12.0))
        t += seconds
        keys = [k for k in KEYS if rng.random() < 0.85]
        if rng.random() < 0.2:
            rng.shuffle(keys)
        step = Step(t, 1000.0 + t, seconds, {k: _increase(rng) for k in keys},
                    {SeriesKey("nic_link_speed_bytes_per_second"): float(rng.randrange(3))},
                    tuple(f"new: s{rng.randrange(9)}" for _ in range(rng.randrange(2))))
        new.add(device, step)
        old.add(device, step)
        if rng.random() < 0.03:
            new.reset(device)
            old.reset(device)
        for d in ("eth0", "eth1"):
            got, want = new.window(d), old.window(d)
            assert (got is None) == (want is None)
            if got is None or want is None:
                continue
            assert list(got.deltas.items()) == list(want.deltas.items())
            assert list(got.peaks.items()) == list(want.peaks.items())
            assert (got.seconds, got.polls, got.end, got.notes, dict(got.gauges)) == \
                (want.seconds, want.polls, want.end, want.notes, dict(want.gauges))
            windows += 1
    assert windows > 100
