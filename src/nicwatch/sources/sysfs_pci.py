"""PCI function, upstream PCIe path, link status, identity and AER counters from sysfs.

Every path is taken below a sysfs root: ``/sys`` on a host, a fixture tree in tests (like
node_exporter's ``--path.sysfs``). Nothing here raises for what a file contains or for a file
that cannot be read: the value becomes ``None`` (absent) and the problem is recorded as a
string ``"<path relative to the root>: <what went wrong>"`` in the result, so callers can
count it. A file that simply does not exist is absent without a problem: sysfs only creates
the link and AER attributes for devices that have the capability (a virtio-PCI function has
no PCIe capability, hence no ``*_link_*`` files: that is "not PCIe", not an error).

Files read in each PCI device directory (``devices/pci<domain>:<bus>/.../<bdf>/``):

====================================  =====================================================
``current_link_speed``,               GT/s per lane: ``"16.0 GT/s PCIe"`` (5.7+), ``"8 GT/s"``
``max_link_speed``                    (5.6 and older); ``"Unknown"`` / ``"Unknown speed"``
                                      when down or not in the kernel's table
``current_link_width``,               lanes, decimal; 0 when the link is down, 63 (the
``max_link_width``                    all-ones register) when the device does not answer
                                      config reads (D3cold, surprise down); the max is 255
                                      (``PCIE_LNK_WIDTH_UNKNOWN``) where the function has no
                                      link registers (an integrated endpoint on the root
                                      complex: LNKCAP reads 0)
``power_state``                       ``D0``, ``D3hot``, ``D3cold``, ``unknown`` (4.20+)
``vendor``, ``device``, ``class``     hexadecimal, ``"0x15b3"``, ``"0x1021"``, ``"0x020000"``
``numa_node``                         decimal; -1 when the platform gives no affinity
``local_cpulist``                     CPU list, ``"0-15,32-47"``
``aer_dev_correctable``,              lines ``"<Error Name With Spaces> <count>"`` and a
``aer_dev_nonfatal``,                 ``TOTAL_ERR_COR`` / ``TOTAL_ERR_NONFATAL`` /
``aer_dev_fatal``                     ``TOTAL_ERR_FATAL`` line (4.19+, AER-capable devices)
``aer_rootport_total_err_cor``,       one count each, root ports and RCECs only; they add up
``_fatal``, ``_nonfatal``             every error reported from below the port
====================================  =====================================================

AER counts are cumulative since boot (or since the device was enumerated).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, TypeVar

from nicwatch.model import AerCounters, PciDevice, PcieLink, PciePath, Reading
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.sysfs import OpenAttributes, descriptor_share, read_attribute

T = TypeVar("T")

EMPTY: Mapping[str, int] = MappingProxyType({})

# A PCI function directory name, domain:bus:device.function. The kernel prints the domain
# with %04x, so VMD domains (0x10000 and up) have more than four digits.
BDF = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")

# Children a netdev's ``device`` link may point at whose parent is the PCI function
# (virtio_net's virtioN, mlx5 sub-functions on the auxiliary bus). Any other non-PCI device
# (a USB interface, a VMBus channel) is not a PCI function even though a PCI host
# controller sits somewhere above it.
PCI_CHILD_SUBSYSTEMS = frozenset({"virtio", "auxiliary"})

U64_MAX = 2**64 - 1
MAX_LINK_WIDTH = 63  # the Negotiated/Max Link Width fields are 6 bits
ALL_ONES_WIDTH = 63  # what a config read of a device that does not answer (0xffff) gives
# enum pcie_link_width PCIE_LNK_WIDTH_UNKNOWN (include/linux/pci.h): pcie_get_width_cap(),
# which max_link_width prints, returns it when PCI_EXP_LNKCAP reads 0, as it does for a
# function without link registers (pcie_cap_has_lnkctl() false: a root complex integrated
# endpoint, e.g. an e1000e on QEMU q35's root bus). current_link_width is the 6-bit field.
WIDTH_UNKNOWN = 0xFF
_POWER_STATES = re.compile(r"D0|D1|D2|D3hot|D3cold|unknown|error")
MAX_CPUS = 16384  # above any kernel's NR_CPUS; bounds a garbage range like "0-99999999"
MAX_NUMA_NODES = 1024  # 1 << the largest NODES_SHIFT any architecture allows

_SPEED = re.compile(r"([0-9]{1,4}(?:\.[0-9]{1,4})?) GT/s(?: PCIe)?")
_UNKNOWN_SPEEDS = frozenset({"Unknown", "Unknown speed"})
_UNSIGNED = re.compile(r"[0-9]{1,20}")
_SIGNED = re.compile(r"-?[0-9]{1,20}")
_HEX = re.compile(r"0x[0-9a-fA-F]{1,16}")
_CPU_RANGE = re.compile(r"([0-9]{1,6})(?:-([0-9]{1,6}))?")

_BUS_PCI_DEVICES = Path("bus/pci/devices")
_CLASS_NET = Path("class/net")

_LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
_AER_DEV_FILES = ("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal")
_AER_ROOTPORT_FILES = (
    "aer_rootport_total_err_cor",
    "aer_rootport_total_err_nonfatal",
    "aer_rootport_total_err_fatal",
)
_AER_TOTAL_PREFIX = "TOTAL_ERR_"


# --------------------------------------------------------------------------- records


# --------------------------------------------------------------------------- parsers
# Each parser takes the stripped text of one attribute and raises ValueError on garbage.


def parse_link_speed(text: str) -> float | None:
    """GT/s per lane from ``current_link_speed`` / ``max_link_speed``.

    Accepts ``"2.5 GT/s PCIe"`` ... ``"64.0 GT/s PCIe"`` (kernel 5.7+) and ``"2.5 GT/s"``,
    ``"5 GT/s"``, ``"8 GT/s"``, ``"16 GT/s"`` (5.6 and older). ``"Unknown"`` (5.7+),
    ``"Unknown speed"`` (older) and a zero speed are unknown: ``None``.
    """
    if text in _UNKNOWN_SPEEDS:
        return None
    match = _SPEED.fullmatch(text)
    if match is None:
        raise ValueError("not a link speed")
    speed = float(match.group(1))
    return speed if speed > 0 else None


def parse_link_width(text: str) -> int | None:
    """Lanes from ``current_link_width`` / ``max_link_width``; 0 (link down) and 63 (the
    all-ones value of a config read the device did not answer: D3cold, surprise down, a
    link in recovery) are unknown, ``None``."""
    width = parse_unsigned(text)
    if width > MAX_LINK_WIDTH:
        raise ValueError("wider than the 6-bit link width field")
    return None if width in (0, ALL_ONES_WIDTH) else width


def parse_max_link_width(text: str) -> int | None:
    """Lanes from ``max_link_width``: as :func:`parse_link_width`, and 255 (the kernel's
    PCIE_LNK_WIDTH_UNKNOWN, a function without link registers) is unknown, ``None``."""
    if _UNSIGNED.fullmatch(text) is not None and int(text) == WIDTH_UNKNOWN:
        return None
    return parse_link_width(text)


def parse_unsigned(text: str) -> int:
    """A decimal count that fits in 64 bits."""
    if _UNSIGNED.fullmatch(text) is None:
        raise ValueError("not an unsigned decimal")
    value = int(text)
    if value > U64_MAX:
        raise ValueError("larger than 64 bits")
    return value


def parse_hex_id(maximum: int) -> Callable[[str], int]:
    """A parser for ``0x``-prefixed identifiers (``vendor``, ``device``, ``class``)."""

    def parse(text: str) -> int:
        if _HEX.fullmatch(text) is None:
            raise ValueError("not a 0x-prefixed hexadecimal number")
        value = int(text, 16)
        if value > maximum:
            raise ValueError(f"larger than {maximum:#x}")
        return value

    return parse


def parse_power_state(text: str) -> str:
    """``power_state``: the kernel's ``pci_power_name()``."""
    if _POWER_STATES.fullmatch(text) is None:
        raise ValueError("not a PCI power state")
    return text


