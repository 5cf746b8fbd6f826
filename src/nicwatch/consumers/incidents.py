"""Incident capture: when a health counter jumps or the link, PCIe or identity of a NIC
changes, the daemon saves the evidence itself (docs/incidents.md).

Triggers come from the ``[capture]`` section of the config file and are evaluated every
poll on what the tracker computed (its own poll-to-poll rates, exported or not). A trigger
that fires on an interface opens an incident; firing again extends it; it closes ``after``
seconds after it last fired, and the same trigger on the same interface opens no new one
for ``cooldown`` seconds after that.

Storms are bounded: at most ``max_open`` incidents are open at once and each trigger opens
at most ``max_per_trigger`` per ``per_trigger_window``; a firing over either cap is merged
into an open incident (the trigger's newest, else the newest of any; the trigger's newest is
reopened when none is open), listed in its ``incident.json`` and counted in
``nicwatch_incidents_merged_total``, never dropped. The poll thread only decides: the
incidents opened in one poll share one onset (the poll's samples, which are immutable), and
everything heavy (the onset snapshot, the history, the reports, the disk) happens on the
writer thread, which writes each incident when it opens and when it closes.

Each incident is one directory, written complete each time (built beside it and renamed into
place), recognisable by its name (``<onset UTC>-<interface>-<trigger>-<hash>``) and the
marker file nicwatch puts in it::

    incident.json      what fired: trigger, interface, value that crossed, onset, peak, end
    onset.json.gz      the snapshot at onset: every interface's raw statistics, rings, link,
                       PCIe, identity, host provenance (one file per onset poll, hard-linked
                       into each incident opened in that poll)
    history.json.gz    the flight recorder's polls of the incident's interfaces, from
                       ``before`` the onset to the end
    report.txt/.html/.json   the report `nicwatch record` writes, for this interface

The history is the flight recorder's (one history, one memory cap): ``before`` reaches as
far back as it holds. A failed write (a full disk) is logged once until a write succeeds,
counted, and retried. The directory holds at most ``max_bytes``: the oldest incidents are
removed first, and only directories nicwatch wrote; anything else is left alone.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from nicwatch import metrics
from nicwatch.consumers import API_MAX_CONCURRENT, ApiRoute, BaseConsumer, History, Services
from nicwatch.metrics import FAMILIES, INCIDENT_FAMILIES
from nicwatch.model import ExtraFamily, Sample, SeriesKey
from nicwatch.normalize.pcie import REASONS as PCIE_REASONS
from nicwatch.snapshot import report
from nicwatch.snapshot.atomicfile import FILE_MODE, AtomicFile, describe, make_dirs
from nicwatch.snapshot.format import (
    InterfaceSnapshot,
    Poll,
    Snapshot,
    build,
    diff,
    diff_interfaces,
    encode,
    encode_stream,
    interface_snapshot,
    poll_of,
    when,
)
from nicwatch.sources import errno_name, threads
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import INTERFACE_REPLACED, STAT_SET_CHANGED, TrackedSample
from nicwatch.values import MAX_STRING, ConfigError, bounded, show_bytes
from nicwatch.values.regex import Regex, compile_regex, parse_regex
from nicwatch.values.units import parse_duration, parse_size

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult

log = structlog.get_logger("nicwatch.incidents")

SECTION = "capture"
EVENTS = ("pcie_degraded", "link_down", "identity_changed", "stat_set_changed")
STATE_EVENTS = ("pcie_degraded", "link_down")  # fire while the state lasts, once entered
DEFAULT_BEFORE = 120.0
DEFAULT_AFTER = 60.0
DEFAULT_MAX_BYTES = 256 << 20
DEFAULT_COOLDOWN = 0.0
DEFAULT_MAX_OPEN = 32
DEFAULT_MAX_PER_TRIGGER = 8
DEFAULT_PER_TRIGGER_WINDOW = 60.0
MAX_MERGED_LISTED = 1024  # interfaces an incident.json lists as merged; the rest are counted
INCIDENT_FILE = "incident.json"
MARKER = ".nicwatch-incident"  # in every directory nicwatch writes; nothing else is pruned
MARKER_TEXT = b"written by nicwatch: an incident directory (docs/incidents.md)\n"
MAX_INCIDENT_FILE = 1 << 20  # incident.json: a few kB (1,024 merged interfaces: ~150 kB)
MAX_REPORT_FILE = 16 << 20  # report.txt of one interface: kilobytes
MAX_LISTED = 10_000  # incidents a listing returns at most, the newest
FILES = ("incident.json", "onset.json.gz", "history.json.gz", "report.txt", "report.json",
         "report.html")
ID = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[A-Za-z0-9_.-]{1,100}-[0-9a-f]{8}(?:-[0-9]{1,4})?")
STOP_SECONDS = 0.5  # at SIGTERM, writes get this long: the daemon stops within a second
# The writer sleeps this many times as long as it just worked (between the polls of a
# history it encodes, between incidents), so a poll running beside it keeps most of the
# interpreter: two busy threads share it half and half, with the writer busy 1/(1 + 3) of
# the time the poll thread keeps about 7/8 of it (benchmarks/storm.py has the measurement).
WRITER_YIELD = 3.0
RETRY_SECONDS = (5.0, 60.0)  # a failed write is retried after 5 s, doubling up to 60 s
# Paths a capture directory may never be in: kernel file systems, where nothing can be kept
FORBIDDEN = ("/proc", "/sys", "/dev")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class Trigger:
    name: str  # the trigger label of nic_incidents_total
    family: str | None = None  # a canonical counter family ...
    rate_above: float | None = None  # ... whose rate (per second, base unit) exceeds this
    labels: tuple[tuple[str, str], ...] = ()  # only series with these labels
    device: str | None = None  # only interfaces whose name matches (RE2, values.regex)
    event: str | None = None  # or one of EVENTS
    _device: Regex | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_device", compile_regex(self.device) if self.device else None)

    def matches_device(self, device: str) -> bool:
        return self._device is None or self._device.fullmatch(device)

    def describe(self) -> str:
        if self.event:
            what = f"event {self.event}"
        else:
            assert self.family is not None
            unit = FAMILIES[self.family].unit
            what = f"{self.family}{_labels(self.labels)} above {report.rate(self.rate_above, unit)}"
        return what + (f" on devices matching {self.device!r}" if self.device else "")

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "rate_above": self.rate_above,
                "labels": dict(self.labels), "device": self.device, "event": self.event}


@dataclass(frozen=True, slots=True)
class Capture:
    directory: str | None = None  # None: "incidents" in the state directory
    before: float = DEFAULT_BEFORE
    after: float = DEFAULT_AFTER
    max_bytes: int = DEFAULT_MAX_BYTES
    cooldown: float = DEFAULT_COOLDOWN
    max_open: int = DEFAULT_MAX_OPEN
    max_per_trigger: int = DEFAULT_MAX_PER_TRIGGER
    per_trigger_window: float = DEFAULT_PER_TRIGGER_WINDOW
    triggers: tuple[Trigger, ...] = ()


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    labels = tuple(labels)
    return "{" + ",".join(f"{k}={v}" for k, v in labels) + "}" if labels else ""


def _fail(path: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: key {key!r}: {message}")


def _count(low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"expected a whole number from {low} to {high}, got {value!r:.40}")
        return value
    return parse


def check_directory(value: Any) -> str:
    """A capture directory the daemon can keep incidents in: a path string of at most
    MAX_STRING characters without NUL, not an existing non-directory, not in a kernel file
    system (/proc, /sys, /dev: ``/proc/self`` resolves into /proc). ValueError otherwise.
    Checked when the configuration is read, so a reload refuses it before applying anything."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a directory, got {value!r:.80}")
    if len(value) > MAX_STRING or "\0" in value:
        raise ValueError(f"expected a path of at most {MAX_STRING} characters without NUL, "
                         f"got {value[:60]!r}")
    real = os.path.realpath(value)
    if any(real == p or real.startswith(p + "/") for p in FORBIDDEN):
        raise ValueError(f"{value!r} is in a kernel file system ({real}): incidents cannot "
                         "be kept there")
    try:
        st = os.stat(value)
    except FileNotFoundError:
        return value  # created at the first write
    except OSError as e:
        raise ValueError(f"{value!r}: {describe(e)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{value!r} exists and is not a directory")
    return value


