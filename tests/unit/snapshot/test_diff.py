"""The diff of two snapshots tells a 32-bit wrap from a reset by the tracker's own rule and
evidence (tracker.advance with wrap_limit, line rate, elapsed time, a 64-bit counter falling):
`nicwatch diff` and the daemon agree on every case, where the diff used to misread a wrap at
400G (a fall from the lower half of the range) as a reset."""

from __future__ import annotations

import pytest

from nicwatch.model import CounterValue, NetClass, NicIdentity, Reading, Sample, SeriesKey
from nicwatch.snapshot import files as S
from nicwatch.tracker import COUNTER_DECREASE, LINE_RATE, Tracker

from snapshot_helpers import HOST

PACKETS = SeriesKey("nic_rx_packets_total")
BYTES64 = SeriesKey("nic_tx_bytes_total")
IDENTITY = NicIdentity("eth0", 2, "mlx5_core", None, None, "0000:41:00.0", None, None)
NETCLASS = NetClass("eth0", 2, *[None] * 12)


def sample(mono: float, counters: dict, line_rate: float | None) -> Sample:
    gauges = {LINE_RATE: line_rate} if line_rate else {}
    return Sample(IDENTITY, mono, mono, counters, gauges, frozenset(), 1,
                  Reading("eth0", mono, mono, NETCLASS))


def snapshot(s: Sample) -> S.Snapshot:
    iface = S.InterfaceSnapshot(s.identity, s.time, s.monotonic, s.counters, s.gauges, {}, {})
    return S.build(HOST, [S.Poll(s.time, s.monotonic, (iface,))])


def both(before: dict, after: dict, seconds: float, line_rate: float | None):
    """(the diff's row of PACKETS, the tracker's: its value extended or reset)"""
    a, b = sample(100.0, before, line_rate), sample(100.0 + seconds, after, line_rate)
    [d] = S.diff(snapshot(a), snapshot(b)).interfaces
    row = next(r for r in d.rows if r.name == PACKETS.metric)
    tracker = Tracker()
    tracker.update([a])
    [tracked] = tracker.update([b])
    return row, tracked.counters[PACKETS].value - before[PACKETS].raw, tracked.resets


def c32(raw: int) -> CounterValue:
    return CounterValue(raw, "ethtool_ioctl", width=32)


def test_a_wrap_from_the_lower_half_at_400g_is_a_wrap_as_the_tracker_says():
    # 400 Gb/s (5e10 B/s, 5.95e8 84-byte frames a second): 10 s carry up to 6e9 frames, so
    # 1,000 -> 500 is a wrap of 2^32 - 500 frames (7.2 s at line rate)
    row, tracked, resets = both({PACKETS: c32(1000)}, {PACKETS: c32(500)}, 10.0, 5e10)
    assert (row.status, row.delta) == (S.OK, 2**32 - 500) and tracked == 2**32 - 500
    assert not resets


def test_a_fall_the_link_could_not_carry_is_a_reset_in_both():
    # 400 Gb/s for 5 s: at most 3e9 frames, not the 2^32 - 500 a wrap would need
    row, _, resets = both({PACKETS: c32(1000)}, {PACKETS: c32(500)}, 5.0, 5e10)
    assert (row.status, row.delta) == (COUNTER_DECREASE, None)
    assert resets == {COUNTER_DECREASE: 1}


def test_a_64_bit_counter_falling_too_makes_it_a_reset_in_both():
    before = {PACKETS: c32(2**32 - 10), BYTES64: CounterValue(10**9, "sysfs")}
    after = {PACKETS: c32(5), BYTES64: CounterValue(10, "sysfs")}
    row, _, resets = both(before, after, 5.0, None)
    assert row.status == COUNTER_DECREASE and resets == {COUNTER_DECREASE: 1}


@pytest.mark.parametrize("line_rate", [None, 5e10])
def test_without_evidence_against_it_a_fall_from_the_upper_half_wraps_in_both(line_rate):
    row, tracked, resets = both({PACKETS: c32(2**32 - 10)}, {PACKETS: c32(5)}, 5.0, line_rate)
    assert (row.status, row.delta) == (S.OK, 15) and tracked == 15 and not resets
