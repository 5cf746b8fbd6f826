"""Incident capture: when a health counter jumps or the link, PCIe or identity of a NIC
changes, the daemon saves the evidence itself (docs/incidents.md).

Triggers come from the ``[capture]`` section of the config file and are evaluated every
poll on what the tracker computed (its own poll-to-poll rates, exported or not). A trigger
that fires on an interface opens an incident; firing again extends it; it closes ``after``
seconds after it last fired, and the same trigger on the same interface opens no new one
for ``cooldown`` seconds after that.

Each incident is one directory, written when it opens and rewritten when it closes, each
time complete (built beside it and renamed into place)::

    incident.json      what fired: trigger, interface, value that crossed, onset, peak, end
    onset.json.gz      the snapshot at onset: every raw statistic, rings, link, PCIe,
                       identity, host provenance (the snapshot format)
    history.json.gz    the daemon's polls from ``before`` the onset to ``after`` the end
    report.txt/.html/.json   the report `nicwatch record` writes, for this interface

Writing happens on a background thread fed by a bounded queue, so the poll loop never waits
for a disk; a failed write (a full disk) is logged once until a write succeeds and counted.
The directory holds at most ``max_bytes``: the oldest incidents are removed first.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import queue
import re
import shutil
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from nicwatch.metrics import FAMILIES, Family
from nicwatch.model import ExtraFamily
from nicwatch.snapshot import report
from nicwatch.snapshot.atomicfile import AtomicFile, describe
from nicwatch.snapshot.format import Poll, Snapshot, build, diff, encode, poll_of, when
from nicwatch.sources import errno_name
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import INTERFACE_REPLACED, STAT_SET_CHANGED, TrackedSample
from nicwatch.values import (
    ConfigError,
    bounded,
    parse_duration,
    parse_regex,
    parse_size,
    show_bytes,
)

log = structlog.get_logger("nicwatch.incidents")

SECTION = "capture"
EVENTS = ("pcie_degraded", "link_down", "identity_changed", "stat_set_changed")
STATE_EVENTS = ("pcie_degraded", "link_down")  # fire while the state lasts, once entered
DEFAULT_BEFORE = 120.0
DEFAULT_AFTER = 60.0
DEFAULT_MAX_BYTES = 256 << 20
DEFAULT_COOLDOWN = 0.0
QUEUE_SIZE = 16  # incident writes waiting for the writer thread at most
INCIDENT_FILE = "incident.json"
MAX_INCIDENT_FILE = 1 << 20  # incident.json is a few hundred bytes; reading one stops here
FILES = ("incident.json", "onset.json.gz", "history.json.gz", "report.txt", "report.json",
         "report.html")

INCIDENTS_TOTAL = Family("nic_incidents_total", "counter",
                         "Incidents opened by each capture trigger of the [capture] config "
                         "section since the daemon started (see `nicwatch incidents`).",
                         ("trigger",))
INCIDENT_OPEN = Family("nicwatch_incident_open", "gauge",
                       "Incidents open on this interface: a capture trigger fired within its "
                       "`after` window and the evidence is still being recorded.", ("device",))
WRITE_FAILURES = Family("nicwatch_incident_write_failures_total", "counter",
                        "Incident directories that could not be written, by reason (an errno "
                        "name such as ENOSPC, or queue_full when the writer fell behind); "
                        "nothing partial is left.", ("reason",))
FAMILIES_DECLARED = (INCIDENTS_TOTAL, INCIDENT_OPEN, WRITE_FAILURES)


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class Trigger:
    name: str  # the trigger label of nic_incidents_total
    family: str | None = None  # a canonical counter family ...
    rate_above: float | None = None  # ... whose rate (per second, base unit) exceeds this
    labels: tuple[tuple[str, str], ...] = ()  # only series with these labels
    device: str | None = None  # only interfaces whose name matches (regex)
    event: str | None = None  # or one of EVENTS

    def matches_device(self, device: str) -> bool:
        return self.device is None or re.fullmatch(self.device, device) is not None

    def describe(self) -> str:
        if self.event:
            what = f"event {self.event}"
        else:
            unit = FAMILIES[self.family].unit if self.family is not None else ""
            what = f"{self.family}{_labels(self.labels)} above {report.rate(self.rate_above, unit)}"
        return what + (f" on devices matching {self.device!r}" if self.device else "")

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "rate_above": self.rate_above,
                "labels": dict(self.labels), "device": self.device, "event": self.event}


@dataclass(frozen=True, slots=True)
class Capture:
    directory: str | None = None  # None: "incidents" beside the state file
    before: float = DEFAULT_BEFORE
    after: float = DEFAULT_AFTER
    max_bytes: int = DEFAULT_MAX_BYTES
    cooldown: float = DEFAULT_COOLDOWN
    triggers: tuple[Trigger, ...] = ()


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    labels = tuple(labels)
    return "{" + ",".join(f"{k}={v}" for k, v in labels) + "}" if labels else ""


def _fail(path: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: key {key!r}: {message}")


_TRIGGER_KEYS = ("name", "family", "rate_above", "labels", "device", "event")
# Bounds, like every setting's (docs/failure-behaviour.md): a day of history around an
# onset at most (the history holds a week), a directory from 1 MiB to 1 TiB.
_SETTINGS = {"directory": None, "before": bounded(parse_duration, 1, 86400),
             "after": bounded(parse_duration, 0.1, 86400),
             "max_bytes": bounded(parse_size, 1 << 20, 1 << 40, show_bytes),
             "cooldown": bounded(lambda v: parse_duration(v, allow_zero=True), 0, 7 * 86400),
             "trigger": None}


def _trigger(table: Mapping[str, Any], key: str, path: str) -> Trigger:
    unknown = set(table) - set(_TRIGGER_KEYS)
    if unknown:
        raise _fail(path, f"{key}.{sorted(unknown)[0]}",
                    f"unknown key (known: {', '.join(_TRIGGER_KEYS)})")
    family, event = table.get("family"), table.get("event")
    if (family is None) == (event is None):
        raise _fail(path, key, "a trigger needs either family (with rate_above) or event")
    device = table.get("device")
    if device is not None:
        try:
            device = parse_regex(device)
        except ValueError as e:
            raise _fail(path, f"{key}.device", str(e)) from None
    if event is not None:
        if event not in EVENTS:
            raise _fail(path, f"{key}.event", f"unknown event {event!r} (known: "
                                              f"{', '.join(EVENTS)})")
        for extra in ("rate_above", "labels"):
            if extra in table:
                raise _fail(path, f"{key}.{extra}", "only for a family trigger")
        return Trigger(_name(table, key, path, event), event=event, device=device)
    spec = FAMILIES.get(family) if isinstance(family, str) else None
    if spec is None or spec.type != "counter":
        raise _fail(path, f"{key}.family", f"{family!r} is not a canonical counter family "
                                           "(`nicwatch normalize --list` shows them)")
    rate = table.get("rate_above")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) \
            or rate < 0:
        raise _fail(path, f"{key}.rate_above", "expected a number of "
                    f"{spec.unit or 'events'} per second, 0 or more, got {rate!r}")
    labels = table.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(v, (str, int)) and not
                                               isinstance(v, bool) for v in labels.values()):
        raise _fail(path, f"{key}.labels", "expected a table of label values such as "
                                           "{ priority = \"3\" }")
    for label in labels:
        if label not in spec.labels:
            raise _fail(path, f"{key}.labels", f"{family} has no label {label!r} (its labels: "
                                               f"{', '.join(spec.labels) or 'none'})")
    pairs = tuple(sorted((k, str(v)) for k, v in labels.items()))
    return Trigger(_name(table, key, path, spec.name + _labels(pairs)), spec.name, float(rate),
                   pairs, device)


def _name(table: Mapping[str, Any], key: str, path: str, default: str) -> str:
    name = table.get("name", default)
    if not isinstance(name, str) or not name or len(name) > 200 or not name.isprintable():
        raise _fail(path, f"{key}.name", f"expected a short printable name, got {name!r}")
    return name


def parse_capture(data: Mapping[str, Any], path: str) -> Capture:
    """The ``[capture]`` section of a parsed TOML document (other keys are left to
    nicwatch.config). Raises ConfigError naming ``path`` and the key."""
    section = data.get(SECTION, {})
    if not isinstance(section, dict):
        raise _fail(path, SECTION, "expected a table ([capture])")
    values: dict[str, Any] = {}
    for key, raw in section.items():
        if key not in _SETTINGS:
            raise _fail(path, f"{SECTION}.{key}", f"unknown key (known: {', '.join(_SETTINGS)})")
        if key == "trigger":
            continue
        if key == "directory":
            if not isinstance(raw, str) or not raw:
                raise _fail(path, f"{SECTION}.{key}", f"expected a directory, got {raw!r}")
            values[key] = raw
            continue
        parse = _SETTINGS[key]
        if parse is None:  # read above
            continue
        try:
            values[key] = parse(raw)
        except ValueError as e:
            raise _fail(path, f"{SECTION}.{key}", str(e)) from None
    tables = section.get("trigger", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise _fail(path, f"{SECTION}.trigger", "expected an array of tables "
                                                "([[capture.trigger]])")
    triggers = tuple(_trigger(t, f"{SECTION}.trigger[{i}]", path)
                     for i, t in enumerate(tables, 1))
    names = Counter(t.name for t in triggers)
    if dup := [n for n, c in names.items() if c > 1]:
        raise _fail(path, f"{SECTION}.trigger", f"two triggers named {dup[0]!r}; give one a "
                                                "name = \"...\"")
    return Capture(triggers=triggers, **values)


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class Firing:
    value: float  # the rate that crossed (per second, base unit), or 1 for an event
    labels: tuple[tuple[str, str], ...]  # of the series that crossed, or the event's detail


@dataclass(slots=True)
class _DeviceState:
    link_down: bool | None
    pcie_degraded: tuple[str, ...] | None
    resets: Mapping[str, int]
    identity: tuple[str | None, ...]


def _state(ts: TrackedSample) -> _DeviceState:
    s = ts.sample
    link = None
    degraded: list[str] | None = None
    for key, v in s.gauges.items():
        if key.metric == "nic_link_up":
            link = v == 0
        elif key.metric == "nic_pcie_degraded":
            degraded = degraded or []
            if v == 1:
                degraded.append(dict(key.labels).get("reason", ""))
    ident = s.identity
    return _DeviceState(link, tuple(degraded) if degraded is not None else None,
                        dict(ts.resets), (ident.pci_address, ident.perm_address, ident.driver,
                                          ident.firmware_version))


def evaluate(trigger: Trigger, ts: TrackedSample, prev: _DeviceState | None,
             now: _DeviceState, is_open: bool) -> Firing | None:
    """Whether ``trigger`` fires on this interface at this poll, and with what value."""
    if not trigger.matches_device(ts.sample.identity.device):
        return None
    if trigger.event is None:
        best: Firing | None = None
        wanted = set(trigger.labels)
        # a family trigger always has its threshold (parse_trigger)
        limit = math.inf if trigger.rate_above is None else trigger.rate_above
        for key, t in ts.counters.items():
            if key.metric != trigger.family or t.rate is None or t.rate <= limit:
                continue
            if wanted <= set(key.labels) and (best is None or t.rate > best.value):
                best = Firing(t.rate, key.labels)
        return best
    if trigger.event == "link_down":
        entered = prev is not None and prev.link_down is False
        return Firing(1.0, ()) if now.link_down and (entered or is_open) else None
    if trigger.event == "pcie_degraded":
        entered = prev is not None and prev.pcie_degraded == ()
        if now.pcie_degraded and (entered or is_open):
            return Firing(1.0, (("reason", ",".join(sorted(now.pcie_degraded))),))
        return None
    if prev is None:
        return None
    if trigger.event == "stat_set_changed":
        moved = now.resets.get(STAT_SET_CHANGED, 0) > prev.resets.get(STAT_SET_CHANGED, 0)
        return Firing(1.0, ()) if moved else None
    # identity_changed: the interface was replaced, or its PCI address, permanent MAC,
    # driver or firmware changed (an unknown value is no evidence)
    replaced = now.resets.get(INTERFACE_REPLACED, 0) > prev.resets.get(INTERFACE_REPLACED, 0)
    changed = [n for n, a, b in zip(("pci_address", "perm_address", "driver", "firmware"),
                                    prev.identity, now.identity, strict=False)
               if a is not None and b is not None and a != b]
    if replaced or changed:
        return Firing(1.0, (("changed", ",".join(changed or ["interface_replaced"])),))
    return None


# --------------------------------------------------------------------------- incidents


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._")[:80] or "x"


def incident_id(onset: float, device: str, trigger: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(onset)) + f".{int(onset * 1000) % 1000:03d}Z"
    return f"{stamp}-{_slug(device)}-{_slug(trigger)}"


@dataclass(slots=True)
class Incident:
    id: str
    trigger: Trigger
    device: str
    onset: float  # wall clock of the poll that fired first
    onset_monotonic: float
    first: Firing
    onset_snapshot: Snapshot
    timeline: report.Timeline
    last_fired: float  # monotonic
    last_fired_wall: float
    peak: Firing
    firings: int = 1
    end: float | None = None  # wall clock when closed

    def as_json(self, host: HostInfo, before: float, after: float) -> dict[str, Any]:
        unit = FAMILIES[self.trigger.family].unit if self.trigger.family else ""
        return {
            "id": self.id, "device": self.device, "trigger": self.trigger.as_json(),
            "onset": self.onset, "value": self.first.value, "labels": dict(self.first.labels),
            "unit": unit, "peak": self.peak.value, "peak_labels": dict(self.peak.labels),
            "last_fired": self.last_fired_wall, "end": self.end, "open": self.end is None,
            "firings": self.firings, "before": before, "after": after,
            "host": {"hostname": host.hostname, "boot_id": host.boot_id,
                     "boot_time": host.boot_time, "kernel_release": host.kernel_release},
            "files": list(FILES),
        }


@dataclass(frozen=True, slots=True)
class _Job:
    meta: dict[str, Any]
    onset: Snapshot
    history: Snapshot | None  # polls from `before` the onset up to now
    timeline: report.Timeline
    context: tuple[tuple[str, str], ...]


def _value(v: float, unit: str, event: bool) -> str:
    return "fired" if event else report.rate(v, unit)


def _context(inc: Incident, meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    t = inc.trigger
    unit = meta["unit"]
    event = t.event is not None
    rows = [("incident", inc.id), ("state", "open" if inc.end is None else "closed"),
            ("interface", inc.device), ("trigger", f"{t.name}: {t.describe()}"),
            ("onset", when(inc.onset)),
            ("crossed", f"{_value(inc.first.value, unit, event)}"
                        f"{' on ' + _labels(inc.first.labels) if inc.first.labels else ''}"),
            ("peak", f"{_value(inc.peak.value, unit, event)}"
                     f"{' on ' + _labels(inc.peak.labels) if inc.peak.labels else ''}"),
            ("last fired", when(inc.last_fired_wall))]
    if inc.end is not None:
        rows.append(("closed", when(inc.end)))
    return tuple(rows)


def _only(snapshot: Snapshot, device: str, poll: Poll) -> Snapshot:
    return dataclasses.replace(snapshot, polls=(Poll(poll.time, poll.monotonic, tuple(
        i for i in poll.interfaces if i.device == device)),))


def write_incident(directory: Path, job: _Job) -> int:
    """Write one incident directory complete or not at all; returns its bytes."""
    inc_id, device = job.meta["id"], job.meta["device"]
    polls = job.history.polls if job.history and job.history.polls else job.onset.polls
    source = job.history if job.history and job.history.polls else job.onset
    first, last = _only(source, device, polls[0]), _only(source, device, polls[-1])
    rep = report.make_report(first, last, None, diff(first, last), job.timeline, FILES,
                             f"nicwatch incident {inc_id}", job.context)
    files = {
        "onset.json.gz": (encode(job.onset), True),
        "history.json.gz": (encode(job.history) if job.history else b"", True),
        "report.txt": (report.text_report(rep).encode(), False),
        "report.json": (json.dumps({**report.json_report(rep), "incident": job.meta},
                                   indent=1).encode(), False),
        "report.html": (report.html_report(rep).encode(), False),
        INCIDENT_FILE: (json.dumps(job.meta, indent=1).encode(), False),  # last: complete
    }
    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{inc_id}.", suffix=".tmp", dir=directory))
    try:
        for name, (data, gz) in files.items():
            if name == "history.json.gz" and not job.history:
                continue
            with AtomicFile(tmp / name, compress=gz) as f:
                f.write(data)
        size = sum(p.stat().st_size for p in tmp.iterdir())
        final = directory / inc_id
        if final.exists():  # an update: swap the old version out, the new one in
            old = directory / f".{inc_id}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
        return size
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _dir_bytes(path: Path) -> int:
    try:
        return sum(p.stat().st_size for p in path.iterdir())
    except OSError:
        return 0


def listed(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete incident in ``directory`` (incident.json parsed), oldest first; a
    directory that does not exist has none."""
    out = []
    try:
        entries = sorted(Path(directory).iterdir())
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            with open(entry / INCIDENT_FILE, "rb") as f:
                meta = json.loads(f.read(MAX_INCIDENT_FILE))
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("id") == entry.name:
            out.append(meta)
    return out


