"""Every port of every RDMA device, with or without a netdev, as a Source.

Per poll, for each RDMA device the device selection keeps (``--collector.rdma.device-include``
/ ``-exclude``, applied to the device's name before anything of it is read):

* **netlink** (the live ``/sys`` only, where the socket sees the same devices): one
  ``RDMA_NLDEV_CMD_GET`` dump lists the devices and their port counts; then one datagram
  carries a ``PORT_GET`` (state, physical state, netdev) and a ``STAT_GET`` (every hardware
  counter the driver has, the optional counters an operator enabled included) for every
  selected port (:mod:`nicwatch.sources.rdma_netlink`);
* **sysfs** otherwise, per device when the dump fails, per port when its ``STAT_GET`` fails:
  ``state``, ``phys_state`` and each ``hw_counters/`` file (:mod:`.sysfs_infiniband`).

The IB PortCounters (``counters/``, and ``counters_ext/`` where the kernel has it) have no
netlink command: they are sysfs files either way.
What rarely changes (link layer, rate, node GUID, PCI function, driver, netdev, its MTU and
addresses, the GID table of a RoCE port, the ToS settings, the list of counter files) is read
on the PCIe cadence (``refresh`` seconds) and when the port's state changes.

On the live ``/sys`` the counter files are kept open and re-read with ``pread`` at offset 0
(a fresh ``show()`` each time, without an open and a close per file and poll).

A counter the driver refuses (EINVAL, EOPNOTSUPP, EPERM, EACCES, EIO: a file, or a port's whole
``STAT_GET``) is not asked again for a back-off that starts at a minute and doubles up to an
hour (:class:`Backoff`); it is logged once when it starts failing and once when it recovers,
and each port says what it skipped and why (``RdmaPort.skipped``, exported as
``nicwatch_rdma_counters_skipped{device,reason}``). nicwatch never changes counter
configuration (no ``SET`` command is sent, no sysfs file written).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

import structlog

from nicwatch.model import HostReading, RdmaPort, Reading
from nicwatch.sources import Poll, SourceOptions, errno_name
from nicwatch.sources.netlink import KernelError, ParseError
from nicwatch.sources.rdma_netlink import NetlinkDevice, NetlinkPort, RdmaNetlink
from nicwatch.sources.sysfs import OpenAttributes, descriptor_share
from nicwatch.sources.sysfs_infiniband import (
    CLASS_INFINIBAND,
    COUNTERS_EXT,
    counter_names,
    parse_numbered_name,
    port_numbers,
    rdma_devices,
    read_counters,
    read_port_attributes,
)
from nicwatch.sources.sysfs_pci import SysfsReader

log = structlog.get_logger("nicwatch.rdma")

BACKOFF_FIRST = 60.0  # seconds a counter that failed is left alone the first time
BACKOFF_LIMIT = 3600.0  # ... doubling each time it fails again, up to an hour
STAT_GET = "stat_get"  # the back-off key of a port's whole netlink counter request
PMA_PREFIX = "counters/"  # back-off keys of IB PortCounters files
EXT_PREFIX = "counters_ext/"  # ... and of the separate 64-bit ones (pre-4.5, MLNX_OFED)

Key = tuple[str, int, str]  # (RDMA device, port, counter)


@dataclass(slots=True)
class _Held:
    until: float
    delay: float
    reason: str


class Backoff:
    """Counters that failed with an errno of BACKOFF_ERRNOS and when each may be asked
    again: ``first`` seconds after the first failure, twice as long after each further one,
    at most ``limit``; a success forgets it."""

    def __init__(self, first: float = BACKOFF_FIRST, limit: float = BACKOFF_LIMIT) -> None:
        self.first = first
        self.limit = limit
        self._held: dict[Key, _Held] = {}

    def held(self, key: Key, now: float) -> str | None:
        """The reason ``key`` is not to be asked at ``now``; None: ask it."""
        entry = self._held.get(key)
        return entry.reason if entry is not None and now < entry.until else None

    def failed(self, key: Key, reason: str, now: float) -> bool:
        """Record a failure; True when ``key`` was not failing before (log it then)."""
        entry = self._held.get(key)
        if entry is None:
            self._held[key] = _Held(now + self.first, self.first, reason)
            return True
        entry.delay = min(entry.delay * 2, self.limit)
        entry.until, entry.reason = now + entry.delay, reason
        return False

    def succeeded(self, key: Key) -> bool:
        """Forget ``key``; True when it had been failing (log its recovery)."""
        return self._held.pop(key, None) is not None

    def delay(self, key: Key) -> float | None:
        entry = self._held.get(key)
        return None if entry is None else entry.delay

    def forget(self, keep: Callable[[Key], bool]) -> None:
        """Drop the state of counters whose port is gone."""
        for key in [k for k in self._held if not keep(k)]:
            del self._held[key]

    def skipped(self, device: str, port: int) -> dict[str, str]:
        """Counter -> reason of every counter of one port that is failing."""
        if not self._held:
            return {}
        return {k[2]: e.reason for k, e in self._held.items() if k[0] == device and k[1] == port}


@dataclass(frozen=True, slots=True)
class DeviceSelection:
    """Which RDMA devices to read, by name: ``exclude`` wins, then ``include`` (default:
    every device)."""

    include: str | None = None
    exclude: str | None = None

    def selects(self, name: str) -> bool:
        if self.exclude and re.fullmatch(self.exclude, name):
            return False
        return not self.include or re.fullmatch(self.include, name) is not None


@dataclass(slots=True)
class _Static:
    read_at: float
    state: str | None  # the state it was read in (a change re-reads it)
    port: RdmaPort  # attributes, no counters
    hw_names: tuple[str, ...] | None
    pma_names: tuple[str, ...] | None
    ext_names: tuple[str, ...] | None = None


Addresses = Callable[[], Mapping[str, tuple[str, ...]]]  # netdev -> its IP addresses


class RdmaSource:
    """RDMA ports as a :class:`~nicwatch.sources.Source`: every port in the host part
    ``rdma_ports``, and each netdev's ports in its ``rdma`` part; a port's unreadable or
    garbage files are one error of its netdev (of ``<device>/<port>`` for a port without
    one). ``netlink``: an RdmaNetlink, or None to read sysfs only. ``addresses``: the IP
    addresses of every netdev (an rtnetlink dump), or None where not read (fixture trees)."""

    name = "rdma"
    fills: ClassVar[frozenset[str]] = frozenset({"rdma", "rdma_ports"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, root: str | os.PathLike[str], netlink: RdmaNetlink | None = None,
                 selection: DeviceSelection = DeviceSelection(), refresh: float = 0.0,
                 addresses: Addresses | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 backoff: Backoff | None = None, keep_open: bool = False) -> None:
        self.root = root
        self.netlink = netlink
        self.selection = selection
        self.refresh = refresh
        self.addresses = addresses
        self.clock = clock
        self.backoff = backoff or Backoff()
        # keep_open (the live /sys): the counter files kept open and re-read with pread
        # (sysfs.OpenAttributes), at most a quarter of the file descriptor limit. Not for
        # other trees: a regular file replaced by a rename (the demo's) keeps its old value
        # behind an open descriptor, where sysfs re-runs show() on every read at offset 0.
        self.files = OpenAttributes(descriptor_share(4)) if keep_open else None
        self._static: dict[tuple[str, int], _Static] = {}
        self._addresses: tuple[float, Mapping[str, tuple[str, ...]]] | None = None
        self._netlink_failing = False
        self.last_sources: dict[str, dict[str, int]] = {}  # device -> source -> ports

    @classmethod
    def open(cls, options: SourceOptions) -> RdmaSource:
        live = os.path.realpath(options.sysfs) == "/sys"
        netlink: RdmaNetlink | None = None
        addresses: Addresses | None = None
        if live:
            if options.rdma_netlink:
                try:
                    netlink = RdmaNetlink()
                except OSError:  # no ib_core (EPROTONOSUPPORT): sysfs, as nicwatch_rdma_source says
                    netlink = None
            from nicwatch.sources.rtnetlink import interface_addresses
            addresses = interface_addresses
        return cls(options.sysfs, netlink,
                   DeviceSelection(options.rdma_include, options.rdma_exclude),
                   options.pcie_refresh, addresses, keep_open=live)

    def close(self) -> None:
        if self.files is not None:
            self.files.close_all()
        if self.netlink is not None:
            self.netlink.close()

    # --------------------------------------------------------------------------- poll

    def read(self, poll: Poll) -> None:
        ports = self.read_ports()
        poll.put_host(HostReading.rdma_ports, ports)
        by_netdev: dict[str, list[RdmaPort]] = {}
        for port in ports:
            if port.netdev is not None:
                by_netdev.setdefault(port.netdev, []).append(port)
        for nc in poll.each():
            mine = tuple(by_netdev.get(nc.name, ()))
            poll.put(nc.name, Reading.rdma, mine)
            problems = [p for port in mine for p in port.problems]
            if problems:
                poll.error(nc.name, self.name, "invalid", "; ".join(problems))

    def read_ports(self) -> tuple[RdmaPort, ...]:
        """Every selected port, ordered by device name, then port number."""
        now = self.clock()
        listed = self._netlink_devices()
        out: list[RdmaPort] = []
        sources: dict[str, dict[str, int]] = {}
        if listed is not None:
            wanted = [(d.name, d.index, p) for d in sorted(listed, key=lambda d: d.name)
                      if self.selection.selects(d.name) for p in range(1, d.ports + 1)]
            out = self._read_netlink(wanted, now)
        else:
            for device in rdma_devices(self.root):
                if not self.selection.selects(device):
                    continue  # nothing of an excluded device is read
                for number in port_numbers(self.root, device):
                    out.append(self._read_sysfs(device, number, now))
        for port in out:
            counts = sources.setdefault(port.device, {})
            counts[port.source] = counts.get(port.source, 0) + 1
        self.last_sources = sources
        present = {(p.device, p.port) for p in out}
        for device, number in [k for k in self._static if k not in present]:
            if self.files is not None:
                self.files.close_all(str(Path(self.root) / CLASS_INFINIBAND / device
                                         / "ports" / str(number)) + os.sep)
        self._static = {k: v for k, v in self._static.items() if k in present}
        self.backoff.forget(lambda key: (key[0], key[1]) in present)
        return tuple(out)

    def _netlink_devices(self) -> list[NetlinkDevice] | None:
        """The devices the netlink dump lists; None: no netlink this poll (read sysfs)."""
        if self.netlink is None:
            return None
        try:
            devices = self.netlink.devices()
        except (OSError, KernelError, ParseError) as e:
            if not self._netlink_failing:
                log.warning("rdma_netlink_failed", error=str(e) or type(e).__name__,
                            fallback="sysfs")
                self._netlink_failing = True
            return None
        if self._netlink_failing:
            log.info("rdma_netlink_recovered")
            self._netlink_failing = False
        return devices

    def _read_netlink(self, wanted: list[tuple[str, int, int]], now: float) -> list[RdmaPort]:
        asks = [(index, port, self.backoff.held((device, port, STAT_GET), now) is None)
                for device, index, port in wanted]
        try:
            answers = self.netlink.read_ports(asks) if self.netlink is not None else []
        except (OSError, ParseError) as e:
            if not self._netlink_failing:
                log.warning("rdma_netlink_failed", error=str(e) or type(e).__name__,
                            fallback="sysfs")
                self._netlink_failing = True
            return [self._read_sysfs(device, port, now) for device, _i, port in wanted]
        out = []
        for (device, _index, port), answer in zip(wanted, answers, strict=True):
            described = answer.port if isinstance(answer.port, NetlinkPort) else None
            counters = answer.counters
            key = (device, port, STAT_GET)
            hw: Mapping[str, int] | None = None
            if isinstance(counters, KernelError):
                self._failed(key, errno_name(counters.errno), now)
            elif counters is not None:
                hw = counters
                if self.backoff.succeeded(key):
                    log.info("rdma_counter_recovered", device=device, port=port,
                             counter=STAT_GET)
            out.append(self._read_sysfs(device, port, now, described, hw))
        return out

    def _read_sysfs(self, device: str, port: int, now: float,
                    described: NetlinkPort | None = None,
                    hw: Mapping[str, int] | None = None) -> RdmaPort:
        """One port: what netlink ``described`` (state, netdev) and its counters ``hw``
        when netlink gave them, the rest from sysfs."""
        problems: list[str] = []
        if described is not None:
            state, phys_state = described.state, described.phys_state
        else:
            reader = SysfsReader(self.root)
            port_dir = CLASS_INFINIBAND / device / "ports" / str(port)
            state = reader.value(port_dir / "state", parse_numbered_name)
            phys_state = reader.value(port_dir / "phys_state", parse_numbered_name)
            problems.extend(reader.problems)
        static = self._static_of(device, port, now, state)
        problems.extend(static.port.problems)
        netdev = described.netdev if described is not None else static.port.netdev

        def failed(name: str, reason: str) -> None:
            self._failed((device, port, name), reason, now)

        source = "netlink"
        if hw is None:
            source = "sysfs"
            hw = MappingProxyType(self._read_group(device, port, "hw_counters",
                                                   static.hw_names, "", failed, problems, now))
        pma = MappingProxyType(self._read_group(device, port, "counters", static.pma_names,
                                                PMA_PREFIX, failed, problems, now))
        ext = MappingProxyType(self._read_group(device, port, COUNTERS_EXT, static.ext_names,
                                                EXT_PREFIX, failed, problems, now))
        addresses = self._addresses_of(netdev, now)
        return replace(static.port, state=state, phys_state=phys_state, netdev=netdev,
                       hw_counters=hw, counters=pma, counters_ext=ext,
                       problems=tuple(problems), source=source,
                       skipped=MappingProxyType(self.backoff.skipped(device, port)),
                       addresses=addresses,
                       netdev_mtu=static.port.netdev_mtu if netdev == static.port.netdev
                       else None)

    def _read_group(self, device: str, port: int, group: str, names: tuple[str, ...] | None,
                    prefix: str, failed: Callable[[str, str], None], problems: list[str],
                    now: float) -> dict[str, int]:
        if not names:
            return {}
        failing = self.backoff.skipped(device, port)  # empty on a healthy host: no lookups
        asked: Iterable[str] = names
        if failing:
            asked = [n for n in names
                     if self.backoff.held((device, port, prefix + n), now) is None]
        got = read_counters(self.root, device, port, group, asked, problems, failed, prefix,
                            self.files)
        for name in got:
            if prefix + name in failing and self.backoff.succeeded((device, port, prefix + name)):
                log.info("rdma_counter_recovered", device=device, port=port,
                         counter=prefix + name)
        return got

    def _failed(self, key: Key, reason: str, now: float) -> None:
        if self.backoff.failed(key, reason, now):
            log.warning("rdma_counter_backed_off", device=key[0], port=key[1], counter=key[2],
                        reason=reason, retry_seconds=self.backoff.delay(key))
        else:
            log.debug("rdma_counter_still_failing", device=key[0], port=key[1],
                      counter=key[2], reason=reason, retry_seconds=self.backoff.delay(key))

    def _static_of(self, device: str, port: int, now: float, state: str | None) -> _Static:
        key = (device, port)
        cached = self._static.get(key)
        if (cached is None or cached.state != state
                or now - cached.read_at >= self.refresh * 0.9):
            problems: list[str] = []
            attrs = read_port_attributes(self.root, device, port, netdev=True)
            cached = _Static(now, state, attrs,
                             counter_names(self.root, device, port, "hw_counters", problems),
                             counter_names(self.root, device, port, "counters", problems),
                             counter_names(self.root, device, port, COUNTERS_EXT, problems))
            if problems:
                cached.port = replace(attrs, problems=attrs.problems + tuple(problems))
            self._static[key] = cached
        return cached

    def _addresses_of(self, netdev: str | None, now: float) -> tuple[str, ...] | None:
        if self.addresses is None or netdev is None:
            return None
        if self._addresses is None or now - self._addresses[0] >= self.refresh * 0.9:
            try:
                self._addresses = (now, self.addresses())
            except (OSError, KernelError, ParseError) as e:
                log.debug("interface_addresses_failed", error=str(e))
                self._addresses = (now, {})
                return None
        return self._addresses[1].get(netdev, ())


