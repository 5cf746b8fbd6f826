"""Driver-independent NIC parameters and statistics from the kernel's ethtool netlink family.

One :class:`EthtoolNetlink` is opened by the daemon and reused for every poll. Each
:meth:`EthtoolNetlink.read_all` issues one DUMP request per message type (RINGS_GET,
CHANNELS_GET, PAUSE_GET, FEC_GET, STATS_GET), so the cost does not grow with a request per
interface, and turns the replies into one :class:`~nicwatch.model.EthtoolNetlinkInfo` per
ifindex.

Protocol: ``Documentation/networking/ethtool-netlink.rst``. Message and attribute numbers are
the uapi enums of ``include/uapi/linux/ethtool_netlink.h`` (``ethtool_netlink_generated.h``
since ~6.15); the values used here have been stable since they were added (5.7 - 5.13).

"Absent is not zero": the kernel omits an attribute the driver did not fill, and so do we.
A dump silently skips a device whose driver does not implement the message (veth and
virtio_net for PAUSE/FEC, veth for RINGS), so such a device gets ``None`` for that part.
"""

from __future__ import annotations

import dataclasses
import struct
import sys
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType

from pyroute2.netlink import NLA_F_NESTED, NLM_F_DUMP, NLM_F_REQUEST, genlmsg, nla
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.generic import GenericNetlinkSocket

from nicwatch.model import Channels, EthtoolNetlinkInfo, FecParams, PauseParams, Rings
from nicwatch.sources import errno_name

__all__ = [
    "EthtoolNetlink",
    "EthtoolNetlinkUnavailable",
    "NetlinkResult",
    "decode_fec_array",
    "decode_group_stat",
]

ETHTOOL_GENL_NAME = "ethtool"
ETHTOOL_GENL_VERSION = 1

# enum ETHTOOL_MSG_* (userspace to kernel), uapi ethtool_netlink.h.
ETHTOOL_MSG_RINGS_GET = 15
ETHTOOL_MSG_CHANNELS_GET = 17
ETHTOOL_MSG_PAUSE_GET = 21
ETHTOOL_MSG_FEC_GET = 29
ETHTOOL_MSG_STATS_GET = 32

# ETHTOOL_A_HEADER_FLAGS bits, uapi ethtool_netlink.h.
ETHTOOL_FLAG_STATS = 1 << 2

# enum ETHTOOL_STATS_* (STATS_GET group ids) with the names ethtool uses for them
# (string set ETH_SS_STATS_STD), and the groups we request.
STATS_GROUPS = ("eth-phy", "eth-mac", "eth-ctrl", "rmon")

# Stat names per group, indexed by the stat's attribute type inside ETHTOOL_A_STATS_GRP_STAT
# (enums ETHTOOL_A_STATS_ETH_PHY_*, _ETH_MAC_*, _ETH_CTRL_*, _RMON_*). The eth-* names are the
# IEEE 802.3 clause 30 attribute names without the leading "a", exactly as the kernel's string
# sets ETH_SS_STATS_ETH_{PHY,MAC,CTRL} spell them (net/ethtool/common.c).
STAT_NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "eth-phy": ("SymbolErrorDuringCarrier",),
    "eth-mac": (
        "FramesTransmittedOK",
        "SingleCollisionFrames",
        "MultipleCollisionFrames",
        "FramesReceivedOK",
        "FrameCheckSequenceErrors",
        "AlignmentErrors",
        "OctetsTransmittedOK",
        "FramesWithDeferredXmissions",
        "LateCollisions",
        "FramesAbortedDueToXSColls",
        "FramesLostDueToIntMACXmitError",
        "CarrierSenseErrors",
        "OctetsReceivedOK",
        "FramesLostDueToIntMACRcvError",
        "MulticastFramesXmittedOK",
        "BroadcastFramesXmittedOK",
        "FramesWithExcessiveDeferral",
        "MulticastFramesReceivedOK",
        "BroadcastFramesReceivedOK",
        "InRangeLengthErrors",
        "OutOfRangeLengthField",
        "FrameTooLongErrors",
    ),
    "eth-ctrl": (
        "MACControlFramesTransmitted",
        "MACControlFramesReceived",
        "UnsupportedOpcodesReceived",
    ),
    # RFC 2819 etherStats{Undersize,Oversize}Pkts, etherStatsFragments, etherStatsJabbers.
    "rmon": ("undersize_pkts", "oversize_pkts", "fragments", "jabbers"),
})

