"""The incident capture consumer: triggers evaluated every poll, storms capped and
merged, everything heavy handed to its writer thread."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from nicwatch import metrics
from nicwatch.consumers import API_MAX_CONCURRENT, ApiRoute, BaseConsumer, History, Services
from nicwatch.consumers.incidents.api import incidents_response
from nicwatch.consumers.incidents.parsing import Capture, Trigger, capture_of
from nicwatch.consumers.incidents.records import (
    MAX_MERGED_LISTED,
    Incident,
    _context,
    _Job,
    _Merged,
    _Onset,
    incident_id,
)
from nicwatch.consumers.incidents.store import clean_leftovers, close_interrupted, prune
from nicwatch.consumers.incidents.triggers import Firing, _DeviceState, _state, evaluate
from nicwatch.consumers.incidents.writer import _Yield, write_incident
from nicwatch.metrics import INCIDENT_FAMILIES
from nicwatch.model import ExtraFamily
from nicwatch.snapshot.atomicfile import describe, make_dirs
from nicwatch.snapshot.files import interface_snapshot
from nicwatch.sources import errno_name, threads
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import TrackedSample

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult

log = structlog.get_logger("nicwatch.incidents")
STOP_SECONDS = 0.5  # at SIGTERM, writes get this long: the daemon stops within a second
RETRY_SECONDS = (5.0, 60.0)  # a failed write is retried after 5 s, doubling up to 60 s


class Incidents(BaseConsumer):
    """The consumer: ``observe`` every poll (poll thread), ``families`` for /metrics, the
    incident list on ``GET /api/v1/incidents``; writes on a thread of its own."""

    def __init__(self, capture: Capture, directory: str | os.PathLike[str] | None,
                 host: HostInfo, history: History | None = None,
                 state_directory: Path | None = None) -> None:
        self.host = host
        self.history = history  # the flight recorder: every window is cut from it
        self.state_directory = state_directory
        self.capture = capture
        self.directory: Path | None = None
        self.totals: Counter[str] = Counter()
        self.merged_totals: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.open_incidents: dict[tuple[str, str], Incident] = {}
        self._merged_into: dict[tuple[str, str], Incident] = {}  # (trigger, device) -> target
        self._newest: dict[str, Incident] = {}  # trigger -> its newest incident
        self._opened: dict[str, deque[float]] = {}  # trigger -> monotonic of recent opens
        self._closed_at: dict[tuple[str, str], float] = {}  # monotonic
        self._prev: dict[str, _DeviceState] = {}
        self._devices: tuple[str, ...] = ()
        self._issued: deque[str] = deque(maxlen=4096)  # ids given out lately
        self._pending: OrderedDict[str, _Job] = OrderedDict()  # id -> its latest write
        self._lock = threading.Condition()
        self._writer: threading.Thread | None = None
        self._stopping = False
        self._busy = False
        self._failing: str | None = None
        self._foreign_logged: tuple[str, ...] = ()
        self._startup: Path | None = None  # a directory to recover at the writer's start
        self._pace = _Yield()  # the writer's; hurried at the stop
        self.written = 0  # incident directories written (tests wait on it)
        self.configure(capture, directory)

    @classmethod
    def open(cls, config: Any, host: HostInfo, services: Services | None = None) -> Incidents:
        services = services or Services()
        capture = capture_of(config)
        return cls(capture, _directory_for(capture, services.state_directory), host,
                   services.history, services.state_directory)

    def reconfigure(self, config: Any) -> None:  # a Config (which imports this module)
        capture = capture_of(config)
        self.configure(capture, _directory_for(capture, self.state_directory))

    def configure(self, capture: Capture, directory: str | os.PathLike[str] | None) -> None:
        """A (re)loaded configuration, validated when it was read; open incidents stay open."""
        self.capture = capture
        new = Path(directory) if directory is not None else None
        for t in capture.triggers:
            self.totals.setdefault(t.name, 0)
            self.merged_totals.setdefault(t.name, 0)
        if capture.triggers and new is None:
            log.warning("capture_directory_unknown", detail="incidents are counted but not "
                        "saved: set [capture] directory or a state file")
        if new is not None and new != self.directory:
            with self._lock:
                self._startup = new  # recovered on the writer thread, never on the poll's
        self.directory = new
        if new is not None and capture.triggers:
            self._start_writer()

    # ------------------------------------------------------------------ per poll

    def observe(self, result: PollResult | None = None, tracked: Sequence[TrackedSample] = (),
                wall: float | None = None, monotonic: float | None = None) -> None:
        """One poll. Stamped with the flight recorder's clock readings of the poll (it
        observes first), so the windows cut from it line up; ``wall``/``monotonic`` for
        callers without one."""
        if wall is None or monotonic is None:
            last = self.history.last_time() if self.history is not None else None
            wall, monotonic = last if last is not None else (time.time(), time.monotonic())
        cap = self.capture
        self._devices = tuple(ts.sample.identity.device for ts in tracked)
        if not cap.triggers and not self.open_incidents:
            self._prev.clear()
            return
        events = any(t.event is not None for t in cap.triggers)
        onset: list[_Onset] = []  # this poll's, made when the first incident opens
        changed: dict[str, Incident] = {}
        for ts in tracked:
            device = ts.sample.identity.device
            state = _state(ts) if events else None
            prev = self._prev.get(device)
            for t in cap.triggers:
                key = (t.name, device)
                target = self.open_incidents.get(key) or self._merged_into.get(key)
                firing = evaluate(t, ts, prev, state, target is not None)
                if firing is None:
                    continue
                if target is not None:
                    self._extend(target, device, t, firing, monotonic, wall)
                elif monotonic - self._closed_at.get(key, -math.inf) >= cap.cooldown:
                    inc = self._admit(t, device, firing, tracked, ts, onset, wall, monotonic)
                    changed[inc.id] = inc  # opened, or a merge: written (coalesced)
            if state is not None:
                self._prev[device] = state
        if events:
            for gone in [d for d in self._prev if d not in set(self._devices)]:
                del self._prev[gone]
        self._forget(monotonic)
        for key, inc in list(self.open_incidents.items()):
            if monotonic - inc.last_fired >= cap.after:
                self._close(key, inc, wall, monotonic, "quiet")
                changed[inc.id] = inc
        for inc in changed.values():
            self._enqueue(inc)

    def _extend(self, inc: Incident, device: str, trigger: Trigger, firing: Firing,
                mono: float, wall: float) -> None:
        inc.last_fired, inc.last_fired_wall = mono, wall
        if device == inc.device and trigger.name == inc.trigger.name:
            inc.firings += 1
            inc.events += firing.events
            if firing.value > inc.peak.value:
                inc.peak = firing
            return
        merged = inc.merged.get(device)
        if merged is not None:
            merged.last, merged.firings = wall, merged.firings + 1
            merged.peak = max(merged.peak, firing.value)

    def _admit(self, trigger: Trigger, device: str, firing: Firing,
               tracked: Sequence[TrackedSample], ts: TrackedSample, onset: list[_Onset],
               wall: float, mono: float) -> Incident:
        """Open an incident, or merge the firing into one when a cap says no. Returns the
        incident to write now: the one opened, or the one the firing was merged into (its
        incident.json lists the interface from the next write on, not only from its close:
        a stop whose budget runs out, or a kill, loses no merge already written)."""
        cap = self.capture
        recent = self._opened.setdefault(trigger.name, deque())
        while recent and recent[0] <= mono - cap.per_trigger_window:
            recent.popleft()
        target: Incident | None = None
        if len(self.open_incidents) >= cap.max_open:
            same = (i for i in self.open_incidents.values() if i.trigger.name == trigger.name)
            target = max(same, key=lambda i: i.onset_monotonic, default=None) or max(
                self.open_incidents.values(), key=lambda i: i.onset_monotonic)
        elif len(recent) >= cap.max_per_trigger:
            target = self._newest[trigger.name]
            if target.end is not None:  # reopened: the trigger's storm goes on in it
                target.end = target.end_reason = None
                self.open_incidents[(target.trigger.name, target.device)] = target
        if target is None:
            return self._open(trigger, device, firing, tracked, ts, onset, wall, mono)
        key = (trigger.name, device)
        self._merged_into[key] = target
        self.merged_totals[trigger.name] += 1
        target.last_fired, target.last_fired_wall = mono, wall
        if device not in target.merged and len(target.merged) < MAX_MERGED_LISTED:
            target.merged[device] = _Merged(trigger.name, wall, wall, 1, firing.value)
        elif device not in target.merged:
            target.merged_more += 1
        if self.merged_totals[trigger.name] == 1 or self.merged_totals[trigger.name] % 1000 == 0:
            log.warning("incidents_merged", trigger=trigger.name, into=target.id,
                        merged=self.merged_totals[trigger.name],
                        detail=f"over the capture caps (max_open {cap.max_open}, "
                               f"max_per_trigger {cap.max_per_trigger} per "
                               f"{cap.per_trigger_window:g}s)")
        return target

    def _open(self, trigger: Trigger, device: str, firing: Firing,
              tracked: Sequence[TrackedSample], ts: TrackedSample, onset: list[_Onset],
              wall: float, mono: float) -> Incident:
        if not onset:  # one per poll, shared: the samples are immutable, nothing is copied
            onset.append(_Onset(wall, mono, tuple(t.sample for t in tracked)))
        inc_id = self._unique(incident_id(wall, device, trigger.name))
        inc = Incident(inc_id, trigger, device, wall, mono, firing, onset[0],
                       interface_snapshot(ts.sample, raw=True), mono, wall, firing,
                       events=firing.events)
        self.open_incidents[(trigger.name, device)] = inc
        self._newest[trigger.name] = inc
        self._opened[trigger.name].append(mono)
        self.totals[trigger.name] += 1
        log.warning("incident_opened", id=inc_id, device=device, trigger=trigger.name,
                    value=firing.value, labels=dict(firing.labels))
        return inc

    def _unique(self, inc_id: str) -> str:
        taken = {i.id for i in self.open_incidents.values()} | set(self._issued)
        candidate, n = inc_id, 1
        while candidate in taken or (self.directory is not None
                                     and os.path.lexists(self.directory / candidate)):
            n += 1
            candidate = f"{inc_id}-{n}"
        self._issued.append(candidate)
        return candidate

    def _close(self, key: tuple[str, str], inc: Incident, wall: float, mono: float,
               reason: str) -> None:
        inc.end, inc.end_reason = wall, reason
        del self.open_incidents[key]
        self._closed_at[key] = mono
        for k in [k for k, v in self._merged_into.items() if v is inc]:
            del self._merged_into[k]
            self._closed_at[k] = mono
        log.info("incident_closed", id=inc.id, device=inc.device, trigger=inc.trigger.name,
                 peak=inc.peak.value, seconds=round(wall - inc.onset, 3), reason=reason,
                 merged=len(inc.merged) + inc.merged_more)

    def _forget(self, mono: float) -> None:
        """Cooldowns that ran out and triggers no longer configured (bounded state)."""
        cap = self.capture
        for key in [k for k, t in self._closed_at.items() if mono - t >= cap.cooldown]:
            del self._closed_at[key]
        names = {t.name for t in cap.triggers} | {i.trigger.name
                                                  for i in self.open_incidents.values()}
        for table in (self._opened, self._newest):
            for name in [n for n in table if n not in names]:
                del table[name]

    def _enqueue(self, inc: Incident) -> None:
        """Hand the incident's state to the writer (the newest state of an incident replaces
        one not yet written)."""
        if self.directory is None:
            return
        cap = self.capture
        meta = inc.as_json(self.host, cap.before, cap.after)
        until = inc.end if inc.end is not None else inc.last_fired_wall
        job = _Job(meta, inc.onset_poll, inc.onset_interface, inc.devices(),
                   inc.onset - cap.before, until + 1e-6, _context(inc, meta), self.directory,
                   cap.max_bytes)
        with self._lock:
            self._pending.pop(inc.id, None)
            self._pending[inc.id] = job
            limit = 4 * cap.max_open
            while len(self._pending) > limit:  # the writer is far behind (a stuck disk)
                dropped, _ = self._pending.popitem(last=False)
                self._failed("queue_full", f"{dropped}: the incident writer is {limit} "
                                           "incidents behind; this write is dropped")
            self._lock.notify_all()
        self._start_writer()

    # ------------------------------------------------------------------ writer thread

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="incident-writer",
                                            daemon=True)
            threads.start(self._writer)  # with the daemon's signals blocked

    def _next(self) -> _Job | Path | None:
        with self._lock:
            while True:
                if self._startup is not None:
                    startup, self._startup = self._startup, None
                    self._busy = True
                    return startup
                now = time.monotonic()
                due = [j for j in self._pending.values() if j.retry_at <= now]
                if due:
                    job = due[0]
                    del self._pending[job.meta["id"]]
                    self._busy = True
                    return job
                if self._stopping:
                    return None
                wait = min((j.retry_at - now for j in self._pending.values()), default=None)
                self._lock.wait(wait)

    def _write_loop(self) -> None:
        pace = self._pace
        while True:
            pace.pause()
            item = self._next()
            if item is None:
                return
            try:
                if isinstance(item, Path):
                    self._prepare(item)
                else:
                    self._write(item, pace)
            except Exception as e:  # a bug must not end the writer
                log.error("incident_writer_failed", error=f"{type(e).__name__}: {e}")
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _prepare(self, directory: Path) -> None:
        """The incident directory at start: created (0700) so that `nicwatch incidents`
        finds it empty, not missing, before the first incident; what a crash left in it
        tidied."""
        try:
            make_dirs(directory)
        except OSError as e:
            self._failed(errno_name(e.errno) if e.errno else "mkdir_failed",
                         f"{directory}: cannot create: {describe(e)}; tried again at the "
                         "first incident")
            return
        clean_leftovers(directory)
        close_interrupted(directory, self.host)

    def _write(self, job: _Job, pace: _Yield) -> None:
        directory, inc_id = job.directory, job.meta["id"]
        try:
            write_incident(job, self.host, self.history, pace)
            removed, blocking = prune(directory, job.max_bytes, keep=inc_id)
        except Exception as e:
            cause = e if isinstance(e, OSError) else (
                e.__context__ if isinstance(e.__context__, OSError) else None)
            reason = errno_name(cause.errno) if cause is not None and cause.errno else (
                type(e).__name__ if isinstance(e, OSError) else "write_failed")
            self._failed(reason, f"{directory / inc_id}: cannot write: "
                         f"{describe(e) if isinstance(e, OSError) else e}; nothing partial "
                         "was left; retried")
            delay = min(RETRY_SECONDS[1], RETRY_SECONDS[0] * 2 ** job.attempts)
            retry = dataclasses.replace(job, retry_at=time.monotonic() + delay,
                                        attempts=job.attempts + 1)
            with self._lock:
                self._pending.setdefault(inc_id, retry)  # a newer state wins over the retry
            return
        if removed:
            log.info("incidents_removed", ids=removed[:20], count=len(removed),
                     max_bytes=job.max_bytes)
        names = tuple(n for n, _ in blocking)
        if names and names != self._foreign_logged:
            log.warning("incidents_directory_over_budget", directory=str(directory),
                        max_bytes=job.max_bytes, foreign=list(names[:10]),
                        foreign_bytes=sum(b for _, b in blocking),
                        detail="entries nicwatch did not write keep the directory over "
                               "max_bytes; they are never removed")
        self._foreign_logged = names
        if self._failing is not None:
            log.info("incident_write_recovered", directory=str(directory))
        self._failing = None
        with self._lock:
            self.written += 1

    def _failed(self, reason: str, message: str) -> None:
        self.failures[reason] += 1
        if self._stopping:
            # A write cut short by the stop (its directory may be gone: the demo removes
            # its own) is not logged after the daemon's "stopped": the next start closes
            # the incident as interrupted from what was saved.
            return
        if self._failing != reason:
            log.error("incident_write_failed", reason=reason, error=message)
        self._failing = reason

    def pending(self) -> int:
        with self._lock:
            return len(self._pending) + (1 if self._busy or self._recovery_due() else 0)

    def _recovery_due(self) -> bool:
        """A directory's recovery waits for the writer, which starts with the first trigger:
        without one it is nothing to wait for (every stop took its whole budget that way)."""
        return self._startup is not None and self._writer is not None

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every write that is due is done (tests); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._busy or self._recovery_due() or any(
                    j.retry_at <= time.monotonic() for j in self._pending.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.05))
        return True

    def close(self, timeout: float = STOP_SECONDS) -> None:
        """The daemon is stopping: open incidents are closed (``stopped``) and the writes
        that fit in ``timeout`` are made; the rest is closed as interrupted at the next
        start, from what was saved."""
        wall, mono = time.time(), time.monotonic()
        for key, inc in list(self.open_incidents.items()):
            self._close(key, inc, wall, mono, "stopped")
            self._enqueue(inc)
        self._pace.hurry()
        self.flush(timeout)
        with self._lock:
            self._stopping = True
            self._lock.notify_all()

    # ------------------------------------------------------------------ exposition

    def families(self) -> list[ExtraFamily]:
        total, merged, open_, failures, pending = INCIDENT_FAMILIES
        open_by_device = Counter(inc.device for inc in self.open_incidents.values())
        devices = dict.fromkeys((*self._devices, *open_by_device)) if self.capture.triggers \
            else dict.fromkeys(open_by_device)
        return [
            metrics.extra(total, tuple(((("trigger", n),), float(v))
                                       for n, v in sorted(self.totals.items()))),
            metrics.extra(merged, tuple(((("trigger", n),), float(v))
                                        for n, v in sorted(self.merged_totals.items()))),
            metrics.extra(open_, tuple(((("device", d),), float(open_by_device[d]))
                                       for d in devices)),
            metrics.extra(failures, tuple(((("reason", r),), float(v))
                                          for r, v in sorted(self.failures.items()))),
            metrics.extra(pending, (((), float(self.pending())),)
                          if self.directory is not None and self.capture.triggers else ()),
        ]

    def routes(self) -> Sequence[ApiRoute]:
        return (ApiRoute("GET", "/api/v1/incidents", self._respond, API_MAX_CONCURRENT),)

    def _respond(self, query: Mapping[str, Any], body: bytes = b"") -> tuple[int, str, bytes]:
        return incidents_response(lambda: self.directory, query, body)


def _directory_for(capture: Capture, state_directory: Path | None) -> Path | None:
    """``[capture] directory``, else "incidents" in the state directory (none without)."""
    if capture.directory is not None:
        return Path(capture.directory)
    return state_directory / "incidents" if state_directory is not None else None
