"""The report of a recorded run: a summary table per interface (text, and the same as
JSON) and a self-contained HTML page with inline SVG charts of throughput, PAUSE/PFC
frames and drops over the run. The page has no script and loads nothing, so it can be
mailed or attached to a ticket and opened anywhere.

The text summary looks like this::

    nwa40ab (veth, driver 1.0.0, no PCI address) over 5.21 s
      COUNTER                    DELTA              MEAN           PEAK
      nic_tx_bytes_total         10,420,000 B       16.0 Mb/s      21.3 Mb/s
      nic_tx_packets_total       10,000 packets     1.92k/s        2.55k/s
      PAUSE/PFC: none. Drops and errors: none.

Totals are the difference of the before and after snapshots (exact integers, flagged when
a counter was reset); mean is that total over the run's duration; peak is the highest rate
between two consecutive polls (the sampling interval), summed over a family's labels.
"""

from __future__ import annotations

import html
import math
import shlex
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nicwatch.metrics import (
    FAMILIES,
    PHY_RX_BYTES,
    PHY_TX_BYTES,
    RDMA_RX_BYTES,
    RDMA_TX_BYTES,
    RX_BYTES,
    RX_DISCARDS,
    RX_DROPPED,
    RX_OUT_OF_BUFFER_DROPS,
    RX_PACKETS,
    RX_PAUSE_CTRL_FRAMES,
    RX_PAUSE_FRAMES,
    RX_PFC_FRAMES,
    RX_PFC_TC_FRAMES,
    TX_BYTES,
    TX_DISCARDS,
    TX_DROPPED,
    TX_PACKETS,
    TX_PAUSE_CTRL_FRAMES,
    TX_PAUSE_FRAMES,
    TX_PFC_FRAMES,
    TX_PFC_TC_FRAMES,
)
from nicwatch.model import NicIdentity
from nicwatch.printable import printable
from nicwatch.snapshot import rxreport
from nicwatch.snapshot.format import OK, Diff, Snapshot, family_total, when
from nicwatch.snapshot.linkreport import link_line
from nicwatch.tracker import TrackedRdma, TrackedSample

# --------------------------------------------------------------------------- numbers


def si(value: float | None, unit: str = "") -> str:
    """``value`` with an SI prefix and three significant digits: ``9.41 Gb/s``, ``1.2k/s``."""
    if value is None or (type(value) is float and not math.isfinite(value)):  # ints: exact
        return "-"
    space = " " if unit[:1].isalpha() else ""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{space}{prefix}{unit}"
    return f"{value:.3g}{space}{unit}"


_SYMBOLS = {"bytes": "B"}


def symbol(unit: str) -> str:
    """The short form of a family's unit where there is one (bytes: B)."""
    return _SYMBOLS.get(unit, unit)


def amount(value: float | None, unit: str) -> str:
    """A counter difference, exact: ``10,420,000 B``, ``1.834567 seconds``."""
    if value is None:
        return "-"
    text = number(value)
    unit = symbol(unit)
    return f"{text} {unit}" if unit else text


def number(value: float) -> str:
    """A count in the report's one format: whole numbers with thousands separators however
    large (a scaled counter is a float: ``128,009,000,000``, never ``1.28009e+11``), other
    values to six significant digits, never in exponent form."""
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return str(value)
    if value.is_integer():
        return f"{int(value):,}"
    if abs(value) >= 1e5:
        return f"{value:,.0f}"
    digits = max(0, 5 - math.floor(math.log10(abs(value)))) if value else 0
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".")


