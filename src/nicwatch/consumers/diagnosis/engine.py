"""Evaluate the signature table over windows: the one evaluation every view reads.

A :class:`Window` is one interface over a span of time: the increase of each counter series
(netdev and, labelled by ``rdma_device``/``port``, its RDMA ports), the highest per-poll rate
of each (equal to the mean for a window of two readings), and the gauges at its end. A
series absent from the window is unknown, never zero. Each quantity below reads named
families from nicwatch.metrics and returns its value (None: unknown) and the evidence it rests on.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nicwatch import metrics
from nicwatch.consumers.diagnosis.signatures import (
    DEVICE,
    FLOW,
    LANE,
    MAX_FRAME_BYTES,
    MAX_PAUSE_QUANTA,
    MIN_FRAME_BYTES,
    MIN_FRAME_WIRE_BYTES,
    PAUSE_QUANTUM_BITS,
    PAUSE_REFRESH_SHARE,
    SIGNATURES,
    SOFTIRQ_SATURATED,
    SOFTNET_PRESSURE_PER_SECOND,
    Condition,
    Signature,
)
from nicwatch.model import SeriesKey
from nicwatch.normalize.linkphysics import FEC_CODES, TOTAL, LinkPhysics
from nicwatch.normalize.linkphysics import evaluate as link_physics


@dataclass(frozen=True, slots=True)
class Window:
    device: str
    seconds: float
    deltas: Mapping[SeriesKey, float]  # increase over the window, base units
    peaks: Mapping[SeriesKey, float]  # highest per-poll rate within the window, per second
    gauges: Mapping[SeriesKey, float]  # at the window's end
    polls: int = 2
    end: float | None = None  # wall-clock time of the window's end
    # what the window could not take in (series that reset or appeared between readings,
    # statistics the driver's table does not map): listed with the verdicts, so a quiet
    # window is never read as a healthy one where nothing was seen
    notes: tuple[str, ...] = ()
    # the interface's PCI function address, where known: fills the next checks
    pci_address: str | None = None
    # metric -> its series in deltas, peaks and gauges (built once: every quantity looks up)
    index: Mapping[str, tuple[SeriesKey, ...]] = field(init=False, repr=False, compare=False)
    # (quantity, scope) -> its measure, and the link physics: computed once per window,
    # however many signatures read them
    memo: dict[object, object] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[SeriesKey]] = {}
        for key in dict.fromkeys((*self.deltas, *self.peaks, *self.gauges)):
            index.setdefault(key.metric, []).append(key)
        object.__setattr__(self, "index", {m: tuple(ks) for m, ks in index.items()})
        object.__setattr__(self, "memo", {})


@dataclass(frozen=True, slots=True)
class Evidence:
    """One series over the window: ``delta`` and ``rate`` for a counter, ``value`` for a
    gauge or a derived number."""

    series: str
    delta: float | None = None
    rate: float | None = None
    value: float | None = None

    def describe(self) -> str:
        if self.delta is None and self.value is None:
            return f"{self.series}: {_num(self.rate)}/s"
        if self.delta is not None:
            rate = f" ({_num(self.rate)}/s)" if self.rate is not None else ""
            return f"{self.series} +{_num(self.delta)}{rate}"
        return f"{self.series} = {_num(self.value)}"


@dataclass(frozen=True, slots=True)
class Measure:
    """``value``, or where ``upper`` is set a range: the quantity lies at most at ``upper``
    and is estimated at ``value`` from what the counters pin down (the paused fraction of
    XOFF frames an XON released: _estimated). A condition held to a range decides only where
    the whole range is on one side of its threshold, else it is unknown."""

    value: float | None
    evidence: tuple[Evidence, ...] = ()
    upper: float | None = None
    note: str = ""  # why it is a range, for a condition it leaves unknown


@dataclass(frozen=True, slots=True)
class ConditionResult:
    condition: Condition
    value: float | None
    held: bool | None  # None: unknown (a series it needs is absent, or a range across it)
    upper: float | None = None  # the most the value can be, where it is a range (Measure)

    def describe(self) -> str:
        c = self.condition
        state = {True: "held", False: "not held", None: "unknown"}[self.held]
        most = f" to {_num(self.upper)}" if self.upper is not None else ""
        return (f"{c.text}: {c.quantity} = {_num(self.value)}{most} ({c.op} "
                f"{_num(c.threshold)}), {state}")


@dataclass(frozen=True, slots=True)
class Verdict:
    device: str
    signature: str
    klass: str
    title: str
    scope: str  # DEVICE, PRIORITY or LANE
    scope_value: str  # the priority or lane ("" for DEVICE)
    holds: bool
    confidence: float  # share of the known conditions that held (0-1)
    conditions: tuple[ConditionResult, ...]
    evidence: tuple[Evidence, ...]
    next_check: str
    reasons: tuple[str, ...] = ()  # supporting conditions that held: the likely reason
    seconds: float = 0.0
    since: float | None = None  # wall-clock time it has held since (set by the consumer)
    context: tuple[str, ...] = field(default=())  # configuration drift on the same device

    @property
    def label(self) -> str:
        return f"{self.signature}{{{self.scope}={self.scope_value}}}" if self.scope_value \
            else self.signature

    def as_dict(self) -> dict[str, object]:
        return {
            "device": self.device, "signature": self.signature, "class": self.klass,
            "title": self.title,
            **({self.scope: self.scope_value} if self.scope_value else {}),
            "holds": self.holds, "confidence": round(self.confidence, 3),
            "window_seconds": round(self.seconds, 3), "since": self.since,
            "conditions": [{"text": r.condition.text, "quantity": r.condition.quantity,
                            "op": r.condition.op, "threshold": r.condition.threshold,
                            "value": _finite(r.value), "upper": _finite(r.upper),
                            "held": r.held,
                            "required": r.condition.required} for r in self.conditions],
            "evidence": [{"series": e.series, "delta": _finite(e.delta), "rate": _finite(e.rate),
                          "value": _finite(e.value)} for e in self.evidence],
            "reasons": list(self.reasons), "context": list(self.context),
            "next_check": self.next_check,
        }


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _num(v: float | None) -> str:
    if v is None:
        return "absent"
    if not math.isfinite(v):
        return str(v)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


# --------------------------------------------------------------------------- series access

# A pure memo of a bounded key (docs/architecture.md, Caches).
@functools.lru_cache(maxsize=1 << 14)
def _series(key: SeriesKey) -> str:
    # cached: the same series are named on every poll
    if not key.labels:
        return key.metric
    return key.metric + "{" + ",".join(f'{k}="{v}"' for k, v in key.labels) + "}"


def _match(key: SeriesKey, metric: str, labels: Mapping[str, str]) -> bool:
    if key.metric != metric:
        return False
    have = key.labels
    return all(item in have for item in labels.items())


def _counter(w: Window, metric: str, **labels: str) -> Measure:
    """The increase of ``metric`` (summed over its series matching ``labels``) as a rate."""
    deltas = w.deltas
    if labels:
        keys = [k for k in w.index.get(metric, ()) if k in deltas and _match(k, metric, labels)]
    else:
        keys = [k for k in w.index.get(metric, ()) if k in deltas]
    if not keys or w.seconds <= 0:
        return Measure(None)
    total = sum(w.deltas[k] for k in keys)
    ev = tuple(Evidence(_series(k), w.deltas[k], w.deltas[k] / w.seconds) for k in sorted(keys))
    return Measure(total / w.seconds, ev)


def _peak(w: Window, metric: str, **labels: str) -> Measure:
    keys = [k for k in w.index.get(metric, ()) if k in w.peaks and _match(k, metric, labels)]
    if not keys:
        return Measure(None)
    top = max(keys, key=lambda k: w.peaks[k])
    return Measure(w.peaks[top], (Evidence(_series(top) + " peak per poll",
                                           value=w.peaks[top]),))


def _gauge(w: Window, metric: str, **labels: str) -> Measure:
    key = SeriesKey(metric, tuple(sorted(labels.items())))
    v = w.gauges.get(key)
    return Measure(None) if v is None else Measure(v, (Evidence(_series(key), value=v),))


def _gauges(w: Window, metric: str) -> list[tuple[SeriesKey, float]]:
    return sorted((k, w.gauges[k]) for k in w.index.get(metric, ()) if k in w.gauges)


def _sum(*ms: Measure) -> Measure:
    known = [m for m in ms if m.value is not None]
    if not known:
        return Measure(None)
    return Measure(sum(m.value for m in known if m.value is not None),
                   tuple(e for m in known for e in m.evidence))


def _max(*ms: Measure) -> Measure:
    known = [m for m in ms if m.value is not None]
    if not known:
        return Measure(None)
    top = max(known, key=lambda m: m.value or 0.0)
    return top


def _ratio(num: Measure, den: Measure, name: str) -> Measure:
    if num.value is None or den.value is None or den.value <= 0:
        return Measure(None, num.evidence + den.evidence)
    value = num.value / den.value
    return Measure(value, (*num.evidence, *den.evidence, Evidence(name, value=value)))


# --------------------------------------------------------------------------- quantities
# Each takes the window and the scope value (a priority or lane; None per device).

Quantity = Callable[[Window, "str | None"], Measure]


def _p(scope: str | None) -> dict[str, str]:
    return {"priority": scope} if scope is not None else {}


def tx_pause_frames_rate(w: Window, scope: str | None) -> Measure:
    # PAUSE and PFC frames sent, the largest of the families the driver has (mlx5's
    # pause_ctrl counter may include PFC frames, so they are never added).
    return _max(_counter(w, "nic_tx_pause_frames_total"),
                _counter(w, "nic_tx_pause_ctrl_frames_total"),
                _counter(w, "nic_tx_pfc_frames_total"),
                _counter(w, "nic_tx_pfc_tc_frames_total"))


def _frames(w: Window, direction: str) -> Measure:
    """Packets the interface received (sent) per second: the netdev's count plus its RDMA
    ports', else the port's own frame counter (nic_phy_rx_packets_total: mlx5
    rx_packets_phy, bnxt rx_total_frames, ixgbe rx_pkts_nic, ice/i40e unicast + multicast +
    broadcast, be2net its queues' packets), else, as a last resort said so in the evidence,
    the most frames the port's bytes can be: nic_phy_rx_bytes_total / 64, never more than
    the link carries (line rate / 84 bytes on the wire). A ratio over it is a lower bound."""
    netdev = _sum(_counter(w, f"nic_{direction}_packets_total"),
                  _counter(w, f"nic_rdma_{direction}_packets_total"))
    if netdev.value is not None:
        return netdev
    port = _counter(w, f"nic_phy_{direction}_packets_total")
    if port.value is not None:
        return port
    phy = _counter(w, f"nic_phy_{direction}_bytes_total")
    if phy.value is None:
        return phy
    frames = phy.value / MIN_FRAME_BYTES
    line = _gauge(w, "nic_link_speed_bytes_per_second")
    capped = line.value is not None and line.value / MIN_FRAME_WIRE_BYTES < frames
    if line.value is not None and capped:
        frames = line.value / MIN_FRAME_WIRE_BYTES
    what = ("the link's most (line rate / 84 bytes a frame on the wire)" if capped
            else f"nic_phy_{direction}_bytes_total / 64")
    return Measure(frames, (*phy.evidence, *(line.evidence if capped else ()), Evidence(
        f"packets at most ({what}; no frame counter, a last resort: the ratio is a lower "
        "bound)", rate=frames)))


def host_rx_drop_ratio(w: Window, scope: str | None) -> Measure:
    drops = _sum(_max(_counter(w, "nic_rx_out_of_buffer_drops_total"),
                      _counter(w, "nic_rx_hw_drop_overruns_total")),
                 _counter(w, "nic_rx_discards_total"))
    received = _frames(w, "rx")
    if drops.value is None or received.value is None:
        return Measure(None, drops.evidence)
    return _ratio(drops, Measure(drops.value + received.value, received.evidence),
                  "drops / (drops + packets received)")


def tx_drop_ratio(w: Window, scope: str | None) -> Measure:
    """nic_tx_dropped_total (netdev) plus nic_tx_discards_total (port) over themselves plus
    the packets sent (nic_tx_packets_total, else nic_phy_tx_packets_total)."""
    drops = _sum(_counter(w, "nic_tx_dropped_total"), _counter(w, "nic_tx_discards_total"))
    sent = _frames(w, "tx")
    if drops.value is None or sent.value is None:
        return Measure(None, drops.evidence)
    return _ratio(drops, Measure(drops.value + sent.value, sent.evidence),
                  "transmit drops / (drops + packets sent)")


def rx_ring_fill(w: Window, scope: str | None) -> Measure:
    return _ratio(_gauge(w, "nic_ring_descriptors", ring="rx"),
                  _gauge(w, "nic_ring_max_descriptors", ring="rx"), "rx ring / its maximum")


def pcie_ceiling_ratio(w: Window, scope: str | None) -> Measure:
    return _ratio(_gauge(w, "nic_pcie_bandwidth_ceiling_bytes_per_second"),
                  _gauge(w, "nic_link_speed_bytes_per_second"), "PCIe ceiling / line rate")


def _traffic_peak(w: Window, direction: str) -> Measure:
    phy = _peak(w, f"nic_phy_{direction}_bytes_total")
    if phy.value is not None:
        return phy
    return _sum(_peak(w, f"nic_{direction}_bytes_total"),
                _peak(w, f"nic_rdma_{direction}_bytes_total"))


def pcie_traffic_share(w: Window, scope: str | None) -> Measure:
    """Peak of nic_phy_rx_bytes_total / nic_phy_tx_bytes_total (else nic_rx_bytes_total plus
    nic_rdma_rx_bytes_total, tx alike) over the ceiling."""
    return _ratio(_max(_traffic_peak(w, "rx"), _traffic_peak(w, "tx")),
                  _gauge(w, "nic_pcie_bandwidth_ceiling_bytes_per_second"),
                  "peak traffic / PCIe ceiling")


# Not exported: the consumer puts it in the window (consumers/diagnosis/consumer.py) from netdev
# napi-get: how many of the interface's NAPI instances run in threads (a pid).
NAPI_THREADED = "nic_rx_napi_threaded"


def _threaded(w: Window) -> Measure:
    """The interface's NAPI instances in threaded mode, where napi-get said (None: not
    read). Their receive work is a napi/<dev>-<id> kthread's process time, not softirq."""
    return _gauge(w, NAPI_THREADED)


