"""Wrap or reset for 32-bit counters at 400/800G, decided from line rate, elapsed time and
reset evidence (issue #14). Numbers are real: line rates as /sys/class/net/<if>/speed gives
them, 64-byte frames (84 bytes on the wire with preamble, SFD and inter-packet gap), mlx5's
32-bit ``rx_out_of_buffer`` (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c, a Q
counter read as u32)."""

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nicwatch.model import CounterValue, NetClass, NicIdentity, Reading, Sample, SeriesKey
from nicwatch.tracker import (
    COUNTER_DECREASE,
    MIN_FRAME_ON_WIRE,
    STAT_SET_CHANGED,
    WRAP32,
    Tracker,
    advance,
    max_rate,
)

OOB = SeriesKey("nic_rx_out_of_buffer_drops_total")
RX_BYTES = SeriesKey("nic_rx_bytes_total")
LINE = SeriesKey("nic_link_speed_bytes_per_second")
MBPS = {"10G": 10_000, "25G": 25_000, "100G": 100_000, "200G": 200_000, "400G": 400_000,
        "800G": 800_000}


def bytes_per_second(speed: str) -> float:
    return MBPS[speed] * 125_000.0


def sample(t: float, counters: dict, speed: str | None = "400G", generation: int = 1) -> Sample:
    nc = NetClass("eth2", 4, None, "up", 9000, MBPS.get(speed), None, True, None, None, None,
                  None, None, "mlx5_core")
    gauges = {LINE: bytes_per_second(speed)} if speed else {}
    return Sample(NicIdentity("eth2", 4, "mlx5_core", None, None, None, None, None), t, t,
                  counters, gauges, frozenset(k.metric for k in counters), generation,
                  Reading("eth2", t, t, nc))


def oob(raw: int) -> CounterValue:
    return CounterValue(raw, "ethtool_ioctl", 32)


def test_64_byte_frame_rates_are_the_real_ones():
    # 400GbE: 50e9 B/s / 84 B = 595.2 Mpps; 800GbE 1190.5 Mpps.
    assert round(max_rate("packets", bytes_per_second("400G")) / 1e6, 1) == 595.2
    assert round(max_rate("packets", bytes_per_second("800G")) / 1e6, 1) == 1190.5
    assert max_rate("bytes", bytes_per_second("400G")) == 50e9
    assert max_rate("seconds", bytes_per_second("400G")) == 1.0
    assert max_rate("", 50e9, stat="rx_roce_bytes_lsd") == 50e9  # raw, named in bytes


def test_400g_drop_storm_from_below_half_range_is_a_wrap_not_a_reset():
    """rx_out_of_buffer at 2.0e9 (below 2**31), then 5 s of a storm dropping 500 Mpps
    (84 % of 64-byte line rate): 2.5e9 more, past 2**32. The old rule called it a reset
    and lost 4.29e9 drops."""
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(2_000_000_000)})])
    true_next = 2_000_000_000 + 2_500_000_000
    (s,) = tr.update([sample(5, {OOB: oob(true_next - WRAP32)})])
    assert s.counters[OOB].value == true_next
    assert s.counters[OOB].rate == 500e6
    assert s.resets == {}
    # The old rule on the same numbers:
    assert advance(2_000_000_000, 2_000_000_000, true_next - WRAP32, 32) is None


def test_same_fall_on_a_25g_link_is_a_reset():
    """25GbE carries 37.2 Mpps of 64-byte frames: 186 M in 5 s, nowhere near the 2.5e9 the
    wrap would need, so the fall is a reset (firmware counter reset)."""
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(2_000_000_000)}, speed="25G")])
    (s,) = tr.update([sample(5, {OOB: oob(205_032_704)}, speed="25G")])
    assert s.counters[OOB].value == 205_032_704 and s.counters[OOB].rate is None
    assert s.resets == {COUNTER_DECREASE: 1}


def test_fall_from_the_upper_half_is_a_reset_when_the_link_cannot_carry_the_wrap():
    # 10GbE: 14.88 Mpps. From 4.0e9 to 10 would be 295 M drops in 5 s: impossible.
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(4_000_000_000)}, speed="10G")])
    (s,) = tr.update([sample(5, {OOB: oob(10)}, speed="10G")])
    assert s.resets == {COUNTER_DECREASE: 1}
    # ... while a small wrap near the top is still a wrap.
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(WRAP32 - 1000)}, speed="10G")])
    (s,) = tr.update([sample(5, {OOB: oob(500)}, speed="10G")])
    assert s.counters[OOB].value == WRAP32 + 500 and s.resets == {}


def test_a_64bit_counter_falling_in_the_same_poll_makes_it_a_reset():
    """A driver reload that kept the ifindex: netdev rx_bytes (64-bit) restarts too, so the
    32-bit fall is a reset even though 400G could have carried the wrap."""
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(2_000_000_000),
                          RX_BYTES: CounterValue(9_000_000_000_000, "sysfs")})])
    (s,) = tr.update([sample(5, {OOB: oob(205_032_704),
                                 RX_BYTES: CounterValue(1_000_000, "sysfs")})])
    assert s.counters[OOB].value == 205_032_704
    assert s.resets == {COUNTER_DECREASE: 1}


def test_a_changed_stat_set_makes_a_driver_counter_fall_a_reset():
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(2_000_000_000)}, generation=1)])
    (s,) = tr.update([sample(5, {OOB: oob(205_032_704)}, generation=2)])
    assert s.counters[OOB].value == 205_032_704
    assert s.resets == {STAT_SET_CHANGED: 1, COUNTER_DECREASE: 1}


