"""NIC ASIC temperature: the hwmon device a NIC driver registers under its PCI function.

mlx5_core, bnxt_en and ice call ``hwmon_device_register_with_info()`` on the PCI function's
device, so the sensors appear below the function, ``<function>/hwmon/hwmonN/`` (also linked
from ``class/hwmon/hwmonN``), in the kernel's hwmon sysfs ABI
(Documentation/hwmon/sysfs-interface.rst: millidegrees Celsius, one ``tempN_*`` group per
channel). What each driver registers (its ``hwmon_channel_info`` and ``is_visible``):

========  ===================================================================================
driver    files (mlx5/core/hwmon.c, bnxt/bnxt_hwmon.c, ice/ice_hwmon.c)
========  ===================================================================================
mlx5      ``name`` = ``mlx5``; one channel per sensor of the MTCAP sensor map (the ASIC,
          ``temp1_label`` = the MTMP sensor name, e.g. ``asic``, else ``sensor<index>``) plus
          one for the module in the cage when it reports a temperature (``Module<n>``):
          ``tempN_input``, ``tempN_highest`` (the maximum since reset), ``tempN_crit``
          (MTMP ``temp_threshold_hi``), ``tempN_label``; ``tempN_reset_history`` (write only,
          never touched). Every read is one MTMP register access to the firmware. One
          device per PCI function (each port of a dual-port card has its own).
bnxt_en   ``name`` = ``bnxt_en``; ``temp1_input``, and where the firmware reports its
          thresholds ``temp1_max`` (warning), ``temp1_crit``, ``temp1_emergency`` (fatal),
          their ``*_alarm`` files (not read: each is one more firmware query and says no
          more than input against threshold), ``temp1_shutdown`` when set in NVM.
ice       ``name`` = ``ice``; ``temp1_input``, ``temp1_max`` (warning), ``temp1_crit``,
          ``temp1_emergency`` (fatal). Registered on PF 0 of the device only
          (``ice_is_internal_reading_supported``: ``pf->hw.pf_id`` 0, firmware 4.30+).
========  ===================================================================================

Mapping: an interface gets the hwmon device of its own PCI function. Where that has none
and its driver is one that registers on one PF per chip only (``one_per_chip``, which the
driver tables say: ice), it gets the one of the lowest-numbered function of the same slot
(same domain:bus:device) bound to the same driver: the same chip. mlx5 and bnxt_en
register on every PF, and an mlx5 device also carries the sensor of its own port's
module, so a function of theirs without one borrows nothing. A VF (a function with a
``physfn`` link) never borrows.

Cost: labels and thresholds are read once per device and ``STATIC_SECONDS``, and so is which
hwmon device an interface maps to (while that directory exists); ``tempN_input`` and
``tempN_highest`` every poll, once per device however many interfaces share it, from paths
prepared with the labels and, on the live ``/sys``, through files kept open and re-read with
``pread`` (sources.sysfs.OpenAttributes). On the simulated 30-port ConnectX host the source
cost 3.3 ms a poll before, mostly path objects built per file and poll.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from nicwatch.model import HwmonTemperature, NetClass, NicHwmon, Reading
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.sysfs import OpenAttributes, descriptor_share, read_attribute
from nicwatch.sources.sysfs_pci import SysfsReader

STATIC_SECONDS = 300.0  # labels and thresholds are re-read this often (they are constants)
_TEMP_FILE = re.compile(r"temp([1-9][0-9]{0,2})_(input|label)")
_HWMON = re.compile(r"hwmon([0-9]+)")
_BDF = re.compile(r"([0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2})\.([0-7])")
# threshold field of HwmonTemperature -> file suffix
_THRESHOLDS = (("warning", "max"), ("critical", "crit"), ("emergency", "emergency"),
               ("shutdown", "shutdown"))


def _millidegrees(text: str) -> float:
    return int(text) / 1000


def _function_dir(root: Path, nc: NetClass) -> Path | None:
    if nc.device_path is None or nc.pci_address is None or os.path.isabs(nc.device_path):
        return None  # (absolute: the device resolved outside the sysfs root)
    path = root / nc.device_path
    for node in (path, *path.parents):
        if node.name == nc.pci_address:
            return node
        if node == root:
            break
    return None


def _hwmon_dirs(function: Path) -> list[Path]:
    try:
        names = os.listdir(function / "hwmon")
    except OSError:
        return []
    found = sorted((int(m.group(1)), n) for n in names if (m := _HWMON.fullmatch(n)))
    return [function / "hwmon" / n for _, n in found]


def _driver(function: Path) -> str | None:
    try:
        return os.path.basename(os.readlink(function / "driver"))
    except OSError:
        return None


def hwmon_dir_of(root: Path, nc: NetClass,
                 one_per_chip: frozenset[str] = frozenset()) -> tuple[Path, str] | None:
    """The hwmon directory that reports the chip behind ``nc`` and the PCI function it
    hangs under: its own function's, else, for a driver of ``one_per_chip``, the
    lowest-numbered same-slot PF's with the same driver; None when there is none."""
    function = _function_dir(root, nc)
    if function is None:
        return None
    own = _hwmon_dirs(function)
    if own:
        return own[0], function.name
    slot = _BDF.fullmatch(function.name)
    if slot is None or os.path.lexists(function / "physfn"):
        return None
    driver = _driver(function)
    if driver not in one_per_chip:
        return None
    for number in range(8):
        sibling = function.parent / f"{slot.group(1)}.{number}"
        if (sibling == function or os.path.lexists(sibling / "physfn")
                or _driver(sibling) != driver):
            continue
        dirs = _hwmon_dirs(sibling)
        if dirs:
            return dirs[0], sibling.name
    return None


