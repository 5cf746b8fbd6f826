"""Render tracked samples into the Prometheus text format (0.0.4) or OpenMetrics 1.0.

The daemon renders once per poll and serves the bytes from a cache, so this is the only
place where the exposition is built. It is a small serializer of its own: the families and
their HELP text come from nicwatch.metrics, and prometheus_client's generic renderer costs
10-20 us per sample at the scale of mlx5 raw counters.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, is_
from typing import Any

from nicwatch import __version__, metrics
from nicwatch.metrics import FAMILIES, RATED_COUNTERS, Family
from nicwatch.model import Counted, ExtraFamily, Labels, RdmaPort, SeriesKey, SourceRun
from nicwatch.tracker import Tracked, TrackedRdma, TrackedSample, TrackedThing

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
_RATED = frozenset(RATED_COUNTERS)
_LABEL_CACHE_SLACK = 4096
_Series = tuple[Labels, float]
_Slot = tuple[bool, str, str]  # (OpenMetrics, family name, HELP text)
_Block = tuple[tuple[tuple[str, list[str]], ...], tuple[tuple[str, list[str]], ...],
               tuple[tuple[str, list[_Series]], ...]]
_BY_KEY = attrgetter("sample.key")


class Renderer:
    """Renders the exposition of each poll, reusing what it built at the last render: the
    daemon owns one (a fresh one remembers nothing: module-level :func:`render`).

    What it keeps: the text of each label set (sets repeat from poll to poll: each is escaped
    and joined once, then looked up); the sample line of each interface series with the value
    it shows (most values do not change between polls, and looking a line up costs a fraction
    of formatting it; a line is the same in both formats); and per device its lines grouped
    by family with what they were built from (the tracker hands back the same record while a
    series' value, rate and peak stay the same, and gauges rarely change, so most devices'
    lines are reused whole after comparing a few tuples in C); and per family the bytes of its
    text with what they were built from (a canonical family: its devices' line lists, the
    same objects while each device's lines are; a consumer's family: its series), so the
    families of an idle host are not joined or encoded again. The label texts and lines are
    bounded by what renders use: past twice the last render's series (interfaces came and
    went), they start over; a device gone from a render leaves its lines, a family gone
    from a render its bytes."""

    def __init__(self, detail: str = metrics.DEFAULT_DETAIL) -> None:
        # what --collector.detail serves (metrics.exposure): families left out, series kept
        self.exposure = metrics.exposure(detail)
        self._label_text: dict[Any, str] = {}  # label pairs (a tuple) -> their text
        self._lines: dict[tuple[Any, ...], tuple[float, str]] = {}  # (device, key[, peak])
        self._blocks: dict[str, tuple[tuple[Any, ...], _Block]] = {}  # device -> lines
        # (openmetrics, family, HELP) -> (what its text was built from, the text as bytes, series):
        # the per-device line lists of a canonical family (the same list objects while each
        # device's block is reused), or a consumer family's series
        self._chunks: dict[_Slot, tuple[Any, bytes, int]] = {}

    def render(self, tracked: Sequence[TrackedSample], stats: SelfStats,
               openmetrics: bool = False, extra: Sequence[ExtraFamily] = (),
               rates: bool = False, rdma: Sequence[TrackedRdma] = ()) -> bytes:
        """The exposition of one poll (see :func:`render`)."""
        return _render(self, tracked, stats, openmetrics, extra, rates, rdma)

    def line(self, name: str, labels: Sequence[tuple[str, str]], value: float) -> str:
        return f"{name}{self._cached_labels(labels)} {_number(value)}"

    def _cached_labels(self, pairs: Sequence[tuple[str, str]]) -> str:
        try:
            text: str | None = self._label_text.get(pairs)
        except TypeError:  # not hashable (a list): not cached
            return _labels(pairs)
        if text is None:
            text = self._label_text[pairs] = _labels(pairs)
        return text


def _device_lines(r: Renderer, device: str, dev: Labels, ts: TrackedThing[Counted],
                  rates: bool) -> _Block:
    """One device's lines by family: (family, lines) for its counters and gauges, (family,
    peak lines), and (family, (labels, rate)) when ``rates``; each in the order of its
    series' keys. Reused from the last render while built from the same inputs."""
    counters, gauges = ts.counters, ts.sample.gauges
    # keys and values apart: no (key, value) pair objects kept per gauge and device
    inputs = (tuple(counters), tuple(counters.values()), tuple(gauges), tuple(gauges.values()),
              rates)
    blocks, cache, line_of = r._blocks, r._lines, r.line
    hidden, partial, unpeaked = r.exposure.hidden, r.exposure.partial, r.exposure.unpeaked
    last = blocks.get(device)
    if last is not None and last[0] == inputs:
        return last[1]
    families: dict[str, list[str]] = {}
    peaks: dict[str, list[str]] = {}
    rate_values: dict[str, list[_Series]] = {}
    for key in sorted(counters):  # SeriesKey: by metric, then labels
        t = counters[key]
        metric = key.metric
        if metric in hidden:
            continue
        line, peak = _counter_lines(cache, line_of, device, dev, key, t)
        families.setdefault(metric, []).append(line)
        if peak is not None and metric not in unpeaked:
            peaks.setdefault(metric, []).append(peak)
        if rates and t.rate is not None and metric in _RATED:
            rate_values.setdefault(metric, []).append((dev + key.labels, t.rate))
    for key in sorted(gauges):
        value = gauges[key]
        if key.metric in hidden or ((keep := partial.get(key.metric)) is not None
                                    and not keep(key.labels, value)):
            continue
        hit = cache.get(slot := (device, key))
        if hit is None or hit[0] != value or type(hit[0]) is not type(value):
            hit = cache[slot] = (value, _series_line(hit, key.metric, dev + key.labels, value))
        families.setdefault(key.metric, []).append(hit[1])
    if last is not None:  # a family whose lines are all as before keeps its list (and so,
        # while the other devices' do too, the family's text: _family_of_parts)
        _keep_equal(families, last[1][0])
        _keep_equal(peaks, last[1][1])
    built = (tuple(families.items()), tuple(peaks.items()), tuple(rate_values.items()))
    blocks[device] = (inputs, built)
    return built


