"""The quantities the signatures' conditions name (signatures.py ``Condition.quantity``):
each reads named families from nicwatch.metrics over a window and returns its value (None:
unknown) and the evidence it rests on. QUANTITIES is the table the engine evaluates through.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from nicwatch import metrics
from nicwatch.consumers.diagnosis.measures import (
    Evidence,
    Measure,
    Window,
    _counter,
    _gauge,
    _gauges,
    _max,
    _num,
    _peak,
    _ratio,
    _series,
    _sum,
)
from nicwatch.consumers.diagnosis.signatures import (
    MAX_FRAME_BYTES,
    MAX_PAUSE_QUANTA,
    MIN_FRAME_BYTES,
    MIN_FRAME_WIRE_BYTES,
    PAUSE_QUANTUM_BITS,
    PAUSE_REFRESH_SHARE,
    SOFTIRQ_SATURATED,
    SOFTNET_PRESSURE_PER_SECOND,
)
from nicwatch.metrics import Family
from nicwatch.model import SeriesKey
from nicwatch.normalize.linkphysics import FEC_CODES, TOTAL, LinkPhysics
from nicwatch.normalize.linkphysics import evaluate as link_physics

# Each takes the window and the scope value (a priority or lane; None per device).

Quantity = Callable[[Window, "str | None"], Measure]

# quantity -> the families it reads, through its helpers too (declared with @reads): the
# counters a window keeps (windows.COUNTERS) are those the signatures' quantities declare.
READS: dict[str, tuple[str, ...]] = {}


def reads(*families: Family | str) -> Callable[[Quantity], Quantity]:
    """Declares the families (a Family of nicwatch.metrics, or a name not exported) the
    quantity below reads; tests/unit/consumers/diagnosis/test_windows.py holds each
    quantity to its declaration."""
    def declare(quantity: Quantity) -> Quantity:
        READS[quantity.__name__] = tuple(f if isinstance(f, str) else f.name for f in families)
        return quantity
    return declare


@dataclass(frozen=True, slots=True)
class Direction:
    """The families of one direction ("rx" or "tx") that the quantities read either way."""

    packets: str
    rdma_packets: str
    phy_packets: str
    phy_bytes: str
    bytes: str
    rdma_bytes: str
    pause_frames: str
    pause_ctrl_frames: str
    pause_xon_frames: str
    pause_duration: str
    pfc_frames: str
    pfc_xon_frames: str
    pfc_tc_frames: str
    pfc_tc_xon_frames: str


DIRECTIONS = {
    "rx": Direction(
        metrics.RX_PACKETS.name, metrics.RDMA_RX_PACKETS.name, metrics.PHY_RX_PACKETS.name,
        metrics.PHY_RX_BYTES.name, metrics.RX_BYTES.name, metrics.RDMA_RX_BYTES.name,
        metrics.RX_PAUSE_FRAMES.name, metrics.RX_PAUSE_CTRL_FRAMES.name,
        metrics.RX_PAUSE_XON_FRAMES.name, metrics.RX_PAUSE_DURATION_SECONDS.name,
        metrics.RX_PFC_FRAMES.name, metrics.RX_PFC_XON_FRAMES.name,
        metrics.RX_PFC_TC_FRAMES.name, metrics.RX_PFC_TC_XON_FRAMES.name),
    "tx": Direction(
        metrics.TX_PACKETS.name, metrics.RDMA_TX_PACKETS.name, metrics.PHY_TX_PACKETS.name,
        metrics.PHY_TX_BYTES.name, metrics.TX_BYTES.name, metrics.RDMA_TX_BYTES.name,
        metrics.TX_PAUSE_FRAMES.name, metrics.TX_PAUSE_CTRL_FRAMES.name,
        metrics.TX_PAUSE_XON_FRAMES.name, metrics.TX_PAUSE_DURATION_SECONDS.name,
        metrics.TX_PFC_FRAMES.name, metrics.TX_PFC_XON_FRAMES.name,
        metrics.TX_PFC_TC_FRAMES.name, metrics.TX_PFC_TC_XON_FRAMES.name),
}


def _p(scope: str | None) -> dict[str, str]:
    return {"priority": scope} if scope is not None else {}


@reads(metrics.TX_PAUSE_CTRL_FRAMES, metrics.TX_PAUSE_FRAMES, metrics.TX_PFC_FRAMES,
       metrics.TX_PFC_TC_FRAMES)
def tx_pause_frames_rate(w: Window, scope: str | None) -> Measure:
    # PAUSE and PFC frames sent, the largest of the families the driver has (mlx5's
    # pause_ctrl counter may include PFC frames, so they are never added).
    return _max(_counter(w, metrics.TX_PAUSE_FRAMES.name),
                _counter(w, metrics.TX_PAUSE_CTRL_FRAMES.name),
                _counter(w, metrics.TX_PFC_FRAMES.name),
                _counter(w, metrics.TX_PFC_TC_FRAMES.name))


def _frames(w: Window, direction: str) -> Measure:
    """Packets the interface received (sent) per second: the netdev's count plus its RDMA
    ports', else the port's own frame counter (nic_phy_rx_packets_total: mlx5
    rx_packets_phy, bnxt rx_total_frames, ixgbe rx_pkts_nic, ice/i40e unicast + multicast +
    broadcast, be2net its queues' packets), else, as a last resort said so in the evidence,
    the most frames the port's bytes can be: nic_phy_rx_bytes_total / 64, never more than
    the link carries (line rate / 84 bytes on the wire). A ratio over it is a lower bound."""
    d = DIRECTIONS[direction]
    netdev = _sum(_counter(w, d.packets),
                  _counter(w, d.rdma_packets))
    if netdev.value is not None:
        return netdev
    port = _counter(w, d.phy_packets)
    if port.value is not None:
        return port
    phy = _counter(w, d.phy_bytes)
    if phy.value is None:
        return phy
    frames = phy.value / MIN_FRAME_BYTES
    line = _gauge(w, metrics.LINK_SPEED_BYTES_PER_SECOND.name)
    capped = line.value is not None and line.value / MIN_FRAME_WIRE_BYTES < frames
    if line.value is not None and capped:
        frames = line.value / MIN_FRAME_WIRE_BYTES
    what = ("the link's most (line rate / 84 bytes a frame on the wire)" if capped
            else f"{d.phy_bytes} / 64")
    return Measure(frames, (*phy.evidence, *(line.evidence if capped else ()), Evidence(
        f"packets at most ({what}; no frame counter, a last resort: the ratio is a lower "
        "bound)", rate=frames)))


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.PHY_RX_BYTES, metrics.PHY_RX_PACKETS,
       metrics.RDMA_RX_PACKETS, metrics.RX_DISCARDS, metrics.RX_HW_DROP_OVERRUNS,
       metrics.RX_OUT_OF_BUFFER_DROPS, metrics.RX_PACKETS)
def host_rx_drop_ratio(w: Window, scope: str | None) -> Measure:
    drops = _sum(_max(_counter(w, metrics.RX_OUT_OF_BUFFER_DROPS.name),
                      _counter(w, metrics.RX_HW_DROP_OVERRUNS.name)),
                 _counter(w, metrics.RX_DISCARDS.name))
    received = _frames(w, "rx")
    if drops.value is None or received.value is None:
        return Measure(None, drops.evidence)
    return _ratio(drops, Measure(drops.value + received.value, received.evidence),
                  "drops / (drops + packets received)")


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.PHY_TX_BYTES, metrics.PHY_TX_PACKETS,
       metrics.RDMA_TX_PACKETS, metrics.TX_DISCARDS, metrics.TX_DROPPED, metrics.TX_PACKETS)
def tx_drop_ratio(w: Window, scope: str | None) -> Measure:
    """nic_tx_dropped_total (netdev) plus nic_tx_discards_total (port) over themselves plus
    the packets sent (nic_tx_packets_total, else nic_phy_tx_packets_total)."""
    drops = _sum(_counter(w, metrics.TX_DROPPED.name), _counter(w, metrics.TX_DISCARDS.name))
    sent = _frames(w, "tx")
    if drops.value is None or sent.value is None:
        return Measure(None, drops.evidence)
    return _ratio(drops, Measure(drops.value + sent.value, sent.evidence),
                  "transmit drops / (drops + packets sent)")


@reads(metrics.RING_DESCRIPTORS, metrics.RING_MAX_DESCRIPTORS)
def rx_ring_fill(w: Window, scope: str | None) -> Measure:
    return _ratio(_gauge(w, metrics.RING_DESCRIPTORS.name, ring="rx"),
                  _gauge(w, metrics.RING_MAX_DESCRIPTORS.name, ring="rx"), "rx ring / its maximum")


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND)
def pcie_ceiling_ratio(w: Window, scope: str | None) -> Measure:
    return _ratio(_gauge(w, metrics.PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND.name),
                  _gauge(w, metrics.LINK_SPEED_BYTES_PER_SECOND.name), "PCIe ceiling / line rate")


def _traffic_peak(w: Window, direction: str) -> Measure:
    d = DIRECTIONS[direction]
    phy = _peak(w, d.phy_bytes)
    if phy.value is not None:
        return phy
    return _sum(_peak(w, d.bytes),
                _peak(w, d.rdma_bytes))


@reads(metrics.PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND, metrics.PHY_RX_BYTES, metrics.PHY_TX_BYTES,
       metrics.RDMA_RX_BYTES, metrics.RDMA_TX_BYTES, metrics.RX_BYTES, metrics.TX_BYTES)
def pcie_traffic_share(w: Window, scope: str | None) -> Measure:
    """Peak of nic_phy_rx_bytes_total / nic_phy_tx_bytes_total (else nic_rx_bytes_total plus
    nic_rdma_rx_bytes_total, tx alike) over the ceiling."""
    return _ratio(_max(_traffic_peak(w, "rx"), _traffic_peak(w, "tx")),
                  _gauge(w, metrics.PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND.name),
                  "peak traffic / PCIe ceiling")


# Not exported: the consumer puts it in the window (consumers/diagnosis/consumer.py) from netdev
# napi-get: how many of the interface's NAPI instances run in threads (a pid).
NAPI_THREADED = "nic_rx_napi_threaded"


def _threaded(w: Window) -> Measure:
    """The interface's NAPI instances in threaded mode, where napi-get said (None: not
    read). Their receive work is a napi/<dev>-<id> kthread's process time, not softirq."""
    return _gauge(w, NAPI_THREADED)


