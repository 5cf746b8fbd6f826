"""Snapshot files: every interface's counters with their provenance, and the difference
between two of them.

One document format serves a single snapshot (one poll), the time series of a recorded
run and a dump of the daemon's flight recorder (many polls). It is JSON, gzip-compressed
when the file name ends in ``.gz``; readers detect gzip by its magic bytes, whatever the
name. The reference, with an example, is docs/snapshots.md. In short::

    {"format": "nicwatch-snapshot", "version": 1, "label": "before",
     "nicwatch_version": "0.1.0", "raw_stats": true, "meta": {},
     "host": {"hostname", "boot_id", "boot_time", "kernel_release", "kernel_version"},
     "polls": [{"time", "monotonic", "interfaces": [
         {"device", "time", "monotonic", "identity": {...},
          "counters": [{"metric", "labels", "raw", "source", "width", "scale"}, ...],
          "gauges": [{"metric", "labels", "value"}, ...],
          "raw": {"ethtool": {"names": 0, "generation", "values": [...]}, "netdev": ...},
          "state": {"link", "driver_info", "rings", "channels", "pause", "fec", "pcie",
                    "pcie_verdict", "rdma", "devlink_port", "devlink_health",
                    "errors"}}]}],
     "stat_names": [["rx_packets", ...], ...]}

Raw statistic names are stored once per distinct name list in ``stat_names`` and referred
to by index, so a many-poll document does not repeat 5,000 mlx5 names in every poll.

Files are written atomically (:class:`AtomicFile`): a crash or a full disk leaves either
the complete new file or nothing (and any previous file under that name untouched).
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NoReturn

from nicwatch import __version__
from nicwatch.snapshot import atomicfile
from nicwatch.snapshot.atomicfile import AtomicFile, describe
from nicwatch.model import (
    CounterValue,
    NicIdentity,
    PcieVerdict,
    Reading,
    Sample,
    SeriesKey,
    StatSet,
    scaled,
)
from nicwatch.metrics import FAMILIES, QUEUE_COUNTER, RAW_COUNTER, RAW_GAUGE
from nicwatch.printable import printable
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import (
    COUNTER_DECREASE,
    INTERFACE_REPLACED,
    STAT_SET_CHANGED,
    VF_COUNTER_DECREASE,
    advance,
)

FORMAT = "nicwatch-snapshot"
VERSION = 1
COMPRESS_ABOVE = 1 << 20  # default file names get .json.gz above this many bytes of JSON
GZIP_MAGIC = b"\x1f\x8b"
# The largest document read, after decompression: ~600 polls of an mlx5-scale port with raw
# statistics (a longer history dump: narrow it with --since). Beyond it a file is refused
# before it is parsed, so a 2 MB gzip bomb costs 256 MiB at most, not gigabytes.
MAX_SNAPSHOT_BYTES = 256 << 20
# Times are epoch seconds up to the end of year 9999 (what a datetime can show).
MAX_TIME = 253402300799.0
_UINT64 = 1 << 64

# Raw statistic sources, as keys of InterfaceSnapshot.raw.
ETHTOOL = "ethtool"  # `ethtool -S` (SIOCETHTOOL GSTATS)
NETDEV = "netdev"  # /sys/class/net/<if>/statistics (rtnl_link_stats64)
ETHTOOL_NETLINK = "ethtool_netlink"  # the kernel's standard statistics (STATS_GET etc.)
INFINIBAND = "infiniband"  # infiniband/<rdma device>/<port>/{hw_counters,counters}

# Opt-in families that repeat raw driver statistics; a snapshot keeps the statistics.
_RAW_FAMILIES = frozenset({RAW_COUNTER.name, RAW_GAUGE.name, QUEUE_COUNTER.name})
_IDENTITY = tuple(f.name for f in dataclasses.fields(NicIdentity) if f.name != "device")


class SnapshotError(Exception):
    """A snapshot file that cannot be read or written; the message names the file."""


class SnapshotTooLarge(SnapshotError):
    """A snapshot document over MAX_SNAPSHOT_BYTES: refused, not read to its end."""


class DiffError(Exception):
    """Two snapshots whose counters cannot be subtracted (different boots, wrong order)."""


def _empty() -> Mapping:
    return MappingProxyType({})


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class InterfaceSnapshot:
    """One interface in one poll.

    ``counters``: the canonical counters as read (raw value, source, width, scale).
    ``raw``: statistic sets by source (:data:`ETHTOOL`, :data:`NETDEV`, ...); empty when
    the document was written without raw statistics. ``state``: configuration and link
    state as JSON values (link, driver, rings, channels, pause, FEC, PCIe path and
    verdict, RDMA ports, source errors), kept for the record.
    """

    identity: NicIdentity
    time: float  # wall clock of the reading
    monotonic: float  # CLOCK_MONOTONIC of the reading; comparable within one boot
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]
    raw: Mapping[str, StatSet]
    state: Mapping[str, Any]

    @property
    def device(self) -> str:
        return self.identity.device


@dataclass(frozen=True, slots=True)
class Poll:
    """Every selected interface at one poll; ``time``/``monotonic``: when it was taken."""

    time: float
    monotonic: float
    interfaces: tuple[InterfaceSnapshot, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A document: one poll (a snapshot) or many (a series or a history dump).

    ``raw_stats`` False means raw statistics were not recorded (not that there were none).
    ``meta`` is free-form context, e.g. the command a ``record`` wrapped.
    """

    host: HostInfo
    nicwatch_version: str
    label: str | None
    polls: tuple[Poll, ...]
    raw_stats: bool = True
    meta: Mapping[str, Any] = field(default_factory=_empty)


