"""Link state and netdev counters of every interface from ONE rtnetlink ``RTM_GETLINK`` dump.

What ``/sys/class/net/<if>/`` spreads over ~30 attribute files per interface (ifindex,
address, operstate, mtu, carrier and its change counts, the 24 ``statistics/*`` files)
comes here in one dump for the whole namespace: ``struct ifinfomsg`` and the attributes
``IFLA_ADDRESS``, ``IFLA_IFNAME``, ``IFLA_MTU``, ``IFLA_OPERSTATE``, ``IFLA_STATS64``
(``struct rtnl_link_stats64``), ``IFLA_CARRIER``, ``IFLA_CARRIER_CHANGES``,
``IFLA_CARRIER_UP_COUNT`` and ``IFLA_CARRIER_DOWN_COUNT`` (``include/uapi/linux/if_link.h``,
``rtnetlink.h``; filled by ``rtnl_fill_ifinfo()`` in net/core/rtnetlink.c).

The values are those sysfs shows, read the same way by the kernel:

* ``statistics/*`` and ``IFLA_STATS64`` are both ``dev_get_stats()``; only the fields sysfs
  has files for are kept (``rx_otherhost_dropped``, 6.0+, has none), under the file names;
* ``operstate`` is ``down`` while the device is not running, in both;
* ``carrier`` is refused by sysfs (EINVAL) while the device is down, and is ``None`` here
  then too (IFF_UP clear in ``ifi_flags``); ``carrier_changes`` is up + down counts in both.

The socket sees the network namespace it was opened in, the daemon's own, which is the one
its ``/sys`` shows; so the daemon uses this source only when ``--path.sysfs`` is the live
``/sys`` (a fixture tree is read as files). Speed and duplex are not in the dump (the
collector reads them with one ethtool netlink LINKMODES_GET dump, or from sysfs); the
device behind an interface stays a sysfs read.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from nicwatch.sources.netlink import (
    NETLINK_ROUTE,
    NLA_HDR,
    NLA_TYPE_MASK,
    NLM_F_DUMP,
    NetlinkSocket,
    ParseError,
    decode_uint,
)

RTM_GETLINK = 18
RTM_NEWLINK = 16
IFF_UP = 0x1

# enum IFLA_* (uapi if_link.h), the attributes read here.
IFLA_ADDRESS = 1
IFLA_IFNAME = 3
IFLA_MTU = 4
IFLA_OPERSTATE = 16
IFLA_STATS64 = 23
IFLA_CARRIER = 33
IFLA_CARRIER_CHANGES = 35
IFLA_CARRIER_UP_COUNT = 47
IFLA_CARRIER_DOWN_COUNT = 48

# struct ifinfomsg: ifi_family, pad, ifi_type, ifi_index, ifi_flags, ifi_change.
IFINFOMSG = struct.Struct("=BxHiII")

# enum IF_OPER_* (RFC 2863), as sysfs `operstate` prints them.
OPERSTATES = ("unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up")

# struct rtnl_link_stats64 in field order; the first 24 are the statistics/ files of sysfs
# (net/core/net-sysfs.c), the 25th (rx_otherhost_dropped) has no file and is not read.
STATS64_FIELDS = (
    "rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors",
    "rx_dropped", "tx_dropped", "multicast", "collisions", "rx_length_errors",
    "rx_over_errors", "rx_crc_errors", "rx_frame_errors", "rx_fifo_errors",
    "rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
    "tx_heartbeat_errors", "tx_window_errors", "rx_compressed", "tx_compressed",
    "rx_nohandler",
)
_SYSFS_ORDER = sorted(range(len(STATS64_FIELDS)), key=STATS64_FIELDS.__getitem__)
_STATS64 = struct.Struct(f"={len(STATS64_FIELDS)}Q")
_SORTED_NAMES = tuple(STATS64_FIELDS[i] for i in _SYSFS_ORDER)
_IN_SYSFS_ORDER = operator.itemgetter(*_SYSFS_ORDER)
_WANTED = frozenset({IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_OPERSTATE, IFLA_STATS64,
                     IFLA_CARRIER, IFLA_CARRIER_CHANGES, IFLA_CARRIER_UP_COUNT,
                     IFLA_CARRIER_DOWN_COUNT})
_ALL_WANTED = len(_WANTED)


@dataclass(frozen=True, slots=True)
class Link:
    """One interface as the dump describes it; a field the kernel did not send is None
    (``stats`` empty)."""

    name: str
    ifindex: int
    up: bool  # IFF_UP
    address: str | None
    operstate: str | None
    mtu: int | None
    carrier: bool | None  # None while the interface is down, as sysfs
    carrier_changes: int | None
    carrier_up_count: int | None
    carrier_down_count: int | None
    stats: Mapping[str, int]  # sysfs statistics/ file name -> value, in file-name order


def parse_link(payload: bytes) -> Link | None:
    """An RTM_NEWLINK message's payload (``ifinfomsg`` and attributes) -> Link; None when it
    carries no IFLA_IFNAME. Raises ParseError for bytes that do not fit the layout."""
    if len(payload) < IFINFOMSG.size:
        raise ParseError(f"RTM_NEWLINK of {len(payload)} bytes has no ifinfomsg")
    _family, _type, ifindex, flags, _change = IFINFOMSG.unpack_from(payload)
    spans: dict[int, tuple[int, int]] = {}
    # The top-level attribute walk is the inner loop (~50 attributes per link, most of
    # them skipped), so it is written out here rather than through netlink.attributes().
    unpack = NLA_HDR.unpack_from
    start, end = IFINFOMSG.size, len(payload)
    while start < end:
        if end - start < 4:
            raise ParseError(f"{end - start} trailing bytes after the last attribute")
        length, attr_type = unpack(payload, start)
        if length < 4 or start + length > end:
            raise ParseError(f"attribute {attr_type & NLA_TYPE_MASK} of length {length} "
                             f"does not fit its {end - start} bytes")
        attr_type &= NLA_TYPE_MASK
        if attr_type in _WANTED:
            spans[attr_type] = (start + 4, start + length)
            if len(spans) == _ALL_WANTED:  # the rest (VF info, LINKINFO, AF_SPEC, ...)
                break                      # holds nothing read here
        start += (length + 3) & ~3
    name = spans.get(IFLA_IFNAME)
    if name is None:
        return None

    def uint(attr_type: int) -> int | None:
        span = spans.get(attr_type)
        return None if span is None else decode_uint(payload, *span)

    stats: Mapping[str, int] = MappingProxyType({})
    span = spans.get(IFLA_STATS64)
    if span is not None:
        if span[1] - span[0] < _STATS64.size:
            raise ParseError(f"IFLA_STATS64 of {span[1] - span[0]} bytes")
        values = _STATS64.unpack_from(payload, span[0])
        stats = MappingProxyType(dict(zip(_SORTED_NAMES, _IN_SYSFS_ORDER(values), strict=False)))
    address = spans.get(IFLA_ADDRESS)
    operstate = uint(IFLA_OPERSTATE)
    carrier = uint(IFLA_CARRIER)
    up = bool(flags & IFF_UP)
    return Link(
        name=payload[name[0]:name[1]].rstrip(b"\0").decode("utf-8", "surrogateescape"),
        ifindex=ifindex,
        up=up,
        address=None if address is None or address[0] == address[1]
        else payload[address[0]:address[1]].hex(":"),
        operstate=OPERSTATES[operstate] if operstate is not None and operstate < len(
            OPERSTATES) else None,
        mtu=uint(IFLA_MTU),
        carrier=None if carrier is None or not up else carrier == 1,
        carrier_changes=uint(IFLA_CARRIER_CHANGES),
        carrier_up_count=uint(IFLA_CARRIER_UP_COUNT),
        carrier_down_count=uint(IFLA_CARRIER_DOWN_COUNT),
        stats=stats,
    )


class RtNetlink(NetlinkSocket):
    """An rtnetlink socket, reused across polls; :meth:`links` is one dump. Sees the
    interfaces of the network namespace it was created in. Not thread-safe."""

    family_header = IFINFOMSG.size

    def __init__(self) -> None:
        super().__init__(NETLINK_ROUTE)

    def __enter__(self) -> RtNetlink:
        return self

    def payloads(self) -> list[bytes]:
        """The RTM_NEWLINK payloads (``ifinfomsg`` and attributes) of one dump, unparsed."""
        return self.request(RTM_GETLINK, NLM_F_DUMP, IFINFOMSG.pack(0, 0, 0, 0, 0))

    def links(self) -> dict[str, Link]:
        """Every interface of the namespace by name. Raises KernelError, ParseError or
        OSError when the dump fails."""
        out = {}
        for payload in self.payloads():
            link = parse_link(payload)
            if link is not None:
                out[link.name] = link
        return out


# --------------------------------------------------------------------------- addresses

RTM_GETADDR = 22
IFA_ADDRESS = 1
IFA_LOCAL = 2
IFA_FLAGS = 8
IFA_F_TENTATIVE = 0x40
_IFADDRMSG = struct.Struct("=BBBBI")  # ifa_family, ifa_prefixlen, ifa_flags, ifa_scope, ifa_index
_AF_INET, _AF_INET6 = 2, 10


class _AddressNetlink(NetlinkSocket):
    family_header = _IFADDRMSG.size

    def __init__(self) -> None:
        super().__init__(NETLINK_ROUTE)


def parse_address(payload: bytes) -> tuple[int, str] | None:
    """(ifindex, address) of one RTM_NEWADDR message (``struct ifaddrmsg`` then ``IFA_*``,
    include/uapi/linux/if_addr.h; filled by inet_fill_ifaddr / inet6_fill_ifaddr). IPv4
    uses IFA_LOCAL (IFA_ADDRESS is the peer of a point-to-point link), IPv6 IFA_ADDRESS. A
    tentative IPv6 address (duplicate address detection not done) is left out: the kernel
    adds its GIDs only once it is usable. None for other families."""
    import ipaddress

    family, _plen, flags, _scope, ifindex = _IFADDRMSG.unpack_from(payload)
    if family not in (_AF_INET, _AF_INET6):
        return None
    found: dict[int, bytes] = {}
    pos, end = _IFADDRMSG.size, len(payload)
    while pos + NLA_HDR.size <= end:
        length, kind = NLA_HDR.unpack_from(payload, pos)
        if length < NLA_HDR.size or pos + length > end:
            raise ParseError(f"address attribute of length {length} does not fit")
        found[kind & NLA_TYPE_MASK] = payload[pos + NLA_HDR.size:pos + length]
        pos += (length + 3) & ~3
    if IFA_FLAGS in found and len(found[IFA_FLAGS]) == 4:
        flags = struct.unpack("=I", found[IFA_FLAGS])[0]
    if flags & IFA_F_TENTATIVE:
        return None
    raw = found.get(IFA_LOCAL) if family == _AF_INET else None
    raw = raw or found.get(IFA_ADDRESS)
    if raw is None or len(raw) not in (4, 16):
        return None
    return ifindex, str(ipaddress.ip_address(raw))


def interface_addresses() -> dict[str, tuple[str, ...]]:
    """Every IPv4 and IPv6 address of every interface of this network namespace by
    interface name (one RTM_GETADDR dump, names from one RTM_GETLINK dump). Raises
    KernelError, ParseError or OSError."""
    with RtNetlink() as links_socket:
        names = {link.ifindex: name for name, link in links_socket.links().items()}
    out: dict[str, list[str]] = {}
    with _AddressNetlink() as sock:
        for payload in sock.request(RTM_GETADDR, NLM_F_DUMP, _IFADDRMSG.pack(0, 0, 0, 0, 0)):
            parsed = parse_address(payload)
            if parsed is not None and parsed[0] in names:
                out.setdefault(names[parsed[0]], []).append(parsed[1])
    return {name: tuple(addresses) for name, addresses in out.items()}