def parse_numa_node(text: str) -> int | None:
    """``numa_node``: a node number, or -1 (``None``) when the platform gives none."""
    if _SIGNED.fullmatch(text) is None:
        raise ValueError("not a decimal")
    node = int(text)
    if node < -1 or node >= MAX_NUMA_NODES:
        raise ValueError("not a NUMA node number")
    return None if node == -1 else node


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``local_cpulist`` (``"0-15,32-47"``) as sorted CPU numbers."""
    cpus: set[int] = set()
    for part in text.split(","):
        match = _CPU_RANGE.fullmatch(part)
        if match is None:
            raise ValueError("not a CPU list")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first or last >= MAX_CPUS:
            raise ValueError("not a CPU range")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def parse_aer_counts(text: str) -> tuple[dict[str, int], int | None, list[str]]:
    """One ``aer_dev_*`` file: ``({name: count}, TOTAL_ERR_* count, unparsable lines)``.

    Lines are ``"<name> <count>"`` where the name may contain spaces, so each line is split
    once from the right; newer kernels add names, all are kept. A line that does not end in
    a count is returned as unparsable, the other lines still count.
    """
    counts: dict[str, int] = {}
    total: int | None = None
    bad: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.rsplit(None, 1)
        try:
            if len(parts) != 2:
                raise ValueError("no name")
            count = parse_unsigned(parts[1])
        except ValueError:
            bad.append(line)
            continue
        name = parts[0].strip()
        if name.startswith(_AER_TOTAL_PREFIX):
            total = count
        else:
            counts[name] = count
    return counts, total, bad


# --------------------------------------------------------------------------- reading


def _excerpt(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


class SysfsReader:
    """Reads attribute files below one sysfs root (through sources.sysfs.read_attribute),
    recording every problem; raises only for the daemon's own faults (OWN_FAULTS).

    A missing file reads as ``None`` silently; a file that is present but unreadable
    (EACCES, EINVAL, EOPNOTSUPP, a directory, ...), larger than a sysfs page allows, empty,
    not UTF-8 or unparsable reads as ``None`` and adds ``"<relative path>: <problem>"`` to
    ``problems``. Files are opened non-blocking so that a stray FIFO cannot hang a poll.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.realpath(root))
        self.problems: list[str] = []

    def note(self, path: Path, problem: str) -> None:
        self.problems.append(f"{self.relative(path)}: {problem}")

    def relative(self, path: Path) -> str:
        """``path`` relative to the root (as it would appear under /sys)."""
        full = self.root / path
        return str(full.relative_to(self.root)) if full.is_relative_to(self.root) else str(full)

    def text(self, path: Path) -> str | None:
        """The stripped contents of one attribute file (``path`` absolute or root-relative)."""
        full = self.root / path
        text, problem = read_attribute(full)
        if problem is not None:
            self.note(full, problem)
        return text

    def value(self, path: Path, parse: Callable[[str], T]) -> T | None:
        """One attribute through ``parse``; garbage is noted and read as ``None``."""
        text = self.text(path)
        if text is None:
            return None
        try:
            return parse(text)
        except ValueError as exc:
            self.note(path, f"unparsable {_excerpt(text)} ({exc})")
            return None

    def resolve(self, path: Path) -> Path | None:
        """The real path of an existing entry (following links) if it stays inside the
        root; ``None`` when absent. A link that dangles or leads out of the root is noted."""
        full = self.root / path
        if not os.path.lexists(full):
            return None
        real = Path(os.path.realpath(full))
        if not real.is_relative_to(self.root):
            self.note(full, "link leads outside the sysfs root")
            return None
        if not real.exists():
            self.note(full, "dangling link")
            return None
        return real

    def subsystem(self, directory: Path) -> str | None:
        """The bus or class a device directory belongs to (basename of its ``subsystem``)."""
        try:
            return os.path.basename(os.readlink(directory / "subsystem"))
        except OSError:
            return None


