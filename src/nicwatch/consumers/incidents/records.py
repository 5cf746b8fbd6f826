"""An incident as the poll thread keeps it (onset, firings, merged interfaces) and the
job it hands the writer; its id and its ``incident.json``."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nicwatch.consumers.incidents.parsing import Trigger, _labels
from nicwatch.consumers.incidents.store import FILES
from nicwatch.consumers.incidents.triggers import Firing
from nicwatch.metrics import FAMILIES
from nicwatch.model import Sample
from nicwatch.snapshot import report
from nicwatch.snapshot.files import (
    InterfaceSnapshot,
    when,
)
from nicwatch.sources.host import HostInfo

MAX_MERGED_LISTED = 1024  # interfaces an incident.json lists as merged; the rest are counted


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