def rx_cpu_softirq_max(w: Window, scope: str | None) -> Measure:
    """The highest softirq share of a CPU serving the NIC; unknown under threaded NAPI."""
    threaded = _threaded(w)
    if threaded.value:
        return Measure(None, threaded.evidence)
    rows = _gauges(w, metrics.RX_CPU_SOFTIRQ_RATIO.name)
    if not rows:
        return Measure(None)
    key, value = max(rows, key=lambda kv: kv[1])
    return Measure(value, (Evidence(_series(key), value=value),))


def _saturated_cpu(w: Window) -> tuple[Measure, Measure]:
    """(softirq share, softnet pressure) of one serving CPU: the one closest to both
    thresholds at once (the highest of share / SOFTIRQ_SATURATED and pressure /
    SOFTNET_PRESSURE_PER_SECOND, the lesser of the two), so both hold if and only if some
    CPU has both. Under threaded NAPI both are unknown: the signature is blind there."""
    got = w.memo.get("saturated_cpu")
    if isinstance(got, tuple):
        return got
    threaded = _threaded(w)
    best: tuple[float, Measure, Measure] | None = None
    if not threaded.value:
        for key, share in _gauges(w, metrics.RX_CPU_SOFTIRQ_RATIO.name):
            cpu = dict(key.labels).get("cpu")
            if cpu is None:
                continue
            pressure = _sum(_counter(w, "nic_rx_cpu_time_squeeze_total", cpu=cpu),
                            _counter(w, "nic_rx_cpu_dropped_total", cpu=cpu))
            if pressure.value is None:
                continue
            closeness = min(share / SOFTIRQ_SATURATED,
                            pressure.value / SOFTNET_PRESSURE_PER_SECOND)
            if best is None or closeness > best[0]:
                best = (closeness, Measure(share, (Evidence(_series(key), value=share),)),
                        pressure)
    out = (best[1], best[2]) if best is not None else (Measure(None, threaded.evidence),
                                                       Measure(None, threaded.evidence))
    w.memo["saturated_cpu"] = out
    return out


