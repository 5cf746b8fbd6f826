"""Writing one incident directory, complete each time (built beside it and renamed into
place): the onset snapshot, the history cut from the flight recorder, the reports."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from nicwatch.consumers import History
from nicwatch.consumers.incidents.records import _Job
from nicwatch.consumers.incidents.store import (
    FILES,
    INCIDENT_FILE,
    MARKER,
    MARKER_TEXT,
    _file_bytes,
)
from nicwatch.snapshot import report
from nicwatch.snapshot.atomicfile import FILE_MODE, AtomicFile, make_dirs
from nicwatch.snapshot.files import (
    InterfaceSnapshot,
    Poll,
    Snapshot,
    build,
    diff,
    diff_interfaces,
    encode,
    encode_stream,
    poll_of,
    when,
)
from nicwatch.sources.host import HostInfo

# The writer sleeps this many times as long as it just worked (between the polls of a
# history it encodes, between incidents), so a poll running beside it keeps most of the
# interpreter: two busy threads share it half and half, with the writer busy 1/(1 + 3) of
# the time the poll thread keeps about 7/8 of it (benchmarks/storm.py has the measurement).
WRITER_YIELD = 3.0


def _timeline(polls: Iterable[Poll], device: str) -> report.Timeline:
    """Per-poll rates of ``device`` from consecutive polls of a history (the diff's own
    rules: no rate across a reset, a changed statistic set or a replaced interface)."""
    timeline = report.Timeline()
    prev: InterfaceSnapshot | None = None
    for poll in polls:
        iface = next((i for i in poll.interfaces if i.device == device), None)
        if iface is None:
            continue
        if prev is None:
            timeline.add_rates(iface.monotonic, device, {})
        else:
            rates: dict[str, float | None] = {}
            rows = [r for r in diff_interfaces(prev, iface, raw=False).rows
                    if r.kind == "counter"]
            for row in rows:
                if row.name in rates and rates[row.name] is None:
                    continue
                before = rates.get(row.name, 0.0)  # not None: skipped above
                rates[row.name] = None if row.rate is None or before is None else (
                    before + row.rate)
            timeline.add_rates(iface.monotonic, device, rates,
                               {(r.name, r.labels): r.rate for r in rows if r.labels})
        prev = iface
    return timeline


def _marks(meta: Mapping[str, Any], start: float | None) -> tuple[tuple[str, float], ...]:
    """The incident's onset and close on the report's charts, in seconds since the first
    poll of its history (wall clock: both come from the same host's clock)."""
    if start is None:
        return ()
    moments = (("onset", meta.get("onset")), ("closed", meta.get("end")))
    return tuple((name, t - start) for name, t in moments if isinstance(t, int | float))


def _only(snapshot: Snapshot, device: str, poll: Poll) -> Snapshot:
    return dataclasses.replace(snapshot, polls=(Poll(poll.time, poll.monotonic, tuple(
        i for i in poll.interfaces if i.device == device)),))


class _Yield:
    """Gives the interpreter back to the poll thread: ``pause()`` sleeps WRITER_YIELD times
    the CPU time this thread used since the last pause."""

    def __init__(self) -> None:
        self._since = time.thread_time()
        self._hurry = threading.Event()

    def hurry(self) -> None:
        """The daemon is stopping: no poll runs beside the writer any more, so it stops
        yielding (a pause under way ends now) and the stop's budget goes to writing."""
        self._hurry.set()

    def pause(self) -> None:
        worked = time.thread_time() - self._since
        if worked > 0.001 and not self._hurry.is_set():
            self._hurry.wait(min(1.0, worked * WRITER_YIELD))
        self._since = time.thread_time()


class _Tee:
    """The polls of a history as they stream to its file: keeps the first and last poll
    of the incident's interface and the polls themselves for the timeline (only that
    interface's part of each, small); pauses between polls (_Yield)."""

    def __init__(self, polls: Iterator[Poll], device: str, pace: _Yield) -> None:
        self._polls = polls
        self.device = device
        self.kept: list[Poll] = []
        self._pace = pace

    def __iter__(self) -> Iterator[Poll]:
        for poll in self._polls:
            mine = tuple(i for i in poll.interfaces if i.device == self.device)
            if mine:
                self.kept.append(Poll(poll.time, poll.monotonic, mine))
            yield poll
            self._pace.pause()


def write_incident(job: _Job, host: HostInfo, history: History | None,
                   pace: _Yield | None = None) -> int:
    """Write one incident directory complete or not at all; returns its bytes."""
    pace = pace or _Yield()
    directory, inc_id, device = job.directory, job.meta["id"], job.meta["device"]
    make_dirs(directory)
    tmp = Path(tempfile.mkdtemp(prefix=f".{inc_id}.", suffix=".tmp", dir=directory))
    try:
        # first: a half-built directory is ours too
        with os.fdopen(os.open(tmp / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                               FILE_MODE), "wb") as f:
            f.write(MARKER_TEXT)
        _write_onset(job, host, tmp / "onset.json.gz")
        pace.pause()
        found = history.records(job.since, True, job.until, job.devices) if history else None
        kept: list[Poll] = []
        if found is not None:
            head = dataclasses.replace(found[0], label=f"incident {inc_id} history")
            tee = _Tee(found[1], device, pace)
            with AtomicFile(tmp / "history.json.gz", compress=True) as out:
                for piece in encode_stream(head, tee):
                    out.write(piece)
            kept = tee.kept
        base = build(host, (), None, True, {})
        if kept:
            first, last = _only(base, device, kept[0]), _only(base, device, kept[-1])
        else:
            only = Poll(job.onset.wall, job.onset.monotonic, (job.onset_interface,))
            first = last = dataclasses.replace(base, polls=(only,))
        rep = report.make_report(first, last, None, diff(first, last), _timeline(kept, device),
                                 FILES, f"nicwatch incident {inc_id}", job.context,
                                 _marks(job.meta, kept[0].time if kept else None))
        meta = {**job.meta, "history_from": kept[0].time if kept else None}
        for name, data in (("report.txt", report.text_report(rep).encode()),
                           ("report.json", json.dumps({**report.json_report(rep),
                                                       "incident": meta}, indent=1).encode()),
                           ("report.html", report.html_report(rep).encode()),
                           (INCIDENT_FILE, json.dumps(meta, indent=1).encode())):  # last
            with AtomicFile(tmp / name) as f:
                f.write(data)
        size = sum(_file_bytes(p.lstat()) for p in tmp.iterdir())
        final = directory / inc_id
        if os.path.lexists(final):  # an update: swap the old version out, the new one in
            old = directory / f".{inc_id}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
        if job.onset.file is None or not job.onset.file.exists():
            job.onset.file = final / "onset.json.gz"
        return size
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_onset(job: _Job, host: HostInfo, path: Path) -> None:
    """The onset snapshot: hard-linked from the first incident of the same poll that was
    written, else encoded once (and the poll's samples let go) and written."""
    onset = job.onset
    if onset.file is not None:
        try:
            os.link(onset.file, path)
            return
        except OSError:
            pass  # pruned, another file system: written again from the bytes
    if onset.data is None:  # kept compressed: 2,000 veths are ~30 MB of JSON, ~1 MB of gzip
        samples = onset.samples or ()
        onset.data = gzip.compress(encode(build(
            host, [poll_of(samples, onset.wall, onset.monotonic, raw=True)],
            f"incident onset {when(onset.wall)}", True, {"incident": {"onset": onset.wall}})),
            compresslevel=6, mtime=0)
        onset.samples = None
    with AtomicFile(path) as f:
        f.write(onset.data)