@reads(metrics.RX_CPU_SOFTIRQ_RATIO, NAPI_THREADED)
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
            pressure = _sum(_counter(w, metrics.RX_CPU_TIME_SQUEEZE.name, cpu=cpu),
                            _counter(w, metrics.RX_CPU_DROPPED.name, cpu=cpu))
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


@reads(metrics.RX_CPU_DROPPED, metrics.RX_CPU_SOFTIRQ_RATIO, metrics.RX_CPU_TIME_SQUEEZE,
       NAPI_THREADED)
def rx_cpu_saturated_share(w: Window, scope: str | None) -> Measure:
    """nic_rx_cpu_softirq_ratio{cpu} of the serving CPU _saturated_cpu picks."""
    return _saturated_cpu(w)[0]


@reads(metrics.RX_CPU_DROPPED, metrics.RX_CPU_SOFTIRQ_RATIO, metrics.RX_CPU_TIME_SQUEEZE,
       NAPI_THREADED)
def rx_cpu_saturated_pressure(w: Window, scope: str | None) -> Measure:
    """nic_rx_cpu_time_squeeze_total{cpu} + nic_rx_cpu_dropped_total{cpu} per second of
    that same CPU."""
    return _saturated_cpu(w)[1]


@reads(metrics.RX_QUEUE_BUSIEST, metrics.RX_QUEUE_IMBALANCE)
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
    line = _gauge(w, metrics.LINK_SPEED_BYTES_PER_SECOND.name)
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
    d = DIRECTIONS[direction]
    read = _peak if peak else _counter
    if scope == "global":
        return read(w, d.pause_xon_frames)
    if scope is not None and scope.startswith("tc"):
        return read(w, d.pfc_tc_xon_frames, tc=scope[2:])
    return read(w, d.pfc_xon_frames, **_p(scope))