def rx_cpu_saturated_share(w: Window, scope: str | None) -> Measure:
    """nic_rx_cpu_softirq_ratio{cpu} of the serving CPU _saturated_cpu picks."""
    return _saturated_cpu(w)[0]


def rx_cpu_saturated_pressure(w: Window, scope: str | None) -> Measure:
    """nic_rx_cpu_time_squeeze_total{cpu} + nic_rx_cpu_dropped_total{cpu} per second of
    that same CPU."""
    return _saturated_cpu(w)[1]


def rx_queue_imbalance(w: Window, scope: str | None) -> Measure:
    m = _gauge(w, metrics.RX_QUEUE_IMBALANCE.name, window="poll")
    busiest = _gauges(w, metrics.RX_QUEUE_BUSIEST.name)
    return Measure(m.value, m.evidence + tuple(Evidence(_series(k), value=v) for k, v in busiest))


def _estimated(w: Window, xoff: Measure, xon: Measure) -> Measure:
    """The paused fraction from frames, where no duration counter exists.

    An XOFF pauses for at most its quanta: MAX_PAUSE_QUANTA x PAUSE_QUANTUM_BITS / the
    link's bit rate seconds (Tq: 0.336 ms at 100G), so XOFF/s x Tq, capped at 1, is an upper
    bound. How long a pause lasted the frames do not say: an XON (pause_time 0) ends it
    after anything from 0 to Tq, and a sender holding a pause refreshes it with the next
    XOFF before it expires. Where the driver counts XON apart (ixgbe, i40e, ice, e1000e) the
    measure is a range: at least (XOFF - XON)/s x Tq x PAUSE_REFRESH_SHARE (an XOFF no XON
    released lasted until it expired or the sender's refresh, which ixgbe and i40e send
    every half Tq), at most the upper bound. A sender that never releases (XON near 0) pins
    the range to at least half the bound, and a storm at 1 to 1; pauses each released by an
    XON (XON/s near XOFF/s) leave it from 0 to the bound, and a threshold inside it is
    unknown, never held. Without an XON count (be2net, mlx5/bnxt 802.3x PAUSE without
    durations) there is no range: the bound decides (a blind spot, docs/diagnosis.md)."""
    line = _gauge(w, "nic_link_speed_bytes_per_second")
    if xoff.value is None or line.value is None or line.value <= 0:
        return Measure(None, xoff.evidence)
    per_xoff = MAX_PAUSE_QUANTA * PAUSE_QUANTUM_BITS / (line.value * 8)
    upper = min(1.0, xoff.value * per_xoff)
    how = (f"XOFF/s x {MAX_PAUSE_QUANTA:,} quanta x {PAUSE_QUANTUM_BITS} bit times / link "
           f"bit/s ({per_xoff * 1e3:.3g} ms an XOFF), capped at 1")
    if xon.value is None:
        return Measure(upper, (*xoff.evidence, *line.evidence, Evidence(
            f"estimated paused fraction, an upper bound: {how}; no duration counter; no XON "
            "counted apart: an XON may have ended any pause early", value=upper)))
    unreleased = max(0.0, xoff.value - xon.value)
    lower = min(1.0, unreleased * per_xoff * PAUSE_REFRESH_SHARE)
    note = (f"{_num(xon.value)} XON/s released {_num(xoff.value)} XOFF/s explicitly, no "
            "duration counter" if xon.value > 0 else
            f"no duration counter; no XON, but each of {_num(xoff.value)} XOFF/s lasted "
            f"from a refresh ({PAUSE_REFRESH_SHARE:g} of its quanta) to its quanta")
    return Measure(lower, (*xoff.evidence, *xon.evidence, *line.evidence, Evidence(
        f"estimated paused fraction, an upper bound: {how}; no duration counter",
        value=upper), Evidence(
        f"paused at least: (XOFF - XON)/s x the same x {PAUSE_REFRESH_SHARE:g} (each XOFF no "
        "XON released lasted until it expired or was refreshed, every half quanta by "
        "ixgbe/i40e); a released pause lasted 0 to its quanta", value=lower)),
        upper=upper if upper > lower else None, note=note)


