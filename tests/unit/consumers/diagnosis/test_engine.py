"""The signature table evaluated over windows of canonical series: per signature a positive
scenario (the fault's series at the values the fault produces) and a negative one (the same
port with the one distinguishing series healthy), and healthy busy ports where nothing holds.

Numbers are those of a 400G ConnectX-7 port (50 GB/s, 4 FEC lanes, PFC on priority 3, mlx5
counter families), 30-second windows as the daemon evaluates them."""

from __future__ import annotations

import math

import pytest

from nicwatch.consumers.diagnosis.engine import QUANTITIES, Window, evaluate, evaluate_one
from nicwatch.consumers.diagnosis.signatures import BY_NAME, CONTEXT, SIGNATURES
from nicwatch.model import SeriesKey

LINE = 50e9  # 400 Gb/s in bytes/s
S = 30.0


def key(metric: str, **labels: str) -> SeriesKey:
    return SeriesKey(metric, tuple(sorted(labels.items())))


def busy(**overrides: float) -> dict[SeriesKey, float]:
    """30 s of a healthy port at 80 % of line rate in both directions, 90 % of it RoCE:
    FEC correcting at a pre-FEC BER of 2e-8 on 4 lanes, a few PAUSE frames on priority 3,
    ECN marks and CNPs flowing. Rates per second; multiplied by S."""
    rate = {
        key("nic_rx_bytes_total"): 0.08 * LINE, key("nic_tx_bytes_total"): 0.08 * LINE,
        key("nic_phy_rx_bytes_total"): 0.8 * LINE, key("nic_phy_tx_bytes_total"): 0.8 * LINE,
        key("nic_rx_packets_total"): 0.08 * LINE / 1500,
        key("nic_tx_packets_total"): 0.08 * LINE / 1500,
        key("nic_tx_dropped_total"): 0.0, key("nic_tx_discards_total"): 0.0,
        key("nic_rdma_rx_packets_total", rdma_device="mlx5_0", port="1"): 0.72 * LINE / 4096,
        key("nic_rdma_rx_bytes_total", rdma_device="mlx5_0", port="1"): 0.72 * LINE,
        key("nic_rx_out_of_buffer_drops_total"): 0.0, key("nic_rx_discards_total"): 0.0,
        key("nic_tx_pause_ctrl_frames_total"): 3 / S, key("nic_rx_pause_ctrl_frames_total"): 3 / S,
        key("nic_rx_pfc_frames_total", priority="3"): 3 / S,
        key("nic_tx_pfc_frames_total", priority="3"): 3 / S,
        key("nic_rx_pause_duration_seconds_total", priority="3"): 0.001,
        key("nic_tx_pause_duration_seconds_total", priority="3"): 0.001,
        key("nic_pause_storm_events_total", kind="warning"): 0.0,
        key("nic_fec_corrected_bit_errors_total"): 2e-8 * LINE * 8,
        **{key("nic_fec_corrected_blocks_total", lane=str(i)): 2e-8 * LINE * 2
           for i in range(4)},
        **{key("nic_fec_uncorrectable_blocks_total", lane=str(i)): 0.0 for i in range(4)},
        key("nic_rx_crc_errors_total"): 0.0, key("nic_rx_pcs_symbol_errors_total"): 0.0,
        key("nic_link_down_events_total"): 0.0, key("nic_carrier_down_events_total"): 0.0,
        key("nic_rx_cpu_time_squeeze_total", cpu="0"): 0.0,
        key("nic_rx_cpu_dropped_total", cpu="0"): 0.0,
        key("nic_rdma_ecn_marked_packets_total", rdma_device="mlx5_0", port="1"): 500.0,
        key("nic_rdma_cnp_sent_total", rdma_device="mlx5_0", port="1"): 120.0,
        key("nic_rdma_cnp_handled_total", rdma_device="mlx5_0", port="1"): 100.0,
        key("nic_rdma_cnp_ignored_total", rdma_device="mlx5_0", port="1"): 0.0,
        **{key(f"nic_rdma_{n}_total", rdma_device="mlx5_0", port="1"): 0.0 for n in (
            "out_of_sequence", "packet_seq_errors", "implied_nak_seq_errors",
            "local_ack_timeout_errors", "duplicate_requests", "rnr_nak_retry_errors",
            "out_of_buffer_drops", "req_transport_retries_exceeded",
            "req_rnr_retries_exceeded")},
    }
    for name, value in overrides.items():
        metric, _, labels = name.partition("|")
        k = key(metric, **dict(p.split("=") for p in labels.split(",") if p))
        rate[k] = value
    return rate


