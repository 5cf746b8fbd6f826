"""One interface's typed state (model.NicState), resolved once from its Reading: which source
wins for rings and channels is decided here and nowhere else. The state gauges are rendered
from it (gauges.py), and checks, views and snapshots read it instead of decoding gauges."""

from __future__ import annotations

from collections.abc import Mapping

from nicwatch.metrics import MODULE_TEMPERATURE_CELSIUS, MODULE_TEMPERATURE_THRESHOLD_CELSIUS
from nicwatch.model import (
    Channels,
    ModuleReadStatus,
    ModuleState,
    NicState,
    Reading,
    Rings,
    SeriesKey,
)
from nicwatch.normalize.module import CORRUPT

_TEMPERATURE = SeriesKey(MODULE_TEMPERATURE_CELSIUS.name)
_HIGH_WARNING = SeriesKey(MODULE_TEMPERATURE_THRESHOLD_CELSIUS.name, (("level", "high_warning"),))


def rings_of(reading: Reading) -> Rings | None:
    """Descriptor rings: ethtool netlink's RINGS_GET where it answered, else the
    GRINGPARAM ioctl's (the kernel fills both from the same driver callback; netlink is read
    when ethtool netlink is on, the ioctl otherwise or where netlink failed)."""
    netlink = reading.netlink
    return (netlink.rings if netlink is not None else None) or reading.rings


def channels_of(reading: Reading) -> Channels | None:
    """Channel counts, by the same precedence as :func:`rings_of`."""
    netlink = reading.netlink
    return (netlink.channels if netlink is not None else None) or reading.channels


def module_read_state(status: ModuleReadStatus | None, corrupt: bool) -> str | None:
    """The collector's state of the last module read, except that a read whose checksums
    fail is ``corrupt``; None without the collector."""
    if status is None:
        return None
    return CORRUPT if status.state == "ok" and corrupt else status.state


def module_state(reading: Reading, series: Mapping[SeriesKey, float],
                 corrupt: bool) -> ModuleState | None:
    """The module's state from its decoded ``series``; None when no module was read."""
    eeprom, status = reading.module, reading.module_read
    if eeprom is None and status is None:
        return None
    return ModuleState(read_state=module_read_state(status, corrupt),
                       read_at=eeprom.read_at if eeprom is not None else None,
                       temperature_celsius=series.get(_TEMPERATURE),
                       temperature_high_warning_celsius=series.get(_HIGH_WARNING))


def nic_state(reading: Reading, module: ModuleState | None = None) -> NicState:
    nc, netlink = reading.netclass, reading.netlink
    path = reading.pcie
    return NicState(
        up=None if nc.operstate is None else nc.operstate == "up",
        carrier=nc.carrier,
        mtu=nc.mtu,
        speed_mbps=nc.speed_mbps,
        full_duplex=nc.duplex == "full" if nc.duplex in ("full", "half") else None,
        lanes=netlink.lanes if netlink is not None else None,
        rings=rings_of(reading),
        channels=channels_of(reading),
        fec=netlink.fec if netlink is not None else None,
        pause=netlink.pause if netlink is not None else None,
        pcie_link=path.hops[0].link if path is not None and path.is_pcie else None,
        module=module,
    )