# --------------------------------------------------------------------------- building

LABEL_MAX = 200


def check_label(label: str) -> str:
    """A label as given, if it is at most LABEL_MAX printable characters."""
    if len(label) > LABEL_MAX or not label.isprintable():
        raise ValueError(f"label: expected at most {LABEL_MAX} printable characters, got "
                         f"{label[:40]!r}{'...' if len(label) > 40 else ''}")
    return label



_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _jsonable(obj: Any, skip: frozenset[str] = frozenset()) -> Any:
    """A source record as JSON values: dataclasses become objects (minus ``skip``)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if dataclasses.is_dataclass(obj):
        return {name: _jsonable(getattr(obj, name)) for name in _field_names(type(obj))
                if name not in skip}
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (frozenset, set)):
        return sorted(_jsonable(v) for v in obj)
    if isinstance(obj, (tuple, list)):
        return [_jsonable(v) for v in obj]
    return str(obj)


def _statset(values: Mapping[str, int]) -> StatSet:
    return StatSet(tuple(values), tuple(values.values()), 0)


def raw_stat_sets(reading: Reading) -> dict[str, StatSet]:
    """Every raw statistic the sources returned, by source."""
    out: dict[str, StatSet] = {}
    if reading.stats is not None:
        out[ETHTOOL] = reading.stats
    if reading.netclass.stats:
        out[NETDEV] = _statset(reading.netclass.stats)
    if reading.netlink is not None and reading.netlink.std_stats:
        out[ETHTOOL_NETLINK] = _statset(reading.netlink.std_stats)
    for port in reading.rdma:
        prefix = f"{INFINIBAND}/{port.device}/{port.port}"
        if port.hw_counters:
            out[f"{prefix}/hw_counters"] = _statset(port.hw_counters)
        if port.counters:
            out[f"{prefix}/counters"] = _statset(port.counters)
    return out


def reading_state(reading: Reading, pcie_verdict: PcieVerdict | None = None) -> dict[str, Any]:
    """Configuration and link state of a reading (and the PCIe verdict derived from it), as
    JSON values."""
    netlink = reading.netlink
    return {
        "link": _jsonable(reading.netclass, frozenset({"stats"})),
        "driver_info": _jsonable(reading.driver_info),
        "perm_address": reading.perm_address,
        "rings": _jsonable((netlink and netlink.rings) or reading.rings),
        "channels": _jsonable((netlink and netlink.channels) or reading.channels),
        "pause": _jsonable(netlink.pause if netlink else None),
        "fec": _jsonable(netlink.fec if netlink else None),
        "pcie": _jsonable(reading.pcie),
        "pcie_verdict": _jsonable(pcie_verdict),
        "rdma": [_jsonable(p, frozenset({"hw_counters", "counters"})) for p in reading.rdma],
        "devlink_port": _jsonable(reading.devlink_port),
        "devlink_health": [_jsonable(r) for r in reading.devlink_health],
        "errors": [_jsonable(e) for e in reading.errors],
    }


# Fields of the records reading_state reads that hold counters, not state.
_COUNTER_FIELDS = frozenset({"time", "monotonic", "stats", "std_stats", "hw_counters",
                             "counters"})


_STATE_FIELDS: dict[type, tuple[str, ...] | None] = {}
# Per record class with counter fields, one C-level getter of its other fields (a tuple).
_STATE_GETTERS: dict[type, Callable[[Any], tuple] | None] = {}


def _state_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of a record class that are not counters; None when all are."""
    if cls not in _STATE_FIELDS:
        names = _field_names(cls) if dataclasses.is_dataclass(cls) else ()
        _STATE_FIELDS[cls] = (tuple(n for n in names if n not in _COUNTER_FIELDS)
                              if _COUNTER_FIELDS.intersection(names) else None)
    return _STATE_FIELDS[cls]


