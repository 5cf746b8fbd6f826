"""Counter tracking across polls: 32-bit wrap extension, reset detection, rates and peaks.

Exported counters keep the kernel's value: a 64-bit counter is exported as read, a 32-bit
hardware counter as ``wraps * 2**32 + raw``. A counter that goes backwards for any other
reason (driver reload, firmware reset, queues removed) is a reset: the exported value drops
with it, Prometheus' rate() handles that, and the reset is counted per device and reason.
Daemon-side rates are never computed across a reset, so they are never negative.
 Wrap or reset, for a 32-bit counter that fell, is decided on evidence (see :func:`advance`): a
reset when the same poll shows one (the driver's statistic set changed, or a 64-bit counter of
the same interface fell too; an SR-IOV VF's counters, which restart when the VF is re-created,
are no such evidence and count as ``vf_counter_decrease``) or when the wrap would need more
than the link can carry in the time since the last reading (line rate from the interface's
speed, 64-byte frames for packet-like counters); else a wrap. Without a known line rate the old
rule stands: a fall from the upper half of the range is a wrap. At 400 Gb/s 64-byte frames come
at 595 Mpps, so a 32-bit packet counter can pass 2**31 in 3.6 s and 2**32 in 7.2 s (at 800
Gb/s: 1.8 s and 3.6 s). Polled less often than that, it may have wrapped more than once unseen;
nicwatch cannot count those wraps and says so per interface (``nic_stat_wrap_ambiguous``,
``nic_stat_wrap_safe_interval_seconds``).

An interface that leaves (deleted, moved to another namespace, unselected) stops being
exported at once, but its state is remembered for ``retention`` seconds (at most
``max_departed`` interfaces, oldest forgotten first): a driver reload removes the netdev and
registers a new one under the same name, and uevents make the daemon poll in between, so
without that memory the new, lower counters would follow the old ones with no reset
recorded. A series missing from one poll (a source failed) is remembered the same way; a
poll without driver statistics is not a change of their set, nor is one without a driver
name or ifindex a replacement.
"""

from __future__ import annotations

import operator
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from nicwatch.metrics import FAMILIES, LINK_SPEED_BYTES_PER_SECOND
from nicwatch.model import Counted, CounterValue, RdmaSample, Sample, SeriesKey, scaled
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
FACTS_MAX = 500_000  # series keys whose facts are kept


@dataclass(frozen=True, slots=True)
class Tracked:
    value: float  # cumulative, in the family's base unit
    rate: float | None  # per second over the last poll; None on the first poll or a reset
    peak: float | None  # highest rate within the peak window (Family.peaked families only)


C = TypeVar("C", bound=Counted)
C_co = TypeVar("C_co", bound=Counted, covariant=True)
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class TrackedThing(Generic[C_co]):
    """One counted thing (model.Counted) after tracking: its counters extended (32-bit
    hardware counters across wraps; saturating ones never) and their rates, and its resets
    by reason. A new kind of thing is tracked into a subclass ``TrackedThing[ItsSample]``
    (as TrackedRdma: a frozen slotted dataclass cannot be made through the alias)."""

    sample: C_co
    counters: Mapping[SeriesKey, Tracked]
    resets: Mapping[str, int]  # reason -> cumulative count for this thing
    # Seconds a 32-bit counter of this thing needs at line rate to move 2**32 (the shortest
    # over its 32-bit series); None: no 32-bit series, no known line rate, or a kind whose
    # wrap safety is not exported (Counted.reports_wrap_safety).
    wrap_safe_interval: float | None = None
    # Whether the time since the last reading exceeded it, so a 32-bit counter may have
    # wrapped more than once unseen; None when wrap_safe_interval is None.
    wrap_ambiguous: bool | None = None


# What a kind's things are made into: (sample, counters, resets, wrap-safe interval,
# wrap ambiguous) -> the kind's TrackedThing
_Record = Callable[[C, Mapping[SeriesKey, Tracked], Mapping[str, int], float | None,
                    bool | None], R]


@dataclass(frozen=True, slots=True)
class TrackedSample(TrackedThing[Sample]):
    """One interface after tracking."""