# --------------------------------------------------------------------------- locating


def pci_function_for_netdev(root: str | os.PathLike[str], ifname: str) -> str | None:
    """The PCI address of the function behind ``/sys/class/net/<ifname>/device``.

    Follows the link and walks up from a virtio or auxiliary child to the PCI function.
    A virtual function's own address is returned (it is the NIC's identity);
    :func:`read_pcie_path` follows its ``physfn`` for the link. ``None``: no such netdev,
    no device (veth, bridge, lo), or a device that is not a PCI function (USB, VMBus).
    """
    if not ifname or "/" in ifname or ifname in (".", ".."):
        return None
    reader = SysfsReader(root)
    device = reader.resolve(_CLASS_NET / ifname / "device")
    return None if device is None else pci_function_at_or_above(reader, device)


def pci_function_for_device_path(root: str | os.PathLike[str], device_path: str) -> str | None:
    """Like :func:`pci_function_for_netdev`, from a netdev's resolved ``device`` path given
    relative to the sysfs root (``NetClass.device_path``, e.g.
    ``"devices/pci0000:00/0000:00:03.0/virtio2"``)."""
    reader = SysfsReader(root)
    device = reader.resolve(Path(device_path.lstrip("/")))
    return None if device is None else pci_function_at_or_above(reader, device)