def gauges(**overrides: float) -> dict[SeriesKey, float]:
    g = {
        key("nic_link_speed_bytes_per_second"): LINE,
        key("nic_pcie_bandwidth_ceiling_bytes_per_second"): 63e9,  # Gen5 x16
        key("nic_ring_descriptors", ring="rx"): 8192,
        key("nic_ring_max_descriptors", ring="rx"): 8192,
        **{key("nic_pfc_enabled", priority=str(p)): float(p == 3) for p in range(8)},
        **{key("nic_roce_ecn_enabled", point=pt, priority=str(p)): 1.0
           for p in range(8) for pt in ("np", "rp")},
        key("nic_roce_cnp_priority"): 6.0,
        key("nic_qos_trust_info", trust="dscp", source="mlx5_sysfs"): 1.0,
        key("nic_qos_dscp_priority", dscp="26"): 3.0, key("nic_qos_dscp_priority", dscp="48"): 6.0,
        key("nic_rdma_traffic_class", rdma_device="mlx5_0", port="1"): 106.0,  # DSCP 26
        key("nic_rx_cpu_softirq_ratio", cpu="0"): 0.35,
        key("nic_rx_queue_imbalance_ratio", window="poll"): 1.1,
        key("nic_module_rx_power_watts", lane="1", type="average"): 0.0008,
        key("nic_module_rx_power_threshold_watts", level="low_warning", type="average"): 0.0001,
    }
    for name, value in overrides.items():
        metric, _, labels = name.partition("|")
        g[key(metric, **dict(p.split("=") for p in labels.split(",") if p))] = value
    return g


def window(rates: dict[SeriesKey, float] | None = None, gauge: dict[SeriesKey, float] | None = None,
           peaks: dict[SeriesKey, float] | None = None, device: str = "enp1s0np0") -> Window:
    rates = busy() if rates is None else rates
    peak = dict(rates)
    peak.update(peaks or {})
    return Window(device, S, {k: v * S for k, v in rates.items()}, peak,
                  gauges() if gauge is None else gauge)


def held(w: Window) -> set[str]:
    return {v.label for v in evaluate([w])}


# --------------------------------------------------------------------------- healthy busy

def test_the_table_is_whole() -> None:
    names = [s.name for s in SIGNATURES]
    assert len(names) == len(set(names))
    for sig in SIGNATURES:
        assert sig.conditions and any(c.required for c in sig.conditions), sig.name
        assert sig.source and sig.false_positives and sig.next_check, sig.name
        for c in sig.conditions:
            assert c.quantity in QUANTITIES, (sig.name, c.quantity)
            assert c.op in (">=", "<") and math.isfinite(c.threshold)
        for other in sig.supersedes:
            assert other in BY_NAME


def test_a_healthy_busy_port_raises_nothing() -> None:
    """80 % of line rate both ways, FEC correcting at 2e-8, a few PAUSE: nothing holds, and
    every signature was evaluated on known series (not silent for lack of data)."""
    w = window()
    assert held(w) == set()
    verdicts = evaluate([w], all_verdicts=True)
    # (priority "global": mlx5's pause_ctrl counters may count PFC too, so 802.3x PAUSE on
    # a PFC port is unknown, never guessed)
    unknown = {v.signature for v in verdicts if v.scope_value != "global"
               for r in v.conditions if r.condition.required and r.held is None}
    assert unknown == set()
    assert {v.scope_value for v in verdicts if v.signature == "pause_storm"} == {"3", "global"}


def test_line_rate_on_a_pcie_link_above_line_rate_is_not_pcie_limited() -> None:
    w = window(busy(nic_phy_rx_bytes_total=0.99 * LINE, nic_phy_tx_bytes_total=LINE))
    assert held(w) == set()


def test_occasional_pause_on_a_busy_port_is_no_fault() -> None:
    """900 PFC frames/s each way (below 1,000) and 4 % of the time paused."""
    w = window(busy(**{"nic_rx_pfc_frames_total|priority=3": 900.0,
                       "nic_tx_pfc_frames_total|priority=3": 900.0,
                       "nic_rx_pause_duration_seconds_total|priority=3": 0.04,
                       "nic_tx_pause_duration_seconds_total|priority=3": 0.04}))
    assert held(w) == set()


def test_absent_series_never_hold() -> None:
    """A port with only netdev traffic counters: every signature is unknown, none holds."""
    w = window({key("nic_rx_bytes_total"): 1e9}, {key("nic_link_speed_bytes_per_second"): LINE})
    assert held(w) == set()


# --------------------------------------------------------------------------- per signature
# (signature, positive rates/gauges/peaks, negative: the same with the decisive series healthy)