_TRIGGER_KEYS = ("name", "family", "rate_above", "labels", "device", "event")
# Bounds, like every setting's (docs/failure-behaviour.md): a day of history around an
# onset at most (the history holds a week), a directory from 1 MiB to 1 TiB; caps from 1.
_SETTINGS: dict[str, Callable[[Any], Any] | None] = {
    "directory": check_directory, "before": bounded(parse_duration, 1, 86400),
    "after": bounded(parse_duration, 0.1, 86400),
    "max_bytes": bounded(parse_size, 1 << 20, 1 << 40, show_bytes),
    "cooldown": bounded(lambda v: parse_duration(v, allow_zero=True), 0, 7 * 86400),
    "max_open": _count(1, 1024), "max_per_trigger": _count(1, 1024),
    "per_trigger_window": bounded(parse_duration, 1, 86400),
    "trigger": None}


def _label_value(value: Any) -> str:
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or len(text) > 200 or not text.isprintable():
        raise ValueError(f"expected a short printable label value, got {value!r:.60}")
    return text


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
            raise _fail(path, f"{key}.event", f"unknown event {str(event)[:60]!r} (known: "
                                              f"{', '.join(EVENTS)})")
        for extra in ("rate_above", "labels"):
            if extra in table:
                raise _fail(path, f"{key}.{extra}", "only for a family trigger")
        return Trigger(_name(table, key, path, event), event=event, device=device)
    spec = FAMILIES.get(family) if isinstance(family, str) else None
    if spec is None or spec.type != "counter" or not isinstance(family, str):
        raise _fail(path, f"{key}.family", f"{str(family)[:80]!r} is not a canonical counter "
                                           "family (docs/metrics.md lists them)")
    rate = table.get("rate_above")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) \
            or rate < 0:
        raise _fail(path, f"{key}.rate_above", "expected a number of "
                    f"{spec.unit or 'events'} per second, 0 or more, got {rate!r:.40}")
    labels = table.get("labels", {})
    if not isinstance(labels, dict):
        raise _fail(path, f"{key}.labels", "expected a table of label values such as "
                                           "{ priority = \"3\" }")
    values: dict[str, str] = {}
    for label, value in labels.items():
        if label not in spec.labels:
            raise _fail(path, f"{key}.labels", f"{family} has no label {label[:60]!r} (its "
                                               f"labels: {', '.join(spec.labels) or 'none'})")
        try:
            values[label] = _label_value(value)
        except ValueError as e:
            raise _fail(path, f"{key}.labels.{label}", str(e)) from None
    pairs = tuple(sorted(values.items()))
    return Trigger(_name(table, key, path, family + _labels(pairs)), family, float(rate),
                   pairs, device)