class _Static:
    """Labels and thresholds of one hwmon device, with the time they were read, and the
    files read every poll: per channel (number, label, ``tempN_input``, ``tempN_highest``
    or None where the driver has none)."""

    __slots__ = ("channels", "name", "read_at", "thresholds")

    def __init__(self, name: str, channels: tuple[tuple[int, str, str, str | None], ...],
                 thresholds: dict[int, dict[str, float | None]], read_at: float) -> None:
        self.name, self.channels, self.thresholds = name, channels, thresholds
        self.read_at = read_at


def _read_static(reader: SysfsReader, directory: Path, now: float) -> _Static | None:
    name = reader.text(directory / "name")
    if name is None:
        return None
    try:
        entries = os.listdir(directory)
    except OSError as e:
        reader.note(directory, f"unlistable: {os.strerror(e.errno or 0)}")
        return None
    numbers = sorted({int(m.group(1)) for e in entries if (m := _TEMP_FILE.fullmatch(e))})
    base = str(reader.root / directory)
    channels = []
    thresholds: dict[int, dict[str, float | None]] = {}
    for n in numbers:
        label = reader.text(directory / f"temp{n}_label") if f"temp{n}_label" in entries \
            else None
        channels.append((n, label or f"temp{n}", f"{base}/temp{n}_input",
                         f"{base}/temp{n}_highest" if f"temp{n}_highest" in entries else None))
        thresholds[n] = {
            field: (reader.value(directory / f"temp{n}_{suffix}", _millidegrees)
                    if f"temp{n}_{suffix}" in entries else None)
            for field, suffix in _THRESHOLDS}
    return _Static(name, tuple(channels), thresholds, now)


def _celsius(reader: SysfsReader, path: str, files: OpenAttributes | None) -> float | None:
    """One millidegree file read now (kept open when ``files``); a problem is noted."""
    text, problem = files.read(path) if files is not None else read_attribute(path)
    if text is not None:
        try:
            return _millidegrees(text)
        except ValueError:
            problem = f"unparsable {text[:40]!r}"
    if problem is not None:
        reader.note(Path(path), problem)
    return None


