"""The receive path: which queue, which interrupt, which CPU, and whether it kept up.

Two halves, both pure:

* From one Reading, the series of the Sample (:func:`rxpath_counters`,
  :func:`rxpath_gauges`): the device-scope netdev qstats, packets per receive queue
  (qstats, else the driver's per-queue names), each interrupt's queue and placement
  (:func:`irq_roles`), RPS masks and the softnet counters of the CPUs serving the interface.
* From the series of one interface, at one time or between two (:func:`balance`,
  :func:`cumulative_balance`, :func:`queue_deltas`, :func:`irq_deltas`): how the packets
  spread over the queues, which CPUs served the busiest ones and where interrupts went.
  The consumer (consumers.queue_spread), ``check``, ``show`` and the reports read the same
  functions, so a verdict means the same everywhere (docs/receive-path.md).

An interrupt's queue comes from the kernel where it says (netdev queue-get / napi-get: queue
-> NAPI -> irq, drivers that call netif_queue_set_napi and netif_napi_set_irq, 6.8+), else
from the name the driver gave it (``DriverTable.irqs``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nicwatch.model import (
    SOFTNET_FIELDS,
    CounterValue,
    Irq,
    Reading,
    SeriesKey,
)
from nicwatch.normalize.engine import KeptPlans, Plan, apply_counters, sum_plan
from nicwatch.normalize.rules import DriverTable, IrqName

SOURCE_QSTATS = "netdev_genl"
SOURCE_DRIVER = "ethtool_ioctl"
SOURCE_SOFTNET = "softnet_stat"
WRAP32 = 1 << 32

# Device-scope qstats -> (family, labels). rx/tx packets and bytes are the netdev counters'.
QSTAT_FAMILIES: Mapping[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "rx-alloc-fail": ("nic_rx_alloc_failures_total", ()),
    "rx-hw-drops": ("nic_rx_hw_drops_total", ()),
    "rx-hw-drop-overruns": ("nic_rx_hw_drop_overruns_total", ()),
    "rx-hw-drop-ratelimits": ("nic_rx_hw_drop_ratelimits_total", ()),
    "rx-csum-complete": ("nic_rx_csum_packets_total", (("result", "complete"),)),
    "rx-csum-unnecessary": ("nic_rx_csum_packets_total", (("result", "unnecessary"),)),
    "rx-csum-none": ("nic_rx_csum_packets_total", (("result", "none"),)),
    "rx-csum-bad": ("nic_rx_csum_packets_total", (("result", "bad"),)),
    "rx-hw-gro-packets": ("nic_rx_hw_gro_packets_total", ()),
    "rx-hw-gro-bytes": ("nic_rx_hw_gro_bytes_total", ()),
    "rx-hw-gro-wire-packets": ("nic_rx_hw_gro_wire_packets_total", ()),
    "rx-hw-gro-wire-bytes": ("nic_rx_hw_gro_wire_bytes_total", ()),
    "tx-hw-drops": ("nic_tx_hw_drops_total", ()),
    "tx-hw-drop-errors": ("nic_tx_hw_drop_errors_total", ()),
    "tx-hw-drop-ratelimits": ("nic_tx_hw_drop_ratelimits_total", ()),
    "tx-csum-none": ("nic_tx_csum_packets_total", (("csum", "none"),)),
    "tx-needs-csum": ("nic_tx_csum_packets_total", (("csum", "needed"),)),
    "tx-hw-gso-packets": ("nic_tx_hw_gso_packets_total", ()),
    "tx-hw-gso-bytes": ("nic_tx_hw_gso_bytes_total", ()),
    "tx-hw-gso-wire-packets": ("nic_tx_hw_gso_wire_packets_total", ()),
    "tx-hw-gso-wire-bytes": ("nic_tx_hw_gso_wire_bytes_total", ()),
    "tx-stop": ("nic_tx_queue_stops_total", ()),
    "tx-wake": ("nic_tx_queue_wakes_total", ()),
}
_QSTAT_KEYS = {name: SeriesKey(family, labels) for name, (family, labels)
               in QSTAT_FAMILIES.items()}
QUEUE_PACKETS = "nic_rx_queue_packets_total"
QUEUE_STAT = "nic_queue_stat_total"
SOFTNET_FAMILIES = {"processed": "nic_rx_cpu_processed_total",
                    "dropped": "nic_rx_cpu_dropped_total",
                    "time_squeeze": "nic_rx_cpu_time_squeeze_total",
                    "received_rps": "nic_rx_cpu_received_rps_total",
                    "flow_limit_count": "nic_rx_cpu_flow_limit_total"}
_SOFTNET_INDEX = {name: SOFTNET_FIELDS.index(name) for name in SOFTNET_FAMILIES}
IRQ_INFO = "nic_irq_info"
IRQ_PLACEMENT = "nic_irqs"
RPS_INFO = "nic_rx_queue_rps_info"
PLACEMENTS = ("local", "remote", "unknown")

# Below this many packets in a window, how they spread says nothing (an idle port's ARP and
# LLDP frames): no share, no imbalance.
MIN_WINDOW_PACKETS = 1000
# A queue is busy in a window when it took at least this part of its fair share.
BUSY_FRACTION = 0.5

# Names drivers outside the tables commonly give their queue interrupts (netdev name, a kind,
# a ring number), tried when the driver's table has none or none matched.
GENERIC_IRQS = (
    IrqName(r".+-(?:TxRx|txrx|Tx-Rx|rxtx|combined)-(?P<queue>\d+)", "rxtx",
            "the <netdev>-TxRx-<n> convention of the Intel, Broadcom and Amazon drivers"),
    IrqName(r".+-(?:rx|Rx|RX)-(?P<queue>\d+)", "rx", "<netdev>-rx-<n>"),
    IrqName(r".+-(?:tx|Tx|TX)-(?P<queue>\d+)", "tx", "<netdev>-tx-<n>"),
)


def cpulist(cpus: Iterable[int]) -> str:
    """Sorted CPU numbers as the kernel's lists print them: ``"0-3,8"``."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_cpus(text: str) -> tuple[int, ...]:
    """The inverse of :func:`cpulist` (``""`` is none)."""
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return tuple(cpus)