def duration(seconds: float | None) -> str:
    """A length of time for people, in one format everywhere: ``3.2 s``, ``34 s``,
    ``1m55s``, ``2h05m`` (the exact seconds are in the JSON)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "-"
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    if seconds < 59.5:
        return f"{round(seconds)} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


def rate(value: float | None, unit: str) -> str:
    """A per-second rate for people: bytes as bits/s, time paused as a percentage."""
    if value is None:
        return "-"
    if unit == "bytes":
        return si(value * 8, "b/s")
    if unit == "seconds":
        return f"{value * 100:.3g}% of the time"
    return si(value, "/s")


# --------------------------------------------------------------------------- time series


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    families: tuple[str, ...]  # summed over their labels, or one line per label that moved
    scale: float = 1.0  # e.g. 8 for bytes -> bits
    # Drawn dashed and first: a line another may lie on (mlx5's PAUSE ctrl counter counts
    # PFC frames too, so on a PFC storm it equals the rx PFC line, which stays visible).
    dashed: bool = False


@dataclass(frozen=True, slots=True)
class Chart:
    key: str
    title: str
    unit: str
    lines: tuple[Line, ...]


CHARTS = (
    Chart("throughput", "Throughput", "b/s", (
        Line("rx", (RX_BYTES.name,), 8), Line("tx", (TX_BYTES.name,), 8),
        Line("port rx", (PHY_RX_BYTES.name,), 8),
        Line("port tx", (PHY_TX_BYTES.name,), 8),
        Line("RDMA rx", (RDMA_RX_BYTES.name,), 8),
        Line("RDMA tx", (RDMA_TX_BYTES.name,), 8))),
    Chart("pause", "PAUSE/PFC frames", "frames/s", (
        Line("rx PAUSE", (RX_PAUSE_FRAMES.name,)),
        Line("tx PAUSE", (TX_PAUSE_FRAMES.name,)),
        Line("rx PFC", (RX_PFC_FRAMES.name, RX_PFC_TC_FRAMES.name)),
        Line("tx PFC", (TX_PFC_FRAMES.name, TX_PFC_TC_FRAMES.name)),
        Line("rx PAUSE ctrl (may include PFC)", (RX_PAUSE_CTRL_FRAMES.name,),
             dashed=True),
        Line("tx PAUSE ctrl (may include PFC)", (TX_PAUSE_CTRL_FRAMES.name,),
             dashed=True))),
    Chart("drops", "Drops and discards", "packets/s", (
        Line("rx out of buffer", (RX_OUT_OF_BUFFER_DROPS.name,)),
        Line("rx discards", (RX_DISCARDS.name,)),
        Line("tx discards", (TX_DISCARDS.name,)),
        Line("rx dropped", (RX_DROPPED.name,)),
        Line("tx dropped", (TX_DROPPED.name,)))),
)
_CHARTED = frozenset(f for chart in CHARTS for line in chart.lines for f in line.families)


def _families(key: str) -> tuple[str, ...]:
    (chart,) = (c for c in CHARTS if c.key == key)
    return tuple(f for line in chart.lines for f in line.families)


PAUSE_FAMILIES, DROP_FAMILIES = _families("pause"), _families("drops")


def family_rates(ts: TrackedSample | TrackedRdma) -> dict[str, float | None]:
    """Each counter family's rate over the last poll, summed over its labels; None when
    any of its series has no rate (first poll, reset, changed statistic set)."""
    sums: dict[str, float | None] = {}
    for key, t in ts.counters.items():
        if key.metric in sums and sums[key.metric] is None:
            continue
        before = sums.get(key.metric, 0.0)
        sums[key.metric] = None if t.rate is None or before is None else before + t.rate
    return sums


def _add_rates(into: dict[str, float | None], more: Mapping[str, float | None]) -> None:
    """Sum ``more`` into ``into`` family by family (None, no rate, wins)."""
    for family, value in more.items():
        if family in into:
            before = into[family]
            into[family] = None if before is None or value is None else before + value
        else:
            into[family] = value


Labels = tuple[tuple[str, str], ...]


def series_rates(ts: TrackedSample) -> dict[tuple[str, Labels], float | None]:
    """The rate of each labelled counter series over the last poll (a family's breakdown:
    which priority, lane or traffic class moved)."""
    return {(key.metric, key.labels): t.rate for key, t in ts.counters.items() if key.labels}


# A sample shorter than this fraction of the sampling interval (record's last one, taken
# when the command exits, can be 1 ms after the one before) is merged into the sample
# before it, never a rate of its own: a counter the driver refreshes in steps reads as a
# spike over 1 ms (4.92 Gb/s against a true maximum of 4.36) or as zero (a drops line
# falling to 0 at the end). Merged, the last point spans at most 1.5 intervals and at least
# one, like every other point.
SHORT_SAMPLE_FRACTION = 0.5

Rates = dict[str, float | None]
LabelledRates = dict[tuple[str, Labels], float | None]


def _merged(a: Mapping[Any, float | None], b: Mapping[Any, float | None], span_a: float,
            span_b: float) -> dict[Any, float | None]:
    """Rates over two consecutive spans as one: each weighted by its span (a rate is a
    delta over its span, so this is the summed deltas over the summed spans). A series
    without a rate in either, or new in the second, has none over both."""
    out: dict[Any, float | None] = {}
    for key, x in a.items():
        if key not in b:
            out[key] = x
            continue
        y = b[key]
        out[key] = None if x is None or y is None else (x * span_a + y * span_b) / (
            span_a + span_b)
    out.update({key: None for key in b if key not in a})
    return out


def _peaks_with(settled: dict[Any, float], pending: Mapping[Any, float | None]
                ) -> dict[Any, float]:
    out = dict(settled)
    for key, value in pending.items():
        if value is not None and value > out.get(key, -math.inf):
            out[key] = value
    return out


@dataclass(slots=True)
class _DeviceSeries:
    seconds: array[float] = field(default_factory=lambda: array("d"))  # since timeline start
    rates: dict[str, array[float]] = field(default_factory=dict)  # charted family -> per poll
    # labelled series: charted ones per poll
    series: dict[tuple[str, Labels], array[float]] = field(default_factory=dict)
    # highest rates of the points before the last (the last may still be merged into)
    settled_peaks: dict[str, float] = field(default_factory=dict)
    settled_series_peaks: dict[tuple[str, Labels], float] = field(default_factory=dict)
    last: Rates = field(default_factory=dict)  # the last point's rates, every family
    last_labelled: LabelledRates = field(default_factory=dict)
    at: float | None = None  # the last sample's monotonic time
    span: float | None = None  # the seconds its rates cover (None: it has none)

    @property
    def peaks(self) -> dict[str, float]:
        """Family -> highest rate of any point."""
        return _peaks_with(self.settled_peaks, self.last)

    @property
    def series_peaks(self) -> dict[tuple[str, Labels], float]:
        """Labelled series -> highest rate of any point."""
        return _peaks_with(self.settled_series_peaks, self.last_labelled)


class Timeline:
    """Per-poll rates of every interface, summed per family: 8 bytes per charted family
    and poll, so a long run stays small. NaN marks a poll without a rate (the first one,
    a reset, a changed statistic set). With ``interval``, a sample shorter than
    SHORT_SAMPLE_FRACTION of it is merged into the point before it."""

    def __init__(self, interval: float | None = None) -> None:
        self.start: float | None = None
        self.devices: dict[str, _DeviceSeries] = {}
        self.merge_below = SHORT_SAMPLE_FRACTION * interval if interval else 0.0

    def add(self, monotonic: float, tracked: Sequence[TrackedSample],
            rdma: Sequence[TrackedRdma] = ()) -> None:
        """One poll's interfaces, each with the rates of the RDMA ports of its netdev; an
        RDMA port without a netdev (an InfiniBand port) as a device of its own, named
        ``rdma_device/port`` as in snapshots (records.poll_of). The spans of the rates are
        the samples' own read times."""
        if self.start is None:
            self.start = monotonic
        ports: dict[str, list[TrackedRdma]] = {}
        for tr in rdma:
            if tr.sample.port.netdev is not None:
                ports.setdefault(tr.sample.port.netdev, []).append(tr)
        for ts in tracked:
            rates = family_rates(ts)
            for tr in ports.get(ts.sample.identity.device, ()):
                _add_rates(rates, family_rates(tr))
            self.add_rates(monotonic, ts.sample.identity.device, rates, series_rates(ts),
                           at=ts.sample.monotonic)
        for tr in rdma:
            if tr.sample.port.netdev is None:
                self.add_rates(monotonic, tr.sample.key, family_rates(tr),
                               at=tr.sample.monotonic)

    def add_rates(self, monotonic: float, device: str, rates: Mapping[str, float | None],
                  labelled: Mapping[tuple[str, Labels], float | None] | None = None,
                  at: float | None = None) -> None:
        """One interface's :func:`family_rates` (and :func:`series_rates`) at one poll;
        ``at`` is when its sample was read (default ``monotonic``)."""
        if self.start is None:
            self.start = monotonic
        at = monotonic if at is None else at
        labelled = labelled or {}
        dev = self.devices.setdefault(device, _DeviceSeries())
        span = None if dev.at is None else at - dev.at
        n = len(dev.seconds)
        if span is not None and span < self.merge_below and dev.span is not None and n:
            self._merge(dev, monotonic, at, span, rates, labelled)
            return
        dev.settled_peaks = dev.peaks
        dev.settled_series_peaks = dev.series_peaks
        dev.last, dev.last_labelled = dict(rates), dict(labelled)
        dev.at = at
        dev.span = span if span is not None and any(v is not None for v in rates.values()) \
            else None
        dev.seconds.append(monotonic - self.start)
        for family, value in rates.items():
            if family in _CHARTED:
                series = dev.rates.setdefault(family, array("d", [math.nan] * n))
                series.append(math.nan if value is None else value)
        for key, value in labelled.items():
            if key[0] in _CHARTED:
                series = dev.series.setdefault(key, array("d", [math.nan] * n))
                series.append(math.nan if value is None else value)
        for series in (*dev.rates.values(), *dev.series.values()):
            if len(series) == n:  # absent this poll
                series.append(math.nan)

    def _merge(self, dev: _DeviceSeries, monotonic: float, at: float, span: float,
               rates: Mapping[str, float | None],
               labelled: Mapping[tuple[str, Labels], float | None]) -> None:
        """The short sample folded into the last point: its rates over both spans, at the
        short sample's time."""
        assert dev.span is not None and self.start is not None
        dev.last = _merged(dev.last, rates, dev.span, span)
        dev.last_labelled = _merged(dev.last_labelled, labelled, dev.span, span)
        dev.span += span
        dev.at = at
        dev.seconds[-1] = monotonic - self.start
        for family, series in dev.rates.items():
            value = dev.last.get(family)
            series[-1] = math.nan if value is None else value
        for key, series in dev.series.items():
            value = dev.last_labelled.get(key)
            series[-1] = math.nan if value is None else value