def _paused(w: Window, direction: str, scope: str | None, peak: bool = False) -> Measure:
    """The fraction of time paused: the pause duration's rate where the driver counts it,
    else estimated from the XOFF and XON frames (_estimated). With ``peak`` the XOFF
    rate's highest poll less the XON rate's highest, which is at most the XOFFs no XON
    released in that poll (a range never narrower than the poll's own)."""
    d = DIRECTIONS[direction]
    read = _peak if peak else _counter
    if scope is None or not scope.startswith("tc"):
        duration = read(w, d.pause_duration, **_p(scope))
        if duration.value is not None:
            return duration
    return _estimated(w, _pfc(w, direction, scope, peak), _xon(w, direction, scope, peak))


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.RX_PAUSE_CTRL_FRAMES,
       metrics.RX_PAUSE_DURATION_SECONDS, metrics.RX_PAUSE_FRAMES, metrics.RX_PAUSE_XON_FRAMES,
       metrics.RX_PFC_FRAMES, metrics.RX_PFC_TC_FRAMES, metrics.RX_PFC_TC_XON_FRAMES,
       metrics.RX_PFC_XON_FRAMES)
def rx_pause_fraction(w: Window, scope: str | None) -> Measure:
    """nic_rx_pause_duration_seconds_total{priority} a second, else estimated from XOFF:
    nic_rx_pfc_frames_total, nic_rx_pfc_tc_frames_total or nic_rx_pause_frames_total and
    nic_link_speed_bytes_per_second."""
    return _paused(w, "rx", scope)


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.TX_PAUSE_CTRL_FRAMES,
       metrics.TX_PAUSE_DURATION_SECONDS, metrics.TX_PAUSE_FRAMES, metrics.TX_PAUSE_XON_FRAMES,
       metrics.TX_PFC_FRAMES, metrics.TX_PFC_TC_FRAMES, metrics.TX_PFC_TC_XON_FRAMES,
       metrics.TX_PFC_XON_FRAMES)