# --------------------------------------------------------------------------- one Reading


@dataclass(frozen=True, slots=True)
class IrqRole:
    """What one interrupt of an interface is for and where it runs. ``queue``: the receive
    queue (channel) it serves, None for the device's own; ``via``: ``napi`` (the kernel's
    records) or ``name`` (the driver's name for it) or ``""``; ``cpus``: its effective
    affinity, else its affinity; ``node``: the NUMA node of those CPUs when one."""

    irq: Irq
    queue: int | None
    kind: str
    via: str
    cpus: tuple[int, ...]
    node: int | None


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=64)
def _compiled(names: tuple[IrqName, ...]) -> tuple[tuple[re.Pattern[str], IrqName], ...]:
    return tuple((re.compile(n.pattern), n) for n in names)


def _by_name(name: str | None, table: DriverTable | None) -> tuple[int | None, str] | None:
    """(queue, kind) from an interrupt's name; None when no pattern knows it."""
    if not name:
        return None
    first = name.replace(", ", ",").split(",")[0]  # a shared line lists every action
    for names in ((table.irqs if table else ()), GENERIC_IRQS):
        for regex, entry in _compiled(names):
            match = regex.fullmatch(first)
            if match is not None:
                queue = match.groupdict().get("queue")
                return (int(queue) if queue is not None else None), entry.kind
    return None


def _node(cpus: Sequence[int], nodes: Mapping[int, int]) -> int | None:
    found = {nodes.get(cpu) for cpu in cpus}
    if len(found) != 1 or None in found:
        return None
    (node,) = found
    return node


def irq_roles(reading: Reading, table: DriverTable | None) -> tuple[IrqRole, ...]:
    """Every interrupt of the interface with the queue it serves: NAPI records first (an
    rx queue's NAPI and that NAPI's irq), the driver's interrupt names for the rest."""
    rx = reading.rxpath
    if rx is None or not rx.irqs:
        return ()
    from_napi: dict[int, tuple[int, str]] = {}
    q = reading.queues
    if q is not None and q.queues and q.napis:
        irq_of = {n.id: n.irq for n in q.napis if n.irq is not None}
        tx_napis = {x.napi_id for x in q.queues if x.kind == "tx"}
        for entry in q.queues:
            if entry.kind == "rx" and entry.napi_id in irq_of:
                from_napi.setdefault(irq_of[entry.napi_id], (
                    entry.id, "rxtx" if entry.napi_id in tx_napis else "rx"))
    out = []
    for irq in rx.irqs:
        cpus = irq.effective or irq.affinity or ()
        node = _node(cpus, rx.cpu_nodes) if cpus else None
        if irq.irq in from_napi:
            queue, kind = from_napi[irq.irq]
            out.append(IrqRole(irq, queue, kind, "napi", cpus, node))
            continue
        named = _by_name(irq.name, table)
        if named is None:
            out.append(IrqRole(irq, None, "other", "", cpus, node))
        else:
            kind = named[1]
            out.append(IrqRole(irq, named[0] if kind != "other" else None, kind, "name", cpus,
                               node))
    return tuple(out)