def _state_getter(cls: type) -> Callable[[Any], tuple] | None:
    """None for a value compared as it is; else what takes its non-counter fields."""
    try:
        return _STATE_GETTERS[cls]
    except KeyError:
        names = _state_fields(cls)
        getter = (None if names is None else
                  (lambda obj, n=names[0]: (getattr(obj, n),)) if len(names) == 1 else
                  operator.attrgetter(*names))
        _STATE_GETTERS[cls] = getter
        return getter


def _without_counters(obj: Any) -> Any:
    """``obj`` itself (compared with ==), or, for a record with counter fields, its other
    fields as a tuple; tuples of records element by element."""
    cls = type(obj)
    if cls is tuple:
        return tuple([_without_counters(x) for x in obj])
    getter = _STATE_GETTERS[cls] if cls in _STATE_GETTERS else _state_getter(cls)
    return obj if getter is None else getter(obj)


_READING_STATE = operator.attrgetter(*_state_fields(Reading))  # Reading's state fields


def state_key(reading: Reading, pcie_verdict: PcieVerdict | None = None) -> tuple:
    """Every field of the reading but its counters and times (records within it too), and
    the verdict: two readings with equal keys have equal :func:`reading_state`, and
    comparing keys costs less than building the state. Any field a source adds to the
    Reading is part of the key unless it is named in _COUNTER_FIELDS. Called for every
    interface every poll (the flight recorder), so the fields are taken by C getters."""
    return (tuple([_without_counters(v) for v in _READING_STATE(reading)]), pcie_verdict)


def snapshot_series(sample: Sample) -> tuple[dict[SeriesKey, CounterValue],
                                              dict[SeriesKey, float]]:
    """The counters and gauges of a sample a snapshot keeps: all but the raw families (raw
    statistics are kept whole, by source)."""
    counters, gauges = sample.counters, sample.gauges
    return ({k: v for k, v in counters.items() if k.metric not in _RAW_FAMILIES},
            {k: v for k, v in gauges.items() if k.metric not in _RAW_FAMILIES})


def interface_snapshot(sample: Sample, raw: bool = True,
                       state: Mapping[str, Any] | None = None) -> InterfaceSnapshot:
    """``state``: the reading_state of the sample when the caller has it already."""
    counters, gauges = snapshot_series(sample)
    return InterfaceSnapshot(
        identity=sample.identity,
        time=sample.time,
        monotonic=sample.monotonic,
        counters=MappingProxyType(counters),
        gauges=MappingProxyType(gauges),
        raw=MappingProxyType(raw_stat_sets(sample.reading) if raw else {}),
        state=MappingProxyType(reading_state(sample.reading, sample.pcie_verdict)
                               if state is None else state),
    )


def poll_of(samples: Sequence[Sample], time: float, monotonic: float,
            raw: bool = True) -> Poll:
    return Poll(time, monotonic, tuple(interface_snapshot(s, raw) for s in samples))


def build(host: HostInfo, polls: Sequence[Poll], label: str | None = None,
          raw_stats: bool = True, meta: Mapping[str, Any] | None = None) -> Snapshot:
    return Snapshot(host, __version__, label, tuple(polls), raw_stats,
                    MappingProxyType(dict(meta or {})))


# --------------------------------------------------------------------------- encoding


class NameTable:
    """Distinct raw statistic name lists of a document, each stored once."""

    def __init__(self) -> None:
        self.lists: list[tuple[str, ...]] = []
        self._index: dict[tuple[str, ...], int] = {}

    def index(self, names: tuple[str, ...]) -> int:
        i = self._index.get(names)
        if i is None:
            i = self._index[names] = len(self.lists)
            self.lists.append(names)
        return i


def encode_interface(iface: InterfaceSnapshot, names: NameTable) -> dict[str, Any]:
    ident = iface.identity
    return {
        "device": ident.device,
        "time": iface.time,
        "monotonic": iface.monotonic,
        "identity": {f: getattr(ident, f) for f in _IDENTITY},
        "counters": [{"metric": k.metric, "labels": dict(k.labels), "raw": cv.raw,
                      "source": cv.source, "width": cv.width, "scale": cv.scale}
                     for k, cv in iface.counters.items()],
        "gauges": [{"metric": k.metric, "labels": dict(k.labels), "value": v}
                   for k, v in iface.gauges.items()],
        "raw": {source: {"names": names.index(s.names), "generation": s.generation,
                         "values": list(s.values)} for source, s in iface.raw.items()},
        "state": dict(iface.state),
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode_poll(poll: Poll, names: NameTable) -> str:
    interfaces = ",\n".join(_dumps(encode_interface(i, names)) for i in poll.interfaces)
    return (f'{{"time":{_dumps(poll.time)},"monotonic":{_dumps(poll.monotonic)},'
            f'"interfaces":[\n{interfaces}]}}')


def _head(snapshot: Snapshot) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "label": snapshot.label,
            "nicwatch_version": snapshot.nicwatch_version, "raw_stats": snapshot.raw_stats,
            "host": _jsonable(snapshot.host), "meta": dict(snapshot.meta)}