# FEC link-mode bits (enum ethtool_link_mode_bit_indices, uapi ethtool.h) -> FEC mode name.
# FEC_GET reports configured modes as a bitset of these bits and the active mode as one bit
# index; ETHTOOL_FEC_OFF is reported as the FEC_NONE link mode.
FEC_LINK_MODES: Mapping[int, str] = MappingProxyType({
    49: "off",  # ETHTOOL_LINK_MODE_FEC_NONE_BIT
    50: "rs",  # ETHTOOL_LINK_MODE_FEC_RS_BIT
    51: "baser",  # ETHTOOL_LINK_MODE_FEC_BASER_BIT
    74: "llrs",  # ETHTOOL_LINK_MODE_FEC_LLRS_BIT
})

# ETHTOOL_A_FEC_STAT_* array attributes -> std_stats key stem.
_FEC_STATS = (
    ("ETHTOOL_A_FEC_STAT_CORRECTED", "fec.corrected_blocks"),
    ("ETHTOOL_A_FEC_STAT_UNCORR", "fec.uncorrectable_blocks"),
    ("ETHTOOL_A_FEC_STAT_CORR_BITS", "fec.corrected_bits"),
)

_NLA_HDR = struct.Struct("=HH")  # struct nlattr: nla_len, nla_type (host byte order)
_NLA_TYPE_MASK = 0x3FFF  # ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER)


class EthtoolNetlinkUnavailable(RuntimeError):
    """The kernel has no ethtool generic-netlink family (before 5.6, or
    CONFIG_ETHTOOL_NETLINK=n)."""


@dataclasses.dataclass(frozen=True, slots=True)
class NetlinkResult:
    """One :meth:`EthtoolNetlink.read_all`.

    ``infos`` maps ifindex to what the dumps said about it. ``errors`` maps a message type
    (``"RINGS_GET"``, ``"CHANNELS_GET"``, ``"PAUSE_GET"``, ``"FEC_GET"``, ``"STATS_GET"``)
    whose dump failed as a whole to the error kind (errno name such as ``"EOPNOTSUPP"``, or
    ``"parse"``); that message contributed nothing to ``infos``.
    """

    infos: Mapping[int, EthtoolNetlinkInfo]
    errors: Mapping[str, str]


# --- pyroute2 message classes --------------------------------------------------------------
# nla_map entries are positional: the n-th entry is attribute type n. A type given as a string
# such as "stats" names a class attribute of the message, hence the lower-case nested classes.


class EthtoolHeader(nla):
    """ETHTOOL_A_HEADER_*: the request/reply header nest shared by all messages."""

    nla_flags = NLA_F_NESTED
    nla_map = (
        ("ETHTOOL_A_HEADER_UNSPEC", "none"),
        ("ETHTOOL_A_HEADER_DEV_INDEX", "uint32"),
        ("ETHTOOL_A_HEADER_DEV_NAME", "asciiz"),
        ("ETHTOOL_A_HEADER_FLAGS", "uint32"),
    )