def _queue_number(text: str) -> int | None:
    return int(text) if text.isdigit() else None


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=256)
def _packet_plan(names: tuple[str, ...], patterns: tuple[str, ...]
                 ) -> tuple[tuple[int, int], ...]:
    """(index in ``names``, queue) of each per-queue rx packet counter."""
    if not patterns:
        return ()
    regexes = [re.compile(p) for p in patterns]
    out = []
    for i, name in enumerate(names):
        stripped = name.strip()
        for regex in regexes:
            match = regex.fullmatch(stripped)
            if match is not None:
                out.append((i, int(match.group("queue"))))
                break
    return tuple(out)


def _qstats_queue_packets(reading: Reading) -> dict[int, int] | None:
    """Received packets per rx queue from the netdev qstats (rx-packets); None when they
    have none (then the driver's per-queue counters are summed, :func:`_queue_packet_plan`)."""
    q = reading.queues
    if q is None:
        return None
    per_queue = {s.id: s.stats["rx-packets"] for s in q.queue_stats
                 if s.kind == "rx" and "rx-packets" in s.stats}
    return per_queue or None


def queue_packet_plan(names: tuple[str, ...], patterns: tuple[str, ...]) -> Plan:
    """The driver's per-queue packet counters of ``names`` as a plan: one series per queue
    (in queue order), the sum of that queue's counters."""
    members = sorted(((_queue_key(queue), index)
                      for index, queue in _packet_plan(names, patterns)),
                     key=lambda m: int(m[0].labels[0][1]))
    return sum_plan(SOURCE_DRIVER, members)


def rxpath_counters(reading: Reading, table: DriverTable | None,
                    per_queue: Sequence[str] = (), plans: KeptPlans | None = None,
                    ) -> dict[SeriesKey, CounterValue]:
    """The device-scope qstats families, packets per rx queue, the qstats listed in
    ``per_queue`` per queue (nic_queue_stat_total) and the softnet counters of the CPUs
    serving the interface. ``plans``: where the per-queue packet plans are kept from poll
    to poll (a Normalizer's), else each is made anew."""
    out: dict[SeriesKey, CounterValue] = {}
    q = reading.queues
    if q is not None and q.stats:
        for name, value in q.stats.items():
            key = _QSTAT_KEYS.get(name)
            if key is not None:
                out[key] = CounterValue(value, SOURCE_QSTATS)
    by_queue = _qstats_queue_packets(reading)
    if by_queue is not None:
        for queue, value in sorted(by_queue.items()):
            out[_queue_key(queue)] = CounterValue(value, SOURCE_QSTATS)
    elif reading.stats is not None and table is not None and table.rx_queue_packets:
        # the driver's per-queue counters, summed per queue by a plan made once per name list
        names, patterns = reading.stats.names, table.rx_queue_packets
        plan = (plans.get(names, patterns, queue_packet_plan) if plans is not None
                else queue_packet_plan(names, patterns))
        out.update(apply_counters(plan, reading.stats.values, SOURCE_DRIVER))
    if q is not None and per_queue:
        wanted = frozenset(per_queue)
        for s in q.queue_stats:
            for name, value in s.stats.items():
                if name in wanted and name.startswith(s.kind):
                    out[SeriesKey(QUEUE_STAT, (("queue", str(s.id)), ("stat", name)))] = \
                        CounterValue(value, SOURCE_QSTATS)
    rx = reading.rxpath
    if rx is not None:
        for row in rx.softnet:
            counters = row.counters
            for index, key in _softnet_keys(row.cpu):
                count = counters[index]
                if count is not None:
                    out[key] = CounterValue(count % WRAP32, SOURCE_SOFTNET, width=32)
    return out


# The series keys of the per-queue and per-CPU families, made once (a poll of 32 veths with
# 64 queues made 2,000 of them, 45% of normalize).
# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=4096)
def _queue_key(queue: int) -> SeriesKey:
    return SeriesKey(QUEUE_PACKETS, (("queue", str(queue)),))


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=4096)
def _softnet_keys(cpu: int) -> tuple[tuple[int, SeriesKey], ...]:
    labels = (("cpu", str(cpu)),)
    return tuple((_SOFTNET_INDEX[name], SeriesKey(family, labels))
                 for name, family in SOFTNET_FAMILIES.items())


def nic_node(reading: Reading) -> int | None:
    """The NUMA node of the NIC: its PCI function's numa_node, or the host's only node."""
    path = reading.pcie
    if path is not None and path.hops and path.hops[0].numa_node is not None:
        return path.hops[0].numa_node
    nodes = set(reading.rxpath.cpu_nodes.values()) if reading.rxpath else set()
    return next(iter(nodes)) if len(nodes) == 1 else None