def _name(table: Mapping[str, Any], key: str, path: str, default: str) -> str:
    name = table.get("name", default)
    if not isinstance(name, str) or not name or len(name) > 200 or not name.isprintable():
        raise _fail(path, f"{key}.name", f"expected a short printable name, got {name!r:.60}")
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
            raise _fail(path, f"{SECTION}.{str(key)[:60]}",
                        f"unknown key (known: {', '.join(_SETTINGS)})")
        parse = _SETTINGS[key]
        if parse is None:  # the triggers, below
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
    value: float  # the rate that crossed (per second, base unit), or the events counted
    labels: tuple[tuple[str, str], ...]  # of the series that crossed, or the event's detail
    events: int = 0  # kernel events this firing counts (carrier downs for link_down)


CARRIER_DOWNS = SeriesKey(metrics.CARRIER_DOWN_EVENTS.name, ())


@dataclass(slots=True)
class _DeviceState:
    link_down: bool | None
    carrier_downs: float | None  # the kernel's carrier_down_count, as tracked
    pcie_degraded: tuple[str, ...] | None
    resets: Mapping[str, int]
    identity: tuple[str | None, ...]


def _state(ts: TrackedSample) -> _DeviceState:
    """The link (down: True) from the Sample's state, and the PCIe degradation reasons (of
    nic_pcie_degraded, in its order) from its verdict."""
    s = ts.sample
    up, verdict = s.state.up, s.pcie_verdict
    degraded = (None if verdict is None else
                tuple(r for r in PCIE_REASONS if r in verdict.reasons))
    downs = ts.counters.get(CARRIER_DOWNS)
    ident = s.identity
    return _DeviceState(None if up is None else not up,
                        downs.value if downs is not None else None, degraded,
                        dict(ts.resets), (ident.pci_address, ident.perm_address, ident.driver,
                                          ident.firmware_version))