class EthtoolBitset(nla):
    """ETHTOOL_A_BITSET_*: compact (VALUE/MASK bytes) or verbose (BITS) bit set."""

    nla_flags = NLA_F_NESTED
    nla_map = (
        ("ETHTOOL_A_BITSET_UNSPEC", "none"),
        ("ETHTOOL_A_BITSET_NOMASK", "flag"),
        ("ETHTOOL_A_BITSET_SIZE", "uint32"),
        ("ETHTOOL_A_BITSET_BITS", "bits"),
        ("ETHTOOL_A_BITSET_VALUE", "cdata"),
        ("ETHTOOL_A_BITSET_MASK", "cdata"),
    )

    class bits(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("ETHTOOL_A_BITSET_BITS_UNSPEC", "none"),
            ("ETHTOOL_A_BITSET_BITS_BIT", "bit"),
        )

        class bit(nla):
            nla_flags = NLA_F_NESTED
            nla_map = (
                ("ETHTOOL_A_BITSET_BIT_UNSPEC", "none"),
                ("ETHTOOL_A_BITSET_BIT_INDEX", "uint32"),
                ("ETHTOOL_A_BITSET_BIT_NAME", "asciiz"),
                ("ETHTOOL_A_BITSET_BIT_VALUE", "flag"),
            )


class RingsMsg(genlmsg):
    """RINGS_GET request and reply (ETHTOOL_A_RINGS_*; later attributes are not used)."""

    ethtool_header = EthtoolHeader
    nla_map = (
        ("ETHTOOL_A_RINGS_UNSPEC", "none"),
        ("ETHTOOL_A_RINGS_HEADER", "ethtool_header"),
        ("ETHTOOL_A_RINGS_RX_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_MINI_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_JUMBO_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_TX_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_RX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_MINI", "uint32"),
        ("ETHTOOL_A_RINGS_RX_JUMBO", "uint32"),
        ("ETHTOOL_A_RINGS_TX", "uint32"),
    )


class ChannelsMsg(genlmsg):
    """CHANNELS_GET request and reply (ETHTOOL_A_CHANNELS_*)."""

    ethtool_header = EthtoolHeader
    nla_map = (
        ("ETHTOOL_A_CHANNELS_UNSPEC", "none"),
        ("ETHTOOL_A_CHANNELS_HEADER", "ethtool_header"),
        ("ETHTOOL_A_CHANNELS_RX_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_TX_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_OTHER_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_COMBINED_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_RX_COUNT", "uint32"),
        ("ETHTOOL_A_CHANNELS_TX_COUNT", "uint32"),
        ("ETHTOOL_A_CHANNELS_OTHER_COUNT", "uint32"),
        ("ETHTOOL_A_CHANNELS_COMBINED_COUNT", "uint32"),
    )


class PauseMsg(genlmsg):
    """PAUSE_GET request and reply (ETHTOOL_A_PAUSE_*, stats ETHTOOL_A_PAUSE_STAT_*)."""

    ethtool_header = EthtoolHeader
    nla_map = (
        ("ETHTOOL_A_PAUSE_UNSPEC", "none"),
        ("ETHTOOL_A_PAUSE_HEADER", "ethtool_header"),
        ("ETHTOOL_A_PAUSE_AUTONEG", "uint8"),
        ("ETHTOOL_A_PAUSE_RX", "uint8"),
        ("ETHTOOL_A_PAUSE_TX", "uint8"),
        ("ETHTOOL_A_PAUSE_STATS", "stats"),
    )

    class stats(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("ETHTOOL_A_PAUSE_STAT_UNSPEC", "none"),
            ("ETHTOOL_A_PAUSE_STAT_PAD", "none"),
            ("ETHTOOL_A_PAUSE_STAT_TX_FRAMES", "uint64"),
            ("ETHTOOL_A_PAUSE_STAT_RX_FRAMES", "uint64"),
        )


class FecMsg(genlmsg):
    """FEC_GET request and reply (ETHTOOL_A_FEC_*, stats ETHTOOL_A_FEC_STAT_*).

    Each stat is a binary array of u64 ``[total, lane0, lane1, ...]``; see
    :func:`decode_fec_array`. The 6.18 histogram (ETHTOOL_A_FEC_STAT_HIST) is not read.
    """

    ethtool_header = EthtoolHeader
    modes = EthtoolBitset
    nla_map = (
        ("ETHTOOL_A_FEC_UNSPEC", "none"),
        ("ETHTOOL_A_FEC_HEADER", "ethtool_header"),
        ("ETHTOOL_A_FEC_MODES", "modes"),
        ("ETHTOOL_A_FEC_AUTO", "uint8"),
        ("ETHTOOL_A_FEC_ACTIVE", "uint32"),
        ("ETHTOOL_A_FEC_STATS", "stats"),
    )

    class stats(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("ETHTOOL_A_FEC_STAT_UNSPEC", "none"),
            ("ETHTOOL_A_FEC_STAT_PAD", "none"),
            ("ETHTOOL_A_FEC_STAT_CORRECTED", "cdata"),
            ("ETHTOOL_A_FEC_STAT_UNCORR", "cdata"),
            ("ETHTOOL_A_FEC_STAT_CORR_BITS", "cdata"),
        )