CASES = {
    "host_rx_bottleneck": (
        {"rates": {"nic_rx_out_of_buffer_drops_total": 2000.0,
                    "nic_tx_pause_ctrl_frames_total": 5000.0},
             "gauges": {"nic_ring_descriptors|ring=rx": 1024}},
        {"rates": {"nic_rx_out_of_buffer_drops_total": 0.5,
                    "nic_tx_pause_ctrl_frames_total": 5000.0},
             "gauges": {"nic_ring_descriptors|ring=rx": 1024}}),
    "rx_cpu_saturated": (
        {"rates": {"nic_rx_cpu_time_squeeze_total|cpu=0": 300.0},
             "gauges": {"nic_rx_cpu_softirq_ratio|cpu=0": 0.98,
                     "nic_rx_queue_imbalance_ratio|window=poll": 8.0}},
        {"rates": {"nic_rx_cpu_time_squeeze_total|cpu=0": 300.0},
             "gauges": {"nic_rx_cpu_softirq_ratio|cpu=0": 0.6}}),
    # 1 % of what the host sends dropped on transmit (an MTU the other end refuses, a queue
    # stopped); the negative: one drop in 30 s on the busy port
    "tx_drops": (
        {"rates": {"nic_tx_dropped_total": 0.01 * 0.08 * LINE / 1500}},
        {"rates": {"nic_tx_dropped_total": 1 / S}}),
    "pcie_limited": (
        {"rates": {"nic_phy_rx_bytes_total": 14e9},
             "gauges": {"nic_pcie_bandwidth_ceiling_bytes_per_second": 15.75e9,
                     "nic_link_speed_bytes_per_second": 25e9}},
        {"rates": {"nic_phy_rx_bytes_total": 8e9, "nic_phy_tx_bytes_total": 8e9},
             "gauges": {"nic_pcie_bandwidth_ceiling_bytes_per_second": 15.75e9,
                     "nic_link_speed_bytes_per_second": 25e9}}),
    "paused_by_peer{priority=3}": (
        {"rates": {"nic_rx_pause_duration_seconds_total|priority=3": 0.4,
                    "nic_rx_pfc_frames_total|priority=3": 8000.0}},
        {"rates": {"nic_rx_pause_duration_seconds_total|priority=3": 0.02,
                    "nic_rx_pfc_frames_total|priority=3": 400.0}}),
    "pausing_peer{priority=3}": (
        {"rates": {"nic_tx_pause_duration_seconds_total|priority=3": 0.3,
                    "nic_tx_pfc_frames_total|priority=3": 6000.0}},
        {"rates": {"nic_tx_pause_duration_seconds_total|priority=3": 0.01,
                    "nic_tx_pfc_frames_total|priority=3": 200.0}}),
    "pause_storm{priority=3}": (
        {"rates": {"nic_tx_pause_duration_seconds_total|priority=3": 0.95,
                    "nic_tx_pfc_frames_total|priority=3": 19000.0,
                    "nic_phy_rx_bytes_total": 1e6, "nic_rx_bytes_total": 1e5,
                    "nic_pause_storm_events_total|kind=warning": 1 / S}},
        # paused as much, but traffic keeps arriving: a source, not a storm
        {"rates": {"nic_tx_pause_duration_seconds_total|priority=3": 0.95,
                    "nic_tx_pfc_frames_total|priority=3": 19000.0}}),
    "ecn_not_engaging{priority=3}": (
        {"rates": {"nic_rx_pfc_frames_total|priority=3": 500.0,
                    "nic_tx_pfc_frames_total|priority=3": 300.0,
                    "nic_rdma_ecn_marked_packets_total|port=1,rdma_device=mlx5_0": 0.0,
                    "nic_rdma_cnp_sent_total|port=1,rdma_device=mlx5_0": 0.0,
                    "nic_rdma_cnp_handled_total|port=1,rdma_device=mlx5_0": 0.0}},
        {"rates": {"nic_rx_pfc_frames_total|priority=3": 500.0,
                    "nic_tx_pfc_frames_total|priority=3": 300.0}}),
    "congestion_control_misconfigured": (
        {"gauges": {"nic_roce_ecn_enabled|point=np,priority=3": 0.0}},
        {"gauges": {"nic_roce_ecn_enabled|point=np,priority=5": 0.0}}),
    "rdma_transport_loss": (
        {"rates": {"nic_rdma_out_of_sequence_total|port=1,rdma_device=mlx5_0": 20.0,
                    "nic_rdma_local_ack_timeout_errors_total|port=1,rdma_device=mlx5_0": 1.0,
                    "nic_rdma_duplicate_requests_total|port=1,rdma_device=mlx5_0": 5.0}},
        {"rates": {"nic_rdma_local_ack_timeout_errors_total|port=1,rdma_device=mlx5_0": 1.0}}),
    "rdma_receiver_not_ready": (
        {"rates": {"nic_rdma_rnr_nak_retry_errors_total|port=1,rdma_device=mlx5_0": 40.0,
                    "nic_rdma_out_of_buffer_drops_total|port=1,rdma_device=mlx5_0": 300.0}},
        {"rates": {"nic_rdma_rnr_nak_retry_errors_total|port=1,rdma_device=mlx5_0": 40.0}}),
    "rdma_rnr_naks_received": (
        {"rates": {"nic_rdma_rnr_nak_retry_errors_total|port=1,rdma_device=mlx5_0": 40.0}},
        {"rates": {"nic_rdma_rnr_nak_retry_errors_total|port=1,rdma_device=mlx5_0": 0.0}}),
    "rdma_qp_retries_exceeded": (
        {"rates": {"nic_rdma_local_ack_timeout_errors_total|port=1,rdma_device=mlx5_0": 1.0,
                   "nic_rdma_req_transport_retries_exceeded_total|port=1,rdma_device=mlx5_0":
                   0.1}},
        {"rates": {"nic_rdma_local_ack_timeout_errors_total|port=1,rdma_device=mlx5_0": 1.0}}),
    "physical_layer": (
        {"rates": {"nic_fec_corrected_bit_errors_total": 3e-5 * LINE * 8,
                    "nic_fec_uncorrectable_blocks_total|lane=2": 0.1}},
        {"rates": {"nic_fec_corrected_bit_errors_total": 5e-7 * LINE * 8}}),
    "config_drift": (
        {"gauges": {"nic_expectation_violation|actual=1024,check=consistent_rx_ring,"
                     "expected=8192": 1.0}},
        {"gauges": {"nic_expectation_violation|actual=1024,check=rx_ring,expected=8192": 1.0}}),
}


