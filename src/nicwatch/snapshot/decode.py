"""Snapshot documents read: bounded (MAX_SNAPSHOT_BYTES after decompression, a gzip bomb
stopped there) and validated value by value, so whatever a file holds is one SnapshotError
naming the file and the JSON path, never a traceback."""

from __future__ import annotations

import json
import math
import os
import re
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
from nicwatch.snapshot.atomicfile import describe, open_input
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
# The most JSON values a document may hold (count_values: an upper bound found before any is
# built), and what each costs once decoded at most (measured: docs/failure-behaviour.md).
# Python objects are what grow: 256 MiB of empty polls are 30 million values, 3 GB.
MAX_SNAPSHOT_VALUES = 8_000_000
VALUE_COST = 100
# The most polls a document may hold: decoding costs 10-30 µs a poll, whatever it holds, so
# this bounds the time of a document of empty polls (about 5 s) as the values bound its memory.
MAX_SNAPSHOT_POLLS = 250_000
# Times are epoch seconds up to the end of year 9999 (what a datetime can show).
MAX_TIME = 253402300799.0
# Scales a counter may carry (its raw unit in base units): the tables use 1e-6 (microseconds)
# to 4 (InfiniBand words); these bounds leave room while keeping 1 / scale and raw * scale
# finite for every 64-bit raw value.
MIN_SCALE, MAX_SCALE = 1e-12, 1e12
_SATURATING = range(1, 65)  # widths of a saturating counter
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
        self.names: list[tuple[str, ...]] | None = None  # stat_names, once read
        self._keys: dict[tuple[str, tuple[tuple[str, str], ...]], SeriesKey] = {}
        self._strings: dict[str, str] = {}
        # raw statistics read before stat_names: (dict to fill, source, path, index, values,
        # generation)
        self.pending: list[tuple[dict[str, StatSet], str, str, int, tuple[int, ...], int]] = []

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

    def head(self, doc: Any) -> None:
        """Check the format and version (before any poll is decoded)."""
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

    def stat_names(self, doc: Any) -> None:
        names = []
        for where, value in self.items(doc, "stat_names", ""):
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                self.fail(where, "expected a list of statistic names")
            names.append(tuple(value))
        self.names = names
        for raw, source, w, index, values, generation in self.pending:
            raw[source] = self.stat_set(w, index, values, generation)
        self.pending.clear()

    def stat_set(self, w: str, index: int, values: tuple[int, ...], generation: int) -> StatSet:
        names = self.names
        assert names is not None
        if index >= len(names):
            self.fail(f"{w}.names", f"expected an index into stat_names (0-{len(names) - 1}), "
                                    f"got {index}")
        if len(values) != len(names[index]):
            self.fail(f"{w}.values", f"{len(values)} values for {len(names[index])} names")
        return StatSet(names[index], values, generation)

    def snapshot(self, doc: dict[str, Any], polls: tuple[Poll, ...]) -> Snapshot:
        """``doc``: the document's members but its polls, already decoded into ``polls``."""
        top = ""
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

    def poll(self, obj: Any, where: str) -> Poll:
        return Poll(
            time=self.get(obj, "time", where, _is_time, "a time from 1970 to 9999"),
            monotonic=self.get(obj, "monotonic", where, _is_time, "a time from 1970 to 9999"),
            interfaces=tuple(self.interface(v, w)
                             for w, v in self.items(obj, "interfaces", where)),
        )

    def key(self, obj: Any, where: str) -> SeriesKey:
        metric = self.get(obj, "metric", where, _is_str, "a string")
        labels = self.get(obj, "labels", where, _is_labels, "an object of strings")
        found = (metric, tuple(sorted(labels.items())))
        # one record per series, not per poll: a history repeats its series in every poll
        key = self._keys.get(found)
        if key is None:
            key = self._keys[found] = SeriesKey(*found)
        return key

    def interface(self, obj: Any, where: str) -> InterfaceSnapshot:
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
            saturates = (self.get(c, "saturates", w, lambda v: v is True, "true")
                         if "saturates" in c else False)
            # IB PortCounters saturate, at 4 to 32 bits (written only with "saturates")
            widths, what = (_SATURATING, "1 to 64") if saturates else ((32, 64), "32 or 64")
            counters[self.key(c, w)] = CounterValue(
                raw=self.get(c, "raw", w, _is_count, "an integer from 0 to 2^64-1"),
                source=self._strings.setdefault(s := self.get(c, "source", w, _is_str,
                                                              "a string"), s),
                width=self.get(c, "width", w, widths.__contains__, what),
                scale=scale, saturates=saturates)
        gauges = {self.key(g, w): float(self.get(g, "value", w, _is_finite,
                                                 "a finite number"))
                  for w, g in self.items(obj, "gauges", where)}
        raw: dict[str, StatSet] = {}
        stat_sets = self.get(obj, "raw", where, lambda v: isinstance(v, dict), "an object")
        for source, entry in stat_sets.items():
            w = f"{where}.raw.{source}"
            index = self.get(entry, "names", w, lambda v: _is_int(v) and v >= 0,
                             "an index into stat_names")
            values = tuple(self.get(entry, "values", w,
                                    lambda v: isinstance(v, list) and all(map(_is_count, v)),
                                    "a list of integers from 0 to 2^64-1"))
            generation = self.get(entry, "generation", w, _is_int, "an integer")
            if self.names is None:  # the name table comes after the polls: resolved there
                self.pending.append((raw, source, w, index, values, generation))
            else:
                raw[source] = self.stat_set(w, index, values, generation)
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


