"""Two runs side by side (`nicwatch compare A B`, `nicwatch record --baseline DIR`): per
interface, every difference in provenance and configuration between them (kernel, driver and
firmware versions, rings, MTU, channels, link and PCIe, QoS, module) and, per family and
label, the mean rate in each and their ratio, health counters first.

A side is a `record` directory (its before and after snapshots), an incident directory (its
history, else its onset snapshot), or a snapshot file (a many-poll history or series: its
first and last polls). The rates of a side are the difference of its first and last polls by
diff.py's rules (the tracker's wrap and reset rule): a counter reset within a side has no
rate there, and a side of one poll has configuration but no rates. The two sides may come
from different hosts and boots; nothing is subtracted across them.

A health rate is worse than the baseline's when it is above it by more than ``margin``
(a fraction of the baseline's rate; default :data:`DEFAULT_MARGIN`) and the run counted at
least one event of it: with a baseline of zero, any counted drop, error or PAUSE frame is
worse.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nicwatch.metrics import (
    BOND_INFO,
    CHANNELS,
    CHANNELS_MAX,
    ETS_PRIORITY_TC,
    ETS_TC_BANDWIDTH_RATIO,
    ETS_TC_TSA_INFO,
    FAMILIES,
    FEC_MODE_INFO,
    LINK_SPEED_BYTES_PER_SECOND,
    MODULE_INFO,
    MTU_BYTES,
    PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND,
    PCIE_DEGRADED,
    PCIE_LINK_SPEED_GTS,
    PCIE_LINK_WIDTH,
    PCIE_SLOT_LIMITED,
    PFC_ENABLED,
    QOS_DSCP_PRIORITY,
    QOS_TRUST_INFO,
    RDMA_ACTIVE_MTU_BYTES,
    RING_DESCRIPTORS,
    RING_MAX_DESCRIPTORS,
    ROCE_CNP_DSCP,
    ROCE_CNP_PRIORITY,
)
from nicwatch.printable import printable
from nicwatch.snapshot import report
from nicwatch.snapshot.decode import load
from nicwatch.snapshot.diff import Change, Diff, diff, match_interfaces, state_changes, when
from nicwatch.snapshot.records import DiffError, InterfaceSnapshot, Snapshot, SnapshotError
from nicwatch.snapshot.rows import OK

# Default of --baseline-margin: a health rate more than 10% above the baseline's is worse. A
# judgement, not a measurement: two runs of one workload differ by a few percent in their
# traffic rates, and a drop or PAUSE rate that rises by a tenth beyond that is worth a look.
DEFAULT_MARGIN = 0.10

# Configuration and provenance families, in the order a fix reads them. A gauge not listed
# here and not an *_info family is a measurement (a temperature, a power, a ratio): a
# difference in it is counted, listed with --all.
CONFIGURATION = (
    RING_DESCRIPTORS.name, RING_MAX_DESCRIPTORS.name, MTU_BYTES.name, CHANNELS.name,
    CHANNELS_MAX.name, LINK_SPEED_BYTES_PER_SECOND.name, PCIE_LINK_SPEED_GTS.name,
    PCIE_LINK_WIDTH.name, PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND.name,
    PCIE_SLOT_LIMITED.name, PCIE_DEGRADED.name, QOS_TRUST_INFO.name, QOS_DSCP_PRIORITY.name,
    PFC_ENABLED.name, ETS_PRIORITY_TC.name, ETS_TC_BANDWIDTH_RATIO.name,
    ETS_TC_TSA_INFO.name, ROCE_CNP_DSCP.name, ROCE_CNP_PRIORITY.name, FEC_MODE_INFO.name,
    MODULE_INFO.name, RDMA_ACTIVE_MTU_BYTES.name, BOND_INFO.name,
)
_ORDER = {name: i for i, name in enumerate(CONFIGURATION)}
ABSENT = "absent"  # the series is not in that side
ONE_POLL = "one_poll"  # that side is one poll: configuration only, no rates
RECORD_FILES = (("before.json", "before.json.gz"), ("after.json", "after.json.gz"))
INCIDENT_FILES = ("history.json.gz", "onset.json.gz")


class CompareError(ValueError):
    """A side that cannot be read or compared: one line naming it."""


@dataclass(frozen=True, slots=True)
class Side:
    """One run: where it came from, its first and last snapshots and their difference (None
    for a single poll: configuration only)."""

    path: str
    kind: str  # record, incident, snapshot
    first: Snapshot
    last: Snapshot
    diff: Diff | None

    @property
    def command(self) -> str | None:
        rec = self.last.meta.get("record")
        cmd = rec.get("command") if isinstance(rec, Mapping) else None
        return " ".join(map(str, cmd)) if isinstance(cmd, list) else None

    @property
    def seconds(self) -> float | None:
        return self.diff.seconds if self.diff else None


def side(first: Snapshot, last: Snapshot, path: str, kind: str) -> Side:
    """A side from its first and last snapshots (they may be one)."""
    single = first is last and len(first.polls) < 2
    try:
        d = None if single else diff(first, last)
    except DiffError as e:
        raise CompareError(f"{path}: {e}") from None
    return Side(path, kind, first, last, d)


def _load(path: Path) -> Snapshot:
    try:
        return load(path)
    except SnapshotError as e:
        raise CompareError(str(e)) from None


def load_snapshots(path: str | os.PathLike[str]) -> tuple[Snapshot, Snapshot, str]:
    """The first and last snapshots of a `record` directory (before, after), an incident
    directory (its history, else its onset snapshot, as both) or a snapshot file (as both),
    and which of the three it is: what compare, diff and diagnose read. CompareError when
    it is none of them."""
    p = Path(path)
    if p.is_dir():
        found = [next((p / n for n in names if (p / n).is_file()), None) for names in RECORD_FILES]
        if found[0] and found[1]:
            return _load(found[0]), _load(found[1]), "record"
        for name in INCIDENT_FILES:
            if (p / name).is_file():
                snap = _load(p / name)
                return snap, snap, "incident"
        raise CompareError(f"{path}: not a record directory (no before.json and after.json) "
                           "nor an incident directory (no history.json.gz or onset.json.gz)")
    if not p.exists():
        raise CompareError(f"{path}: no such file or directory")
    snap = _load(p)
    return snap, snap, "snapshot"


def load_side(path: str | os.PathLike[str]) -> Side:
    """A `record` directory, an incident directory or a snapshot file (CompareError when
    it is none of them)."""
    first, last, kind = load_snapshots(path)
    return side(first, last, str(path), kind)


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True, slots=True)
class RateRow:
    """One series' mean rate in A and in B (per second, base units; None: absent or not
    counted there, ``status`` says why)."""

    family: str
    labels: tuple[tuple[str, str], ...]
    unit: str
    health: bool
    rate_a: float | None
    rate_b: float | None
    status_a: str
    status_b: str
    delta_b: float | None

    @property
    def ratio(self) -> float | None:
        if self.rate_a is None or self.rate_b is None or self.rate_a == 0:
            return None
        return self.rate_b / self.rate_a


@dataclass(frozen=True, slots=True)
class InterfaceComparison:
    device_a: str
    device_b: str
    configuration: tuple[Change, ...]  # identity and configuration values that differ
    measurements: tuple[Change, ...]  # other gauges that differ (listed with --all)
    rates: tuple[RateRow, ...]  # health first


@dataclass(frozen=True, slots=True)
class Comparison:
    a: Side
    b: Side
    provenance: tuple[tuple[str, str | None, str | None], ...]  # what differs, A, B
    interfaces: tuple[InterfaceComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]


def is_health(family: str) -> bool:
    """Drops, errors, discards, PAUSE/PFC and the other health families (the report's)."""
    return report.health_family(family)


def _rates(s: Side, device: str) -> dict[tuple[str, tuple[tuple[str, str], ...]],
                                       tuple[float | None, str, float | None]]:
    if s.diff is None:
        return {}
    idiff = next((i for i in s.diff.interfaces if i.device == device), None)
    if idiff is None:
        return {}
    return {(r.name, r.labels): (r.rate, r.status, r.delta) for r in idiff.rows
            if r.kind == "counter"}


def _is_configuration(change: Change) -> bool:
    return (change.name.startswith("identity.") or change.name in _ORDER
            or change.name.endswith("_info"))


def _config_rank(change: Change) -> tuple[int, str, tuple[tuple[str, str], ...]]:
    rank = -1 if change.name.startswith("identity.") else _ORDER.get(change.name, len(_ORDER))
    return rank, change.name, change.labels


def _interface(a: Side, b: Side, x: InterfaceSnapshot, y: InterfaceSnapshot
               ) -> InterfaceComparison:
    changes = [c for c in state_changes(x, y) if c.name != "identity.ifindex"]
    config = sorted((c for c in changes if _is_configuration(c)), key=_config_rank)
    other = [c for c in changes if not _is_configuration(c)]
    ra, rb = _rates(a, x.device), _rates(b, y.device)
    rows = []
    for key in dict.fromkeys((*ra, *rb)):
        family, labels = key
        spec = FAMILIES.get(family)
        rate_a, status_a, _ = ra.get(key, (None, ONE_POLL if a.diff is None else ABSENT, None))
        rate_b, status_b, delta_b = rb.get(key, (None, ONE_POLL if b.diff is None else ABSENT,
                                                 None))
        rows.append(RateRow(family, labels, spec.unit if spec else "", is_health(family),
                            rate_a, rate_b, status_a, status_b, delta_b))
    rows.sort(key=lambda r: (not r.health, r.family not in report.TRAFFIC, r.family, r.labels))
    return InterfaceComparison(x.device, y.device, tuple(config), tuple(other), tuple(rows))


def compare(a: Side, b: Side) -> Comparison:
    """Side ``b`` against side ``a`` (pure)."""
    ha, hb = a.last.host, b.last.host
    provenance = [(name, va, vb) for name, va, vb in (
        ("hostname", ha.hostname, hb.hostname),
        ("kernel", ha.kernel_release, hb.kernel_release),
        ("kernel build", ha.kernel_version, hb.kernel_version),
        ("boot id", ha.boot_id, hb.boot_id),
        ("nicwatch", a.last.nicwatch_version, b.last.nicwatch_version),
        ("command", a.command, b.command)) if va != vb]
    pairs, only_a, only_b = match_interfaces(a.last.polls[-1].interfaces,
                                             b.last.polls[-1].interfaces)
    return Comparison(a, b, tuple(provenance), tuple(_interface(a, b, x, y) for x, y in pairs),
                      only_a, only_b)


def worse(c: Comparison, margin: float = DEFAULT_MARGIN
          ) -> list[tuple[InterfaceComparison, RateRow]]:
    """Health rates of B above A's by more than ``margin`` of A's, where B counted at least
    one event (a series A did not count cannot be compared and is not worse)."""
    out = []
    for i in c.interfaces:
        for r in i.rates:
            if not r.health or r.rate_a is None or r.rate_b is None or not r.delta_b:
                continue
            if r.rate_b > r.rate_a * (1 + margin):
                out.append((i, r))
    return out


# --------------------------------------------------------------------------- output


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    labels = list(labels)
    return "{" + ",".join(f"{k}={v}" for k, v in labels) + "}" if labels else ""


def value(v: Any, unit: str = "") -> str:
    """A configuration value: numbers in the report's one format, absent as ``-``."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    return report.amount(v, unit)


def _unit(name: str) -> str:
    spec = FAMILIES.get(name)
    return spec.unit if spec and spec.unit == "bytes" else ""


def ratio_text(r: RateRow) -> str:
    if r.rate_a is None or r.rate_b is None:
        return "-"
    if r.rate_a == 0:
        return "same" if r.rate_b == 0 else "from 0"
    return f"x{r.rate_b / r.rate_a:.3g}"


def _rate_cell(rate: float | None, status: str, unit: str) -> str:
    if rate is None:
        return status.upper().replace("_", " ") if status != OK else "-"
    return report.rate(rate, unit)


def shown_rates(i: InterfaceComparison, show_all: bool) -> list[RateRow]:
    """Traffic always; other series where either side counted something."""
    return [r for r in i.rates if show_all or r.family in report.TRAFFIC or r.rate_a
            or r.rate_b or OK not in (r.status_a, r.status_b)]


def _side_line(tag: str, s: Side) -> list[str]:
    first, last = s.first.polls[0], s.last.polls[-1]
    span = f"{report.duration(s.seconds)} from {when(first.time)}" if s.diff else \
        f"one poll at {when(last.time)} (no rates)"
    return [tag, s.path, s.kind, span, s.last.host.hostname or "unknown host"]


def text(c: Comparison, show_all: bool = False, margin: float | None = None) -> str:
    lines = report.table([_side_line("A", c.a), _side_line("B", c.b)])
    if c.provenance:
        lines += ["", *report.table([["PROVENANCE", "A", "B"], *(
            [k, value(va), value(vb)] for k, va, vb in c.provenance)])]
    flagged = {(id(i), id(r)) for i, r in worse(c, margin)} if margin is not None else set()
    for i in c.interfaces:
        name = i.device_b if i.device_a == i.device_b else f"{i.device_a} -> {i.device_b}"
        lines += ["", name]
        if i.configuration:
            lines += ["  " + x for x in report.table([["CONFIGURATION", "A", "B"], *(
                [ch.name + _labels(ch.labels), value(ch.before, _unit(ch.name)),
                 value(ch.after, _unit(ch.name))] for ch in i.configuration)])]
        else:
            lines.append("  configuration: the same")
        if show_all and i.measurements:
            lines += ["  " + x for x in report.table([["OTHER VALUES", "A", "B"], *(
                [ch.name + _labels(ch.labels), value(ch.before), value(ch.after)]
                for ch in i.measurements)])]
        elif i.measurements:
            lines.append(f"  ({len(i.measurements)} measured values differ; --all lists them)")
        rows = shown_rates(i, show_all)
        if rows:
            lines += ["  " + x for x in report.table([["  RATE", "A", "B", "B/A"], *(
                [("! " if r.health else "  ") + r.family + _labels(r.labels),
                 _rate_cell(r.rate_a, r.status_a, r.unit),
                 _rate_cell(r.rate_b, r.status_b, r.unit), ratio_text(r)
                 + ("  WORSE" if (id(i), id(r)) in flagged else "")]
                for r in rows)], frozenset({1, 2, 3}))]
        hidden = len(i.rates) - len(rows)
        if hidden:
            lines.append(f"  ({hidden} series with nothing counted are hidden; --all shows "
                         "them)")
    for names, where in ((c.only_a, "only in A"), (c.only_b, "only in B")):
        if names:
            lines += ["", f"interfaces {where}: {', '.join(names)}"]
    if margin is not None:
        bad = worse(c, margin)
        lines += ["", (f"worse than the baseline (A) by more than {margin:.0%}: "
                       + "; ".join(f"{i.device_b} {r.family}{_labels(r.labels)} "
                                   f"{_rate_cell(r.rate_a, r.status_a, r.unit)} -> "
                                   f"{_rate_cell(r.rate_b, r.status_b, r.unit)}"
                                   for i, r in bad))
                  if bad else f"no health rate worse than the baseline (A) by more than "
                              f"{margin:.0%}"]
    return printable("\n".join(lines), keep="\n", backslash=False) + "\n"


def _finite(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def as_json(c: Comparison, show_all: bool = False, margin: float | None = None
            ) -> dict[str, Any]:
    def side_json(s: Side) -> dict[str, Any]:
        return {"path": s.path, "kind": s.kind, "label": s.last.label,
                "started": s.first.polls[0].time, "ended": s.last.polls[-1].time,
                "seconds": s.seconds, "command": s.command,
                "host": {f: getattr(s.last.host, f) for f in s.last.host.__slots__},
                "nicwatch_version": s.last.nicwatch_version}
    out: dict[str, Any] = {
        "a": side_json(c.a), "b": side_json(c.b),
        "provenance": [{"name": k, "a": va, "b": vb} for k, va, vb in c.provenance],
        "interfaces": [{
            "device_a": i.device_a, "device_b": i.device_b,
            "configuration": [{"name": ch.name, "labels": dict(ch.labels), "a": ch.before,
                               "b": ch.after} for ch in i.configuration],
            "measurements_differing": len(i.measurements),  # listed with --all
            **({"measurements": [{"name": ch.name, "labels": dict(ch.labels), "a": ch.before,
                                  "b": ch.after} for ch in i.measurements]} if show_all else {}),
            "rates": [{"family": r.family, "labels": dict(r.labels), "unit": r.unit,
                       "health": r.health, "a": _finite(r.rate_a), "b": _finite(r.rate_b),
                       "status_a": r.status_a, "status_b": r.status_b,
                       "ratio": _finite(r.ratio)} for r in shown_rates(i, show_all)],
        } for i in c.interfaces],
        "only_in_a": list(c.only_a), "only_in_b": list(c.only_b),
    }
    if margin is not None:
        out["baseline"] = {"margin": margin, "worse": [
            {"device": i.device_b, "family": r.family, "labels": dict(r.labels),
             "a": r.rate_a, "b": r.rate_b} for i, r in worse(c, margin)]}
    return out


def html_page(c: Comparison, margin: float | None = None) -> str:
    e = html.escape
    flagged = {(id(i), id(r)) for i, r in worse(c, margin)} if margin is not None else set()
    title = f"nicwatch compare: {c.a.path} -> {c.b.path}"
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(title)}</title><style>{report.STYLE}</style></head><body>",
           f"<h1>{e(title)}</h1>", '<table class="provenance"><tr><th></th><th>path</th>'
           "<th>kind</th><th>span</th><th>host</th></tr>"]
    for tag, s in (("A", c.a), ("B", c.b)):
        out.append("<tr>" + "".join(f"<td>{e(x)}</td>" for x in _side_line(tag, s)) + "</tr>")
    out.append("</table>")
    if c.provenance:
        out.append("<h2>Provenance</h2><table><tr><th></th><th>A</th><th>B</th></tr>")
        out += [f"<tr><th>{e(k)}</th><td>{e(value(va))}</td><td>{e(value(vb))}</td></tr>"
                for k, va, vb in c.provenance]
        out.append("</table>")
    if margin is not None:
        bad = worse(c, margin)
        out.append(f'<p class="{"flag" if bad else "ok"}">'
                   + (f"{len(bad)} health rate(s) worse than the baseline (A) by more than "
                      f"{margin:.0%}" if bad else
                      f"no health rate worse than the baseline (A) by more than {margin:.0%}")
                   + "</p>")
    for i in c.interfaces:
        out.append(f"<section><h2>{e(i.device_b)}</h2>")
        if i.configuration:
            out.append("<table><tr><th>configuration</th><th>A</th><th>B</th></tr>")
            out += [f"<tr><td>{e(ch.name + _labels(ch.labels))}</td>"
                    f'<td class="n">{e(value(ch.before, _unit(ch.name)))}</td>'
                    f'<td class="n">{e(value(ch.after, _unit(ch.name)))}</td></tr>'
                    for ch in i.configuration]
            out.append("</table>")
        else:
            out.append("<p>Configuration: the same.</p>")
        out.append('<table><tr><th>rate</th><th class="n">A</th><th class="n">B</th>'
                   '<th class="n">B/A</th></tr>')
        for r in shown_rates(i, False):
            cls = " class=worse" if (id(i), id(r)) in flagged else (
                " class=health" if r.health else "")
            out.append(f"<tr{cls}><td>{e(r.family + _labels(r.labels))}</td>"
                       f'<td class="n">{e(_rate_cell(r.rate_a, r.status_a, r.unit))}</td>'
                       f'<td class="n">{e(_rate_cell(r.rate_b, r.status_b, r.unit))}</td>'
                       f'<td class="n">{e(ratio_text(r))}</td></tr>')
        out.append("</table></section>")
    out.append("</body></html>\n")
    return "\n".join(out)
