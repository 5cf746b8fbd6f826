"""/sys/class/net: the interface list, link state, netdev counters and the device behind
each interface. Every path is relative to a sysfs root (``--path.sysfs``) so the same code
runs on fixture trees.

Reads that the kernel refuses for a state reason (EINVAL for `speed` or `carrier` on a down
link, EOPNOTSUPP for `phys_port_name`) and missing files mean "unknown": the field is None.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from nicwatch.model import NetClass

BDF = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_ABSENT = {errno.ENOENT, errno.EINVAL, errno.EOPNOTSUPP, errno.ENODEV, errno.EACCES,
           errno.ENOTDIR, errno.EISDIR, errno.ENXIO}


def read_text(path: Path) -> str | None:
    """A sysfs attribute as stripped text; None when it is absent or unreadable now.
    (os.open/os.read: a buffered file object costs more than the read itself.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno in _ABSENT:
            return None
        raise
    return data.decode("utf-8", "replace").strip()


def read_int(path: Path, base: int = 10) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def list_interfaces(root: str | Path) -> list[str]:
    try:
        return sorted(os.listdir(Path(root) / "class/net"))
    except FileNotFoundError:
        return []


def has_device(root: str | Path, name: str) -> bool:
    """Whether the interface is backed by a device (a `device` link): a NIC, not lo, veth,
    a bridge, bond or tunnel."""
    return os.path.lexists(Path(root) / "class/net" / name / "device")


def _device(root: Path, iface: Path) -> tuple[str | None, str | None, str | None]:
    """(device path relative to root, PCI function, driver) of an interface."""
    link = iface / "device"
    if not link.exists():
        return None, None, None
    real = Path(os.path.realpath(link))
    try:
        rel = str(real.relative_to(Path(os.path.realpath(root))))
    except ValueError:
        rel = str(real)
    pci = next((p.name for p in (real, *real.parents) if BDF.fullmatch(p.name)), None)
    driver = None
    for node in (real, *real.parents):
        if (node / "driver").exists():
            driver = Path(os.path.realpath(node / "driver")).name
            break
        if BDF.fullmatch(node.name):
            break
    return rel, pci, driver


def _speed(iface: Path) -> int | None:
    speed = read_int(iface / "speed")
    return speed if speed is not None and speed > 0 else None


def read_netclass(root: str | Path, name: str) -> NetClass:
    """Everything /sys/class/net/<name> says; raises FileNotFoundError if it is gone."""
    root = Path(root)
    iface = root / "class/net" / name
    if not iface.exists():
        raise FileNotFoundError(errno.ENOENT, "no such interface", str(iface))
    device_path, pci, driver = _device(root, iface)
    carrier = read_int(iface / "carrier")
    stats: dict[str, int] = {}
    stats_dir = iface / "statistics"
    try:
        for entry in sorted(os.listdir(stats_dir)):
            value = read_int(stats_dir / entry)
            if value is not None:
                stats[entry] = value
    except OSError:
        pass
    return NetClass(
        name=name,
        ifindex=read_int(iface / "ifindex"),
        address=read_text(iface / "address") or None,
        operstate=read_text(iface / "operstate"),
        mtu=read_int(iface / "mtu"),
        speed_mbps=_speed(iface),
        duplex=read_text(iface / "duplex"),
        carrier=None if carrier is None else carrier == 1,
        carrier_changes=read_int(iface / "carrier_changes"),
        carrier_up_count=read_int(iface / "carrier_up_count"),
        carrier_down_count=read_int(iface / "carrier_down_count"),
        device_path=device_path,
        pci_address=pci,
        driver=driver,
        stats=stats,
    )