# --------------------------------------------------------------------------- summary


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


# --------------------------------------------------------------------------- sections
#
# A report is a list of sections, each rendered by one function per format: SECTIONS for
# the whole report, INTERFACE_SECTIONS once per interface. A section that has nothing to
# say returns no lines. Add one with one line in either tuple.


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    text: Callable[[Report], list[str]]
    html: Callable[[Report], list[str]]


@dataclass(frozen=True, slots=True)
class InterfaceSection:
    name: str
    text: Callable[[Report, InterfaceSummary], list[str]]
    html: Callable[[Report, InterfaceSummary], list[str]]


def _verdict_text(r: Report) -> list[str]:
    from nicwatch.diagnosis.render import report_section  # the report opens with its verdict
    return report_section(r.before, r.after)[:-1]


def _verdict_html(r: Report) -> list[str]:
    lines = _verdict_text(r)
    if not lines:
        return []
    return ['<section class="verdict"><h2>Verdict</h2><pre>',
            *(html.escape(x) for x in lines[2:]), "</pre></section>"]


def _provenance_text(r: Report) -> list[str]:
    return table([(k, v) for k, v in _provenance(r)])


def _provenance_html(r: Report) -> list[str]:
    e = html.escape
    return ['<table class="provenance">',
            *(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _provenance(r)),
            "</table>"]


