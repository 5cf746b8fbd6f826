"""Detail tiers (--collector.detail; docs/metrics.md "Detail tiers"): the exposition's series
budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nicwatch.metrics.contract import EXPORTED, FAMILIES, RATED_COUNTERS
from nicwatch.metrics.counters import QUEUE_COUNTER, RAW_COUNTER, RAW_GAUGE
from nicwatch.metrics.rdma import RDMA_RAW_COUNTER
from nicwatch.model import Labels

# --- Detail tiers (--collector.detail; docs/metrics.md "Detail tiers") ----------------------
# The exposition's series budget: what a scrape carries at each level. Consumers, snapshots,
# the flight recorder and the CLI views see every series whatever the level; only /metrics
# is trimmed. A family is served whole at the tier it belongs to and above; a few families
# are served in part below "full" (``PARTIAL``).
PORT, QUEUE, FULL = "port", "queue", "full"
DETAIL_LEVELS: tuple[str, ...] = (PORT, QUEUE, FULL)
DEFAULT_DETAIL = PORT
DETAIL_TEXT: dict[str, str] = {
    PORT: "per port, lane, priority, traffic class and module: what the shipped dashboards "
          "and alerts use (the default)",
    QUEUE: "adds the per-queue, per-interrupt and per-CPU series of the receive path",
    FULL: "every series nicwatch computes: adds every module flag (clear ones too), the "
          "states a state set is not in, every "
          "module and VDM threshold level, the FEC codeword histogram, the peak-rate gauges "
          "of error counters and nic_stat_supported for the families an interface has",
}
# Labels that make a family grow with the queues, interrupts or CPUs of a port.
_PER_QUEUE_LABELS = frozenset({"queue", "irq", "cpu"})
# Served at the port tier although labelled by queue: one series a port (the busiest queue).
# The per-CPU series have port summaries (nic_irq_cpu_softirq_ratio,
# nic_rx_cpu_squeezed_softirq_ratio, nic_rx_cpus_squeezed, nic_rx_cpus_dropping). Opt-in
# families whose own flag asks for them keep that flag.
_PORT_SUMMARIES = frozenset({"nic_rx_queue_busiest_info"})
_OPT_IN = frozenset({QUEUE_COUNTER.name, RAW_COUNTER.name, RAW_GAUGE.name,
                     RDMA_RAW_COUNTER.name})
# Peak-rate gauges served at the port tier: throughput bursts and flow control (the sub-scrape
# bursts the peaks exist for); an error counter's increase() already shows every error.
_PORT_PEAKS = frozenset({
    "nic_rx_pause_frames_total", "nic_tx_pause_frames_total", "nic_rx_pause_ctrl_frames_total",
    "nic_tx_pause_ctrl_frames_total", "nic_rx_pfc_frames_total", "nic_tx_pfc_frames_total",
    "nic_rx_pfc_tc_frames_total", "nic_tx_pfc_tc_frames_total",
    "nic_rx_pause_duration_seconds_total", "nic_tx_pause_duration_seconds_total"})
# Families served whole only at "full".
_FULL_FAMILIES = frozenset({"nic_fec_codewords_total"})


def peak_name(counter: str) -> str:
    """The name of a rated counter's peak-rate gauge."""
    return f"{FAMILIES[counter].base}_peak_per_second"


def _levels(*kept: str) -> Callable[[Labels, float], bool]:
    def keep(labels: Labels, value: float) -> bool:
        return any(k == "level" and v in kept for k, v in labels)
    return keep


def _set(labels: Labels, value: float) -> bool:
    return value != 0


def _unsupported(labels: Labels, value: float) -> bool:
    return value == 0


_WARNINGS = _levels("high_warning", "low_warning")
# Families served in part below "full": (which series are kept, what the doc says).
PARTIAL: dict[str, tuple[Callable[[Labels, float], bool], str]] = {
    "nic_module_flag": (_set, "set flags only (value 1); nic_module_flags_set counts them"),
    **dict.fromkeys(("nic_module_read_state", "nic_module_state",
                     "nic_devlink_health_reporter_state"),
                    (_set, "the current state only (value 1); the states it is not in (value "
                     "0) at full: select with == 1, as the shipped rules do")),
    "nic_stat_supported": (_unsupported, "the families the interface lacks only (value 0): "
                           "a family it provides is supported where its series are served"),
    **dict.fromkeys(("nic_module_temperature_threshold_celsius",
                     "nic_module_supply_voltage_threshold_volts",
                     "nic_module_rx_power_threshold_watts", "nic_module_tx_power_threshold_watts",
                     "nic_module_tx_bias_threshold_amperes"),
                    (_WARNINGS, "level high_warning and low_warning only")),
    **dict.fromkeys(("nic_module_vdm_pre_fec_ber_threshold",
                     "nic_module_vdm_errored_frames_threshold",
                     "nic_module_vdm_laser_temperature_threshold_celsius"),
                    (_levels("high_warning"), "level high_warning only (the direction of "
                     "trouble)")),
    "nic_module_vdm_esnr_threshold_db": (_levels("low_warning"),
                                         "level low_warning only (the direction of trouble)"),
}


def family_tier(name: str) -> str:
    """The lowest detail level that serves family ``name`` (a *_peak_per_second or
    *_per_second name included) whole."""
    for counter in RATED_COUNTERS:
        fam = FAMILIES[counter]
        if name in (f"{fam.base}_peak_per_second", f"{fam.base}_per_second"):
            tier = family_tier(counter)
            if name.endswith("_peak_per_second") and counter not in _PORT_PEAKS \
                    and not fam.burst:
                return FULL if tier == PORT else tier
            return tier
    if name in _FULL_FAMILIES or name in PARTIAL:
        return FULL
    family = EXPORTED.get(name)
    if family is not None and name not in _PORT_SUMMARIES | _OPT_IN \
            and set(family.labels) & _PER_QUEUE_LABELS:
        return QUEUE
    return PORT


@dataclass(frozen=True, slots=True)
class Exposure:
    """What one detail level serves: ``hidden`` families (and peak or rate gauges) are left
    out whole; a family in ``partial`` keeps the series its test accepts (labels without
    the device, value)."""

    detail: str
    hidden: frozenset[str]
    partial: dict[str, Callable[[Labels, float], bool]]
    unpeaked: frozenset[str]  # rated counters whose *_peak_per_second gauge is hidden

    def shown(self, name: str, labels: Labels, value: float) -> bool:
        if name in self.hidden:
            return False
        keep = self.partial.get(name)
        return keep is None or keep(labels, value)


def exposure(detail: str = DEFAULT_DETAIL) -> Exposure:
    """The families and series served at ``detail`` (one of DETAIL_LEVELS)."""
    rank = DETAIL_LEVELS.index(detail)
    names = [*EXPORTED, *(f"{FAMILIES[c].base}_{kind}" for c in RATED_COUNTERS
                          for kind in ("peak_per_second", "per_second"))]
    hidden = frozenset(n for n in names if n not in PARTIAL
                       and DETAIL_LEVELS.index(family_tier(n)) > rank)
    partial = {} if detail == FULL else {n: keep for n, (keep, _) in PARTIAL.items()}
    unpeaked = frozenset(c for c in RATED_COUNTERS if peak_name(c) in hidden)
    return Exposure(detail, hidden, partial, unpeaked)