@dataclass(frozen=True, slots=True)
class TrackedRdma(TrackedThing[RdmaSample]):
    """One RDMA port after tracking (its wrap-safe interval is not exported: None)."""


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


def _unit(key: SeriesKey) -> str:
    family = FAMILIES.get(key.metric)
    return family.unit if family is not None else ""


def _differ(known: object, now: object) -> bool:
    """Whether two identity values differ; an unknown one (a failed read) is no evidence."""
    return known is not None and now is not None and known != now


def _facts_of(key: SeriesKey) -> tuple[bool, str, str | None]:
    """What a series' key says once for all polls: whether its family keeps a peak, its
    unit and its raw statistic name (max_rate's arguments)."""
    family = FAMILIES.get(key.metric)
    return (family is not None and family.peaked, family.unit if family is not None else "",
            dict(key.labels).get("stat"))


# A CounterValue's fields, read over a poll's values in C
_RAW = operator.attrgetter("raw")
_WIDTH = operator.attrgetter("width")
_SCALE = operator.attrgetter("scale")
_SATURATES = operator.attrgetter("saturates")


# One series' state while it is missing from the polls: raw, extended, seen, scale, the
# Tracked last returned and the peak queue.
_Kept = tuple[int, int, float, float, Tracked | None, deque[tuple[float, float]] | None]


class _Device:
    """The state of one tracked thing (an interface or an RDMA port): its identity as last
    seen, and its series as parallel arrays in the order of the last poll's ``keys``
    (``raw[i] is None``: the series is new this poll). Series missing from a poll wait in
    ``missing`` for ``retention`` seconds."""

    __slots__ = ("driver", "ext", "facts", "generation", "ifindex", "keys", "last", "line_rate",
                 "missing", "monotonic", "out", "peaked", "peaks", "quiet", "raw", "resets",
                 "scale", "seen", "widths")

    def __init__(self, ifindex: int | None, driver: str | None, generation: int | None,
                 monotonic: float, resets: dict[str, int] | None = None) -> None:
        self.ifindex = ifindex
        self.driver = driver
        self.generation = generation  # of the last poll that had driver statistics
        self.monotonic = monotonic
        self.line_rate: float | None = None  # bytes/s at the last poll that knew it
        self.resets: dict[str, int] = resets if resets is not None else {}
        self.keys: tuple[SeriesKey, ...] = ()
        self.raw: list[int | None] = []
        self.ext: list[int] = []
        self.seen: list[float] = []  # monotonic time of the last poll that had the series
        self.scale: list[float] = []
        self.last: list[Tracked | None] = []  # returned again while equal
        self.peaks: list[deque[tuple[float, float]] | None] = []  # (monotonic, rate)
        self.missing: dict[SeriesKey, _Kept] = {}
        self.facts: list[tuple[bool, str, str | None]] = []  # _facts_of each of keys
        self.peaked: list[int] = []  # the series whose family keeps a peak
        self.widths: list[int] = []  # the last poll's widths
        self.quiet = False  # every series but the peaked ones at rate 0 in the last poll
        # the last poll's tracked series, its 32-bit ones and the mapping returned
        self.out: tuple[list[Tracked], list[int], dict[SeriesKey, Tracked]] | None = None

    def realign(self, keys: tuple[SeriesKey, ...]) -> None:
        """Lay the arrays out in the order of ``keys``: a series kept (in the arrays or
        missing) keeps its state, a new one starts empty, one gone waits in ``missing``."""
        kept: dict[SeriesKey, _Kept] = self.missing
        for i, key in enumerate(self.keys):
            raw = self.raw[i]
            if raw is not None:
                kept[key] = (raw, self.ext[i], self.seen[i], self.scale[i], self.last[i],
                             self.peaks[i])
        n = len(keys)
        self.raw, self.ext, self.seen = [None] * n, [0] * n, [0.0] * n
        self.scale, self.last, self.peaks = [1.0] * n, [None] * n, [None] * n
        for i, key in enumerate(keys):
            state = kept.pop(key, None)
            if state is not None:
                (self.raw[i], self.ext[i], self.seen[i], self.scale[i], self.last[i],
                 self.peaks[i]) = state
        self.keys = keys
        self.out = None