class StatsMsg(genlmsg):
    """STATS_GET request and reply (ETHTOOL_A_STATS_*, groups ETHTOOL_A_STATS_GRP_*).

    Attribute 1 is PAD, so the header is attribute 2. Each GRP_STAT nest holds a single
    attribute whose *type* is the stat index (starting at 0), so it is kept as raw bytes and
    decoded by :func:`decode_group_stat`. The rmon histograms (GRP_HIST_RX/TX) are not read.
    """

    ethtool_header = EthtoolHeader
    groups = EthtoolBitset
    nla_map = (
        ("ETHTOOL_A_STATS_UNSPEC", "none"),
        ("ETHTOOL_A_STATS_PAD", "none"),
        ("ETHTOOL_A_STATS_HEADER", "ethtool_header"),
        ("ETHTOOL_A_STATS_GROUPS", "groups"),
        ("ETHTOOL_A_STATS_GRP", "group"),
    )

    class group(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("ETHTOOL_A_STATS_GRP_UNSPEC", "none"),
            ("ETHTOOL_A_STATS_GRP_PAD", "none"),
            ("ETHTOOL_A_STATS_GRP_ID", "uint32"),
            ("ETHTOOL_A_STATS_GRP_SS_ID", "uint32"),
            ("ETHTOOL_A_STATS_GRP_STAT", "cdata"),
        )


# --- pure decoding -------------------------------------------------------------------------


def decode_uint(raw: bytes) -> int:
    """An unsigned netlink integer of any width (NLA_UINT is 4 or 8 bytes), host order."""
    return int.from_bytes(raw, sys.byteorder)


def decode_fec_array(raw: bytes) -> tuple[int, ...]:
    """A FEC stat attribute payload: u64 ``[total, lane0, lane1, ...]``.

    Empty when the driver does not report the stat (the kernel then sends a zero-length
    attribute, ``fec_stats_recalc()`` in net/ethtool/fec.c).
    """
    count = len(raw) // 8
    return struct.unpack_from(f"={count}Q", raw)


def fec_array_stats(stem: str, raw: bytes) -> dict[str, int]:
    """``{stem: total, stem.lane0: ..., ...}`` for the lanes present in a FEC stat array."""
    values = decode_fec_array(raw)
    if not values:
        return {}
    stats = {stem: values[0]}
    stats.update((f"{stem}.lane{lane}", value) for lane, value in enumerate(values[1:]))
    return stats


def decode_group_stat(raw: bytes) -> tuple[int, int]:
    """The payload of one ETHTOOL_A_STATS_GRP_STAT nest -> ``(stat index, value)``.

    The nest wraps exactly one attribute whose type is the stat index; its value is a u64, or
    an NLA_UINT of 4 or 8 bytes in newer kernels, so it is decoded by its length.
    """
    length, attr_type = _NLA_HDR.unpack_from(raw)
    return attr_type & _NLA_TYPE_MASK, decode_uint(raw[_NLA_HDR.size:length])


# --- reply -> model ------------------------------------------------------------------------

Part = dict[str, object]
"""What one reply says about its device: EthtoolNetlinkInfo field values, with
``std_stats`` as a plain dict."""


class Attrs:
    """A message's or nest's attributes by name, found in one pass over the list and each
    decoded only when asked for (pyroute2's ``get_attr`` rescans the list on every call).
    Use :func:`repeated` for attributes that occur more than once."""

    __slots__ = ("_slots",)

    def __init__(self, msg: nla) -> None:
        self._slots = {slot.name: slot for slot in msg["attrs"]}

    def get(self, name: str):
        slot = self._slots.get(name)
        return None if slot is None else slot.value

    def __contains__(self, name: str) -> bool:
        return name in self._slots