def tx_pause_fraction(w: Window, scope: str | None) -> Measure:
    """nic_tx_pause_duration_seconds_total{priority} a second, else estimated from XOFF:
    nic_tx_pfc_frames_total, nic_tx_pfc_tc_frames_total or nic_tx_pause_frames_total and
    nic_link_speed_bytes_per_second."""
    return _paused(w, "tx", scope)


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.TX_PAUSE_CTRL_FRAMES,
       metrics.TX_PAUSE_DURATION_SECONDS, metrics.TX_PAUSE_FRAMES, metrics.TX_PAUSE_XON_FRAMES,
       metrics.TX_PFC_FRAMES, metrics.TX_PFC_TC_FRAMES, metrics.TX_PFC_TC_XON_FRAMES,
       metrics.TX_PFC_XON_FRAMES)
def tx_pause_fraction_peak(w: Window, scope: str | None) -> Measure:
    """The highest per-poll rate of nic_tx_pause_duration_seconds_total, else estimated
    from the peak XOFF rate (nic_tx_pfc_frames_total, nic_tx_pfc_tc_frames_total,
    nic_tx_pause_frames_total) and nic_link_speed_bytes_per_second."""
    return _paused(w, "tx", scope, peak=True)


def _pfc(w: Window, direction: str, scope: str | None, peak: bool = False) -> Measure:
    """XOFF frames a second (the per-poll peak with ``peak``) on the scope: a priority, "tcN"
    (ixgbe's per traffic class nic_{direction}_pfc_tc_frames_total) or "global" (802.3x)."""
    d = DIRECTIONS[direction]
    read = _peak if peak else _counter
    if scope == "global":
        # 802.3x PAUSE. A pause_ctrl counter (mlx5) may count PFC frames too: it stands for
        # PAUSE only where the port has no PFC counters.
        pause = read(w, d.pause_frames)
        if pause.value is None and d.pfc_frames not in w.index:
            pause = read(w, d.pause_ctrl_frames)
        return pause
    if scope is not None and scope.startswith("tc"):
        return read(w, d.pfc_tc_frames, tc=scope[2:])
    return read(w, d.pfc_frames, **_p(scope))