def pci_function_at_or_above(reader: SysfsReader, device: Path) -> str | None:
    """The PCI address of ``device`` (a resolved device directory) or of the PCI function
    it hangs off when it is a virtio or auxiliary child; ``None`` for anything else."""
    current = device
    while current != reader.root and current.is_relative_to(reader.root):
        if BDF.fullmatch(current.name):
            return current.name
        if reader.subsystem(current) not in PCI_CHILD_SUBSYSTEMS:
            return None
        current = current.parent
    return None


def _upstream_dirs(function_dir: Path, root: Path) -> Iterator[Path]:
    """The function directory, then each parent directory named like a PCI address, up
    to the host bridge (``pci<domain>:<bus>``)."""
    current = function_dir
    while current != root and BDF.fullmatch(current.name):
        yield current
        current = current.parent


# --------------------------------------------------------------------------- reading a path


def read_pcie_path(root: str | os.PathLike[str], bdf: str) -> PciePath:
    """Read ``bus/pci/devices/<bdf>`` and every PCI device above it (see :class:`PciePath`)."""
    return _read_path(root, bdf)[0]


def _read_path(root: str | os.PathLike[str], bdf: str) -> tuple[PciePath, tuple[Path, ...]]:
    """:func:`read_pcie_path`, and the directory of each hop (for :func:`refresh_counters`)."""
    reader = SysfsReader(root)
    if not BDF.fullmatch(bdf):
        reader.note(_BUS_PCI_DEVICES, f"{bdf!r} is not a PCI address")
        return PciePath(function=bdf, physfn=None, hops=(), problems=tuple(reader.problems)), ()
    function_dir = reader.resolve(_BUS_PCI_DEVICES / bdf)
    if function_dir is None:
        reader.note(_BUS_PCI_DEVICES / bdf, "no such PCI function")
        return PciePath(function=bdf, physfn=None, hops=(), problems=tuple(reader.problems)), ()
    pf_dir = reader.resolve(function_dir / "physfn")
    physfn = pf_dir.name if pf_dir is not None and BDF.fullmatch(pf_dir.name) else None
    start = function_dir if physfn is None or pf_dir is None else pf_dir
    dirs = tuple(_upstream_dirs(start, reader.root))
    hops = tuple(read_pci_device(reader, d) for d in dirs)
    return (PciePath(function=bdf, physfn=physfn, hops=hops, problems=tuple(reader.problems)),
            dirs)


