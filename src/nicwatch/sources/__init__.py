"""The only code that talks to the kernel.

Every source implements :class:`Source`: once per poll it reads what it knows about the
selected interfaces into the :class:`Poll` (parts of each interface's Reading, errors, and
host-wide values), and it owns its kernel handle until ``close()``. A part is put by its
typed key (``poll.put(device, Reading.stats, value)``, a ``model.Part``): the type checker
refuses a value of another type, and a misspelt part does not exist; put() raises
:class:`PartError` for a part of another record (and, in tests, for a value of the wrong
type, see check_types). Each source declares the parts it fills and the parts of other
sources it reads, so the order of ``registry.SOURCES`` (the one list a poll iterates) is
checked, not remembered.
"""

from __future__ import annotations

import errno
import types
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, Union, get_args, get_origin

from nicwatch.model import (
    HOST_PARTS,
    READING_PARTS,
    LldpNeighbor,
    NetClass,
    Part,
    SourceError,
    SourceRun,
)

T = TypeVar("T")


def errno_name(number: int | None) -> str:
    """errno name as the kernel headers spell it (EOPNOTSUPP, not Python's alias ENOTSUP)."""
    if number == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return str(number) if number is None else errno.errorcode.get(number, str(number))


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
    module_pages: Callable[[bytes, bytes | None, bytes | None],
                           Sequence[tuple[int, int, int]]] | None = None
    vfs: bool = False  # SR-IOV VFs of each PF (--collector.vfs)
    rdma_netlink: bool = True  # RDMA counters over netlink where it is there
    rdma_include: str | None = None  # RDMA devices to read, by name (regex); None: all
    rdma_exclude: str | None = None  # RDMA devices never read (regex)
    receive_path: bool = True  # queues, interrupts and softnet (--collector.receive-path)
    # seconds the queue/NAPI lists, interrupt names and affinities, RPS masks and NUMA nodes
    # are reused (0: read every poll); the counts are read every poll
    rxpath_refresh: float = 0.0
    lldp: bool = False  # receive LLDP neighbours passively (--collector.lldp)
    # The LLDPDU decoder (normalize.lldp.decode_frame, handed in so that sources import
    # nothing above them); None: the LLDP source stays off.
    lldp_decode: Callable[[bytes, float], LldpNeighbor] | None = None
    lldp_chassis_id: str = ""  # this host's LLDP chassis id ("": lldpd's default, the MAC)
    lldp_port_id: str = "mac"  # what this host's LLDP agent sends as port id: mac or ifname
    # seconds an interface's DCB answer is reused while no DCB notification and no change of
    # its link state says otherwise (0: asked every poll)
    dcb_refresh: float = 0.0
    # sources turned off by name (their ``source`` label; --no-collector.NAME): never opened
    disabled: frozenset[str] = frozenset()
    # drivers with one hwmon device per chip, on one PF (normalize.drivers.HWMON_ONE_PER_CHIP,
    # handed in so that sources import nothing above them)
    hwmon_one_per_chip: frozenset[str] = frozenset()


class PollStopped(Exception):
    """The daemon is stopping: the poll was abandoned between two interfaces."""


class PartError(TypeError):
    """A source put something that is not a part of a Reading (a misspelt name, or a value
    of the wrong type)."""


# (types the value may have, types of its items for a tuple[X, ...]; else None)
_Spec = tuple[tuple[type, ...], tuple[type, ...] | None]


def _spec(hint: object) -> _Spec:
    """What isinstance() checks a value of type ``hint`` against (the shapes the parts of
    Reading and HostReading use: a class, ``X | None``, ``tuple[X, ...]``)."""
    if get_origin(hint) in (Union, types.UnionType):
        kinds: list[type] = []
        items: tuple[type, ...] | None = None
        for arg in get_args(hint):
            arg_kinds, arg_items = _spec(arg)
            kinds.extend(arg_kinds)
            items = arg_items or items
        return tuple(kinds), items
    if get_origin(hint) is tuple:
        args = get_args(hint)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"no runtime check for {hint!r}")
        return (tuple,), _spec(args[0])[0]
    if hint is float:
        return (float, int), None  # an int is a float (the numeric tower)
    if isinstance(hint, type):
        return (hint,), None
    raise TypeError(f"no runtime check for {hint!r}")


PART_SPECS: dict[Part[Any], _Spec] = {part: _spec(part.hint) for part in READING_PARTS}
HOST_SPECS: dict[Part[Any], _Spec] = {part: _spec(part.hint) for part in HOST_PARTS}


def _checked(specs: dict[Part[Any], _Spec], what: str, part: object, value: object) -> None:
    if not isinstance(part, Part) or part not in specs:
        raise PartError(f"{part!r} is not a {what} part "
                        f"(one of {', '.join(p.name for p in specs)})")
    kinds, items = specs[part]
    if not isinstance(value, kinds) or (
            items is not None and isinstance(value, tuple)
            and not all(isinstance(item, items) for item in value)):
        raise PartError(f"{what} part {part.name!r}: {type(value).__name__} is none of "
                        f"{', '.join(k.__name__ for k in kinds)}")


