"""The legacy SIOCETHTOOL ioctls: driver statistics (`ethtool -S`), driver info, rings,
channels and the permanent MAC, in-process.

Driver statistics have no netlink equivalent. Their name list changes at runtime (mlx5 adds
PFC counters when PFC is enabled, veth/virtio follow the channel count), so:
  * GSTATS always carries the count we hold names for. Kernels with commit 7b07be1ff1cb
    (6.18.3, 5.15.y stable) then answer n_stats = 0 on a mismatch instead of overflowing.
  * The buffer has slack for older kernels, which write their current count regardless.
  * On any mismatch the names are re-read (GSSET_INFO + GSTRINGS) and GSTATS retried.
  * Only as many values as the kernel reported are ever read from the buffer.
pyroute2's IoctlEthtool.get_statistics() sends n_stats = 0 with a buffer sized for cached
names and overruns it when the set grows; it is deliberately not used.
Layouts: include/uapi/linux/ethtool.h.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import socket
import struct
import time
from collections.abc import Callable
from typing import ClassVar, Protocol, TypeVar, runtime_checkable

from nicwatch.model import Channels, DriverInfo, Reading, Rings, StatSet
from nicwatch.sources import Poll, SourceOptions, errno_name

SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x03
ETHTOOL_GRINGPARAM = 0x10
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GPERMADDR = 0x20
ETHTOOL_GSSET_INFO = 0x37
ETHTOOL_GCHANNELS = 0x3C
ETHTOOL_GMODULEINFO = 0x42
ETHTOOL_GMODULEEEPROM = 0x43
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
MAX_ADDR_LEN = 32
SLACK = 64  # extra u64 slots for kernels without the mismatch check
_T = TypeVar("_T")

_DRVINFO = struct.Struct("=I32s32s32s32s32s12sIIIII")
_SSET_INFO = struct.Struct("=IIQI")
_U32X9 = struct.Struct("=9I")
_MODINFO = struct.Struct("=III32x")  # struct ethtool_modinfo: cmd, type, eeprom_len, reserved[8]
_EEPROM = struct.Struct("=IIII")  # struct ethtool_eeprom: cmd, magic, offset, len; then data


class EthtoolError(OSError):
    """An ioctl failed; ``kind`` is the errno name (EOPNOTSUPP, ENODEV, EPERM, ...)."""

    @property
    def kind(self) -> str:
        return errno_name(self.errno)


class StatSetChanging(EthtoolError):
    """The stat set changed again while it was being re-read."""


_DRVINFO_REQUEST = _DRVINFO.pack(ETHTOOL_GDRVINFO, *[b""] * 6, *[0] * 5)


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _buffer(data: bytes) -> ctypes.Array[ctypes.c_char]:
    return ctypes.create_string_buffer(data, len(data))


def _or_none(value: int) -> int | None:
    return value or None


class EthtoolIoctl:
    """SIOCETHTOOL on one socket, with a per-interface cache of statistic names."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # ifname -> (its names, their generation). Interfaces with equal name lists (ports
        # of one driver and queue count) share one names tuple: kept once, and one plan
        # serves them all downstream. Looked up by name, so no poll hashes a name list.
        self._names: dict[str, tuple[tuple[str, ...], int]] = {}
        # One generation per distinct name list, so an interface's generation changes only
        # when its own set does, and one that comes back with the same set keeps it.
        self._generations: dict[tuple[str, ...], tuple[tuple[str, ...], int]] = {}

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> EthtoolIoctl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forget(self, ifname: str) -> None:
        """Drop cached names of an interface that went away."""
        self._names.pop(ifname, None)

    def _call(self, ifname: str, buf: ctypes.Array[ctypes.c_char]) -> None:
        ifreq = struct.pack("16sP", ifname.encode(), ctypes.addressof(buf)).ljust(40, b"\0")
        try:
            fcntl.ioctl(self._sock.fileno(), SIOCETHTOOL, ifreq)
        except OSError as e:
            raise EthtoolError(e.errno, f"{ifname}: {e.strerror}") from None

    def driver_info(self, ifname: str) -> DriverInfo:
        buf = _buffer(_DRVINFO_REQUEST)
        self._call(ifname, buf)
        f = _DRVINFO.unpack(buf.raw)
        return DriverInfo(driver=_cstr(f[1]), version=_cstr(f[2]), firmware_version=_cstr(f[3]),
                          bus_info=_cstr(f[4]), n_stats=f[8])

    def stat_count(self, ifname: str) -> int:
        buf = _buffer(_SSET_INFO.pack(ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
        self._call(ifname, buf)
        _, _, mask, count = _SSET_INFO.unpack(buf.raw)
        return count if mask & (1 << ETH_SS_STATS) else 0

    def stat_names(self, ifname: str, count: int) -> tuple[str, ...]:
        buf = ctypes.create_string_buffer(12 + count * ETH_GSTRING_LEN)
        struct.pack_into("=III", buf, 0, ETHTOOL_GSTRINGS, ETH_SS_STATS, count)
        self._call(ifname, buf)
        got = struct.unpack_from("=I", buf, 8)[0]
        if got != count:
            raise StatSetChanging(errno.EAGAIN, f"{ifname}: {got} names returned, {count} asked")
        raw = buf.raw
        return tuple(_cstr(raw[12 + i * ETH_GSTRING_LEN: 12 + (i + 1) * ETH_GSTRING_LEN])
                     for i in range(count))

    def _stat_values(self, ifname: str, count: int) -> tuple[int, ...] | None:
        """GSTATS for ``count`` values; None when the kernel's count differs."""
        buf = ctypes.create_string_buffer(8 + (count + SLACK) * 8)
        struct.pack_into("=II", buf, 0, ETHTOOL_GSTATS, count)
        self._call(ifname, buf)
        got = struct.unpack_from("=I", buf, 4)[0]
        if got != count:
            return None
        return struct.unpack_from(f"={count}Q", buf, 8)

    def statistics(self, ifname: str) -> StatSet:
        """All driver statistics of ``ifname``; names are re-read only when the set changed."""
        known = self._names.get(ifname)
        if known is not None:
            names, generation = known
            values = self._stat_values(ifname, len(names))
            if values is not None:
                return StatSet(names, values, generation)
        for _ in range(3):
            count = self.stat_count(ifname)
            try:
                names = self.stat_names(ifname, count)
            except StatSetChanging:
                continue
            values = self._stat_values(ifname, count)
            if values is not None:
                known = self._generations.get(names)
                if known is None:
                    known = self._generations[names] = (names, len(self._generations) + 1)
                self._names[ifname] = known
                return StatSet(known[0], values, known[1])
        raise StatSetChanging(errno.EAGAIN, f"{ifname}: stat set kept changing while read")

    def rings(self, ifname: str) -> Rings:
        buf = _buffer(_U32X9.pack(ETHTOOL_GRINGPARAM, *[0] * 8))
        self._call(ifname, buf)
        _, rx_max, _, _, tx_max, rx, _, _, tx = _U32X9.unpack(buf.raw)
        return Rings(rx=rx if rx_max else None, tx=tx if tx_max else None,
                     rx_max=_or_none(rx_max), tx_max=_or_none(tx_max))

    def channels(self, ifname: str) -> Channels:
        buf = _buffer(_U32X9.pack(ETHTOOL_GCHANNELS, *[0] * 8))
        self._call(ifname, buf)
        _, rx_m, tx_m, other_m, comb_m, rx, tx, other, comb = _U32X9.unpack(buf.raw)
        return Channels(rx=rx if rx_m else None, tx=tx if tx_m else None,
                        other=other if other_m else None, combined=comb if comb_m else None,
                        rx_max=_or_none(rx_m), tx_max=_or_none(tx_m),
                        other_max=_or_none(other_m), combined_max=_or_none(comb_m))

    def module_info(self, ifname: str) -> tuple[int, int]:
        """ETHTOOL_GMODULEINFO: (ETH_MODULE_SFF_* type, eeprom_len) of the plugged module.
        Needs CAP_NET_ADMIN, like ETHTOOL_GMODULEEEPROM (not in dev_ethtool's unprivileged
        list)."""
        buf = _buffer(_MODINFO.pack(ETHTOOL_GMODULEINFO, 0, 0))
        self._call(ifname, buf)
        _, module_type, length = _MODINFO.unpack(buf.raw)
        return module_type, length

    def module_eeprom(self, ifname: str, offset: int, length: int) -> bytes:
        """ETHTOOL_GMODULEEEPROM: ``length`` bytes from ``offset`` of the module's flat
        legacy layout (the kernel refuses offset + length beyond eeprom_len with EINVAL)."""
        buf = ctypes.create_string_buffer(_EEPROM.size + length)
        _EEPROM.pack_into(buf, 0, ETHTOOL_GMODULEEEPROM, 0, offset, length)
        self._call(ifname, buf)
        got = min(_EEPROM.unpack_from(buf, 0)[3], length)
        return buf.raw[_EEPROM.size:_EEPROM.size + got]

    def perm_address(self, ifname: str) -> str | None:
        buf = ctypes.create_string_buffer(8 + MAX_ADDR_LEN)
        struct.pack_into("=II", buf, 0, ETHTOOL_GPERMADDR, MAX_ADDR_LEN)
        self._call(ifname, buf)
        size = struct.unpack_from("=I", buf, 4)[0]
        addr = buf.raw[8:8 + min(size, MAX_ADDR_LEN)]
        return ":".join(f"{b:02x}" for b in addr) if any(addr) else None


# Not an error: the driver simply does not implement the call.
UNSUPPORTED = {"EOPNOTSUPP"}


@runtime_checkable
class IoctlReader(Protocol):
    """What EthtoolIoctlSource reads through: EthtoolIoctl, or a test double (simulate's
    SimulatedEthtool, tests' RecordedEthtool and ConnectX7Ioctl, the benchmarks' mlx5)."""

    def driver_info(self, ifname: str) -> DriverInfo: ...
    def perm_address(self, ifname: str) -> str | None: ...
    def statistics(self, ifname: str) -> StatSet: ...
    def rings(self, ifname: str) -> Rings: ...
    def channels(self, ifname: str) -> Channels: ...
    def forget(self, ifname: str) -> None: ...
    def close(self) -> None: ...


# Driver info (driver, version, firmware, bus) and the permanent address of a netdev do not
# change while it exists, except the firmware version after a live firmware activation; and a
# driver that answers EOPNOTSUPP for rings or channels does so until it is reloaded. So they
# are asked for once per CONSTANTS_REFRESH per (name, ifindex), and at once again when the
# driver's statistics set changes (a reloaded or re-flashed driver renames counters): two to
# four ioctls per interface and poll fewer. Rings and channels a driver does report are read
# every poll (ethtool -G and -L change them at any time).
CONSTANTS_REFRESH = 60.0


class EthtoolIoctlSource:
    """SIOCETHTOOL as a :class:`~nicwatch.sources.Source`: driver info, permanent address,
    statistics, and the rings and channels the netlink dumps did not report. ``reader``: an
    :class:`EthtoolIoctl`, or a double with the same methods (driver_info, perm_address,
    statistics, rings, channels, forget, close). ``refresh``: seconds driver info, the
    permanent address and unsupported calls are remembered (see CONSTANTS_REFRESH)."""

    name = "ethtool_ioctl"
    fills: ClassVar[frozenset[str]] = frozenset(
        {"driver_info", "perm_address", "stats", "rings", "channels"})
    # rings and channels only where the netlink dumps did not report them
    needs: ClassVar[frozenset[str]] = frozenset({"netlink"})

    def __init__(self, reader: IoctlReader, refresh: float = CONSTANTS_REFRESH,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.reader = reader
        self.refresh = refresh
        self._monotonic = monotonic
        self._known: set[str] = set()
        # (name, ifindex) -> _Constants of the last full read
        self._constants: dict[tuple[str, int | None], _Constants] = {}

    @classmethod
    def open(cls, options: SourceOptions) -> EthtoolIoctlSource:
        return cls(EthtoolIoctl())

    def read(self, poll: Poll) -> None:
        now = self._monotonic()
        kept: dict[tuple[str, int | None], _Constants] = {}
        for nc in poll.each():
            info = poll.get(nc.name, Reading.netlink)
            key = (nc.name, nc.ifindex)
            known = self._constants.get(key)
            if known is not None and now - known.read_at >= self.refresh:
                known = None
            rings = not (info and info.rings)
            channels = not (info and info.channels)
            if known is None:
                known = _Constants(now)
                present = self._ask(poll, nc.name, known, True, True, rings, channels)
            else:
                if known.has_driver_info:
                    poll.put(nc.name, Reading.driver_info, known.driver_info)
                if known.has_perm_address:
                    poll.put(nc.name, Reading.perm_address, known.perm_address)
                skip_rings = rings and "rings" in known.unsupported
                skip_channels = channels and "channels" in known.unsupported
                present = self._ask(poll, nc.name, known, False, True, rings and not skip_rings,
                                    channels and not skip_channels)
                if present and known.generation_changed(poll.get(nc.name, Reading.stats)):
                    # the statistics set changed under remembered constants (a reloaded
                    # driver): ask again for them and for what it did not support
                    known = _Constants(now)
                    present = self._ask(poll, nc.name, known, True, False, skip_rings,
                                        skip_channels)
            if present and not known.failed:
                # records the set they go with
                known.generation_changed(poll.get(nc.name, Reading.stats))
                kept[key] = known
        names = {nc.name for nc in poll.interfaces}
        for name in self._known - names:
            self.reader.forget(name)
        self._known = names
        self._constants = kept

    def _ask(self, poll: Poll, device: str, known: _Constants, constants: bool, stats: bool,
             rings: bool, channels: bool) -> bool:
        """The calls asked for, in this order (driver info and permanent address with
        ``constants``), each result into the device's parts; driver info and address are
        also kept in ``known``, as is each call the driver answered EOPNOTSUPP, and whether
        any other call failed (then nothing is kept: the next poll asks again). False when
        the interface is gone (ENODEV: the rest is not asked)."""
        r = self.reader
        try:
            if constants:
                ok, driver_info = self._call(poll, device, known, "driver_info", r.driver_info)
                if ok:
                    poll.put(device, Reading.driver_info, driver_info)
                    known.driver_info = driver_info
                    known.has_driver_info = True
                ok, address = self._call(poll, device, known, "perm_address", r.perm_address)
                if ok:
                    poll.put(device, Reading.perm_address, address)
                    known.perm_address = address
                    known.has_perm_address = True
            if stats:
                ok, stat_set = self._call(poll, device, known, "stats", r.statistics)
                if ok:
                    poll.put(device, Reading.stats, stat_set)
            if rings:
                ok, ring_sizes = self._call(poll, device, known, "rings", r.rings)
                if ok:
                    poll.put(device, Reading.rings, ring_sizes)
            if channels:
                ok, channel_counts = self._call(poll, device, known, "channels", r.channels)
                if ok:
                    poll.put(device, Reading.channels, channel_counts)
        except _Gone:
            return False
        return True

    def _call(self, poll: Poll, device: str, known: _Constants, key: str,
              call: Callable[[str], _T]) -> tuple[bool, _T | None]:
        """(True, the result), or (False, None) when the driver does not support the call
        (remembered in ``known``, except for the statistics, asked for every poll regardless)
        or it failed (an error of this poll); raises _Gone on ENODEV."""
        try:
            return True, call(device)
        except EthtoolError as e:
            if e.kind in UNSUPPORTED:
                if key != "stats":
                    known.unsupported.add(key)
                return False, None
            poll.error(device, self.name, e.kind, str(e))
            known.failed = True
            if e.kind == "ENODEV":
                raise _Gone() from e
            return False, None

    def close(self) -> None:
        self.reader.close()


class _Gone(Exception):
    """The interface went away during its calls (ENODEV)."""


class _Constants:
    """What one interface's driver answered that does not change every poll."""

    __slots__ = (
        "driver_info",
        "failed",
        "generation",
        "has_driver_info",
        "has_perm_address",
        "perm_address",
        "read_at",
        "unsupported",
    )

    def __init__(self, read_at: float) -> None:
        self.read_at = read_at
        self.driver_info: DriverInfo | None = None  # as last read, when has_driver_info
        self.has_driver_info = False
        self.perm_address: str | None = None  # as last read, when has_perm_address
        self.has_perm_address = False
        self.unsupported: set[str] = set()  # calls the driver answered EOPNOTSUPP
        self.generation: int | None = None  # of the statistics set they were read with
        self.failed = False  # a call failed with a real error: keep nothing

    def generation_changed(self, stats: StatSet | None) -> bool:
        """Whether ``stats`` (this poll's) has another name list than the one these were
        read with; the first set seen is recorded."""
        if stats is None:
            return False
        if self.generation is None:
            self.generation = stats.generation
            return False
        return stats.generation != self.generation