class _Counters:
    """The AER and power-state files of one path's hops, as strings ready to open (the
    path arithmetic of a whole read costs more than the reads themselves), and the last
    text of each AER file with what it parsed to."""

    __slots__ = ("hops", "parsed")

    def __init__(self, root: str | os.PathLike[str], dirs: tuple[Path, ...]) -> None:
        reader = SysfsReader(root)
        self.hops = tuple((str(d), reader.relative(d)) for d in dirs)
        self.parsed: dict[str, tuple[str, Mapping[str, int], int | None, tuple[str, ...]]] = {}


# What one poll's reads of a file gave (absolute path -> (text, problem)): the bridges and
# root ports above several interfaces are read once a poll, not once per interface.
Reads = dict[str, tuple[str | None, str | None]]


def refresh_counters(root: str | os.PathLike[str], path: PciePath,
                     counters: _Counters | tuple[Path, ...], reads: Reads | None = None,
                     files: OpenAttributes | None = None) -> PciePath:
    """``path`` with each hop's AER counts and power state read again (``counters``: from
    :func:`_read_path`'s directories); the other attributes, and the problems about them,
    are the reading's. Only the files the reading found are read: AER capability and the
    power_state attribute do not come and go while a device stays bound (the whole path is
    read again within the safety period anyway). ``reads``: this poll's reads so far, shared
    between the paths of one poll; ``files``: files kept open (the live /sys)."""
    if not isinstance(counters, _Counters):
        counters = _Counters(root, counters)
    if not counters.hops:
        return path
    problems: list[str] = []
    reread: set[str] = set()  # the files read again, relative to the root
    reads = {} if reads is None else reads
    hops = tuple(_refresh_device(counters, hop, where, reread, problems, reads, files)
                 for hop, where in zip(path.hops, counters.hops, strict=True))
    kept = tuple(p for p in path.problems if p.split(": ", 1)[0] not in reread)
    return replace(path, hops=hops, problems=kept + tuple(problems))


def _refresh_device(counters: _Counters, hop: PciDevice, where: tuple[str, str],
                    reread: set[str], problems: list[str], reads: Reads,
                    files: OpenAttributes | None) -> PciDevice:
    directory, relative = where

    def text(name: str) -> str | None:
        rel = f"{relative}/{name}"
        reread.add(rel)
        full = f"{directory}/{name}"
        read = reads.get(full)
        if read is None:
            read = reads[full] = (files.read(full) if files is not None
                                  else read_attribute(full))
        value, problem = read
        if problem is not None:
            problems.append(f"{rel}: {problem}")
        return value

    def aer_file(name: str) -> tuple[Mapping[str, int], int | None]:
        raw = text(name)
        if raw is None:
            return EMPTY, None
        key = f"{directory}/{name}"
        last = counters.parsed.get(key)
        if last is None or last[0] != raw:
            found, total, bad = parse_aer_counts(raw)
            last = (raw, MappingProxyType(found), total,
                    tuple(f"{relative}/{name}: unparsable line {_excerpt(line)}" for line in bad))
            counters.parsed[key] = last
        problems.extend(last[3])
        return last[1], last[2]

    def value(name: str, parse: Callable[[str], T]) -> T | None:
        raw = text(name)
        if raw is None:
            return None
        try:
            return parse(raw)
        except ValueError as exc:
            problems.append(f"{relative}/{name}: unparsable {_excerpt(raw)} ({exc})")
            return None

    aer = hop.aer
    if aer is not None:
        correctable, total_correctable = aer_file("aer_dev_correctable")
        nonfatal, total_nonfatal = aer_file("aer_dev_nonfatal")
        fatal, total_fatal = aer_file("aer_dev_fatal")
        cor, nonfat, fat = (
            None if was is None else value(name, parse_unsigned)
            for name, was in zip(_AER_ROOTPORT_FILES, (aer.rootport_total_correctable,
                                                       aer.rootport_total_nonfatal,
                                                       aer.rootport_total_fatal), strict=True))
        aer = AerCounters(
            correctable=correctable, nonfatal=nonfatal, fatal=fatal,
            total_correctable=total_correctable, total_nonfatal=total_nonfatal,
            total_fatal=total_fatal, rootport_total_correctable=cor,
            rootport_total_nonfatal=nonfat, rootport_total_fatal=fat)
    power = None if hop.power_state is None else value("power_state", parse_power_state)
    return replace(hop, aer=aer, power_state=power)