def placement(role: IrqRole, node: int | None) -> str:
    """``local``, ``remote`` or ``unknown``: where a queue interrupt runs against the NIC's
    node."""
    if node is None or role.node is None:
        return "unknown"
    return "local" if role.node == node else "remote"


def rxpath_gauges(reading: Reading, table: DriverTable | None) -> dict[SeriesKey, float]:
    """nic_irq_info per interrupt, nic_irqs by placement (queue interrupts only) and
    nic_rx_queue_rps_info per queue with RPS."""
    out: dict[SeriesKey, float] = {}
    rx = reading.rxpath
    if rx is None:
        return out
    roles = irq_roles(reading, table)
    node = nic_node(reading)
    counts = dict.fromkeys(PLACEMENTS, 0)
    for role in roles:
        irq = role.irq
        out[SeriesKey(IRQ_INFO, (
            ("affinity", cpulist(irq.affinity or ())),
            ("effective", cpulist(irq.effective or ())),
            ("irq", str(irq.irq)), ("kind", role.kind),
            ("node", "" if role.node is None else str(role.node)),
            ("queue", "" if role.queue is None else str(role.queue))))] = 1.0
        if role.queue is not None:
            counts[placement(role, node)] += 1
    if any(role.queue is not None for role in roles):
        for name, n in counts.items():
            out[SeriesKey(IRQ_PLACEMENT, (("placement", name),))] = float(n)
    for queue, cpus in rx.rps:
        out[SeriesKey(RPS_INFO, (("cpus", cpulist(cpus)), ("queue", str(queue))))] = 1.0
    return out


# --------------------------------------------------------------------------- series -> analysis


@dataclass(frozen=True, slots=True)
class QueueCpus:
    """Where one receive queue's packets are handled: ``irq`` the CPUs its interrupts are
    delivered to (the driver's NAPI poll runs there), ``rps`` the CPUs RPS hands them to."""

    irq: tuple[int, ...] = ()
    rps: tuple[int, ...] = ()

    @property
    def cpus(self) -> tuple[int, ...]:
        """The CPUs that serve it: the interrupt's, else RPS's."""
        return self.irq or self.rps

    def describe(self) -> str:
        parts = []
        if self.irq:
            parts.append(f"CPU {cpulist(self.irq)} (irq)")
        if self.rps:
            parts.append(f"CPU {cpulist(self.rps)} (rps)")
        return ", ".join(parts) or "CPU unknown"


def queue_cpus(gauges: Mapping[SeriesKey, float]) -> dict[int, QueueCpus]:
    """Receive queue -> its CPUs, from an interface's nic_irq_info and nic_rx_queue_rps_info
    series (a Sample's or a snapshot's)."""
    irq: dict[int, set[int]] = {}
    rps: dict[int, tuple[int, ...]] = {}
    for key in gauges:
        if key.metric == IRQ_INFO:
            labels = dict(key.labels)
            queue = _queue_number(labels.get("queue", ""))
            if queue is None or labels.get("kind") == "tx":
                continue
            cpus = parse_cpus(labels.get("effective") or labels.get("affinity", ""))
            irq.setdefault(queue, set()).update(cpus)
        elif key.metric == RPS_INFO:
            labels = dict(key.labels)
            queue = _queue_number(labels.get("queue", ""))
            if queue is not None:
                rps[queue] = parse_cpus(labels.get("cpus", ""))
    return {queue: QueueCpus(tuple(sorted(irq.get(queue, ()))), rps.get(queue, ()))
            for queue in sorted(set(irq) | set(rps))}


def queue_counts(counters: Mapping[SeriesKey, CounterValue],
                 known: dict[SeriesKey, int | None] | None = None) -> dict[int, int]:
    """Receive queue -> packets (raw value), from nic_rx_queue_packets_total series.
    ``known``: each series' queue number from earlier calls (filled here; the caller bounds
    it), so a series' labels are looked at once, not every poll."""
    out = {}
    for key, cv in counters.items():
        if key.metric == QUEUE_PACKETS:
            if known is None:
                queue = _queue_number(dict(key.labels).get("queue", ""))
            elif (queue := known.get(key, -1)) == -1:
                queue = known[key] = _queue_number(dict(key.labels).get("queue", ""))
            if queue is not None:
                out[queue] = cv.raw
    return out