def _flags_text(r: Report, s: InterfaceSummary) -> list[str]:
    return ["flagged: " + ", ".join(s.flags)] if s.flags else []


def _flags_html(r: Report, s: InterfaceSummary) -> list[str]:
    return [f'<p class="flag">flagged: {html.escape(", ".join(s.flags))}</p>'] if s.flags \
        else []


def _counters_text(r: Report, s: InterfaceSummary) -> list[str]:
    out = []
    for title, rows, counted in _groups(s):
        if not rows:
            if title != "Traffic and other counters":
                out.append(_none(title, counted))
            continue
        out += [*([""] if out else []), *table(
            [[f"  {title.upper()}", "DELTA", "MEAN", "PEAK"],
             *map(_cells, _rows_with_parts(rows))], frozenset({1, 2, 3}))]
    return out


def _counters_html(r: Report, s: InterfaceSummary) -> list[str]:
    e = html.escape
    out = []
    for title, rows, counted in _groups(s):
        if not rows:
            if title != "Traffic and other counters":
                out.append(f'<p class="none">{e(_none(title, counted))}</p>')
            continue
        out.append(f'<table class="counters"><caption>{e(title)}</caption><tr><th>counter</th>'
                   '<th class="n">delta</th><th class="n">mean</th><th class="n">peak</th></tr>')
        for row in _rows_with_parts(rows):
            cells = _cells(row)
            cls = "part" if row.labels else ("health" if row.health else "")
            name = labels_text(row.labels) if row.labels else row.family
            out.append(f'<tr class="{cls}"><td>{e(name)}</td>'
                       + "".join(f'<td class="n">{e(c)}</td>' for c in cells[1:]) + "</tr>")
        out.append("</table>")
    return out