def _link_down(prev: _DeviceState | None, now: _DeviceState, is_open: bool) -> Firing | None:
    """The kernel counts every carrier loss (IFLA_CARRIER_DOWN_COUNT, from the RTM_GETLINK
    dump; sysfs carrier_down_count): a link that went down and up between two polls fired,
    and each loss is counted. Without the counter, entering the down state fires."""
    if prev is not None and prev.carrier_downs is not None and now.carrier_downs is not None:
        downs = int(now.carrier_downs - prev.carrier_downs)
        if downs > 0:
            return Firing(float(downs), (), downs)
        return Firing(0.0, ()) if now.link_down and is_open else None
    entered = prev is not None and prev.link_down is False
    if now.link_down and (entered or is_open):
        return Firing(1.0, (), 1 if entered else 0)
    return None


def evaluate(trigger: Trigger, ts: TrackedSample, prev: _DeviceState | None,
             now: _DeviceState | None, is_open: bool) -> Firing | None:
    """Whether ``trigger`` fires on this interface at this poll, and with what value
    (``now`` is None for a family trigger, which needs no state)."""
    if not trigger.matches_device(ts.sample.identity.device):
        return None
    if trigger.event is None:
        best: Firing | None = None
        wanted = set(trigger.labels)
        limit = trigger.rate_above if trigger.rate_above is not None else math.inf
        for key, t in ts.counters.items():
            if key.metric != trigger.family or t.rate is None or t.rate <= limit:
                continue
            if wanted <= set(key.labels) and (best is None or t.rate > best.value):
                best = Firing(t.rate, key.labels)
        return best
    assert now is not None
    if trigger.event == "link_down":
        return _link_down(prev, now, is_open)
    if trigger.event == "pcie_degraded":
        entered = prev is not None and prev.pcie_degraded == ()
        if now.pcie_degraded and (entered or is_open):
            return Firing(1.0, (("reason", ",".join(sorted(now.pcie_degraded))),),
                          1 if entered else 0)
        return None
    if prev is None:
        return None
    if trigger.event == "stat_set_changed":
        moved = now.resets.get(STAT_SET_CHANGED, 0) > prev.resets.get(STAT_SET_CHANGED, 0)
        return Firing(1.0, (), 1) if moved else None
    # identity_changed: the interface was replaced, or its PCI address, permanent MAC,
    # driver or firmware changed (an unknown value is no evidence)
    replaced = now.resets.get(INTERFACE_REPLACED, 0) > prev.resets.get(INTERFACE_REPLACED, 0)
    changed = [n for n, a, b in zip(("pci_address", "perm_address", "driver", "firmware"),
                                    prev.identity, now.identity, strict=False)
               if a is not None and b is not None and a != b]
    if replaced or changed:
        return Firing(1.0, (("changed", ",".join(changed or ["interface_replaced"])),), 1)
    return None


# --------------------------------------------------------------------------- incidents