@reads(metrics.RX_PAUSE_CTRL_FRAMES, metrics.RX_PAUSE_FRAMES, metrics.RX_PFC_FRAMES,
       metrics.RX_PFC_TC_FRAMES)
def rx_pfc_frames_rate(w: Window, scope: str | None) -> Measure:
    """nic_rx_pfc_frames_total{priority}; priority "global": nic_rx_pause_frames_total, else
    (no PFC counters) nic_rx_pause_ctrl_frames_total."""
    return _pfc(w, "rx", scope)


@reads(metrics.TX_PAUSE_CTRL_FRAMES, metrics.TX_PAUSE_FRAMES, metrics.TX_PFC_FRAMES,
       metrics.TX_PFC_TC_FRAMES)
def tx_pfc_frames_rate(w: Window, scope: str | None) -> Measure:
    """nic_tx_pfc_frames_total{priority}; priority "global": nic_tx_pause_frames_total, else
    (no PFC counters) nic_tx_pause_ctrl_frames_total."""
    return _pfc(w, "tx", scope)


@reads(metrics.RX_PFC_FRAMES, metrics.RX_PFC_TC_FRAMES, metrics.TX_PFC_FRAMES,
       metrics.TX_PFC_TC_FRAMES)
def pfc_frames_rate(w: Window, scope: str | None) -> Measure:
    """nic_rx_pfc_frames_total plus nic_tx_pfc_frames_total on the priority."""
    if scope == "global":
        return Measure(None)  # ECN pairs with PFC on a lossless priority, not 802.3x
    return _sum(_pfc(w, "rx", scope), _pfc(w, "tx", scope))


@reads(metrics.LINK_SPEED_BYTES_PER_SECOND, metrics.PHY_RX_BYTES, metrics.PHY_RX_PACKETS,
       metrics.RDMA_RX_BYTES, metrics.RX_BYTES)
def rx_traffic_share(w: Window, scope: str | None) -> Measure:
    """nic_phy_rx_bytes_total (else netdev plus RDMA bytes) over the line rate; without a
    byte count (be2net), the port's frames x MAX_FRAME_BYTES: an upper bound."""
    rx = _counter(w, metrics.PHY_RX_BYTES.name)
    if rx.value is None:
        rx = _sum(_counter(w, metrics.RX_BYTES.name), _counter(w, metrics.RDMA_RX_BYTES.name))
    if rx.value is None:
        frames = _counter(w, metrics.PHY_RX_PACKETS.name)
        if frames.value is not None:
            most = frames.value * MAX_FRAME_BYTES
            rx = Measure(most, (*frames.evidence, Evidence(
                f"rx bytes/s at most (nic_phy_rx_packets_total x {MAX_FRAME_BYTES:,} bytes; "
                "no byte counter)", rate=most)))
    return _ratio(rx, _gauge(w, metrics.LINK_SPEED_BYTES_PER_SECOND.name), "rx bytes/s / line rate")


@reads(metrics.PAUSE_STORM_EVENTS)
def pause_storm_events(w: Window, scope: str | None) -> Measure:
    m = _counter(w, metrics.PAUSE_STORM_EVENTS.name)
    return Measure(None if m.value is None else m.value * w.seconds, m.evidence)