def repeated(msg: nla, name: str) -> list:
    """Every value of an attribute that may occur more than once."""
    return [slot.value for slot in msg["attrs"] if slot.name == name]


def rings_part(msg: RingsMsg) -> Part:
    """Current and maximum rx/tx ring sizes. The kernel omits a ring whose maximum is 0."""
    attrs = Attrs(msg)
    rings = Rings(
        rx=attrs.get("ETHTOOL_A_RINGS_RX"),
        tx=attrs.get("ETHTOOL_A_RINGS_TX"),
        rx_max=attrs.get("ETHTOOL_A_RINGS_RX_MAX"),
        tx_max=attrs.get("ETHTOOL_A_RINGS_TX_MAX"),
    )
    return {"rings": _none_if_empty(rings)}


def channels_part(msg: ChannelsMsg) -> Part:
    """Current and maximum channel counts. The kernel omits a kind whose maximum is 0."""
    attrs = Attrs(msg)
    channels = Channels(
        rx=attrs.get("ETHTOOL_A_CHANNELS_RX_COUNT"),
        tx=attrs.get("ETHTOOL_A_CHANNELS_TX_COUNT"),
        other=attrs.get("ETHTOOL_A_CHANNELS_OTHER_COUNT"),
        combined=attrs.get("ETHTOOL_A_CHANNELS_COMBINED_COUNT"),
        rx_max=attrs.get("ETHTOOL_A_CHANNELS_RX_MAX"),
        tx_max=attrs.get("ETHTOOL_A_CHANNELS_TX_MAX"),
        other_max=attrs.get("ETHTOOL_A_CHANNELS_OTHER_MAX"),
        combined_max=attrs.get("ETHTOOL_A_CHANNELS_COMBINED_MAX"),
    )
    return {"channels": _none_if_empty(channels)}


def pause_part(msg: PauseMsg) -> Part:
    """Pause settings and frame counters. The STATS nest is present whenever stats were
    requested, even if the driver filled nothing, so only the counters inside count."""
    attrs = Attrs(msg)
    flags = [attrs.get(f"ETHTOOL_A_PAUSE_{name}") for name in ("AUTONEG", "RX", "TX")]
    pause = None if None in flags else PauseParams(*(bool(flag) for flag in flags))
    stats: dict[str, int] = {}
    nest = attrs.get("ETHTOOL_A_PAUSE_STATS")
    if nest is not None:
        counters = Attrs(nest)
        for attr, key in (("TX_FRAMES", "pause.tx_frames"), ("RX_FRAMES", "pause.rx_frames")):
            value = counters.get(f"ETHTOOL_A_PAUSE_STAT_{attr}")
            if value is not None:
                stats[key] = value
    return {"pause": pause, "std_stats": stats}


def fec_part(msg: FecMsg) -> Part:
    """Configured and active FEC mode and the FEC block/bit counters, per lane if given."""
    attrs = Attrs(msg)
    modes = attrs.get("ETHTOOL_A_FEC_MODES")
    active = attrs.get("ETHTOOL_A_FEC_ACTIVE")  # omitted when no mode is active
    auto = attrs.get("ETHTOOL_A_FEC_AUTO")
    fec = FecParams(
        configured=() if modes is None else _set_bit_names(modes),
        active=None if active is None else _fec_mode_name(active),
        auto=None if auto is None else bool(auto),
    )
    stats: dict[str, int] = {}
    nest = attrs.get("ETHTOOL_A_FEC_STATS")
    if nest is not None:
        arrays = Attrs(nest)
        for attr, stem in _FEC_STATS:
            raw = arrays.get(attr)
            if raw is not None:
                stats.update(fec_array_stats(stem, raw))
    return {"fec": fec, "std_stats": stats}


