"""A stand-in for the SIOCETHTOOL reader, fed from recorded `ethtool -S` text.

Only for hardware this machine cannot have (ConnectX ports under a fixture sysfs tree); the
real reader is tested against the kernel on veth and virtio. Same methods as
nicwatch.sources.ethtool_ioctl.EthtoolIoctl."""

import errno
from pathlib import Path

from nicwatch.sources import ethtool_text
from nicwatch.model import Channels, DriverInfo, Rings, StatSet
from nicwatch.sources.ethtool_ioctl import EthtoolError


class RecordedEthtool:
    def __init__(self, ports: dict[str, dict]) -> None:
        """``ports``: ifname -> {"stats": path to `ethtool -S` text, "driver": name,
        "rings": Rings, "channels": Channels} (any key may be missing: EOPNOTSUPP)."""
        self.ports = ports
        self.generation = 1

    def _port(self, ifname: str, key: str):
        port = self.ports.get(ifname)
        if port is None:
            raise EthtoolError(errno.ENODEV, f"{ifname}: No such device")
        if key not in port:
            raise EthtoolError(errno.EOPNOTSUPP, f"{ifname}: Operation not supported")
        return port[key]

    def driver_info(self, ifname: str) -> DriverInfo:
        driver = self._port(ifname, "driver")
        return DriverInfo(driver, "6.18.0", "28.46.3048 (MT_0000000834)", "", 0)

    def perm_address(self, ifname: str) -> str:
        return self._port(ifname, "perm_address")

    def statistics(self, ifname: str) -> StatSet:
        parsed = ethtool_text.parse(Path(self._port(ifname, "stats")).read_text())
        return StatSet(parsed.names, parsed.values, self.generation)

    def rings(self, ifname: str) -> Rings:
        return self._port(ifname, "rings")

    def channels(self, ifname: str) -> Channels:
        return self._port(ifname, "channels")

    def forget(self, ifname: str) -> None:
        pass

    def close(self) -> None:
        pass
