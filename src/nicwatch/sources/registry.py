"""The one list of sources a poll reads, in this order. Each source declares the parts it
fills and the parts of other sources it reads (``fills``, ``needs``); a source that reads a
part comes after every source that fills it, and ``check_order`` proves it here, at import,
and for every list a Collector is given (the ioctl source asks only for the rings and
channels the netlink dumps did not report, so netlink comes first; the receive path source
adds the interrupts of the NAPI instances the netdev family listed, so that family comes
before it). Each entry's ``open``
opens it from the SourceOptions, or returns None when it is off or unavailable."""

from __future__ import annotations

from typing import Protocol

from nicwatch.sources import Declares, Source, SourceOptions, check_order
from nicwatch.sources.dcbnl import DcbSource
from nicwatch.sources.devlink import DevlinkSource
from nicwatch.sources.ethtool_ioctl import EthtoolIoctlSource
from nicwatch.sources.ethtool_module import EthtoolModuleSource
from nicwatch.sources.ethtool_netlink import EthtoolNetlinkSource
from nicwatch.sources.host import SoftirqSource
from nicwatch.sources.interrupts import InterruptSource
from nicwatch.sources.lldp import LldpSource
from nicwatch.sources.netdev_genl import NetdevGenlSource
from nicwatch.sources.rdma import RdmaSource
from nicwatch.sources.sriov import SriovSource
from nicwatch.sources.sysfs_bonding import SysfsBondingSource
from nicwatch.sources.sysfs_hwmon import SysfsHwmonSource
from nicwatch.sources.sysfs_pci import SysfsPciSource
from nicwatch.sources.sysfs_roce import SysfsRoceSource


class Registered(Declares, Protocol):
    """A source class as the registry holds it: its declarations and its opener (a
    classmethod: None when the source is off or unavailable)."""

    def open(self, options: SourceOptions) -> Source | None: ...


# Sources that need nothing but the filesystem roots (no kernel handle): a Collector built
# around test doubles of the handle sources gets these from here too.
ROOTED: tuple[Registered, ...] = (
    SysfsPciSource,
    RdmaSource,
    SysfsRoceSource,
    SysfsBondingSource,
    SysfsHwmonSource,
    SoftirqSource,
    InterruptSource,  # needs queues (netdev_genl, when that is there)
)

SOURCES: tuple[Registered, ...] = (
    EthtoolNetlinkSource,
    EthtoolIoctlSource,  # needs netlink
    DcbSource,
    DevlinkSource,
    EthtoolModuleSource,
    LldpSource,
    SriovSource,
    NetdevGenlSource,
    *ROOTED,
)
check_order(SOURCES)


def open_sources(options: SourceOptions) -> list[Source]:
    """Every registered source that opens, but those ``options.disabled`` names (not opened,
    so never read); if one raises, those already open are closed."""
    opened: list[Source] = []
    try:
        for registered in SOURCES:
            if registered.name in options.disabled:
                continue
            source = registered.open(options)
            if source is not None:
                opened.append(source)
    except BaseException:
        for source in opened:
            source.close()
        raise
    return opened