def stats_part(msg: StatsMsg) -> Part:
    """Standard statistics groups. A group the driver does not implement comes back with no
    STAT entries at all; stats the driver left unset are omitted by the kernel. Stat indices
    newer than :data:`STAT_NAMES` are skipped rather than given invented names."""
    stats: dict[str, int] = {}
    for group in repeated(msg, "ETHTOOL_A_STATS_GRP"):
        group_id = Attrs(group).get("ETHTOOL_A_STATS_GRP_ID")
        if group_id is None or group_id >= len(STATS_GROUPS):
            continue
        prefix = STATS_GROUPS[group_id]
        names = STAT_NAMES[prefix]
        for raw in repeated(group, "ETHTOOL_A_STATS_GRP_STAT"):
            index, value = decode_group_stat(raw)
            if index < len(names):
                stats[f"{prefix}.{names[index]}"] = value
    return {"std_stats": stats}


def _none_if_empty(record):
    """``None`` instead of a record whose every field the kernel omitted."""
    omitted = all(getattr(record, f.name) is None for f in dataclasses.fields(record))
    return None if omitted else record


def _fec_mode_name(link_mode_bit: int) -> str:
    return FEC_LINK_MODES.get(link_mode_bit, f"link_mode_{link_mode_bit}")


def _set_bit_names(bitset: EthtoolBitset) -> tuple[str, ...]:
    """FEC mode names of the bits set in a verbose bitset. A bit missing from
    :data:`FEC_LINK_MODES` keeps the kernel's name for it, lowercased."""
    names = []
    bits = Attrs(bitset).get("ETHTOOL_A_BITSET_BITS")
    for bit in () if bits is None else repeated(bits, "ETHTOOL_A_BITSET_BITS_BIT"):
        attrs = Attrs(bit)
        if "ETHTOOL_A_BITSET_BIT_VALUE" not in attrs:
            continue
        index = attrs.get("ETHTOOL_A_BITSET_BIT_INDEX")
        name = attrs.get("ETHTOOL_A_BITSET_BIT_NAME") or f"link_mode_{index}"
        names.append(FEC_LINK_MODES.get(index, name.lower()))
    return tuple(names)


# --- requests ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """One DUMP request per poll and how to read its replies."""

    name: str
    cmd: int
    msg_class: type[genlmsg]
    header_attr: str
    to_part: Callable[[genlmsg], Part]
    header_flags: int = 0
    extra_attrs: tuple = ()

    def message(self) -> genlmsg:
        msg = self.msg_class()
        msg["cmd"] = self.cmd
        msg["version"] = ETHTOOL_GENL_VERSION
        header = {"attrs": [["ETHTOOL_A_HEADER_FLAGS", self.header_flags]]}
        msg["attrs"] = [[self.header_attr, header], *self.extra_attrs]
        return msg


# ETHTOOL_A_STATS_GROUPS as a compact bitset without mask: bit n requests group n.
_GROUPS_BITSET = {
    "attrs": [
        ["ETHTOOL_A_BITSET_NOMASK", True],
        ["ETHTOOL_A_BITSET_SIZE", len(STATS_GROUPS)],
        ["ETHTOOL_A_BITSET_VALUE", struct.pack("=I", (1 << len(STATS_GROUPS)) - 1)],
    ]
}

REQUESTS: tuple[Request, ...] = (
    Request("RINGS_GET", ETHTOOL_MSG_RINGS_GET, RingsMsg, "ETHTOOL_A_RINGS_HEADER",
             rings_part),
    Request("CHANNELS_GET", ETHTOOL_MSG_CHANNELS_GET, ChannelsMsg,
             "ETHTOOL_A_CHANNELS_HEADER", channels_part),
    Request("PAUSE_GET", ETHTOOL_MSG_PAUSE_GET, PauseMsg, "ETHTOOL_A_PAUSE_HEADER",
             pause_part, header_flags=ETHTOOL_FLAG_STATS),
    Request("FEC_GET", ETHTOOL_MSG_FEC_GET, FecMsg, "ETHTOOL_A_FEC_HEADER", fec_part,
             header_flags=ETHTOOL_FLAG_STATS),
    Request("STATS_GET", ETHTOOL_MSG_STATS_GET, StatsMsg, "ETHTOOL_A_STATS_HEADER",
             stats_part, extra_attrs=(("ETHTOOL_A_STATS_GROUPS", _GROUPS_BITSET),)),
)