def _xon(w: Window, direction: str, scope: str | None, peak: bool = False) -> Measure:
    """XON frames a second on the scope, where the driver counts them apart from XOFF:
    nic_{direction}_pause_xon_frames_total (global), nic_{direction}_pfc_xon_frames_total
    {priority}, nic_{direction}_pfc_tc_xon_frames_total{tc}; None where it does not."""
    read = _peak if peak else _counter
    if scope == "global":
        return read(w, f"nic_{direction}_pause_xon_frames_total")
    if scope is not None and scope.startswith("tc"):
        return read(w, f"nic_{direction}_pfc_tc_xon_frames_total", tc=scope[2:])
    return read(w, f"nic_{direction}_pfc_xon_frames_total", **_p(scope))


def _paused(w: Window, direction: str, scope: str | None, peak: bool = False) -> Measure:
    """The fraction of time paused: the pause duration's rate where the driver counts it,
    else estimated from the XOFF and XON frames (_estimated). With ``peak`` the XOFF
    rate's highest poll less the XON rate's highest, which is at most the XOFFs no XON
    released in that poll (a range never narrower than the poll's own)."""
    read = _peak if peak else _counter
    if scope is None or not scope.startswith("tc"):
        duration = read(w, f"nic_{direction}_pause_duration_seconds_total", **_p(scope))
        if duration.value is not None:
            return duration
    return _estimated(w, _pfc(w, direction, scope, peak), _xon(w, direction, scope, peak))


def rx_pause_fraction(w: Window, scope: str | None) -> Measure:
    """nic_rx_pause_duration_seconds_total{priority} a second, else estimated from XOFF:
    nic_rx_pfc_frames_total, nic_rx_pfc_tc_frames_total or nic_rx_pause_frames_total and
    nic_link_speed_bytes_per_second."""
    return _paused(w, "rx", scope)


def tx_pause_fraction(w: Window, scope: str | None) -> Measure:
    """nic_tx_pause_duration_seconds_total{priority} a second, else estimated from XOFF:
    nic_tx_pfc_frames_total, nic_tx_pfc_tc_frames_total or nic_tx_pause_frames_total and
    nic_link_speed_bytes_per_second."""
    return _paused(w, "tx", scope)


def tx_pause_fraction_peak(w: Window, scope: str | None) -> Measure:
    """The highest per-poll rate of nic_tx_pause_duration_seconds_total, else estimated
    from the peak XOFF rate (nic_tx_pfc_frames_total, nic_tx_pfc_tc_frames_total,
    nic_tx_pause_frames_total) and nic_link_speed_bytes_per_second."""
    return _paused(w, "tx", scope, peak=True)


def _pfc(w: Window, direction: str, scope: str | None, peak: bool = False) -> Measure:
    """XOFF frames a second (the per-poll peak with ``peak``) on the scope: a priority, "tcN"
    (ixgbe's per traffic class nic_{direction}_pfc_tc_frames_total) or "global" (802.3x)."""
    read = _peak if peak else _counter
    if scope == "global":
        # 802.3x PAUSE. A pause_ctrl counter (mlx5) may count PFC frames too: it stands for
        # PAUSE only where the port has no PFC counters.
        pause = read(w, f"nic_{direction}_pause_frames_total")
        if pause.value is None and f"nic_{direction}_pfc_frames_total" not in w.index:
            pause = read(w, f"nic_{direction}_pause_ctrl_frames_total")
        return pause
    if scope is not None and scope.startswith("tc"):
        return read(w, f"nic_{direction}_pfc_tc_frames_total", tc=scope[2:])
    return read(w, f"nic_{direction}_pfc_frames_total", **_p(scope))


def rx_pfc_frames_rate(w: Window, scope: str | None) -> Measure:
    """nic_rx_pfc_frames_total{priority}; priority "global": nic_rx_pause_frames_total, else
    (no PFC counters) nic_rx_pause_ctrl_frames_total."""
    return _pfc(w, "rx", scope)


def tx_pfc_frames_rate(w: Window, scope: str | None) -> Measure:
    """nic_tx_pfc_frames_total{priority}; priority "global": nic_tx_pause_frames_total, else
    (no PFC counters) nic_tx_pause_ctrl_frames_total."""
    return _pfc(w, "tx", scope)


def pfc_frames_rate(w: Window, scope: str | None) -> Measure:
    """nic_rx_pfc_frames_total plus nic_tx_pfc_frames_total on the priority."""
    if scope == "global":
        return Measure(None)  # ECN pairs with PFC on a lossless priority, not 802.3x
    return _sum(_pfc(w, "rx", scope), _pfc(w, "tx", scope))


