"""Each checkable property's actual value, read from a Sample (its gauges, state and
identity); None where the kernel or driver does not report it. Pure: never the kernel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicwatch import metrics
from nicwatch.metrics import (
    DEVLINK_HEALTH_RECOVERABLE,
    DEVLINK_HEALTH_REPORTER_STATE,
    ETS_PRIORITY_TC,
    ETS_TC_BANDWIDTH_RATIO,
    ETS_TC_TSA_INFO,
    PFC_ENABLED,
    QOS_DSCP_PRIORITY,
    QOS_TRUST_INFO,
    ROCE_ECN_ENABLED,
    RX_QUEUE_PACKETS,
)
from nicwatch.model import RdmaPort, Sample, SeriesKey
from nicwatch.normalize import rdma
from nicwatch.normalize.linkphysics import FEC_CODES
from nicwatch.normalize.rxpath import IRQ_INFO, cpulist, cumulative_balance, nic_node

PRIORITIES = range(8)


def _gauge(sample: Sample, metric: str, *labels: tuple[str, str]) -> float | None:
    return sample.gauges.get(SeriesKey(metric, tuple(sorted(labels))))


def _pcie_speed(current: bool) -> Callable[[Sample], float | None]:
    """The PCIe link speed of the NIC function itself (hop 0), current or its maximum."""
    def speed(sample: Sample) -> float | None:
        link = sample.state.pcie_link
        return None if link is None else (link.current_speed_gts if current
                                          else link.max_speed_gts)
    return speed


def _pcie_width(current: bool) -> Callable[[Sample], int | None]:
    def width(sample: Sample) -> int | None:
        link = sample.state.pcie_link
        return None if link is None else link.current_width if current else link.max_width
    return width


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _ring(field: str) -> Callable[[Sample], int | None]:
    """A field of the interface's rings (``rx``, ``tx_max``, ...)."""
    return lambda s: None if s.state.rings is None else getattr(s.state.rings, field)


def _channel_type(sample: Sample) -> str:
    """Combined channels, or rx channels on drivers without combined ones (veth)."""
    ch = sample.state.channels
    return "combined" if ch is not None and ch.combined_max else "rx"


def _channels(sample: Sample) -> int | None:
    ch = sample.state.channels
    return None if ch is None else ch.combined if _channel_type(sample) == "combined" else ch.rx


def _channels_max(sample: Sample) -> int | None:
    ch = sample.state.channels
    return (None if ch is None else
            ch.combined_max if _channel_type(sample) == "combined" else ch.rx_max)


def _link_speed_mbps(sample: Sample) -> int | None:
    return sample.state.speed_mbps


def _fec_active(sample: Sample) -> str | None:
    fec = sample.state.fec
    return (fec.active or None) if fec is not None else None


def _pfc_enabled(sample: Sample) -> tuple[int, ...] | None:
    states = {p: _gauge(sample, PFC_ENABLED.name, ("priority", str(p))) for p in PRIORITIES}
    if all(v is None for v in states.values()):
        return None
    return tuple(p for p, v in states.items() if v)


def _labelled(sample: Sample, metric: str, label: str) -> dict[str, float]:
    """label value -> value of every series of ``metric``."""
    return {dict(key.labels)[label]: v for key, v in sample.gauges.items() if key.metric == metric}


def _trust(sample: Sample) -> str | None:
    for key in sample.gauges:
        if key.metric == QOS_TRUST_INFO.name:
            return dict(key.labels).get("trust")
    return None


def _dscp_map(sample: Sample) -> tuple[tuple[int, int], ...] | None:
    """Every DSCP -> priority pair; None when the port reports no DCB application table."""
    if _trust(sample) is None:
        return None
    pairs = _labelled(sample, QOS_DSCP_PRIORITY.name, "dscp")
    return tuple(sorted((int(d), int(p)) for d, p in pairs.items()))


