"""The summary of a run per interface: each family's delta, mean and peak (FamilyRow),
the flags, and the Report that the sections render."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from nicwatch.metrics import (
    FAMILIES,
    RX_BYTES,
    RX_PACKETS,
    TX_BYTES,
    TX_PACKETS,
)
from nicwatch.model import NicIdentity
from nicwatch.printable import printable
from nicwatch.snapshot.files import OK, Diff, Snapshot, family_total, when
from nicwatch.snapshot.report.numbers import amount, duration, rate
from nicwatch.snapshot.report.timeline import DROP_FAMILIES, Labels, Timeline, _DeviceSeries


@dataclass(frozen=True, slots=True)
class Run:
    """The command a ``record`` wrapped."""

    argv: tuple[str, ...]
    exit_status: int
    interval: float


@dataclass(frozen=True, slots=True)
class FamilyRow:
    family: str
    unit: str
    health: bool
    delta: float | None  # None unless status is ok
    status: str
    mean: float | None  # per second over the run
    peak: float | None  # highest rate between two polls
    labels: Labels = ()  # a part of its family (one priority, lane, traffic class)
    parts: tuple[FamilyRow, ...] = ()  # the family's labelled series that moved


@dataclass(frozen=True, slots=True)
class InterfaceSummary:
    device: str
    identity: NicIdentity
    seconds: float
    flags: tuple[str, ...]
    rows: tuple[FamilyRow, ...]
    families: frozenset[str]  # every counter family the interface has

    @property
    def pause(self) -> tuple[FamilyRow, ...]:
        return tuple(r for r in self.rows if _is_pause(r.family))

    @property
    def trouble(self) -> tuple[FamilyRow, ...]:
        """Drop, error and other health families (not PAUSE/PFC) that moved or could not
        be counted."""
        return tuple(r for r in self.rows if _is_trouble(r.family))


def _is_pause(family: str) -> bool:
    return "pause" in family or "pfc" in family


def _is_trouble(family: str) -> bool:
    """A drop or error counter, or another health family that is not PAUSE/PFC: what the
    "Drops and errors" line lists (nic_tx_dropped_total is not a health family, but a drop)."""
    spec = FAMILIES.get(family)
    return not _is_pause(family) and (
        bool(spec and spec.health) or family in DROP_FAMILIES
        or any(word in family for word in ("_drop", "_error", "_discard")))


def health_family(family: str) -> bool:
    """PAUSE/PFC, drops, errors, discards and the other health families: what the report
    lists under them and what `compare` and `record --baseline` hold against a baseline."""
    return _is_pause(family) or _is_trouble(family)


TRAFFIC = (RX_BYTES.name, TX_BYTES.name, RX_PACKETS.name,
           TX_PACKETS.name)


@dataclass(frozen=True, slots=True)
class Report:
    """What a report says. ``run``: the command `record` wrapped, or None for a report the
    daemon wrote itself (an incident), which names itself in ``title`` and says why it was
    written in ``context`` (rows shown first)."""

    before: Snapshot
    after: Snapshot
    run: Run | None
    diff: Diff
    interfaces: tuple[InterfaceSummary, ...]
    timeline: Timeline = field(compare=False)
    files: tuple[str, ...]
    title: str = ""
    context: tuple[tuple[str, str], ...] = ()
    # Moments marked on the charts, in seconds since the timeline's start (an incident's
    # onset and close), and what the charts' time axis counts from.
    marks: tuple[tuple[str, float], ...] = ()
    axis: str = "time since the start of the run"

    @property
    def heading(self) -> str:
        if self.title or self.run is None:
            return self.title or "nicwatch record"
        return f"nicwatch record: {shlex.join(self.run.argv)}"


def summarize(d: Diff, timeline: Timeline) -> tuple[InterfaceSummary, ...]:
    """Per interface: traffic families always, any other family that moved or was reset."""
    out = []
    for idiff in d.interfaces:
        series = timeline.devices.get(idiff.device, _DeviceSeries())
        rows = []
        families = dict.fromkeys(r.name for r in idiff.rows if r.kind == "counter")
        for family in families:
            delta, status = family_total(idiff.rows, family)
            if family not in TRAFFIC and status == OK and not delta:
                continue
            spec = FAMILIES.get(family)
            unit, health = (spec.unit if spec else ""), bool(spec and spec.health)
            mean = delta / idiff.seconds if delta is not None and idiff.seconds > 0 else None
            parts = tuple(
                FamilyRow(family, unit, health, r.delta, r.status, r.rate,
                          series.series_peaks.get((family, r.labels)), r.labels)
                for r in idiff.rows if r.kind == "counter" and r.name == family and r.labels
                and (r.delta or r.status != OK))
            rows.append(FamilyRow(family, unit, health, delta, status, mean,
                                  series.peaks.get(family), (), parts))
        out.append(InterfaceSummary(idiff.device, idiff.after, idiff.seconds, idiff.flags,
                                    tuple(rows), frozenset(families)))
    return tuple(out)


def make_report(before: Snapshot, after: Snapshot, run: Run | None, d: Diff, timeline: Timeline,
                files: Sequence[str], title: str = "",
                context: Sequence[tuple[str, str]] = (),
                marks: Sequence[tuple[str, float]] = (), axis: str = "") -> Report:
    return Report(before, after, run, d, summarize(d, timeline), timeline, tuple(files),
                  title, tuple(context), tuple(marks),
                  axis or f"time since {when(d.time_a)}")


def describe(ident: NicIdentity) -> str:
    parts = [ident.driver or "unknown driver"]
    if ident.driver_version:
        parts.append(f"driver {ident.driver_version}")
    if ident.firmware_version:
        parts.append(f"firmware {ident.firmware_version}")
    parts.append(f"PCI {ident.pci_address}" if ident.pci_address else "no PCI address")
    return ", ".join(parts)


def labels_text(labels: Labels) -> str:
    """A series' labels for people: ``priority=3``, ``lane=1,kind=current``."""
    return ",".join(f"{k}={v}" for k, v in labels)


