"""The flight recorder: the daemon's recent polls in memory, dumped on request in the
snapshot format, so "what happened in the last 10 minutes" can be saved after the fact.

Each poll is kept as one compact record. Numbers (counter values, gauges, raw statistics)
are packed into arrays and zlib-compressed (level 1); what rarely changes between polls
(statistic name lists, counter keys, identities, link and PCIe state) is stored once and
shared by reference count, so evicting old polls frees it. The history is bounded twice:
by a number of polls (a window at the poll interval, default one hour) and by an estimate
of its bytes (default 64 MiB), whichever bites first; the oldest poll goes first. Raw
driver statistics are kept only when asked (``--history.raw-stats``): they are most of the
bytes (32 veth ports of 577 statistics: ~17 MB an hour) and the canonical counters
already carry what the history is read for.

Measured cost per poll (docs/snapshots.md has the method and the table): a virtio port
0.6 kB, an mlx5-scale port with ~4,900 driver statistics 12 kB (39 kB if none of its
values compressed), so an hour at 5 s costs 0.5 MB and 9 MB (28 MB) per port.

It also holds the daemon's two HTTP API handlers, as plain functions the server mounts:
``GET /api/v1/history`` (:func:`history_response`) and ``POST /api/v1/snapshots``
(:func:`snapshot_response`).
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import json
import math
import operator
import re
import sys
import threading
import time
import zlib
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nicwatch.consumers import API_MAX_CONCURRENT, ApiRoute, BaseConsumer
from nicwatch.model import CounterValue, NicIdentity, Sample, SeriesKey, StatSet
from nicwatch.snapshot.files import (
    MAX_SNAPSHOT_BYTES,
    MAX_TIME,
    InterfaceSnapshot,
    Poll,
    Snapshot,
    build,
    check_label,
    encode,
    encode_stream,
    raw_stat_sets,
    reading_state,
    snapshot_series,
    state_key,
    when,
)
from nicwatch.sources.host import HostInfo
from nicwatch.values import parse_bool
from nicwatch.values.units import duration_ns

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample

DEFAULT_WINDOW = 3600.0  # seconds of history
DEFAULT_MAX_BYTES = 64 << 20


def _size(obj: Any) -> int:
    """Approximate bytes held by ``obj`` and what it contains (shared small objects such as
    interned strings are counted at every use, so this errs high)."""
    size = sys.getsizeof(obj)
    if isinstance(obj, tuple):
        size += sum(_size(x) for x in obj)
    elif dataclasses.is_dataclass(obj):
        size += sum(_size(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return size


class _Shared:
    """Values many polls have in common, stored once and reference-counted."""

    def __init__(self) -> None:
        self._entries: dict[Any, list[Any]] = {}  # value -> [value, references, bytes]
        self.bytes = 0

    def take(self, value: Any) -> Any:
        entry = self._entries.get(value)
        if entry is None:
            entry = self._entries[value] = [value, 0, _size(value)]
            self.bytes += entry[2]
        entry[1] += 1
        return entry[0]

    def take_entry(self, value: Any) -> list[Any]:
        """``take(value)``, returning its entry ([stored value, references, bytes]) for
        take_again."""
        self.take(value)
        return self._entries[value]

    def take_again(self, held: list[Any] | None) -> list[Any] | None:
        """``take()`` of the value of ``held`` (an entry take_entry returned) without hashing
        it again (a tuple of a few hundred series keys); None when that entry is no longer
        stored (every poll that held it is gone): then take it anew."""
        if held is None or held[1] <= 0:
            return None
        held[1] += 1
        return held

    def release(self, value: Any) -> None:
        entry = self._entries[value]
        entry[1] -= 1
        if entry[1] == 0:
            del self._entries[value]
            self.bytes -= entry[2]


_META = operator.attrgetter("source", "width", "scale")  # of a CounterValue, in C
_RAW = operator.attrgetter("raw")


def _pack_ints(values: Sequence[int]) -> bytes | tuple[int, ...]:
    try:
        return zlib.compress(array("Q", values).tobytes(), 1)
    except OverflowError:  # not an unsigned 64-bit value: keep as is
        return tuple(values)


def _compress(data: bytes) -> bytes:
    return zlib.compress(data, 1)


def _unpack_ints(packed: bytes | tuple[int, ...]) -> tuple[int, ...]:
    if isinstance(packed, tuple):
        return packed
    return tuple(array("Q", zlib.decompress(packed)))


@dataclass(frozen=True, slots=True)
class _Interface:
    """One interface of one poll, packed. Tuples and ``state`` are shared values."""

    identity: NicIdentity
    time: float
    monotonic: float
    counter_keys: tuple[tuple[SeriesKey, str, int, float], ...]  # key, source, width, scale
    counter_values: bytes | tuple[int, ...]
    gauge_keys: tuple[SeriesKey, ...]
    gauge_values: bytes
    raw: tuple[tuple[str, tuple[str, ...], int, bytes | tuple[int, ...]], ...]
    state: bytes  # JSON

    def shared(self) -> Iterator[Any]:
        yield from (self.identity, self.counter_keys, self.gauge_keys, self.state)
        yield from (names for _, names, _, _ in self.raw)

    def own_bytes(self) -> int:
        return sys.getsizeof(self) + sum(map(sys.getsizeof, (
            self.counter_values, self.gauge_values, self.raw,
            *(x for entry in self.raw for x in (entry, entry[3])))))


@dataclass(frozen=True, slots=True)
class _Poll:
    time: float
    monotonic: float
    interfaces: tuple[_Interface, ...]
    bytes: int  # own bytes, without shared values


def polls_for(window: float, interval: float) -> int:
    """How many polls every ``interval`` seconds cover ``window`` seconds."""
    return max(1, math.ceil(window / interval))


class Recorder(BaseConsumer):
    """Bounded history of polls. ``add`` is called from the poll thread, ``since`` from
    any thread."""

    def __init__(self, host: HostInfo, polls: int, max_bytes: int = DEFAULT_MAX_BYTES,
                 raw_stats: bool = False) -> None:
        self.host = host
        self.raw_stats = raw_stats  # keep raw driver statistics too (opt-in: they dominate)
        self.max_polls = self.max_bytes = 1
        self.resize(polls, max_bytes)
        self._polls: deque[_Poll] = deque()
        self._shared = _Shared()
        self._own_bytes = 0
        self._lock = threading.Lock()
        # Per device, the last state's key (snapshot.statekey.state_key), the state and its
        # JSON: state rarely changes between polls, and comparing keys is cheaper than
        # building and encoding it (the same bytes object also keeps its hash for the
        # shared store).
        self._states: dict[str, tuple[tuple[Any, ...], dict[str, Any], bytes]] = {}
        self._values: dict[tuple[str, str], tuple[Any, Any]] = {}  # see _packed
        # Per device, its last poll's counter keys and (source, width, scale)s, the shared
        # entry of their packed tuple, its gauge keys and their entry (see _pack)
        self._keys: dict[str, tuple[tuple[SeriesKey, ...], list[tuple[str, int, float]],
                                    list[Any], tuple[SeriesKey, ...], list[Any]]] = {}

    @classmethod
    def for_window(cls, host: HostInfo, window: float, interval: float,
                   max_bytes: int = DEFAULT_MAX_BYTES, raw_stats: bool = False) -> Recorder:
        """Room for ``window`` seconds of polls every ``interval`` seconds."""
        return cls(host, polls_for(window, interval), max_bytes, raw_stats)

    @classmethod
    def open(cls, config: Config, host: HostInfo, services: Services | None = None) -> Recorder:
        """Provides the history to the consumers after it (incidents cut their windows
        from it)."""
        recorder = cls.for_window(host, config.history_window, config.interval,
                                  config.history_max_bytes, config.history_raw_stats)
        if services is not None:
            services.history = recorder
        return recorder

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self.add(result.samples)

    def routes(self) -> Sequence[ApiRoute]:
        return (ApiRoute("GET", "/api/v1/history", partial(history_response, self),
                         HISTORY_MAX_CONCURRENT),)

    def reconfigure(self, config: Config) -> None:
        self.resize(polls_for(config.history_window, config.interval), config.history_max_bytes)
        self.raw_stats = config.history_raw_stats

    def last_time(self) -> tuple[float, float] | None:
        """Wall-clock and monotonic time of the newest poll recorded (None: none yet), so a
        consumer that cuts windows from this history stamps the poll with the same clock."""
        with self._lock:
            return (self._polls[-1].time, self._polls[-1].monotonic) if self._polls else None

    def resize(self, polls: int, max_bytes: int) -> None:
        """New limits (a reloaded configuration); they apply from the next poll."""
        if polls < 1 or max_bytes < 1:
            raise ValueError("a history needs room for at least one poll")
        self.max_polls, self.max_bytes = polls, max_bytes

    def __len__(self) -> int:
        return len(self._polls)

    @property
    def bytes(self) -> int:
        """Estimated bytes the history holds."""
        return self._own_bytes + self._shared.bytes

    def span(self) -> tuple[float, float] | None:
        """Wall-clock times of the oldest and newest poll held."""
        with self._lock:
            return (self._polls[0].time, self._polls[-1].time) if self._polls else None

    def _pack(self, sample: Sample) -> _Interface:
        device = sample.identity.device
        key = state_key(sample.reading, sample.pcie_verdict)
        last = self._states.get(device)
        if last is not None and last[0] == key:
            state, data = last[1], last[2]
        else:  # the state changed (or is new): built, and encoded unless it is equal
            state = reading_state(sample.reading, sample.pcie_verdict)
            data = (last[2] if last is not None and last[1] == state
                    else json.dumps(state, separators=(",", ":")).encode())
            self._states[device] = (key, state, data)
        counters, gauges = snapshot_series(sample)
        take = self._shared.take
        raw = raw_stat_sets(sample.reading) if self.raw_stats else {}
        # The keys of the counters and gauges, as arrays: taken again without building and
        # hashing their tuples when they are those of the device's last poll (most polls).
        keys, metas = tuple(counters), list(map(_META, counters.values()))
        gauge_keys = tuple(gauges)
        held = self._keys.get(device)
        shared = self._shared
        counter_entry = (shared.take_again(held[2])
                         if held is not None and held[0] == keys and held[1] == metas else None)
        if counter_entry is None:
            counter_entry = shared.take_entry(
                tuple([(k, *m) for k, m in zip(keys, metas, strict=True)]))
        gauge_entry = (shared.take_again(held[4])
                       if held is not None and held[3] == gauge_keys else None)
        if gauge_entry is None:
            gauge_entry = shared.take_entry(gauge_keys)
        self._keys[device] = (keys, metas, counter_entry, gauge_keys, gauge_entry)
        return _Interface(
            identity=take(sample.identity),
            time=sample.time,
            monotonic=sample.monotonic,
            counter_keys=counter_entry[0],
            counter_values=self._packed(device, "counters", list(map(_RAW, counters.values())),
                                        _pack_ints),
            gauge_keys=gauge_entry[0],
            gauge_values=self._packed(device, "gauges",
                                      array("d", gauges.values()).tobytes(), _compress),
            raw=tuple((source, take(s.names), s.generation, _pack_ints(s.values))
                      for source, s in raw.items()),
            state=take(data),
        )

    def _packed(self, device: str, kind: str, values: Any, pack: Callable[[Any], Any]) -> Any:
        """``pack(values)``, or the same packed object as the device's last poll when the
        values are the same (a level or an idle counter): compressing a few hundred bytes
        costs more than comparing them, and one object held twice costs nothing twice."""
        last = self._values.get((device, kind))
        if last is not None and last[0] == values:
            return last[1]
        packed = pack(values)
        self._values[(device, kind)] = (values, packed)
        return packed

    def add(self, samples: Sequence[Sample], time_: float | None = None,
            monotonic: float | None = None) -> None:
        """Record one poll (``time_``/``monotonic``: when it was taken; default now)."""
        packed = tuple(self._pack(s) for s in samples)
        present = {s.identity.device for s in samples}
        for gone in self._states.keys() - present:
            del self._states[gone]
        for stale in [key for key in self._values if key[0] not in present]:
            del self._values[stale]
        for gone in self._keys.keys() - present:
            del self._keys[gone]
        record = _Poll(time.time() if time_ is None else time_,
                       time.monotonic() if monotonic is None else monotonic, packed,
                       sys.getsizeof(packed) + sum(p.own_bytes() for p in packed))
        with self._lock:
            self._polls.append(record)
            self._own_bytes += record.bytes
            while len(self._polls) > 1 and (len(self._polls) > self.max_polls
                                            or self.bytes > self.max_bytes):
                old = self._polls.popleft()
                self._own_bytes -= old.bytes
                for p in old.interfaces:
                    for value in p.shared():
                        self._shared.release(value)

    def since(self, wall: float | None = None, raw_stats: bool = True) -> Snapshot | None:
        """Polls taken at or after ``wall`` (all when None) as a document; None if none.
        It says ``raw_stats`` only if raw statistics were asked for and are recorded."""
        found = self._records(wall, raw_stats)
        return None if found is None else dataclasses.replace(found[0], polls=tuple(found[1]))

    def stream(self, wall: float | None = None, raw_stats: bool = True,
               max_bytes: int | None = None) -> Iterator[builtins.bytes] | None:
        """:meth:`since` encoded, in pieces of one poll each, unpacked only as each is
        needed (a whole history held at once costs several times its own size); None if
        no poll matches. With ``max_bytes``, the oldest polls are left out until the
        document fits (the head says how many): measured by encoding them once first,
        when the history could be that large (JSON is about 4-7 times the packed size)."""
        found = self._records(wall, raw_stats)
        if found is None:
            return None
        if max_bytes is None or self.bytes * 8 < max_bytes:
            return encode_stream(*found)
        sizes = [len(piece) for piece in encode_stream(*found)]  # head, polls..., closing
        polls, total, keep = sizes[1:-1], sizes[0] + sizes[-1] + len(sizes), 0
        for size in reversed(polls):
            if total + size > max_bytes * 0.95:  # the name table grows a little with them
                break
            total += size
            keep += 1
        found = self._records(wall, raw_stats)
        if found is None or keep == 0:
            return None
        head, records = found
        left_out = len(polls) - keep
        if left_out:
            head = dataclasses.replace(head, meta=MappingProxyType({
                **head.meta, "left_out": {"polls": left_out, "limit_bytes": max_bytes}}))
            records = itertools.islice(records, left_out, None)
        return encode_stream(head, records)

    def _records(self, wall: float | None, raw_stats: bool
                 ) -> tuple[Snapshot, Iterator[Poll]] | None:
        """The document head and its polls (unpacked lazily) at or after ``wall``."""
        return self.records(wall, raw_stats)

    def records(self, wall: float | None, raw_stats: bool, until: float | None = None,
                devices: frozenset[str] | None = None
                ) -> tuple[Snapshot, Iterator[Poll]] | None:
        """The document head and its polls (unpacked lazily, one at a time) taken from
        ``wall`` to ``until`` (each included; None: no bound), with only the interfaces in
        ``devices`` (None: all; a poll without any of them is left out). None if no poll
        matches."""
        with self._lock:
            records = [p for p in self._polls if (wall is None or p.time >= wall)
                       and (until is None or p.time <= until)]
        if devices is not None:
            records = [r for r in records if any(p.identity.device in devices
                                                 for p in r.interfaces)]
        if not records:
            return None
        head = build(self.host, (), None, raw_stats and self.raw_stats,
                     {"source": "flight recorder", "since": wall})
        return head, (Poll(r.time, r.monotonic, tuple(
            _unpack(p, raw_stats) for p in r.interfaces
            if devices is None or p.identity.device in devices)) for r in records)


def _unpack(p: _Interface, raw_stats: bool) -> InterfaceSnapshot:
    values = _unpack_ints(p.counter_values)
    gauges = array("d", zlib.decompress(p.gauge_values))
    raw = {source: StatSet(names, _unpack_ints(packed), generation)
           for source, names, generation, packed in p.raw} if raw_stats else {}
    return InterfaceSnapshot(
        identity=p.identity,
        time=p.time,
        monotonic=p.monotonic,
        counters=MappingProxyType({key: CounterValue(v, source, width, scale)
                                   for (key, source, width, scale), v
                                   in zip(p.counter_keys, values, strict=False)}),
        gauges=MappingProxyType(dict(zip(p.gauge_keys, gauges, strict=False))),
        raw=MappingProxyType(raw),
        state=MappingProxyType(json.loads(p.state)),
    )


# --------------------------------------------------------------------------- HTTP API

JSON_TYPE = "application/json"
# Each history download builds the whole document in memory (8.5 MB for an hour of a busy
# host): at most this many at once, the rest answered 503 with Retry-After.
HISTORY_MAX_CONCURRENT = API_MAX_CONCURRENT
TEXT_TYPE = "text/plain; charset=utf-8"
Response = tuple[int, str, bytes | Iterator[bytes]]  # an iterator: streamed


def parse_since(text: str, now: float) -> float:
    """Epoch seconds from a duration ago (``10m``, ``1h30m``, ``2d``: a Go or Prometheus
    duration, a unit is required), epoch seconds (``1767225600``) or an ISO 8601 time
    (``2026-01-01T00:00:00Z``; UTC if no zone is given)."""
    if re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", text):  # "0" too: the epoch, not zero ago
        wall = float(text)
    else:
        try:
            wall = now - duration_ns(text, bare_seconds=False) / 1e9
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                raise ValueError(f"since: expected a duration such as 10m, epoch seconds or "
                                 f"an ISO 8601 time, got {text[:64]!r}") from None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            wall = parsed.timestamp()
    if not 0 <= wall <= MAX_TIME:  # also NaN and infinities
        raise ValueError(f"since: {text[:64]!r} is not a time between 1970 and 9999")
    return wall


def _param(query: Mapping[str, Any], name: str) -> str | None:
    """A query parameter, from a plain mapping or from urllib.parse.parse_qs (last wins)."""
    value = query.get(name)
    if isinstance(value, (list, tuple)):
        return value[-1] if value else None
    return value


def _text(status: int, message: str) -> Response:
    return status, TEXT_TYPE, (message + "\n").encode()


def history_response(recorder: Recorder, query: Mapping[str, Any], body: bytes = b"") -> Response:
    """``GET /api/v1/history?since=10m&raw=false``: the recorded polls as a snapshot
    document (JSON), streamed one poll at a time. ``since`` defaults to everything held;
    ``raw=false`` leaves out raw driver statistics. 400 on a bad parameter, 404 when no
    poll matches."""
    try:
        since_text = _param(query, "since")
        since = parse_since(since_text, time.time()) if since_text else None
        raw = parse_bool(_param(query, "raw") or "true")
    except ValueError as e:
        return _text(400, str(e))
    pieces = recorder.stream(since, raw, MAX_SNAPSHOT_BYTES)
    if pieces is None:
        span = recorder.span()
        held = f"history holds {when(span[0])} to {when(span[1])}" if span else "history is empty"
        return _text(404, f"no polls recorded since {when(since)} ({held})")
    return 200, JSON_TYPE, pieces


def snapshot_response(take_snapshot: Callable[[str | None], Snapshot],
                      query: Mapping[str, Any], body: bytes = b"") -> Response:
    """``POST /api/v1/snapshots``: take a snapshot now and return it (JSON). The label
    comes from a JSON body ``{"label": "..."}`` or the ``label`` query parameter. This
    reads the kernel, so the server must treat it as a write endpoint."""
    label = _param(query, "label")
    if body.strip():
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
            return _text(400, "body: expected a JSON object such as {\"label\": \"before\"}")
        if not isinstance(request, dict) or not isinstance(request.get("label", ""), str):
            return _text(400, "body: expected a JSON object with a string \"label\"")
        label = request.get("label", label)
    try:
        label = check_label(label) if label else None
    except ValueError as e:
        return _text(400, str(e))
    return 200, JSON_TYPE, encode(take_snapshot(label))
