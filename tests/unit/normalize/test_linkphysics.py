"""The pre-FEC BER arithmetic against worked examples: the serdes lane rate per link mode
(IEEE 802.3 clauses in normalize/linkphysics.py and docs/link-physics.md), the FEC code
behind the kernel's "rs", the ratio per lane and in total, and the histogram margin."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nicwatch.model import SeriesKey
from nicwatch.normalize.linkphysics import FEC_CODES, evaluate, fec_code, lane_rate


@pytest.mark.parametrize(("speed_mbps", "lanes", "bits", "baud", "code"), [
    (400_000, 8, 53.125e9, 26.5625e9, "rs544"),    # 400GBASE-R8, 802.3bs
    (400_000, 4, 106.25e9, 53.125e9, "rs544"),     # 400GBASE-R4, 802.3ck
    (800_000, 8, 106.25e9, 53.125e9, "rs544"),     # 800GBASE-R8, 802.3df
    (200_000, 4, 53.125e9, 26.5625e9, "rs544"),    # 200GBASE-R4, 802.3cd
    (100_000, 2, 53.125e9, 26.5625e9, "rs544"),    # 100GBASE-R2
    (100_000, 1, 106.25e9, 53.125e9, "rs544"),     # 100GBASE-R1, 802.3ck
    (100_000, 4, 25.78125e9, 25.78125e9, "rs528"),  # 100GBASE-R4, clause 91
    (25_000, 1, 25.78125e9, 25.78125e9, "rs528"),   # 25GBASE-R, 802.3by
    (40_000, 4, 10.3125e9, 10.3125e9, "rs528"),     # 40GBASE-R4, clause 82
])
def test_lane_rate_per_link_mode(speed_mbps, lanes, bits, baud, code):
    rate = lane_rate(speed_mbps, lanes)
    assert rate is not None
    assert (rate.bits_per_second, rate.baud, rate.rs_code) == (bits, baud, code)
    # PAM4 carries two bits per symbol, NRZ one.
    assert rate.bits_per_second / rate.baud == (2 if rate.modulation == "PAM4" else 1)


@pytest.mark.parametrize(("speed_mbps", "lanes"), [
    (400_000, None), (400_000, 0), (None, 8), (1_000, 1), (100_000, 3)])
def test_no_lane_rate_for_unknown_lanes_or_modes_outside_the_table(speed_mbps, lanes):
    assert lane_rate(speed_mbps, lanes) is None


def test_the_rs_code_follows_the_lane_modulation():
    assert fec_code("rs", lane_rate(400_000, 8)) == "rs544"
    assert fec_code("rs", lane_rate(100_000, 4)) == "rs528"
    assert fec_code("rs", None) is None  # no lane rate: the code is not known
    assert (fec_code("off", None), fec_code("baser", None), fec_code("llrs", None)) == (
        "none", "baser", "llrs")
    assert fec_code(None, lane_rate(400_000, 8)) is None


def test_correction_limits_are_half_the_parity_symbols():
    assert FEC_CODES["rs544"].symbols == (544 - 514) // 2 == 15
    assert FEC_CODES["rs528"].symbols == (528 - 514) // 2 == 7


def sample(speed_mbps: int, lanes: int, active: str = "rs") -> SimpleNamespace:
    return SimpleNamespace(gauges={
        SeriesKey("nic_link_speed_bytes_per_second"): speed_mbps * 125_000.0,
        SeriesKey("nic_link_lanes"): float(lanes),
        SeriesKey("nic_fec_mode_info", (("active", active), ("configured", "rs"))): 1.0,
    })


def lane_key(lane: int) -> SeriesKey:
    return SeriesKey("nic_fec_lane_bit_errors_total", (("lane", str(lane)),))


def test_one_bad_lane_of_eight_at_1e4_hides_in_a_total_of_1_3e5():
    """400GBASE-R8: lane 5 at 1e-4 is 5.3125e6 corrected bits/s of its 53.125 Gb/s; seven
    lanes at 1e-7 add 7 x 5312.5; the port's 425 Gb/s make 1.259e-5, below the rs544
    threshold of 2.4e-5 that lane 5 is four times above."""
    per_lane = {lane: (1e-4 if lane == 5 else 1e-7) * 53.125e9 for lane in range(8)}
    rates = {lane_key(lane): value for lane, value in per_lane.items()}
    rates[SeriesKey("nic_fec_corrected_bit_errors_total")] = sum(per_lane.values())
    got = evaluate(sample(400_000, 8), rates)
    assert got.fec == "rs544"
    assert got.ber["5"] == pytest.approx(1e-4)
    assert got.ber["0"] == pytest.approx(1e-7)
    assert got.ber["total"] == pytest.approx((5.3125e6 + 7 * 5312.5) / 425e9)
    assert got.ber["total"] == pytest.approx(1.2587e-5, rel=1e-4)
    assert got.worst_lane() == ("5", pytest.approx(1e-4))


def test_the_kp4_limit_on_one_lane_is_12_75_million_bits_a_second():
    got = evaluate(sample(400_000, 8), {lane_key(0): 12.75e6})
    assert got.ber["0"] == pytest.approx(FEC_CODES["rs544"].ber_limit)


def test_a_25g_nrz_lane_at_1e8():
    """100GBASE-SR4 (4 x 25.78125 Gb/s, RS(528,514)): 257.8125 bits/s is 1e-8."""
    got = evaluate(sample(100_000, 4), {lane_key(2): 257.8125})
    assert (got.fec, got.ber["2"]) == ("rs528", pytest.approx(1e-8))


def test_no_ratio_without_lanes_a_rate_or_across_a_reset():
    assert evaluate(sample(400_000, 8), {lane_key(0): None}).ber == {}
    assert evaluate(sample(400_000, 8), {lane_key(0): -5.0}).ber == {}
    no_lanes = SimpleNamespace(gauges={
        SeriesKey("nic_link_speed_bytes_per_second"): 5e10})
    assert evaluate(no_lanes, {lane_key(0): 1e6}).ber == {}


def hist_key(low: int, high: int, lane: str = "total") -> SeriesKey:
    return SeriesKey("nic_fec_codewords_total",
                     (("bin_high", str(high)), ("bin_low", str(low)), ("lane", lane)))


def test_margin_is_the_limit_minus_the_highest_bin_that_grew():
    rates = {hist_key(0, 0): 1e9, hist_key(1, 1): 1e5, hist_key(12, 12): 3.0,
             hist_key(13, 13): 0.0, hist_key(14, 15): None}
    assert evaluate(sample(400_000, 8), rates).margin == {"total": 15 - 12}
    # RS(528,514) corrects 7: codewords with 6 corrected symbols leave 1.
    assert evaluate(sample(100_000, 4), {hist_key(6, 6, "2"): 1.0}).margin == {"2": 1}
    # A clean link: only the zero bin grows, the whole correction is left.
    assert evaluate(sample(400_000, 8), {hist_key(0, 0): 1e9}).margin == {"total": 15}
    # No FEC code with a symbol limit: no margin.
    assert evaluate(sample(400_000, 8, "off"), {hist_key(0, 0): 1e9}).margin == {}


def test_each_codes_threshold_is_the_alerts_default_and_below_its_limit():
    """FEC_CODES' threshold is the one number the check and the diagnosis read; the shipped
    NicPreFecBerHigh.by_fec defaults must say the same, a decade below each FEC code's limit
    (the PCS objective itself without FEC)."""
    import tomllib
    from pathlib import Path

    toml = Path(__file__).parents[3] / "deploy" / "prometheus" / "thresholds.toml"
    by_fec = tomllib.loads(toml.read_text())["alerts"]["NicPreFecBerHigh"]["by_fec"]
    assert by_fec == {name: code.threshold for name, code in FEC_CODES.items()}
    for name, code in FEC_CODES.items():
        expected = code.ber_limit if name == "none" else code.ber_limit / 10
        assert code.threshold == pytest.approx(expected)