def test_safe_interval_and_ambiguity_at_400g_and_800g():
    tr = Tracker()
    (first,) = tr.update([sample(0, {OOB: oob(0)})])
    # 2**32 / 595.24 Mpps = 7.216 s: a 5 s poll is safe at 400G.
    assert round(first.wrap_safe_interval, 3) == 7.216 and first.wrap_ambiguous is False
    (s,) = tr.update([sample(5, {OOB: oob(1)})])
    assert s.wrap_ambiguous is False
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(0)}, speed="800G")])
    (s,) = tr.update([sample(5, {OOB: oob(1)}, speed="800G")])
    # 2**32 / 1190.5 Mpps = 3.608 s < 5 s: the counter may have wrapped once or more unseen.
    assert round(s.wrap_safe_interval, 3) == 3.608 and s.wrap_ambiguous is True
    (s,) = tr.update([sample(8, {OOB: oob(2)}, speed="800G")])  # polled after 3 s
    assert s.wrap_ambiguous is False


def test_no_line_rate_no_claim():
    tr = Tracker()
    (s,) = tr.update([sample(0, {OOB: oob(0)}, speed=None)])
    assert s.wrap_safe_interval is None and s.wrap_ambiguous is None
    (s,) = tr.update([sample(0, {RX_BYTES: CounterValue(0, "sysfs")})])
    assert s.wrap_safe_interval is None  # no 32-bit counter at all


SPEEDS = st.sampled_from(sorted(MBPS))


@settings(max_examples=300, deadline=None)
@given(SPEEDS, st.lists(st.tuples(st.floats(0.2, 0.99), st.floats(0.0, 1.0)), min_size=1,
                        max_size=30), st.integers(0, WRAP32 - 1))
def test_extension_is_exact_whenever_polls_are_within_the_safe_interval(speed, polls, start):
    """A true count seen through a 32-bit register, moving at up to 64-byte line rate, is
    recovered exactly (no reset, no lost wrap) as long as each poll comes within the safe
    interval, wherever the register starts."""
    top = max_rate("packets", bytes_per_second(speed))
    safe = WRAP32 / top
    tr = Tracker()
    t, true = 0.0, start
    tr.update([sample(t, {OOB: oob(true % WRAP32)}, speed=speed)])
    for gap_fraction, load in polls:
        gap = gap_fraction * min(safe, 5.0)
        step = int(top * gap * load)
        assume(step < WRAP32)
        t += gap
        true += step
        (s,) = tr.update([sample(t, {OOB: oob(true % WRAP32)}, speed=speed)])
        assert s.counters[OOB].value == true
        assert s.resets == {}
        assert s.wrap_ambiguous is False


@settings(max_examples=300, deadline=None)
@given(SPEEDS, st.integers(0, WRAP32 - 1), st.integers(0, WRAP32 - 1), st.floats(0.5, 30.0))
def test_a_fall_is_a_wrap_exactly_when_the_link_could_carry_it(speed, prev, raw, gap):
    assume(raw < prev)
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(prev)}, speed=speed)])
    (s,) = tr.update([sample(gap, {OOB: oob(raw)}, speed=speed)])
    carried = bytes_per_second(speed) / MIN_FRAME_ON_WIRE * gap * 1.05
    wrapped = raw + WRAP32 - prev
    if wrapped <= carried:
        assert s.counters[OOB].value == prev + wrapped and s.resets == {}
    else:
        assert s.counters[OOB].value == raw and s.resets == {COUNTER_DECREASE: 1}


@settings(max_examples=200, deadline=None)
@given(SPEEDS, st.integers(1, WRAP32 - 1), st.integers(0, WRAP32 - 1))
def test_a_reset_with_64bit_evidence_is_always_a_reset(speed, prev, raw):
    assume(raw < prev)
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(prev), RX_BYTES: CounterValue(10**12, "sysfs")},
                      speed=speed)])
    (s,) = tr.update([sample(5, {OOB: oob(raw), RX_BYTES: CounterValue(10, "sysfs")},
                             speed=speed)])
    assert s.counters[OOB].value == raw and s.resets == {COUNTER_DECREASE: 1}


def test_ambiguity_reaches_metrics():
    from nicwatch.exporter.render import SelfStats, render

    from promtext import parse_exposition, promtool_check, series
    tr = Tracker()
    tr.update([sample(0, {OOB: oob(0)}, speed="800G")])
    text = render(tr.update([sample(5, {OOB: oob(1)}, speed="800G")]), SelfStats()).decode()
    promtool_check(text)
    m = parse_exposition(text)
    assert m[series("nic_stat_wrap_ambiguous", device="eth2")] == 1
    assert round(m[series("nic_stat_wrap_safe_interval_seconds", device="eth2")], 3) == 3.608


def test_daemon_logs_uncountable_wraps_once_per_change():
    from structlog.testing import capture_logs

    from nicwatch.daemon import WrapStates
    tr, states = Tracker(), WrapStates()
    with capture_logs() as logs:
        for t in (0, 5, 10, 15):  # 800G polled every 5 s: ambiguous from the second poll on
            states.observe(tr.update([sample(t, {OOB: oob(t)}, speed="800G")]), 5.0)
        states.observe(tr.update([sample(18, {OOB: oob(20)}, speed="800G")]), 3.0)
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("counter_wraps_uncountable", "warning"), ("counter_wraps_countable", "info")]
    assert logs[0]["safe_interval"] == 3.608 and "below 3.6s" in logs[0]["hint"]
