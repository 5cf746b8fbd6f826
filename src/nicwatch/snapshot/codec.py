"""Snapshot documents written: JSON (gzip above COMPRESS_ABOVE, or when the name ends in .gz),
raw statistic names stored once per distinct list, polls streamed one at a time; every file
written atomically (snapshot.atomicfile)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from nicwatch.snapshot import atomicfile
from nicwatch.snapshot.atomicfile import AtomicFile
from nicwatch.snapshot.records import (
    FORMAT,
    IDENTITY_FIELDS,
    VERSION,
    InterfaceSnapshot,
    Poll,
    Snapshot,
    SnapshotError,
)
from nicwatch.snapshot.statekey import jsonable

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
        "identity": {f: getattr(ident, f) for f in IDENTITY_FIELDS},
        "counters": [{"metric": k.metric, "labels": dict(k.labels), "raw": cv.raw,
                      "source": cv.source, "width": cv.width, "scale": cv.scale,
                      **({"saturates": True} if cv.saturates else {})}
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
            "host": jsonable(snapshot.host), "meta": dict(snapshot.meta)}


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


def write_atomic(path: str | os.PathLike[str], data: bytes | bytearray,
                 compress: bool = False) -> None:
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