@reads(metrics.RDMA_CNP_HANDLED, metrics.RDMA_CNP_SENT, metrics.RDMA_ECN_MARKED_PACKETS,
       metrics.RDMA_RX_CE_PACKETS)
def ecn_cnp_rate(w: Window, scope: str | None) -> Measure:
    return _sum(_counter(w, metrics.RDMA_ECN_MARKED_PACKETS.name),
                _counter(w, metrics.RDMA_RX_CE_PACKETS.name),
                _counter(w, metrics.RDMA_CNP_SENT.name),
                _counter(w, metrics.RDMA_CNP_HANDLED.name))


@reads(metrics.PFC_ENABLED)
def pfc_enabled(w: Window, scope: str | None) -> Measure:
    return _gauge(w, metrics.PFC_ENABLED.name, **_p(scope)) if scope != "global" else Measure(None)


def _events(m: Measure, w: Window) -> Measure:
    """A rate measure as the count in the window."""
    return Measure(None if m.value is None else m.value * w.seconds, m.evidence)


@reads(metrics.RDMA_CNP_IGNORED)
def cnp_ignored(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RDMA_CNP_IGNORED.name), w)


def _pfc_priorities(w: Window) -> list[str] | None:
    rows = _gauges(w, metrics.PFC_ENABLED.name)
    if not rows:
        return None
    return [dict(k.labels)["priority"] for k, v in rows if v == 1]


@reads(metrics.PFC_ENABLED, metrics.ROCE_ECN_ENABLED)
def ecn_off_on_lossless(w: Window, scope: str | None) -> Measure:
    lossless = _pfc_priorities(w)
    ecn = _gauges(w, metrics.ROCE_ECN_ENABLED.name)
    if lossless is None or not ecn:
        return Measure(None)
    off = [(k, v) for k, v in ecn if dict(k.labels).get("priority") in lossless and v == 0]
    return Measure(float(len(off)), tuple(Evidence(_series(k), value=v) for k, v in off))


@reads(metrics.PFC_ENABLED, metrics.ROCE_CNP_PRIORITY)
def cnp_priority_pfc(w: Window, scope: str | None) -> Measure:
    cnp = _gauge(w, metrics.ROCE_CNP_PRIORITY.name)
    lossless = _pfc_priorities(w)
    if cnp.value is None or lossless is None:
        return Measure(None)
    on = str(int(cnp.value)) in lossless
    return Measure(1.0 if on else 0.0, cnp.evidence + (
        Evidence(f'{metrics.PFC_ENABLED.name}{{priority="{int(cnp.value)}"}}',
                 value=float(on)),))


@reads(metrics.PFC_ENABLED, metrics.QOS_DSCP_PRIORITY, metrics.QOS_TRUST_INFO,
       metrics.RDMA_DEFAULT_ROCE_TOS, metrics.RDMA_TRAFFIC_CLASS)
def roce_priority_mismatch(w: Window, scope: str | None) -> Measure:
    """The RoCE DSCP (rdma_cm default ToS, else the forced traffic class) under DSCP trust
    maps to a priority without PFC."""
    tos = (_gauges(w, metrics.RDMA_TRAFFIC_CLASS.name)
           or _gauges(w, metrics.RDMA_DEFAULT_ROCE_TOS.name))
    lossless = _pfc_priorities(w)
    trust = [k for k, v in _gauges(w, metrics.QOS_TRUST_INFO.name) if v == 1]
    if not tos or lossless is None or not trust or dict(trust[0].labels).get("trust") != "dscp":
        return Measure(None)
    key, value = tos[0]
    dscp = int(value) >> 2
    prio = _gauge(w, metrics.QOS_DSCP_PRIORITY.name, dscp=str(dscp))
    if prio.value is None:
        return Measure(None, (Evidence(_series(key), value=value),))
    bad = str(int(prio.value)) not in lossless
    return Measure(1.0 if bad else 0.0, (Evidence(_series(key), value=value), *prio.evidence))


