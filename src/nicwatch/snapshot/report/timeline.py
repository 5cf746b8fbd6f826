"""The rates of a recorded run poll by poll (the Timeline), per family and per label
set, with each family's peak between two consecutive polls; what the charts draw."""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nicwatch.metrics import (
    PHY_RX_BYTES,
    PHY_TX_BYTES,
    RDMA_RX_BYTES,
    RDMA_TX_BYTES,
    RX_BYTES,
    RX_DISCARDS,
    RX_DROPPED,
    RX_OUT_OF_BUFFER_DROPS,
    RX_PAUSE_CTRL_FRAMES,
    RX_PAUSE_FRAMES,
    RX_PFC_FRAMES,
    RX_PFC_TC_FRAMES,
    TX_BYTES,
    TX_DISCARDS,
    TX_DROPPED,
    TX_PAUSE_CTRL_FRAMES,
    TX_PAUSE_FRAMES,
    TX_PFC_FRAMES,
    TX_PFC_TC_FRAMES,
)
from nicwatch.tracker import TrackedRdma, TrackedSample


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
