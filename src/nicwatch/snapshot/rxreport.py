"""The receive path section of the run reports (``nicwatch record`` and incident reports):
the hottest receive queues over the run with their share of the packets and the CPUs that
serve them, and the hottest of those CPUs with their softnet counts over the run
(processed, dropped, time_squeeze, received_rps, flow_limit_count).

Read from the two snapshots alone, with the functions ``show``, ``check`` and the receive
path consumer use (normalize.rxpath), so a queue's CPU means the same everywhere:

* packets per queue: the diff's ``nic_rx_queue_packets_total{queue}`` rows (a queue whose
  counter was reset during the run is named and left out of the sum);
* a queue's CPUs: ``nic_irq_info`` (effective affinity, else affinity) and
  ``nic_rx_queue_rps_info`` of the later snapshot (:func:`~nicwatch.normalize.rxpath.queue_cpus`);
* a CPU's counts: the diff's ``nic_rx_cpu_*_total{cpu}`` rows. They are per CPU for every
  NIC together: a CPU serving two NICs counts both.

A CPU's packets are those of the queues it serves alone; a queue spread over several CPUs
(an affinity or RPS mask of several) is listed with each of them as shared, its packets
with none. An interface without interrupts (veth, most virtual devices: their NAPI poll
runs on the CPU that sent the packet) and without RPS has no CPU to name: the section says
so instead of guessing.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nicwatch.normalize.rxpath import (
    MIN_WINDOW_PACKETS,
    QUEUE_PACKETS,
    SOFTNET_FAMILIES,
    QueueCpus,
    QueueShare,
    balance,
    cpulist,
    queue_cpus,
    queues_in_use,
)
from nicwatch.snapshot.diff import Diff, InterfaceDiff
from nicwatch.snapshot.records import InterfaceSnapshot, Snapshot
from nicwatch.snapshot.rows import OK

TOP = 8  # queues and CPUs listed, hottest first
SOFTNET_COLUMNS = tuple(SOFTNET_FAMILIES)  # processed, dropped, time_squeeze, ...
_SOFTNET_BY_FAMILY = {family: name for name, family in SOFTNET_FAMILIES.items()}
NO_CPU = ("no CPU known for its queues: the snapshots hold no interrupt of the interface "
          "and no RPS mask (queues/rx-<n>/rps_cpus). A virtual device such as veth has no "
          "interrupts: its NAPI poll runs on the CPU that sent the packet; else the receive "
          "path collector was off (--collector.receive-path)")


@dataclass(frozen=True, slots=True)
class CpuRow:
    """One CPU serving the interface over the run. ``queues``: the receive queues it serves
    alone, ``packets``/``share`` theirs; ``shared``: queues it serves with other CPUs;
    ``softnet``: each softnet_stat column's count over the run (None: not counted, or the
    counter was reset)."""

    cpu: int
    queues: tuple[int, ...]
    shared: tuple[int, ...]
    packets: int
    share: float | None
    softnet: Mapping[str, int | None]


@dataclass(frozen=True, slots=True)
class ReceiveSummary:
    """The receive path of one interface over a run. ``packets``: received over the queues
    counted; ``ratio``: the busiest queue's share over the fair share (None below
    MIN_WINDOW_PACKETS packets: too few to say anything about hashing); ``queues``: the
    busiest first (at most TOP); ``cpus`` likewise; ``notes``: what the numbers leave
    out."""

    device: str
    packets: int
    counted: int
    in_use: int
    ratio: float | None
    queues: tuple[QueueShare, ...]
    cpus: tuple[CpuRow, ...]
    notes: tuple[str, ...]


def _interface(snapshot: Snapshot, device: str) -> InterfaceSnapshot | None:
    for poll in reversed(snapshot.polls):
        for iface in poll.interfaces:
            if iface.device == device:
                return iface
    return None


def summarize(idiff: InterfaceDiff, after: InterfaceSnapshot | None) -> ReceiveSummary | None:
    """The section of one interface; None when it has no receive path series (no queue
    counters, no serving CPU counted)."""
    deltas: dict[int, int] = {}
    reset: list[str] = []
    softnet: dict[int, dict[str, int | None]] = {}
    for row in idiff.rows:
        if row.kind != "counter":
            continue
        if row.name == QUEUE_PACKETS:
            queue = dict(row.labels).get("queue", "")
            if not queue.isdigit():
                continue
            if row.status == OK and row.delta is not None:
                deltas[int(queue)] = int(row.delta)
            else:
                reset.append(f"queue {queue} ({row.status})")
        elif row.name in _SOFTNET_BY_FAMILY:
            cpu = dict(row.labels).get("cpu", "")
            if cpu.isdigit():
                softnet.setdefault(int(cpu), {})[_SOFTNET_BY_FAMILY[row.name]] = (
                    int(row.delta) if row.status == OK and row.delta is not None else None)
    if not deltas and not softnet and not reset:
        return None
    gauges = after.gauges if after is not None else {}
    cpus = queue_cpus(gauges)
    in_use = queues_in_use(gauges, len(deltas))
    spread = balance(deltas, in_use, cpus, minimum=1)
    total = spread.packets if spread is not None else 0
    shares = spread.shares if spread is not None else ()
    notes = []
    if reset:
        notes.append("left out, counter reset or gone during the run: " + ", ".join(reset))
    if 0 < total < MIN_WINDOW_PACKETS:
        notes.append(f"fewer than {MIN_WINDOW_PACKETS:,} packets: the spread says nothing "
                     "about hashing")
    if deltas and not any(c.cpus for c in cpus.values()):
        notes.append(NO_CPU)
    return ReceiveSummary(
        idiff.device, total, len(deltas), in_use,
        spread.ratio if spread is not None and total >= MIN_WINDOW_PACKETS else None,
        tuple(s for s in shares if s.packets > 0)[:TOP],
        _cpu_rows(shares, cpus, softnet, total), tuple(notes))


def _cpu_rows(shares: Sequence[QueueShare], cpus: Mapping[int, QueueCpus],
              softnet: Mapping[int, Mapping[str, int | None]], total: int
              ) -> tuple[CpuRow, ...]:
    alone: dict[int, list[int]] = {}
    shared: dict[int, list[int]] = {}
    packets: dict[int, int] = {}
    by_queue = {s.queue: s.packets for s in shares}
    for queue, where in cpus.items():
        serving = where.cpus
        for cpu in serving:
            (alone if len(serving) == 1 else shared).setdefault(cpu, []).append(queue)
        if len(serving) == 1:
            packets[serving[0]] = packets.get(serving[0], 0) + by_queue.get(queue, 0)
    rows = []
    for cpu in sorted(set(alone) | set(shared) | set(softnet)):
        counts = softnet.get(cpu, {})
        n = packets.get(cpu, 0)
        rows.append(CpuRow(cpu, tuple(sorted(alone.get(cpu, ()))),
                           tuple(sorted(shared.get(cpu, ()))), n,
                           n / total if total and cpu in packets else None,
                           {name: counts.get(name) for name in SOFTNET_COLUMNS}))
    rows.sort(key=lambda r: (-r.packets, -(r.softnet.get("processed") or 0), r.cpu))
    return tuple(rows[:TOP])


def summaries(diff: Diff, after: Snapshot) -> dict[str, ReceiveSummary]:
    """The section of every interface of the diff that has one, by device."""
    out = {}
    for idiff in diff.interfaces:
        s = summarize(idiff, _interface(after, idiff.device))
        if s is not None:
            out[idiff.device] = s
    return out


# --------------------------------------------------------------------------- rendering


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _queues(queues: Sequence[int]) -> str:
    return cpulist(queues) if queues else "-"


def headline(s: ReceiveSummary) -> str:
    """One sentence: the packets, the queues, the busiest queue and where it ran."""
    if not s.queues:
        return (f"Receive path: no packets counted on its {s.counted} receive queues."
                if s.counted else "Receive path: no receive queue counters.")
    top = s.queues[0]
    ratio = (f", {s.ratio:.2f}x its fair share of {_share(1 / s.in_use)}"
             if s.ratio is not None else "")
    return (f"Receive path: {s.packets:,} packets over {s.counted} receive queues "
            f"({s.in_use} in use); busiest queue {top.queue}: {top.packets:,} packets, "
            f"{_share(top.share)}{ratio}, on {top.cpus.describe()}.")


def queue_table(s: ReceiveSummary) -> list[list[str]]:
    return [["QUEUE", "PACKETS", "SHARE", "CPU"],
            *([str(q.queue), _count(q.packets), _share(q.share), q.cpus.describe()]
              for q in s.queues)]


def cpu_table(s: ReceiveSummary) -> list[list[str]]:
    return [["CPU", "QUEUES", "SHARED", "PACKETS", "SHARE",
             *(c.upper() for c in SOFTNET_COLUMNS)],
            *([str(c.cpu), _queues(c.queues), _queues(c.shared),
               _count(c.packets) if c.queues else "-", _share(c.share),
               *(_count(c.softnet.get(name)) for name in SOFTNET_COLUMNS)]
              for c in s.cpus)]


def _columns(rows: Sequence[Sequence[str]], left: frozenset[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i in left else c.rjust(w)
                      for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in rows]


def text_lines(s: ReceiveSummary | None) -> list[str]:
    """The section as text lines (not indented); none without a section."""
    if s is None:
        return []
    out = [headline(s)]
    if s.queues:
        out += ["  " + line for line in _columns(queue_table(s), frozenset({0, 3}))]
    if s.cpus:
        out.append("CPUs serving it (softnet_stat counts are for all NICs on that CPU):")
        out += ["  " + line for line in _columns(cpu_table(s), frozenset({0, 1, 2}))]
    out += [f"Note: {n}." for n in s.notes]
    return out


def json_value(s: ReceiveSummary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "packets": s.packets, "queues_counted": s.counted, "queues_in_use": s.in_use,
        "fair_share": 1 / s.in_use, "busiest_ratio": s.ratio,
        "queues": [{"queue": q.queue, "packets": q.packets, "share": q.share,
                    "irq_cpus": list(q.cpus.irq), "rps_cpus": list(q.cpus.rps)}
                   for q in s.queues],
        "cpus": [{"cpu": c.cpu, "queues": list(c.queues), "shared_queues": list(c.shared),
                  "packets": c.packets if c.queues else None, "share": c.share,
                  **{name: c.softnet.get(name) for name in SOFTNET_COLUMNS}}
                 for c in s.cpus],
        "notes": list(s.notes),
    }


def _html_table(rows: Sequence[Sequence[str]]) -> str:
    e = html.escape
    head, *body = rows
    return ("<table><tr>" + "".join(f"<th>{e(c.lower())}</th>" for c in head) + "</tr>"
            + "".join("<tr>" + "".join(f'<td class="n">{e(c)}</td>' for c in row) + "</tr>"
                      for row in body) + "</table>")


def html_section(s: ReceiveSummary | None) -> str:
    if s is None:
        return ""
    e = html.escape
    out = ['<div class="rxpath"><h3>Receive path</h3>', f"<p>{e(headline(s))}</p>"]
    if s.queues:
        out.append(_html_table(queue_table(s)))
    if s.cpus:
        out.append("<p>CPUs serving it (softnet_stat counts are for all NICs on that "
                   "CPU):</p>")
        out.append(_html_table(cpu_table(s)))
    out += [f"<p>Note: {e(n)}.</p>" for n in s.notes]
    out.append("</div>")
    return "".join(out)
