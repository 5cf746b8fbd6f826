"""RDMA ports from ``/sys/class/infiniband/<device>/ports/<n>/`` (RoCE and InfiniBand): the
files the kernel's ``drivers/infiniband/core/sysfs.c`` creates, read below a sysfs root.

==========================================  ================================================
``class/infiniband/<dev>/node_guid``        ``"0c42:a103:0065:4f2e"``
``class/infiniband/<dev>/board_id``         ``"MT_0000000838"`` (``fw_ver``
                                            ``"28.39.1002"``, ``hca_type`` ``"MT4129"``):
                                            the HCA's identity, text as printed
``class/infiniband/<dev>/device``           link to the PCI function (or a sub-function or
                                            auxiliary device under it); its ``driver``
                                            names the driver whose counter table applies
``.../ports/<n>/link_layer``                ``"Ethernet"`` (RoCE) or ``"InfiniBand"``
``.../ports/<n>/state``                     ``"4: ACTIVE"`` (``state_show``): the name kept
``.../ports/<n>/phys_state``                ``"5: LinkUp"``: the name is kept
``.../ports/<n>/rate``                      ``"400 Gb/sec (4X NDR)"``: kept as bytes/s
``.../ports/<n>/gid_attrs/ndevs/<i>``       netdev of GID ``i`` (EINVAL for an empty entry,
                                            and on InfiniBand ports)
``.../ports/<n>/gid_attrs/types/<i>``       ``"RoCE v2"`` or ``"IB/RoCE v1"`` (EINVAL: empty)
``.../ports/<n>/gids/<i>``                  the GID, ``%pI6`` (all zeros for an empty one)
``class/infiniband/<dev>/device/net/*``     the function's netdevs, when GID 0 names none
``.../ports/<n>/hw_counters/*``             the driver's counters (``rdma_hw_stats``),
                                            decimal; ``lifespan`` is not a counter
                                            (milliseconds the core caches values) and is
                                            skipped. Optional counters are never here.
``.../ports/<n>/counters/*``                IB PortCounters: ``show_pma_counter`` asks the
                                            driver's PMA with one MAD per read. 4, 8, 16 or
                                            32 bits wide (``PORT_PMA_ATTR``), or 64 for the
                                            data and packet counters when the PMA declares
                                            ``IB_PMA_CLASS_CAP_EXT_WIDTH`` (the
                                            ``pma_attrs_ext`` table, which alone has the
                                            ``unicast_*``/``multicast_*`` files).
                                            ``port_xmit_data`` and ``port_rcv_data`` count
                                            **4-byte words**. Values are kept raw here.
                                            ``"N/A (no PMA)"`` (a device without a PMA,
                                            or the MAD failing) is no value: left out.
``.../ports/<n>/counters_ext/*``            The 64-bit PortCountersExtended as a directory
                                            of its own (kernels before 4.5, whose
                                            ``counters/`` had 32-bit files only, and
                                            MLNX_OFED): ``port_{xmit,rcv}_data_64`` (words),
                                            ``port_{xmit,rcv}_packets_64``,
                                            ``port_{unicast,multicast}_{xmit,rcv}_packets``.
                                            Since 4.5 (145d9c541032 "IB/core: Display
                                            extended counter set if available") mainline
                                            puts them in ``counters/`` (``pma_group_ext``).
==========================================  ================================================

A counter file that fails with EINVAL, EOPNOTSUPP, EPERM, EACCES or EIO (a driver or its
firmware refusing the query: mlx5 ``ACCESS_REG`` errors on Fabric-Manager limited PFs, each
read logging in the kernel log; ``VL15_dropped`` EINVAL on switch-mode ports) is left out and
handed to the :class:`~nicwatch.sources.rdma.Backoff` the caller passes, which decides when
it is asked again; other problems (garbage, a directory) are recorded in ``problems``, as in
:mod:`nicwatch.sources.sysfs_pci`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from nicwatch.model import RdmaGid, RdmaPort
from nicwatch.sources.sysfs import (
    OpenAttributes,
    decode_attribute,
    describe_os_error,
    read_attribute,
)
from nicwatch.sources.sysfs_pci import (
    EMPTY,
    U64_MAX,
    SysfsReader,
    parse_unsigned,
    pci_function_at_or_above,
)
from nicwatch.sources.sysfs_roce import read_rdma_tos

CLASS_INFINIBAND = Path("class/infiniband")
COUNTERS_EXT = "counters_ext"
_U64_DIGITS = 20  # len(str(2**64 - 1))
NO_PMA = "N/A (no PMA)"  # show_pma_counter without a PMA (or when the MAD fails)
_NOT_COUNTERS = frozenset({"lifespan"})
# errnos a driver answers for a counter it cannot (or may not) query: backed off, not errors
BACKOFF_ERRNOS = frozenset({"EINVAL", "EOPNOTSUPP", "EPERM", "EACCES", "EIO"})

_NODE_GUID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){3}")
_NUMBERED_NAME = re.compile(r"[0-9]{1,3}: (\S.*)")
_RATE = re.compile(r"([0-9]{1,7}(?:\.5)?) Gb/sec(?: \(.*\))?")
_NETDEV_NAME = re.compile(r"[^/\s:\x00]{1,15}")  # dev_valid_name(); a C string
_GID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){7}")
_BYTES_PER_SECOND_PER_GBPS = 1_000_000_000 // 8
# GID table entries read at most per port: the kernel fills the lowest free index first
# (ib_cache add_modify_gid -> find_gid with the first empty slot), so the valid entries of a
# port sit at the bottom; the scan stops after this many empty entries in a row.
GID_EMPTY_RUN = 16
GID_MAX = 1024  # rxe's table (RXE_PORT_GID_TBL_LEN); mlx5 has 255 or fewer

# Kernel driver names (the ``driver`` link of the device behind the RDMA device, or the
# RDMA device name's prefix) -> the counter table that applies (normalize.rdma_drivers).
DRIVER_KEYS = (
    ("mlx5", "mlx5"), ("bnxt", "bnxt_re"), ("irdma", "irdma"), ("ice", "irdma"),
    ("i40e", "irdma"), ("efa", "efa"), ("mana", "mana"), ("ionic", "ionic"), ("rxe", "rxe"),
    ("rdma_rxe", "rxe"), ("siw", "siw"), ("mlx4", "mlx4"), ("hns", "hns"), ("qedr", "qedr"),
    ("erdma", "erdma"),
)


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
    """An interface name: at most 15 characters, no '/', ':', whitespace or NUL."""
    if _NETDEV_NAME.fullmatch(text) is None or text in (".", ".."):
        raise ValueError("not an interface name")
    return text


def parse_gid(text: str) -> str:
    """A GID as ``%pI6`` prints it (eight groups of four hex digits)."""
    if _GID.fullmatch(text) is None:
        raise ValueError("not a GID")
    return text


def driver_key(driver: str | None, device: str) -> str | None:
    """The counter table of an RDMA device: by the kernel driver of the device behind it
    (``mlx5_core``, ``mlx5_ib``, ``bnxt_en``, ``irdma``, ``efa``, ...), else by its name
    (``mlx5_0``, ``rxe0``) as the drivers name their devices by default."""
    for name in (driver, device):
        if name:
            for prefix, key in DRIVER_KEYS:
                if name.startswith(prefix):
                    return key
    return None


def rdma_devices(root: str | os.PathLike[str]) -> tuple[str, ...]:
    """Names under ``class/infiniband`` (``mlx5_0``, ...), sorted; empty without RDMA."""
    try:
        return tuple(sorted(os.listdir(Path(root) / CLASS_INFINIBAND)))
    except OSError:
        return ()


def port_numbers(root: str | os.PathLike[str], device: str) -> tuple[int, ...]:
    """The port numbers of one RDMA device, sorted; empty if it has no readable ports."""
    try:
        names = os.listdir(Path(root) / CLASS_INFINIBAND / device / "ports")
    except OSError:
        return ()
    return tuple(sorted(int(name) for name in names if name.isascii() and name.isdigit()))


def counter_names(root: str | os.PathLike[str], device: str, port: int, group: str,
                  problems: list[str]) -> tuple[str, ...] | None:
    """The files of ``hw_counters`` or ``counters`` of one port (None: no such directory)."""
    directory = Path(root) / CLASS_INFINIBAND / device / "ports" / str(port) / group
    try:
        return tuple(sorted(n for n in os.listdir(directory) if n not in _NOT_COUNTERS))
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(f"{CLASS_INFINIBAND / device / 'ports' / str(port) / group}: "
                        f"{describe_os_error(exc)}")
        return None


CounterFailed = Callable[[str, str], None]  # (counter key, errno name)


def read_counters(root: str | os.PathLike[str], device: str, port: int, group: str,
                  names: Iterable[str], problems: list[str],
                  failed: CounterFailed | None = None, key_prefix: str = "",
                  files: OpenAttributes | None = None) -> dict[str, int]:
    """The integer files ``names`` of one port's ``group`` directory. A file the driver
    refuses (BACKOFF_ERRNOS) is left out and passed to ``failed`` (``key_prefix`` + name)
    when given, else recorded as a problem; absent files are left out quietly. ``files``:
    read them through these kept-open files (the daemon's source, every poll)."""
    relative = f"{CLASS_INFINIBAND}/{device}/ports/{port}/{group}"  # no pathlib per poll
    directory = os.path.join(root, relative, "")
    out: dict[str, int] = {}
    for name in names:
        path = directory + name
        if files is not None:
            data = files.read_bytes(path)
            # the usual "<decimal>\n" of show_pma_counter / show_hw_stats, taken as it is
            if data is not None and data[-1:] == b"\n" and data[:-1].isdigit() \
                    and len(data) <= _U64_DIGITS + 1:
                value = int(data)
                if value <= U64_MAX:
                    out[name] = value
                    continue
            text, problem = read_attribute(path) if data is None else decode_attribute(data)
        else:
            text, problem = read_attribute(path)
        if problem is not None:
            reason = problem.split(" ", 1)[0]
            if failed is not None and reason in BACKOFF_ERRNOS:
                failed(key_prefix + name, reason)
            else:
                problems.append(f"{relative}/{name}: {problem}")
            continue
        if text is None or text == NO_PMA:
            continue
        try:
            out[name] = parse_unsigned(text)
        except ValueError as exc:
            problems.append(f"{relative}/{name}: unparsable {text[:40]!r} ({exc})")
    return out


def read_gids(root: str | os.PathLike[str], device: str, port: int,
              problems: list[str]) -> tuple[RdmaGid, ...] | None:
    """The valid GID table entries of one port, lowest index first (see GID_EMPTY_RUN);
    None when the port has no GID table in sysfs."""
    base = Path(root) / CLASS_INFINIBAND / device / "ports" / str(port)
    try:
        size = min(len(os.listdir(base / "gids")), GID_MAX)
    except OSError:
        return None
    types, ndevs, gids = (str(base / "gid_attrs/types") + os.sep,
                          str(base / "gid_attrs/ndevs") + os.sep, str(base / "gids") + os.sep)
    out: list[RdmaGid] = []
    empty = 0
    for index in range(size):
        kind, _ = read_attribute(types + str(index))
        if kind is None:  # EINVAL: an empty (or reserved) entry
            empty += 1
            if empty >= GID_EMPTY_RUN:
                break
            continue
        empty = 0
        gid_text, _ = read_attribute(gids + str(index))
        ndev, _ = read_attribute(ndevs + str(index))
        try:
            gid = parse_gid(gid_text or "")
        except ValueError:
            problems.append(f"{CLASS_INFINIBAND / device / 'ports' / str(port)}/gids/{index}: "
                            f"unparsable {(gid_text or '')[:40]!r}")
            continue
        out.append(RdmaGid(index, gid, kind, ndev))
    return tuple(out)


def port_netdev(reader: SysfsReader, device_dir: Path, port: int) -> str | None:
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


def device_driver(reader: SysfsReader, device: str) -> str | None:
    """The kernel driver bound to the device behind an RDMA device (``device/driver``)."""
    try:
        return os.path.basename(os.readlink(reader.root / CLASS_INFINIBAND / device
                                            / "device" / "driver"))
    except OSError:
        return None


def read_port_attributes(root: str | os.PathLike[str], device: str, port: int,
                         netdev: bool = True) -> RdmaPort:
    """One port's attributes, without counters: link layer, state, rate, GUID, PCI function,
    driver, ToS settings, netdev (``netdev``: look it up in sysfs), its MTU and the GIDs of
    a RoCE port."""
    reader = SysfsReader(root)
    device_dir = CLASS_INFINIBAND / device
    port_dir = device_dir / "ports" / str(port)
    parent = reader.resolve(device_dir / "device")
    tos, tclass = read_rdma_tos(reader, device, port)
    link_layer = reader.text(port_dir / "link_layer")
    name = port_netdev(reader, device_dir, port) if netdev else None
    problems: list[str] = []
    gids = read_gids(root, device, port, problems) if link_layer == "Ethernet" else None
    mtu = (reader.value(Path("class/net") / name / "mtu", parse_unsigned)
           if name is not None else None)
    return RdmaPort(
        device=device,
        port=port,
        link_layer=link_layer,
        state=reader.value(port_dir / "state", parse_numbered_name),
        phys_state=reader.value(port_dir / "phys_state", parse_numbered_name),
        rate_bytes_per_second=reader.value(port_dir / "rate", parse_rate),
        netdev=name,
        node_guid=reader.value(device_dir / "node_guid", parse_node_guid),
        pci_function=None if parent is None else pci_function_at_or_above(reader, parent),
        hw_counters=EMPTY,
        counters=EMPTY,
        problems=tuple(reader.problems + problems),
        default_roce_tos=tos,
        traffic_class=tclass,
        driver=driver_key(device_driver(reader, device), device),
        gids=gids,
        netdev_mtu=mtu,
        board_id=reader.text(device_dir / "board_id"),
        firmware_version=reader.text(device_dir / "fw_ver"),
        hca_type=reader.text(device_dir / "hca_type"),
    )


def read_counter_dir(root: str | os.PathLike[str], device: str, port: int, group: str,
                     problems: list[str]) -> Mapping[str, int]:
    """Every integer file of one port's ``group`` directory by name; absent is empty."""
    names = counter_names(root, device, port, group, problems)
    if names is None:
        return EMPTY
    return MappingProxyType(read_counters(root, device, port, group, names, problems))


def read_rdma_ports(root: str | os.PathLike[str]) -> tuple[RdmaPort, ...]:
    """Every port of every RDMA device, ordered by device name then port number, read
    whole (no back-off: a one-shot read; the daemon's source is nicwatch.sources.rdma)."""
    return tuple(port for device in rdma_devices(root) for port in read_rdma_device(root, device))


def read_rdma_device(root: str | os.PathLike[str], device: str) -> tuple[RdmaPort, ...]:
    """Every port of one RDMA device, by port number; empty if it has no readable ports."""
    return tuple(read_rdma_port(root, device, number) for number in port_numbers(root, device))


def read_rdma_port(root: str | os.PathLike[str], device: str, port: int) -> RdmaPort:
    """One port of one RDMA device with all its counters (see the module docstring)."""
    attrs = read_port_attributes(root, device, port)
    problems = list(attrs.problems)
    hw = read_counter_dir(root, device, port, "hw_counters", problems)
    pma = read_counter_dir(root, device, port, "counters", problems)
    ext = read_counter_dir(root, device, port, COUNTERS_EXT, problems)
    return replace(attrs, hw_counters=hw, counters=pma, counters_ext=ext,
                   problems=tuple(problems))