def prune(directory: Path, max_bytes: int, keep: str | None = None) -> list[str]:
    """Remove the oldest incidents until the directory holds at most ``max_bytes``; the
    incident ``keep`` (just written) goes last. Returns the removed ids."""
    entries = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    sizes = {p: _dir_bytes(p) for p in entries}
    total = sum(sizes.values())
    order = [p for p in entries if p.name != keep] + [p for p in entries if p.name == keep]
    removed = []
    for p in order:
        if total <= max_bytes:
            break
        shutil.rmtree(p, ignore_errors=True)
        total -= sizes[p]
        removed.append(p.name)
    return removed


def clean_leftovers(directory: Path) -> None:
    """What a crash mid-write leaves: temporary directories (removed) and an old version
    swapped out but not yet replaced (put back)."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return
    for p in entries:
        if p.name.startswith(".") and p.name.endswith(".old"):
            final = directory / p.name[1:-4]
            if not final.exists():
                os.rename(p, final)
            else:
                shutil.rmtree(p, ignore_errors=True)
        elif p.name.startswith(".") and p.name.endswith(".tmp"):
            shutil.rmtree(p, ignore_errors=True)


class Incidents:
    """The consumer: ``observe`` every poll (poll thread), ``families`` for /metrics."""

    def __init__(self, capture: Capture, directory: str | os.PathLike[str] | None,
                 host: HostInfo, history: Any = None) -> None:
        self.host = host
        self.history = history  # consumers.history.Recorder: polls from before the onset
        self.capture = capture
        self.directory = Path(directory) if directory is not None else None
        self.totals: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.open: dict[tuple[str, str], Incident] = {}
        self._closed_at: dict[tuple[str, str], float] = {}  # monotonic
        self._prev: dict[str, _DeviceState] = {}
        # (monotonic, rates)
        self._recent: deque[tuple[float, dict[str, dict[str, float | None]]]] = deque()
        self._devices: tuple[str, ...] = ()
        # (job, history since, directory, max bytes); None ends the writer
        self._queue: queue.Queue[tuple[_Job, float, Path, int] | None] = queue.Queue(QUEUE_SIZE)
        self._writer: threading.Thread | None = None
        self._failing: str | None = None
        self.written = 0  # incident directories written (tests wait on it)
        self._idle = threading.Condition()
        self.configure(capture, self.directory)

    def configure(self, capture: Capture, directory: str | os.PathLike[str] | None) -> None:
        """A (re)loaded configuration; open incidents stay open."""
        self.capture = capture
        self.directory = Path(directory) if directory is not None else None
        for t in capture.triggers:
            self.totals.setdefault(t.name, 0)
        if capture.triggers and self.directory is None:
            log.warning("capture_directory_unknown", detail="incidents are counted but not "
                        "saved: set [capture] directory or a state file")
        if self.directory is not None:
            clean_leftovers(self.directory)

    # ------------------------------------------------------------------ per poll

    def observe(self, tracked: Sequence[TrackedSample], wall: float | None = None,
                monotonic: float | None = None) -> None:
        wall = time.time() if wall is None else wall
        mono = time.monotonic() if monotonic is None else monotonic
        cap = self.capture
        self._devices = tuple(ts.sample.identity.device for ts in tracked)
        if not cap.triggers and not self.open:
            self._prev.clear()
            self._recent.clear()
            return
        rates = {ts.sample.identity.device: report.family_rates(ts) for ts in tracked}
        self._recent.append((mono, rates))
        while self._recent and self._recent[0][0] < mono - cap.before:
            self._recent.popleft()
        for inc in self.open.values():
            if inc.device in rates:
                inc.timeline.add_rates(mono, inc.device, rates[inc.device])
        for ts in tracked:
            device = ts.sample.identity.device
            state = _state(ts)
            prev = self._prev.get(device)
            for t in cap.triggers:
                key = (t.name, device)
                firing = evaluate(t, ts, prev, state, key in self.open)
                if firing is None:
                    continue
                current = self.open.get(key)
                if current is not None:
                    current.last_fired, current.last_fired_wall = mono, wall
                    current.firings += 1
                    if firing.value > current.peak.value:
                        current.peak = firing
                elif mono - self._closed_at.get(key, -math.inf) >= cap.cooldown:
                    self._open(t, device, firing, tracked, wall, mono)
            self._prev[device] = state
        for gone in [k for k in self._prev if k not in rates]:
            del self._prev[gone]
        for key, inc in list(self.open.items()):
            if mono - inc.last_fired >= cap.after:
                inc.end = wall
                del self.open[key]
                self._closed_at[key] = mono
                log.info("incident_closed", id=inc.id, device=inc.device, trigger=inc.trigger.name,
                         peak=inc.peak.value, seconds=round(wall - inc.onset, 3))
                self._enqueue(inc)

    def _open(self, trigger: Trigger, device: str, firing: Firing,
              tracked: Sequence[TrackedSample], wall: float, mono: float) -> None:
        samples = [ts.sample for ts in tracked]
        inc_id = incident_id(wall, device, trigger.name)
        onset = build(self.host, [poll_of(samples, wall, mono, raw=True)],
                      f"incident {inc_id} onset", True,
                      {"incident": {"id": inc_id, "trigger": trigger.as_json()}})
        timeline = report.Timeline()
        for m, rates in self._recent:
            if device in rates:
                timeline.add_rates(m, device, rates[device])
        inc = Incident(inc_id, trigger, device, wall, mono, firing, onset, timeline, mono, wall,
                       firing)
        self.open[(trigger.name, device)] = inc
        self.totals[trigger.name] += 1
        log.warning("incident_opened", id=inc_id, device=device, trigger=trigger.name,
                    value=firing.value, labels=dict(firing.labels))
        self._enqueue(inc)

    def _enqueue(self, inc: Incident) -> None:
        directory = self.directory
        if directory is None:
            return
        meta = inc.as_json(self.host, self.capture.before, self.capture.after)
        job = _Job(meta, inc.onset_snapshot, None, copy.deepcopy(inc.timeline),
                   _context(inc, meta))
        try:
            self._queue.put_nowait((job, inc.onset - self.capture.before, directory,
                                    self.capture.max_bytes))
        except queue.Full:
            self._failed("queue_full", f"{inc.id}: the incident writer is {QUEUE_SIZE} "
                         "writes behind; this one is dropped")
            return
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="incident-writer",
                                            daemon=True)
            self._writer.start()

    # ------------------------------------------------------------------ writer thread

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                job, since, directory, max_bytes = item
                history = self.history.since(since) if self.history is not None else None
                if history is not None:
                    end = job.meta["end"] or job.meta["last_fired"]
                    history = dataclasses.replace(
                        history, label=f"incident {job.meta['id']} history",
                        polls=tuple(p for p in history.polls if p.time <= end + 1e-6))
                job = dataclasses.replace(job, history=history)
                try:
                    write_incident(directory, job)
                    removed = prune(directory, max_bytes, keep=job.meta["id"])
                except OSError as e:
                    self._failed(errno_name(e.errno) if e.errno else type(e).__name__,
                                 f"{directory / job.meta['id']}: cannot write: {describe(e)}; "
                                 "nothing partial was left")
                except Exception as e:  # AtomicWriteError: an OSError, described
                    cause = e.__context__ if isinstance(e.__context__, OSError) else None
                    reason = errno_name(cause.errno) if cause and cause.errno else "write_failed"
                    self._failed(reason, str(e))
                else:
                    if removed:
                        log.info("incidents_removed", ids=removed, max_bytes=max_bytes)
                    if self._failing is not None:
                        log.info("incident_write_recovered", directory=str(directory))
                    self._failing = None
                with self._idle:
                    self.written += 1
                    self._idle.notify_all()
            finally:
                self._queue.task_done()

    def _failed(self, reason: str, message: str) -> None:
        self.failures[reason] += 1
        if self._failing != reason:
            log.error("incident_write_failed", reason=reason, error=message)
        self._failing = reason

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued write is done (shutdown, tests)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    # ------------------------------------------------------------------ exposition

    def families(self) -> list[ExtraFamily]:
        open_by_device = Counter(inc.device for inc in self.open.values())
        devices = dict.fromkeys((*self._devices, *open_by_device)) if self.capture.triggers \
            else dict.fromkeys(open_by_device)
        return [
            ExtraFamily(INCIDENTS_TOTAL.name, INCIDENTS_TOTAL.type, INCIDENTS_TOTAL.help,
                        tuple(((("trigger", n),), float(v))
                              for n, v in sorted(self.totals.items()))),
            ExtraFamily(INCIDENT_OPEN.name, INCIDENT_OPEN.type, INCIDENT_OPEN.help,
                        tuple(((("device", d),), float(open_by_device[d])) for d in devices)),
            ExtraFamily(WRITE_FAILURES.name, WRITE_FAILURES.type, WRITE_FAILURES.help,
                        tuple(((("reason", r),), float(v))
                              for r, v in sorted(self.failures.items()))),
        ]


# --------------------------------------------------------------------------- HTTP API

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


def report_text(directory: str | os.PathLike[str], inc_id: str) -> str | None:
    """The text report of incident ``inc_id`` (only an id the directory lists)."""
    if not any(item["id"] == inc_id for item in listed(directory)):
        return None
    try:
        return (Path(directory) / inc_id / "report.txt").read_text(errors="replace")
    except OSError:
        return None


def incidents_response(directory: Callable[[], Path | None], query: Mapping[str, Any],
                       body: bytes = b"") -> tuple[int, str, bytes]:
    """``GET /api/v1/incidents``: the incident list (incident.json of each), oldest first;
    ``?id=ID``: that incident's text report (404 if there is none)."""
    where = directory()
    wanted = query.get("id")
    if isinstance(wanted, (list, tuple)):
        wanted = wanted[-1] if wanted else None
    if wanted:
        text = report_text(where, wanted) if where is not None else None
        if text is None:
            return 404, TEXT_TYPE, f"no incident {wanted[:100]!r}\n".encode()
        return 200, TEXT_TYPE, text.encode()
    items = listed(where) if where is not None else []
    return 200, JSON_TYPE, json.dumps({"directory": str(where) if where else None,
                                       "incidents": items}).encode()
