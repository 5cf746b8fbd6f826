"""The one list of sources a poll reads, in this order (the ioctl source asks only for the
rings and channels the netlink dumps did not report, so netlink comes first; the receive
path source adds the interrupts of the NAPI instances the netdev family listed, so that
family comes before it). Each entry opens
its source from the SourceOptions, or returns None when it is off or unavailable."""

from __future__ import annotations

from nicwatch.sources import Source, SourceOptions
from nicwatch.sources.dcbnl import DcbSource
from nicwatch.sources.devlink import DevlinkSource
from nicwatch.sources.ethtool_ioctl import EthtoolIoctlSource
from nicwatch.sources.ethtool_module import EthtoolModuleSource
from nicwatch.sources.ethtool_netlink import EthtoolNetlinkSource
from nicwatch.sources.host import SoftirqSource
from nicwatch.sources.netdev_genl import NetdevGenlSource
from nicwatch.sources.rxpath import ReceivePathSource
from nicwatch.sources.sriov import SriovSource
from nicwatch.sources.sysfs_infiniband import SysfsInfinibandSource
from nicwatch.sources.sysfs_pci import SysfsPciSource
from nicwatch.sources.sysfs_roce import SysfsRoceSource

# Sources that need nothing but the filesystem roots (no kernel handle): a Collector built
# around test doubles of the handle sources gets these from here too.
ROOTED = (
    SysfsPciSource.open,
    SysfsInfinibandSource.open,
    SysfsRoceSource.open,
    SoftirqSource.open,
    ReceivePathSource.open,
)

SOURCES = (
    EthtoolNetlinkSource.open,
    EthtoolIoctlSource.open,
    DcbSource.open,
    DevlinkSource.open,
    EthtoolModuleSource.open,
    SriovSource.open,
    NetdevGenlSource.open,
    *ROOTED,
)


def open_sources(options: SourceOptions) -> list[Source]:
    """Every registered source that opens; if one raises, those already open are closed."""
    opened: list[Source] = []
    try:
        for open_source in SOURCES:
            source = open_source(options)
            if source is not None:
                opened.append(source)
    except BaseException:
        for source in opened:
            source.close()
        raise
    return opened