# A document is written in three parts, so that a series can be streamed: the head's keys
# and the opening of "polls", the polls separated by _POLL_SEPARATOR, and the name table
# (complete only once every poll has been encoded).
_POLL_SEPARATOR = ",\n"


def _opening(snapshot: Snapshot) -> str:
    return _dumps(_head(snapshot))[:-1] + ',\n"polls":[\n'


def _closing(names: NameTable) -> str:
    return '],\n"stat_names":' + _dumps(names.lists) + "}\n"


def encode(snapshot: Snapshot) -> bytes:
    return b"".join(encode_stream(snapshot, snapshot.polls))


def encode_stream(head: Snapshot, polls: Iterable[Poll]) -> Iterator[bytes]:
    """The document of ``head`` (everything but its polls) with ``polls``, in pieces: one
    per poll, so a long history is never in memory whole. ``polls`` must not be empty."""
    names = NameTable()
    yield _opening(head).encode()
    separator = ""
    for poll in polls:
        yield (separator + encode_poll(poll, names)).encode()
        separator = _POLL_SEPARATOR
    yield _closing(names).encode()


# --------------------------------------------------------------------------- atomic files


def write_atomic(path: str | os.PathLike[str], data: bytes, compress: bool = False) -> None:
    atomicfile.write_atomic(path, data, compress, SnapshotError)


def wants_gzip(path: str | os.PathLike[str]) -> bool:
    return str(path).endswith(".gz")


def save(snapshot: Snapshot, path: str | os.PathLike[str]) -> None:
    """Write ``snapshot`` atomically; gzip when ``path`` ends in ``.gz``."""
    write_atomic(path, encode(snapshot), wants_gzip(path))


class SeriesWriter:
    """A many-poll document written as the polls arrive (a recorded run), so memory stays
    flat however long the run; it appears at ``path`` only on :meth:`close`. ``head`` gives
    everything but the polls."""

    def __init__(self, path: str | os.PathLike[str], head: Snapshot) -> None:
        self._file = AtomicFile(path, wants_gzip(path), SnapshotError)
        self._names = NameTable()
        self._file.write(_opening(head).encode())
        self._polls = 0

    def add(self, poll: Poll) -> None:
        separator = _POLL_SEPARATOR if self._polls else ""
        self._file.write((separator + encode_poll(poll, self._names)).encode())
        self._polls += 1

    def close(self) -> None:
        if self._polls == 0:
            self._file.abort()
            raise SnapshotError(f"{self._file.path}: no polls to write")
        self._file.write(_closing(self._names).encode())
        self._file.commit()

    def abort(self) -> None:
        self._file.abort()


# --------------------------------------------------------------------------- decoding


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return _is_int(v) and 0 <= v < _UINT64


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_finite(v: Any) -> bool:
    return _is_number(v) and math.isfinite(v)


