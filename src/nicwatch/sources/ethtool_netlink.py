"""Driver-independent NIC parameters and statistics from the kernel's ethtool netlink family.

One :class:`EthtoolNetlink` is opened by the daemon and reused for every poll. Each
:meth:`EthtoolNetlink.read_all` issues one DUMP request per message type (RINGS_GET,
CHANNELS_GET, PAUSE_GET, FEC_GET, STATS_GET, LINKSTATE_GET, and LINKMODES_GET for the
lanes), so the cost does not grow with a request per interface, and turns the replies into
one :class:`~nicwatch.model.EthtoolNetlinkInfo` per ifindex. :meth:`EthtoolNetlink.link_modes`
is one LINKMODES_GET dump: speed and duplex of every interface, as sysfs `speed` and `duplex`
show them (the collector's, on its own socket).

Protocol: ``Documentation/networking/ethtool-netlink.rst``. Message and attribute numbers are
the uapi enums of ``include/uapi/linux/ethtool_netlink.h`` (``ethtool_netlink_generated.h``
since ~6.15); the values used here have been stable since they were added (5.7 - 5.13).
Framing: ``genetlink.h`` here, the netlink layer in :mod:`nicwatch.sources.netlink`.

The socket is a plain ``AF_NETLINK`` socket and the replies are decoded with :mod:`struct`
on their raw bytes: a dump covers every device of the namespace (STATS_GET includes ``lo``),
and pyroute2's decoder, which builds an object per attribute and runs an asyncio loop per
request, spent ~80x the kernel's time on it (8 ms against 0.1 ms per poll of 32 veths).
Each reply's header nest is read first, and a device not asked for is skipped without
decoding the rest of its message.

"Absent is not zero": the kernel omits an attribute the driver did not fill, and so do we.
A dump silently skips a device whose driver does not implement the message (veth and
virtio_net for PAUSE/FEC, veth for RINGS), so such a device gets ``None`` for that part.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import ClassVar, Protocol, TypedDict, TypeVar, runtime_checkable

import structlog

from nicwatch.model import (
    FEC_LINK_MODES,
    Channels,
    EthtoolNetlinkInfo,
    FecParams,
    LinkState,
    PauseParams,
    Rings,
    link_ext_state_name,
    link_ext_substate_name,
)
from nicwatch.sources import Poll, SourceOptions, errno_name, netlink
from nicwatch.sources.netlink import (
    GENLMSGHDR,
    NLA_F_NESTED,
    NLA_HDR,
    NLA_TYPE_MASK,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    FamilyUnavailable,
    GenericNetlinkSocket,
    KernelError,
    ParseError,
    Span,
    attribute_index,
    attributes,
    decode_uint,
    genl_message,
    nlattr,
    string_attr,
    uint_attr,
)

log = structlog.get_logger("nicwatch")

__all__ = [
    "EthtoolNetlink",
    "EthtoolNetlinkUnavailable",
    "KernelError",
    "NetlinkResult",
    "ParseError",
    "decode_fec_array",
    "decode_group_stat",
    "decode_link_modes",
    "link_mode_of",
    "split_replies",
]

# --- generic netlink framing and family lookup: sources/netlink.py ------------------------

# A header nest opening with DEV_INDEX: nest nla_len, nla_type, DEV_INDEX nla_len, nla_type,
# the u32 ifindex.
_HEADER_FIRST = struct.Struct("=HHHHI")
_NLA_HDR = NLA_HDR
_NLA_TYPE_MASK = NLA_TYPE_MASK

# --- ethtool generic netlink family (uapi ethtool_netlink.h) -------------------------------

ETHTOOL_GENL_NAME = "ethtool"
ETHTOOL_GENL_VERSION = 1

# enum ETHTOOL_MSG_* (userspace to kernel; LINKMODES_GET's reply, LINKMODES_GET_REPLY, is 4
# as well).
ETHTOOL_MSG_LINKMODES_GET = 4
ETHTOOL_MSG_LINKSTATE_GET = 6
ETHTOOL_MSG_RINGS_GET = 15
ETHTOOL_MSG_CHANNELS_GET = 17
ETHTOOL_MSG_PAUSE_GET = 21
ETHTOOL_MSG_FEC_GET = 29
ETHTOOL_MSG_STATS_GET = 32

# ETHTOOL_A_HEADER_*, and the ETHTOOL_A_HEADER_FLAGS bit asking for statistics.
ETHTOOL_A_HEADER_DEV_INDEX = 1
ETHTOOL_A_HEADER_DEV_NAME = 2
ETHTOOL_A_HEADER_FLAGS = 3
ETHTOOL_FLAG_COMPACT_BITSETS = 1 << 0
ETHTOOL_FLAG_STATS = 1 << 2

# ETHTOOL_A_BITSET_*, ETHTOOL_A_BITSET_BITS_*, ETHTOOL_A_BITSET_BIT_*.
ETHTOOL_A_BITSET_NOMASK = 1
ETHTOOL_A_BITSET_SIZE = 2
ETHTOOL_A_BITSET_BITS = 3
ETHTOOL_A_BITSET_VALUE = 4
ETHTOOL_A_BITSET_BITS_BIT = 1
ETHTOOL_A_BITSET_BIT_INDEX = 1
ETHTOOL_A_BITSET_BIT_NAME = 2
ETHTOOL_A_BITSET_BIT_VALUE = 3

# ETHTOOL_A_LINKMODES_* (AUTONEG 2, OURS 3, PEER 4 and the later ones are not read).
ETHTOOL_A_LINKMODES_HEADER = 1
ETHTOOL_A_LINKMODES_SPEED = 5  # u32, SPEED_UNKNOWN is (u32)-1
ETHTOOL_A_LINKMODES_DUPLEX = 6  # u8, DUPLEX_HALF 0, DUPLEX_FULL 1, DUPLEX_UNKNOWN 0xff
ETHTOOL_A_LINKMODES_LANES = 9  # u32 (5.11); omitted while the driver does not know them

# ETHTOOL_A_LINKSTATE_* (SQI 3 and SQI_MAX 4 are not read). EXT_STATE/EXT_SUBSTATE (5.9)
# are u8 values of enum ethtool_link_ext_state / ethtool_link_ext_substate_* (uapi
# ethtool.h), sent only while the driver reports a reason (get_link_ext_state, with the link
# down); EXT_DOWN_CNT (~6.2) is the driver's link-down count (get_link_ext_stats), sent with
# ETHTOOL_FLAG_STATS (net/ethtool/linkstate.c).
ETHTOOL_A_LINKSTATE_HEADER = 1
ETHTOOL_A_LINKSTATE_LINK = 2
ETHTOOL_A_LINKSTATE_EXT_STATE = 5
ETHTOOL_A_LINKSTATE_EXT_SUBSTATE = 6
ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT = 7

# ETHTOOL_A_RINGS_* (later attributes are not read).
ETHTOOL_A_RINGS_HEADER = 1
ETHTOOL_A_RINGS_RX_MAX = 2
ETHTOOL_A_RINGS_TX_MAX = 5
ETHTOOL_A_RINGS_RX = 6
ETHTOOL_A_RINGS_TX = 9

# ETHTOOL_A_CHANNELS_*.
ETHTOOL_A_CHANNELS_HEADER = 1
ETHTOOL_A_CHANNELS_RX_MAX = 2
ETHTOOL_A_CHANNELS_TX_MAX = 3
ETHTOOL_A_CHANNELS_OTHER_MAX = 4
ETHTOOL_A_CHANNELS_COMBINED_MAX = 5
ETHTOOL_A_CHANNELS_RX_COUNT = 6
ETHTOOL_A_CHANNELS_TX_COUNT = 7
ETHTOOL_A_CHANNELS_OTHER_COUNT = 8
ETHTOOL_A_CHANNELS_COMBINED_COUNT = 9

# ETHTOOL_A_PAUSE_*, ETHTOOL_A_PAUSE_STAT_*.
ETHTOOL_A_PAUSE_HEADER = 1
ETHTOOL_A_PAUSE_AUTONEG = 2
ETHTOOL_A_PAUSE_RX = 3
ETHTOOL_A_PAUSE_TX = 4
ETHTOOL_A_PAUSE_STATS = 5
ETHTOOL_A_PAUSE_STAT_TX_FRAMES = 2
ETHTOOL_A_PAUSE_STAT_RX_FRAMES = 3

# ETHTOOL_A_FEC_*, ETHTOOL_A_FEC_STAT_*, and the 6.18 histogram: one ETHTOOL_A_FEC_STAT_HIST
# nest per bin inside the STATS nest (commit cc2f08129925, "ethtool: add FEC bins
# histogram report"), each with ETHTOOL_A_FEC_HIST_BIN_LOW/HIGH (u32: corrected symbols per
# codeword), BIN_VAL (uint: codewords, all lanes) and BIN_VAL_PER_LANE (binary u64 array,
# lanes 0..n-1, omitted when the driver has no per-lane values; mlx5 has none).
ETHTOOL_A_FEC_HEADER = 1
ETHTOOL_A_FEC_MODES = 2
ETHTOOL_A_FEC_AUTO = 3
ETHTOOL_A_FEC_ACTIVE = 4
ETHTOOL_A_FEC_STATS = 5
ETHTOOL_A_FEC_STAT_CORRECTED = 2
ETHTOOL_A_FEC_STAT_UNCORR = 3
ETHTOOL_A_FEC_STAT_CORR_BITS = 4
ETHTOOL_A_FEC_STAT_HIST = 5
ETHTOOL_A_FEC_HIST_BIN_LOW = 2
ETHTOOL_A_FEC_HIST_BIN_HIGH = 3
ETHTOOL_A_FEC_HIST_BIN_VAL = 4
ETHTOOL_A_FEC_HIST_BIN_VAL_PER_LANE = 5

# ETHTOOL_A_STATS_*, ETHTOOL_A_STATS_GRP_* (attribute 1 is PAD; the rmon histograms
# GRP_HIST_RX/TX are not read).
ETHTOOL_A_STATS_HEADER = 2
ETHTOOL_A_STATS_GROUPS = 3
ETHTOOL_A_STATS_GRP = 4
ETHTOOL_A_STATS_GRP_ID = 2
ETHTOOL_A_STATS_GRP_STAT = 4

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

# std_stats keys by group id, then stat index: "eth-mac.FramesReceivedOK", ...
_STAT_KEYS = tuple(tuple(f"{group}.{name}" for name in STAT_NAMES[group])
                   for group in STATS_GROUPS)

# ETHTOOL_A_FEC_STAT_* array attributes -> std_stats key stem.
_FEC_STATS = (
    (ETHTOOL_A_FEC_STAT_CORRECTED, "fec.corrected_blocks"),
    (ETHTOOL_A_FEC_STAT_UNCORR, "fec.uncorrectable_blocks"),
    (ETHTOOL_A_FEC_STAT_CORR_BITS, "fec.corrected_bits"),
)


class EthtoolNetlinkUnavailable(FamilyUnavailable):
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


_uint = uint_attr
_string = string_attr


# --- pure decoding -------------------------------------------------------------------------


def decode_fec_array(raw: bytes) -> tuple[int, ...]:
    """A FEC stat attribute payload: u64 ``[total, lane0, lane1, ...]``.

    Empty when the driver does not report the stat (the kernel then sends a zero-length
    attribute, ``fec_stats_recalc()`` in net/ethtool/fec.c).
    """
    if len(raw) % 8:
        raise ParseError(f"FEC stat array of {len(raw)} bytes")
    return struct.unpack(f"={len(raw) // 8}Q", raw)


def fec_array_stats(stem: str, raw: bytes) -> dict[str, int]:
    """``{stem: total, stem.lane0: ..., ...}`` for the lanes present in a FEC stat array."""
    values = decode_fec_array(raw)
    if not values:
        return {}
    stats = {stem: values[0]}
    stats.update((f"{stem}.lane{lane}", value) for lane, value in enumerate(values[1:]))
    return stats


def fec_hist_stats(attrs: bytes, start: int, end: int) -> dict[str, int]:
    """One ETHTOOL_A_FEC_STAT_HIST nest (a bin) -> ``{fec.hist.<low>_<high>: codewords,
    fec.hist.<low>_<high>.lane<N>: ...}``; a bin without its bounds or value is a parse
    error (the kernel always sends all three, ``fec_put_hist()`` in net/ethtool/fec.c)."""
    index = attribute_index(attrs, start, end)
    low = _uint(attrs, index, ETHTOOL_A_FEC_HIST_BIN_LOW)
    high = _uint(attrs, index, ETHTOOL_A_FEC_HIST_BIN_HIGH)
    value = _uint(attrs, index, ETHTOOL_A_FEC_HIST_BIN_VAL)
    if low is None or high is None or value is None:
        raise ParseError("ETHTOOL_A_FEC_STAT_HIST bin without BIN_LOW, BIN_HIGH or BIN_VAL")
    stem = f"fec.hist.{low}_{high}"
    stats = {stem: value}
    lanes = index.get(ETHTOOL_A_FEC_HIST_BIN_VAL_PER_LANE)
    if lanes is not None:
        per_lane = decode_fec_array(attrs[lanes[0]:lanes[1]])
        stats.update((f"{stem}.lane{lane}", v) for lane, v in enumerate(per_lane))
    return stats


def decode_group_stat(data: bytes, start: int = 0, end: int | None = None) -> tuple[int, int]:
    """The payload of one ETHTOOL_A_STATS_GRP_STAT nest (``data[start:end]``, by default
    all of ``data``) -> ``(stat index, value)``.

    The nest wraps exactly one attribute whose type is the stat index; its value is a u64, or
    an NLA_UINT of 4 or 8 bytes in newer kernels, so it is decoded by its length. Read in
    place rather than with :func:`attributes`: this is the inner loop of a real NIC's reply.
    """
    end = len(data) if end is None else end
    if end - start >= _NLA_HDR.size:
        length, index = _NLA_HDR.unpack_from(data, start)
        if _NLA_HDR.size <= length <= end - start:
            return (index & _NLA_TYPE_MASK,
                    decode_uint(data, start + _NLA_HDR.size, start + length))
    raise ParseError(f"ETHTOOL_A_STATS_GRP_STAT of {end - start} bytes holds no attribute")


def split_replies(datagram: bytes, seq: int) -> tuple[list[bytes], bool]:
    """The generic-netlink attributes of each reply to request ``seq`` in one received
    datagram, and whether the exchange ended in it (:func:`nicwatch.sources.netlink.
    split_replies` with the ``genlmsghdr`` stripped)."""
    return netlink.split_replies(datagram, seq, GENLMSGHDR.size, strip=True)


# --- reply -> model ------------------------------------------------------------------------

_R = TypeVar("_R")


class Part(TypedDict, total=False):
    """What one reply says about its device: EthtoolNetlinkInfo field values, with
    ``std_stats`` as a plain dict."""

    pause: PauseParams | None
    fec: FecParams | None
    rings: Rings | None
    channels: Channels | None
    lanes: int | None
    linkstate: LinkState | None
    std_stats: dict[str, int]


def reply_ifindex(attrs: bytes, header_type: int) -> int | None:
    """The device a reply is about: DEV_INDEX of its header nest (attribute ``header_type``),
    read without decoding the rest of the message.

    The kernel writes the header nest first and DEV_INDEX first inside it
    (``ethnl_fill_reply_header()``); that layout is read with one unpack, any other is
    walked.
    """
    if len(attrs) >= _HEADER_FIRST.size:
        ifindex: int  # (a declaration: costs nothing at run time)
        nest_length, nest_type, index_length, index_type, ifindex = _HEADER_FIRST.unpack_from(
            attrs)
        if (nest_type & _NLA_TYPE_MASK == header_type
                and index_type & _NLA_TYPE_MASK == ETHTOOL_A_HEADER_DEV_INDEX
                and index_length == _HEADER_FIRST.size - _NLA_HDR.size
                and _HEADER_FIRST.size <= nest_length <= len(attrs)):
            return ifindex
    for attr_type, start, end in attributes(attrs, 0, len(attrs)):
        if attr_type == header_type:
            for member, s, e in attributes(attrs, start, end):
                if member == ETHTOOL_A_HEADER_DEV_INDEX:
                    return decode_uint(attrs, s, e)
            return None
    return None


def rings_part(attrs: bytes) -> Part:
    """Current and maximum rx/tx ring sizes. The kernel omits a ring whose maximum is 0."""
    return {"rings": _flat_record(Rings, _RINGS_FIELDS, attrs)}


def channels_part(attrs: bytes) -> Part:
    """Current and maximum channel counts. The kernel omits a kind whose maximum is 0."""
    return {"channels": _flat_record(Channels, _CHANNELS_FIELDS, attrs)}


def pause_part(attrs: bytes) -> Part:
    """Pause settings and frame counters. The STATS nest is present whenever stats were
    requested, even if the driver filled nothing, so only the counters inside count."""
    index = attribute_index(attrs, 0, len(attrs))
    flags = [_uint(attrs, index, attr_type) for attr_type in
             (ETHTOOL_A_PAUSE_AUTONEG, ETHTOOL_A_PAUSE_RX, ETHTOOL_A_PAUSE_TX)]
    pause = None if None in flags else PauseParams(*(bool(flag) for flag in flags))
    stats: dict[str, int] = {}
    nest = index.get(ETHTOOL_A_PAUSE_STATS)
    if nest is not None:
        counters = attribute_index(attrs, *nest)
        for attr_type, key in ((ETHTOOL_A_PAUSE_STAT_TX_FRAMES, "pause.tx_frames"),
                               (ETHTOOL_A_PAUSE_STAT_RX_FRAMES, "pause.rx_frames")):
            value = _uint(attrs, counters, attr_type)
            if value is not None:
                stats[key] = value
    return {"pause": pause, "std_stats": stats}


def fec_part(attrs: bytes) -> Part:
    """Configured and active FEC mode and the FEC block/bit counters, per lane if given."""
    index = attribute_index(attrs, 0, len(attrs))
    modes = index.get(ETHTOOL_A_FEC_MODES)
    active = _uint(attrs, index, ETHTOOL_A_FEC_ACTIVE)  # omitted when no mode is active
    auto = _uint(attrs, index, ETHTOOL_A_FEC_AUTO)
    fec = FecParams(
        configured=() if modes is None else _set_bit_names(attrs, modes),
        active=None if active is None else _fec_mode_name(active),
        auto=None if auto is None else bool(auto),
    )
    stats: dict[str, int] = {}
    nest = index.get(ETHTOOL_A_FEC_STATS)
    if nest is not None:
        arrays = attribute_index(attrs, *nest)
        for attr_type, stem in _FEC_STATS:
            span = arrays.get(attr_type)
            if span is not None:
                stats.update(fec_array_stats(stem, attrs[span[0]:span[1]]))
        for attr_type, start, end in attributes(attrs, *nest):
            if attr_type == ETHTOOL_A_FEC_STAT_HIST:  # repeated: one nest per bin
                stats.update(fec_hist_stats(attrs, start, end))
    return {"fec": fec, "std_stats": stats}


def lanes_part(attrs: bytes) -> Part:
    """The lanes the link runs on (LINKMODES_GET ``ETHTOOL_A_LINKMODES_LANES``, 5.11); the
    kernel omits it while the driver does not know them (link down, older drivers)."""
    lanes = _uint(attrs, attribute_index(attrs, 0, len(attrs)), ETHTOOL_A_LINKMODES_LANES)
    return {"lanes": lanes or None}


def linkstate_part(attrs: bytes) -> Part:
    """LINKSTATE_GET: link detected, the extended state and substate (why the link is down,
    as names of the uapi enums), and the driver's link-down count as
    ``linkstate.ext_down_cnt``. A substate 0 or absent is no substate."""
    index = attribute_index(attrs, 0, len(attrs))
    link = _uint(attrs, index, ETHTOOL_A_LINKSTATE_LINK)
    state = _uint(attrs, index, ETHTOOL_A_LINKSTATE_EXT_STATE)
    substate = _uint(attrs, index, ETHTOOL_A_LINKSTATE_EXT_SUBSTATE)
    stats: dict[str, int] = {}
    down = _uint(attrs, index, ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT)
    if down is not None:
        stats["linkstate.ext_down_cnt"] = down
    linkstate = None
    if link is not None or state is not None:
        linkstate = LinkState(
            link=None if link is None else bool(link),
            ext_state=None if state is None else link_ext_state_name(state),
            ext_substate=(None if state is None or not substate
                          else link_ext_substate_name(state, substate)))
    return {"linkstate": linkstate, "std_stats": stats}


def stats_part(attrs: bytes) -> Part:
    """Standard statistics groups. A group the driver does not implement comes back with no
    STAT entries at all; stats the driver left unset are omitted by the kernel. Stat indices
    newer than :data:`STAT_NAMES` are skipped rather than given invented names."""
    stats: dict[str, int] = {}
    for attr_type, start, end in attributes(attrs, 0, len(attrs)):
        if attr_type != ETHTOOL_A_STATS_GRP:
            continue
        group_id, stat_spans = None, []
        for member, s, e in attributes(attrs, start, end):
            if member == ETHTOOL_A_STATS_GRP_ID:
                group_id = (s, e)
            elif member == ETHTOOL_A_STATS_GRP_STAT:
                stat_spans.append((s, e))
        if not stat_spans or group_id is None:
            continue
        group = decode_uint(attrs, *group_id)
        if group >= len(_STAT_KEYS):
            continue
        keys = _STAT_KEYS[group]
        for s, e in stat_spans:
            stat, value = decode_group_stat(attrs, s, e)
            if stat < len(keys):
                stats[keys[stat]] = value
    return {"std_stats": stats}


# Attribute type -> field, for the records whose fields are all plain integer attributes.
_RINGS_FIELDS: Mapping[int, str] = MappingProxyType({
    ETHTOOL_A_RINGS_RX: "rx",
    ETHTOOL_A_RINGS_TX: "tx",
    ETHTOOL_A_RINGS_RX_MAX: "rx_max",
    ETHTOOL_A_RINGS_TX_MAX: "tx_max",
})
_CHANNELS_FIELDS: Mapping[int, str] = MappingProxyType({
    ETHTOOL_A_CHANNELS_RX_COUNT: "rx",
    ETHTOOL_A_CHANNELS_TX_COUNT: "tx",
    ETHTOOL_A_CHANNELS_OTHER_COUNT: "other",
    ETHTOOL_A_CHANNELS_COMBINED_COUNT: "combined",
    ETHTOOL_A_CHANNELS_RX_MAX: "rx_max",
    ETHTOOL_A_CHANNELS_TX_MAX: "tx_max",
    ETHTOOL_A_CHANNELS_OTHER_MAX: "other_max",
    ETHTOOL_A_CHANNELS_COMBINED_MAX: "combined_max",
})


def _flat_record(record: Callable[..., _R], fields: Mapping[int, str], attrs: bytes) -> _R | None:
    """``record`` from the integer attributes named in ``fields`` (an omitted one is
    ``None``), or ``None`` if the kernel omitted all of them."""
    values = dict.fromkeys(fields.values())
    present = False
    for attr_type, start, end in attributes(attrs, 0, len(attrs)):
        field = fields.get(attr_type)
        if field is not None:
            values[field] = decode_uint(attrs, start, end)
            present = True
    return record(**values) if present else None


def _fec_mode_name(link_mode_bit: int) -> str:
    return FEC_LINK_MODES.get(link_mode_bit, f"link_mode_{link_mode_bit}")


def _set_bit_names(attrs: bytes, bitset: Span) -> tuple[str, ...]:
    """FEC mode names of the bits set in a verbose bitset. A bit missing from
    :data:`FEC_LINK_MODES` keeps the kernel's name for it, lowercased.

    With NOMASK (what FEC_GET sends: ``ethnl_put_bitset()`` without a mask) the list holds
    exactly the set bits and no BIT_VALUE flags; with a mask it lists the mask's bits and
    flags the set ones with BIT_VALUE.
    """
    index = attribute_index(attrs, *bitset)
    bits = index.get(ETHTOOL_A_BITSET_BITS)
    if bits is None:
        return ()
    every_bit_set = ETHTOOL_A_BITSET_NOMASK in index
    names = []
    for attr_type, start, end in attributes(attrs, *bits):
        if attr_type != ETHTOOL_A_BITSET_BITS_BIT:
            continue
        bit = attribute_index(attrs, start, end)
        if not every_bit_set and ETHTOOL_A_BITSET_BIT_VALUE not in bit:
            continue
        number = _uint(attrs, bit, ETHTOOL_A_BITSET_BIT_INDEX)
        if number is None:
            raise ParseError("bitset bit without ETHTOOL_A_BITSET_BIT_INDEX")
        name = bit.get(ETHTOOL_A_BITSET_BIT_NAME)
        kernel_name = f"link_mode_{number}" if name is None else _string(attrs, name).lower()
        names.append(FEC_LINK_MODES.get(number, kernel_name))
    return tuple(names)


# --- link modes (speed and duplex) ---------------------------------------------------------

LinkMode = tuple[int | None, str | None]
"""(speed in Mb/s, duplex) as :func:`nicwatch.sources.sysfs_net.link_mode` reads them."""

_DUPLEX_NAMES = ("half", "full")  # DUPLEX_HALF, DUPLEX_FULL; anything else prints "unknown"
_S32 = struct.Struct("=i")


def link_mode_of(attrs: bytes) -> LinkMode:
    """Speed and duplex of one LINKMODES_GET reply (its attributes), mapped as sysfs does.

    ``speed_show()`` prints the u32 ``speed`` as a signed int, so SPEED_UNKNOWN ((u32)-1) is
    -1; like :func:`~nicwatch.sources.sysfs_net.link_mode`, 0 and below are None.
    ``duplex_show()`` prints "half" for 0, "full" for 1 and "unknown" for anything else
    (DUPLEX_UNKNOWN 0xff). An attribute the reply lacks is None. Whether the interface is up
    is not in the reply: sysfs refuses both files while it is down, and the caller has to
    look at the link's IFF_UP itself.
    """
    speed = duplex = None
    for attr_type, start, end in attributes(attrs, 0, len(attrs)):
        if attr_type == ETHTOOL_A_LINKMODES_SPEED:
            if end - start != 4:
                raise ParseError(f"ETHTOOL_A_LINKMODES_SPEED of {end - start} bytes")
            (signed,) = _S32.unpack_from(attrs, start)
            speed = signed if signed > 0 else None
        elif attr_type == ETHTOOL_A_LINKMODES_DUPLEX:
            if end - start != 1:
                raise ParseError(f"ETHTOOL_A_LINKMODES_DUPLEX of {end - start} bytes")
            value = attrs[start]
            duplex = _DUPLEX_NAMES[value] if value < len(_DUPLEX_NAMES) else "unknown"
    return speed, duplex


def decode_link_modes(replies: list[bytes],
                      wanted: frozenset[int] | None = None) -> dict[int, LinkMode]:
    """ifindex -> (speed, duplex) from the replies of one LINKMODES_GET dump, for the
    ``wanted`` ifindexes (all if None; the others are not decoded). A device the dump
    skipped (its driver has no ``get_link_ksettings``: EOPNOTSUPP, e.g. ``lo``) is absent;
    a reply without DEV_INDEX in its header is left out. Raises :class:`ParseError`."""
    out = {}
    for attrs in replies:
        ifindex = reply_ifindex(attrs, ETHTOOL_A_LINKMODES_HEADER)
        if ifindex is not None and (wanted is None or ifindex in wanted):
            out[ifindex] = link_mode_of(attrs)
    return out


# LINKMODES_GET dump request: the header nest asking for compact bitsets (the OURS and PEER
# link-mode bitsets, not read here, as bit arrays rather than a nest per bit with its name).
_LINKMODES_REQUEST = nlattr(ETHTOOL_A_LINKMODES_HEADER | NLA_F_NESTED, nlattr(
    ETHTOOL_A_HEADER_FLAGS, struct.pack("=I", ETHTOOL_FLAG_COMPACT_BITSETS)))


# --- requests ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """One DUMP request per poll and how to read its replies. ``header`` is the attribute
    type of the request/reply header nest."""

    name: str
    cmd: int
    header: int
    to_part: Callable[[bytes], Part]
    header_flags: int = 0
    extra_attrs: bytes = b""

    def message(self, family: int, seq: int) -> bytes:
        header = nlattr(ETHTOOL_A_HEADER_FLAGS, struct.pack("=I", self.header_flags))
        attrs = nlattr(self.header | NLA_F_NESTED, header) + self.extra_attrs
        return genl_message(family, NLM_F_REQUEST | NLM_F_DUMP, seq, self.cmd, attrs,
                            ETHTOOL_GENL_VERSION)


# ETHTOOL_A_STATS_GROUPS as a compact bitset without mask: bit n requests group n.
_GROUPS_BITSET = nlattr(ETHTOOL_A_STATS_GROUPS | NLA_F_NESTED, b"".join((
    nlattr(ETHTOOL_A_BITSET_NOMASK),
    nlattr(ETHTOOL_A_BITSET_SIZE, struct.pack("=I", len(STATS_GROUPS))),
    nlattr(ETHTOOL_A_BITSET_VALUE, struct.pack("=I", (1 << len(STATS_GROUPS)) - 1)),
)))

REQUESTS: tuple[Request, ...] = (
    Request("RINGS_GET", ETHTOOL_MSG_RINGS_GET, ETHTOOL_A_RINGS_HEADER, rings_part),
    Request("CHANNELS_GET", ETHTOOL_MSG_CHANNELS_GET, ETHTOOL_A_CHANNELS_HEADER,
            channels_part),
    Request("PAUSE_GET", ETHTOOL_MSG_PAUSE_GET, ETHTOOL_A_PAUSE_HEADER, pause_part,
            header_flags=ETHTOOL_FLAG_STATS),
    Request("FEC_GET", ETHTOOL_MSG_FEC_GET, ETHTOOL_A_FEC_HEADER, fec_part,
            header_flags=ETHTOOL_FLAG_STATS),
    Request("STATS_GET", ETHTOOL_MSG_STATS_GET, ETHTOOL_A_STATS_HEADER, stats_part,
            extra_attrs=_GROUPS_BITSET),
    Request("LINKSTATE_GET", ETHTOOL_MSG_LINKSTATE_GET, ETHTOOL_A_LINKSTATE_HEADER,
            linkstate_part, header_flags=ETHTOOL_FLAG_STATS),
    Request("LINKMODES_GET", ETHTOOL_MSG_LINKMODES_GET, ETHTOOL_A_LINKMODES_HEADER, lanes_part,
            header_flags=ETHTOOL_FLAG_COMPACT_BITSETS),
)


def decode_dump(request: Request, replies: list[bytes],
                wanted: frozenset[int] | None) -> list[tuple[int, Part]]:
    """The parts of one dump for the wanted ifindexes (all if ``wanted`` is None), all
    decoded before any is merged so that a dump failing halfway contributes nothing."""
    parts = []
    for attrs in replies:
        ifindex = reply_ifindex(attrs, request.header)
        if ifindex is not None and (wanted is None or ifindex in wanted):
            parts.append((ifindex, request.to_part(attrs)))
    return parts


@dataclasses.dataclass(slots=True)
class _Draft:
    """An EthtoolNetlinkInfo being assembled from the replies of several dumps."""

    fields: Part = dataclasses.field(default_factory=lambda: Part())
    std_stats: dict[str, int] = dataclasses.field(default_factory=dict)

    def add(self, part: Part) -> None:
        self.std_stats.update(part.pop("std_stats", {}))
        self.fields.update(part)

    def build(self) -> EthtoolNetlinkInfo:
        f = self.fields
        return EthtoolNetlinkInfo(f.get("pause"), f.get("fec"), f.get("rings"),
                                  f.get("channels"), MappingProxyType(self.std_stats),
                                  lanes=f.get("lanes"), linkstate=f.get("linkstate"))


# --- the socket ----------------------------------------------------------------------------


class EthtoolNetlink(GenericNetlinkSocket):
    """A generic-netlink socket for the ``ethtool`` family, reused across polls.

    Sees the interfaces of the network namespace it was created in. Not thread-safe.

    Raises :class:`EthtoolNetlinkUnavailable` if the kernel has no ethtool netlink family.
    """

    family_name = ETHTOOL_GENL_NAME
    unavailable = EthtoolNetlinkUnavailable

    def read_all(self, ifindexes: Collection[int] | None = None) -> NetlinkResult:
        """Dump every message type once and return per-ifindex infos (only ``ifindexes``
        if given; an ifindex no dump mentioned is absent).

        A message type whose dump fails as a whole (e.g. EOPNOTSUPP from a kernel that
        predates it) is reported in ``errors`` and the others are still read. Socket
        errors raise OSError.
        """
        wanted = None if ifindexes is None else frozenset(ifindexes)
        drafts: dict[int, _Draft] = {}
        errors: dict[str, str] = {}
        for request in REQUESTS:
            try:
                parts = decode_dump(request, self._dump(request), wanted)
            except KernelError as exc:
                errors[request.name] = errno_name(exc.errno)
                continue
            except ParseError:
                errors[request.name] = "parse"
                continue
            for ifindex, part in parts:
                drafts.setdefault(ifindex, _Draft()).add(part)
        return NetlinkResult(
            infos=MappingProxyType({ifindex: d.build() for ifindex, d in drafts.items()}),
            errors=MappingProxyType(errors),
        )

    def link_modes(self, ifindexes: Collection[int] | None = None) -> dict[int, LinkMode]:
        """Speed and duplex by ifindex of every device of the namespace (only ``ifindexes``
        if given): one LINKMODES_GET dump (:func:`decode_link_modes`).

        Raises :class:`KernelError` when the dump fails as a whole: it stops at the first
        device whose driver fails with anything but EOPNOTSUPP (ENODEV for a device not
        present, an error of the driver's ``get_link_ksettings`` or ``begin``), so no
        device's mode is known then. Raises :class:`ParseError` or OSError too.
        """
        return decode_link_modes(
            self.genl_request(ETHTOOL_MSG_LINKMODES_GET, NLM_F_DUMP, _LINKMODES_REQUEST,
                              ETHTOOL_GENL_VERSION),
            None if ifindexes is None else frozenset(ifindexes))

    def _dump(self, request: Request) -> list[bytes]:
        """Send one DUMP request and return the attributes of every reply."""
        self._seq += 1
        return self._exchange(request.message(self._family, self._seq), self._seq)


@runtime_checkable
class NetlinkReader(Protocol):
    """What EthtoolNetlinkSource reads through: EthtoolNetlink, or simulate's double."""

    def read_all(self, ifindexes: Collection[int] | None = None) -> NetlinkResult: ...
    def close(self) -> None: ...


class EthtoolNetlinkSource:
    """The ethtool netlink dumps as a :class:`~nicwatch.sources.Source`: the ``netlink`` part
    of each Reading. ``reader``: an :class:`EthtoolNetlink`, or a double with its
    ``read_all``/``close``."""

    name = "ethtool_netlink"
    fills: ClassVar[frozenset[str]] = frozenset({"netlink"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, reader: NetlinkReader) -> None:
        self.reader = reader

    @classmethod
    def open(cls, options: SourceOptions) -> EthtoolNetlinkSource | None:
        """None when switched off or when this kernel has no ethtool family (logged)."""
        if not options.ethtool_netlink:
            return None
        try:
            return cls(EthtoolNetlink())
        except (EthtoolNetlinkUnavailable, OSError) as e:
            log.warning("ethtool_netlink_unavailable", error=str(e))
            return None

    def read(self, poll: Poll) -> None:
        try:
            result = self.reader.read_all([nc.ifindex for nc in poll.interfaces if nc.ifindex])
        except OSError as e:
            poll.error("", self.name, errno_name(e.errno), str(e))
            return
        for message, kind in sorted(result.errors.items()):
            poll.error("", self.name, kind, f"{message} failed")
        for nc in poll.interfaces:
            info = result.infos.get(nc.ifindex) if nc.ifindex else None
            if info is not None:
                poll.put(nc.name, "netlink", info)

    def close(self) -> None:
        self.reader.close()