def _keep_equal(new: dict[str, list[str]], old: tuple[tuple[str, list[str]], ...]) -> None:
    """Put back in ``new`` the lists of ``old`` equal to their replacement (the lines are
    mostly the same string objects, so comparing costs little)."""
    for metric, lines in old:
        if new.get(metric) == lines:
            new[metric] = lines


def _counter_lines(cache: dict[tuple[Any, ...], tuple[float, str]],
                   line_of: Callable[[str, Sequence[tuple[str, str]], float], str],
                   device: str, dev: Labels, key: SeriesKey,
                   t: Tracked) -> tuple[str, str | None]:
    """The sample line of a tracked counter and of its peak gauge (None: no peak)."""
    value, metric = t.value, key.metric
    hit = cache.get(slot := (device, key))
    if hit is None or hit[0] != value or type(hit[0]) is not type(value):
        hit = cache[slot] = (value, _series_line(hit, metric, dev + key.labels, value))
    peak = t.peak
    if peak is None:
        return hit[1], None
    peak_hit = cache.get(peak_slot := (device, key, "peak"))
    if peak_hit is None or peak_hit[0] != peak or type(peak_hit[0]) is not type(peak):
        peak_hit = cache[peak_slot] = (peak, _series_line(
            peak_hit, f"{FAMILIES[metric].base}_peak_per_second", dev + key.labels, peak))
    return hit[1], peak_hit[1]


def _series_line(last: tuple[float, str] | None, name: str,
                 labels: Sequence[tuple[str, str]], value: float) -> str:
    """A device series' sample line: its last line's name and labels with the new value
    (the value follows the last space: a number has none), else formatted in full. Device
    series keep their lines, so their label texts are not cached as well: at 2,000
    interfaces that cache held ~25 MB of text the lines already contain."""
    if last is not None:
        text = last[1]
        return text[:text.rindex(" ") + 1] + _number(value)
    return f"{name}{_labels(labels)} {_number(value)}"