def _charts_html(r: Report, s: InterfaceSummary) -> list[str]:
    return ['<div class="charts">',
            *(svg for _, svg in charts(r.timeline, s.device, r.marks, r.axis)), "</div>"]


def _link_text(r: Report, s: InterfaceSummary) -> list[str]:
    link = link_line(r.after, r.diff, s.device)
    return [link] if link else []


def _link_html(r: Report, s: InterfaceSummary) -> list[str]:
    link = link_line(r.after, r.diff, s.device)
    return [f'<p class="link">{html.escape(link)}</p>'] if link else []


def _rx_text(r: Report, s: InterfaceSummary) -> list[str]:
    return rxreport.text_lines(rxreport.summaries(r.diff, r.after).get(s.device))


def _rx_html(r: Report, s: InterfaceSummary) -> list[str]:
    section = rxreport.html_section(rxreport.summaries(r.diff, r.after).get(s.device))
    return [section] if section else []


def _interfaces_text(r: Report) -> list[str]:
    if not r.interfaces:
        return ["no interfaces selected (see --interfaces.include)"]
    out: list[str] = []
    for s in r.interfaces:
        out += [*([""] if out else []),
                f"{s.device} ({describe(s.identity)}) over {duration(s.seconds)}"]
        for section in INTERFACE_SECTIONS:
            out += ["  " + x if x else x for x in section.text(r, s)]
    return out


def _interfaces_html(r: Report) -> list[str]:
    e = html.escape
    out = []
    for s in r.interfaces:
        out.append(f'<section id="if-{e(s.device)}"><h2>{e(s.device)} '
                   f"<small>({e(describe(s.identity))}), {duration(s.seconds)}</small></h2>")
        for section in INTERFACE_SECTIONS:
            out += section.html(r, s)
        out.append("</section>")
    return out


def _unmatched(r: Report) -> list[str]:
    return [f"interfaces seen {side}: {', '.join(names)}" for names, side in (
        (r.diff.only_a, "before only"), (r.diff.only_b, "after only")) if names]


SECTIONS: tuple[Section, ...] = (
    Section("verdict", _verdict_text, _verdict_html),  # diagnosis/render.py
    Section("provenance", _provenance_text, _provenance_html),
    Section("interfaces", _interfaces_text, _interfaces_html),
    Section("unmatched", _unmatched,
            lambda r: [f"<p>{html.escape(x)}</p>" for x in _unmatched(r)]),
)
INTERFACE_SECTIONS: tuple[InterfaceSection, ...] = (
    InterfaceSection("flags", _flags_text, _flags_html),
    InterfaceSection("charts", lambda r, s: [], _charts_html),  # the story first, then numbers
    InterfaceSection("counters", _counters_text, _counters_html),
    InterfaceSection("link", _link_text, _link_html),  # snapshot/linkreport.py
    InterfaceSection("receive path", _rx_text, _rx_html),  # snapshot/rxreport.py
)