def _ecn_states(sample: Sample) -> dict[tuple[str, int], bool]:
    return {(dict(k.labels)["point"], int(dict(k.labels)["priority"])): bool(v)
            for k, v in sample.gauges.items() if k.metric == ROCE_ECN_ENABLED.name}


def _ecn(sample: Sample) -> tuple[int, ...] | None:
    """Priorities with ECN on at both the reaction and the notification point."""
    states = _ecn_states(sample)
    if not states:
        return None
    return tuple(p for p in PRIORITIES if states.get(("rp", p)) and states.get(("np", p)))


def _ets(sample: Sample) -> tuple[tuple[str, tuple[Any, ...]], ...] | None:
    prio_tc = _labelled(sample, ETS_PRIORITY_TC.name, "priority")
    if not prio_tc:
        return None
    bw = _labelled(sample, ETS_TC_BANDWIDTH_RATIO.name, "tc")
    tsa = {dict(k.labels)["tc"]: dict(k.labels)["tsa"] for k in sample.gauges
           if k.metric == ETS_TC_TSA_INFO.name}
    eight = [str(i) for i in PRIORITIES]
    return (("prio_tc", tuple(int(prio_tc.get(i, -1)) for i in eight)),
            ("tc_bw", tuple(round(bw.get(i, -0.01) * 100) for i in eight)),
            ("tsa", tuple(tsa.get(i, "?") for i in eight)))


def _pause(field: str) -> Callable[[Sample], bool | None]:
    """A field of the interface's PAUSE configuration (``autoneg``, ``rx``, ``tx``)."""
    return lambda s: None if s.state.pause is None else getattr(s.state.pause, field)