def _build(spec: dict[str, dict[str, float]]) -> Window:
    return window(busy(**spec.get("rates", {})), gauges(**spec.get("gauges", {})))


@pytest.mark.parametrize("label", sorted(CASES))
def test_positive_holds_exactly(label: str) -> None:
    w = _build(CASES[label][0])
    assert held(w) == {label}


# What a negative case may still hold: the storm's negative is a port that pauses its peer
# as much while traffic keeps arriving, a source and no storm.
# RNR NAKs received without out-of-buffer drops here are the peer's receiver, not this one.
NEGATIVE_HOLDS = {"pause_storm{priority=3}": {"pausing_peer{priority=3}"},
                  "rdma_receiver_not_ready": {"rdma_rnr_naks_received"}}


@pytest.mark.parametrize("label", sorted(CASES))
def test_negative_holds_nothing(label: str) -> None:
    assert held(_build(CASES[label][1])) == NEGATIVE_HOLDS.get(label, set())


def test_every_signature_has_a_positive_and_a_negative_case() -> None:
    covered = {label.partition("{")[0] for label in CASES}
    assert covered == set(BY_NAME)


def test_the_verdict_names_the_evidence_reason_and_fix() -> None:
    w = _build(CASES["host_rx_bottleneck"][0])
    (v,) = evaluate([w])
    series = {e.series for e in v.evidence}
    assert "nic_rx_out_of_buffer_drops_total" in series
    assert 'nic_ring_descriptors{ring="rx"}' in series
    assert "the rx ring is below its maximum" in v.reasons
    assert "the host sent PAUSE/PFC while dropping" in v.reasons
    assert "ethtool -G enp1s0np0 rx" in v.next_check
    # drops held, PAUSE held, ring held; PCIe, CPU and queue balance did not
    assert v.confidence == pytest.approx(3 / 6)


def test_physical_layer_names_the_lane() -> None:
    (v,) = evaluate([_build(CASES["physical_layer"][0])])
    assert any('lane="2"' in e.series for e in v.evidence)
    assert not any('nic_fec_uncorrectable_blocks_total{lane="1"}' in e.series
                   for e in v.evidence)


def test_rx_power_near_the_low_warning_is_physical() -> None:
    g = gauges(**{"nic_module_rx_power_watts|lane=1,type=average": 0.00011})  # 0.4 dB above
    (v,) = evaluate([window(gauge=g)])
    assert v.signature == "physical_layer"
    assert any("nic_module_rx_power_watts" in e.series for e in v.evidence)


def test_a_flap_is_physical() -> None:
    assert held(window(busy(nic_carrier_down_events_total=1 / S))) == {"physical_layer"}