def queues_in_use(gauges: Mapping[SeriesKey, float], counted: int) -> int:
    """The receive queues the NIC spreads packets over: its combined or rx channel count
    (nic_channels), no more than the queues counted; else the queues counted."""
    channels = [v for k, v in gauges.items() if k.metric == "nic_channels"
                and dict(k.labels).get("type") in ("combined", "rx") and v]
    used = int(max(channels)) if channels else counted
    return max(1, min(used, counted)) if counted else max(1, used)


@dataclass(frozen=True, slots=True)
class QueueShare:
    queue: int
    packets: int
    share: float
    cpus: QueueCpus


@dataclass(frozen=True, slots=True)
class Balance:
    """How an interface's received packets spread over its receive queues in a window.

    ``shares``: every queue, busiest first; ``fair``: 1 / ``in_use``; ``ratio``: the busiest
    queue's share over the fair share (1: even, ``in_use``: one queue took all);
    ``stacked``: (CPU, busy queues) where one CPU served more than one busy queue, most
    first."""

    packets: int
    in_use: int
    shares: tuple[QueueShare, ...]
    stacked: tuple[tuple[int, tuple[int, ...]], ...]

    @property
    def fair(self) -> float:
        return 1.0 / self.in_use

    @property
    def busiest(self) -> QueueShare:
        return self.shares[0]

    @property
    def ratio(self) -> float:
        return self.busiest.share / self.fair

    @property
    def most_stacked(self) -> int:
        """The most busy queues on one CPU (1 when none shares a CPU, 0 when no queue is
        busy or no CPU is known)."""
        if self.stacked:
            return len(self.stacked[0][1])
        return 1 if any(self.busy(s) and s.cpus.cpus for s in self.shares) else 0

    def busy(self, share: QueueShare) -> bool:
        return share.packets > 0 and share.share >= BUSY_FRACTION * self.fair


def balance(deltas: Mapping[int, int], in_use: int, cpus: Mapping[int, QueueCpus],
            minimum: int = MIN_WINDOW_PACKETS) -> Balance | None:
    """The spread of ``deltas`` (queue -> packets in a window); None below ``minimum``
    packets or without queues."""
    total = sum(max(0, v) for v in deltas.values())
    if not deltas or total < max(1, minimum):
        return None
    shares = tuple(sorted((QueueShare(q, max(0, n), max(0, n) / total, cpus.get(q, QueueCpus()))
                           for q, n in deltas.items()), key=lambda s: (-s.packets, s.queue)))
    draft = Balance(total, in_use, shares, ())
    per_cpu: dict[int, list[int]] = {}
    for s in shares:
        if draft.busy(s) and len(s.cpus.cpus) == 1:
            per_cpu.setdefault(s.cpus.cpus[0], []).append(s.queue)
    stacked = tuple(sorted(((cpu, tuple(sorted(qs))) for cpu, qs in per_cpu.items()
                            if len(qs) > 1), key=lambda item: (-len(item[1]), item[0])))
    return Balance(total, in_use, shares, stacked)


def cumulative_balance(counters: Mapping[SeriesKey, CounterValue],
                       gauges: Mapping[SeriesKey, float]) -> Balance | None:
    """The spread of the queue counters as read: since each queue's counter started (boot,
    driver load, or the last reconfiguration for qstats)."""
    counts = queue_counts(counters)
    return balance(counts, queues_in_use(gauges, len(counts)), queue_cpus(gauges))


def queue_deltas(before: Mapping[int, int], after: Mapping[int, int]) -> dict[int, int] | None:
    """Packets per queue between two readings of the queue counters; None when a counter
    went backwards (the queues were reconfigured) or the queue sets differ."""
    if set(before) != set(after):
        return None
    out = {}
    for queue, value in after.items():
        delta = value - before[queue]
        if delta < 0:
            return None
        out[queue] = delta
    return out


def irq_deltas(before: Sequence[Irq], after: Sequence[Irq]) -> dict[int, dict[int, int]]:
    """Interrupt -> CPU -> interrupts taken between two readings (32-bit counts, modulo
    2^32); interrupts or CPUs without a count in both are left out."""
    old = {irq.irq: irq.counters for irq in before if irq.counters is not None}
    out: dict[int, dict[int, int]] = {}
    for irq in after:
        prev = old.get(irq.irq)
        now = irq.counters
        if prev is None or now is None:
            continue
        if prev is now or prev == now:  # the source hands back the same tuple unchanged
            out[irq.irq] = {}
            continue
        # equal lengths: one count per possible CPU, fixed at boot
        pairs = enumerate(zip(prev, now, strict=False))
        out[irq.irq] = {cpu: (b - a) % WRAP32 for cpu, (a, b) in pairs if a != b}
    return out