def _reporter_states(sample: Sample) -> dict[str, list[tuple[str, str]]]:
    """State -> sorted (devlink handle, reporter) of the interface's devlink health
    reporters; the handle of a port reporter is DEVICE/PORT, as devlink(8) takes it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for key, value in sample.gauges.items():
        if key.metric == DEVLINK_HEALTH_REPORTER_STATE.name and value:
            labels = dict(key.labels)
            port = labels.get("devlink_port", "")
            out.setdefault(labels["state"], []).append(
                (labels["devlink"] + (f"/{port}" if port else ""), labels["reporter"]))
    return {state: sorted(reporters) for state, reporters in out.items()}


def _unhealthy(states: dict[str, list[tuple[str, str]]]
               ) -> tuple[str, list[tuple[str, str]]] | None:
    """The worst state other than healthy and its reporters (error before unknown)."""
    for state in ("error", "unknown"):
        if states.get(state):
            return state, states[state]
    return None


def _devlink_health(sample: Sample) -> str | None:
    """``healthy`` when every devlink health reporter of the interface's device and port is,
    else ``error`` or ``unknown`` naming the reporters (the worst state wins); None when the
    interface has no reporters (no devlink device, or devlink not readable)."""
    states = _reporter_states(sample)
    if not states:
        return None
    bad = _unhealthy(states)
    return "healthy" if bad is None else f"{bad[0]}: " + ", ".join(f"{h} {r}" for h, r in bad[1])


def _without_recovery(sample: Sample) -> set[tuple[str, str]]:
    """(devlink handle, reporter) of the reporters that have no recover operation
    (nic_devlink_health_recoverable 0), handles as in _reporter_states."""
    out = set()
    for key, value in sample.gauges.items():
        if key.metric == DEVLINK_HEALTH_RECOVERABLE.name and not value:
            labels = dict(key.labels)
            port = labels.get("devlink_port", "")
            out.add((labels["devlink"] + (f"/{port}" if port else ""), labels["reporter"]))
    return out


def _pending(sample: Sample) -> dict[str, list[str]]:
    """devlink handle -> components flashed and not activated (pending 1), from
    nic_firmware_activation_pending; handles whose components all compare equal map to []."""
    out: dict[str, list[str]] = {}
    for key, value in sample.gauges.items():
        if key.metric == metrics.FIRMWARE_PENDING.name:
            labels = dict(key.labels)
            out.setdefault(labels["devlink"], [])
            if value:
                out[labels["devlink"]].append(labels["component"])
    return out


def _version(sample: Sample, handle: str, slot: str, component: str) -> str:
    for key in sample.gauges:
        if key.metric == metrics.FIRMWARE_INFO.name:
            labels = dict(key.labels)
            if (labels["devlink"], labels["slot"], labels["component"]) == (
                    handle, slot, component):
                return labels["version"]
    return "?"


def _firmware_activated(sample: Sample) -> str | None:
    """``activated`` when every firmware component with a readable running and stored
    version runs the stored one; else ``pending:`` naming each component, its stored and
    running versions; None without such a component (no devlink dev info, or a driver
    that reports no stored versions)."""
    pending = _pending(sample)
    if not pending:
        return None
    parts = [f"{handle} {c} stored {_version(sample, handle, 'stored', c)} running "
             f"{_version(sample, handle, 'running', c)}"
             for handle, components in sorted(pending.items()) for c in sorted(components)]
    return "activated" if not parts else "pending: " + "; ".join(parts)


# rx_queue_balance: the busiest receive queue may take at most this many times its fair
# share (1 / queues in use). With flows of equal rate hashed uniformly, the busiest of 8 queues
# carrying 64 flows (8 per queue) is 1.53x fair on average and above 2x in 1.5% of draws, of
# 16 queues carrying 128 flows 1.67x and 4.1% (10,000 draws each, docs/receive-path.md): a
# well-configured NIC with many flows stays under 2x; one that concentrates a few large
# flows, a short indirection table or a hash over addresses only does not.
RX_BALANCE_LIMIT = 2.0
BALANCED = "balanced"


def _queue_irq_nodes(sample: Sample) -> dict[int, str]:
    """irq -> node label ("" several or none) of every queue interrupt (nic_irq_info)."""
    out = {}
    for key in sample.gauges:
        if key.metric == IRQ_INFO:
            labels = dict(key.labels)
            if labels.get("queue"):
                out[int(labels["irq"])] = labels.get("node", "")
    return out


def _irq_placement(sample: Sample) -> str | None:
    """``local`` when every queue interrupt is delivered to CPUs of the NIC's node, else
    which interrupts are elsewhere; None without queue interrupts (nic_irq_info)."""
    nodes = _queue_irq_nodes(sample)
    if not nodes:
        return None
    nic = nic_node(sample.reading)
    if nic is None:
        return "unknown: the NIC's NUMA node is not known"
    off: dict[str, list[int]] = {}
    for irq, node in sorted(nodes.items()):
        if node != str(nic):
            off.setdefault(node, []).append(irq)
    if not off:
        return "local"
    parts = [f"irq {cpulist(irqs)} " + (f"on node {node}" if node else "on several nodes")
             for node, irqs in sorted(off.items())]
    return f"remote: {'; '.join(parts)}, NIC on node {nic}"


def _rx_balance(sample: Sample) -> str | None:
    """``balanced`` when the busiest receive queue holds at most RX_BALANCE_LIMIT times its
    fair share of the packets the queue counters hold (since each started), else which queue
    and CPU; "too few packets" below normalize.rxpath.MIN_WINDOW_PACKETS; None without
    per-queue counters."""
    if not any(k.metric == RX_QUEUE_PACKETS.name for k in sample.counters):
        return None
    spread = cumulative_balance(sample.counters, sample.gauges)
    if spread is None:
        return "too few packets"
    if spread.ratio <= RX_BALANCE_LIMIT:
        return BALANCED
    top = spread.busiest
    cpus = top.cpus.cpus
    return (f"queue {top.queue} above {RX_BALANCE_LIMIT:g}x fair"
            + (f", CPU {cpulist(cpus)}" if cpus else ""))


WITHIN_LIMIT = "within_limit"


def _lane_bers(sample: Sample) -> list[tuple[str, float, str]]:
    """(lane, pre-FEC BER, fec code) of every nic_pre_fec_ber series, worst first."""
    out = []
    for key, value in sample.gauges.items():
        if key.metric == metrics.PRE_FEC_BER.name:
            labels = dict(key.labels)
            out.append((labels.get("lane", ""), value, labels.get("fec", "")))
    return sorted(out, key=lambda item: -item[1])


def _fec_lane_ber(sample: Sample) -> str | None:
    """``within_limit``, or the worst lane above its code's threshold (named
    lanes before "total"); None without a ratio (one poll, no lane rate, no FEC counters)."""
    lanes = _lane_bers(sample)
    if not lanes:
        return None
    over = [(lane, ber, fec) for lane, ber, fec in lanes
            if (code := FEC_CODES.get(fec)) is not None
            and ber > code.threshold]
    if not over:
        return WITHIN_LIMIT if any(fec in FEC_CODES for _, _, fec in lanes) else None
    lane, ber, fec = min(over, key=lambda item: (item[0] == "total", -item[1]))
    limit = FEC_CODES[fec].threshold
    return f"lane {lane} BER {ber:.1e} > {limit:.1e} ({fec})"


# module_vdm: a CMIS module's own VDM measurements of its lanes (docs/link-physics.md) against
# the module's own warning thresholds: the current pre-FEC BER below its high warning, the
# eSNR above its low warning. A threshold of 0 is none.
WITHIN_THRESHOLDS = "within_thresholds"
_VDM_LIMITS = ((metrics.VDM_PRE_FEC_BER, metrics.VDM_PRE_FEC_BER_THRESHOLD, "high_warning"),
               (metrics.VDM_ESNR, metrics.VDM_ESNR_THRESHOLD, "low_warning"))


def _module_vdm(sample: Sample) -> str | None:
    """``within_thresholds``, or each lane past the module's warning (pre-FEC BER at or above
    its high warning, eSNR at or below its low warning); None when no observable has a
    threshold to compare with (no module collector, no VDM, no thresholds)."""
    over, compared = [], False
    for family, limit_family, level in _VDM_LIMITS:
        for key, value in sorted(sample.gauges.items()):
            labels = dict(key.labels)
            if key.metric != family.name or labels.get("stat", "current") != "current":
                continue
            limit = sample.gauge(limit_family.name, **labels, level=level)
            if not limit:
                continue
            compared = True
            high = level.startswith("high")
            if (value >= limit) if high else (value <= limit):
                name = "pre-FEC BER" if family is metrics.VDM_PRE_FEC_BER else "eSNR"
                over.append(f"lane {labels['lane']} {labels['side']} {name} {value:.3g} "
                            f"{'>=' if high else '<='} {limit:.3g}")
    if over:
        return "; ".join(over)
    return WITHIN_THRESHOLDS if compared else None


def _roce_ports(sample: Sample) -> list[RdmaPort]:
    return [p for p in sample.rdma_ports if p.link_layer == "Ethernet"]


def _gid_for_ip(sample: Sample) -> bool | None:
    """True when every IP address of the interface has a RoCE v2 GID on its RoCE ports;
    None without a RoCE port or where addresses or GIDs were not read."""
    missing = _without_gid(sample)
    return None if missing is None else not missing


def _without_gid(sample: Sample) -> list[str] | None:
    found = [rdma.addresses_without_gid(p) for p in _roce_ports(sample)]
    known = [m for m in found if m is not None]
    if not known:
        return None
    return sorted({a for m in known for a in m})


def _rdma_mtu(sample: Sample) -> int | None:
    """The RoCE active MTU the kernel derives from the netdev MTU (the smallest over the
    interface's RoCE ports); None without a RoCE port."""
    mtus = [rdma.iboe_mtu(p.netdev_mtu) for p in _roce_ports(sample) if p.netdev_mtu]
    known = [m for m in mtus if m is not None]
    if known:
        return min(known)
    mtu = sample.state.mtu
    return rdma.iboe_mtu(mtu) if _roce_ports(sample) and mtu else None