@reads(metrics.RDMA_OUT_OF_SEQUENCE)
def rdma_out_of_sequence(w: Window, scope: str | None) -> Measure:
    """nic_rdma_out_of_sequence_total: the responder's out-of-sequence packets."""
    return _events(_counter(w, metrics.RDMA_OUT_OF_SEQUENCE.name), w)


@reads(metrics.RDMA_IMPLIED_NAK_SEQ_ERRORS, metrics.RDMA_PACKET_SEQ_ERRORS)
def rdma_sequence_naks(w: Window, scope: str | None) -> Measure:
    """nic_rdma_packet_seq_errors_total plus nic_rdma_implied_nak_seq_errors_total: the
    requester's sequence error NAKs received and implied."""
    return _events(_sum(_counter(w, metrics.RDMA_PACKET_SEQ_ERRORS.name),
                        _counter(w, metrics.RDMA_IMPLIED_NAK_SEQ_ERRORS.name)), w)


@reads(metrics.RDMA_DUPLICATE_REQUESTS, metrics.RDMA_LOCAL_ACK_TIMEOUT_ERRORS)
def rdma_recovery_events(w: Window, scope: str | None) -> Measure:
    return _events(_sum(_counter(w, metrics.RDMA_LOCAL_ACK_TIMEOUT_ERRORS.name),
                        _counter(w, metrics.RDMA_DUPLICATE_REQUESTS.name)), w)


@reads(metrics.RDMA_LOCAL_ACK_TIMEOUT_ERRORS)
def rdma_ack_timeouts(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RDMA_LOCAL_ACK_TIMEOUT_ERRORS.name), w)


@reads(metrics.RDMA_REQ_TRANSPORT_RETRIES_EXCEEDED)
def rdma_retries_exceeded(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RDMA_REQ_TRANSPORT_RETRIES_EXCEEDED.name), w)


@reads(metrics.RDMA_RNR_NAK_RETRY_ERRORS)
def rdma_rnr_naks(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RDMA_RNR_NAK_RETRY_ERRORS.name), w)


@reads(metrics.RDMA_OUT_OF_BUFFER_DROPS)
def rdma_out_of_buffer(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RDMA_OUT_OF_BUFFER_DROPS.name), w)


@reads(metrics.RDMA_REQ_RNR_RETRIES_EXCEEDED)
def rdma_rnr_retries_exceeded(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RDMA_REQ_RNR_RETRIES_EXCEEDED.name), w)


def physics(w: Window) -> LinkPhysics:
    """The link physics (normalize/linkphysics.py, the evaluation behind nic_pre_fec_ber)
    over the window: each lane's bit errors per second of the window against its serdes
    rate, the FEC code from the link's active mode."""
    got = w.memo.get("physics")
    if isinstance(got, LinkPhysics):
        return got
    rates = {k: w.deltas[k] / w.seconds
             for m in (metrics.FEC_LANE_BIT_ERRORS.name, metrics.FEC_CORRECTED_BIT_ERRORS.name)
             for k in w.index.get(m, ()) if k in w.deltas and w.seconds > 0}
    out = link_physics(w, rates)
    w.memo["physics"] = out
    return out


def lane_codes(w: Window) -> list[str]:
    """The lanes with a pre-FEC BER over the window and a FEC code to hold them to."""
    p = physics(w)
    if (p.fec or "") not in FEC_CODES:
        return []
    return [lane for lane in p.ber if lane != TOTAL]


@reads(metrics.FEC_CORRECTED_BIT_ERRORS, metrics.FEC_LANE_BIT_ERRORS, metrics.FEC_MODE_INFO,
       metrics.LINK_LANES, metrics.LINK_SPEED_BYTES_PER_SECOND)