def test_storm_supersedes_pausing_the_peer_but_a_source_is_a_source() -> None:
    storm = _build(CASES["pause_storm{priority=3}"][0])
    assert "pausing_peer{priority=3}" not in held(storm)
    source = _build(CASES["pause_storm{priority=3}"][1])
    assert held(source) == {"pausing_peer{priority=3}"}


def test_a_storm_needs_the_whole_poll_paused() -> None:
    """The peak per-poll fraction decides: 0.5 of one poll is no storm."""
    spec = CASES["pause_storm{priority=3}"][0]
    rates = busy(**{**spec["rates"], "nic_tx_pause_duration_seconds_total|priority=3": 0.5})
    assert "pause_storm{priority=3}" not in held(window(rates))


def test_congestion_rules_each_hold_alone() -> None:
    cnp_on_pfc = gauges(**{"nic_pfc_enabled|priority=6": 1.0})
    dscp_elsewhere = gauges(**{"nic_qos_dscp_priority|dscp=26": 4.0})
    ignored = busy(**{"nic_rdma_cnp_ignored_total|port=1,rdma_device=mlx5_0": 2.0})
    for w in (window(gauge=cnp_on_pfc), window(gauge=dscp_elsewhere), window(ignored)):
        assert held(w) == {"congestion_control_misconfigured"}


def test_drift_is_context_of_the_cause() -> None:
    spec = CASES["host_rx_bottleneck"][0]
    g = gauges(**spec["gauges"], **CASES["config_drift"][0]["gauges"])
    verdicts = evaluate([window(busy(**spec["rates"]), g)])
    causes = [v for v in verdicts if v.klass != CONTEXT]
    assert [v.signature for v in causes] == ["host_rx_bottleneck"]
    assert any("consistent_rx_ring" in c for c in causes[0].context)


def test_one_condition_result_per_condition() -> None:
    """One result per condition that applies to the verdict's scope: a per-lane signature's
    own verdict (lane "") has the interface's conditions, each lane's the lane's."""
    w = lane_window()
    for sig in SIGNATURES:
        for scope in {"priority": ["3"], "lane": [None, "1"]}.get(sig.scope, [None]):
            v = evaluate_one(sig, w, scope)
            wanted = [c for c in sig.conditions if not c.scope
                      or c.scope == ("device" if scope is None else "lane")]
            assert [r.condition for r in v.conditions] == wanted
            assert 0 <= v.confidence <= 1


# --------------------------------------------------------------------------- per lane

LANE_BITS = 106.25e9  # 400GBASE-R4: 4 x 100G PAM4 lanes at 106.25 Gb/s (802.3ck)


def lane_window(ber: dict[str, float] | None = None, lanes: int = 4, fec: str = "rs",
                line: float = LINE, lane_bits: float = LANE_BITS, **rates: float) -> Window:
    """A busy port whose link mode names its lanes (nic_link_lanes) and FEC (rs), with each
    lane's pre-FEC bit errors (nic_fec_lane_bit_errors_total) at ``ber`` (default 2e-8)."""
    ber = ber or {}
    lane_rates = {f"nic_fec_lane_bit_errors_total|lane={i}": ber.get(str(i), 2e-8) * lane_bits
                  for i in range(lanes)}
    total = sum(lane_rates.values())
    g = gauges(**{"nic_link_lanes": float(lanes), "nic_link_speed_bytes_per_second": line,
                  f"nic_fec_mode_info|active={fec},configured={fec}": 1.0})
    return window(busy(**lane_rates, nic_fec_corrected_bit_errors_total=total, **rates), g)


def test_a_healthy_busy_port_with_lanes_raises_nothing() -> None:
    """FEC correcting at 2e-8 on every lane: each lane evaluated (known), none holds."""
    w = lane_window()
    assert held(w) == set()
    lanes = [v for v in evaluate([w], all_verdicts=True) if v.signature == "physical_layer"]
    assert [v.scope_value for v in lanes] == ["", "0", "1", "2", "3"]
    assert all(r.held is False for v in lanes[1:] for r in v.conditions)


def test_one_bad_lane_is_physical_on_that_lane_only() -> None:
    """Lane 3 at 8e-5 (the demo's), the others at 2e-8: the port's own ratio (2e-5) is
    below RS(544,514)'s 2.4e-5 and no longer decides; lane 3 alone holds, its evidence the
    lane's ratio and its code's threshold."""
    w = lane_window({"3": 8e-5})
    assert held(w) == {"physical_layer{lane=3}"}
    (v,) = evaluate([w])
    values = {e.series: e.value for e in v.evidence}
    assert values['nic_pre_fec_ber{fec="rs544",lane="3"} over the window'] == \
        pytest.approx(8e-5)
    assert values["rs544 threshold (normalize/linkphysics.py FEC_CODES)"] == 2.4e-5
    assert any(e.series == 'nic_fec_lane_bit_errors_total{lane="3"}' for e in v.evidence)
    assert v.as_dict()["lane"] == "3" and v.confidence == 1.0