def text_report(r: Report) -> str:
    lines = [r.heading]
    for section in SECTIONS:
        part = section.text(r)
        if part:
            lines += ["", *part]
    return printable("\n".join(lines), keep="\n", backslash=False) + "\n"


def _row_json(row: FamilyRow) -> dict[str, Any]:
    return {"family": row.family, "unit": row.unit, "health": row.health, "delta": row.delta,
            "status": row.status, "mean_per_second": row.mean, "peak_per_second": row.peak}


def json_report(r: Report) -> dict[str, Any]:
    from nicwatch.diagnosis.render import report_json
    rx = rxreport.summaries(r.diff, r.after)
    return {
        "verdict": report_json(r.before, r.after),
        **({"command": list(r.run.argv), "exit_status": r.run.exit_status,
            "interval": r.run.interval} if r.run else {"title": r.title}),
        "context": dict(r.context),
        "started": r.diff.time_a, "ended": r.diff.time_b,
        "seconds": r.diff.seconds, "files": list(r.files),
        "host": {"hostname": r.after.host.hostname, "boot_id": r.after.host.boot_id,
                 "boot_time": r.after.host.boot_time,
                 "kernel_release": r.after.host.kernel_release},
        "nicwatch_version": r.after.nicwatch_version,
        "marks": [{"name": name, "seconds": t} for name, t in r.marks],
        "interfaces": [{
            "device": s.device, "seconds": s.seconds, "flags": list(s.flags),
            "identity": {f: getattr(s.identity, f) for f in s.identity.__slots__},
            "counters": [{**_row_json(row), "by_label": [
                {"labels": dict(p.labels), **_row_json(p)} for p in row.parts]}
                for row in s.rows],
            "receive_path": rxreport.json_value(rx.get(s.device)),
        } for s in r.interfaces],
        "only_before": list(r.diff.only_a), "only_after": list(r.diff.only_b),
    }


# --------------------------------------------------------------------------- SVG charts

WIDTH, HEIGHT = 640, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 16, 40, 34
_LEGEND_ROW = 14
MAX_POINTS = 600  # longer series are cut into buckets that keep their highest rate
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#17becf")


def _axis(maximum: float, ticks: int = 5) -> tuple[float, float]:
    """A tick step of 1, 2 or 5 x 10^n and the axis end, a whole number of steps at or
    above ``maximum`` (1 when there is nothing to show)."""
    if not maximum > 0:
        return 0.2, 1.0
    rough = maximum / ticks
    exponent = math.floor(math.log10(rough))
    step = next(m * 10.0 ** exponent for m in (1, 2, 5, 10) if m * 10.0 ** exponent >= rough)
    return step, step * math.ceil(maximum / step - 1e-9)


def _bucketed(times: Sequence[float],
              values: Sequence[float]) -> tuple[list[float], list[float]]:
    if len(values) <= MAX_POINTS:
        return list(times), list(values)
    size = math.ceil(len(values) / MAX_POINTS)
    xs: list[float] = []
    ys: list[float] = []
    for start in range(0, len(values), size):
        chunk = [v for v in values[start:start + size] if not math.isnan(v)]
        xs.append(times[min(start + size, len(times)) - 1])
        ys.append(max(chunk) if chunk else math.nan)
    return xs, ys


@dataclass(frozen=True, slots=True)
class Drawn:
    """One line of a chart: its legend, values per poll, and whether it is dashed."""

    name: str
    values: Sequence[float]
    dashed: bool = False


def _legend(names: Sequence[str]) -> list[tuple[float, float]]:
    """Where each legend entry goes: rows that wrap at the chart's width."""
    out, x, y = [], float(_LEFT), 33.0
    for name in names:
        width = 24 + 6.5 * len(name)
        if x > _LEFT and x + width > WIDTH - _RIGHT:
            x, y = float(_LEFT), y + _LEGEND_ROW
        out.append((x, y))
        x += width
    return out


