"""What could not be evaluated is listed, never read as healthy (issue #38 item 8): the
signatures a window lacks the series for, and the series a window left out (went
backwards, appeared) or a table did not map."""

from __future__ import annotations

from nicwatch.consumers.diagnosis import render
from nicwatch.consumers.diagnosis.engine import Window, evaluate, unknowns
from nicwatch.consumers.diagnosis.signatures import SIGNATURES
from nicwatch.consumers.diagnosis.windows import Recent, Step, step_between
from nicwatch.model import CounterValue, NicIdentity, SeriesKey
from nicwatch.snapshot.records import InterfaceSnapshot

CRC = SeriesKey("nic_rx_crc_errors_total")
OOB = SeriesKey("nic_rx_out_of_buffer_drops_total")
PKTS = SeriesKey("nic_rx_packets_total")


def test_an_empty_window_claims_nothing_healthy() -> None:
    """Blind: a window with only CRC errors at 0. Expected: nothing holds; host_rx_bottleneck
    unknown for lack of drop and packet counters; physical_layer (any one of its conditions
    suffices) unknown, as CRC is 0 but FEC and rx power are unread; pcie_limited unknown for
    lack of the ceiling gauge."""
    w = Window("eth0", 10.0, {CRC: 0.0}, {}, {})
    assert evaluate([w]) == []
    by_name = {u.signature: u for u in unknowns([w])}
    assert "nic_rx_out_of_buffer_drops_total" in by_name["host_rx_bottleneck"].missing
    assert "nic_pcie_bandwidth_ceiling_bytes_per_second" in by_name["pcie_limited"].missing
    assert "nic_fec_uncorrectable_blocks_total" in by_name["physical_layer"].missing
    text = render.text([], [w], "test")
    assert f"none of the {len(SIGNATURES)} signatures holds" not in text
    assert "could not be (below): nothing is claimed healthy there" in text
    assert "eth0: Host receive bottleneck (host_rx_bottleneck): unknown:" in text
    doc = render.as_json([], [w], "test")
    assert {u["signature"] for u in doc["not_evaluated"]} == set(by_name)


def test_a_known_condition_that_rules_it_out_is_not_unknown() -> None:
    """1 drop in 10 million packets is below the host drop threshold: host_rx_bottleneck is
    ruled out, whatever else is missing."""
    w = Window("eth0", 10.0, {OOB: 1.0, PKTS: 1e7}, {}, {})
    assert "host_rx_bottleneck" not in {u.signature for u in unknowns([w])}


def test_a_holding_signature_is_not_unknown() -> None:
    w = Window("eth0", 10.0, {OOB: 1e6, PKTS: 1e6}, {}, {})
    assert "host_rx_bottleneck" in {v.signature for v in evaluate([w])}
    assert "host_rx_bottleneck" not in {u.signature for u in unknowns([w])}


def test_per_priority_signatures_without_priority_series_are_named() -> None:
    w = Window("eth0", 10.0, {CRC: 0.0}, {}, {})
    storm = [u for u in unknowns([w]) if u.signature == "pause_storm"]
    assert storm and "no per-priority series" in storm[0].why()


def _snap(mono: float, counters: dict[SeriesKey, int]) -> InterfaceSnapshot:
    ident = NicIdentity("eth0", 2, "mlx5_core", None, None, "0000:3b:00.0", None, None)
    return InterfaceSnapshot(ident, 1000.0 + mono, mono,
                             {k: CounterValue(v, "ethtool_ioctl") for k, v in counters.items()},
                             {}, {}, {})


def test_a_counter_that_went_backwards_or_appeared_is_a_note() -> None:
    """Blind: between two snapshots rx_out_of_buffer fell (a reset) and CRC errors appeared.
    Expected: neither increase is used, both are named in the window's notes."""
    a = _snap(100.0, {OOB: 5000, PKTS: 10})
    b = _snap(105.0, {OOB: 10, PKTS: 20, CRC: 3})
    step = step_between(a, b)
    assert OOB not in step.increments and CRC not in step.increments
    recent = Recent(None)
    recent.add("eth0", step)
    w = recent.window("eth0")
    assert w is not None and w.pci_address == "0000:3b:00.0"
    notes = " | ".join(w.notes)
    assert "went backwards" in notes and "nic_rx_out_of_buffer_drops_total" in notes, notes
    assert "appeared between readings" in notes and "nic_rx_crc_errors_total" in notes, notes
    assert "eth0: 1 series left out (went backwards" in render.text([], [w], "t")


def test_recent_keeps_a_steps_skipped_series() -> None:
    recent = Recent(None)
    recent.add("eth0", Step(5.0, 0.0, 5.0, {}, {}, ("new: nic_rx_crc_errors_total",)))
    w = recent.window("eth0")
    assert w is not None and w.notes and "nic_rx_crc_errors_total" in w.notes[0]


def test_the_report_verdict_section_counts_what_was_not_evaluated() -> None:
    w = Window("eth0", 10.0, {CRC: 0.0}, {}, {})
    [line] = [x for x in render.verdict_section([w]) if x.startswith("no diagnosis")]
    assert "signature(s) could not be evaluated" in line, line
