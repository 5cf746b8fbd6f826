"""Counter tracking across polls: 32-bit wrap extension, reset detection, rates and peaks.

Exported counters keep the kernel's value: a 64-bit counter is exported as read, a 32-bit
hardware counter as ``wraps * 2**32 + raw``. A counter that goes backwards for any other
reason (driver reload, firmware reset, queues removed) is a reset: the exported value drops
with it, Prometheus' rate() handles that, and the reset is counted per device and reason.
Daemon-side rates are never computed across a reset, so they are never negative.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nicwatch.model import CounterValue, Sample, SeriesKey, scaled
from nicwatch.normalize.schema import FAMILIES

WRAP32 = 1 << 32

# Why a reset was recorded.
COUNTER_DECREASE = "counter_decrease"  # a counter went backwards
STAT_SET_CHANGED = "stat_set_changed"  # the driver's statistic names changed
INTERFACE_REPLACED = "interface_replaced"  # new ifindex or driver under the same name


@dataclass(frozen=True, slots=True)
class Tracked:
    value: float  # cumulative, in the family's base unit
    rate: float | None  # per second over the last poll; None on the first poll or a reset
    peak: float | None  # highest rate within the peak window (health families only)


@dataclass(frozen=True, slots=True)
class TrackedSample:
    sample: Sample
    counters: Mapping[SeriesKey, Tracked]
    resets: Mapping[str, int]  # reason -> cumulative count for this device


def advance(prev_raw: int, prev_ext: int, raw: int, width: int) -> int | None:
    """The extended value after ``prev_raw`` -> ``raw``; None when this is a reset.

    A 32-bit counter that falls from the upper half of its range wrapped (at a 5 s poll
    even 400 Gb/s cannot move a packet counter by 2**31); any other decrease is a reset.
    """
    if raw >= prev_raw:
        return prev_ext + (raw - prev_raw)
    if width == 32 and WRAP32 // 2 <= prev_raw < WRAP32:
        return prev_ext + (raw + WRAP32 - prev_raw)
    return None


@dataclass(slots=True)
class _Series:
    raw: int
    extended: int
    peaks: deque = field(default_factory=deque)  # (monotonic, rate)


@dataclass(slots=True)
class _Device:
    ifindex: int | None
    driver: str | None
    generation: int | None
    monotonic: float
    series: dict[SeriesKey, _Series] = field(default_factory=dict)
    resets: dict[str, int] = field(default_factory=dict)


class Tracker:
    """Keeps the previous poll of every interface; ``update`` is pure apart from that."""

    def __init__(self, peak_window: float = 60.0) -> None:
        self.peak_window = peak_window
        self._devices: dict[str, _Device] = {}

    def update(self, samples: Sequence[Sample]) -> list[TrackedSample]:
        out = [self._update_one(s) for s in samples]
        present = {s.identity.device for s in samples}
        for gone in set(self._devices) - present:
            del self._devices[gone]
        return out

    def _update_one(self, sample: Sample) -> TrackedSample:
        ident = sample.identity
        dev = self._devices.get(ident.device)
        replaced = dev is not None and (dev.ifindex, dev.driver) != (ident.ifindex, ident.driver)
        if dev is None or replaced:
            resets = dict(dev.resets) if dev else {}
            if replaced:
                resets[INTERFACE_REPLACED] = resets.get(INTERFACE_REPLACED, 0) + 1
            dev = _Device(ident.ifindex, ident.driver, sample.stats_generation, sample.monotonic,
                          resets=resets)
            self._devices[ident.device] = dev
            fresh = True
        else:
            fresh = False
        set_changed = not fresh and dev.generation != sample.stats_generation
        if set_changed:
            dev.resets[STAT_SET_CHANGED] = dev.resets.get(STAT_SET_CHANGED, 0) + 1
        dt = sample.monotonic - dev.monotonic
        tracked: dict[SeriesKey, Tracked] = {}
        decreased = False
        for key, cv in sample.counters.items():
            tracked[key], was_reset = self._track(dev, key, cv, sample.monotonic, dt,
                                                  skip_rate=set_changed and cv.source == "ethtool_ioctl")
            decreased |= was_reset
        if decreased:
            dev.resets[COUNTER_DECREASE] = dev.resets.get(COUNTER_DECREASE, 0) + 1
        for key in set(dev.series) - set(sample.counters):
            del dev.series[key]
        dev.generation = sample.stats_generation
        dev.monotonic = sample.monotonic
        return TrackedSample(sample, tracked, dict(dev.resets))

    def _track(self, dev: _Device, key: SeriesKey, cv: CounterValue, now: float, dt: float,
               skip_rate: bool) -> tuple[Tracked, bool]:
        state = dev.series.get(key)
        rate = None
        reset = False
        if state is None:
            state = dev.series[key] = _Series(cv.raw, cv.raw)
        else:
            extended = advance(state.raw, state.extended, cv.raw, cv.width)
            if extended is None:
                reset = True
                extended = cv.raw
            elif dt > 0 and not skip_rate:
                rate = scaled(extended - state.extended, cv.scale) / dt
            state.raw, state.extended = cv.raw, extended
        peak = self._peak(state, key, now, rate)
        return Tracked(scaled(state.extended, cv.scale), rate, peak), reset

    def _peak(self, state: _Series, key: SeriesKey, now: float, rate: float | None) -> float | None:
        family = FAMILIES.get(key.metric)
        if family is None or not family.health:
            return None
        if rate is not None:
            state.peaks.append((now, rate))
        while state.peaks and state.peaks[0][0] < now - self.peak_window:
            state.peaks.popleft()
        return max((r for _, r in state.peaks), default=None)
