"""One poll: ask every source about every selected interface and normalize the answers.

Failures are per interface and per source: a source that fails for one interface leaves
that part of its Reading empty and records a SourceError; a source that raises is one error
of the whole source (``nicwatch_source_up`` 0); every other interface and source carries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol, runtime_checkable

import structlog

from nicwatch.model import (
    HostReading,
    NetClass,
    PciePath,
    RdmaPort,
    RdmaSample,
    Reading,
    Sample,
    SourceError,
    SourceRun,
)
from nicwatch.normalize import NormalizeOptions, Normalizer
from nicwatch.normalize.drivers import HWMON_ONE_PER_CHIP
from nicwatch.normalize.pcie_verdict import assess_all, line_rate_from_mbps, physical_port
from nicwatch.normalize.rdma import normalize_rdma
from nicwatch.sources import (
    Poll,
    PollStopped,
    Source,
    SourceOptions,
    check_order,
    errno_name,
    interrupts,
    netns,
    sysfs_net,
    sysfs_pci,
)
from nicwatch.sources.dcbnl import DcbReader, DcbSource
from nicwatch.sources.devlink import DevlinkReader, DevlinkSource
from nicwatch.sources.ethtool_ioctl import EthtoolIoctlSource, IoctlReader
from nicwatch.sources.ethtool_module import EthtoolModuleSource, ModuleReader
from nicwatch.sources.ethtool_netlink import EthtoolNetlinkSource, LinkMode, NetlinkReader
from nicwatch.sources.lldp import LldpSource
from nicwatch.sources.netdev_genl import NetdevGenlSource, NetdevReader
from nicwatch.sources.netlink import KernelError, ParseError
from nicwatch.sources.registry import ROOTED
from nicwatch.sources.rtnetlink import Link
from nicwatch.sources.sysfs_net import Device
from nicwatch.values.regex import Regex, compile_regex

log = structlog.get_logger("nicwatch.collect")

# The daemon re-reads PCIe AER counts and power states when their last reading is this old
# (seconds): at the default 5 s interval every poll, at 1 s every fifth. The rest of a PCIe
# path (identity, link speed and width) is re-read when its interface's link state or
# ifindex changes, and otherwise every PCIE_LINK_SAFETY seconds (sources.sysfs_pci).
PCIE_REFRESH = 5.0
PCIE_LINK_SAFETY = sysfs_pci.LINK_SAFETY
# The receive path's layout (which interrupts an interface has, RPS masks, NUMA nodes, the
# netdev family's queue and NAPI lists) is re-read every 30 s; the counts are read every
# poll. An interrupt's name and affinities (3 files per interrupt) are re-read when its
# interface's interrupt set changes, as soon as it is taken outside the effective affinity
# read last (irqbalance moves interrupts every 10 s by default), and otherwise every
# RXPATH_AFFINITY_SAFETY seconds (sources.interrupts: they change only when written). Reading
# all of it costs 10-17 ms of CPU on a 256-CPU fixture host with 130 NIC vectors, against
# about 2 ms for the counts (benchmarks/rxpath.py, on a shared 2-core machine).
RXPATH_REFRESH = 30.0
RXPATH_AFFINITY_SAFETY = interrupts.AFFINITY_SAFETY
# DCB (PFC, ETS, the application table) is configuration: an interface's answer is reused
# until a DCB notification names it (RTNLGRP_DCB), its link state or ifindex changes, or this
# many seconds passed (sources.dcbnl: a change nothing announces shows within 30 s).
DCB_REFRESH = 30.0
_LinkState = tuple[int | None, bool | None, str | None]  # carrier changes, carrier, operstate
_Mode = tuple[float, _LinkState, LinkMode]  # monotonic read, link state then, (speed, duplex)
# Speed and duplex (the rtnetlink dump has neither) are re-read when the link's carrier or
# operational state changed since the last reading (a renegotiation takes the carrier down)
# and otherwise on the PCIe cadence, so a change that kept the carrier (a virtual NIC's speed
# set by ethtool) shows within one default interval too (a 10% margin, as the PCIe paths, so
# polls every 5 s re-read every poll). The daemon's collector reads them for every interface
# due with one ethtool netlink LINKMODES_GET dump; without that reader, or in a poll whose
# dump failed, from the two sysfs files (`speed`, `duplex`) of each interface due.

class LinkLister(Protocol):
    """The interface list of the live /sys from one RTM_GETLINK dump (sources.rtnetlink)."""

    def links(self) -> dict[str, Link]: ...
    def close(self) -> None: ...


class LinkModeReader(Protocol):
    """Speed and duplex by ifindex from one LINKMODES_GET dump (an EthtoolNetlink)."""

    def link_modes(self, ifindexes: Collection[int] | None = None) -> dict[int, LinkMode]: ...
    def close(self) -> None: ...


@runtime_checkable
class FirstRead(Protocol):
    """A source that reads on a thread of its own (module EEPROMs)."""

    def wait_first_read(self, timeout: float) -> bool: ...


@dataclass(frozen=True, slots=True)
class Selection:
    """Which interfaces to poll. Without ``include``, only interfaces backed by a device
    (physical or virtual NICs with a `device` link: not lo, veth, bridges, bonds,
    tunnels); ``include`` selects by name regardless of type; ``exclude`` always wins."""

    include: str | None = None
    exclude: str | None = None
    # RE2, compiled once (values.regex): an interface name never backtracks
    _include: Regex | None = field(default=None, init=False, compare=False, repr=False)
    _exclude: Regex | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_include", compile_regex(self.include) if self.include else None)
        object.__setattr__(self, "_exclude", compile_regex(self.exclude) if self.exclude else None)

    def selects(self, name: str, device_backed: bool | Callable[[], bool]) -> bool:
        """``device_backed`` may be a callable, asked only when the name alone does not decide."""
        if self._exclude is not None and self._exclude.fullmatch(name):
            return False
        if self._include is not None:
            return self._include.fullmatch(name)
        return device_backed() if callable(device_backed) else device_backed


@dataclass(frozen=True, slots=True)
class PollResult:
    samples: tuple[Sample, ...]
    errors: tuple[tuple[str, SourceError], ...]  # (device, error), unsupported calls excluded
    durations: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    host: HostReading = field(default_factory=HostReading)  # host-wide (sources.Poll.host)
    sources: tuple[SourceRun, ...] = ()  # how each source's read went, in order
    rdma: tuple[RdmaSample, ...] = ()  # every RDMA port, with or without a netdev


class Collector:
    """Owns the sources (and so the kernel handles); ``poll()`` is called once per interval
    from one thread.

    ``sources``: what to read, in order (sources.registry.open_sources builds the daemon's).
    Without it, the sysfs PCI and infiniband sources under ``sysfs``, the host source and the
    receive path source (under ``sysfs`` and ``procfs``), plus a source around each reader
    given: ``netlink`` (read_all), ``ioctl`` (the EthtoolIoctl methods), ``dcb`` (ieee_pfc),
    ``devlink`` (read_all), ``module`` (read_module) and ``netdev`` (a NetdevGenl: read),
    real or a test double. ``pcie_refresh``: seconds a PCIe path reading, and speed and
    duplex while the link state is unchanged, are reused (0: read every poll).
    ``link_modes``: with ``rtnetlink``, a reader of speed and duplex by ifindex for all
    interfaces at once (``link_modes()`` and ``close()``: an EthtoolNetlink); without it they
    are sysfs files. ``namespace``: the interfaces (name -> ifindex) of the network namespace
    the kernel socket sources see (sources.netns.namespace_interfaces); with it, those
    sources (SOCKET_SOURCES) read only the interfaces of the sysfs root that match it by
    ifindex and name, and none when the two disagree (reported as a ``netns`` error).
    """

    def __init__(self, sysfs: str | Path = "/sys", selection: Selection = Selection(),
                 options: NormalizeOptions = NormalizeOptions(), *,
                 sources: Sequence[Source] | None = None,
                 ioctl: IoctlReader | None = None, netlink: NetlinkReader | None = None,
                 dcb: DcbReader | None = None, rtnetlink: LinkLister | None = None,
                 devlink: DevlinkReader | None = None, module: ModuleReader | None = None,
                 link_modes: LinkModeReader | None = None, netdev: NetdevReader | None = None,
                 pcie_refresh: float = 0.0, procfs: str | Path = "/proc",
                 namespace: Callable[[], Mapping[str, int]] | None = None,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.sysfs = Path(sysfs)
        self.selection = selection
        self.options = options
        self.normalizer = Normalizer()  # what normalizing keeps from poll to poll
        if sources is None:
            rooted = SourceOptions(sysfs=str(self.sysfs), procfs=str(procfs),
                                   pcie_refresh=pcie_refresh,
                                   hwmon_one_per_chip=HWMON_ONE_PER_CHIP)
            sources = [*readers(netlink=netlink, ioctl=ioctl, dcb=dcb, devlink=devlink,
                                module=module, netdev=netdev),
                       *(source for registered in ROOTED
                         if (source := registered.open(rooted)) is not None)]
        self.sources = list(sources)
        check_order(self.sources)
        self.namespace = namespace
        self._socket_sources = frozenset(s.name for s in self.sources
                                         if s.name in SOCKET_SOURCES)
        self._raising: dict[str, str] = {}  # source -> kind of what it raised last poll
        # Link state and netdev counters from one RTM_GETLINK dump instead of ~30 sysfs
        # files per interface; only for the live /sys (the socket sees the daemon's own
        # namespace, as /sys does), never for a fixture tree. It lists the interfaces the
        # sources then read, so it is the collector's, not a Source.
        self.rtnetlink = rtnetlink
        # Speed and duplex of the interfaces an RTM_GETLINK dump lists: one dump for all of
        # them (see PCIE_REFRESH); likewise only for the live /sys.
        self.link_modes = link_modes
        self._link_modes_failing = False
        self._devices: dict[tuple[str, int], Device] = {}  # (name, ifindex) -> device_of()
        # (name, ifindex) -> (monotonic read, link state then, link_mode()); see PCIE_REFRESH
        self._modes: dict[tuple[str, int], _Mode] = {}
        self.link_refresh = pcie_refresh
        self._clock = clock
        self._monotonic = monotonic
        # Asked between interfaces: a poll of 10,000 interfaces takes tens of seconds, and a
        # daemon told to stop must not wait for it (PollStopped).
        self.should_stop: Callable[[], bool] = lambda: False

    def close(self) -> None:
        for source in self.sources:
            source.close()
        if self.rtnetlink is not None:
            self.rtnetlink.close()
        if self.link_modes is not None:
            self.link_modes.close()

    def _check_stop(self) -> None:
        if self.should_stop():
            raise PollStopped()

    def _select(self, errors: list[tuple[str, SourceError]]) -> list[NetClass]:
        """NetClass of every selected interface; the others cost one lstat at most."""
        if self.rtnetlink is not None:
            try:
                return self._select_links(self.rtnetlink.links())
            except (OSError, KernelError, ParseError) as e:  # this poll reads sysfs instead
                kind = "parse" if isinstance(e, ParseError) else errno_name(e.errno)
                errors.append(("", SourceError("rtnetlink", kind, str(e))))
        selected = []
        for name in sysfs_net.list_interfaces(self.sysfs):
            self._check_stop()
            if not self.selection.selects(name, partial(sysfs_net.has_device, self.sysfs, name)):
                continue
            try:
                selected.append(sysfs_net.read_netclass(self.sysfs, name))
            except FileNotFoundError:
                continue  # vanished between listing and reading
        return selected

    def _select_links(self, links: dict[str, Link]) -> list[NetClass]:
        """NetClass of every selected interface of an RTM_GETLINK dump. The device behind
        an interface is looked up once per (name, ifindex); an interface sysfs does not
        show (not yet registered there) is left for the next poll. Speed and duplex of the
        interfaces due for them (see PCIE_REFRESH) come from one link-modes dump, or from
        sysfs."""
        chosen: list[tuple[tuple[str, int], Link, Device]] = []
        due: list[tuple[tuple[str, int], Link, _LinkState]] = []
        devices: dict[tuple[str, int], Device] = {}
        modes: dict[tuple[str, int], _Mode] = {}
        now = self._monotonic()
        for name in sorted(links):
            if not sysfs_net.utf8(name):
                continue
            self._check_stop()
            link = links[name]
            key = (name, link.ifindex)
            device = self._devices.get(key)
            if device is None:
                device = sysfs_net.device_of(self.sysfs, name)
                if device is None:
                    continue
            devices[key] = device
            if self.selection.selects(name, device[0]):
                state = (link.carrier_changes, link.carrier, link.operstate)
                mode = self._modes.get(key)
                if mode is None or mode[1] != state or now - mode[0] >= self.link_refresh * 0.9:
                    due.append((key, link, state))
                else:
                    modes[key] = mode
                chosen.append((key, link, device))
        if due:
            read = self._link_modes_of([link for _, link, _ in due])
            for (key, _, state), speed_duplex in zip(due, read, strict=True):
                modes[key] = (now, state, speed_duplex)
        self._devices = devices
        self._modes = modes
        return [sysfs_net.netclass_from_link(self.sysfs, link, device, modes[key][2])
                for key, link, device in chosen]

    def _link_modes_of(self, links: list[Link]) -> list[LinkMode]:
        """(speed, duplex) of each rtnetlink Link as sysfs would give them: from one
        link-modes dump of those that are up when there is a reader and the dump worked,
        else from the sysfs files.

        sysfs refuses both files (EINVAL: None) while the interface is not running, and a
        LINKMODES_GET dump does not look at that, so a link without IFF_UP is (None, None)
        whatever the dump said; so is a device the dump skipped (no get_link_ksettings). A
        device not present (sysfs: EINVAL) fails the whole dump (ENODEV), as does any
        driver error but EOPNOTSUPP: such a poll reads the sysfs files as before, and that
        is no source error (logged at debug when the dumps start and stop failing)."""
        unknown = (None, None)
        if self.link_modes is not None:
            up = [link.ifindex for link in links if link.up]
            if not up:  # every link due is down: nothing to ask the kernel
                return [unknown] * len(links)
            try:
                dumped = self.link_modes.link_modes(up)
            except (OSError, KernelError, ParseError) as e:
                if not self._link_modes_failing:
                    log.debug("link_modes_dump_failed", error=str(e) or type(e).__name__)
                    self._link_modes_failing = True
            else:
                if self._link_modes_failing:
                    log.debug("link_modes_dump_recovered")
                    self._link_modes_failing = False
                return [dumped.get(link.ifindex, unknown) if link.up else unknown
                        for link in links]
        return [sysfs_net.link_mode(self.sysfs, link.name) for link in links]

    def read(self) -> Poll:
        """Every source, in order, over the selected interfaces. A source that raises (a bug,
        an error it did not expect, a part it may not put) is one whole-source error of this
        poll, its ``nicwatch_source_up`` 0: every other source's parts are served, and so is
        what it put before it raised. Each source's read is timed (``poll.runs``)."""
        errors: list[tuple[str, SourceError]] = []
        poll = Poll(self._select(errors), self.should_stop)
        poll.errors.extend(errors)
        sockets = poll if self.namespace is None else self._namespace_view(poll)
        clock = time.perf_counter
        for source in self.sources:
            self._check_stop()
            before = len(poll.errors)
            start = clock()
            try:
                source.read(sockets if source.name in self._socket_sources else poll)
            except PollStopped:
                raise
            except Exception as e:  # one source must not fail the others
                kind = self._raised(source.name, e)
                poll.error("", source.name, kind, str(e) or type(e).__name__)
            else:
                self._raising.pop(source.name, None)
            seconds = clock() - start
            up = not any(not device and err.source == source.name
                         for device, err in poll.errors[before:])
            poll.runs.append(SourceRun(source.name, up, seconds))
        return poll

    def _namespace_view(self, poll: Poll) -> Poll:
        """The poll as the kernel socket sources read it: only the interfaces that match
        the namespace by ifindex and name (sources.netns); a disagreement is one error."""
        assert self.namespace is not None
        try:
            here = self.namespace()
        except OSError as e:
            poll.error("", netns.SOURCE, errno_name(e.errno), str(e))
            return poll.only(())
        agreement = netns.compare(((nc.name, nc.ifindex) for nc in poll.interfaces), here,
                                  str(self.sysfs))
        if agreement.problem is not None:
            poll.error("", netns.SOURCE, netns.KIND, agreement.problem)
        if len(agreement.served) == len(poll.interfaces):
            return poll
        return poll.only(agreement.served)

    def _raised(self, name: str, e: Exception) -> str:
        """The error kind of a source that raised (errno name, else the exception's class);
        its traceback is logged at debug when it starts raising or raises something else (the
        warning, once per change, is the daemon's, as for every source error)."""
        number = e.errno if isinstance(e, OSError) else None
        kind = errno_name(number) if number is not None else type(e).__name__
        if self._raising.get(name) != kind:
            log.debug("source_raised", source=name, error=kind, exc_info=e)
            self._raising[name] = kind
        return kind

    def first_poll(self, timeout: float = 10.0) -> PollResult:
        """One poll for a one-shot command (show, snapshot). A source that reads on a thread
        of its own (module EEPROMs) starts with the first poll; when there is one, wait up to
        ``timeout`` for its first pass and poll again, so its values are in. The daemon never
        waits: its values appear a poll later."""
        result = self.poll()
        waiting = [s for s in self.sources if isinstance(s, FirstRead)]
        if not waiting:
            return result
        for source in waiting:
            source.wait_first_read(timeout)
        return self.poll()

    def poll(self) -> PollResult:
        t0 = time.perf_counter()
        poll = self.read()
        netclasses = poll.interfaces
        with_pcie: list[tuple[NetClass, PciePath]] = [
            (nc, path) for nc in netclasses
            if (path := poll.get(nc.name, Reading.pcie)) is not None]
        verdicts = assess_all({nc.name: (path, line_rate_from_mbps(nc.speed_mbps))
                               for nc, path in with_pcie},
                              {nc.name: physical_port(nc.phys_port_id, nc.pci_address, nc.dev_port)
                               for nc, _ in with_pcie})
        errors: list[tuple[str, SourceError]] = [e for e in poll.errors if not e[0]]
        # grouped once: with every source failing on thousands of interfaces, a scan of all
        # errors per interface made the poll quadratic (5,000 interfaces: 20 s of 42 s)
        by_device: dict[str, list[SourceError]] = {}
        for device, err in poll.errors:
            by_device.setdefault(device, []).append(err)
        readings: list[Reading] = []
        for nc in netclasses:
            errs = tuple(by_device.get(nc.name, ()))
            errors.extend((nc.name, e) for e in errs)
            readings.append(Reading(
                device=nc.name, time=self._clock(), monotonic=self._monotonic(), netclass=nc,
                errors=errs, **poll.parts[nc.name]))
        t1 = time.perf_counter()
        samples = []
        for reading in readings:
            self._check_stop()
            try:
                samples.append(self.normalizer.normalize(reading, self.options,
                                                         verdicts.get(reading.device)))
            except Exception as e:  # one odd interface must not stop the others
                # Logged at warning once per state change by the daemon's ErrorStates; the
                # traceback only at debug, so a persistent bug cannot flood the log.
                log.debug("normalize_failed", device=reading.device, exc_info=True)
                errors.append((reading.device, SourceError("normalize", type(e).__name__, str(e))))
        host = HostReading(**poll.host)
        rdma = self._rdma_samples(host.rdma_ports or (), errors)
        t2 = time.perf_counter()
        return PollResult(tuple(samples), tuple(errors), {"read": t1 - t0, "normalize": t2 - t1},
                          host, tuple(poll.runs), rdma)

    def _rdma_samples(self, ports: tuple[RdmaPort, ...],
                      errors: list[tuple[str, SourceError]]) -> tuple[RdmaSample, ...]:
        """Every RDMA port normalized; the problems of a port without a netdev are errors of
        ``<rdma device>/<port>`` (a netdev's port problems are its netdev's already)."""
        if not ports:
            return ()
        now, mono = self._clock(), self._monotonic()
        out = []
        for port in ports:
            if port.problems and port.netdev is None:
                errors.append((port.key, SourceError("rdma", "invalid",
                                                     "; ".join(port.problems))))
            try:
                out.append(normalize_rdma(port, now, mono))
            except Exception as e:  # one odd port must not stop the others
                log.debug("normalize_failed", device=port.key, exc_info=True)
                errors.append((port.key, SourceError("normalize", type(e).__name__, str(e))))
        return tuple(out)


# The sources that read through sockets of the daemon's network namespace and address
# interfaces by ifindex or name: with ``namespace``, they read only the interfaces of the
# sysfs root that match it (sources.netns). SR-IOV and RDMA use netlink for the live /sys only.
SOCKET_SOURCES = frozenset(source.name for source in (
    EthtoolNetlinkSource, EthtoolIoctlSource, DcbSource, DevlinkSource, EthtoolModuleSource,
    NetdevGenlSource, LldpSource))


def readers(*, netlink: NetlinkReader | None = None, ioctl: IoctlReader | None = None,
            dcb: DcbReader | None = None, devlink: DevlinkReader | None = None,
            module: ModuleReader | None = None, netdev: NetdevReader | None = None
            ) -> list[Source]:
    """Sources around the readers given (None: left out), in registry order; ``module`` is a
    module EEPROM reader (read_module), read on the module source's thread every 60 s."""
    out: list[Source] = []
    if netlink is not None:
        out.append(EthtoolNetlinkSource(netlink))
    if ioctl is not None:
        out.append(EthtoolIoctlSource(ioctl))
    if dcb is not None:
        out.append(DcbSource(dcb))
    if devlink is not None:
        out.append(DevlinkSource(devlink))
    if module is not None:
        out.append(EthtoolModuleSource(module))
    if netdev is not None:
        out.append(NetdevGenlSource(netdev))
    return out