def test_a_lane_is_held_to_its_own_codes_threshold() -> None:
    """1e-5 on a lane: below RS(544,514)'s 2.4e-5 on a PAM4 lane, above RS(528,514)'s 5e-6
    on a 25G NRZ lane (100GBASE-SR4), and BASE-R FEC's 5e-9 takes 1e-8."""
    assert held(lane_window({"1": 1e-5})) == set()
    sr4 = {"line": 12.5e9, "lane_bits": 25.78125e9}
    assert held(lane_window({"1": 1e-5}, **sr4)) == {"physical_layer{lane=1}"}
    assert held(lane_window({"1": 4e-6}, **sr4)) == set()
    baser = {"0": 1e-8, "1": 1e-9, "2": 1e-9, "3": 1e-9}
    assert held(lane_window(baser, fec="baser", **sr4)) == {"physical_layer{lane=0}"}


def test_without_lane_ratios_the_port_rule_stands() -> None:
    """No nic_link_lanes (the lane rate is unknown), or no FEC code: the port's ratio at
    1e-5, as before lanes were known."""
    rates = busy(nic_fec_corrected_bit_errors_total=3e-5 * LINE * 8)
    assert held(window(rates)) == {"physical_layer"}
    unknown_fec = lane_window({"3": 8e-5}, fec="auto")
    assert "physical_layer{lane=3}" not in held(unknown_fec)


def test_a_bad_lane_explains_rdma_transport_loss() -> None:
    loss = CASES["rdma_transport_loss"][0]["rates"]
    assert held(lane_window(**loss)) == {"rdma_transport_loss"}
    assert held(lane_window({"2": 1e-4}, **loss)) == {"physical_layer{lane=2}"}


def test_docs_diagnosis_is_generated_from_the_table() -> None:
    from pathlib import Path

    from nicwatch.consumers.diagnosis.doc import render
    docs = Path(__file__).resolve().parents[4] / "docs" / "diagnosis.md"
    assert docs.read_text() == render(), \
        "regenerate: python -m nicwatch.consumers.diagnosis.doc > docs/diagnosis.md"
    for sig in SIGNATURES:
        assert f"### `{sig.name}`" in render()


def test_an_mtu_mismatch_drops_every_packet_on_transmit() -> None:
    """A veth whose peer's MTU is smaller than its own (issue #42 item 13): every packet the
    stack sends is dropped (veth_xmit: tx_dropped, nothing sent); only the netdev's counters
    exist. Before the tx_drops signature this read "none of the signatures holds"."""
    w = Window("veth0", S, {key("nic_tx_packets_total"): 0.0,
                            key("nic_tx_dropped_total"): 300.0 * S,
                            key("nic_tx_bytes_total"): 0.0,
                            key("nic_rx_packets_total"): 0.0},
               {}, {key("nic_link_speed_bytes_per_second"): 1.25e9})
    (v,) = evaluate([w])
    assert v.signature == "tx_drops"
    ratio = next(r for r in v.conditions if r.condition.quantity == "tx_drop_ratio")
    assert ratio.value == 1.0
    assert "nic_tx_dropped_total" in {e.series for e in v.evidence}
    assert "MTU" in v.next_check


def test_frames_not_bytes_are_the_drop_ratio_denominator() -> None:
    """A 2e-3 drop ratio of 1,500-byte traffic is 2e-3 from the port's frame counter (issue
    #38 item 1); bytes / 64 read it as 8.5e-5 and nothing held."""
    frames = 0.8 * LINE / 1500
    rates = {key("nic_phy_rx_bytes_total"): 0.8 * LINE,
             key("nic_phy_rx_packets_total"): frames,
             key("nic_rx_out_of_buffer_drops_total"): 2e-3 * frames}
    w = window(rates, {key("nic_link_speed_bytes_per_second"): LINE})
    (v,) = evaluate([w])
    assert v.signature == "host_rx_bottleneck"
    ratio = next(r for r in v.conditions if r.condition.quantity == "host_rx_drop_ratio")
    assert ratio.value == pytest.approx(2e-3 / 1.002)


