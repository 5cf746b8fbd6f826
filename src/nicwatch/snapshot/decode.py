"""Snapshot documents read: bounded (MAX_SNAPSHOT_BYTES after decompression, a gzip bomb
stopped there) and validated value by value, so whatever a file holds is one SnapshotError
naming the file and the JSON path, never a traceback."""

from __future__ import annotations

import json
import math
import os
import sys
import zlib
from collections.abc import Callable
from types import MappingProxyType
from typing import Any, BinaryIO, NoReturn

from nicwatch.model import (
    CounterValue,
    NicIdentity,
    SeriesKey,
    StatSet,
)
from nicwatch.printable import printable
from nicwatch.snapshot.atomicfile import describe
from nicwatch.snapshot.records import (
    FORMAT,
    GZIP_MAGIC,
    IDENTITY_FIELDS,
    VERSION,
    InterfaceSnapshot,
    Poll,
    Snapshot,
    SnapshotError,
)
from nicwatch.sources.host import HostInfo

# The largest document read, after decompression: ~600 polls of an mlx5-scale port with raw
# statistics (a longer history dump: narrow it with --since). Beyond it a file is refused
# before it is parsed, so a 2 MB gzip bomb costs 256 MiB at most, not gigabytes.
MAX_SNAPSHOT_BYTES = 256 << 20
# Times are epoch seconds up to the end of year 9999 (what a datetime can show).
MAX_TIME = 253402300799.0
# Scales a counter may carry (its raw unit in base units): the tables use 1e-6 (microseconds)
# to 4 (InfiniBand words); these bounds leave room while keeping 1 / scale and raw * scale
# finite for every 64-bit raw value.
MIN_SCALE, MAX_SCALE = 1e-12, 1e12
_FLOAT_LIMIT = 2 ** 1024  # the smallest int no float holds
_UINT64 = 1 << 64

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
    """A number that is a finite float (an int of 309 digits or more is none: math.isfinite
    would raise OverflowError on it)."""
    if type(v) is int:
        return -_FLOAT_LIMIT < v < _FLOAT_LIMIT
    return _is_number(v) and math.isfinite(v)


def _is_time(v: Any) -> bool:
    return _is_finite(v) and 0 <= v <= MAX_TIME  # no time before 1970: no clock gives one


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

    def get(self, obj: Any, key: str, where: str, check: Callable[[Any], bool], what: str,
            nullable: bool = False) -> Any:
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

    def host(self, obj: dict[str, Any]) -> HostInfo:
        def text(key: str) -> str | None:
            value: str | None = self.get(obj, key, "host", _is_str, "a string", nullable=True)
            return value
        return HostInfo(hostname=text("hostname"), boot_id=text("boot_id"),
                        boot_time=self.get(obj, "boot_time", "host", _is_time,
                                           "a time from 1970 to 9999", nullable=True),
                        kernel_release=text("kernel_release"),
                        kernel_version=text("kernel_version"))

    def poll(self, obj: Any, where: str, names: list[tuple[str, ...]]) -> Poll:
        return Poll(
            time=self.get(obj, "time", where, _is_time, "a time from 1970 to 9999"),
            monotonic=self.get(obj, "monotonic", where, _is_time, "a time from 1970 to 9999"),
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
               for f in IDENTITY_FIELDS})
        counters = {}
        for w, c in self.items(obj, "counters", where):
            scale = self.get(c, "scale", w, lambda v: _is_finite(v) and MIN_SCALE <= v
                             <= MAX_SCALE, f"a scale from {MIN_SCALE:g} to {MAX_SCALE:g}")
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
            time=self.get(obj, "time", where, _is_time, "a time from 1970 to 9999"),
            monotonic=self.get(obj, "monotonic", where, _is_time, "a time from 1970 to 9999"),
            counters=MappingProxyType(counters),
            gauges=MappingProxyType(gauges),
            raw=MappingProxyType(raw),
            state=MappingProxyType(state),
        )


class SnapshotTooLarge(SnapshotError):
    """A snapshot document over MAX_SNAPSHOT_BYTES: refused, not read to its end."""


def _too_large(name: str) -> SnapshotError:
    return SnapshotTooLarge(f"{name}: larger than {MAX_SNAPSHOT_BYTES >> 20} MiB uncompressed, "
                            "the limit for a snapshot document")


def gunzip(data: bytes | bytearray, name: str) -> bytes | bytearray:
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


def read_bounded(stream: BinaryIO, name: str) -> bytes:
    """At most MAX_SNAPSHOT_BYTES (plus one) of ``stream``; a larger plain file is refused
    without being read to its end (/dev/zero included)."""
    data: bytes = stream.read(MAX_SNAPSHOT_BYTES + 1)
    if len(data) > MAX_SNAPSHOT_BYTES and data[:2] != GZIP_MAGIC:
        raise _too_large(name)
    return data


def decode(data: bytes | bytearray, name: str) -> Snapshot:
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
    except ValueError:  # an integer literal longer than int() converts
        raise SnapshotError(f"{name}: holds an integer of more than "
                            f"{sys.get_int_max_str_digits()} digits, not a snapshot") from None
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