def svg_chart(title: str, unit: str, times: Sequence[float],
              lines: Sequence[tuple[str, Sequence[float]] | Drawn],
              marks: Sequence[tuple[str, float]] = (),
              axis: str = "time since the start of the run") -> str:
    """A line chart of rates over time as an inline SVG element. The time axis ends at the
    last poll; ``marks`` are vertical lines at moments (an incident's onset and close)."""
    drawn = [d if isinstance(d, Drawn) else Drawn(*d) for d in lines]
    places = _legend([d.name for d in drawn])
    top_px = _TOP + (places[-1][1] - 33 if places else 0)
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - top_px - _BOTTOM
    finite = [v for d in drawn for v in d.values if not math.isnan(v)]
    y_step, top = _axis(max(finite, default=0.0))
    last = max(times, default=0.0)
    x_step, _ = _axis(last)
    end = last if last > 0 else 1.0

    def x(t: float) -> float:
        return _LEFT + plot_w * t / end

    def y(v: float) -> float:
        return top_px + plot_h * (1 - v / top)

    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} '
            f'{HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
            f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>'),
           f'<text x="{_LEFT}" y="16" class="title">{html.escape(title)} ({unit})</text>']
    for i in range(round(top / y_step) + 1):
        value = i * y_step
        out.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y(value):.1f}" '
                   f'y2="{y(value):.1f}" class="grid"/><text x="{_LEFT - 6}" '
                   f'y="{y(value) + 4:.1f}" class="ylabel">{si(value)}</text>')
    for i in range(int(end / x_step + 1e-9) + 1):
        out.append(f'<text x="{x(i * x_step):.1f}" y="{HEIGHT - _BOTTOM + 16}" '
                   f'class="xlabel">{duration(i * x_step).replace(".0 s", " s")}</text>')
    out.append(f'<text x="{WIDTH - _RIGHT}" y="{HEIGHT - 4}" class="xlabel end">'
               f"{html.escape(axis)}</text>")
    for i, (name, t) in enumerate(marks):
        if 0 <= t <= end:
            # labels one row apart (an onset and a close may be close), left of the line
            # near the right edge
            left = x(t) > WIDTH - _RIGHT - 60
            out.append(f'<line class="mark" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top_px}" '
                       f'y2="{top_px + plot_h}"/><text class="mark{" end" if left else ""}" '
                       f'x="{x(t) + (-3 if left else 3):.1f}" y="{top_px + 10 + 12 * i}">'
                       f"{html.escape(name)}</text>")
    order = sorted(range(len(drawn)), key=lambda i: not drawn[i].dashed)  # dashed first
    for i in order:
        d, color, (lx, ly) = drawn[i], COLORS[i % len(COLORS)], places[i]
        dash = ' stroke-dasharray="6 4"' if d.dashed else ""
        out.append(f'<line x1="{lx:.1f}" x2="{lx + 14:.1f}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="3"{dash}/><text x="{lx + 18:.1f}" '
                   f'y="{ly}" class="legend">{html.escape(d.name)}</text>')
        xs, ys = _bucketed(times, d.values)
        segment: list[str] = []
        cls = "series dashed" if d.dashed else "series"
        for t, v in (*zip(xs, ys, strict=False), (0.0, math.nan)):  # a NaN ends the last segment
            if math.isnan(v):
                if segment:
                    out.append(f'<polyline class="{cls}" stroke="{color}"{dash} '
                               f'points="{" ".join(segment)}"/>')
                    if len(segment) == 1:
                        px, py = segment[0].split(",")
                        out.append(f'<circle cx="{px}" cy="{py}" r="3" fill="{color}"/>')
                segment = []
            else:
                segment.append(f"{x(t):.1f},{y(v):.1f}")
    if not any(finite):
        note = "no activity" if drawn else "not counted by this interface"
        out.append(f'<text x="{_LEFT + plot_w / 2}" y="{top_px + plot_h / 2}" '
                   f'class="none">{note}</text>')
    out.append("</svg>")
    return "".join(out)


