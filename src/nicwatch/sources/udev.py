"""Kernel uevents for network interfaces (add, remove, move = rename), read from the kernel's
uevent netlink socket through pyudev; no udevd is needed. Uevents of network devices reach
only sockets in the device's own network namespace, which is the one nicwatch polls.

Discovery does not depend on these events (every poll lists /sys/class/net); they make the
daemon poll early, so a renamed interface's series move to the new name within a second
instead of at the next interval. ``EventGate`` decides which events do: one for an interface
the selection leaves out is ignored (pod churn on a Kubernetes node creates and deletes
veths all day), and the rest are coalesced so that an early poll comes at most once per
``EARLY_POLL_GAP`` (or per interval, if shorter) after the previous poll, however many events
arrive (docs/failure-behaviour.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pyudev


@dataclass(frozen=True, slots=True)
class NetEvent:
    action: str  # add, remove, move (rename), change
    name: str
    old_name: str | None = None  # for move
    # a software interface (veth, bridge, tunnel: DEVPATH under /devices/virtual/), which the
    # default selection leaves out; known from the event itself, also for a removal
    virtual: bool = False


class NetEvents:
    def __init__(self) -> None:
        self._monitor = pyudev.Monitor.from_netlink(pyudev.Context(), source="kernel")
        self._monitor.filter_by("net")
        self._monitor.start()

    def fileno(self) -> int:
        fd: int = self._monitor.fileno()  # pyudev ships no types
        return fd

    def drain(self) -> list[NetEvent]:
        """Every event already queued, without blocking."""
        events = []
        while (device := self._monitor.poll(timeout=0)) is not None:
            old = device.get("DEVPATH_OLD")
            events.append(NetEvent(device.action or "", device.sys_name,
                                   PurePosixPath(old).name if old else None,
                                   str(device.device_path).startswith("/devices/virtual/")))
        return events

    def close(self) -> None:
        self._monitor = None  # pyudev has no close: dropping the last reference closes it


# An event-driven poll comes at least this long after the previous poll (or one interval, if
# the interval is shorter): a rename is followed within a second, and no event rate makes the
# daemon poll more than once a second on top of its schedule.
EARLY_POLL_GAP = 1.0
OUTCOMES = ("taken", "coalesced", "ignored")


@dataclass
class EventGate:
    """Which interface events make the daemon poll early, and when.

    An event is *ignored* when neither its name nor its old name (a rename) is selected;
    *taken* when it asks for an early poll; *coalesced* when an early poll is already
    pending, so it joins that one. ``counts`` feeds nicwatch_uevents_total."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    pending: bool = False

    def offer(self, events: Iterable[NetEvent],
              selects: Callable[[str, bool], bool]) -> list[NetEvent]:
        """Sort ``events``; the ones that were not ignored, in order."""
        kept = []
        for ev in events:
            if not (selects(ev.name, not ev.virtual)
                    or (ev.old_name is not None and selects(ev.old_name, not ev.virtual))):
                self.counts["ignored"] += 1
                continue
            self.counts["coalesced" if self.pending else "taken"] += 1
            self.pending = True
            kept.append(ev)
        return kept

    def due(self, last_poll: float, interval: float) -> float | None:
        """When the pending early poll may run (monotonic), or None if none is pending."""
        if not self.pending:
            return None
        return last_poll + min(EARLY_POLL_GAP, interval)

    def polled(self) -> None:
        """A poll ran: every event before it is served."""
        self.pending = False