@dataclass(frozen=True, slots=True)
class SelfStats:
    """The daemon's own health, rendered as nicwatch_* families."""

    polls: int = 0
    skipped_polls: int = 0
    last_poll_time: float | None = None
    durations: Mapping[str, float] = field(default_factory=dict)
    source_errors: Mapping[tuple[str, str], int] = field(default_factory=dict)
    sources: Sequence[SourceRun] = ()  # how each source's read went in the last poll
    collectors: Sequence[tuple[str, bool]] = ()  # each --[no-]collector.NAME switch: on?
    interval: float = 5.0
    peak_window: float = 60.0


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape(value: str) -> str:
    return _escape_help(value).replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _number(v: float) -> str:
    if type(v) is int:
        return str(v)
    if isinstance(v, int) or (v.is_integer() and abs(v) < 2**53):
        return str(int(v))
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def _plain_line(name: str, labels: Sequence[tuple[str, str]], value: float) -> str:
    return f"{name}{_labels(labels)} {_number(value)}"


class _Writer:
    """The exposition as a list of byte chunks, one per family (a family's text ends with
    its last line's newline), so a family built at the last render is reused as it is."""

    def __init__(self, openmetrics: bool,
                 line: Callable[[str, Sequence[tuple[str, str]], float], str]) -> None:
        self.om = openmetrics
        self._line = line
        self.chunks: list[bytes] = []
        self.series = 0

    def head(self, name: str, kind: str, help: str) -> str:
        declared = name[: -len("_total")] if self.om and kind == "counter" else name
        return f"# HELP {declared} {_escape_help(help)}\n# TYPE {declared} {kind}\n"

    def family(self, name: str, kind: str, help: str,
               series: Sequence[tuple[Sequence[tuple[str, str]], float]]) -> None:
        if not series:
            return
        line = self._line
        self.chunks.append((self.head(name, kind, help) + "\n".join(
            line(name, labels, value) for labels, value in series) + "\n").encode())
        self.series += len(series)

    def family_lines(self, name: str, kind: str, help: str, lines: Sequence[str]) -> None:
        """A family whose sample lines are already formatted."""
        if not lines:
            return
        self.chunks.append((self.head(name, kind, help) + "\n".join(lines) + "\n").encode())
        self.series += len(lines)

    def chunk(self, text: bytes, series: int) -> None:
        """A family's text built before."""
        self.chunks.append(text)
        self.series += series

    def bytes(self) -> bytes:
        if self.om:
            self.chunks.append(b"# EOF\n")
        return b"".join(self.chunks)


def _rate_help(family: Family, peak: bool, window: float) -> str:
    if peak:
        return (f"Highest per-second rate of {family.name} between two consecutive polls "
                f"within the last {window:g} s (nicwatch's own computation, so bursts shorter "
                "than a scrape interval stay visible).")
    return (f"Per-second rate of {family.name} between the last two polls, computed by "
            "nicwatch; absent on the first poll and after a reset. Use rate() on the counter "
            "for scrape-aligned rates.")


def render(tracked: Sequence[TrackedSample], stats: SelfStats, openmetrics: bool = False,
           extra: Sequence[ExtraFamily] = (), rates: bool = False,
           rdma: Sequence[TrackedRdma] = (), detail: str = metrics.DEFAULT_DETAIL) -> bytes:
    """The exposition of one poll, by a Renderer that remembers nothing (the daemon keeps
    one across polls: Renderer.render). ``rdma``: the RDMA ports, each with series of its
    own (rdma_device, port; its netdev, where it has one, as device)."""
    return Renderer(detail).render(tracked, stats, openmetrics, extra, rates, rdma)