def _short(labels: Labels) -> str:
    """A label set in a legend: ``prio 3``, ``tc 2``, else ``k=v``."""
    words = {"priority": "prio", "traffic_class": "tc", "tc": "tc", "lane": "lane"}
    return " ".join(f"{words[k]} {v}" if k in words else f"{k}={v}" for k, v in labels)


def _chart_lines(series: _DeviceSeries, chart: Chart) -> list[Drawn]:
    """A line per family, or per label set of it that moved (which priority, lane or
    traffic class): never a sum that hides which one it was."""
    out = []
    for line in chart.lines:
        parts = [series.rates[f] for f in line.families if f in series.rates]
        if not parts:
            continue
        labelled = [(labels, values) for (family, labels), values in series.series.items()
                    if family in line.families and any(v > 0 for v in values)]
        if labelled:
            out += [Drawn(f"{line.label} {_short(labels)}", [line.scale * v for v in values],
                          line.dashed) for labels, values in labelled]
        else:
            out.append(Drawn(line.label, [line.scale * sum(vs) for vs in zip(*parts,
                                                                              strict=False)],
                             line.dashed))
    return out


def charts(timeline: Timeline, device: str, marks: Sequence[tuple[str, float]] = (),
           axis: str = "time since the start of the run") -> list[tuple[Chart, str]]:
    """The SVG charts of one interface: every chart, with a line per family it has (per
    label set where the family's series moved by label)."""
    series = timeline.devices.get(device)
    if series is None:
        return []
    return [(chart, svg_chart(chart.title, chart.unit, series.seconds,
                              _chart_lines(series, chart), marks, axis)) for chart in CHARTS]


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1320px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
code { font: 13px ui-monospace, monospace; background: #f3f3f3; padding: 0 .2em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
caption { text-align: left; font-weight: 600; padding: .2em 0; }
th, td { padding: .15em .6em; text-align: left; border-bottom: 1px solid #e4e4e4;
         white-space: nowrap; }
table.provenance td { white-space: normal; max-width: 1100px; }  /* free text: a long
   command or interface list wraps rather than widen the page */
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.health td:first-child { font-weight: 600; }
tr.part td:first-child { padding-left: 2em; color: #444; }
tr.worse td { color: #b00; font-weight: 600; }
p.flag { color: #b00; font-weight: 600; }
section.verdict pre { white-space: pre-wrap; overflow-wrap: anywhere; }  /* a long `next:`
   line wraps at the page's width, indentation kept, rather than run past it */
p.none { color: #555; }
div.charts { display: flex; flex-wrap: wrap; gap: 0 16px; }
svg.chart { display: block; margin: 1em 0; }
svg .title { font-size: 13px; font-weight: 600; }
svg .grid { stroke: #e4e4e4; }
svg .ylabel { font-size: 11px; text-anchor: end; fill: #555; }
svg .xlabel { font-size: 11px; text-anchor: middle; fill: #555; }
svg .xlabel.end { text-anchor: end; }
svg .legend { font-size: 11px; fill: #333; }
svg .series { fill: none; stroke-width: 1.5; }
svg .series.dashed { stroke-width: 2.5; stroke-opacity: .6; }
svg line.mark { stroke: #000; stroke-dasharray: 2 3; }
svg text.mark { font-size: 11px; fill: #000; }
svg text.mark.end { text-anchor: end; }
svg .none { font-size: 13px; text-anchor: middle; fill: #999; }
"""


def html_report(r: Report) -> str:
    e = html.escape
    summary = (f"<p><code>{e(shlex.join(r.run.argv))}</code> exited with status "
               f"{r.run.exit_status} after {duration(r.diff.seconds)}.</p>") if r.run else ""
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{e(r.heading)}</title>",
           f"<style>{STYLE}</style></head><body>",
           f"<h1>{e(r.heading if not r.run else 'nicwatch record')}</h1>",
           summary]
    for section in SECTIONS:
        out += section.html(r)
    out.append("</body></html>\n")
    return "\n".join(out)