def test_bytes_over_64_are_a_labelled_last_resort_capped_at_the_links_most() -> None:
    """Without any frame counter the most frames the bytes can be, never more than the
    link's 64-byte frame rate (148.8 Mpps at 100G), said so in the evidence."""
    line = 12.5e9  # 100G
    w = window({key("nic_phy_rx_bytes_total"): 1.002 * line,
                key("nic_rx_out_of_buffer_drops_total"): 0.0},
               {key("nic_link_speed_bytes_per_second"): line}, device="eth0")
    m = QUANTITIES["host_rx_drop_ratio"](w, None)
    (most,) = [e for e in m.evidence if e.series.startswith("packets at most")]
    assert most.rate == pytest.approx(line / 84)
    assert most.rate is not None and most.rate < 148.9e6
    assert "last resort" in most.series


def test_durations_decide_where_they_exist() -> None:
    """2,000 PFC frames/s each way at 1 % paused (ordinary incast, 400G): durations known, the
    frame count decides nothing (issue #38 item 3)."""
    w = window(busy(**{"nic_rx_pfc_frames_total|priority=3": 2000.0,
                       "nic_tx_pfc_frames_total|priority=3": 2000.0,
                       "nic_rx_pause_duration_seconds_total|priority=3": 0.01,
                       "nic_tx_pause_duration_seconds_total|priority=3": 0.01}))
    assert held(w) == set()


def _no_durations(**rates: float) -> dict[SeriesKey, float]:
    r = busy(**rates)
    return {k: v for k, v in r.items() if "duration" not in k.metric}


def test_without_durations_the_paused_fraction_is_estimated_from_xoff() -> None:
    """No duration counter: XOFF/s x 65,535 quanta x 512 bit times / link bit/s. At 400G an
    XOFF holds at most 83.9 us: 500/s is at most 4.2 % (nothing), 2,000/s 16.8 % (an upper
    bound at or above 0.10: the victim, said to be an estimate)."""
    per_xoff = 65535 * 512 / (LINE * 8)
    quiet = window(_no_durations(**{"nic_rx_pfc_frames_total|priority=3": 500.0}))
    assert held(quiet) == set()
    assert QUANTITIES["rx_pause_fraction"](quiet, "3").value == pytest.approx(500 * per_xoff)
    loud = window(_no_durations(**{"nic_rx_pfc_frames_total|priority=3": 2000.0}))
    assert held(loud) == {"paused_by_peer{priority=3}"}
    (v,) = evaluate([loud])
    assert any(e.series.startswith("estimated paused fraction") and "upper bound" in e.series
               for e in v.evidence)


def _xon_apart(line: float, rx_xoff: float = 0.0, rx_xon: float = 0.0, tx_xoff: float = 0.0,
               tx_xon: float = 0.0, rx_share: float = 0.9) -> Window:
    """An ice-like port: 802.3x XOFF and XON counted apart, no duration counter."""
    rates = {key("nic_phy_rx_bytes_total"): rx_share * line,
             key("nic_phy_rx_packets_total"): rx_share * line / 1500,
             key("nic_rx_pause_frames_total"): rx_xoff,
             key("nic_rx_pause_xon_frames_total"): rx_xon,
             key("nic_tx_pause_frames_total"): tx_xoff,
             key("nic_tx_pause_xon_frames_total"): tx_xon}
    return window(rates, {key("nic_link_speed_bytes_per_second"): line})


def test_pauses_released_by_xon_cannot_be_decided_from_frames() -> None:
    """#38 item 3 (review): 600 XOFF/s on a 100G port, each released by an XON. The bound
    600 x 0.336 ms = 20.1 % is over paused_by_peer's 0.10, but every pause was ended by an
    XON after 0 to 0.336 ms: the frames cannot decide, so nothing holds and the signature is
    listed as unknown (released by XON). Failed before: paused_by_peer{global} held."""
    from nicwatch.consumers.diagnosis.engine import unknowns
    hundred = 12.5e9
    per_xoff = 65535 * 512 / (hundred * 8)
    w = _xon_apart(hundred, rx_xoff=600.0, rx_xon=600.0)
    m = QUANTITIES["rx_pause_fraction"](w, "global")
    assert m.value == 0.0 and m.upper == pytest.approx(600 * per_xoff)
    assert m.upper == pytest.approx(0.2013, abs=1e-4)
    assert held(w) == set()
    (u,) = [u for u in unknowns([w]) if u.signature == "paused_by_peer"]
    assert u.scope_value == "global" and "released by XON, no duration counter" in u.why()
    # releasing 1 in 6: the 500/s unreleased paused at least 500 x 0.336 ms / 2 = 8.4 %
    # (refreshed every half quanta), at most 20.1 %: still across 0.10, unknown
    assert held(_xon_apart(hundred, rx_xoff=600.0, rx_xon=100.0)) == set()
    # 1,200 XOFF/s, 100 released: at least 1,100 x 0.168 ms = 18.5 %, held
    assert held(_xon_apart(hundred, rx_xoff=1200.0, rx_xon=100.0)) == \
        {"paused_by_peer{priority=global}"}
    # never released: 600 XOFF/s pause at least 10.07 %: held (the old estimate's verdict)
    assert held(_xon_apart(hundred, rx_xoff=600.0)) == {"paused_by_peer{priority=global}"}
    # a bound that is harmless decides: 200 XOFF/s + XON is at most 6.7 %, not held, known
    quiet = _xon_apart(hundred, rx_xoff=200.0, rx_xon=200.0)
    assert held(quiet) == set()
    assert not [u for u in unknowns([quiet]) if u.signature == "paused_by_peer"]
    # sent: pausing_peer's 0.05 is inside the range of 600 XOFF/s + XON too
    assert held(_xon_apart(hundred, tx_xoff=600.0, tx_xon=600.0)) == set()