def read_pci_device(reader: SysfsReader, directory: Path) -> PciDevice:
    """Identity, locality, link and AER attributes of one PCI device directory."""
    return PciDevice(
        bdf=directory.name,
        vendor_id=reader.value(directory / "vendor", parse_hex_id(0xFFFF)),
        device_id=reader.value(directory / "device", parse_hex_id(0xFFFF)),
        class_code=reader.value(directory / "class", parse_hex_id(0xFFFFFF)),
        numa_node=reader.value(directory / "numa_node", parse_numa_node),
        local_cpus=reader.value(directory / "local_cpulist", parse_cpulist),
        link=read_link(reader, directory),
        aer=read_aer(reader, directory),
        power_state=reader.value(directory / "power_state", parse_power_state),
    )


def read_link(reader: SysfsReader, directory: Path) -> PcieLink | None:
    """The four ``*_link_*`` attributes together; ``None`` when none exists (not PCIe).

    Some but not all of them present is noted as a problem (the missing ones are ``None``,
    never 0).
    """
    present = {name for name in _LINK_FILES if os.path.lexists(directory / name)}
    if not present:
        return None
    for name in _LINK_FILES:
        if name not in present:
            reader.note(directory / name, "missing while other link attributes exist")
    return PcieLink(
        current_speed_gts=reader.value(directory / "current_link_speed", parse_link_speed),
        current_width=reader.value(directory / "current_link_width", parse_link_width),
        max_speed_gts=reader.value(directory / "max_link_speed", parse_link_speed),
        max_width=reader.value(directory / "max_link_width", parse_max_link_width),
    )


def read_aer(reader: SysfsReader, directory: Path) -> AerCounters | None:
    """The ``aer_dev_*`` and ``aer_rootport_total_err_*`` attributes; ``None`` when the
    device has none of them (no AER capability, or a kernel older than 4.19)."""
    if not any(os.path.lexists(directory / n) for n in _AER_DEV_FILES + _AER_ROOTPORT_FILES):
        return None
    correctable, total_correctable = read_aer_file(reader, directory / "aer_dev_correctable")
    nonfatal, total_nonfatal = read_aer_file(reader, directory / "aer_dev_nonfatal")
    fatal, total_fatal = read_aer_file(reader, directory / "aer_dev_fatal")
    cor, nonfat, fat = (reader.value(directory / n, parse_unsigned) for n in _AER_ROOTPORT_FILES)
    return AerCounters(
        correctable=correctable,
        nonfatal=nonfatal,
        fatal=fatal,
        total_correctable=total_correctable,
        total_nonfatal=total_nonfatal,
        total_fatal=total_fatal,
        rootport_total_correctable=cor,
        rootport_total_nonfatal=nonfat,
        rootport_total_fatal=fat,
    )


def read_aer_file(reader: SysfsReader, path: Path) -> tuple[Mapping[str, int], int | None]:
    """One ``aer_dev_*`` file as (counts by error name, its TOTAL_ERR_* line)."""
    text = reader.text(path)
    if text is None:
        return EMPTY, None
    counts, total, bad = parse_aer_counts(text)
    for line in bad:
        reader.note(path, f"unparsable line {_excerpt(line)}")
    return MappingProxyType(counts), total