def _is_time(v: Any) -> bool:
    return _is_finite(v) and abs(v) <= MAX_TIME


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_labels(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


class _Decoder:
    """JSON values -> records, failing with the file name and the JSON path of the fault."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, where: str, problem: str) -> NoReturn:
        # ``where`` can hold the file's own keys: escaped like every other name we print.
        raise SnapshotError(printable(f"{self.name}: {where or 'top level'}: {problem}"))

    def get(self, obj: Any, key: str, where: str, check, what: str, nullable: bool = False):
        if not isinstance(obj, dict):
            self.fail(where, f"expected an object, got {_show(obj)}")
        if key not in obj:
            self.fail(where, f"missing key {key!r}")
        value = obj[key]
        if value is None and nullable:
            return None
        if not check(value):
            null = " or null" if nullable else ""
            self.fail(f"{where}.{key}" if where else key,
                      f"expected {what}{null}, got {_show(value)}")
        return value

    def items(self, obj: Any, key: str, where: str) -> list[tuple[str, Any]]:
        """``obj[key]`` as a list, with the JSON path of each element."""
        values = self.get(obj, key, where, lambda v: isinstance(v, list), "a list")
        return [(f"{where}.{key}[{i}]" if where else f"{key}[{i}]", v)
                for i, v in enumerate(values)]

    def snapshot(self, doc: Any) -> Snapshot:
        top = ""
        fmt = self.get(doc, "format", top, _is_str, "a string")
        if fmt != FORMAT:
            self.fail("format", f"expected {FORMAT!r}, got {fmt!r}: not a nicwatch snapshot")
        version = self.get(doc, "version", top, _is_int, "an integer")
        if version > VERSION:
            self.fail("version", f"format version {version} is newer than this nicwatch "
                                 f"reads ({VERSION}); upgrade nicwatch")
        if version < 1:
            self.fail("version", f"expected {VERSION}, got {version}")
        names = []
        for where, value in self.items(doc, "stat_names", top):
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                self.fail(where, "expected a list of statistic names")
            names.append(tuple(value))
        polls = tuple(self.poll(v, where, names) for where, v in self.items(doc, "polls", top))
        if not polls:
            self.fail("polls", "no polls")
        meta = doc.get("meta", {})
        if not isinstance(meta, dict):
            self.fail("meta", f"expected an object, got {_show(meta)}")
        return Snapshot(
            host=self.host(self.get(doc, "host", top, lambda v: isinstance(v, dict),
                                    "an object")),
            nicwatch_version=self.get(doc, "nicwatch_version", top, _is_str, "a string"),
            label=self.get(doc, "label", top, _is_str, "a string", nullable=True),
            polls=polls,
            raw_stats=self.get(doc, "raw_stats", top, lambda v: isinstance(v, bool),
                               "true or false"),
            meta=MappingProxyType(meta),
        )

    def host(self, obj: dict) -> HostInfo:
        def text(key: str) -> str | None:
            return self.get(obj, key, "host", _is_str, "a string", nullable=True)
        return HostInfo(hostname=text("hostname"), boot_id=text("boot_id"),
                        boot_time=self.get(obj, "boot_time", "host", _is_time, "a number",
                                           nullable=True),
                        kernel_release=text("kernel_release"),
                        kernel_version=text("kernel_version"))

    def poll(self, obj: Any, where: str, names: list[tuple[str, ...]]) -> Poll:
        return Poll(
            time=self.get(obj, "time", where, _is_time, "a number"),
            monotonic=self.get(obj, "monotonic", where, _is_time, "a number"),
            interfaces=tuple(self.interface(v, w, names)
                             for w, v in self.items(obj, "interfaces", where)),
        )

    def key(self, obj: Any, where: str) -> SeriesKey:
        metric = self.get(obj, "metric", where, _is_str, "a string")
        labels = self.get(obj, "labels", where, _is_labels, "an object of strings")
        return SeriesKey(metric, tuple(sorted(labels.items())))

    def interface(self, obj: Any, where: str, names: list[tuple[str, ...]]) -> InterfaceSnapshot:
        ident = self.get(obj, "identity", where, lambda v: isinstance(v, dict), "an object")
        iw = f"{where}.identity"
        identity = NicIdentity(
            device=self.get(obj, "device", where, _is_str, "a string"),
            **{f: self.get(ident, f, iw, _is_int if f == "ifindex" else _is_str,
                           "an integer" if f == "ifindex" else "a string", nullable=True)
               for f in _IDENTITY})
        counters = {}
        for w, c in self.items(obj, "counters", where):
            scale = self.get(c, "scale", w, lambda v: _is_time(v) and v > 0,
                             "a positive number")
            counters[self.key(c, w)] = CounterValue(
                raw=self.get(c, "raw", w, _is_count, "an integer from 0 to 2^64-1"),
                source=self.get(c, "source", w, _is_str, "a string"),
                width=self.get(c, "width", w, lambda v: v in (32, 64), "32 or 64"),
                scale=scale)
        gauges = {self.key(g, w): float(self.get(g, "value", w, _is_finite,
                                                 "a finite number"))
                  for w, g in self.items(obj, "gauges", where)}
        raw = {}
        stat_sets = self.get(obj, "raw", where, lambda v: isinstance(v, dict), "an object")
        for source, entry in stat_sets.items():
            w = f"{where}.raw.{source}"
            index = self.get(entry, "names", w, lambda v: _is_int(v) and 0 <= v < len(names),
                             f"an index into stat_names (0-{len(names) - 1})")
            values = self.get(entry, "values", w,
                              lambda v: isinstance(v, list) and all(map(_is_count, v)),
                              "a list of integers from 0 to 2^64-1")
            if len(values) != len(names[index]):
                self.fail(f"{w}.values", f"{len(values)} values for {len(names[index])} names")
            raw[source] = StatSet(names[index], tuple(values),
                                  self.get(entry, "generation", w, _is_int, "an integer"))
        state = self.get(obj, "state", where, lambda v: isinstance(v, dict), "an object")
        return InterfaceSnapshot(
            identity=identity,
            time=self.get(obj, "time", where, _is_time, "a number"),
            monotonic=self.get(obj, "monotonic", where, _is_time, "a number"),
            counters=MappingProxyType(counters),
            gauges=MappingProxyType(gauges),
            raw=MappingProxyType(raw),
            state=MappingProxyType(state),
        )


def _too_large(name: str) -> SnapshotError:
    return SnapshotTooLarge(f"{name}: larger than {MAX_SNAPSHOT_BYTES >> 20} MiB uncompressed, "
                         "the limit for a snapshot document")


def gunzip(data: bytes, name: str) -> bytes | bytearray:
    """``data`` decompressed if it is gzip (any number of members), at most
    MAX_SNAPSHOT_BYTES of it; SnapshotError beyond that or on corrupt data."""
    if data[:2] != GZIP_MAGIC:
        if len(data) > MAX_SNAPSHOT_BYTES:
            raise _too_large(name)
        return data
    out = bytearray()
    try:
        while data:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while not d.eof:  # 1 MiB at a time: no second copy of the whole
                chunk = d.decompress(data, 1 << 20)
                data = d.unconsumed_tail
                if not chunk and not data:
                    break  # input ended inside the stream
                out += chunk
                if len(out) > MAX_SNAPSHOT_BYTES:
                    raise _too_large(name)
            if not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker")
            data = d.unused_data.lstrip(b"\0")  # gzip allows zero padding between members
    except (EOFError, zlib.error) as e:
        raise SnapshotError(f"{name}: truncated or corrupt gzip data ({e})") from None
    return out  # not copied into bytes: json.loads takes a bytearray


def read_bounded(stream, name: str) -> bytes:
    """At most MAX_SNAPSHOT_BYTES (plus one) of ``stream``; a larger plain file is refused
    without being read to its end (/dev/zero included)."""
    data = stream.read(MAX_SNAPSHOT_BYTES + 1)
    if len(data) > MAX_SNAPSHOT_BYTES and data[:2] != GZIP_MAGIC:
        raise _too_large(name)
    return data


def decode(data: bytes, name: str) -> Snapshot:
    """Parse a document; ``name`` (the file) starts every error message."""
    data = gunzip(data, name)
    if not data or data.isspace():
        raise SnapshotError(f"{name}: empty file, not a snapshot")
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{name}: not valid JSON (line {e.lineno}, column {e.colno}: "
                            f"{e.msg}); truncated?") from None
    except UnicodeDecodeError:
        raise SnapshotError(f"{name}: not UTF-8 text, not a snapshot") from None
    except RecursionError:
        raise SnapshotError(f"{name}: JSON nested too deeply, not a snapshot") from None
    return _Decoder(name).snapshot(doc)


def load(path: str | os.PathLike[str]) -> Snapshot:
    try:
        with open(path, "rb") as f:
            data = read_bounded(f, str(path))
    except OSError as e:
        raise SnapshotError(f"{path}: cannot read: {describe(e)}") from None
    return decode(data, str(path))


# --------------------------------------------------------------------------- diff

OK = "ok"
NEW = "new"  # only in B
GONE = "gone"  # only in A
SOURCE_CHANGED = "source_changed"  # a canonical family now comes from another source

# Health families shown first, in this order, then the other health families, then the rest.
HEALTH_FIRST = (
    "nic_rx_pause_frames_total", "nic_tx_pause_frames_total",
    "nic_rx_pfc_frames_total", "nic_tx_pfc_frames_total",
    "nic_rx_pfc_tc_frames_total", "nic_tx_pfc_tc_frames_total",
    "nic_rx_pause_ctrl_frames_total", "nic_tx_pause_ctrl_frames_total",
    "nic_rx_pause_duration_seconds_total", "nic_tx_pause_duration_seconds_total",
    "nic_pause_storm_events_total",
    "nic_rx_out_of_buffer_drops_total", "nic_rx_discards_total", "nic_tx_discards_total",
    "nic_rx_crc_errors_total", "nic_fec_uncorrectable_blocks_total",
)
_COUNTER_FAMILIES = [f for f in FAMILIES.values() if f.type == "counter"]
_RANK = {name: i for i, name in enumerate(dict.fromkeys((
    *HEALTH_FIRST, *(f.name for f in _COUNTER_FAMILIES if f.health),
    *(f.name for f in _COUNTER_FAMILIES))))}


@dataclass(frozen=True, slots=True)
class Row:
    """One counter's change. ``kind`` is ``"counter"`` for a canonical family, else the raw
    source (``ethtool``, ``netdev``, ...). ``delta`` and ``rate`` (per second, base units)
    are set only when ``status`` is ``ok``: never across a reset, a changed statistic set
    or a replaced interface."""

    kind: str
    name: str
    labels: tuple[tuple[str, str], ...]
    unit: str
    health: bool
    before: float | None
    after: float | None
    delta: float | None
    rate: float | None
    status: str


@dataclass(frozen=True, slots=True)
class Change:
    """A configuration or identity value that differs (``None``: absent on that side)."""

    name: str  # "identity.<field>" or a gauge family
    labels: tuple[tuple[str, str], ...]
    before: Any
    after: Any


@dataclass(frozen=True, slots=True)
class InterfaceDiff:
    device: str  # the name in B
    before: NicIdentity
    after: NicIdentity
    seconds: float
    flags: tuple[str, ...]  # interface_replaced, stat_set_changed, counter_decrease,
    # vf_counter_decrease
    stat_set_changes: tuple[tuple[str, int, int], ...]  # (source, names added, names removed)
    changes: tuple[Change, ...]
    rows: tuple[Row, ...]  # health families first


@dataclass(frozen=True, slots=True)
class Diff:
    label_a: str | None
    label_b: str | None
    host_a: HostInfo
    host_b: HostInfo
    time_a: float
    time_b: float
    seconds: float
    interfaces: tuple[InterfaceDiff, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    warnings: tuple[str, ...]


def when(t: float | None) -> str:
    """An epoch time as UTC text for people (never raises: NaN and far-off times are
    shown as numbers)."""
    if t is None:
        return "unknown"
    if not (isinstance(t, (int, float)) and math.isfinite(t) and abs(t) <= MAX_TIME):
        return f"{t!r} (not a time)"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def same_boot(a: HostInfo, b: HostInfo) -> tuple[str, ...]:
    """Raise DiffError when ``a`` and ``b`` are different boots; warnings when unknown."""
    if a.boot_id and b.boot_id:
        if a.boot_id != b.boot_id:
            hosts = (f" of host {a.hostname}", f" of host {b.hostname}") \
                if a.hostname != b.hostname else ("", "")
            raise DiffError(
                f"taken in different boots (A: boot {a.boot_id}{hosts[0]}, booted "
                f"{when(a.boot_time)}; B: boot {b.boot_id}{hosts[1]}, booted "
                f"{when(b.boot_time)}): counters restart at boot, so their difference "
                "means nothing; refusing to subtract")
        return ()
    return ("boot id missing: cannot confirm that A and B were taken in the same boot",)


def _match(xs: Sequence[InterfaceSnapshot], ys: Sequence[InterfaceSnapshot]):
    """Pairs by name, then by PCI function and permanent MAC (an interface renamed)."""
    by_name = {y.device: y for y in ys}
    pairs, rest_a = [], []
    for x in xs:
        y = by_name.pop(x.device, None)
        (pairs.append((x, y)) if y is not None else rest_a.append(x))

    def nic(i: InterfaceSnapshot):
        ident = i.identity
        return (ident.pci_address, ident.perm_address) \
            if ident.pci_address and ident.perm_address else None
    by_nic = {nic(y): y for y in by_name.values() if nic(y)}
    only_a = []
    for x in rest_a:
        y = by_nic.pop(nic(x), None) if nic(x) else None
        if y is None:
            only_a.append(x.device)
        else:
            pairs.append((x, y))
            del by_name[y.device]
    return pairs, tuple(only_a), tuple(by_name)


def _exact(raw: int, scale: float) -> float:
    """A counter in base units; an int when unscaled, as floats lose counts above 2**53."""
    return raw if scale == 1 else scaled(raw, scale)


def _row(kind: str, name: str, labels, unit: str, health: bool, a: CounterValue | None,
         b: CounterValue | None, seconds: float, blocked: str | None) -> Row:
    before = _exact(a.raw, a.scale) if a is not None else None
    after = _exact(b.raw, b.scale) if b is not None else None
    delta = None
    if a is None:
        status = NEW
    elif b is None:
        status = GONE
    elif blocked:
        status = blocked
    elif a.source != b.source:
        status = SOURCE_CHANGED
    else:
        extended = advance(a.raw, a.raw, b.raw, b.width)
        status = OK if extended is not None else COUNTER_DECREASE
        if extended is not None:
            delta = _exact(extended - a.raw, b.scale)
    rate = delta / seconds if delta is not None and seconds > 0 else None
    return Row(kind, name, labels, unit, health, before, after, delta, rate, status)


def _raw_rows(source: str, a: StatSet | None, b: StatSet | None, seconds: float,
              blocked: str | None) -> list[Row]:
    def cv(value: int | None) -> CounterValue | None:
        return None if value is None else CounterValue(value, source)
    if a is not None and b is not None and a.names == b.names:
        triples = zip(a.names, a.values, b.values)  # by position: names may repeat
    else:
        va, vb = (a.as_dict() if a else {}), (b.as_dict() if b else {})
        triples = ((n, va.get(n), vb.get(n)) for n in dict.fromkeys((*vb, *va)))
    return [_row(source, name, (), "", False, cv(x), cv(y), seconds, blocked)
            for name, x, y in triples]


def _same(x: Any, y: Any) -> bool:
    """Equal, counting NaN as equal to NaN."""
    return x == y or (isinstance(x, float) and isinstance(y, float)
                      and math.isnan(x) and math.isnan(y))


def _changes(x: InterfaceSnapshot, y: InterfaceSnapshot) -> list[Change]:
    out = [Change(f"identity.{f}", (), getattr(x.identity, f), getattr(y.identity, f))
           for f in ("device", *_IDENTITY)
           if getattr(x.identity, f) != getattr(y.identity, f)]
    for key in dict.fromkeys((*x.gauges, *y.gauges)):
        if key.metric == "nic_info":  # the identity, compared above
            continue
        before, after = x.gauges.get(key), y.gauges.get(key)
        if not _same(before, after):
            out.append(Change(key.metric, key.labels, before, after))
    return out


def diff_interfaces(x: InterfaceSnapshot, y: InterfaceSnapshot, raw: bool = True) -> InterfaceDiff:
    seconds = y.monotonic - x.monotonic
    replaced = (x.identity.ifindex, x.identity.driver) != (y.identity.ifindex, y.identity.driver)
    set_changes = []
    if raw:
        for source in x.raw.keys() & y.raw.keys():
            if x.raw[source].names != y.raw[source].names:
                na, nb = set(x.raw[source].names), set(y.raw[source].names)
                set_changes.append((source, len(nb - na), len(na - nb)))
    ethtool_changed = any(s == ETHTOOL for s, _, _ in set_changes)
    counter_rows = []
    for key in dict.fromkeys((*x.counters, *y.counters)):
        a, b = x.counters.get(key), y.counters.get(key)
        family = FAMILIES.get(key.metric)
        blocked = INTERFACE_REPLACED if replaced else (
            STAT_SET_CHANGED if ethtool_changed and b is not None and a is not None
            and b.source == "ethtool_ioctl" else None)
        counter_rows.append(_row("counter", key.metric, key.labels,
                                 family.unit if family else "", bool(family and family.health),
                                 a, b, seconds, blocked))
    counter_rows.sort(key=lambda r: (_RANK.get(r.name, len(_RANK)), r.name, r.labels))
    raw_rows = []
    if raw:
        for source in dict.fromkeys((*x.raw, *y.raw)):
            raw_rows += _raw_rows(source, x.raw.get(source), y.raw.get(source), seconds,
                                  INTERFACE_REPLACED if replaced else None)
    rows = (*counter_rows, *raw_rows)
    flags = [INTERFACE_REPLACED] if replaced else []
    if set_changes:
        flags.append(STAT_SET_CHANGED)
    # A VF's counters restart when the VF is re-created: flagged apart from the PF's own.
    fell = {r.name.startswith("nic_vf_") for r in rows if r.status == COUNTER_DECREASE}
    if False in fell:
        flags.append(COUNTER_DECREASE)
    if True in fell:
        flags.append(VF_COUNTER_DECREASE)
    return InterfaceDiff(y.device, x.identity, y.identity, seconds, tuple(flags),
                         tuple(sorted(set_changes)), tuple(_changes(x, y)), rows)


def diff(a: Snapshot, b: Snapshot) -> Diff:
    """What changed from ``a``'s first poll to ``b``'s last (pure).

    Refuses (DiffError) across a reboot and when B was taken before A. A counter that went
    backwards, a changed statistic set and a replaced interface are flagged on their rows,
    never turned into negative numbers; 32-bit counters may have wrapped once.
    """
    pa, pb = a.polls[0], b.polls[-1]
    warnings = same_boot(a.host, b.host)
    seconds = pb.monotonic - pa.monotonic
    if seconds < 0:
        raise DiffError(f"B was taken {-seconds:.3f} s before A (by the monotonic clock); "
                        "give the earlier snapshot first")
    pairs, only_a, only_b = _match(pa.interfaces, pb.interfaces)
    raw = a.raw_stats and b.raw_stats
    return Diff(
        label_a=a.label, label_b=b.label, host_a=a.host, host_b=b.host,
        time_a=pa.time, time_b=pb.time, seconds=seconds,
        interfaces=tuple(diff_interfaces(x, y, raw) for x, y in pairs),
        only_a=only_a, only_b=only_b, warnings=warnings)


def family_total(rows: Iterable[Row], family: str) -> tuple[float | None, str]:
    """Sum of a canonical family's deltas over its labels, and the status: ``ok``, the
    first non-ok status of any of its rows, or ``absent``."""
    total, status, seen = 0, OK, False
    for row in rows:
        if row.kind == "counter" and row.name == family:
            seen = True
            if row.status != OK:
                status = status if status != OK else row.status
            else:
                total += row.delta
    if not seen:
        return None, "absent"
    return (total if status == OK else None), status