def lane_ber_over_threshold(w: Window, scope: str | None) -> Measure:
    """A lane's nic_pre_fec_ber (nic_fec_lane_bit_errors_total{lane} over the window / the
    lane's serdes rate from nic_link_speed_bytes_per_second and nic_link_lanes; the code from
    nic_fec_mode_info) over its FEC code's threshold (FEC_CODES)."""
    p = physics(w)
    code = FEC_CODES.get(p.fec or "")
    if scope is None or code is None or scope not in p.ber:
        return Measure(None)
    ber = p.ber[scope]
    errors = _counter(w, metrics.FEC_LANE_BIT_ERRORS.name, lane=scope)
    ratio = f'{metrics.PRE_FEC_BER.name}{{fec="{code.name}",lane="{scope}"}}'
    return Measure(ber / code.threshold, (
        *errors.evidence, Evidence(ratio + " over the window", value=ber),
        Evidence(f"{code.name} threshold (normalize/linkphysics.py FEC_CODES)",
                 value=code.threshold)))


@reads(metrics.FEC_CORRECTED_BIT_ERRORS, metrics.FEC_LANE_BIT_ERRORS, metrics.FEC_MODE_INFO,
       metrics.LINK_LANES, metrics.LINK_SPEED_BYTES_PER_SECOND)
def pre_fec_ber(w: Window, scope: str | None) -> Measure:
    """The port's nic_fec_corrected_bit_errors_total over its line bits, where no lane has a
    ratio to be held to (the lanes' verdicts speak otherwise)."""
    if lane_codes(w):
        return Measure(None)
    bits = _counter(w, metrics.FEC_CORRECTED_BIT_ERRORS.name)
    line = _gauge(w, metrics.LINK_SPEED_BYTES_PER_SECOND.name)
    if line.value is not None:
        line = Measure(line.value * 8, line.evidence)
    return _ratio(bits, line, "pre-FEC bit error ratio")


@reads(metrics.FEC_UNCORRECTABLE_BLOCKS)
def fec_uncorrectable(w: Window, scope: str | None) -> Measure:
    # Per lane where the driver reports lanes (the evidence names them), else lane="total".
    lanes = _counter(w, metrics.FEC_UNCORRECTABLE_BLOCKS.name)
    if lanes.value is None:
        return lanes
    parts = [e for e in lanes.evidence if 'lane="total"' not in e.series]
    total = sum(e.delta or 0 for e in parts) if parts else lanes.value * w.seconds
    return Measure(total, tuple(e for e in lanes.evidence if (e.delta or 0) > 0)
                   or lanes.evidence)


@reads(metrics.RX_CRC_ERRORS)
def crc_errors(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RX_CRC_ERRORS.name), w)


@reads(metrics.RX_PCS_SYMBOL_ERRORS)
def pcs_symbol_errors(w: Window, scope: str | None) -> Measure:
    return _events(_counter(w, metrics.RX_PCS_SYMBOL_ERRORS.name), w)


@reads(metrics.CARRIER_DOWN_EVENTS, metrics.LINK_DOWN_EVENTS)
def link_flaps(w: Window, scope: str | None) -> Measure:
    return _events(_max(_counter(w, metrics.CARRIER_DOWN_EVENTS.name),
                        _counter(w, metrics.LINK_DOWN_EVENTS.name)), w)


@reads(metrics.MODULE_RX_POWER_THRESHOLD_WATTS, metrics.MODULE_RX_POWER_WATTS)
def rx_power_margin_db(w: Window, scope: str | None) -> Measure:
    """dB between the weakest lane's rx power and the module's low-warning threshold of the
    same type (negative: below it)."""
    best: tuple[float, SeriesKey, float, float] | None = None
    for key, power in _gauges(w, metrics.MODULE_RX_POWER_WATTS.name):
        labels = dict(key.labels)
        low = _gauge(w, metrics.MODULE_RX_POWER_THRESHOLD_WATTS.name, level="low_warning",
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
                            Evidence(f"{metrics.MODULE_RX_POWER_THRESHOLD_WATTS.name}"
                                     '{level="low_warning"}',
                                     value=threshold)))


@reads(metrics.EXPECTATION_VIOLATION)
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