def rx_traffic_share(w: Window, scope: str | None) -> Measure:
    """nic_phy_rx_bytes_total (else netdev plus RDMA bytes) over the line rate; without a
    byte count (be2net), the port's frames x MAX_FRAME_BYTES: an upper bound."""
    rx = _counter(w, "nic_phy_rx_bytes_total")
    if rx.value is None:
        rx = _sum(_counter(w, "nic_rx_bytes_total"), _counter(w, "nic_rdma_rx_bytes_total"))
    if rx.value is None:
        frames = _counter(w, "nic_phy_rx_packets_total")
        if frames.value is not None:
            most = frames.value * MAX_FRAME_BYTES
            rx = Measure(most, (*frames.evidence, Evidence(
                f"rx bytes/s at most (nic_phy_rx_packets_total x {MAX_FRAME_BYTES:,} bytes; "
                "no byte counter)", rate=most)))
    return _ratio(rx, _gauge(w, "nic_link_speed_bytes_per_second"), "rx bytes/s / line rate")


def pause_storm_events(w: Window, scope: str | None) -> Measure:
    m = _counter(w, "nic_pause_storm_events_total")
    return Measure(None if m.value is None else m.value * w.seconds, m.evidence)


def ecn_cnp_rate(w: Window, scope: str | None) -> Measure:
    return _sum(_counter(w, "nic_rdma_ecn_marked_packets_total"),
                _counter(w, "nic_rdma_rx_ce_packets_total"),
                _counter(w, "nic_rdma_cnp_sent_total"),
                _counter(w, "nic_rdma_cnp_handled_total"))


def pfc_enabled(w: Window, scope: str | None) -> Measure:
    return _gauge(w, "nic_pfc_enabled", **_p(scope)) if scope != "global" else Measure(None)


def _events(m: Measure, w: Window) -> Measure:
    """A rate measure as the count in the window."""
    return Measure(None if m.value is None else m.value * w.seconds, m.evidence)