class _Things:
    """Tracked things of one kind (interfaces, or RDMA ports) by key, and those that left,
    remembered for ``retention`` seconds (at most ``max_departed``, oldest forgotten first)."""

    __slots__ = ("departed", "live")

    def __init__(self) -> None:
        self.live: dict[str, _Device] = {}
        self.departed: OrderedDict[str, _Device] = OrderedDict()  # oldest departure first

    def forget_before(self, oldest: float) -> None:
        while self.departed and next(iter(self.departed.values())).monotonic < oldest:
            self.departed.popitem(last=False)

    def get(self, key: str) -> _Device | None:
        return self.live.get(key) or self.departed.pop(key, None)

    def depart(self, present: set[str], max_departed: int) -> None:
        for gone in sorted(set(self.live) - present):
            self.departed[gone] = self.live.pop(gone)
        while len(self.departed) > max_departed:
            self.departed.popitem(last=False)


class Tracker:
    """Keeps the previous poll of every counted thing (interfaces, RDMA ports: model.Counted)
    by kind and key; ``track`` is pure apart from that. Every kind goes one path: a thing's
    identity checked (:meth:`_track_one`), then its series as arrays, extended,
    wrap-checked and rated in one pass (:meth:`_advance`) by the rule of :func:`advance`."""

    def __init__(self, peak_window: float = 60.0, retention: float = RETENTION,
                 max_departed: int = MAX_DEPARTED) -> None:
        self.peak_window = peak_window
        self.retention = retention
        self.max_departed = max_departed
        self._kinds: dict[object, _Things] = {}  # by the record made of each kind's things
        # each series key's facts (_facts_of), looked up once per key, not once per poll
        self._facts: dict[SeriesKey, tuple[bool, str, str | None]] = {}

    def update(self, samples: Sequence[Sample]) -> list[TrackedSample]:
        """The interfaces of one poll, each by its name."""
        return self.track(samples, TrackedSample)

    def update_rdma(self, samples: Sequence[RdmaSample]) -> list[TrackedRdma]:
        """The RDMA ports of one poll, tracked like interfaces (wraps of 32-bit counters
        decided on the port's rate, saturation, resets), each by its ``device/port`` key."""
        return self.track(samples, TrackedRdma)

    def track(self, samples: Sequence[C], record: _Record[C, R]) -> list[R]:
        """Every thing of one kind in one poll, each made into ``record`` (the kind's
        TrackedThing): things are kept per ``record``, each by its ``key``; one absent from
        this poll is remembered for ``retention`` seconds."""
        things = self._kinds.get(record)
        if things is None:
            things = self._kinds[record] = _Things()
        if samples:
            things.forget_before(max(s.monotonic for s in samples) - self.retention)
        out = [self._track_one(things, s, record) for s in samples]
        things.depart({s.key for s in samples}, self.max_departed)
        return out

    def _track_one(self, things: _Things, sample: C, record: _Record[C, R]) -> R:
        """One thing: replaced (a new incarnation under its key) or its statistic set
        changed, both resets, then its series (:meth:`_advance`)."""
        key = sample.key
        ifindex, driver = sample.incarnation
        dev = things.get(key)
        replaced = dev is not None and (_differ(dev.ifindex, ifindex)
                                        or _differ(dev.driver, driver))
        if dev is None or replaced:
            resets = dict(dev.resets) if dev else {}
            if replaced:
                resets[INTERFACE_REPLACED] = resets.get(INTERFACE_REPLACED, 0) + 1
            dev = _Device(ifindex, driver, sample.stats_generation, sample.monotonic, resets)
            fresh = True
        else:
            fresh = False
        things.live[key] = dev
        dev.ifindex = ifindex if ifindex is not None else dev.ifindex
        dev.driver = driver or dev.driver
        generation = sample.stats_generation
        set_changed = (not fresh and None not in (dev.generation, generation)
                       and dev.generation != generation)
        if set_changed:
            dev.resets[STAT_SET_CHANGED] = dev.resets.get(STAT_SET_CHANGED, 0) + 1
        counters, safe, ambiguous = self._advance(dev, sample.counters, sample.monotonic,
                                                  sample.line_rate(LINE_RATE), set_changed)
        if generation is not None:
            dev.generation = generation
        if not sample.reports_wrap_safety:
            safe = None
        return record(sample, counters, dict(dev.resets), safe,
                      None if safe is None else ambiguous)

    def _advance(self, dev: _Device, counters: Mapping[SeriesKey, CounterValue], now: float,
                 rate_now: float | None, set_changed: bool,
                 ) -> tuple[Mapping[SeriesKey, Tracked], float | None, bool]:
        """One poll of one thing: every series extended, wrap-checked and rated, 64-bit
        series first (one of them falling is reset evidence for the 32-bit ones; a 32-bit
        one falling is not evidence by itself: it may have wrapped). A series of the
        driver's statistics whose set changed (``set_changed``) gets no rate, and a 32-bit
        one that fell was reset. Returns the tracked series (wide ones first, each in the
        poll's order), the shortest wrap-safe interval of the 32-bit series (None: none, or
        no line rate) and whether the time since the last reading exceeded it."""
        # Bytes/s the thing could carry since its last poll: the higher of the speed then
        # and now (a renegotiation in between), None when neither is known.
        known = [r for r in (dev.line_rate, rate_now) if r]
        if rate_now:
            dev.line_rate = rate_now
        line_rate = max(known) if known else None
        keys = tuple(counters)
        realigned = keys != dev.keys
        if realigned:
            dev.realign(keys)
            dev.facts = [self._facts_for(key) for key in keys]
            dev.peaked = [i for i, facts in enumerate(dev.facts) if facts[0]]
        cvs = tuple(counters.values())
        widths = list(map(_WIDTH, cvs))
        raws, exts, seens, scales, lasts, peaks, facts = (
            dev.raw, dev.ext, dev.seen, dev.scale, dev.last, dev.peaks, dev.facts)
        # Quiet since a quiet poll: the same values, scales and widths as then, every series
        # that keeps no peak at rate 0 then. Each of those would return what it returned
        # (the one test below, passed by all): only the peaked and the 32-bit series (the
        # wrap-safe interval) are looked at, the values compared as arrays in C.
        bulk = (dev.quiet and not realigned and not set_changed and now > dev.monotonic
                and dev.out is not None and widths == dev.widths
                and list(map(_RAW, cvs)) == raws and list(map(_SCALE, cvs)) == scales
                and not any(map(_SATURATES, cvs)))
        dev.widths = widths
        if bulk and dev.out is not None:
            narrow = list(dev.out[1])
            late = set(narrow)
            order: Sequence[int] = [i for i in dev.peaked if i not in late]
            tracked: list[Tracked] = list(lasts)  # type: ignore[arg-type]  # set since a poll
        else:
            narrow = []
            order = range(len(cvs))
            tracked = [None] * len(keys)  # type: ignore[list-item]  # each set below
        loud = False  # a series that keeps no peak moved (or has no rate) this poll
        decreased = vf_reset = fell64 = False
        safe: float | None = None
        ambiguous = False
        window = now - self.peak_window
        for wide_pass in (True, False):
            for i in (order if wide_pass else narrow):
                cv = cvs[i]
                raw = cv.raw
                if wide_pass and cv.width == 32 and not cv.saturates:
                    narrow.append(i)
                    continue
                prev = raws[i]
                peaked, unit, stat = facts[i]
                if not wide_pass and line_rate:
                    top = max_rate(unit, line_rate, stat)
                    interval = scaled(WRAP32, cv.scale) / top
                    safe = interval if safe is None else min(safe, interval)
                    if prev is not None and now > seens[i]:
                        ambiguous |= now - seens[i] > interval
                last = lasts[i]
                # Unchanged since a poll that found it unchanged too (most of a port's
                # counters): the same value, rate 0 and no peak, so what it returned then.
                if raw == prev and last is not None and last.rate == 0.0 and not peaked \
                        and now > seens[i] and not cv.saturates and cv.scale == scales[i] \
                        and not (set_changed and cv.source == "ethtool_ioctl"):
                    seens[i] = now
                    tracked[i] = last
                    continue
                from_driver = set_changed and cv.source == "ethtool_ioctl"
                rate = None
                reset = False
                if prev is None:
                    raws[i] = exts[i] = raw
                    seens[i], scales[i] = now, cv.scale
                    value = scaled(raw, cv.scale)
                else:
                    prev_ext = exts[i]
                    if raw >= prev:  # advance()'s first rule, without the call
                        ext = prev_ext + (raw - prev)
                    else:
                        limit = None
                        if not wide_pass and line_rate and now > seens[i]:
                            limit = wrap_limit(top, now - seens[i], cv.scale)
                        # A saturating counter (IB PortCounters) never wraps: a fall is a
                        # reset, and at its maximum its increase is unknown, so no rate.
                        got = advance(prev, prev_ext, raw, 64 if cv.saturates else cv.width,
                                      limit, not wide_pass and (fell64 or from_driver))
                        if got is None:
                            reset = True
                            got = raw
                        ext = got
                    if not reset and now > seens[i] and not from_driver and not (
                            cv.saturates and cv.saturated):
                        rate = (0.0 if ext == prev_ext else
                                scaled(ext - prev_ext, cv.scale) / (now - seens[i]))
                    raws[i], seens[i] = raw, now
                    if ext == prev_ext and last is not None and cv.scale == scales[i]:
                        value = last.value
                    else:
                        exts[i], scales[i] = ext, cv.scale
                        value = scaled(ext, cv.scale)
                peak = None
                if peaked:
                    queue = peaks[i]
                    if queue is None:
                        queue = peaks[i] = deque()
                    # A monotonic queue: rates fall from left to right, so the window's
                    # highest is the leftmost. A new rate drops every older one it beats,
                    # which could never be the highest again (older, not higher).
                    if rate is not None:
                        while queue and queue[-1][1] <= rate:
                            queue.pop()
                        queue.append((now, rate))
                    while queue and queue[0][0] < window:
                        queue.popleft()
                    peak = queue[0][1] if queue else None
                if last is None or last.value != value or last.rate != rate or last.peak != peak:
                    last = lasts[i] = Tracked(value, rate, peak)
                if not peaked and rate != 0.0:
                    loud = True
                tracked[i] = last
                if reset:
                    if wide_pass and cv.source == VF_SOURCE:
                        # A VF re-created (sriov_numvfs 0 -> N) restarts its own counters:
                        # a reset of that VF, not evidence about the PF's counters.
                        vf_reset = True
                    else:
                        decreased = True
            fell64 = decreased
        if decreased:
            dev.resets[COUNTER_DECREASE] = dev.resets.get(COUNTER_DECREASE, 0) + 1
        if vf_reset:
            dev.resets[VF_COUNTER_DECREASE] = dev.resets.get(VF_COUNTER_DECREASE, 0) + 1
        if dev.missing:  # some series missed this poll
            for key in [k for k, st in dev.missing.items() if st[2] < now - self.retention]:
                del dev.missing[key]
        if bulk:
            dev.seen = [now] * len(keys)
        dev.quiet = not loud and not any(map(_SATURATES, cvs))
        dev.monotonic = now
        return self._mapping(dev, keys, tracked, narrow), safe, ambiguous

    def _facts_for(self, key: SeriesKey) -> tuple[bool, str, str | None]:
        facts = self._facts.get(key)
        if facts is None:
            if len(self._facts) >= FACTS_MAX:
                self._facts.clear()
            facts = self._facts[key] = _facts_of(key)
        return facts

    @staticmethod
    def _mapping(dev: _Device, keys: tuple[SeriesKey, ...], tracked: list[Tracked],
                 narrow: list[int]) -> Mapping[SeriesKey, Tracked]:
        """The tracked series by key, 64-bit ones first: the mapping of the last poll again
        when every series tracked the same (an unchanged thing costs no new mapping)."""
        out = dev.out
        if out is not None and out[1] == narrow and len(out[0]) == len(tracked) and all(
                map(operator.is_, out[0], tracked)):
            return out[2]
        if narrow:
            late = set(narrow)
            mapping = {keys[i]: tracked[i] for i in range(len(keys)) if i not in late}
            mapping.update((keys[i], tracked[i]) for i in narrow)
        else:
            mapping = dict(zip(keys, tracked, strict=True))
        dev.out = (tracked, narrow, mapping)
        return mapping