def _render(r: Renderer, tracked: Sequence[TrackedSample], stats: SelfStats, openmetrics: bool,
            extra: Sequence[ExtraFamily], rates: bool,
            rdma: Sequence[TrackedRdma] = ()) -> bytes:
    """The exposition of one poll, trimmed to the Renderer's detail level (metrics.exposure:
    --collector.detail). The ``*_peak_per_second`` gauges of byte and flow control counters
    are always served (a burst shorter than a scrape interval is invisible to PromQL), the
    others at --collector.detail=full; the plain ``*_per_second`` gauges
    repeat what ``rate()`` computes from the counters and are served only with ``rates``
    (``--collector.rates``)."""
    w = _Writer(openmetrics, r.line)
    # per family, each thing's lines (the lists of its block, not copied: a family none of
    # whose things changed is the same lists as at the last render, and its text is reused)
    by_family: dict[str, list[list[str]]] = {}
    rate_series: dict[str, list[_Series]] = {}
    peaks: dict[str, list[list[str]]] = {}
    resets: list[_Series] = []
    safe: list[_Series] = []
    ambiguous: list[_Series] = []
    present: set[str] = set()
    # One loop over every counted thing (model.Counted), kind after kind, each kind in the
    # order of its keys: a thing's block is kept by its key (an interface's name, an RDMA
    # port's "mlx5_0/1"), its series carry its own labels. A new kind is one more here.
    kinds: tuple[Sequence[TrackedThing[Counted]], ...] = (tracked, rdma)
    for ts in chain.from_iterable(sorted(things, key=_BY_KEY) for things in kinds):
        thing = ts.sample
        key = thing.key
        present.add(key)
        own = thing.own_labels
        if ts.wrap_safe_interval is not None:
            safe.append((own, ts.wrap_safe_interval))
            ambiguous.append((own, float(bool(ts.wrap_ambiguous))))
        families, peak_lines, rate_values = _device_lines(r, key, own, ts, rates)
        for metric, lines in families:
            if (into := by_family.get(metric)) is None:
                into = by_family[metric] = []
            into.append(lines)
        for metric, lines in peak_lines:
            peaks.setdefault(metric, []).append(lines)
        for metric, series in rate_values:
            rate_series.setdefault(metric, []).extend(series)
        if ts.resets:
            labels = thing.reset_labels
            resets.extend((labels + (("reason", why),), n) for why, n in sorted(ts.resets.items()))
    blocks = r._blocks
    for gone in [d for d in list(blocks) if d not in present]:
        blocks.pop(gone, None)
    last = r._chunks
    chunks: dict[_Slot, tuple[Any, bytes, int]] = {}
    for family in FAMILIES.values():
        if (parts := by_family.get(family.name)) is not None:
            _family_of_parts(w, last, chunks, family.name, family.type, family.help, parts)
    for name in RATED_COUNTERS:
        fam = FAMILIES[name]
        if rates:
            w.family(f"{fam.base}_per_second", "gauge", _rate_help(fam, False, stats.peak_window),
                     rate_series.get(name, ()))
        if (parts := peaks.get(name)) is not None:
            _family_of_parts(w, last, chunks, f"{fam.base}_peak_per_second", "gauge",
                             _rate_help(fam, True, stats.peak_window), parts)
    _emit(w, metrics.STAT_RESETS, resets)
    _emit(w, metrics.STAT_WRAP_SAFE_INTERVAL, safe)
    _emit(w, metrics.STAT_WRAP_AMBIGUOUS, ambiguous)
    for other in extra:  # a consumer's family: reused while its served series are equal
        if other.name in r.exposure.hidden:
            continue
        kept: Sequence[_Series] = other.series
        if (keep := r.exposure.partial.get(other.name)) is not None:
            kept = tuple(s for s in kept if keep(s[0], s[1]))
        if not kept:
            continue
        slot = (openmetrics, other.name, other.help)
        hit = last.get(slot)
        if hit is None or hit[0] != kept:
            mark = len(w.chunks)
            w.family(other.name, other.type, other.help, kept)
            hit = (kept, w.chunks[mark], len(kept))
        else:
            w.chunk(hit[1], hit[2])
        chunks[slot] = hit
    # what a render in the other format built stays (the daemon renders the format last
    # asked for, so both are warm only while scrapers ask for both)
    r._chunks = {**{k: v for k, v in last.items() if k[0] != openmetrics}, **chunks}
    _render_self(w, stats, len(tracked))
    _render_rdma_self(w, [t.sample.port for t in rdma])
    if len(r._label_text) > 2 * w.series + _LABEL_CACHE_SLACK:
        r._label_text.clear()
    if len(r._lines) > 2 * w.series + _LABEL_CACHE_SLACK:
        r._lines.clear()
    return w.bytes()


