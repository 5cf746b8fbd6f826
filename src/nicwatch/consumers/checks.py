"""Expectations: the configuration a host's NICs must have, checked against every poll.

A tuning service that predates a link silently skips it (the lab report's 1,024-entry ring
among 8,192s). So the property is named in the configuration file, and every poll checks
it against the interfaces that exist now. Two TOML sections, both arrays of tables:

``[[expect]]`` sets values. Selectors pick the interfaces (all given ones must match):
``interfaces`` (regex on the name), ``driver`` (regex), ``pci_address`` (regex), each
matched against the whole value, and ``all = true`` (every interface backed by a device).
Properties, any subset, each compared with the gauge of the same meaning in the Sample
(the full table is in docs/expectations.md): ``rx_ring``, ``tx_ring``, ``channels``
(a number or ``"max"``), ``mtu``, ``link_speed`` (``"400G"``), ``pcie_speed`` (GT/s,
``"gen4"`` or ``"max"``), ``pcie_width`` (lanes or ``"max"``), ``fec_mode``, ``pause_autoneg``,
``pause_rx``, ``pause_tx`` (booleans), ``pfc`` (exactly the priorities with PFC on,
``[3]``; gauge ``nic_pfc_enabled{priority}``) and the RoCE QoS profile: ``trust``
(``"dscp"``/``"pcp"``), ``dscp_map`` (``{ 26 = 3, 48 = 6 }``: each listed DSCP must map to
that priority; others are not compared), ``ecn`` (``[3]``: ECN on at both the reaction and
notification point of each listed priority), ``cnp_priority``, ``cnp_dscp`` and ``ets``
(``{ prio_tc = [...], tc_bw = [...], tsa = [...] }``, any subset of the three, eight values
each), ``sriov_vfs`` (VFs enabled on a PF, a number or ``"max"``; needs --collector.vfs) and
``devlink_health = "healthy"`` (every devlink health reporter of the port and its device),
``irq_numa_local = true`` (every queue interrupt delivered to CPUs of the NIC's NUMA node) and
``rx_queue_balance = "balanced"`` (no receive queue took more than RX_BALANCE_LIMIT times its
fair share of the packets its counters hold; docs/receive-path.md) and
``firmware_activated = true`` (no firmware image flashed and not activated: devlink dev info's
stored versions equal the running ones).
In a ``[[consistent]]`` group ``dscp_map``, ``ecn`` and ``ets`` compare the whole
map, set or table.

``"max"`` is the device's own maximum in the same poll (ring and channel maxima from the
driver; for PCIe the NIC function's capability, ``kind="max"`` at hop 0, not what the slot
allows: a lane-split slot must fail). ``channels`` counts combined channels, or rx channels
on drivers without combined ones (veth). When several ``[[expect]]`` sections set the same
property for one interface, the last one in the file wins, so a general section can be
followed by specific ones.

``[[consistent]]`` needs no numbers: every interface it selects must have the same value of
each property in ``checks`` (the check is named ``consistent_<property>``). The reference is
the most common value among the members; a tie goes to the larger value, since tuning
raises rings, MTU and speed. ``group`` names the group in messages.

Every check compares for equality. A property the kernel or driver does not report fails
with actual ``"absent"``: nothing is known to be right. A selector matching no interface is
a warning, not silence. Section indexes in messages count from 1: ``expect[2].rx_ring`` is
the ``rx_ring`` key of the second ``[[expect]]`` table.

Evaluation is pure: it reads Samples (gauges, identity, netclass), never the kernel.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import structlog

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.consumers.linkphysics import with_physics
from nicwatch.metrics import (
    DEVLINK_HEALTH_RECOVERABLE,
    DEVLINK_HEALTH_REPORTER_STATE,
    ETS_PRIORITY_TC,
    ETS_TC_BANDWIDTH_RATIO,
    ETS_TC_TSA_INFO,
    LINK_DOWN_REASON,
    PFC_ENABLED,
    QOS_DSCP_PRIORITY,
    QOS_TRUST_INFO,
    ROCE_CNP_DSCP,
    ROCE_CNP_PRIORITY,
    ROCE_ECN_ENABLED,
    RX_QUEUE_PACKETS,
    SRIOV_VFS,
)
from nicwatch.model import FEC_LINK_MODES, ExtraFamily, Labels, RdmaPort, Sample, SeriesKey
from nicwatch.normalize import rdma
from nicwatch.normalize.linkphysics import FEC_CODES
from nicwatch.normalize.pcie import HIDDEN_LINK_PARTNER, LINK_STATE
from nicwatch.normalize.rxpath import IRQ_INFO, cpulist, cumulative_balance, nic_node
from nicwatch.printable import shell_word
from nicwatch.values import ConfigError, did_you_mean, parse_regex
from nicwatch.values.regex import Regex, compile_regex

if TYPE_CHECKING:  # annotations only (config imports this module, so not Config)
    from nicwatch.collect import PollResult
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample

log = structlog.get_logger("nicwatch")  # expectation warnings, as the daemon logged them

SECTIONS = ("expect", "consistent")
MAX = "max"
ABSENT = "absent"
SELECTOR_KEYS = ("interfaces", "driver", "pci_address", "all")
CONSISTENT_PREFIX = "consistent_"
U32_MAX = 2**32 - 1
PCIE_GENERATIONS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}
PCIE_WIDTHS = (1, 2, 4, 8, 12, 16, 32)
FEC_MODES = tuple(FEC_LINK_MODES.values())
PRIORITIES = range(8)
RDMA_MTUS = (256, 512, 1024, 2048, 4096)

VIOLATION, CHECK_COUNT = metrics.EXPECTATION_VIOLATION, metrics.EXPECTATION_CHECKS
FAMILIES = (VIOLATION, CHECK_COUNT)


# --------------------------------------------------------------------------- reading Samples


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


ETS_KEYS = ("prio_tc", "tc_bw", "tsa")
TSA_NAMES = ("strict", "cbs", "ets", "vendor")


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


def _devlink_fix(sample: Sample, wanted: str) -> str:
    """Diagnose each reporter that is not healthy; recover it where devlink can (a reporter
    without a recover operation answers EOPNOTSUPP): show its stored dump instead."""
    bad = _unhealthy(_reporter_states(sample))
    if bad is None:
        return "devlink health show"
    manual = _without_recovery(sample)
    steps = []
    for h, r in bad[1]:
        step = f"devlink health diagnose {shell_word(h)} reporter {shell_word(r)}; "
        step += (f"devlink health dump show {shell_word(h)} reporter {shell_word(r)}"
                 if (h, r) in manual else
                 f"devlink health recover {shell_word(h)} reporter {shell_word(r)}")
        steps.append(step)
    return "; ".join(steps)


def parse_activated(value: Any) -> str:
    if value is True:
        return "activated"
    raise ValueError(f"expected true (every firmware component runs the image stored on the "
                     f"device), got {value!r}")


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


def _firmware_fix(sample: Sample, wanted: str) -> str:
    handles = sorted(h for h, components in _pending(sample).items() if components)
    steps = [f"devlink dev reload {shell_word(h)} action fw_activate" for h in handles]
    return ("; ".join(steps) or "devlink dev info") + (
        "  # where the driver supports fw_activate (devlink dev show lists reload actions); "
        "else a cold reboot (a warm reboot does not reset every device's firmware)")


# rx_queue_balance: the busiest receive queue may take at most this many times its fair
# share (1 / queues in use). With flows of equal rate hashed uniformly, the busiest of 8 queues
# carrying 64 flows (8 per queue) is 1.53x fair on average and above 2x in 1.5% of draws, of
# 16 queues carrying 128 flows 1.67x and 4.1% (10,000 draws each, docs/receive-path.md): a
# well-configured NIC with many flows stays under 2x; one that concentrates a few large
# flows, a short indirection table or a hash over addresses only does not.
RX_BALANCE_LIMIT = 2.0
BALANCED = "balanced"


def parse_local(value: Any) -> str:
    if value is True:
        return "local"
    raise ValueError(f"expected true (every queue interrupt on the NIC's NUMA node), got "
                     f"{value!r}")


def parse_balanced(value: Any) -> str:
    if value == BALANCED:
        return BALANCED
    raise ValueError(f"expected \"balanced\" (no receive queue above {RX_BALANCE_LIMIT:g}x its "
                     f"fair share), got {value!r}")


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


def _irq_fix(sample: Sample, wanted: str) -> str:
    """Pin each interrupt off the NIC's node to one of the node's CPUs, in turn (as mlx5
    and ice spread their vectors); irqbalance would move them again unless told not to."""
    nic = nic_node(sample.reading)
    rx = sample.reading.rxpath
    local = sorted(c for c, n in (rx.cpu_nodes if rx else {}).items() if n == nic)
    if nic is None or not local:
        return "# the NIC's NUMA node or its CPUs are not known: cat /sys/class/net/" \
            f"{sample.identity.device}/device/numa_node"
    off = [irq for irq, node in sorted(_queue_irq_nodes(sample).items()) if node != str(nic)]
    steps = [f"echo {local[i % len(local)]} > /proc/irq/{irq}/smp_affinity_list"
             for i, irq in enumerate(off)]
    return "; ".join(steps) + (f"  # node {nic} CPUs {cpulist(local)}; with irqbalance "
                               "running, ban these interrupts (--banirq) or it moves them")


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


def _balance_fix(sample: Sample, wanted: str) -> str:
    spread = cumulative_balance(sample.counters, sample.gauges)
    dev = _dev(sample)
    if spread is None:
        return f"# too few packets to judge; ethtool -x {dev}"
    top = spread.busiest
    return (f"ethtool -x {dev}; ethtool -X {dev} equal {spread.in_use}  # queue {top.queue} "
            f"took {top.share:.0%} of {spread.packets} packets, {spread.ratio:.1f}x its fair "
            f"share; few large flows collide whatever the table: ethtool -n {dev} "
            "rx-flow-hash tcp4 (sdfn hashes the ports too)")


def _down_hint(sample: Sample) -> str | None:
    """Why the link is down, where the driver says (nic_link_down_reason): the hint of a
    check whose value a down link does not report (docs/link-physics.md)."""
    reasons = [dict(k.labels) for k in sample.gauges if k.metric == LINK_DOWN_REASON.name]
    if not reasons:
        return None
    why = ", ".join(r["reason"] + (f"/{r['subreason']}" if r.get("subreason") else "")
                    for r in reasons)
    return (f"# link down: {why} (the driver's extended link state); ethtool "
            f"{_dev(sample)}; nicwatch show")


WITHIN_LIMIT = "within_limit"
# A lane fails fec_lane_ber above its FEC code's threshold (normalize.linkphysics.FEC_CODES
# threshold: a decade below the code's limit, the NicPreFecBerHigh defaults).


def parse_within_limit(value: Any) -> str:
    if value == WITHIN_LIMIT:
        return WITHIN_LIMIT
    raise ValueError(f"expected \"within_limit\" (every lane's pre-FEC BER below "
                     f"its FEC code's threshold), got {value!r}")


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


def _fec_ber_fix(sample: Sample, wanted: str) -> str:
    worst = _fec_lane_ber(sample) or "no ratio"
    return (f"# hardware, not settable: {worst}: clean or reseat the optic or cable, swap it "
            f"to see whether the lane follows it; ethtool -I --show-fec {_dev(sample)}; "
            "nicwatch show")


# module_vdm: a CMIS module's own VDM measurements of its lanes (docs/link-physics.md) against
# the module's own warning thresholds: the current pre-FEC BER below its high warning, the
# eSNR above its low warning. A threshold of 0 is none.
WITHIN_THRESHOLDS = "within_thresholds"
_VDM_LIMITS = ((metrics.VDM_PRE_FEC_BER, metrics.VDM_PRE_FEC_BER_THRESHOLD, "high_warning"),
               (metrics.VDM_ESNR, metrics.VDM_ESNR_THRESHOLD, "low_warning"))


def parse_within_thresholds(value: Any) -> str:
    if value == WITHIN_THRESHOLDS:
        return WITHIN_THRESHOLDS
    raise ValueError(f"expected \"{WITHIN_THRESHOLDS}\" (every lane's CMIS VDM pre-FEC BER "
                     f"below and eSNR above the module's own warning thresholds), got {value!r}")


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


def _module_vdm_fix(sample: Sample, wanted: str) -> str:
    return (f"# hardware, not settable: {_module_vdm(sample) or 'no VDM'}: media side, clean "
            "or reseat the connectors and check the far end; host side, reseat the module or "
            f"try another cage; nicwatch module decode (ethtool -m {_dev(sample)} hex on)")


def _sriov_fix(sample: Sample, wanted: int) -> str:
    """The kernel refuses to change one non-zero VF count to another (EBUSY): back to 0
    first, which removes the VFs there are."""
    path = shell_word(f"/sys/class/net/{sample.identity.device}/device/sriov_numvfs")
    return f"echo 0 > {path} && echo {wanted} > {path}" if wanted else f"echo 0 > {path}"


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


def _gid_fix(sample: Sample, wanted: bool) -> str:
    missing = _without_gid(sample) or []
    ports = ", ".join(p.key for p in _roce_ports(sample))
    bdf = sample.identity.pci_address or "<pci address>"
    return (f"# no RoCE v2 GID for {', '.join(missing)} on {ports}: RoCE traffic to that "
            f"address cannot be set up. Check RoCE is on (devlink dev param show pci/{bdf} "
            f"name enable_roce) and the address is not tentative (ip -6 addr show dev "
            f"{sample.identity.device}); ib_core adds the GIDs when an address is added: "
            f"re-add it (ip addr del ADDR/LEN dev {sample.identity.device} && ip addr add "
            f"ADDR/LEN dev {sample.identity.device})")


def _rdma_mtu(sample: Sample) -> int | None:
    """The RoCE active MTU the kernel derives from the netdev MTU (the smallest over the
    interface's RoCE ports); None without a RoCE port."""
    mtus = [rdma.iboe_mtu(p.netdev_mtu) for p in _roce_ports(sample) if p.netdev_mtu]
    known = [m for m in mtus if m is not None]
    if known:
        return min(known)
    mtu = sample.state.mtu
    return rdma.iboe_mtu(mtu) if _roce_ports(sample) and mtu else None


def parse_rdma_mtu(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value in RDMA_MTUS:
        return value
    raise ValueError(f"expected an RDMA MTU ({', '.join(map(str, RDMA_MTUS))}), got {value!r}")


def _rdma_mtu_fix(sample: Sample, wanted: int) -> str:
    need = wanted + rdma.ROCE_HEADERS
    return (f"ip link set dev {_dev(sample)} mtu {need}  # RoCE MTU {wanted} needs a netdev "
            f"MTU of at least {need} (iboe_get_mtu: {rdma.ROCE_HEADERS} bytes of RoCE "
            "headers); every switch port on the path must carry it too")


# --------------------------------------------------------------------------- config values


def _count(maximum_allowed: bool, what: str) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if maximum_allowed and value == MAX:
            return MAX
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= U32_MAX:
            alt = ' or "max"' if maximum_allowed else ""
            raise ValueError(f"expected a positive number of {what}{alt}, got {value!r}")
        return value
    return parse


_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*([MG])(?:b/s|bps)?", re.IGNORECASE)


def parse_link_speed(value: Any) -> int:
    """Mb/s from ``"400G"``, ``"2.5G"``, ``"100M"`` (also ``"400Gb/s"``)."""
    m = _SPEED.fullmatch(value.strip()) if isinstance(value, str) else None
    if m:
        # Decimal, not float: "257.9G" is exactly 257900 Mb/s (float says 257899.99...).
        mbps = Decimal(m.group(1)) * (1000 if m.group(2).upper() == "G" else 1)
        if mbps == mbps.to_integral_value() and 0 < mbps <= U32_MAX:
            return int(mbps)
    raise ValueError(f"expected a link speed such as \"400G\", \"25G\" or \"100M\", got {value!r}")


def show_link_speed(mbps: int) -> str:
    if mbps >= 1000 and mbps % 100 == 0:
        return f"{mbps // 1000}G" if mbps % 1000 == 0 else f"{mbps / 1000}G"
    return f"{mbps}M"


def parse_pcie_speed(value: Any) -> float | str:
    """GT/s per lane from a number (16, 32.0), a generation ("gen4") or "max"."""
    if value == MAX:
        return MAX
    if isinstance(value, str):
        m = re.fullmatch(r"gen([1-7])", value.strip().lower())
        if m:
            return PCIE_GENERATIONS[int(m.group(1))]
    elif (isinstance(value, (int, float)) and not isinstance(value, bool)
          and float(value) in PCIE_GENERATIONS.values()):
        return float(value)
    rates = ", ".join(f"{r:g}" for r in PCIE_GENERATIONS.values())
    raise ValueError(f"expected a PCIe speed in GT/s ({rates}), a generation such as \"gen4\" "
                     f"or \"max\", got {value!r}")


def parse_pcie_width(value: Any) -> int | str:
    if value == MAX:
        return MAX
    if isinstance(value, int) and not isinstance(value, bool) and value in PCIE_WIDTHS:
        return value
    raise ValueError(f"expected a PCIe link width ({', '.join(map(str, PCIE_WIDTHS))}) or "
                     f"\"max\", got {value!r}")


def parse_fec_mode(value: Any) -> str:
    if isinstance(value, str) and value.lower() in FEC_MODES:
        return value.lower()
    raise ValueError(f"expected a FEC mode ({', '.join(FEC_MODES)}), got {value!r}")


def parse_flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {value!r}")


def parse_priorities(value: Any) -> tuple[int, ...]:
    if (isinstance(value, list) and len(set(value)) == len(value)
            and all(isinstance(p, int) and not isinstance(p, bool) and p in PRIORITIES
                    for p in value)):
        return tuple(sorted(value))
    raise ValueError("expected the list of priorities (0-7, each once) that must have PFC "
                     f"enabled, such as [3], or [] for none; got {value!r}")


def parse_trust(value: Any) -> str:
    if value in ("dscp", "pcp"):
        return str(value)
    raise ValueError(f"expected \"dscp\" or \"pcp\", got {value!r}")


def parse_vfs(value: Any) -> Any:
    if value == MAX:
        return MAX
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 65535:
        return value
    raise ValueError(f"expected a number of SR-IOV VFs (0-65535) or \"max\", got {value!r}")


def parse_healthy(value: Any) -> str:
    if value == "healthy":
        return str(value)
    raise ValueError(f"expected \"healthy\" (every devlink health reporter of the port and "
                     f"its device), got {value!r}")


def _small_int(limit: int, what: str) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit:
            return value
        raise ValueError(f"expected {what} (0-{limit}), got {value!r}")
    return parse


def parse_dscp_map(value: Any) -> tuple[tuple[int, int], ...]:
    """``{ 26 = 3, 48 = 6 }`` (TOML keys are strings) -> ((26, 3), (48, 6))."""
    pairs = []
    if isinstance(value, dict) and value:
        for dscp, prio in value.items():
            d = int(dscp) if isinstance(dscp, str) and dscp.isdigit() else -1
            if not 0 <= d <= 63 or isinstance(prio, bool) or prio not in PRIORITIES:
                break
            pairs.append((d, prio))
        else:
            return tuple(sorted(pairs))
    raise ValueError("expected a table of DSCP (0-63) = priority (0-7), such as "
                     f"{{ 26 = 3, 48 = 6 }}; got {value!r}")


def parse_ecn(value: Any) -> tuple[int, ...]:
    try:
        return parse_priorities(value)
    except ValueError:
        raise ValueError("expected the list of priorities (0-7, each once) that must have ECN "
                         f"on at both reaction and notification point, such as [3]; got "
                         f"{value!r}") from None


def parse_ets(value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``{ prio_tc = [8 TCs], tc_bw = [8 percents], tsa = [8 names] }``, any subset."""
    checks = {"prio_tc": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 8,
              "tc_bw": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100,
              "tsa": lambda v: v in TSA_NAMES}
    if (isinstance(value, dict) and value and set(value) <= set(ETS_KEYS)
            and all(isinstance(v, list) and len(v) == 8 and all(map(checks[k], v))
                    for k, v in value.items())):
        return tuple((k, tuple(value[k])) for k in ETS_KEYS if k in value)
    raise ValueError("expected a table with any of prio_tc (8 traffic classes 0-7), tc_bw "
                     f"(8 percents) and tsa (8 of {', '.join(TSA_NAMES)}); got {value!r}")


def _subset(actual: tuple[Any, ...], wanted: tuple[Any, ...]) -> tuple[Any, ...]:
    """The part of an actual (key, value) table that a wanted one names (None: missing)."""
    have = dict(actual)
    return tuple((k, have.get(k)) for k, _ in wanted)


def _show_pairs(pairs: tuple[Any, ...]) -> str:
    return ",".join(f"{k}:{'none' if v is None else v}" for k, v in pairs) or "none"


def _show_ets(table: tuple[Any, ...]) -> str:
    return " ".join(f"{k}=" + ",".join(map(str, v)) if v is not None else f"{k}=none"
                    for k, v in table)


def _ecn_fix(sample: Sample, wanted: tuple[int, ...]) -> str:
    states = _ecn_states(sample)
    dev = sample.identity.device
    return " && ".join(
        f"echo 1 > {shell_word(f'/sys/class/net/{dev}/ecn/roce_{point}/enable/{p}')}"
        for p in wanted for point in ("rp", "np") if not states.get((point, p)))


def _trust_fix(sample: Sample, wanted: str) -> str:
    if sample.identity.driver == "mlx5_core":
        return f"mlnx_qos -i {_dev(sample)} --trust {wanted}"
    return f"dcb apptrust set dev {_dev(sample)} order {wanted}"


def _ets_fix(sample: Sample, wanted: tuple[Any, ...]) -> str:
    words = {"prio_tc": "prio-tc", "tc_bw": "tc-bw", "tsa": "tc-tsa"}
    return f"dcb ets set dev {_dev(sample)} " + " ".join(
        words[k] + " " + " ".join(f"{i}:{x}" for i, x in enumerate(v)) for k, v in wanted)


def _on(value: bool) -> str:
    return "on" if value else "off"


# --------------------------------------------------------------------------- properties


def _pcie_unknown(sample: Sample, reason: str) -> bool:
    """Whether the PCIe verdict is unknown for ``reason`` (nic_pcie_verdict_unknown)."""
    return sample.pcie_verdict is not None and reason in sample.pcie_verdict.unknown


def _pcie_fix(limit: str) -> Callable[[Sample, Any], str]:
    """The plain hint for a NIC link below what is wanted (see :func:`_pcie_hint` for the
    cases where the card itself is not at fault)."""
    def fix(sample: Sample, _wanted: Any) -> str:
        bdf = sample.identity.pci_address or "<pci address>"
        if sample.pcie_verdict is not None and limit in sample.pcie_verdict.slot_limits:
            cause = "the slot allows less than the card: check the BIOS lane split (bifurcation)"
        else:
            cause = "the link trained below card and slot: reseat the card, check the riser"
        return f"# hardware, not settable: {cause}; lspci -vv -s {bdf}"
    return fix


def _pcie_hint(prop: Property, sample: Sample, wanted: Any, actual: Any,
               peers: Sequence[Sample]) -> str:
    """Which side is below its own capability decides the hint: a card running at its own
    maximum, above what is expected, is not the broken one; a card whose maximum is below
    the expectation is a different model, not a bad link."""
    bdf = sample.identity.pci_address or "<pci address>"
    dev = sample.identity.device
    own_max = _maximum(prop, sample)
    if actual is None:
        if _pcie_unknown(sample, LINK_STATE):
            return (f"# hardware: the link state of {dev} is unknown (link down or in recovery, "
                    f"or the function in D3cold; nicwatch show); lspci -vv -s {bdf}")
        return f"# not reported: {dev} has no readable PCIe link; lspci -vv -s {bdf}"
    if actual > wanted:
        cause = (f"{dev} runs at {prop.show(actual)}, above the expected {prop.show(wanted)}: "
                 "its link is not the broken one")
        below = [p.identity.device for p in peers if p is not sample
                 and (a := prop.actual(p)) is not None and (m := _maximum(prop, p)) is not None
                 and a < m]
        if below:
            cause += f"; below their own maximum: {', '.join(below)} (nicwatch show)"
        elif peers:
            cause += "; the others run at their own maximum: different cards or slots"
        else:
            cause += "; update the expectation"
        return f"# hardware, not settable: {cause}"
    if own_max is not None and wanted > own_max:
        return (f"# hardware, not settable: the card's own maximum is {prop.show(own_max)}, "
                f"below {prop.show(wanted)}: a different card model, not a link fault; "
                f"lspci -vv -s {bdf}")
    if _pcie_unknown(sample, HIDDEN_LINK_PARTNER):
        return (f"# hardware, not settable: {dev} trained below the card's maximum and its "
                "link partner is the host's slot, which this VM cannot see: check on the host")
    return prop.fix(sample, wanted)


def _fix(prop: Property, sample: Sample, wanted: Any, actual: Any,
         peers: Sequence[Sample]) -> str | None:
    """The command (or hardware hint) for a failed check; a count above the driver's
    maximum is clamped to it, and the hint says so."""
    if prop.name in PCIE_PROPERTIES:
        return _pcie_hint(prop, sample, wanted, actual, peers)
    if actual is None:
        return _down_hint(sample)
    top = prop.maximum(sample) if prop.maximum else None
    if isinstance(wanted, int) and isinstance(top, int) and wanted > top:
        if actual == top:
            return (f"# not settable: {prop.show(wanted)} is above the maximum {prop.show(top)} "
                    "the driver reports, and it is already there")
        return (f"{prop.fix(sample, top)}  # the driver's maximum; {prop.show(wanted)} is "
                "above it")
    return prop.fix(sample, wanted)


@dataclass(frozen=True, slots=True)
class Property:
    """One checkable property: how the configuration spells it, where a Sample has it, how
    it is shown in labels and which command would set it."""

    name: str
    parse: Callable[[Any], Any]  # config value -> wanted value (or MAX); ValueError if bad
    actual: Callable[[Sample], Any]  # None: not reported
    maximum: Callable[[Sample], Any] | None  # for "max"; None: "max" not accepted
    show: Callable[[Any], str]  # a value as a short label string
    fix: Callable[[Sample, Any], str]  # command that would set the wanted value
    table: Callable[[Any], Any] = lambda v: v  # wanted value back to its TOML form
    # (actual, wanted) -> the part of actual an [[expect]] compares; None: all of it
    project: Callable[[Any, Any], Any] | None = None


def _maximum(prop: Property, sample: Sample) -> Any:
    """What "max" means for ``prop`` on ``sample``; None where "max" is not accepted."""
    return None if prop.maximum is None else prop.maximum(sample)


def _dev(sample: Sample) -> str:
    return shell_word(sample.identity.device)


PROPERTIES: Mapping[str, Property] = {p.name: p for p in (
    Property("rx_ring", _count(True, "descriptors"), _ring("rx"), _ring("rx_max"), str,
             lambda s, v: f"ethtool -G {_dev(s)} rx {v}"),
    Property("tx_ring", _count(True, "descriptors"), _ring("tx"), _ring("tx_max"), str,
             lambda s, v: f"ethtool -G {_dev(s)} tx {v}"),
    Property("mtu", _count(False, "bytes"), lambda s: s.state.mtu, None,
             str, lambda s, v: f"ip link set dev {_dev(s)} mtu {v}"),
    Property("link_speed", parse_link_speed, _link_speed_mbps, None, show_link_speed,
             lambda s, v: f"ethtool -s {_dev(s)} speed {v} duplex full", show_link_speed),
    Property("pcie_speed", parse_pcie_speed, _pcie_speed(True), _pcie_speed(False),
             lambda v: f"{v:g}GT/s", _pcie_fix("speed")),
    Property("pcie_width", parse_pcie_width, _pcie_width(True), _pcie_width(False),
             lambda v: f"x{v}", _pcie_fix("width")),
    Property("fec_mode", parse_fec_mode, _fec_active, None, str,
             lambda s, v: f"ethtool --set-fec {_dev(s)} encoding {v}"),
    Property("pause_autoneg", parse_flag, _pause("autoneg"), None,
             _on, lambda s, v: f"ethtool -A {_dev(s)} autoneg {_on(v)}"),
    Property("pause_rx", parse_flag, _pause("rx"), None, _on,
             lambda s, v: f"ethtool -A {_dev(s)} rx {_on(v)}"),
    Property("pause_tx", parse_flag, _pause("tx"), None, _on,
             lambda s, v: f"ethtool -A {_dev(s)} tx {_on(v)}"),
    Property("pfc", parse_priorities, _pfc_enabled, None,
             lambda v: ",".join(map(str, v)) or "none",
             lambda s, v: f"dcb pfc set dev {_dev(s)} prio-pfc "
                          + " ".join(f"{p}:{_on(p in v)}" for p in PRIORITIES), list),
    Property("channels", _count(True, "channels"), _channels, _channels_max, str,
             lambda s, v: f"ethtool -L {_dev(s)} {_channel_type(s)} {v}"),
    Property("trust", parse_trust, _trust, None, str, _trust_fix),
    Property("dscp_map", parse_dscp_map, _dscp_map, None, _show_pairs,
             lambda s, v: f"dcb app replace dev {_dev(s)} dscp-prio "
                          + " ".join(f"{d}:{p}" for d, p in v),
             lambda v: {str(d): p for d, p in v}, _subset),
    Property("ecn", parse_ecn, _ecn, None, lambda v: ",".join(map(str, v)) or "none", _ecn_fix,
             list, lambda actual, wanted: tuple(p for p in actual if p in wanted)),
    Property("cnp_priority", _small_int(7, "an 802.1p priority"),
             lambda s: _int(_gauge(s, ROCE_CNP_PRIORITY.name)), None, str,
             lambda s, v: f"echo {v} > " + shell_word(
                 f"/sys/class/net/{s.identity.device}/ecn/roce_np/cnp_802p_prio")),
    Property("cnp_dscp", _small_int(63, "a DSCP"),
             lambda s: _int(_gauge(s, ROCE_CNP_DSCP.name)), None, str,
             lambda s, v: f"echo {v} > " + shell_word(
                 f"/sys/class/net/{s.identity.device}/ecn/roce_np/cnp_dscp")),
    Property("ets", parse_ets, _ets, None, _show_ets, _ets_fix,
             lambda v: {k: list(x) for k, x in v}, _subset),
    Property("sriov_vfs", parse_vfs,
             lambda s: _int(_gauge(s, SRIOV_VFS.name, ("state", "enabled"))),
             lambda s: _int(_gauge(s, SRIOV_VFS.name, ("state", "total"))), str, _sriov_fix),
    Property("devlink_health", parse_healthy, _devlink_health, None, str, _devlink_fix),
    Property("roce_gid_for_ip", parse_flag, _gid_for_ip, None,
             lambda v: "true" if v else "false", _gid_fix),
    Property("rdma_mtu", parse_rdma_mtu, _rdma_mtu, None, str, _rdma_mtu_fix),
    Property("irq_numa_local", parse_local, _irq_placement, None, str, _irq_fix,
             lambda v: True),
    Property("rx_queue_balance", parse_balanced, _rx_balance, None, str, _balance_fix),
    Property("firmware_activated", parse_activated, _firmware_activated, None, str,
             _firmware_fix, lambda v: True),
    Property("fec_lane_ber", parse_within_limit, _fec_lane_ber, None, str, _fec_ber_fix),
    Property("module_vdm", parse_within_thresholds, _module_vdm, None, str, _module_vdm_fix),
)}
CHECKS: tuple[str, ...] = tuple(PROPERTIES)
PCIE_PROPERTIES = ("pcie_speed", "pcie_width")


# --------------------------------------------------------------------------- parsed config


@dataclass(frozen=True, slots=True)
class Selector:
    """Which interfaces a section applies to; every given criterion must match."""

    interfaces: str | None = None
    driver: str | None = None
    pci_address: str | None = None
    all: bool = False
    # the three patterns compiled once, RE2 (values.regex)
    _compiled: tuple[Regex | None, ...] = field(default=(), init=False, compare=False,
                                                repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(
            None if p is None else compile_regex(p)
            for p in (self.interfaces, self.driver, self.pci_address)))

    def selects(self, sample: Sample) -> bool:
        ident = sample.identity
        for regex, value in zip(self._compiled, (ident.device, ident.driver, ident.pci_address),
                                strict=True):
            if regex is not None and (value is None or not regex.fullmatch(value)):
                return False
        return not self.all or sample.netclass.device_path is not None

    def describe(self) -> str:
        parts = [f"{k} = {getattr(self, k)!r}" for k in SELECTOR_KEYS[:3]
                 if getattr(self, k) is not None]
        return ", ".join(parts + (["all = true"] if self.all else []))

    def as_table(self) -> dict[str, Any]:
        table: dict[str, Any] = {k: getattr(self, k) for k in SELECTOR_KEYS[:3]
                                 if getattr(self, k) is not None}
        if self.all:
            table["all"] = True
        return table


@dataclass(frozen=True, slots=True)
class Expect:
    """One ``[[expect]]`` table: ``wanted`` holds (property, value or MAX) in CHECKS order."""

    key: str  # "expect[1]"
    selector: Selector
    wanted: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Consistent:
    """One ``[[consistent]]`` table: ``checks`` are property names."""

    key: str  # "consistent[1]"
    group: str | None
    selector: Selector
    checks: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.key} ({self.group})" if self.group else self.key


@dataclass(frozen=True, slots=True)
class Expectations:
    path: str = ""
    expects: tuple[Expect, ...] = ()
    groups: tuple[Consistent, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.expects or self.groups)

    def as_table(self) -> dict[str, list[dict[str, Any]]]:
        """The TOML tables these expectations were parsed from, in canonical form."""
        table: dict[str, list[dict[str, Any]]] = {}
        if self.expects:
            table["expect"] = [
                {**e.selector.as_table(),
                 **{name: v if v == MAX else PROPERTIES[name].table(v) for name, v in e.wanted}}
                for e in self.expects]
        if self.groups:
            table["consistent"] = [
                {**({"group": g.group} if g.group else {}), **g.selector.as_table(),
                 "checks": list(g.checks)} for g in self.groups]
        return table


# --------------------------------------------------------------------------- parsing


def _fail(path: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: key {key!r}: {message}")


def _unknown(path: str, key: str, name: str, known: Sequence[str]) -> ConfigError:
    close = did_you_mean(name, known)
    hint = f"did you mean {close!r}? " if close else ""
    return _fail(path, key, f"unknown key ({hint}known: {', '.join(known)})")


def _tables(data: Mapping[str, Any], section: str, path: str) -> list[dict[str, Any]]:
    tables = data.get(section, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise _fail(path, section, f"expected an array of tables ([[{section}]]), "
                                   f"got {type(tables).__name__}")
    return tables


def _selector(table: dict[str, Any], key: str, path: str) -> Selector:
    values: dict[str, Any] = {}
    for name in SELECTOR_KEYS[:3]:
        if name in table:
            try:
                values[name] = parse_regex(table[name])
            except ValueError as e:
                raise _fail(path, f"{key}.{name}", str(e)) from None
    if "all" in table:
        if table["all"] is not True:
            raise _fail(path, f"{key}.all", f"expected true (leave it out otherwise), "
                                            f"got {table['all']!r}")
        values["all"] = True
    if not values:
        raise _fail(path, key, "no selector: set interfaces, driver, pci_address or all = true")
    return Selector(**values)


def _expect(table: dict[str, Any], key: str, path: str) -> Expect:
    known = (*SELECTOR_KEYS, *CHECKS)
    for name in table:
        if name not in known:
            raise _unknown(path, f"{key}.{name}", name, known)
    selector = _selector(table, key, path)
    wanted = []
    for name in CHECKS:
        if name in table:
            try:
                wanted.append((name, PROPERTIES[name].parse(table[name])))
            except ValueError as e:
                raise _fail(path, f"{key}.{name}", str(e)) from None
    if not wanted:
        raise _fail(path, key, f"no property to check: set at least one of {', '.join(CHECKS)}")
    return Expect(key, selector, tuple(wanted))


def _consistent(table: dict[str, Any], key: str, path: str) -> Consistent:
    known = ("group", *SELECTOR_KEYS, "checks")
    for name in table:
        if name not in known:
            raise _unknown(path, f"{key}.{name}", name, known)
    group = table.get("group")
    if group is not None and (not isinstance(group, str) or not group):
        raise _fail(path, f"{key}.group", f"expected a non-empty name, got {group!r}")
    checks = table.get("checks")
    if (not isinstance(checks, list) or not checks or len(set(checks)) != len(checks)
            or not all(isinstance(c, str) and c in PROPERTIES for c in checks)):
        raise _fail(path, f"{key}.checks", "expected a list of properties that must be equal "
                    f"across the group ({', '.join(CHECKS)}), each once; got {checks!r}")
    return Consistent(key, group, _selector(table, key, path), tuple(checks))


def parse_expectations(data: Mapping[str, Any], path: str) -> Expectations:
    """The ``[[expect]]`` and ``[[consistent]]`` tables of a parsed TOML document (other
    keys are left to nicwatch.config). Raises ConfigError naming ``path`` and the key."""
    expects = tuple(_expect(t, f"expect[{i}]", path)
                    for i, t in enumerate(_tables(data, "expect", path), 1))
    groups = tuple(_consistent(t, f"consistent[{i}]", path)
                   for i, t in enumerate(_tables(data, "consistent", path), 1))
    return Expectations(path, expects, groups)


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one interface. ``expected`` and ``actual`` are short label strings;
    ``note`` says where ``expected`` came from when it is not a configured number ("max",
    a group majority); ``fix`` is a command for a failed check when one is known."""

    device: str
    check: str
    expected: str
    actual: str
    passed: bool
    rule: str
    note: str | None = None
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class CheckReport:
    results: tuple[CheckResult, ...]
    warnings: tuple[str, ...]
    configured: bool

    @property
    def violations(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed


def _result(sample: Sample, check: str, prop: Property, wanted: Any, actual: Any, rule: str,
            note: str | None, unresolved: str, peers: Sequence[Sample] = ()) -> CheckResult:
    """``wanted`` None: the expected value itself is unknown (shown as ``unresolved``).
    ``peers``: the consistency group the sample was compared with, if any."""
    passed = wanted is not None and actual == wanted
    fix = None if passed or wanted is None else _fix(prop, sample, wanted, actual, peers)
    return CheckResult(
        device=sample.identity.device, check=check,
        expected=unresolved if wanted is None else prop.show(wanted),
        actual=ABSENT if actual is None else prop.show(actual),
        passed=passed, rule=rule, note=note, fix=fix)


def _check(sample: Sample, expect: Expect, name: str, wanted: Any) -> CheckResult:
    prop = PROPERTIES[name]
    note = None
    if wanted == MAX:
        wanted = _maximum(prop, sample)
        note = "max" if wanted is not None else "max: not reported"
    actual = prop.actual(sample)
    if actual is not None and wanted is not None and prop.project is not None:
        actual = prop.project(actual, wanted)
    return _result(sample, name, prop, wanted, actual, expect.key, note, MAX)


def _reference(values: Sequence[Any]) -> Any:
    """The most common known value; a tie goes to the larger one."""
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    top = max(counts.values())
    return max(v for v, n in counts.items() if n == top)


def _check_group(group: Consistent, members: Sequence[Sample]) -> list[CheckResult]:
    results: list[CheckResult] = []
    for name in group.checks:
        prop = PROPERTIES[name]
        values = [prop.actual(s) for s in members]
        reference = _reference(values)
        agree = sum(v == reference for v in values) if reference is not None else 0
        note = (f"{agree}/{len(members)} agree" if reference is not None
                else "no member reports it")
        results.extend(_result(s, CONSISTENT_PREFIX + name, prop, reference, v, group.label,
                               note, "equal", members)
                       for s, v in zip(members, values, strict=True))
    return results


def evaluate(expectations: Expectations, samples: Sequence[Sample]) -> CheckReport:
    """Every check of every selected interface, sorted by device (pure; reads Samples)."""
    samples = sorted(samples, key=lambda s: s.identity.device)
    warnings = []
    chosen: dict[tuple[str, str], tuple[Sample, Expect, Any]] = {}
    for expect in expectations.expects:
        selected = [s for s in samples if expect.selector.selects(s)]
        if not selected:
            warnings.append(f"{expectations.path}: key {expect.key!r}: selects no interface "
                            f"({expect.selector.describe()})")
        for sample in selected:
            for name, wanted in expect.wanted:
                chosen[(sample.identity.device, name)] = (sample, expect, wanted)
    order = {name: i for i, name in enumerate(CHECKS)}
    results = []
    for device, name in sorted(chosen, key=lambda k: (k[0], order[k[1]])):
        sample, expect, wanted = chosen[(device, name)]
        results.append(_check(sample, expect, name, wanted))
    for group in expectations.groups:
        members = [s for s in samples if group.selector.selects(s)]
        if len(members) < 2:
            found = "no interface" if not members else f"only {members[0].identity.device}"
            warnings.append(f"{expectations.path}: key {group.key!r}: selects {found}, nothing "
                            f"to compare ({group.selector.describe()})")
        results.extend(_check_group(group, members))
    results.sort(key=lambda r: r.device)  # stable: per device, expect checks then groups
    return CheckReport(tuple(results), tuple(warnings), bool(expectations))


# --------------------------------------------------------------------------- metric series


def violation_series(report: CheckReport) -> list[tuple[str, Labels, float]]:
    """Series for :data:`FAMILIES`: (family, labels with device first, value). One
    ``nic_expectation_violation`` per distinct failed (device, check, expected, actual);
    ``nicwatch_expectation_checks`` for both results whenever expectations are configured."""
    if not report.configured:
        return []
    out: list[tuple[str, Labels, float]] = []
    seen: set[Labels] = set()
    for r in report.violations:
        labels = (("device", r.device), ("actual", r.actual), ("check", r.check),
                  ("expected", r.expected))
        if labels not in seen:
            seen.add(labels)
            out.append((VIOLATION.name, labels, 1.0))
    out.append((CHECK_COUNT.name, (("result", "fail"),), float(report.failed)))
    out.append((CHECK_COUNT.name, (("result", "pass"),), float(report.passed)))
    return out


class ExpectationChecks(BaseConsumer):
    """The configured expectations as a :class:`~nicwatch.consumers.Consumer`: evaluated
    every poll into nic_expectation_violation and nicwatch_expectation_checks; each warning (a
    selector matching nothing) is logged once while it lasts."""

    def __init__(self, expectations: Expectations) -> None:
        self.expectations = expectations
        self._warnings: tuple[str, ...] = ()
        self._families: list[ExtraFamily] = []

    @classmethod
    def open(cls, config: Any, host: object = None,
             services: Services | None = None) -> ExpectationChecks:
        return cls(config.expectations)

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        report = evaluate(self.expectations, with_physics(tracked) if tracked
                          else result.samples)
        for warning in set(report.warnings) - set(self._warnings):
            log.warning("expectation_warning", warning=warning)
        self._warnings = report.warnings
        series = violation_series(report)
        self._families = [metrics.extra(f, tuple((labels, v) for name, labels, v in series
                                                 if name == f.name))
                          for f in FAMILIES]

    def families(self) -> list[ExtraFamily]:
        return self._families

    def reconfigure(self, config: Any) -> None:
        self.expectations = config.expectations