def _slug(text: str, size: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._-")[:size] or "x"


def incident_id(onset: float, device: str, trigger: str) -> str:
    """``<onset UTC>-<interface>-<trigger>-<hash>``: readable, and unique because the hash
    covers the exact interface and trigger names and the onset (``hx#1`` and ``hx,1`` read
    alike as ``hx_1`` but hash apart)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(onset)) + f".{int(onset * 1000) % 1000:03d}Z"
    digest = hashlib.sha256(f"{device}\0{trigger}\0{onset!r}".encode("utf-8", "surrogatepass"))
    return f"{stamp}-{_slug(device, 24)}-{_slug(trigger, 60)}-{digest.hexdigest()[:8]}"


@dataclass(slots=True)
class _Onset:
    """One poll at which incidents opened, shared by all of them: the poll's samples until
    the writer encodes them once, then the encoded snapshot (and the first file written,
    which the others hard-link)."""

    wall: float
    monotonic: float
    samples: tuple[Sample, ...] | None
    data: bytes | None = None
    file: Path | None = None


@dataclass(slots=True)
class _Merged:
    trigger: str
    first: float  # wall clock
    last: float
    firings: int
    peak: float


@dataclass(slots=True)
class Incident:
    id: str
    trigger: Trigger
    device: str
    onset: float  # wall clock of the poll that fired first
    onset_monotonic: float
    first: Firing
    onset_poll: _Onset
    onset_interface: InterfaceSnapshot  # the device at onset (the report without history)
    last_fired: float  # monotonic
    last_fired_wall: float
    peak: Firing
    firings: int = 1
    events: int = 0
    end: float | None = None  # wall clock when closed
    end_reason: str | None = None  # quiet (after `after`), stopped (SIGTERM)
    merged: dict[str, _Merged] = field(default_factory=dict)
    merged_more: int = 0  # interfaces merged beyond MAX_MERGED_LISTED

    def devices(self) -> frozenset[str]:
        return frozenset((self.device, *self.merged))

    def as_json(self, host: HostInfo, before: float, after: float) -> dict[str, Any]:
        unit = FAMILIES[self.trigger.family].unit if self.trigger.family else ""
        return {
            "id": self.id, "device": self.device, "trigger": self.trigger.as_json(),
            "onset": self.onset, "value": self.first.value, "labels": dict(self.first.labels),
            "unit": unit, "peak": self.peak.value, "peak_labels": dict(self.peak.labels),
            "last_fired": self.last_fired_wall, "end": self.end, "open": self.end is None,
            "end_reason": self.end_reason, "firings": self.firings, "events": self.events,
            "merged": {d: {"trigger": m.trigger, "first": m.first, "last": m.last,
                           "firings": m.firings, "peak": m.peak}
                       for d, m in self.merged.items()},
            "merged_more": self.merged_more,
            "before": before, "after": after,
            "host": {"hostname": host.hostname, "boot_id": host.boot_id,
                     "boot_time": host.boot_time, "kernel_release": host.kernel_release},
            "files": list(FILES),
        }


@dataclass(frozen=True, slots=True)
class _Job:
    """One write of one incident directory: its state when the poll thread handed it over."""

    meta: dict[str, Any]
    onset: _Onset
    onset_interface: InterfaceSnapshot
    devices: frozenset[str]
    since: float  # history from (wall clock)
    until: float  # history up to (wall clock)
    context: tuple[tuple[str, str], ...]
    directory: Path
    max_bytes: int
    retry_at: float = 0.0  # monotonic; a failed write waits until then
    attempts: int = 0


def _value(v: float, unit: str, event: bool) -> str:
    return f"fired ({v:g})" if event else report.rate(v, unit)


def _context(inc: Incident, meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    t = inc.trigger
    unit = meta["unit"]
    event = t.event is not None
    rows = [("incident", inc.id), ("state", "open" if inc.end is None else "closed"),
            ("interface", inc.device), ("trigger", f"{t.name}: {t.describe()}"),
            ("onset", when(inc.onset))]
    if event:  # an event has no rate to cross or peak: how often it happened
        rows.append(("events", f"{max(inc.events, 1)} {t.event}"))
    else:
        rows += [("crossed", f"{_value(inc.first.value, unit, event)}"
                             f"{' on ' + _labels(inc.first.labels) if inc.first.labels else ''}"),
                 ("peak", f"{_value(inc.peak.value, unit, event)}"
                          f"{' on ' + _labels(inc.peak.labels) if inc.peak.labels else ''}")]
    rows.append(("last fired", f"{when(inc.last_fired_wall)} "
                               f"({report.duration(inc.last_fired_wall - inc.onset)} after "
                               "the onset)"))
    if inc.merged or inc.merged_more:
        rows.append(("merged", f"{len(inc.merged) + inc.merged_more} more interfaces over the "
                               "capture caps (incident.json lists them)"))
    if inc.end is not None:
        rows.append(("closed", f"{when(inc.end)} ({inc.end_reason}; onset to close "
                               f"{report.duration(inc.end - inc.onset)}, the figure "
                               "`nicwatch incidents` lists)"))
    # The report's started/ended/duration below are its history window, which begins
    # `before` the onset: longer than the incident itself, and said so.
    rows.append(("report window", "the history from before the onset to the close "
                                  "(started, ended and duration below)"))
    return tuple(rows)


# --------------------------------------------------------------------------- the directory


def _is_ours(directory: Path, name: str) -> bool:
    """An incident directory nicwatch wrote: its name has the id pattern, it is a real
    directory (not a symlink) and it holds the marker file nicwatch writes first."""
    if not ID.fullmatch(name):
        return False
    try:
        return (stat.S_ISDIR(os.lstat(directory / name).st_mode)
                and stat.S_ISREG(os.lstat(directory / name / MARKER).st_mode))
    except OSError:
        return False


def _file_bytes(st: os.stat_result) -> int:
    """Bytes a file holds on its own (a hard link shares them: its part)."""
    return st.st_size // max(1, st.st_nlink)


def _dir_bytes(path: Path, limit: int = 10_000) -> int:
    """Bytes under ``path`` (without following symlinks), walking at most ``limit``
    entries: a foreign tree can be large, and this only has to say it is."""
    total, seen = 0, 0
    stack = [path]
    while stack and seen < limit:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(entry.path))
                    else:
                        total += _file_bytes(st)
        except OSError:
            continue
    return total


def _entry_bytes(directory: Path, name: str) -> int:
    try:
        st = os.lstat(directory / name)
    except OSError:
        return 0
    return _dir_bytes(directory / name) if stat.S_ISDIR(st.st_mode) else _file_bytes(st)


def prune(directory: Path, max_bytes: int, keep: str | None = None
          ) -> tuple[list[str], list[tuple[str, int]]]:
    """Remove the oldest incidents nicwatch wrote until the directory holds at most
    ``max_bytes``; the incident ``keep`` (just written) goes last. Entries nicwatch did not
    write are never removed. Returns the removed ids and, when the budget could not be met,
    the foreign entries that kept it from being met (name, bytes)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return [], []
    ours = [n for n in names if _is_ours(directory, n)]
    foreign = [n for n in names if n not in set(ours) and not n.startswith(".")]
    sizes = {n: _entry_bytes(directory, n) for n in (*ours, *foreign)}
    total = sum(sizes.values())
    order = [n for n in ours if n != keep] + [n for n in ours if n == keep]
    removed = []
    for name in order:
        if total <= max_bytes:
            break
        if name == keep:
            break  # the newest stays, even alone over the budget
        shutil.rmtree(directory / name, ignore_errors=True)
        total -= sizes[name]
        removed.append(name)
    blocking = [(n, sizes[n]) for n in foreign] if total > max_bytes else []
    return removed, blocking


def clean_leftovers(directory: Path) -> None:
    """What a crash mid-write leaves of nicwatch's own writes: temporary directories
    (removed) and an old version swapped out but not yet replaced (put back). Only names
    of nicwatch's pattern holding its marker, never a symlink."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"\.(.+)\.(?:[A-Za-z0-9_]+\.tmp|old)", name)
        if not m or not ID.fullmatch(m.group(1)):
            continue
        path = directory / name
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            if not stat.S_ISREG(os.lstat(path / MARKER).st_mode) and any(os.scandir(path)):
                continue
        except OSError:
            continue
        final = directory / m.group(1)
        if name.endswith(".old") and not os.path.lexists(final):
            os.rename(path, final)
        else:
            shutil.rmtree(path, ignore_errors=True)


def close_interrupted(directory: Path, host: HostInfo) -> list[str]:
    """Incidents a previous daemon left open (it was killed, or stopped before it could
    write the close): closed now as ``interrupted`` at their last firing, with what was
    saved. Returns their ids."""
    listing = listed(directory)
    closed = []
    for item in listing.items:
        if not item.get("open"):
            continue
        path = directory / item["id"] / INCIDENT_FILE
        try:
            meta = _read_meta(directory, item["id"])
            if meta is None:
                continue
            meta.update(open=False, end=meta.get("last_fired") or meta.get("onset"),
                        end_reason="interrupted")
            with AtomicFile(path) as f:
                f.write(json.dumps(meta, indent=1).encode())
        except Exception as e:  # OSError, AtomicWriteError: logged, left open
            log.warning("incident_close_failed", id=item["id"], error=str(e))
            continue
        closed.append(item["id"])
    if closed:
        log.info("incidents_interrupted_closed", ids=closed[:20], count=len(closed),
                 detail="open when the last daemon stopped: closed at their last firing")
    return closed


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

    def pause(self) -> None:
        worked = time.thread_time() - self._since
        if worked > 0.001:
            time.sleep(min(1.0, worked * WRITER_YIELD))
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


# --------------------------------------------------------------------------- the consumer


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
        self.written = 0  # incident directories written (tests wait on it)
        self.configure(capture, directory)

    @classmethod
    def open(cls, config: Any, host: HostInfo, services: Services | None = None) -> Incidents:
        services = services or Services()
        capture = config.capture
        return cls(capture, _directory_for(capture, services.state_directory), host,
                   services.history, services.state_directory)

    def reconfigure(self, config: Any) -> None:  # a Config (which imports this module)
        self.configure(config.capture, _directory_for(config.capture, self.state_directory))

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
                    if inc is not None:  # opened or reopened: written now (a merge at close)
                        changed[inc.id] = inc
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
               wall: float, mono: float) -> Incident | None:
        """Open an incident, or merge the firing into one when a cap says no. Returns the
        incident to write now: one opened or reopened (None: merged into an open one)."""
        cap = self.capture
        recent = self._opened.setdefault(trigger.name, deque())
        while recent and recent[0] <= mono - cap.per_trigger_window:
            recent.popleft()
        target: Incident | None = None
        reopened = False
        if len(self.open_incidents) >= cap.max_open:
            same = (i for i in self.open_incidents.values() if i.trigger.name == trigger.name)
            target = max(same, key=lambda i: i.onset_monotonic, default=None) or max(
                self.open_incidents.values(), key=lambda i: i.onset_monotonic)
        elif len(recent) >= cap.max_per_trigger:
            target = self._newest[trigger.name]
            if target.end is not None:  # reopened: the trigger's storm goes on in it
                target.end = target.end_reason = None
                self.open_incidents[(target.trigger.name, target.device)] = target
                reopened = True
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
        return target if reopened else None

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
        pace = _Yield()
        while True:
            pace.pause()
            item = self._next()
            if item is None:
                return
            try:
                if isinstance(item, Path):
                    clean_leftovers(item)
                    close_interrupted(item, self.host)
                else:
                    self._write(item, pace)
            except Exception as e:  # a bug must not end the writer
                log.error("incident_writer_failed", error=f"{type(e).__name__}: {e}")
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

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


# --------------------------------------------------------------------------- reading them

_Types = type | tuple[type, ...]
_SUMMARY: dict[str, _Types] = {"id": str, "device": str, "onset": (int, float), "trigger": dict}
_OPTIONAL: dict[str, _Types] = {
    "value": (int, float), "labels": dict, "unit": str, "peak": (int, float),
    "peak_labels": dict, "last_fired": (int, float), "end": (int, float, type(None)),
    "open": bool, "end_reason": (str, type(None)), "firings": int, "events": int,
    "merged_more": int, "host": dict, "before": (int, float), "after": (int, float),
    "history_from": (int, float, type(None))}


_NUMBERS = {k for k, t in (*_SUMMARY.items(), *_OPTIONAL.items())
            if isinstance(t, tuple) and float in t}
_TIMES = {"onset", "last_fired", "end", "history_from"}
_MAX_TIME = 253402300799.0  # the end of year 9999, what a date can show


def _finite(value: Any, time_: bool) -> bool:
    """A number every reader can take as a float (an int of 309 digits or more is none:
    float() and math.isfinite raise OverflowError on it); a time also from 1970 to 9999."""
    if isinstance(value, int) and not -(2 ** 1024) < value < 2 ** 1024:
        return False
    return math.isfinite(value) and (not time_ or 0 <= value <= _MAX_TIME)


@dataclass(frozen=True, slots=True)
class Listing:
    items: list[dict[str, Any]]  # oldest first
    skipped: list[tuple[str, str]]  # (entry, why)
    left_off: int = 0  # older incidents not listed (MAX_LISTED)


def _open_entry(directory: Path, name: str) -> int:
    """A descriptor of the incident directory ``name``: never through a symlink."""
    return os.open(directory / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _read_file(dir_fd: int, name: str, limit: int) -> bytes:
    """A regular file in ``dir_fd``, not through a symlink, of at most ``limit`` bytes
    (ValueError naming the problem)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                     dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError(f"{name} is a symlink") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{name} is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {show_bytes(limit)}")
    return data


def _read_meta(directory: Path, name: str) -> dict[str, Any] | None:
    """incident.json of one incident, checked (ValueError/OSError naming what is wrong)."""
    fd = _open_entry(directory, name)
    try:
        data = _read_file(fd, INCIDENT_FILE, MAX_INCIDENT_FILE)
    finally:
        os.close(fd)
    try:
        meta = json.loads(data)
    except RecursionError:
        raise ValueError(f"{INCIDENT_FILE} is nested too deeply") from None
    except ValueError:
        raise ValueError(f"{INCIDENT_FILE} is not JSON") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{INCIDENT_FILE} is not a JSON object")
    for key, types in (*_SUMMARY.items(), *_OPTIONAL.items()):
        if (key in _SUMMARY or key in meta) and not isinstance(meta.get(key), types):
            raise ValueError(f"{INCIDENT_FILE}: {key!r} is missing or of the wrong type")
    for key, value in meta.items():  # numbers that are no float (a 401-digit onset) or no time
        if key in _NUMBERS and value is not None and not _finite(value, key in _TIMES):
            what = "a time from 1970 to 9999" if key in _TIMES else "a finite number"
            raise ValueError(f"{INCIDENT_FILE}: {key!r} is not {what}")
    if meta["id"] != name:
        raise ValueError(f"{INCIDENT_FILE} names another incident")
    if not isinstance(meta["trigger"].get("name"), str):
        raise ValueError(f"{INCIDENT_FILE}: the trigger has no name")
    return meta


def _summary(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a listing carries of an incident (the merged interfaces only counted)."""
    out = {k: meta[k] for k in (*_SUMMARY, *_OPTIONAL) if k in meta}
    merged = meta.get("merged")
    out["merged"] = (len(merged) if isinstance(merged, dict) else 0) + int(
        meta.get("merged_more") or 0)
    out.pop("merged_more", None)
    return out


def listed(directory: str | os.PathLike[str]) -> Listing:
    """Every complete incident in ``directory`` (incident.json checked), oldest first, at
    most MAX_LISTED (the newest); an entry that is not one is skipped and named. A directory
    that does not exist has none; one that is not a directory raises NotADirectoryError."""
    where = Path(directory)
    try:
        names = sorted(os.listdir(where))
    except FileNotFoundError:
        return Listing([], [])
    candidates = [n for n in names if not n.startswith(".")]
    left_off = max(0, len(candidates) - MAX_LISTED)
    items, skipped = [], []
    for name in candidates[left_off:]:
        if not ID.fullmatch(name):
            skipped.append((name, "not an incident (nicwatch did not write it)"))
            continue
        try:
            meta = _read_meta(where, name)
        except FileNotFoundError:
            skipped.append((name, f"no {INCIDENT_FILE}"))
            continue
        except OSError as e:
            if os.path.islink(where / name):
                why = "a symlink"
            else:
                why = "not a directory" if e.errno == errno.ENOTDIR else describe(e)
            skipped.append((name, why))
            continue
        except ValueError as e:
            skipped.append((name, str(e)))
            continue
        if meta is not None:
            items.append(_summary(meta))
    return Listing(items, skipped, left_off)


def report_text(directory: str | os.PathLike[str], inc_id: object) -> str | None:
    """The text report of incident ``inc_id`` (a name of the id pattern, a real directory
    whose incident.json names it); None when there is no such incident. ValueError when its
    report is unreadable (a symlink, not a file, larger than MAX_REPORT_FILE)."""
    if not isinstance(inc_id, str) or not ID.fullmatch(inc_id):
        return None
    where = Path(directory)
    try:
        _read_meta(where, inc_id)
        fd = _open_entry(where, inc_id)
    except (OSError, ValueError):
        return None
    try:
        return _read_file(fd, "report.txt", MAX_REPORT_FILE).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)


def shown_id(inc_id: str) -> str:
    """An id as an error message shows it: at most 100 characters."""
    if len(inc_id) <= 100:
        return repr(inc_id)
    return repr(inc_id[:100]) + f"... ({len(inc_id)} characters)"


# --------------------------------------------------------------------------- HTTP API

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


def incidents_response(directory: Callable[[], Path | None], query: Mapping[str, Any],
                       body: bytes = b"") -> tuple[int, str, bytes]:
    """``GET /api/v1/incidents``: the incident list (a summary of each incident.json), oldest
    first, with the entries skipped and why; ``?id=ID``: that incident's text report (404 if
    there is none, 422 if it cannot be served)."""
    where = directory()
    wanted = query.get("id")
    if isinstance(wanted, (list, tuple)):
        wanted = wanted[-1] if wanted else None
    if wanted:
        try:
            text = report_text(where, wanted) if where is not None else None
        except ValueError as e:
            return 422, TEXT_TYPE, f"incident {shown_id(wanted)}: {e}\n".encode()
        if text is None:
            return 404, TEXT_TYPE, f"no incident {shown_id(wanted)}\n".encode()
        return 200, TEXT_TYPE, text.encode()
    try:
        listing = listed(where) if where is not None else Listing([], [])
    except OSError as e:
        return 500, TEXT_TYPE, f"{where}: cannot list incidents: {describe(e)}\n".encode()
    return 200, JSON_TYPE, json.dumps({
        "directory": str(where) if where else None, "incidents": listing.items,
        "skipped": [{"entry": n, "reason": r} for n, r in listing.skipped],
        "left_off": listing.left_off}).encode()
