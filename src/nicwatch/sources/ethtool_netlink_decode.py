"""Pure decoders of the ethtool generic-netlink family's replies and notifications.

The uapi numbers (``include/uapi/linux/ethtool_netlink.h``, ``ethtool_netlink_generated.h``
since ~6.15) and the functions that turn one reply's attributes into the parts of an
:class:`~nicwatch.model.EthtoolNetlinkInfo`; no socket here. :mod:`nicwatch.sources.
ethtool_netlink` sends the requests, re-exports these names and reads the notifications.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TypedDict, TypeVar

from nicwatch.model import (
    FEC_LINK_MODES,
    Channels,
    FecParams,
    LinkState,
    PauseParams,
    Rings,
    link_ext_state_name,
    link_ext_substate_name,
)
from nicwatch.sources.netlink import (
    GENLMSGHDR,
    NLA_HDR,
    NLA_TYPE_MASK,
    NLMSGHDR,
    ParseError,
    Span,
    attribute_index,
    attributes,
    decode_uint,
    string_attr,
    uint_attr,
)

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

# enum ETHTOOL_MSG_* kernel to userspace: the notifications the kernel multicasts to the
# family's "monitor" group after a successful RINGS_SET / CHANNELS_SET (ethtool_notify() in
# net/ethtool/netlink.c; also after the ioctl ETHTOOL_SRINGPARAM / ETHTOOL_SCHANNELS). Their
# attributes are those of the GET reply, the header nest (DEV_INDEX, DEV_NAME) first.
ETHTOOL_MSG_RINGS_NTF = 17
ETHTOOL_MSG_CHANNELS_NTF = 19
ETHTOOL_MCGRP_MONITOR_NAME = "monitor"

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


# --- notifications -------------------------------------------------------------------------

# The messages whose device's rings or channels changed, and their header attribute
# (ETHTOOL_A_RINGS_HEADER and ETHTOOL_A_CHANNELS_HEADER are both 1).
_CONFIG_NTF: Mapping[int, int] = MappingProxyType({
    ETHTOOL_MSG_RINGS_NTF: ETHTOOL_A_RINGS_HEADER,
    ETHTOOL_MSG_CHANNELS_NTF: ETHTOOL_A_CHANNELS_HEADER,
})


def notified_ifindexes(datagram: bytes, family: int) -> set[int]:
    """The ifindexes named (header DEV_INDEX) by the RINGS_NTF and CHANNELS_NTF messages of
    one datagram read from the ethtool family's ``monitor`` group, whose messages have the
    netlink type ``family`` (the family id); the group's other notifications (LINKINFO_NTF,
    FEATURES_NTF, ...) are skipped. :class:`ParseError` for bytes that do not fit, or a
    rings/channels notification without DEV_INDEX (which device changed is then unknown)."""
    ifindexes: set[int] = set()
    at = 0
    while at + NLMSGHDR.size <= len(datagram):
        length, kind = NLMSGHDR.unpack_from(datagram, at)[:2]
        if length < NLMSGHDR.size or at + length > len(datagram):
            raise ParseError(f"netlink message of {length} bytes at {at}")
        start = at + NLMSGHDR.size
        if kind == family and start + GENLMSGHDR.size <= at + length:
            header = _CONFIG_NTF.get(datagram[start])  # genlmsghdr.cmd
            if header is not None:
                ifindex = reply_ifindex(datagram[start + GENLMSGHDR.size:at + length], header)
                if ifindex is None:
                    raise ParseError(f"ethtool notification {datagram[start]} without "
                                     "DEV_INDEX")
                ifindexes.add(ifindex)
        at += (length + 3) & ~3
    return ifindexes