def test_a_sender_that_never_releases_is_still_a_storm_where_xon_is_counted() -> None:
    """23,400 XOFF/s and (almost) no XON: every pause runs until refreshed, the estimate
    decides as before, on a 10G ixgbe-like port and a 100G ice-like one."""
    for line in (1.25e9, 12.5e9):
        w = _xon_apart(line, tx_xoff=23_400.0, tx_xon=1.0, rx_share=0.0)
        assert held(w) == {"pause_storm{priority=global}"}
        assert QUANTITIES["tx_pause_fraction_peak"](w, "global").value == 1.0


def test_a_pause_storm_without_durations_is_named_a_storm() -> None:
    """23,400 XOFF/s sent on a 10G port with nothing received (ixgbe, be2net: no duration
    counters): estimated 100 % paused, a storm, not "pausing the peer" (issue #38 item 6)."""
    ten = 1.25e9
    rates = {key("nic_tx_pause_frames_total"): 23_400.0, key("nic_phy_rx_bytes_total"): 0.0,
             key("nic_phy_rx_packets_total"): 0.0}
    w = window(rates, {key("nic_link_speed_bytes_per_second"): ten})
    assert held(w) == {"pause_storm{priority=global}"}
    assert QUANTITIES["tx_pause_fraction_peak"](w, "global").value == 1.0


def test_ixgbe_pfc_per_traffic_class_is_read() -> None:
    """ixgbe counts PFC per traffic class: 1,000 XOFF/s received on TC 3 at 10G is the
    victim on scope tc3 (issue #38 item 5); before, no signature read the family."""
    ten = 1.25e9
    rates = {key("nic_rx_pfc_tc_frames_total", tc="3"): 1000.0,
             key("nic_rx_pfc_tc_frames_total", tc="0"): 0.0,
             key("nic_phy_rx_bytes_total"): 0.5 * ten}
    w = window(rates, {key("nic_link_speed_bytes_per_second"): ten})
    assert held(w) == {"paused_by_peer{priority=tc3}"}


def test_live_windows_carry_xon_and_its_peak() -> None:
    """The live path (windows.Recent, six 5 s polls, as the consumer builds them from the
    families in windows.COUNTERS) on an ice-like 100G port: 600 XOFF/s sent with an XON each
    holds nothing; one poll of a 23,400 XOFF/s storm without XON, with nothing received,
    is a pause storm from that poll's peak (the XON peak of the other polls, 600/s, cannot
    bring the lower end under 0.8)."""
    from nicwatch.consumers.diagnosis.windows import COUNTERS, PEAK_COUNTERS, Recent, Step
    xoff, xon = key("nic_tx_pause_frames_total"), key("nic_tx_pause_xon_frames_total")
    assert {xoff.metric, xon.metric} <= COUNTERS and xon.metric in PEAK_COUNTERS
    hundred = 12.5e9
    g = {key("nic_link_speed_bytes_per_second"): hundred}
    rx = {key("nic_phy_rx_bytes_total"): 0.0, key("nic_phy_rx_packets_total"): 0.0}

    def window(polls: list[tuple[float, float]]) -> Window:
        recent = Recent(30.0)
        for t, (off, on) in enumerate(polls):
            recent.add("eth0", Step(5.0 * (t + 1), 100.0 + 5 * t, 5.0,
                                    {xoff: off * 5, xon: on * 5, **rx}, g))
        w = recent.window("eth0")
        assert w is not None
        return w

    assert held(window([(600.0, 600.0)] * 6)) == set()
    storm = window([(600.0, 600.0)] * 5 + [(23_400.0, 0.0)])
    assert held(storm) == {"pause_storm{priority=global}"}