def _family_of_parts(w: _Writer, last: dict[_Slot, tuple[Any, bytes, int]],
                     chunks: dict[_Slot, tuple[Any, bytes, int]], name: str,
                     kind: str, help: str, parts: list[list[str]]) -> None:
    """A canonical family from each device's lines: its text of the last render when it was
    built from the same lists (identity: a device's block is reused whole while its inputs
    are equal), else built again."""
    slot = (w.om, name, help)
    hit = last.get(slot)
    if hit is not None and len(hit[0]) == len(parts) and all(map(is_, hit[0], parts)):
        w.chunk(hit[1], hit[2])
    else:
        lines = list(chain.from_iterable(parts))
        mark = len(w.chunks)
        w.family_lines(name, kind, help, lines)
        if len(w.chunks) == mark:  # no lines: nothing to keep
            return
        hit = (parts, w.chunks[mark], len(lines))
    chunks[slot] = hit


def render_age(age: float, openmetrics: bool) -> bytes:
    """The scrape-time tail of an exposition: the age family, then ``# EOF`` in
    OpenMetrics. Appended to the cached body of the last poll at every scrape."""
    w = _Writer(openmetrics, _plain_line)
    _emit(w, metrics.LAST_POLL_AGE, [((), round(age, 3))])
    return w.bytes()


def _emit(w: _Writer, family: Family,
          series: Sequence[tuple[Sequence[tuple[str, str]], float]]) -> None:
    w.family(family.name, family.type, family.help, series)


def _render_self(w: _Writer, stats: SelfStats, interfaces: int) -> None:
    _emit(w, metrics.BUILD_INFO,
          [((("version", __version__), ("python", platform.python_version())), 1)])
    _emit(w, metrics.INTERFACES, [((), interfaces)])
    _emit(w, metrics.POLLS, [((), stats.polls)])
    _emit(w, metrics.SKIPPED_POLLS, [((), stats.skipped_polls)])
    if stats.last_poll_time is not None:
        _emit(w, metrics.LAST_POLL, [((), stats.last_poll_time)])
    _emit(w, metrics.POLL_INTERVAL, [((), stats.interval)])
    _emit(w, metrics.POLL_DURATION,
          [((("stage", s),), d) for s, d in sorted(stats.durations.items())])
    _emit(w, metrics.SOURCE_ERRORS, [((("device", dev), ("source", src)), n)
                                     for (src, dev), n in sorted(stats.source_errors.items())])
    runs = sorted(stats.sources, key=lambda run: run.source)
    _emit(w, metrics.SOURCE_UP, [((("source", run.source),), int(run.up)) for run in runs])
    _emit(w, metrics.SOURCE_DURATION, [((("source", run.source),), run.seconds) for run in runs])
    _emit(w, metrics.COLLECTOR_ENABLED, [((("collector", name),), int(on))
                                         for name, on in stats.collectors])


def _render_rdma_self(w: _Writer, ports: Sequence[RdmaPort]) -> None:
    """How the RDMA ports were read: counters backed off, the source of each device's
    counters, the ports read."""
    skipped: dict[tuple[str, str], int] = {}
    sources: dict[tuple[str, str], int] = {}
    for port in ports:
        for reason in port.skipped.values():
            skipped[(port.device, reason)] = skipped.get((port.device, reason), 0) + 1
        sources[(port.device, port.source)] = sources.get((port.device, port.source), 0) + 1
    _emit(w, metrics.RDMA_COUNTER_SKIPPED,
          [((("device", d), ("reason", r)), n) for (d, r), n in sorted(skipped.items())])
    _emit(w, metrics.RDMA_SOURCE,
          [((("device", d), ("source", s)), n) for (d, s), n in sorted(sources.items())])
    _emit(w, metrics.RDMA_PORTS, [((), len(ports))])