def _too_many(name: str, what: str = "JSON values", limit: int = MAX_SNAPSHOT_VALUES
              ) -> SnapshotError:
    counted = ("counted before any is decoded; each can cost up to "
               f"{VALUE_COST} bytes decoded" if what == "JSON values" else "the limit of a "
               "snapshot document")
    return SnapshotTooLarge(f"{name}: more than {limit:,} {what} ({counted}); narrow a "
                            "history with --since")


def gunzip(data: bytes | bytearray, name: str) -> bytes | bytearray:
    """``data`` decompressed if it is gzip (any number of members), at most
    MAX_SNAPSHOT_BYTES of it; SnapshotError beyond that or on corrupt data."""
    if data[:2] != GZIP_MAGIC:
        if len(data) > MAX_SNAPSHOT_BYTES:
            raise _too_large(name)
        return data
    out = bytearray()
    values = 0
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
                values += count_values(chunk)
                if values > MAX_SNAPSHOT_VALUES:  # a bomb of tiny values: stopped here
                    raise _too_many(name)
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


def count_values(data: bytes | bytearray) -> int:
    """An upper bound on the JSON values in ``data`` (every value but a document's first
    opens a container or follows a comma; commas and brackets inside strings only add)."""
    return data.count(b"{") + data.count(b"[") + data.count(b",") + 1


_WS = re.compile(r"[ \t\n\r]*")


class _Text:
    """A JSON document read member by member: its "polls" one poll at a time, so that only
    one poll's JSON objects exist at once next to the records decoded so far (json.loads
    built the whole tree first: twice the memory at the peak)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._decoder = json.JSONDecoder()

    def peek(self) -> str:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
        return self.text[self.pos:self.pos + 1]

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise json.JSONDecodeError(f"Expecting {what}", self.text, self.pos)
        self.pos += 1
        return c

    def key(self) -> str:
        self.expect('"', "property name enclosed in double quotes")
        key, self.pos = json.decoder.scanstring(self.text, self.pos)  # type: ignore[attr-defined]
        self.expect(":", "':' delimiter")
        return str(key)

    def value(self) -> Any:
        self.peek()
        value, self.pos = self._decoder.raw_decode(self.text, self.pos)
        return value

    def end(self) -> None:
        if self.peek():
            raise json.JSONDecodeError("Extra data", self.text, self.pos)


def _parse(text: str, decoder: _Decoder) -> Snapshot:
    """The document's members; its polls decoded into records as they are read."""
    doc: dict[str, Any] = {}
    polls: list[Poll] = []
    stream = _Text(text)
    if stream.peek() != "{":
        decoder.fail("", f"expected an object, got {_show(stream.value())}")
    stream.pos += 1
    if stream.peek() != "}":
        while True:
            key = stream.key()
            if (key == "polls" and stream.peek() == "[" and "format" in doc
                    and "version" in doc and "polls" not in doc):
                decoder.head(doc)  # the format is known before any poll is decoded
                stream.pos += 1
                if stream.peek() == "]":
                    stream.pos += 1
                else:
                    while True:
                        if len(polls) == MAX_SNAPSHOT_POLLS:
                            raise _too_many(decoder.name, "polls", MAX_SNAPSHOT_POLLS)
                        polls.append(decoder.poll(stream.value(), f"polls[{len(polls)}]"))
                        if stream.expect(",]", "',' delimiter") == "]":
                            break
                doc["polls"] = None
            else:
                doc[key] = stream.value()  # a document written in another order, too
            if stream.expect(",}", "',' delimiter") == "}":
                break
    else:
        stream.pos += 1
    stream.end()
    decoder.head(doc)
    if doc.get("polls", []) is not None:  # not streamed: the members came in another order
        if isinstance(doc.get("polls"), list) and len(doc["polls"]) > MAX_SNAPSHOT_POLLS:
            raise _too_many(decoder.name, "polls", MAX_SNAPSHOT_POLLS)
        polls = [decoder.poll(v, w) for w, v in decoder.items(doc, "polls", "")]
    decoder.stat_names(doc)
    return decoder.snapshot(doc, tuple(polls))


def decode(data: bytes | bytearray, name: str) -> Snapshot:
    """Parse a document; ``name`` (the file) starts every error message."""
    data = gunzip(data, name)
    if not data or data.isspace():
        raise SnapshotError(f"{name}: empty file, not a snapshot")
    if count_values(data) > MAX_SNAPSHOT_VALUES:
        raise _too_many(name)
    if data.count(b'"interfaces"') > MAX_SNAPSHOT_POLLS:  # every poll has one: refused early
        raise _too_many(name, "polls", MAX_SNAPSHOT_POLLS)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{name}: not UTF-8 text, not a snapshot") from None
    del data
    try:
        return _parse(text, _Decoder(name))
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{name}: not valid JSON (line {e.lineno}, column {e.colno}: "
                            f"{e.msg}); truncated?") from None
    except ValueError:  # an integer literal longer than int() converts
        raise SnapshotError(f"{name}: holds an integer of more than "
                            f"{sys.get_int_max_str_digits()} digits, not a snapshot") from None
    except RecursionError:
        raise SnapshotError(f"{name}: JSON nested too deeply, not a snapshot") from None


def load(path: str | os.PathLike[str]) -> Snapshot:
    try:
        with open_input(path) as f:  # a FIFO or a device: refused, never waited on
            data = read_bounded(f, str(path))
    except OSError as e:
        raise SnapshotError(f"{path}: cannot read: {describe(e)}") from None
    return decode(data, str(path))