@dataclasses.dataclass(slots=True)
class _Draft:
    """An EthtoolNetlinkInfo being assembled from the replies of several dumps."""

    fields: dict[str, object] = dataclasses.field(default_factory=dict)
    std_stats: dict[str, int] = dataclasses.field(default_factory=dict)

    def add(self, part: Part) -> None:
        self.std_stats.update(part.pop("std_stats", {}))
        self.fields.update(part)

    def build(self) -> EthtoolNetlinkInfo:
        return EthtoolNetlinkInfo(**self.fields, std_stats=MappingProxyType(self.std_stats))


def reply_ifindex(msg: genlmsg, header_attr: str) -> int | None:
    header = msg.get_attr(header_attr)
    return None if header is None else Attrs(header).get("ETHTOOL_A_HEADER_DEV_INDEX")


# --- the socket ----------------------------------------------------------------------------


class EthtoolNetlink:
    """A generic-netlink socket bound to the ``ethtool`` family, reused across polls.

    Sees the interfaces of the network namespace it was created in. Not thread-safe.

    Raises :class:`EthtoolNetlinkUnavailable` if the kernel has no ethtool netlink family.
    """

    def __init__(self) -> None:
        self._sock = GenericNetlinkSocket()
        try:
            # bind() resolves the family id once; the message class given here is replaced
            # per request in _dump().
            self._sock.bind(ETHTOOL_GENL_NAME, ChannelsMsg)
        except NetlinkError as exc:
            self._sock.close()
            raise EthtoolNetlinkUnavailable(
                f"ethtool generic netlink family not available: {exc}"
            ) from exc

    def __enter__(self) -> EthtoolNetlink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def read_all(self, ifindexes: Collection[int] | None = None) -> NetlinkResult:
        """Dump every message type once and return per-ifindex infos (only ``ifindexes``
        if given; an ifindex no dump mentioned is absent).

        A message type whose dump fails as a whole (e.g. EOPNOTSUPP from a kernel that
        predates it) is reported in ``errors`` and the others are still read.
        """
        wanted = None if ifindexes is None else frozenset(ifindexes)
        drafts: dict[int, _Draft] = {}
        errors: dict[str, str] = {}
        for request in REQUESTS:
            try:
                parts = self._dump_parts(request, wanted)
            except NetlinkError as exc:
                errors[request.name] = errno_name(exc.code)
                continue
            except struct.error:  # an attribute payload shorter than its layout
                errors[request.name] = "parse"
                continue
            for ifindex, part in parts:
                drafts.setdefault(ifindex, _Draft()).add(part)
        return NetlinkResult(
            infos=MappingProxyType({ifindex: d.build() for ifindex, d in drafts.items()}),
            errors=MappingProxyType(errors),
        )

    def _dump_parts(
        self, request: Request, wanted: frozenset[int] | None
    ) -> list[tuple[int, Part]]:
        """The parts of one dump for the wanted ifindexes, all decoded before any is merged
        so that a dump failing halfway contributes nothing."""
        parts = []
        for msg in self._dump(request):
            ifindex = reply_ifindex(msg, request.header_attr)
            if ifindex is not None and (wanted is None or ifindex in wanted):
                parts.append((ifindex, request.to_part(msg)))
        return parts

    def _dump(self, request: Request) -> tuple[genlmsg, ...]:
        family_id = self._sock.prid
        # Replies of every ethtool command share the family id as netlink message type, so
        # the class that decodes them is chosen per request (one request at a time).
        self._sock.marshal.msg_map[family_id] = request.msg_class
        return tuple(
            self._sock.nlm_request(
                request.message(), msg_type=family_id, msg_flags=NLM_F_REQUEST | NLM_F_DUMP
            )
        )
