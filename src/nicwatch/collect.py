"""One poll: ask every source about every selected interface and normalize the answers.

Failures are per interface and per source: a source that fails for one interface leaves
that part of its Reading empty and records a SourceError; every other interface and source
carries on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from nicwatch.model import EthtoolNetlinkInfo, Reading, Sample, SourceError
from nicwatch.normalize import NormalizeOptions, normalize
from nicwatch.normalize.pcie import assess_all, line_rate_from_mbps, physical_port
from nicwatch.sources import errno_name, sysfs_net
from nicwatch.sources.dcbnl import DcbError
from nicwatch.sources.ethtool_ioctl import EthtoolError, EthtoolIoctl
from nicwatch.sources.netlink import KernelError, ParseError
from nicwatch.sources.sysfs_infiniband import RdmaPort, read_rdma_ports
from nicwatch.sources.sysfs_pci import PciePath, read_pcie_path

log = structlog.get_logger("nicwatch.collect")

# Not an error: the driver simply does not implement the call.
UNSUPPORTED = {"EOPNOTSUPP"}
# The daemon re-reads PCIe link files when their last reading is this old (seconds): at
# the default 5 s interval every poll, at 1 s every fifth, so a retrained link shows
# within one default interval either way. They change only when a link retrains.
PCIE_REFRESH = 5.0


class PollStopped(Exception):
    """The daemon is stopping: the poll was abandoned between two interfaces."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which interfaces to poll. Without ``include``, only interfaces backed by a device
    (physical or virtual NICs with a `device` link: not lo, veth, bridges, bonds,
    tunnels); ``include`` selects by name regardless of type; ``exclude`` always wins."""

    include: str | None = None
    exclude: str | None = None

    def selects(self, name: str, device_backed: bool | Callable[[], bool]) -> bool:
        """``device_backed`` may be a callable, asked only when the name alone does not decide."""
        if self.exclude and re.fullmatch(self.exclude, name):
            return False
        if self.include:
            return re.fullmatch(self.include, name) is not None
        return device_backed() if callable(device_backed) else device_backed


@dataclass(frozen=True, slots=True)
class PollResult:
    samples: tuple[Sample, ...]
    errors: tuple[tuple[str, SourceError], ...]  # (device, error), unsupported calls excluded
    durations: dict[str, float] = field(default_factory=dict)  # stage -> seconds


def _sysfs_problems(path: PciePath | None, ports: Sequence[RdmaPort]) -> list[SourceError]:
    """Attribute files of the NIC's PCI path or RDMA ports that were present but unreadable
    or garbage: one error per source per poll, naming the files."""
    out = []
    for source, problems in (("sysfs_pci", path.problems if path else ()),
                             ("sysfs_infiniband", [p for port in ports for p in port.problems])):
        if problems:
            out.append(SourceError(source, "invalid", "; ".join(problems)))
    return out


class Collector:
    """Owns the kernel handles; ``poll()`` is called once per interval from one thread."""

    def __init__(self, sysfs: str | Path = "/sys", selection: Selection = Selection(),
                 options: NormalizeOptions = NormalizeOptions(), *,
                 ioctl: EthtoolIoctl | None = None, netlink=None, dcb=None, rtnetlink=None,
                 pcie_refresh: float = 0.0, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.sysfs = Path(sysfs)
        self.selection = selection
        self.options = options
        self.ioctl = ioctl
        self.netlink = netlink
        self.dcb = dcb
        # Link state and netdev counters from one RTM_GETLINK dump instead of ~30 sysfs
        # files per interface; only for the live /sys (the socket sees the daemon's own
        # namespace, as /sys does), never for a fixture tree.
        self.rtnetlink = rtnetlink
        self.pcie_refresh = pcie_refresh  # seconds; 0: read the PCIe path every poll
        self._clock = clock
        self._monotonic = monotonic
        self._known: set[str] = set()
        self._devices: dict[tuple[str, int], tuple] = {}  # (name, ifindex) -> device_of()
        self._pcie: dict[str, tuple[float, PciePath]] = {}  # PCI address -> (read at, path)
        # Asked between interfaces: a poll of 10,000 interfaces takes tens of seconds, and a
        # daemon told to stop must not wait for it (PollStopped).
        self.should_stop: Callable[[], bool] = lambda: False

    def close(self) -> None:
        for handle in (self.ioctl, self.netlink, self.dcb, self.rtnetlink):
            if handle is not None:
                handle.close()

    def _netlink_infos(self, ifindexes: list[int], errors: list) -> dict[int, EthtoolNetlinkInfo]:
        if self.netlink is None:
            return {}
        try:
            result = self.netlink.read_all(ifindexes)
        except OSError as e:
            errors.append(("", SourceError("ethtool_netlink", errno_name(e.errno), str(e))))
            return {}
        errors.extend(("", SourceError("ethtool_netlink", kind, f"{message} failed"))
                      for message, kind in sorted(result.errors.items()))
        return dict(result.infos)

    def _ioctl_parts(self, name: str, want_rings: bool, want_channels: bool) -> tuple[dict, list]:
        parts: dict = {}
        errors: list[SourceError] = []
        calls = [("driver_info", self.ioctl.driver_info), ("perm_address", self.ioctl.perm_address),
                 ("stats", self.ioctl.statistics)]
        if want_rings:
            calls.append(("rings", self.ioctl.rings))
        if want_channels:
            calls.append(("channels", self.ioctl.channels))
        for key, call in calls:
            try:
                parts[key] = call(name)
            except EthtoolError as e:
                if e.kind not in UNSUPPORTED:
                    errors.append(SourceError("ethtool_ioctl", e.kind, str(e)))
                if e.kind == "ENODEV":
                    break
        return parts, errors

    def _check_stop(self) -> None:
        if self.should_stop():
            raise PollStopped()

    def _select(self, errors: list) -> list:
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
            if not self.selection.selects(name, lambda: sysfs_net.has_device(self.sysfs, name)):
                continue
            try:
                selected.append(sysfs_net.read_netclass(self.sysfs, name))
            except FileNotFoundError:
                continue  # vanished between listing and reading
        return selected

    def _select_links(self, links: dict) -> list:
        """NetClass of every selected interface of an RTM_GETLINK dump. The device behind
        an interface is looked up once per (name, ifindex); an interface sysfs does not
        show (not yet registered there) is left for the next poll."""
        selected, devices = [], {}
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
                selected.append(sysfs_net.netclass_from_link(self.sysfs, link, device))
        self._devices = devices
        return selected

    def _pcie_paths(self, netclasses: list) -> dict[str, PciePath]:
        """PCIe path of every interface on a PCI function, re-read when its last reading is
        ``pcie_refresh`` old (a 10% margin, so polls at exactly that interval all read)."""
        now = time.monotonic()  # the cadence's own clock, not the Readings' (injectable) one
        cache, paths = {}, {}
        for nc in netclasses:
            if not nc.pci_address:
                continue
            entry = self._pcie.get(nc.pci_address)
            if entry is None or now - entry[0] >= self.pcie_refresh * 0.9:
                self._check_stop()
                entry = (now, read_pcie_path(self.sysfs, nc.pci_address))
            cache[nc.pci_address] = entry
            paths[nc.name] = entry[1]
        self._pcie = cache
        return paths

    def poll(self) -> PollResult:
        t0 = time.perf_counter()
        errors: list[tuple[str, SourceError]] = []
        netclasses = self._select(errors)
        infos = self._netlink_infos([nc.ifindex for nc in netclasses if nc.ifindex], errors)
        paths = self._pcie_paths(netclasses)
        verdicts = assess_all({nc.name: (paths[nc.name], line_rate_from_mbps(nc.speed_mbps))
                               for nc in netclasses if nc.name in paths},
                              {nc.name: physical_port(nc.phys_port_id, nc.pci_address, nc.dev_port)
                               for nc in netclasses if nc.name in paths})
        rdma: dict[str, list] = {}
        for port in read_rdma_ports(self.sysfs):
            rdma.setdefault(port.netdev, []).append(port)
        readings: list[Reading] = []
        for nc in netclasses:
            self._check_stop()
            info = infos.get(nc.ifindex) if nc.ifindex else None
            parts: dict = {}
            errs: list[SourceError] = []
            if self.ioctl is not None:
                parts, errs = self._ioctl_parts(nc.name, not (info and info.rings),
                                                not (info and info.channels))
            if self.dcb is not None:
                try:
                    parts["dcb_pfc"] = self.dcb.ieee_pfc(nc.name)
                except DcbError as e:
                    errs.append(SourceError("dcbnl", e.kind, str(e)))
            errs.extend(_sysfs_problems(paths.get(nc.name), rdma.get(nc.name, ())))
            errors.extend((nc.name, e) for e in errs)
            readings.append(Reading(
                device=nc.name, time=self._clock(), monotonic=self._monotonic(), netclass=nc,
                netlink=info, pcie=paths.get(nc.name), pcie_verdict=verdicts.get(nc.name),
                rdma=tuple(rdma.get(nc.name, ())), errors=tuple(errs), **parts))
        t1 = time.perf_counter()
        samples = []
        for reading in readings:
            self._check_stop()
            try:
                samples.append(normalize(reading, self.options))
            except Exception as e:  # one odd interface must not stop the others
                # Logged at warning once per state change by the daemon's ErrorStates; the
                # traceback only at debug, so a persistent bug cannot flood the log.
                log.debug("normalize_failed", device=reading.device, exc_info=True)
                errors.append((reading.device, SourceError("normalize", type(e).__name__, str(e))))
        t2 = time.perf_counter()
        self._forget_gone({r.device for r in readings})
        return PollResult(tuple(samples), tuple(errors), {"read": t1 - t0, "normalize": t2 - t1})

    def _forget_gone(self, present: set[str]) -> None:
        if self.ioctl is not None:
            for name in self._known - present:
                self.ioctl.forget(name)
        self._known = present
