"""Kernel uevents for network interfaces (add, remove, move = rename), read from the kernel's
uevent netlink socket through pyudev; no udevd is needed. Uevents of network devices reach
only sockets in the device's own network namespace, which is the one nicwatch polls.

Discovery does not depend on these events (every poll lists /sys/class/net); they make the
daemon poll at once, so a renamed interface's series move to the new name within
milliseconds instead of at the next interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import pyudev


@dataclass(frozen=True, slots=True)
class NetEvent:
    action: str  # add, remove, move (rename), change
    name: str
    old_name: str | None = None  # for move


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
                                   PurePosixPath(old).name if old else None))
        return events

    def close(self) -> None:
        self._monitor = None  # pyudev has no close: dropping the last reference closes it
