"""Tracker stories and properties: wraps, resets, rates, peaks."""

from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.model import (
    CounterValue,
    NetClass,
    NicIdentity,
    Reading,
    Sample,
    SeriesKey,
)
from nicwatch.tracker import (
    COUNTER_DECREASE,
    INTERFACE_REPLACED,
    STAT_SET_CHANGED,
    WRAP32,
    Tracker,
    advance,
)

PAUSE = SeriesKey("nic_tx_pause_frames_total")
BYTES = SeriesKey("nic_rx_bytes_total")
DURATION = SeriesKey("nic_rx_pause_duration_seconds_total", (("priority", "3"),))


def sample(t: float, counters: dict, ifindex=7, generation=1, driver="mlx5_core") -> Sample:
    nc = NetClass("eth0", ifindex, None, "up", 9000, None, None, True, None, None, None, None,
                  None, driver)
    return Sample(NicIdentity("eth0", ifindex, driver, None, None, None, None, None), t, t,
                  counters, {}, frozenset(k.metric for k in counters), generation,
                  Reading("eth0", t, t, nc))


def cv(raw, width=64, scale=1.0, source="ethtool_ioctl"):
    return CounterValue(raw, source, width, scale)


def test_story_first_poll_increase_wrap_and_reset():
    tr = Tracker(peak_window=60)
    # First poll: values as read, no rate yet.
    (first,) = tr.update([sample(0, {PAUSE: cv(100, 32)})])
    assert first.counters[PAUSE].value == 100 and first.counters[PAUSE].rate is None
    # Increase by 500 over 5 s.
    (s,) = tr.update([sample(5, {PAUSE: cv(600, 32)})])
    assert s.counters[PAUSE].rate == 100.0
    # 32-bit wrap: from near the top to a small value is +(2**32 - x + y), not a reset.
    tr.update([sample(10, {PAUSE: cv(WRAP32 - 100, 32)})])
    (s,) = tr.update([sample(15, {PAUSE: cv(400, 32)})])
    assert s.counters[PAUSE].value == WRAP32 + 400
    assert s.counters[PAUSE].rate == 100.0
    assert s.resets == {}
    # A real reset (driver reload): value drops, no rate, reset counted.
    (s,) = tr.update([sample(20, {PAUSE: cv(3, 32)})])
    assert s.counters[PAUSE].value == 3 and s.counters[PAUSE].rate is None
    assert s.resets == {COUNTER_DECREASE: 1}
    # Rates resume after the reset.
    (s,) = tr.update([sample(25, {PAUSE: cv(8, 32)})])
    assert s.counters[PAUSE].rate == 1.0


def test_64bit_decrease_is_a_reset_not_a_wrap():
    tr = Tracker()
    tr.update([sample(0, {BYTES: cv(2**63, source="sysfs")})])
    (s,) = tr.update([sample(5, {BYTES: cv(10, source="sysfs")})])
    assert s.counters[BYTES].value == 10 and s.counters[BYTES].rate is None
    assert s.resets == {COUNTER_DECREASE: 1}


def test_scale_turns_microseconds_into_a_paused_fraction():
    tr = Tracker()
    tr.update([sample(0, {DURATION: cv(0, scale=1e-6)})])
    (s,) = tr.update([sample(5, {DURATION: cv(1_000_000, scale=1e-6)})])
    assert s.counters[DURATION].value == 1.0
    assert abs(s.counters[DURATION].rate - 0.2) < 1e-12


def test_stat_set_change_skips_driver_rates_and_counts_a_reset():
    tr = Tracker()
    tr.update([sample(0, {PAUSE: cv(10), BYTES: cv(10, source="sysfs")}, generation=1)])
    (s,) = tr.update([sample(5, {PAUSE: cv(20), BYTES: cv(20, source="sysfs")}, generation=2)])
    assert s.counters[PAUSE].rate is None  # driver-sourced: no rate across the change
    assert s.counters[BYTES].rate == 2.0  # kernel netdev counters are unaffected
    assert s.resets == {STAT_SET_CHANGED: 1}


def test_replaced_interface_starts_over():
    tr = Tracker()
    tr.update([sample(0, {PAUSE: cv(50)}, ifindex=7)])
    (s,) = tr.update([sample(5, {PAUSE: cv(60)}, ifindex=9)])
    assert s.counters[PAUSE].rate is None and s.counters[PAUSE].value == 60
    assert s.resets == {INTERFACE_REPLACED: 1}


def test_peak_keeps_a_burst_visible_for_the_window():
    tr = Tracker(peak_window=60)
    values = [0, 0, 5000, 5000, 5000, 5000]  # one 5-second burst of 1000 frames/s
    out = [tr.update([sample(5 * i, {PAUSE: cv(v)})])[0] for i, v in enumerate(values)]
    assert out[2].counters[PAUSE].peak == 1000.0
    assert out[5].counters[PAUSE].rate == 0.0
    assert out[5].counters[PAUSE].peak == 1000.0  # still within 60 s
    later = tr.update([sample(5 * 5 + 61, {PAUSE: cv(5000)})])[0]
    assert later.counters[PAUSE].peak == 0.0  # the burst left the window


def test_non_health_families_have_no_peak_and_gone_devices_are_remembered():
    tr = Tracker()
    (s,) = tr.update([sample(0, {BYTES: cv(1, source="sysfs")})])
    assert s.counters[BYTES].peak is None
    assert tr.update([]) == []
    (s,) = tr.update([sample(5, {BYTES: cv(0, source="sysfs")})])
    assert s.resets == {COUNTER_DECREASE: 1}  # back with the same ifindex: the same device


@given(st.lists(st.integers(min_value=0, max_value=WRAP32 - 1), min_size=1, max_size=50))
def test_32bit_extension_matches_true_counts_when_steps_stay_below_half_range(steps):
    """A true 64-bit count, seen through a 32-bit register, is recovered exactly when each
    poll moves it by less than 2**31."""
    true_values, total = [], 0
    for step in steps:
        total += step % (WRAP32 // 2)
        true_values.append(total)
    tr = Tracker()
    for i, v in enumerate(true_values):
        (s,) = tr.update([sample(i, {PAUSE: cv(v % WRAP32, 32)})])
        assert s.counters[PAUSE].value == v
    assert s.resets == {}


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.sampled_from([32, 64])),
                min_size=1, max_size=40))
def test_rates_never_negative_and_exports_only_fall_with_a_recorded_reset(readings):
    tr = Tracker()
    prev_value, prev_resets = None, 0
    for i, (raw, width) in enumerate(readings):
        if width == 32:
            raw %= WRAP32
        (s,) = tr.update([sample(i * 5.0, {PAUSE: cv(raw, width)})])
        t = s.counters[PAUSE]
        resets = sum(s.resets.values())
        assert t.rate is None or t.rate >= 0
        if prev_value is not None and t.value < prev_value:
            assert resets == prev_resets + 1
        prev_value, prev_resets = t.value, resets


@given(st.integers(0, WRAP32 - 1), st.integers(0, WRAP32 - 1))
def test_advance_is_monotonic_or_a_reset(prev, raw):
    ext = advance(prev, prev, raw, 32)
    assert ext is None or ext >= prev
