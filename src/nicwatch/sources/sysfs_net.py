"""/sys/class/net: the interface list, link state, netdev counters and the device behind
each interface. Every path is relative to a sysfs root (``--path.sysfs``) so the same code
runs on fixture trees.

Reads that the kernel refuses for a state reason (EINVAL for `speed` or `carrier` on a down
link, EOPNOTSUPP for `phys_port_name`) and missing files mean "unknown": the field is None.
So does anything else an attribute can hold that is not what the kernel prints (an error
such as EIO from a driver's show function, bytes that are not UTF-8, more than a page, a
number that is not a 64-bit one, an operstate the kernel does not have): one bad attribute
costs that field, never the interface or the poll. Only running out of file descriptors or
memory (OWN_FAULTS) raises. Files are opened non-blocking, so a stray FIFO under
``--path.sysfs`` cannot hang a poll. Interface names that are not UTF-8 (the kernel allows
any bytes but '/', ':' and whitespace) are skipped: they cannot be a Prometheus label value.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from nicwatch.model import NetClass

if TYPE_CHECKING:  # the records it builds NetClass from (rtnetlink imports nothing from here)
    from nicwatch.sources.rtnetlink import Link
from nicwatch.sources.sysfs import OWN_FAULTS, read_attribute
from nicwatch.sources.sysfs_pci import (  # one PCI address pattern (domains above ffff: VMD)
    BDF,
    parse_unsigned,
)

_SIGNED = re.compile(r"-?[0-9]{1,20}")
_ADDRESS = re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){0,31}")  # MAX_ADDR_LEN bytes
OPERSTATES = frozenset({"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant",
                        "up"})
# phys_port_id: the driver's identifier of the physical port as hex ("%*phN"), at most
# MAX_PHYS_ITEM_ID_LEN (32) bytes; reading fails with EOPNOTSUPP when the driver has none.
_PHYS_ID = re.compile(r"[0-9a-f]{2,64}")
DUPLEX = frozenset({"full", "half", "unknown"})


def read_text(path: Path | str) -> str | None:
    """A sysfs attribute as stripped text; None when it is absent, unreadable now, empty,
    too large or not UTF-8 (sources.sysfs.read_attribute, without keeping the problem)."""
    return read_attribute(path)[0]


def read_matching(path: Path | str, valid: re.Pattern[str] | frozenset[str]) -> str | None:
    """Text that ``valid`` (a pattern, or the set of words the kernel prints) accepts."""
    text = read_text(path)
    if text is None:
        return None
    ok = valid.fullmatch(text) if isinstance(valid, re.Pattern) else text in valid
    return text if ok else None


def read_unsigned(path: Path) -> int | None:
    """A counter or index: a decimal that fits in 64 bits, else None."""
    text = read_text(path)
    if text is None:
        return None
    try:
        return parse_unsigned(text)
    except ValueError:
        return None


def read_signed(path: Path | str) -> int | None:
    """A decimal that may be negative (`speed` is -1 when unknown), else None."""
    text = read_text(path)
    return int(text) if text is not None and _SIGNED.fullmatch(text) else None


def utf8(name: str) -> bool:
    try:
        name.encode()
    except UnicodeEncodeError:  # undecodable bytes, kept by os.listdir as surrogates
        return False
    return True


def list_interfaces(root: str | Path) -> list[str]:
    try:
        names = os.listdir(Path(root) / "class/net")
    except OSError as e:
        if e.errno in OWN_FAULTS:
            raise
        return []
    return sorted(name for name in names if utf8(name))


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
            driver = driver if utf8(driver) else None
            break
        if BDF.fullmatch(node.name):
            break
    return rel, pci, driver


# (device backed, device path relative to the root, PCI function, driver, dev_port, phys_port_id)
Device = tuple[bool, str | None, str | None, str | None, int | None, str | None]


def device_of(root: str | Path, name: str) -> Device | None:
    """(device backed, device path relative to root, PCI function, driver, dev_port,
    phys_port_id) of an interface: backed as in :func:`has_device`, the next three None
    when there is no device. None when sysfs has no such interface. None of it changes
    while the interface exists under this name, so a caller may keep it per (name,
    ifindex)."""
    iface = Path(root) / "class/net" / name
    if not os.path.lexists(iface):
        return None
    port = (read_unsigned(iface / "dev_port"), read_matching(iface / "phys_port_id", _PHYS_ID))
    if not os.path.lexists(iface / "device"):
        return False, None, None, None, *port
    return (True, *_device(Path(root), iface), *port)


def link_mode(root: str | Path, name: str) -> tuple[int | None, str | None]:
    """Speed (Mb/s; None when unknown) and duplex of an interface: two sysfs files."""
    iface = f"{root}/class/net/{name}"  # plain strings: pathlib costs more than the read
    speed = read_signed(f"{iface}/speed")
    return (speed if speed is not None and speed > 0 else None,
            read_matching(f"{iface}/duplex", DUPLEX))


def netclass_from_link(root: str | Path, link: Link, device: Device,
                       mode: tuple[int | None, str | None] | None = None) -> NetClass:
    """A NetClass from an rtnetlink Link (nicwatch.sources.rtnetlink) and what only sysfs
    has: speed and duplex (``mode``, from :func:`link_mode` or the collector's ethtool
    netlink LINKMODES_GET dump; read here when None), and ``device`` from
    :func:`device_of`."""
    _backed, device_path, pci, driver, dev_port, phys_port_id = device
    speed, duplex = link_mode(root, link.name) if mode is None else mode
    return NetClass(
        name=link.name,
        ifindex=link.ifindex,
        address=link.address,
        operstate=link.operstate,
        mtu=link.mtu,
        speed_mbps=speed,
        duplex=duplex,
        carrier=link.carrier,
        carrier_changes=link.carrier_changes,
        carrier_up_count=link.carrier_up_count,
        carrier_down_count=link.carrier_down_count,
        device_path=device_path,
        pci_address=pci,
        driver=driver,
        stats=link.stats,
        dev_port=dev_port,
        phys_port_id=phys_port_id,
    )


def _speed(iface: Path) -> int | None:
    speed = read_signed(iface / "speed")
    return speed if speed is not None and speed > 0 else None


def read_netclass(root: str | Path, name: str) -> NetClass:
    """Everything /sys/class/net/<name> says; raises FileNotFoundError if it is gone."""
    root = Path(root)
    iface = root / "class/net" / name
    if not iface.exists():
        raise FileNotFoundError(errno.ENOENT, "no such interface", str(iface))
    device_path, pci, driver = _device(root, iface)
    carrier = read_unsigned(iface / "carrier")
    stats: dict[str, int] = {}
    stats_dir = iface / "statistics"
    try:
        entries = sorted(os.listdir(stats_dir))
    except OSError as e:
        if e.errno in OWN_FAULTS:
            raise
        entries = []
    for entry in entries:
        value = read_unsigned(stats_dir / entry) if utf8(entry) else None
        if value is not None:
            stats[entry] = value
    return NetClass(
        name=name,
        ifindex=read_unsigned(iface / "ifindex"),
        address=read_matching(iface / "address", _ADDRESS),
        operstate=read_matching(iface / "operstate", OPERSTATES),
        mtu=read_unsigned(iface / "mtu"),
        speed_mbps=_speed(iface),
        duplex=read_matching(iface / "duplex", DUPLEX),
        carrier=None if carrier is None else carrier == 1,
        carrier_changes=read_unsigned(iface / "carrier_changes"),
        carrier_up_count=read_unsigned(iface / "carrier_up_count"),
        carrier_down_count=read_unsigned(iface / "carrier_down_count"),
        device_path=device_path,
        pci_address=pci,
        driver=driver,
        stats=stats,
        dev_port=read_unsigned(iface / "dev_port"),
        phys_port_id=read_matching(iface / "phys_port_id", _PHYS_ID),
    )
