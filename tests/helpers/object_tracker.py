"""The object path of the tracker, kept verbatim (nicwatch/tracker.py at 603c709, before the
array path) as the reference tests/unit/test_tracker_equivalence.py holds the array path to.
Remove it together with that test once the array path has run a release."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nicwatch.metrics import FAMILIES, LINK_SPEED_BYTES_PER_SECOND
from nicwatch.model import CounterValue, RdmaSample, Sample, SeriesKey, scaled
from nicwatch.normalize.sriov import SOURCE as VF_SOURCE

WRAP32 = 1 << 32

# Why a reset was recorded.
COUNTER_DECREASE = "counter_decrease"  # a counter went backwards
STAT_SET_CHANGED = "stat_set_changed"  # the driver's statistic names changed
INTERFACE_REPLACED = "interface_replaced"  # new ifindex or driver under the same name
VF_COUNTER_DECREASE = "vf_counter_decrease"  # an SR-IOV VF's counters restarted

# Smallest Ethernet frame on the wire: 64 bytes + 7 preamble + 1 SFD + 12 inter-packet gap.
MIN_FRAME_ON_WIRE = 84
# Room for the poll's clock and the counters' own read times not being the same instant.
TIMING_SLACK = 1.05
LINE_RATE = SeriesKey(LINK_SPEED_BYTES_PER_SECOND.name)

RETENTION = 600.0  # seconds the state of a departed interface or missing series is kept
MAX_DEPARTED = 256  # departed interfaces remembered at most


@dataclass(frozen=True, slots=True)
class Tracked:
    value: float  # cumulative, in the family's base unit
    rate: float | None  # per second over the last poll; None on the first poll or a reset
    peak: float | None  # highest rate within the peak window (Family.peaked families only)


@dataclass(frozen=True, slots=True)
class TrackedSample:
    sample: Sample
    counters: Mapping[SeriesKey, Tracked]
    resets: Mapping[str, int]  # reason -> cumulative count for this device
    # Seconds a 32-bit counter of this device needs at line rate to move 2**32 (the shortest
    # over its 32-bit series); None: no 32-bit series or no known line rate.
    wrap_safe_interval: float | None = None
    # Whether the time since the last reading exceeded it, so a 32-bit counter may have
    # wrapped more than once unseen; None when wrap_safe_interval is None.
    wrap_ambiguous: bool | None = None


@dataclass(frozen=True, slots=True)
class TrackedRdma:
    """One RDMA port after tracking: its counters extended (32-bit hardware counters across
    wraps; saturating PortCounters never) and their rates, and its resets by reason."""

    sample: RdmaSample
    counters: Mapping[SeriesKey, Tracked]
    resets: Mapping[str, int]


def max_rate(unit: str, line_rate: float, stat: str | None = None) -> float:
    """The fastest a counter of ``unit`` can move (base units per second) on a link of
    ``line_rate`` bytes/s, per direction: bytes at line rate, bits at 8 x that, seconds
    (pause time) 1 per second, anything counted per frame (packets, frames, errors, FEC
    blocks, events) at one per 64-byte frame. A raw driver statistic has no unit: its name
    says bytes or it is counted per frame."""
    if unit == "bytes" or (not unit and stat is not None and "bytes" in stat):
        return line_rate
    if unit == "bits":
        return line_rate * 8
    if unit == "seconds":
        return 1.0
    return line_rate / MIN_FRAME_ON_WIRE


def wrap_limit(top: float, elapsed: float, scale: float) -> float:
    """The most a counter can move, in raw units, in ``elapsed`` seconds at ``top`` base
    units per second (max_rate), with TIMING_SLACK for the clock reads: the ``limit`` of
    :func:`advance`. The tracker and snapshot.diff decide wraps on it alike."""
    return top * elapsed * TIMING_SLACK / scale


def advance(prev_raw: int, prev_ext: int, raw: int, width: int, limit: float | None = None,
            reset_evidence: bool = False) -> int | None:
    """The extended value after ``prev_raw`` -> ``raw``; None when this is a reset.

    A 32-bit counter that fell wrapped unless ``reset_evidence`` says the interface was
    reset in the same poll, or the wrap would mean an increase above ``limit`` (the most the
    counter can move, in raw units, since ``prev_raw`` was read). With no ``limit`` (line
    rate unknown) a fall from the upper half of the range is a wrap, any other a reset. A
    64-bit counter that fell was reset.
    """
    if raw >= prev_raw:
        return prev_ext + (raw - prev_raw)
    if width != 32 or reset_evidence or not 0 <= prev_raw < WRAP32:
        return None
    wrapped = raw + WRAP32 - prev_raw
    if limit is None:
        return prev_ext + wrapped if prev_raw >= WRAP32 // 2 else None
    return prev_ext + wrapped if wrapped <= limit else None


@dataclass(slots=True)
class _Series:
    raw: int
    extended: int
    seen: float  # monotonic time of the last poll that had this series
    peaks: deque[tuple[float, float]] = field(default_factory=deque)  # (monotonic, rate)
    last: Tracked | None = None  # what the last poll returned, returned again while equal


@dataclass(slots=True)
class _Device:
    ifindex: int | None
    driver: str | None
    generation: int | None  # of the last poll that had driver statistics
    monotonic: float
    line_rate: float | None = None  # bytes/s at the last poll that knew it
    series: dict[SeriesKey, _Series] = field(default_factory=dict)
    resets: dict[str, int] = field(default_factory=dict)


def _line_rate(dev: _Device, sample: Sample) -> float | None:
    """Bytes/s the interface could carry since its last poll: the higher of the speed then
    and now (a renegotiation in between), None when neither is known."""
    now = sample.gauges.get(LINE_RATE)
    known = [r for r in (dev.line_rate, now) if r]
    if now:
        dev.line_rate = now
    return max(known) if known else None


def _unit(key: SeriesKey) -> str:
    family = FAMILIES.get(key.metric)
    return family.unit if family is not None else ""


def _differ(known: object, now: object) -> bool:
    """Whether two identity values differ; an unknown one (a failed read) is no evidence."""
    return known is not None and now is not None and known != now


class Tracker:
    """Keeps the previous poll of every interface; ``update`` is pure apart from that."""

    def __init__(self, peak_window: float = 60.0, retention: float = RETENTION,
                 max_departed: int = MAX_DEPARTED) -> None:
        self.peak_window = peak_window
        self.retention = retention
        self.max_departed = max_departed
        self._devices: dict[str, _Device] = {}
        self._departed: OrderedDict[str, _Device] = OrderedDict()  # oldest departure first
        self._ports: dict[str, _Device] = {}  # RDMA ports by "device/port"
        self._departed_ports: OrderedDict[str, _Device] = OrderedDict()

    def update(self, samples: Sequence[Sample]) -> list[TrackedSample]:
        if samples:
            oldest = max(s.monotonic for s in samples) - self.retention
            while self._departed and next(iter(self._departed.values())).monotonic < oldest:
                self._departed.popitem(last=False)
        out = [self._update_one(s) for s in samples]
        present = {s.identity.device for s in samples}
        for gone in sorted(set(self._devices) - present):
            self._departed[gone] = self._devices.pop(gone)
        while len(self._departed) > self.max_departed:
            self._departed.popitem(last=False)
        return out

    def update_rdma(self, samples: Sequence[RdmaSample]) -> list[TrackedRdma]:
        """The RDMA ports of one poll, tracked like interfaces (wraps of 32-bit counters
        decided on the port's rate, saturation, resets), each by its ``device/port`` key."""
        out = [self._update_port(s) for s in samples]
        present = {s.key for s in samples}
        for gone in [k for k in self._ports if k not in present]:
            dev = self._ports.pop(gone)
            self._departed_ports[gone] = dev
        if samples:
            oldest = max(s.monotonic for s in samples) - self.retention
            for key in [k for k, d in self._departed_ports.items() if d.monotonic < oldest]:
                del self._departed_ports[key]
        while len(self._departed_ports) > self.max_departed:
            self._departed_ports.popitem(last=False)
        return out

    def _update_port(self, sample: RdmaSample) -> TrackedRdma:
        dev = self._ports.get(sample.key) or self._departed_ports.pop(sample.key, None)
        if dev is None:
            dev = _Device(None, sample.port.driver, None, sample.monotonic)
        self._ports[sample.key] = dev
        rate = sample.port.rate_bytes_per_second
        line_rate = max(r for r in (dev.line_rate, rate) if r) if (dev.line_rate or rate) \
            else None
        if rate:
            dev.line_rate = float(rate)
        tracked: dict[SeriesKey, Tracked] = {}
        decreased = False
        wide = [(k, cv) for k, cv in sample.counters.items() if cv.width != 32 or cv.saturates]
        narrow = [(k, cv) for k, cv in sample.counters.items()
                  if cv.width == 32 and not cv.saturates]
        for key, cv in wide:
            tracked[key], was_reset = self._track(dev, key, cv, sample.monotonic, False)
            decreased |= was_reset
        fell64 = decreased
        for key, cv in narrow:
            limit = None
            state = dev.series.get(key)
            if line_rate and state is not None and sample.monotonic > state.seen:
                top = max_rate(_unit(key), line_rate)
                limit = top * (sample.monotonic - state.seen) * TIMING_SLACK / cv.scale
            tracked[key], was_reset = self._track(dev, key, cv, sample.monotonic, False,
                                                  limit=limit, evidence=fell64)
            decreased |= was_reset
        if decreased:
            dev.resets[COUNTER_DECREASE] = dev.resets.get(COUNTER_DECREASE, 0) + 1
        if len(dev.series) > len(sample.counters):
            for key in [k for k, st in dev.series.items()
                        if st.seen < sample.monotonic - self.retention]:
                del dev.series[key]
        dev.monotonic = sample.monotonic
        return TrackedRdma(sample, tracked, dict(dev.resets))

    def _update_one(self, sample: Sample) -> TrackedSample:
        ident = sample.identity
        dev = self._devices.get(ident.device) or self._departed.pop(ident.device, None)
        replaced = dev is not None and (_differ(dev.ifindex, ident.ifindex)
                                        or _differ(dev.driver, ident.driver))
        if dev is None or replaced:
            resets = dict(dev.resets) if dev else {}
            if replaced:
                resets[INTERFACE_REPLACED] = resets.get(INTERFACE_REPLACED, 0) + 1
            dev = _Device(ident.ifindex, ident.driver, sample.stats_generation, sample.monotonic,
                          resets=resets)
            fresh = True
        else:
            fresh = False
        self._devices[ident.device] = dev
        dev.ifindex = ident.ifindex if ident.ifindex is not None else dev.ifindex
        dev.driver = ident.driver or dev.driver
        generation = sample.stats_generation
        set_changed = (not fresh and None not in (dev.generation, generation)
                       and dev.generation != generation)
        if set_changed:
            dev.resets[STAT_SET_CHANGED] = dev.resets.get(STAT_SET_CHANGED, 0) + 1
        line_rate = _line_rate(dev, sample)
        tracked: dict[SeriesKey, Tracked] = {}
        decreased = False
        vf_reset = False
        # 64-bit series first: one of them falling is reset evidence for the 32-bit ones (a
        # 32-bit one falling is not evidence by itself: it may have wrapped).
        narrow = []
        for key, cv in sample.counters.items():
            if cv.width == 32 and not cv.saturates:
                narrow.append((key, cv))
                continue
            tracked[key], was_reset = self._track(
                dev, key, cv, sample.monotonic,
                skip_rate=set_changed and cv.source == "ethtool_ioctl")
            if was_reset and cv.source == VF_SOURCE:
                # A VF re-created (sriov_numvfs 0 -> N) restarts its own counters: a reset
                # of that VF, not evidence about the PF's counters.
                vf_reset = True
            else:
                decreased |= was_reset
        fell64 = decreased
        safe: float | None = None
        ambiguous = False
        for key, cv in narrow:
            from_driver = set_changed and cv.source == "ethtool_ioctl"
            limit = None
            if line_rate:
                top = max_rate(_unit(key), line_rate, dict(key.labels).get("stat"))
                interval = scaled(WRAP32, cv.scale) / top
                safe = interval if safe is None else min(safe, interval)
                state = dev.series.get(key)
                if state is not None and sample.monotonic > state.seen:
                    elapsed = sample.monotonic - state.seen
                    limit = wrap_limit(top, elapsed, cv.scale)
                    ambiguous |= elapsed > interval
            tracked[key], was_reset = self._track(dev, key, cv, sample.monotonic,
                                                  skip_rate=from_driver, limit=limit,
                                                  evidence=fell64 or from_driver)
            decreased |= was_reset
        if decreased:
            dev.resets[COUNTER_DECREASE] = dev.resets.get(COUNTER_DECREASE, 0) + 1
        if vf_reset:
            dev.resets[VF_COUNTER_DECREASE] = dev.resets.get(VF_COUNTER_DECREASE, 0) + 1
        if len(dev.series) > len(sample.counters):  # some series missed this poll
            for key in [k for k, st in dev.series.items()
                        if st.seen < sample.monotonic - self.retention]:
                del dev.series[key]
        if generation is not None:
            dev.generation = generation
        dev.monotonic = sample.monotonic
        return TrackedSample(sample, tracked, dict(dev.resets), safe,
                             None if safe is None else ambiguous)

    def _track(self, dev: _Device, key: SeriesKey, cv: CounterValue, now: float,
               skip_rate: bool, limit: float | None = None,
               evidence: bool = False) -> tuple[Tracked, bool]:
        state = dev.series.get(key)
        rate = None
        reset = False
        if state is None:
            state = dev.series[key] = _Series(cv.raw, cv.raw, now)
        else:
            # A saturating counter (IB PortCounters) never wraps: a fall is a reset, and at
            # its maximum its increase is unknown, so no rate.
            width = 64 if cv.saturates else cv.width
            extended = advance(state.raw, state.extended, cv.raw, width, limit, evidence)
            if extended is None:
                reset = True
                extended = cv.raw
            elif now > state.seen and not skip_rate and not cv.saturated:
                rate = scaled(extended - state.extended, cv.scale) / (now - state.seen)
            state.raw, state.extended, state.seen = cv.raw, extended, now
        peak = self._peak(state, key, now, rate)
        value = scaled(state.extended, cv.scale)
        last = state.last
        if last is None or last.value != value or last.rate != rate or last.peak != peak:
            last = state.last = Tracked(value, rate, peak)
        return last, reset

    def _peak(self, state: _Series, key: SeriesKey, now: float, rate: float | None) -> float | None:
        family = FAMILIES.get(key.metric)
        if family is None or not family.peaked:
            return None
        peaks = state.peaks
        # A monotonic queue: rates fall from left to right, so the window's highest is the
        # leftmost. A new rate drops every older one it beats, which could never be the
        # highest again (older, not higher).
        if rate is not None:
            while peaks and peaks[-1][1] <= rate:
                peaks.pop()
            peaks.append((now, rate))
        while peaks and peaks[0][0] < now - self.peak_window:
            peaks.popleft()
        return peaks[0][1] if peaks else None