# The parts put() and put_host() accept without a closer look. With check_types(True) none:
# every value's type is checked too (isinstance against the Part's type, items of tuples
# included). Off in the daemon: that costs a few hundred ns per part, several percent of the
# cheapest sources' stage, and the type checker proves the in-tree sources right;
# tests/conftest.py turns it on, so a double or a source of the wrong type fails a test.
_PARTS: frozenset[Part[Any]] = frozenset(READING_PARTS)
_HOST: frozenset[Part[Any]] = frozenset(HOST_PARTS)
_TRUSTED_PARTS, _TRUSTED_HOST = _PARTS, _HOST


def check_types(on: bool) -> None:
    """Whether put() and put_host() check the type of every value (tests), or only that it
    is a part of a Reading (of a HostReading) (the daemon)."""
    global _TRUSTED_PARTS, _TRUSTED_HOST
    _TRUSTED_PARTS, _TRUSTED_HOST = (frozenset(), frozenset()) if on else (_PARTS, _HOST)


def checking_types() -> bool:
    return not _TRUSTED_PARTS


class Poll:
    """What the sources read in one poll, filled source by source in registry order.

    ``parts[device]`` holds the parts of that interface's :class:`~nicwatch.model.Reading`
    (``put``); ``errors`` are (device, error) pairs, device ``""`` for a source that failed as
    a whole; ``host`` holds host-wide values (``put_host``); ``runs`` says how each source's
    read went (the collector's record).
    """

    def __init__(self, interfaces: Sequence[NetClass],
                 should_stop: Callable[[], bool] = lambda: False) -> None:
        self.interfaces = tuple(interfaces)
        self.should_stop = should_stop
        # part name -> value, as put(); Any: read back typed with get()
        self.parts: dict[str, dict[str, Any]] = {nc.name: {} for nc in self.interfaces}
        self.errors: list[tuple[str, SourceError]] = []
        self.host: dict[str, Any] = {}  # part name -> value, as put_host()
        self.runs: list[SourceRun] = []

    def only(self, names: Collection[str]) -> Poll:
        """The same poll (parts, errors, host values and runs shared) over the interfaces
        named only: what the kernel socket sources read when the sysfs root and their
        network namespace do not describe the same interfaces (sources.netns)."""
        view = Poll([nc for nc in self.interfaces if nc.name in names], self.should_stop)
        view.parts = {nc.name: self.parts[nc.name] for nc in view.interfaces}
        view.errors, view.host, view.runs = self.errors, self.host, self.runs
        return view

    def each(self) -> Iterator[NetClass]:
        """The interfaces in order, for a source that reads them one by one; raises
        PollStopped between two when the daemon is stopping (a poll of 10,000 interfaces
        takes tens of seconds, and a daemon told to stop must not wait for it)."""
        for nc in self.interfaces:
            if self.should_stop():
                raise PollStopped()
            yield nc

    def put(self, device: str, part: Part[T], value: T) -> None:
        """One part of ``device``'s Reading (``Reading.stats``: the type checker refuses a
        value of another type); PartError for a part that is not a Reading's (and, with
        check_types(True), for a value of the wrong type)."""
        if part not in _TRUSTED_PARTS:
            _checked(PART_SPECS, "Reading", part, value)
        self.parts[device][part.name] = value

    def get(self, device: str, part: Part[T]) -> T:
        """What a source before this one put as ``device``'s ``part``; its default if none
        did."""
        return self.parts[device].get(part.name, part.default)  # type: ignore[no-any-return]

    def put_host(self, part: Part[T], value: T) -> None:
        """A host-wide value (a part of HostReading); PartError as for put()."""
        if part not in _TRUSTED_HOST:
            _checked(HOST_SPECS, "host", part, value)
        self.host[part.name] = value

    def error(self, device: str, source: str, kind: str, message: str) -> None:
        self.errors.append((device, SourceError(source, kind, message)))


class Source(Protocol):
    """One kernel interface. ``name`` is the ``source`` label of its errors and of its
    ``nicwatch_source_up`` series; ``fills``: the names of the parts of Reading and
    HostReading it puts; ``needs``: parts it reads that other sources fill (those come before
    it in a poll)."""

    name: str
    fills: ClassVar[frozenset[str]]
    needs: ClassVar[frozenset[str]]

    def read(self, poll: Poll) -> None:
        """Add this source's part of every interface in ``poll`` (and its errors)."""

    def close(self) -> None:
        """Release the kernel handle, if any."""


class Declares(Protocol):
    """What the order of sources is checked on: a Source, or a source class."""

    @property
    def name(self) -> str: ...
    @property
    def fills(self) -> frozenset[str]: ...
    @property
    def needs(self) -> frozenset[str]: ...


def check_order(sources: Sequence[Declares]) -> None:
    """ValueError when a source reads a part that a source after it fills (a part no source
    of the list fills is simply absent: the one that reads it copes, as the ioctl source does
    without the netlink one)."""
    for i, source in enumerate(sources):
        for later in sources[i + 1:]:
            late = source.needs & later.fills
            if late:
                raise ValueError(f"source {source.name} reads {', '.join(sorted(late))}, "
                                 f"which {later.name} fills after it")