def _rows_with_parts(rows: Sequence[FamilyRow]) -> list[FamilyRow]:
    return [x for r in rows for x in (r, *r.parts)]


def _groups(s: InterfaceSummary) -> list[tuple[str, tuple[FamilyRow, ...], bool]]:
    """(title, rows, counted) of the three tables: PAUSE/PFC, drops and errors, the rest."""
    rest = tuple(r for r in s.rows if not _is_pause(r.family) and not _is_trouble(r.family))
    return [("PAUSE/PFC", s.pause, any(map(_is_pause, s.families))),
            ("Drops and errors", s.trouble, any(map(_is_trouble, s.families))),
            ("Traffic and other counters", rest, True)]


def _none(title: str, counted: bool) -> str:
    return f"{title}: none." if counted else f"{title}: not counted by this interface."


def _provenance(r: Report) -> list[tuple[str, str]]:
    host = r.after.host
    run = [("command", shlex.join(r.run.argv)), ("exit status", str(r.run.exit_status))
           ] if r.run else []
    interval = [("sampling interval", f"{r.run.interval:g} s")] if r.run else []
    return [
        *r.context, *run,
        ("started", when(r.diff.time_a)), ("ended", when(r.diff.time_b)),
        ("duration", duration(r.diff.seconds)),
        *interval,
        ("host", host.hostname or "unknown"),
        ("kernel", host.kernel_release or "unknown"),
        ("boot id", host.boot_id or "unknown"), ("booted", when(host.boot_time)),
        ("nicwatch", r.after.nicwatch_version),
        ("files", ", ".join(r.files)),
    ]


def table(rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> list[str]:
    rows = [[printable(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) if i in right else c.ljust(w)
                      for i, (c, w) in enumerate(zip(row, widths, strict=False))).rstrip()
            for row in rows]


def _cells(row: FamilyRow) -> list[str]:
    delta = amount(row.delta, row.unit) if row.status == OK else row.status.upper()
    name = f"    {labels_text(row.labels)}" if row.labels else row.family
    return [("! " if row.health and not row.labels else "  ") + name, delta,
            rate(row.mean, row.unit), rate(row.peak, row.unit)]
