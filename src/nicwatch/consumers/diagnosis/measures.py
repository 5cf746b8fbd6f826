"""What a quantity reads a window through.

A :class:`Window` is one interface over a span of time: the increase of each counter series
(netdev and, labelled by ``rdma_device``/``port``, its RDMA ports), the highest per-poll rate
of each (equal to the mean for a window of two readings), and the gauges at its end. A
series absent from the window is unknown, never zero. A :class:`Measure` is a quantity's
value (None: unknown) and the :class:`Evidence` it rests on; the series access below
(counter increases as rates, peaks, gauges and their sums, maxima and ratios) is what every
quantity (quantities.py) is built from.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from nicwatch.model import SeriesKey


@dataclass(frozen=True, slots=True)
class Window:
    device: str
    seconds: float
    deltas: Mapping[SeriesKey, float]  # increase over the window, base units
    peaks: Mapping[SeriesKey, float]  # highest per-poll rate within the window, per second
    gauges: Mapping[SeriesKey, float]  # at the window's end
    polls: int = 2
    end: float | None = None  # wall-clock time of the window's end
    # what the window could not take in (series that reset or appeared between readings,
    # statistics the driver's table does not map): listed with the verdicts, so a quiet
    # window is never read as a healthy one where nothing was seen
    notes: tuple[str, ...] = ()
    # the interface's PCI function address, where known: fills the next checks
    pci_address: str | None = None
    # metric -> its series in deltas, peaks and gauges (built once: every quantity looks up)
    index: Mapping[str, tuple[SeriesKey, ...]] = field(init=False, repr=False, compare=False)
    # (quantity, scope) -> its measure, and the link physics: computed once per window,
    # however many signatures read them
    memo: dict[object, object] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[SeriesKey]] = {}
        for key in dict.fromkeys((*self.deltas, *self.peaks, *self.gauges)):
            index.setdefault(key.metric, []).append(key)
        object.__setattr__(self, "index", {m: tuple(ks) for m, ks in index.items()})
        object.__setattr__(self, "memo", {})


@dataclass(frozen=True, slots=True)
class Evidence:
    """One series over the window: ``delta`` and ``rate`` for a counter, ``value`` for a
    gauge or a derived number."""

    series: str
    delta: float | None = None
    rate: float | None = None
    value: float | None = None

    def describe(self) -> str:
        if self.delta is None and self.value is None:
            return f"{self.series}: {_num(self.rate)}/s"
        if self.delta is not None:
            rate = f" ({_num(self.rate)}/s)" if self.rate is not None else ""
            return f"{self.series} +{_num(self.delta)}{rate}"
        return f"{self.series} = {_num(self.value)}"


@dataclass(frozen=True, slots=True)
class Measure:
    """``value``, or where ``upper`` is set a range: the quantity lies at most at ``upper``
    and is estimated at ``value`` from what the counters pin down (the paused fraction of
    XOFF frames an XON released: _estimated). A condition held to a range decides only where
    the whole range is on one side of its threshold, else it is unknown."""

    value: float | None
    evidence: tuple[Evidence, ...] = ()
    upper: float | None = None
    note: str = ""  # why it is a range, for a condition it leaves unknown



def _num(v: float | None) -> str:
    if v is None:
        return "absent"
    if not math.isfinite(v):
        return str(v)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


# --------------------------------------------------------------------------- series access

# A pure memo of a bounded key (docs/architecture.md, Caches).
@functools.lru_cache(maxsize=1 << 14)
def _series(key: SeriesKey) -> str:
    # cached: the same series are named on every poll
    if not key.labels:
        return key.metric
    return key.metric + "{" + ",".join(f'{k}="{v}"' for k, v in key.labels) + "}"


def _match(key: SeriesKey, metric: str, labels: Mapping[str, str]) -> bool:
    if key.metric != metric:
        return False
    have = key.labels
    return all(item in have for item in labels.items())


def _counter(w: Window, metric: str, **labels: str) -> Measure:
    """The increase of ``metric`` (summed over its series matching ``labels``) as a rate."""
    deltas = w.deltas
    if labels:
        keys = [k for k in w.index.get(metric, ()) if k in deltas and _match(k, metric, labels)]
    else:
        keys = [k for k in w.index.get(metric, ()) if k in deltas]
    if not keys or w.seconds <= 0:
        return Measure(None)
    total = sum(w.deltas[k] for k in keys)
    ev = tuple(Evidence(_series(k), w.deltas[k], w.deltas[k] / w.seconds) for k in sorted(keys))
    return Measure(total / w.seconds, ev)


def _peak(w: Window, metric: str, **labels: str) -> Measure:
    keys = [k for k in w.index.get(metric, ()) if k in w.peaks and _match(k, metric, labels)]
    if not keys:
        return Measure(None)
    top = max(keys, key=lambda k: w.peaks[k])
    return Measure(w.peaks[top], (Evidence(_series(top) + " peak per poll",
                                           value=w.peaks[top]),))


def _gauge(w: Window, metric: str, **labels: str) -> Measure:
    key = SeriesKey(metric, tuple(sorted(labels.items())))
    v = w.gauges.get(key)
    return Measure(None) if v is None else Measure(v, (Evidence(_series(key), value=v),))


def _gauges(w: Window, metric: str) -> list[tuple[SeriesKey, float]]:
    return sorted((k, w.gauges[k]) for k in w.index.get(metric, ()) if k in w.gauges)


def _sum(*ms: Measure) -> Measure:
    known = [m for m in ms if m.value is not None]
    if not known:
        return Measure(None)
    return Measure(sum(m.value for m in known if m.value is not None),
                   tuple(e for m in known for e in m.evidence))


def _max(*ms: Measure) -> Measure:
    known = [m for m in ms if m.value is not None]
    if not known:
        return Measure(None)
    top = max(known, key=lambda m: m.value or 0.0)
    return top


def _ratio(num: Measure, den: Measure, name: str) -> Measure:
    if num.value is None or den.value is None or den.value <= 0:
        return Measure(None, num.evidence + den.evidence)
    value = num.value / den.value
    return Measure(value, (*num.evidence, *den.evidence, Evidence(name, value=value)))