def read_hwmon(reader: SysfsReader, directory: Path, pci_address: str,
               static: _Static, files: OpenAttributes | None = None) -> NicHwmon:
    """The temperatures of one hwmon device now (``static``: its labels, thresholds and
    the files to read; ``files``: kept open between polls)."""
    temps = []
    for n, label, current, highest in static.channels:
        temps.append(HwmonTemperature(
            channel=n, label=label,
            celsius=_celsius(reader, current, files),
            highest=None if highest is None else _celsius(reader, highest, files),
            **static.thresholds[n]))
    return NicHwmon(hwmon=directory.name, name=static.name, pci_address=pci_address,
                    temperatures=tuple(temps))


class SysfsHwmonSource:
    """NIC hwmon devices as a :class:`~nicwatch.sources.Source`: the ``hwmon`` part of each
    interface whose chip has one (absent elsewhere: absent is not zero)."""

    name = "sysfs_hwmon"
    fills: ClassVar[frozenset[str]] = frozenset({"hwmon"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, root: str | os.PathLike[str],
                 clock: Callable[[], float] = time.monotonic, keep_open: bool = False,
                 one_per_chip: frozenset[str] = frozenset()) -> None:
        self.root = Path(os.path.realpath(root))
        # drivers that register one hwmon device per chip, on one PF (the driver tables'
        # hwmon_one_per_chip, handed in): the other PFs of the slot read that one
        self.one_per_chip = one_per_chip
        self.clock = clock
        self._static: dict[Path, _Static] = {}
        # (interface, device path) -> (when found, its hwmon directory and PCI function)
        self._found: dict[tuple[str, str | None], tuple[float, tuple[Path, str]]] = {}
        # On the live /sys only: a fixture tree's files may be replaced between polls
        # at most a sixteenth of the descriptor limit (two files a channel)
        self.files = OpenAttributes(descriptor_share(16)) if keep_open else None

    @classmethod
    def open(cls, options: SourceOptions) -> SysfsHwmonSource:
        return cls(options.sysfs, keep_open=os.path.realpath(options.sysfs) == "/sys",
                   one_per_chip=options.hwmon_one_per_chip)

    def _hwmon_dir(self, nc: NetClass, now: float) -> tuple[Path, str] | None:
        """hwmon_dir_of, kept for STATIC_SECONDS while the directory exists: a device
        unregistered is gone at once, and an interface without one is looked up again
        every poll (nothing is kept for it), so a device registered later is found at once."""
        key = (nc.name, nc.device_path)
        kept = self._found.get(key)
        if kept is not None and now - kept[0] < STATIC_SECONDS and os.path.isdir(kept[1][0]):
            return kept[1]
        found = hwmon_dir_of(self.root, nc, self.one_per_chip)
        if found is None:
            self._found.pop(key, None)
        else:
            self._found[key] = (now, found)
        return found

    def read(self, poll: Poll) -> None:
        now = self.clock()
        done: dict[Path, tuple[NicHwmon | None, list[str]]] = {}
        seen: set[Path] = set()
        names: set[tuple[str, str | None]] = set()
        for nc in poll.each():
            names.add((nc.name, nc.device_path))
            found = self._hwmon_dir(nc, now)
            if found is None:
                continue
            directory, pci_address = found
            seen.add(directory)
            if directory not in done:
                done[directory] = self._read(directory, pci_address, now)
            hwmon, problems = done[directory]
            if hwmon is not None:
                poll.put(nc.name, Reading.hwmon, hwmon)
            if problems:
                poll.error(nc.name, self.name, "invalid", "; ".join(problems))
        for gone in set(self._static) - seen:  # a device unregistered (driver unbound)
            del self._static[gone]
            if self.files is not None:
                self.files.close_all(f"{gone}/")
        for key in set(self._found) - names:
            del self._found[key]

    def _read(self, directory: Path, pci_address: str,
              now: float) -> tuple[NicHwmon | None, list[str]]:
        reader = SysfsReader(self.root)
        static = self._static.get(directory)
        if static is None or now - static.read_at >= STATIC_SECONDS:
            static = _read_static(reader, directory, now)
            if static is None:
                self._static.pop(directory, None)
                return None, list(reader.problems)
            self._static[directory] = static
        return (read_hwmon(reader, directory, pci_address, static, self.files),
                list(reader.problems))

    def close(self) -> None:
        if self.files is not None:
            self.files.close_all()
