"""RDMA ports from ``/sys/class/infiniband/<device>/ports/<n>/`` (RoCE and InfiniBand).

Files read, below the sysfs root:

==========================================  ================================================
``class/infiniband/<dev>/node_guid``        ``"0c42:a103:0065:4f2e"``
``class/infiniband/<dev>/device``           link to the PCI function (or a sub-function on
                                            the auxiliary bus under it)
``.../ports/<n>/link_layer``                ``"Ethernet"`` (RoCE) or ``"InfiniBand"``
``.../ports/<n>/state``                     ``"4: ACTIVE"``: the name is kept
``.../ports/<n>/phys_state``                ``"5: LinkUp"``: the name is kept
``.../ports/<n>/rate``                      ``"400 Gb/sec (4X NDR)"``: kept as bytes/s
``.../ports/<n>/gid_attrs/ndevs/0``         netdev of GID 0 on RoCE (EINVAL on InfiniBand)
``class/infiniband/<dev>/device/net/*``     the function's netdevs, when GID 0 names none
``.../ports/<n>/hw_counters/*``             driver counters, decimal (mlx5:
                                            ``np_cnp_sent``, ``rp_cnp_handled``,
                                            ``np_ecn_marked_roce_packets``,
                                            ``out_of_sequence``, ``packet_seq_err``,
                                            ``local_ack_timeout_err``, ...); ``lifespan`` is
                                            not a counter (milliseconds the driver caches
                                            values) and is skipped
``.../ports/<n>/counters/*``                IB PortCounters(Extended), decimal. Units as in
                                            the IB spec: ``port_xmit_data`` and
                                            ``port_rcv_data`` count **4-byte words** (octets
                                            divided by 4); the others count packets or
                                            events. Values are kept raw, not scaled here.
==========================================  ================================================

Counter files that are absent are left out of the mappings; files that are unreadable (some
drivers return EINVAL or EOPNOTSUPP for counters they cannot query) or garbage are left out
too and recorded in ``problems``, as in :mod:`nicwatch.sources.sysfs_pci`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

from nicwatch.model import RdmaPort
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.sysfs import describe_os_error
from nicwatch.sources.sysfs_pci import (
    EMPTY,
    SysfsReader,
    parse_unsigned,
    pci_function_at_or_above,
)
from nicwatch.sources.sysfs_roce import read_rdma_tos

_CLASS_INFINIBAND = Path("class/infiniband")
_NOT_COUNTERS = frozenset({"lifespan"})

_NODE_GUID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){3}")
_NUMBERED_NAME = re.compile(r"[0-9]{1,3}: (\S.*)")
_RATE = re.compile(r"([0-9]{1,7}(?:\.5)?) Gb/sec(?: \(.*\))?")
_NETDEV_NAME = re.compile(r"[^/\s:]{1,15}")
_BYTES_PER_SECOND_PER_GBPS = 1_000_000_000 // 8


def parse_numbered_name(text: str) -> str:
    """``"4: ACTIVE"`` -> ``"ACTIVE"`` (``state``, ``phys_state``)."""
    match = _NUMBERED_NAME.fullmatch(text)
    if match is None:
        raise ValueError("not '<number>: <name>'")
    return match.group(1)


def parse_rate(text: str) -> int | None:
    """``"100 Gb/sec (4X EDR)"`` -> bytes/s; 0 Gb/s is ``None`` (unknown)."""
    match = _RATE.fullmatch(text)
    if match is None:
        raise ValueError("not '<n> Gb/sec (<width>X <speed>)'")
    gbps = float(match.group(1))
    return round(gbps * _BYTES_PER_SECOND_PER_GBPS) or None


def parse_node_guid(text: str) -> str:
    """``node_guid`` as printed (four groups of four hex digits)."""
    if _NODE_GUID.fullmatch(text) is None:
        raise ValueError("not a node GUID")
    return text


def parse_netdev_name(text: str) -> str:
    """An interface name: at most 15 characters, no '/', ':' or whitespace."""
    if _NETDEV_NAME.fullmatch(text) is None or text in (".", ".."):
        raise ValueError("not an interface name")
    return text


def rdma_devices(root: str | os.PathLike[str]) -> tuple[str, ...]:
    """Names under ``class/infiniband`` (``mlx5_0``, ...), sorted; empty without RDMA."""
    try:
        return tuple(sorted(os.listdir(Path(root) / _CLASS_INFINIBAND)))
    except OSError:
        return ()


def read_rdma_ports(root: str | os.PathLike[str]) -> tuple[RdmaPort, ...]:
    """Every port of every RDMA device, ordered by device name then port number."""
    return tuple(port for device in rdma_devices(root) for port in read_rdma_device(root, device))


def read_rdma_device(root: str | os.PathLike[str], device: str) -> tuple[RdmaPort, ...]:
    """Every port of one RDMA device, by port number; empty if it has no readable ports."""
    try:
        names = os.listdir(Path(root) / _CLASS_INFINIBAND / device / "ports")
    except OSError:
        return ()
    numbers = sorted(int(name) for name in names if name.isascii() and name.isdigit())
    return tuple(read_rdma_port(root, device, number) for number in numbers)


def read_rdma_port(root: str | os.PathLike[str], device: str, port: int) -> RdmaPort:
    """One port of one RDMA device (see the module docstring for the files)."""
    reader = SysfsReader(root)
    device_dir = _CLASS_INFINIBAND / device
    port_dir = device_dir / "ports" / str(port)
    parent = reader.resolve(device_dir / "device")
    tos, tclass = read_rdma_tos(reader, device, port)
    return RdmaPort(
        device=device,
        port=port,
        link_layer=reader.text(port_dir / "link_layer"),
        state=reader.value(port_dir / "state", parse_numbered_name),
        phys_state=reader.value(port_dir / "phys_state", parse_numbered_name),
        rate_bytes_per_second=reader.value(port_dir / "rate", parse_rate),
        netdev=_port_netdev(reader, device_dir, port),
        node_guid=reader.value(device_dir / "node_guid", parse_node_guid),
        pci_function=None if parent is None else pci_function_at_or_above(reader, parent),
        hw_counters=read_counter_dir(reader, port_dir / "hw_counters"),
        counters=read_counter_dir(reader, port_dir / "counters"),
        problems=tuple(reader.problems),
        default_roce_tos=tos,
        traffic_class=tclass,
    )


def read_counter_dir(reader: SysfsReader, directory: Path) -> Mapping[str, int]:
    """Every integer file in ``directory`` by name; an absent directory is empty."""
    try:
        names = sorted(os.listdir(reader.root / directory))
    except FileNotFoundError:
        return EMPTY
    except OSError as exc:
        reader.note(directory, describe_os_error(exc))
        return EMPTY
    counters = {}
    for name in names:
        if name in _NOT_COUNTERS:
            continue
        value = reader.value(directory / name, parse_unsigned)
        if value is not None:
            counters[name] = value
    return MappingProxyType(counters)


def _port_netdev(reader: SysfsReader, device_dir: Path, port: int) -> str | None:
    """The netdev of GID 0 when the kernel names one (RoCE), else the one netdev of the
    PCI function (for several: the one whose ``dev_port`` is ``port - 1``)."""
    # GID 0 has no netdev on InfiniBand ports (EINVAL): expected, so read it quietly.
    gid_0 = device_dir / "ports" / str(port) / "gid_attrs/ndevs/0"
    gid_netdev = SysfsReader(reader.root).value(gid_0, parse_netdev_name)
    if gid_netdev is not None:
        return gid_netdev
    net_dir = device_dir / "device" / "net"
    try:
        candidates = sorted(os.listdir(reader.root / net_dir))
    except OSError:
        return None
    if len(candidates) > 1:
        candidates = [
            name
            for name in candidates
            if reader.value(net_dir / name / "dev_port", parse_unsigned) == port - 1
        ]
    return candidates[0] if len(candidates) == 1 else None


class SysfsInfinibandSource:
    """RDMA ports as a :class:`~nicwatch.sources.Source`: each interface's ports (the
    ``rdma`` part of its Reading); unreadable or garbage files are one error per interface."""

    name = "sysfs_infiniband"
    fills: ClassVar[frozenset[str]] = frozenset({"rdma"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = root

    @classmethod
    def open(cls, options: SourceOptions) -> SysfsInfinibandSource:
        return cls(options.sysfs)

    def read(self, poll: Poll) -> None:
        ports: dict[str | None, list[RdmaPort]] = {}
        for port in read_rdma_ports(self.root):
            ports.setdefault(port.netdev, []).append(port)
        for nc in poll.each():
            mine = tuple(ports.get(nc.name, ()))
            poll.put(nc.name, "rdma", mine)
            problems = [p for port in mine for p in port.problems]
            if problems:
                poll.error(nc.name, self.name, "invalid", "; ".join(problems))

    def close(self) -> None:
        pass