def cnp_ignored(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rdma_cnp_ignored_total"), w)


def _pfc_priorities(w: Window) -> list[str] | None:
    rows = _gauges(w, "nic_pfc_enabled")
    if not rows:
        return None
    return [dict(k.labels)["priority"] for k, v in rows if v == 1]


def ecn_off_on_lossless(w: Window, scope: str | None) -> Measure:
    lossless = _pfc_priorities(w)
    ecn = _gauges(w, "nic_roce_ecn_enabled")
    if lossless is None or not ecn:
        return Measure(None)
    off = [(k, v) for k, v in ecn if dict(k.labels).get("priority") in lossless and v == 0]
    return Measure(float(len(off)), tuple(Evidence(_series(k), value=v) for k, v in off))


def cnp_priority_pfc(w: Window, scope: str | None) -> Measure:
    cnp = _gauge(w, "nic_roce_cnp_priority")
    lossless = _pfc_priorities(w)
    if cnp.value is None or lossless is None:
        return Measure(None)
    on = str(int(cnp.value)) in lossless
    return Measure(1.0 if on else 0.0, cnp.evidence + (
        Evidence(f'nic_pfc_enabled{{priority="{int(cnp.value)}"}}', value=float(on)),))


def roce_priority_mismatch(w: Window, scope: str | None) -> Measure:
    """The RoCE DSCP (rdma_cm default ToS, else the forced traffic class) under DSCP trust
    maps to a priority without PFC."""
    tos = _gauges(w, "nic_rdma_traffic_class") or _gauges(w, "nic_rdma_default_roce_tos")
    lossless = _pfc_priorities(w)
    trust = [k for k, v in _gauges(w, "nic_qos_trust_info") if v == 1]
    if not tos or lossless is None or not trust or dict(trust[0].labels).get("trust") != "dscp":
        return Measure(None)
    key, value = tos[0]
    dscp = int(value) >> 2
    prio = _gauge(w, "nic_qos_dscp_priority", dscp=str(dscp))
    if prio.value is None:
        return Measure(None, (Evidence(_series(key), value=value),))
    bad = str(int(prio.value)) not in lossless
    return Measure(1.0 if bad else 0.0, (Evidence(_series(key), value=value), *prio.evidence))


def rdma_out_of_sequence(w: Window, scope: str | None) -> Measure:
    """nic_rdma_out_of_sequence_total: the responder's out-of-sequence packets."""
    return _events(_counter(w, "nic_rdma_out_of_sequence_total"), w)


def rdma_sequence_naks(w: Window, scope: str | None) -> Measure:
    """nic_rdma_packet_seq_errors_total plus nic_rdma_implied_nak_seq_errors_total: the
    requester's sequence error NAKs received and implied."""
    return _events(_sum(_counter(w, "nic_rdma_packet_seq_errors_total"),
                        _counter(w, "nic_rdma_implied_nak_seq_errors_total")), w)


def rdma_recovery_events(w: Window, scope: str | None) -> Measure:
    return _events(_sum(_counter(w, "nic_rdma_local_ack_timeout_errors_total"),
                        _counter(w, "nic_rdma_duplicate_requests_total")), w)


def rdma_ack_timeouts(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rdma_local_ack_timeout_errors_total"), w)


def rdma_retries_exceeded(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rdma_req_transport_retries_exceeded_total"), w)


def rdma_rnr_naks(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rdma_rnr_nak_retry_errors_total"), w)


def rdma_out_of_buffer(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rdma_out_of_buffer_drops_total"), w)


def rdma_rnr_retries_exceeded(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rdma_req_rnr_retries_exceeded_total"), w)


def physics(w: Window) -> LinkPhysics:
    """The link physics (normalize/linkphysics.py, the evaluation behind nic_pre_fec_ber)
    over the window: each lane's bit errors per second of the window against its serdes
    rate, the FEC code from the link's active mode."""
    got = w.memo.get("physics")
    if isinstance(got, LinkPhysics):
        return got
    rates = {k: w.deltas[k] / w.seconds
             for m in ("nic_fec_lane_bit_errors_total", "nic_fec_corrected_bit_errors_total")
             for k in w.index.get(m, ()) if k in w.deltas and w.seconds > 0}
    out = link_physics(w, rates)
    w.memo["physics"] = out
    return out


def _lane_codes(w: Window) -> list[str]:
    """The lanes with a pre-FEC BER over the window and a FEC code to hold them to."""
    p = physics(w)
    if (p.fec or "") not in FEC_CODES:
        return []
    return [lane for lane in p.ber if lane != TOTAL]


def lane_ber_over_threshold(w: Window, scope: str | None) -> Measure:
    """A lane's nic_pre_fec_ber (nic_fec_lane_bit_errors_total{lane} over the window / the
    lane's serdes rate from nic_link_speed_bytes_per_second and nic_link_lanes; the code from
    nic_fec_mode_info) over its FEC code's threshold (FEC_CODES)."""
    p = physics(w)
    code = FEC_CODES.get(p.fec or "")
    if scope is None or code is None or scope not in p.ber:
        return Measure(None)
    ber = p.ber[scope]
    errors = _counter(w, "nic_fec_lane_bit_errors_total", lane=scope)
    ratio = f'{metrics.PRE_FEC_BER.name}{{fec="{code.name}",lane="{scope}"}}'
    return Measure(ber / code.threshold, (
        *errors.evidence, Evidence(ratio + " over the window", value=ber),
        Evidence(f"{code.name} threshold (normalize/linkphysics.py FEC_CODES)",
                 value=code.threshold)))


def pre_fec_ber(w: Window, scope: str | None) -> Measure:
    """The port's nic_fec_corrected_bit_errors_total over its line bits, where no lane has a
    ratio to be held to (the lanes' verdicts speak otherwise)."""
    if _lane_codes(w):
        return Measure(None)
    bits = _counter(w, "nic_fec_corrected_bit_errors_total")
    line = _gauge(w, "nic_link_speed_bytes_per_second")
    if line.value is not None:
        line = Measure(line.value * 8, line.evidence)
    return _ratio(bits, line, "pre-FEC bit error ratio")


def fec_uncorrectable(w: Window, scope: str | None) -> Measure:
    # Per lane where the driver reports lanes (the evidence names them), else lane="total".
    lanes = _counter(w, "nic_fec_uncorrectable_blocks_total")
    if lanes.value is None:
        return lanes
    parts = [e for e in lanes.evidence if 'lane="total"' not in e.series]
    total = sum(e.delta or 0 for e in parts) if parts else lanes.value * w.seconds
    return Measure(total, tuple(e for e in lanes.evidence if (e.delta or 0) > 0)
                   or lanes.evidence)


def crc_errors(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rx_crc_errors_total"), w)


def pcs_symbol_errors(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, "nic_rx_pcs_symbol_errors_total"), w)


def link_flaps(w: Window, scope: str | None) -> Measure:
    return _events(_max(_counter(w, "nic_carrier_down_events_total"),
                        _counter(w, "nic_link_down_events_total")), w)


def rx_power_margin_db(w: Window, scope: str | None) -> Measure:
    """dB between the weakest lane's rx power and the module's low-warning threshold of the
    same type (negative: below it)."""
    best: tuple[float, SeriesKey, float, float] | None = None
    for key, power in _gauges(w, "nic_module_rx_power_watts"):
        labels = dict(key.labels)
        low = _gauge(w, "nic_module_rx_power_threshold_watts", level="low_warning",
                     type=labels.get("type", ""))
        if low.value is None or low.value <= 0:
            continue
        margin = -math.inf if power <= 0 else 10 * math.log10(power / low.value)
        if best is None or margin < best[0]:
            best = (margin, key, power, low.value)
    if best is None:
        return Measure(None)
    margin, key, power, threshold = best
    return Measure(margin, (Evidence(_series(key), value=power),
                            Evidence("nic_module_rx_power_threshold_watts{level=\"low_warning\"}",
                                     value=threshold)))


def drift_checks(w: Window, scope: str | None) -> Measure:
    rows = [(k, v) for k, v in _gauges(w, metrics.EXPECTATION_VIOLATION.name)
            if dict(k.labels).get("check", "").startswith("consistent_")]
    return Measure(float(len(rows)), tuple(Evidence(_series(k), value=v) for k, v in rows))


QUANTITIES: dict[str, Quantity] = {f.__name__: f for f in (
    tx_pause_frames_rate, host_rx_drop_ratio, tx_drop_ratio, rx_ring_fill, pcie_ceiling_ratio,
    pcie_traffic_share, rx_cpu_softirq_max, rx_cpu_saturated_share,
    rx_cpu_saturated_pressure, rx_queue_imbalance,
    rx_pause_fraction, tx_pause_fraction, tx_pause_fraction_peak, rx_pfc_frames_rate,
    tx_pfc_frames_rate, pfc_frames_rate, rx_traffic_share, pause_storm_events, ecn_cnp_rate,
    pfc_enabled, cnp_ignored, ecn_off_on_lossless, cnp_priority_pfc, roce_priority_mismatch,
    rdma_out_of_sequence, rdma_sequence_naks, rdma_recovery_events, rdma_ack_timeouts,
    rdma_retries_exceeded, rdma_rnr_naks, rdma_out_of_buffer, rdma_rnr_retries_exceeded,
    lane_ber_over_threshold, pre_fec_ber,
    fec_uncorrectable, crc_errors,
    pcs_symbol_errors, link_flaps, rx_power_margin_db, drift_checks)}


# --------------------------------------------------------------------------- evaluation

def scopes(w: Window, kind: str) -> list[str | None]:
    """The priorities this window has series for; [None] per device; for a per-lane
    signature the interface itself (None) and each lane with a pre-FEC BER and a FEC code."""
    if kind == DEVICE:
        return [None]
    if kind == LANE:
        return [None, *sorted(_lane_codes(w), key=lambda s: (not s.isdigit(),
                                                             int(s) if s.isdigit() else 0, s))]
    found = {v for m in _PRIORITY_SERIES for k in w.index.get(m, ()) for n, v in k.labels
             if n == "priority"}
    # ixgbe counts PFC per traffic class (packet buffer), not per priority: scope "tcN"
    found |= {f"tc{v}" for m in _TC_SERIES for k in w.index.get(m, ()) for n, v in k.labels
              if n == "tc"}
    if any(m in w.index for m in _GLOBAL_PAUSE):
        found.add("global")
    found.discard("total")
    ordered = sorted(found, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    return list(ordered)


_GLOBAL_PAUSE = ("nic_rx_pause_frames_total", "nic_tx_pause_frames_total",
                 "nic_rx_pause_ctrl_frames_total", "nic_tx_pause_ctrl_frames_total")
_TC_SERIES = ("nic_rx_pfc_tc_frames_total", "nic_tx_pfc_tc_frames_total")
_PRIORITY_SERIES = frozenset({"nic_rx_pfc_frames_total", "nic_tx_pfc_frames_total",
                              "nic_rx_pause_duration_seconds_total",
                              "nic_tx_pause_duration_seconds_total"})


def _holds(c: Condition, value: float | None, upper: float | None = None) -> bool | None:
    """Whether ``value`` is on the condition's side of its threshold; with ``upper`` (a
    range from ``value`` to ``upper``) only where the whole range is, else None."""
    if value is None or math.isnan(value):
        return None
    held = value >= c.threshold if c.op == ">=" else value < c.threshold
    if upper is None or math.isnan(upper):
        return held
    if held == (upper >= c.threshold if c.op == ">=" else upper < c.threshold):
        return held
    return None


def _held(c: Condition, m: Measure) -> bool | None:
    return _holds(c, m.value, m.upper)


def _applies(c: Condition, scope: str | None) -> bool:
    return not c.scope or c.scope == (DEVICE if scope is None else LANE)


def _measure(w: Window, quantity: str, scope: str | None) -> Measure:
    """QUANTITIES[quantity] on the window, computed once per window and scope."""
    m = w.memo.get((quantity, scope))
    if not isinstance(m, Measure):
        m = w.memo[(quantity, scope)] = QUANTITIES[quantity](w, scope)
    return m


def _decides(sig: Signature, w: Window, scope: str | None) -> bool:
    """Whether ``sig`` holds on its required conditions alone, stopping at the first that
    decides (all: the first not held; any: the first held): most signatures on most
    interfaces fail at their first condition, and need no verdict built."""
    required = (c for c in sig.conditions if c.required and _applies(c, scope))
    if sig.match == "any":
        return any(_held(c, _measure(w, c.quantity, scope)) for c in required)
    found = False
    for c in required:
        if not _held(c, _measure(w, c.quantity, scope)):
            return False
        found = True
    return found


def evaluate_one(sig: Signature, w: Window, scope: str | None) -> Verdict:
    results: list[ConditionResult] = []
    evidence: list[Evidence] = []
    for c in sig.conditions:
        if not _applies(c, scope):
            continue
        m = _measure(w, c.quantity, scope)
        held = _held(c, m)
        results.append(ConditionResult(c, m.value, held, m.upper))
        if held or (c.required and m.value is not None):
            evidence.extend(m.evidence)
    required = [r for r in results if r.condition.required]
    if sig.match == "any":
        holds = any(r.held for r in required)
    else:
        holds = bool(required) and all(r.held for r in required)
    known = [r for r in results if r.held is not None]
    confidence = sum(bool(r.held) for r in known) / len(results) if results else 0.0
    reasons = tuple(r.condition.text for r in results if r.held and not r.condition.required)
    return Verdict(
        device=w.device, signature=sig.name, klass=sig.klass, title=sig.title,
        scope=sig.scope, scope_value=scope or "", holds=holds, confidence=confidence,
        conditions=tuple(results), evidence=tuple(dict.fromkeys(evidence)),
        next_check=fill_next_check(sig.next_check, w, scope)
        + (peer_pfc_note(w) if sig.klass == FLOW else ""),
        reasons=reasons, seconds=w.seconds)


def evaluate(windows: Iterable[Window], signatures: Sequence[Signature] = SIGNATURES,
             all_verdicts: bool = False) -> list[Verdict]:
    """The verdicts that hold (every one evaluated with ``all_verdicts``), by device, then
    in table order. A signature another one on the same device and scope supersedes (a
    pause storm explains pausing the peer) is dropped, and so is one on any scope that the
    interface's own verdict supersedes (a host receive bottleneck explains pausing the peer
    on every priority); configuration drift is attached to
    the device's other verdicts as context."""
    out: list[Verdict] = []
    for w in sorted(windows, key=lambda w: w.device):
        verdicts = [evaluate_one(sig, w, scope) for sig in signatures
                    for scope in scopes(w, sig.scope)
                    if all_verdicts or _decides(sig, w, scope)]
        held = {(v.signature, v.scope_value) for v in verdicts if v.holds}
        # on the same scope, and a lane's verdict on the interface's own (scope ""); the
        # interface's own verdict on every scope (a host receive bottleneck explains its
        # pausing the peer on each priority)
        superseded = {(name, scope) for v in verdicts if v.holds
                      for name in _supersedes(v.signature, signatures)
                      for scope in ({s for n, s in held if n == name} | {""}
                                    if v.scope_value == "" else {v.scope_value, ""})}
        drift = tuple(e.series for v in verdicts if v.holds and v.signature == "config_drift"
                      for e in v.evidence)
        for v in verdicts:
            if v.holds and (v.signature, v.scope_value) in superseded & held:
                v = _replace(v, holds=False)
            if v.holds and drift and v.signature != "config_drift":
                v = _replace(v, context=drift)
            if v.holds or all_verdicts:
                out.append(v)
    return out


PCI_PLACEHOLDER = "<pci address>"
RING_MAX_PLACEHOLDER = "rx <max>"


def fill_next_check(text: str, w: Window, scope: str | None) -> str:
    """A signature's next check with what the window knows filled in: {device}, {scope},
    the PCI address where the sample's identity has one and the rx ring's maximum where
    the window has it (a placeholder stays only where the value is unknown)."""
    text = text.replace("{device}", w.device).replace("{scope}", scope or "")
    if w.pci_address:
        text = text.replace(PCI_PLACEHOLDER, w.pci_address)
    ring_max = w.gauges.get(SeriesKey("nic_ring_max_descriptors", (("ring", "rx"),)))
    if ring_max:
        text = text.replace(RING_MAX_PLACEHOLDER, f"rx {int(ring_max)}")
    return text


def peer_pfc_note(w: Window) -> str:
    """What the link peer announces of PFC beside the port's own (docs/fabric.md), for the
    next check of a pause verdict: lossless priorities that differ make one end pause
    traffic the other treats as lossy. "" where the window has no peer PFC (no LLDP)."""
    def enabled(family: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for key, value in w.gauges.items():
            if key.metric == family:
                labels = dict(key.labels)
                on = out.setdefault(labels.get("source", ""), set())
                if value:
                    on.add(labels.get("priority", ""))
        return out
    peer, own = enabled(metrics.LLDP_PEER_PFC_ENABLED.name), enabled(metrics.PFC_ENABLED.name)
    if not peer:
        return ""
    source = "lldp" if "lldp" in peer else min(peer)
    note = f"; the link peer announces PFC on {','.join(sorted(peer[source])) or 'none'} " \
           f"({source})"
    if not own:
        return note
    here = set().union(*own.values())
    if here == peer[source]:
        return note + ", as this port has"
    return note + f", this port has {','.join(sorted(here)) or 'none'}: they disagree, align " \
        "them first (dcb pfc)"


# --------------------------------------------------------------------------- not evaluated

@dataclass(frozen=True, slots=True)
class Unknown:
    """A signature that could neither hold nor be ruled out on a window: a required
    condition has no value (a series it reads is absent) and none of the known ones rules
    it out. ``missing``: the families the window lacked when its quantities looked."""

    device: str
    signature: str
    title: str
    scope: str
    scope_value: str
    conditions: tuple[str, ...]  # "text (quantity)" of each unknown required condition
    missing: tuple[str, ...]
    reason: str = ""  # where no condition was evaluated at all (no scope to evaluate on)

    @property
    def label(self) -> str:
        return f"{self.signature}{{{self.scope}={self.scope_value}}}" if self.scope_value \
            else self.signature

    def why(self) -> str:
        if self.reason:
            return self.reason
        needs = "; ".join(self.conditions)
        lacks = (", ".join(self.missing[:6]) + (" ..." if len(self.missing) > 6 else "")
                 if self.missing else "a value it can divide by")
        return f"unknown: {needs}; the window lacks {lacks}"

    def as_dict(self) -> dict[str, object]:
        return {"device": self.device, "signature": self.signature, "title": self.title,
                **({self.scope: self.scope_value} if self.scope_value else {}),
                "unknown_conditions": list(self.conditions), "missing": list(self.missing),
                "why": self.why()}


class _Misses(dict[str, tuple[SeriesKey, ...]]):
    """A window's index that records the families a quantity looked for and did not find
    (only on the copy :func:`unknowns` builds: the evaluation's own index is a plain
    dict)."""

    def __init__(self, index: Mapping[str, tuple[SeriesKey, ...]]) -> None:
        super().__init__(index)
        self.misses: dict[str, None] = {}

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        if key not in self:
            self.misses[key] = None
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        if not found and isinstance(key, str):
            self.misses[key] = None
        return found


class _MissedGauges(dict[SeriesKey, float]):
    def __init__(self, gauges: Mapping[SeriesKey, float], misses: dict[str, None]) -> None:
        super().__init__(gauges)
        self.misses = misses

    def get(self, key: SeriesKey, default: object = None) -> object:  # type: ignore[override]
        if key not in self:
            self.misses[key.metric] = None
        return super().get(key, default)


def _missing(w: Window, quantity: str, scope: str | None) -> tuple[str, ...]:
    """The families ``quantity`` looked for on ``w`` and did not find."""
    index = _Misses(w.index)
    traced = Window(w.device, w.seconds, w.deltas, w.peaks,
                    _MissedGauges(w.gauges, index.misses), w.polls, w.end)
    object.__setattr__(traced, "index", index)
    QUANTITIES[quantity](traced, scope)
    return tuple(m for m in index.misses if m not in w.index)


def unknowns(windows: Iterable[Window], signatures: Sequence[Signature] = SIGNATURES
             ) -> list[Unknown]:
    """The signatures that could not be evaluated on each window, and why: every one that
    neither holds nor is ruled out by a known condition, and every per-priority one on a
    window without any priority's series."""
    out: list[Unknown] = []
    for w in sorted(windows, key=lambda w: w.device):
        for sig in signatures:
            found = scopes(w, sig.scope)
            if not found:
                out.append(Unknown(w.device, sig.name, sig.title, sig.scope, "", (), (),
                                   f"not evaluated: the window has no per-{sig.scope} "
                                   "series (PFC or PAUSE counters) to evaluate it on"))
                continue
            for scope in found:
                results = []
                ranges: list[str] = []
                for c in sig.conditions:
                    if c.required and _applies(c, scope):
                        m = _measure(w, c.quantity, scope)
                        results.append((c, _held(c, m)))
                        if m.value is not None and results[-1][1] is None:
                            ranges.append(f"{c.quantity} lies between {_num(m.value)} and "
                                          f"{_num(m.upper)}, across {c.op} "
                                          f"{_num(c.threshold)} ({m.note})")
                if not results:
                    continue
                held = [h for _, h in results]
                if None not in held:
                    continue
                if sig.match == "any" and any(held):
                    continue
                if sig.match != "any" and False in held:
                    continue
                open_ = [c for c, h in results if h is None]
                if ranges:
                    # a range across the threshold: inputs present, the counters cannot tell
                    out.append(Unknown(
                        w.device, sig.name, sig.title, sig.scope, scope or "",
                        tuple(f"{c.text} ({c.quantity})" for c in open_), (),
                        "unknown from frames (released by XON, no duration counter): "
                        + "; ".join(ranges)))
                    continue
                lacks = [_missing(w, c.quantity, scope) for c in open_]
                if not all(lacks):
                    # a quantity with no value that lacked nothing does not apply here (ECN
                    # pairs with PFC on a priority, not with 802.3x PAUSE): not an unknown
                    continue
                missing = tuple(dict.fromkeys(m for ms in lacks for m in ms))
                out.append(Unknown(w.device, sig.name, sig.title, sig.scope, scope or "",
                                   tuple(f"{c.text} ({c.quantity})" for c in open_), missing))
    return out


def _supersedes(name: str, signatures: Sequence[Signature]) -> tuple[str, ...]:
    return next((s.supersedes for s in signatures if s.name == name), ())


def _replace(v: Verdict, **changes: object) -> Verdict:
    from dataclasses import replace
    return replace(v, **changes)  # type: ignore[arg-type]