# Without a uevent or a change of the interface's link state, a path's link attributes and
# identity are re-read this often (seconds), so a link that retrains to a lower speed or width
# while the interface's carrier stays up (nothing tells the daemon) is seen within this
# period; NicPcieLinkDegraded waits 10 minutes before firing. AER counts and the power state
# keep the PCIe cadence (``refresh``).
LINK_SAFETY = 60.0


class SysfsPciSource:
    """The PCIe path of each interface's PCI function as a :class:`~nicwatch.sources.Source`
    (the ``pcie`` part of its Reading); files present but unreadable or garbage are one
    error per interface per poll, naming them.

    With a ``refresh``, a path is read whole when it is first seen, when its interface's
    ifindex, device or link state (carrier, carrier changes, operational state) differs
    from the last poll's (what a uevent (add, remove, a driver rebind) or a link that
    retrains with its port leaves behind), and otherwise every ``safety`` seconds; its AER
    counts and power state are re-read every ``refresh`` seconds. Without one, every file
    every poll.
    """

    name = "sysfs_pci"
    fills: ClassVar[frozenset[str]] = frozenset({"pcie"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, root: str | os.PathLike[str], refresh: float = 0.0,
                 safety: float | None = None, keep_open: bool = False) -> None:
        """``refresh``: seconds AER counts and the power state are reused (0: every file
        read every poll); ``safety``: seconds the rest of a path is reused while nothing
        says it changed (default LINK_SAFETY with a ``refresh``, else 0); ``keep_open``:
        the AER and power-state files re-read between whole reads are kept open and re-read
        with pread (the live /sys only: a fixture tree's files may be replaced)."""
        self.root = root
        # at most an eighth of the descriptor limit (4-7 files a hop); the rest read as usual
        self.files = OpenAttributes(descriptor_share(8)) if keep_open else None
        self.refresh = refresh
        self.safety = (LINK_SAFETY if refresh else 0.0) if safety is None else safety
        # (interface, PCI address) -> (link key, path read at, counters read at, path, files)
        self._paths: dict[tuple[str, str],
                          tuple[Hashable, float, float, PciePath, _Counters]] = {}
        self.full_reads = 0  # whole paths read (for tests and benchmarks)

    @classmethod
    def open(cls, options: SourceOptions) -> SysfsPciSource:
        return cls(options.sysfs, options.pcie_refresh,
                   keep_open=os.path.realpath(options.sysfs) == "/sys")

    def read(self, poll: Poll) -> None:
        """Reuses what is due for neither kind of re-read (a 10% margin on both periods, so
        polls at exactly that interval all read)."""
        now = time.monotonic()  # the cadence's own clock, not the Readings' (injectable) one
        paths = {}
        reads: Reads = {}
        for nc in poll.each():
            if not nc.pci_address:
                continue
            key = (nc.name, nc.pci_address)
            link = (nc.ifindex, nc.device_path, nc.carrier, nc.carrier_changes, nc.operstate)
            entry = self._paths.get(key)
            if (entry is None or entry[0] != link or now - entry[1] >= self.safety * 0.9
                    or not self.refresh):
                path, dirs = _read_path(self.root, nc.pci_address)
                self.full_reads += 1
                entry = (link, now, now, path, _Counters(self.root, dirs))
            elif now - entry[2] >= self.refresh * 0.9:
                entry = (link, entry[1], now,
                         refresh_counters(self.root, entry[3], entry[4], reads, self.files),
                         entry[4])
            paths[key] = entry
            path = entry[3]
            poll.put(nc.name, Reading.pcie, path)
            if path.problems:
                poll.error(nc.name, self.name, "invalid", "; ".join(path.problems))
        if self.files is not None:  # the files of devices no path leads through any more
            # (a file of a device removed and added again answers ENODEV and is reopened)
            current = {d for entry in paths.values() for d, _ in entry[4].hops}
            for gone in {d for entry in self._paths.values() for d, _ in entry[4].hops} - current:
                self.files.close_all(f"{gone}/")
        self._paths = paths

    def close(self) -> None:
        if self.files is not None:
            self.files.close_all()
