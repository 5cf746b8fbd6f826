"""Windows for the engine from whatever evidence there is.

* :class:`Recent`: consecutive polls of each interface (the daemon's tracked samples, or the
  polls of a snapshot, record or history file), the steps within the last ``seconds`` kept;
* :func:`from_snapshots`: two snapshots or a series (record, incident, history): every pair
  of consecutive polls diffed with the tracker's wrap rule (snapshot.diff);
* :func:`from_ethtool`: two pasted `ethtool -S` outputs of one interface taken a known
  interval apart, mapped through the driver's table.

A step is one pair of consecutive readings: the increase of each counter series that did
not reset, and the gauges of the later reading. A window sums the steps' increases, keeps
their highest per-step rate (the peak, of the counters in PEAK_COUNTERS: those a signature
reads a peak of) and the newest gauges.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nicwatch.diagnosis.engine import Window
from nicwatch.model import SeriesKey
from nicwatch.snapshot.diff import OK, diff_interfaces
from nicwatch.snapshot.records import InterfaceSnapshot, Snapshot
from nicwatch.tracker import advance

# The counter families the signatures read (engine quantities); others are not kept.
COUNTERS = frozenset({
    "nic_rx_bytes_total", "nic_tx_bytes_total", "nic_rx_packets_total",
    "nic_phy_rx_bytes_total", "nic_phy_tx_bytes_total",
    "nic_rx_pause_frames_total", "nic_tx_pause_frames_total",
    "nic_rx_pause_ctrl_frames_total", "nic_tx_pause_ctrl_frames_total",
    "nic_rx_pfc_frames_total", "nic_tx_pfc_frames_total", "nic_rx_pfc_tc_frames_total",
    "nic_tx_pfc_tc_frames_total", "nic_phy_rx_packets_total", "nic_phy_tx_packets_total",
    "nic_tx_packets_total", "nic_tx_dropped_total", "nic_tx_discards_total",
    "nic_rx_pause_duration_seconds_total", "nic_tx_pause_duration_seconds_total",
    "nic_pause_storm_events_total", "nic_rx_out_of_buffer_drops_total",
    "nic_rx_hw_drop_overruns_total", "nic_rx_discards_total", "nic_rx_crc_errors_total",
    "nic_rx_pcs_symbol_errors_total", "nic_fec_uncorrectable_blocks_total",
    "nic_fec_corrected_blocks_total", "nic_fec_corrected_bit_errors_total",
    "nic_link_down_events_total", "nic_carrier_down_events_total",
    "nic_rx_cpu_time_squeeze_total", "nic_rx_cpu_dropped_total",
    "nic_rdma_rx_bytes_total", "nic_rdma_tx_bytes_total", "nic_rdma_rx_packets_total",
    "nic_rdma_ecn_marked_packets_total", "nic_rdma_rx_ce_packets_total",
    "nic_rdma_cnp_sent_total", "nic_rdma_cnp_handled_total", "nic_rdma_cnp_ignored_total",
    "nic_rdma_out_of_sequence_total", "nic_rdma_packet_seq_errors_total",
    "nic_rdma_implied_nak_seq_errors_total", "nic_rdma_local_ack_timeout_errors_total",
    "nic_rdma_duplicate_requests_total", "nic_rdma_req_transport_retries_exceeded_total",
    "nic_rdma_rnr_nak_retry_errors_total", "nic_rdma_out_of_buffer_drops_total",
    "nic_rdma_req_rnr_retries_exceeded_total",
    "nic_fec_lane_bit_errors_total",
})
# The counters whose highest per-poll rate a signature reads (engine._peak: traffic against
# the PCIe ceiling, tx pause per poll for a storm); the others' peaks are not kept.
PEAK_COUNTERS = frozenset({
    "nic_rx_bytes_total", "nic_tx_bytes_total", "nic_phy_rx_bytes_total",
    "nic_phy_tx_bytes_total", "nic_rdma_rx_bytes_total", "nic_rdma_tx_bytes_total",
    "nic_tx_pause_duration_seconds_total",
    # XOFF frames a poll: the paused fraction a storm reads where no duration is counted
    "nic_tx_pause_frames_total", "nic_tx_pfc_frames_total", "nic_tx_pfc_tc_frames_total",
    "nic_tx_pause_ctrl_frames_total",
})
GAUGES = frozenset({
    "nic_ring_descriptors", "nic_ring_max_descriptors", "nic_link_speed_bytes_per_second",
    "nic_pcie_bandwidth_ceiling_bytes_per_second", "nic_pfc_enabled", "nic_roce_ecn_enabled",
    "nic_roce_cnp_priority", "nic_qos_dscp_priority", "nic_qos_trust_info",
    "nic_rdma_default_roce_tos", "nic_rdma_traffic_class", "nic_module_rx_power_watts",
    "nic_module_rx_power_threshold_watts", "nic_link_lanes", "nic_fec_mode_info",
    # consumer families, where the window is built live (consumers/diagnosis.py)
    "nic_rx_cpu_softirq_ratio", "nic_rx_queue_imbalance_ratio", "nic_rx_queue_busiest_info",
    "nic_expectation_violation",
})


@dataclass(frozen=True, slots=True)
class Step:
    monotonic: float  # of the later reading
    wall: float
    seconds: float
    increments: Mapping[SeriesKey, float]
    gauges: Mapping[SeriesKey, float]


def gauges_of(gauges: Mapping[SeriesKey, float]) -> dict[SeriesKey, float]:
    return {k: v for k, v in gauges.items() if k.metric in GAUGES}


class Recent:
    """The steps of each interface within the last ``seconds`` (None: all of them)."""

    def __init__(self, seconds: float | None = 30.0) -> None:
        self.seconds = seconds
        self._steps: dict[str, deque[Step]] = {}

    def add(self, device: str, step: Step) -> None:
        steps = self._steps.setdefault(device, deque())
        steps.append(step)
        if self.seconds is not None:
            # keep the steps that end within the window (at least the newest)
            while len(steps) > 1 and steps[0].monotonic <= step.monotonic - self.seconds:
                steps.popleft()

    def keep(self, devices: Iterable[str]) -> None:
        wanted = set(devices)
        for device in [d for d in self._steps if d not in wanted]:
            del self._steps[device]

    def reset(self, device: str) -> None:
        self._steps.pop(device, None)

    def devices(self) -> list[str]:
        return sorted(self._steps)

    def window(self, device: str, extra_gauges: Mapping[SeriesKey, float] | None = None
               ) -> Window | None:
        steps = self._steps.get(device)
        if not steps:
            return None
        seconds = sum(s.seconds for s in steps)
        deltas: dict[SeriesKey, float] = {}
        peaks: dict[SeriesKey, float] = {}
        for s in steps:
            for key, inc in s.increments.items():
                deltas[key] = deltas.get(key, 0.0) + inc
                if s.seconds > 0 and key.metric in PEAK_COUNTERS:
                    rate = inc / s.seconds
                    if rate > peaks.get(key, -1.0):
                        peaks[key] = rate
        gauges = dict(steps[-1].gauges)
        if extra_gauges:
            gauges.update(extra_gauges)
        return Window(device, seconds, deltas, peaks, gauges, len(steps) + 1, steps[-1].wall)


def step_between(x: InterfaceSnapshot, y: InterfaceSnapshot) -> Step:
    """One step from two readings of an interface, with snapshot.diff's wrap and reset
    rule (no increase across a reset, a changed statistic set or a replaced interface)."""
    d = diff_interfaces(x, y, raw=False)
    increments = {SeriesKey(r.name, r.labels): r.delta for r in d.rows
                  if r.kind == "counter" and r.status == OK and r.delta is not None
                  and r.name in COUNTERS}
    return Step(y.monotonic, y.time, d.seconds, increments, gauges_of(y.gauges))


def from_snapshots(snapshots: Sequence[Snapshot], seconds: float | None = None
                   ) -> list[Window]:
    """Windows over the polls of ``snapshots`` in order (two snapshots, a record's series,
    an incident's window or a history dump), each interface by name; the last ``seconds``
    only when given."""
    recent = Recent(seconds)
    last: dict[str, InterfaceSnapshot] = {}
    for snap in snapshots:
        for poll in snap.polls:
            for i in poll.interfaces:
                prev = last.get(i.device)
                if prev is not None and i.monotonic > prev.monotonic:
                    recent.add(i.device, step_between(prev, i))
                last[i.device] = i
    return [w for d in recent.devices() if (w := recent.window(d)) is not None]


def _extend(a: Mapping[SeriesKey, tuple[int, int]], b: Mapping[SeriesKey, tuple[int, int]],
            scales: Mapping[SeriesKey, float]) -> dict[SeriesKey, float]:
    """Increases from ``a`` to ``b`` (raw, width); a 32-bit counter that fell from the upper
    half of its range wrapped (the tracker's rule without a line rate), any other fall is a
    reset and leaves the series out."""
    out = {}
    for key, (raw_b, width) in b.items():
        if key not in a:
            continue
        raw_a = a[key][0]
        ext = advance(raw_a, raw_a, raw_b, width)
        if ext is not None:
            out[key] = (ext - raw_a) * scales.get(key, 1.0)
    return out


def from_ethtool(device: str, driver: str, names_a: Sequence[str], values_a: Sequence[int],
                 names_b: Sequence[str], values_b: Sequence[int], seconds: float,
                 speed_bytes: float | None = None) -> Window:
    """One window from two `ethtool -S` readings ``seconds`` apart, mapped through the
    driver's table; ``speed_bytes``: the line rate, when the operator knows it."""
    from nicwatch.normalize import RawOptions, normalize_driver_stats

    def read(names: Sequence[str], values: Sequence[int]
             ) -> tuple[dict[SeriesKey, tuple[int, int]], dict[SeriesKey, float],
                        dict[SeriesKey, float]]:
        counters, gauges = normalize_driver_stats(driver, tuple(names), tuple(values),
                                                  RawOptions())
        return ({k: (cv.raw, cv.width) for k, cv in counters.items()},
                {k: cv.scale for k, cv in counters.items()}, gauges)

    a, _, _ = read(names_a, values_a)
    b, scales, gauges_b = read(names_b, values_b)
    increments = {k: v for k, v in _extend(a, b, scales).items() if k.metric in COUNTERS}
    gauges = gauges_of(gauges_b)
    if speed_bytes:
        gauges[SeriesKey("nic_link_speed_bytes_per_second")] = speed_bytes
    recent = Recent(None)
    recent.add(device, Step(seconds, 0.0, seconds, increments, gauges))
    window = recent.window(device)
    assert window is not None
    return Window(window.device, window.seconds, window.deltas, window.peaks, window.gauges,
                  2, None)
