"""The only code that talks to the kernel.

Every source implements :class:`Source`: once per poll it reads what it knows about the
selected interfaces into the :class:`Poll` (fields of each interface's Reading, errors, and
host-wide values), and it owns its kernel handle until ``close()``. ``registry.SOURCES`` is the
one list of sources a poll iterates; adding a kernel source is one module here and one line
there.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from nicwatch.model import NetClass, SourceError


def errno_name(number: int | None) -> str:
    """errno name as the kernel headers spell it (EOPNOTSUPP, not Python's alias ENOTSUP)."""
    if number == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(number, str(number))


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What a source may need to open: the filesystem roots and the collector switches."""

    sysfs: str = "/sys"
    procfs: str = "/proc"
    ethtool_netlink: bool = True
    pcie_refresh: float = 0.0  # seconds a PCIe path reading is reused (0: every poll)
    module: bool = False  # read pluggable module EEPROMs (--collector.module)
    module_interval: float = 60.0  # seconds between two reads of one module
    # Upper pages to read after the lower half of A0h (normalize.module.pages_to_read, handed
    # in so that sources import nothing above them); None: page 00h only.
    module_pages: Callable[[bytes, bytes | None], Sequence[tuple[int, int, int]]] | None = None
    vfs: bool = False  # SR-IOV VFs of each PF (--collector.vfs)
    receive_path: bool = True  # queues, interrupts and softnet (--collector.receive-path)
    # seconds the queue/NAPI lists, interrupt names and affinities, RPS masks and NUMA nodes
    # are reused (0: read every poll); the counts are read every poll
    rxpath_refresh: float = 0.0


class PollStopped(Exception):
    """The daemon is stopping: the poll was abandoned between two interfaces."""


class Poll:
    """What the sources read in one poll, filled source by source in registry order.

    ``parts[device]`` holds fields of that interface's :class:`~nicwatch.model.Reading` by
    name; ``errors`` are (device, error) pairs, device ``""`` for a source that failed as a
    whole; ``host`` holds host-wide values (``"softirq_seconds"``: per-CPU softirq seconds).
    """

    def __init__(self, interfaces: Sequence[NetClass],
                 should_stop: Callable[[], bool] = lambda: False) -> None:
        self.interfaces = tuple(interfaces)
        self.should_stop = should_stop
        self.parts: dict[str, dict[str, object]] = {nc.name: {} for nc in self.interfaces}
        self.errors: list[tuple[str, SourceError]] = []
        self.host: dict[str, object] = {}

    def each(self) -> Iterator[NetClass]:
        """The interfaces in order, for a source that reads them one by one; raises
        PollStopped between two when the daemon is stopping (a poll of 10,000 interfaces
        takes tens of seconds, and a daemon told to stop must not wait for it)."""
        for nc in self.interfaces:
            if self.should_stop():
                raise PollStopped()
            yield nc

    def put(self, device: str, field: str, value: object) -> None:
        self.parts[device][field] = value

    def error(self, device: str, source: str, kind: str, message: str) -> None:
        self.errors.append((device, SourceError(source, kind, message)))


class Source(Protocol):
    """One kernel interface. ``name`` is the ``source`` label of its errors."""

    name: str

    def read(self, poll: Poll) -> None:
        """Add this source's part of every interface in ``poll`` (and its errors)."""

    def close(self) -> None:
        """Release the kernel handle, if any."""
