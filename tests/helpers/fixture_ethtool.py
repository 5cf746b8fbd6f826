"""Stand-ins for the SIOCETHTOOL reader (the IoctlReader protocol that EthtoolIoctlSource
wraps): one fed from recorded `ethtool -S` text, one with the lab report's ConnectX-7 rings.

Only for hardware this machine cannot have (ConnectX ports under a fixture sysfs tree); the
real reader is tested against the kernel on veth and virtio."""

import errno
import struct
from pathlib import Path

from nicwatch.model import Channels, DriverInfo, Rings, StatSet
from nicwatch.pasted import ethtool_text
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


class ConnectX7Ioctl:
    """Stands in for SIOCETHTOOL on the lab host's ConnectX-7 ports, which this machine
    does not have: driver info and ring sizes as mlx5_core reports them, nothing else."""

    def __init__(self, rx_rings: dict[str, int]) -> None:
        self.rx_rings = rx_rings

    def driver_info(self, name: str) -> DriverInfo:
        return DriverInfo("mlx5_core", "6.18.0", "28.46.3048 (MT_0000000834)", "", 0)

    def rings(self, name: str) -> Rings:
        return Rings(rx=self.rx_rings[name], tx=8192, rx_max=8192, tx_max=8192)

    def _unsupported(self, name: str):
        raise EthtoolError(errno.EOPNOTSUPP, f"{name}: not in this stand-in")

    perm_address = statistics = channels = _unsupported

    def forget(self, name: str) -> None:
        pass

    def close(self) -> None:
        pass


# --- ethtool netlink replies in the kernel's layout (uapi netlink.h, ethtool_netlink*.h) ---

NLA_F_NESTED = 0x8000


def nlattr(attr_type: int, payload: bytes = b"") -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, attr_type) + payload + b"\0" * (-length % 4)


def nest(attr_type: int, *children: bytes) -> bytes:
    return nlattr(attr_type | NLA_F_NESTED, b"".join(children))


def u8(attr_type: int, value: int) -> bytes:
    return nlattr(attr_type, struct.pack("=B", value))


def u32(attr_type: int, value: int) -> bytes:
    return nlattr(attr_type, struct.pack("=I", value))


def u64(attr_type: int, value: int) -> bytes:
    return nlattr(attr_type, struct.pack("=Q", value))


def string(attr_type: int, value: str) -> bytes:
    return nlattr(attr_type, value.encode() + b"\0")


def u64_array(attr_type: int, *values: int) -> bytes:
    return nlattr(attr_type, struct.pack(f"={len(values)}Q", *values))


def attrs(*attributes: bytes) -> bytes:
    """The attributes of a generic-netlink reply, after its genlmsghdr."""
    return b"".join(attributes)


def header(attr_type: int, ifindex: int = 7) -> bytes:
    return nest(attr_type, u32(1, ifindex), string(2, "eth9"))
