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

Rings and channels are configuration. :class:`EthtoolNetlinkSource` dumps them on its first
poll and then only for the interfaces the kernel's notifications name (:class:`EthtoolWatch`:
the family's ``monitor`` multicast group, on which ``ethtool_notify()`` sends a RINGS_NTF or
CHANNELS_NTF after every successful set), whose ifindex or link state changed, or every
:data:`CONFIG_REFRESH` seconds; without the notification socket, every poll, and after it
overflowed, for every interface once. The pure decoders and the uapi numbers are in
:mod:`nicwatch.sources.ethtool_netlink_decode` (re-exported here).

"Absent is not zero": the kernel omits an attribute the driver did not fill, and so do we.
A dump silently skips a device whose driver does not implement the message (veth and
virtio_net for PAUSE/FEC, veth for RINGS), so such a device gets ``None`` for that part.
"""

from __future__ import annotations

import dataclasses
import struct
import time
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import ClassVar, NamedTuple, Protocol, runtime_checkable

import structlog

from nicwatch.model import Channels, EthtoolNetlinkInfo, NetClass, Reading, Rings
from nicwatch.sources import Poll, SourceOptions, errno_name, netlink
from nicwatch.sources.ethtool_netlink_decode import *  # noqa: F403  (re-exported)
from nicwatch.sources.ethtool_netlink_decode import (
    ETHTOOL_A_BITSET_NOMASK,
    ETHTOOL_A_BITSET_SIZE,
    ETHTOOL_A_BITSET_VALUE,
    ETHTOOL_A_CHANNELS_HEADER,
    ETHTOOL_A_FEC_HEADER,
    ETHTOOL_A_HEADER_FLAGS,
    ETHTOOL_A_LINKMODES_HEADER,
    ETHTOOL_A_LINKSTATE_HEADER,
    ETHTOOL_A_PAUSE_HEADER,
    ETHTOOL_A_RINGS_HEADER,
    ETHTOOL_A_STATS_GROUPS,
    ETHTOOL_A_STATS_HEADER,
    ETHTOOL_FLAG_COMPACT_BITSETS,
    ETHTOOL_FLAG_STATS,
    ETHTOOL_GENL_NAME,
    ETHTOOL_GENL_VERSION,
    ETHTOOL_MCGRP_MONITOR_NAME,
    ETHTOOL_MSG_CHANNELS_GET,
    ETHTOOL_MSG_FEC_GET,
    ETHTOOL_MSG_LINKMODES_GET,
    ETHTOOL_MSG_LINKSTATE_GET,
    ETHTOOL_MSG_PAUSE_GET,
    ETHTOOL_MSG_RINGS_GET,
    ETHTOOL_MSG_STATS_GET,
    STATS_GROUPS,
    LinkMode,
    Part,
    channels_part,
    decode_fec_array,
    decode_group_stat,
    decode_link_modes,
    fec_part,
    lanes_part,
    link_mode_of,
    linkstate_part,
    notified_ifindexes,
    pause_part,
    reply_ifindex,
    rings_part,
    stats_part,
)
from nicwatch.sources.netlink import (
    CTRL_CMD_GETFAMILY,
    GENL_ID_CTRL,
    GENLMSGHDR,
    NLA_F_NESTED,
    NLM_F_DUMP,
    NLM_F_REQUEST,
    FamilyUnavailable,
    GenericNetlinkSocket,
    KernelError,
    ParseError,
    attribute_index,
    attributes,
    genl_message,
    nlattr,
    string_attr,
    uint_attr,
)

log = structlog.get_logger("nicwatch")

__all__ = [
    "EthtoolNetlink",
    "EthtoolNetlinkUnavailable",
    "EthtoolWatch",
    "KernelError",
    "NetlinkResult",
    "ParseError",
    "decode_fec_array",
    "decode_group_stat",
    "decode_link_modes",
    "link_mode_of",
    "notified_ifindexes",
    "split_replies",
]

# Rings and channels are configuration: after the first poll they are dumped again only for
# the interfaces an ethtool RINGS_NTF/CHANNELS_NTF named, whose ifindex or link state changed,
# or whose last read is this many seconds old (what a change nothing announced, e.g. a
# driver resizing its rings by itself, waits at most). Without the notification socket, or
# after it overflowed, they are read every poll.
CONFIG_REFRESH = 60.0
# The dumps of configuration, skipped in a poll for which no interface needs them.
CONFIG_MESSAGES = frozenset({"RINGS_GET", "CHANNELS_GET"})


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

# --- replies ------------------------------------------------------------------------------


def split_replies(datagram: bytes, seq: int) -> tuple[list[bytes], bool]:
    """The generic-netlink attributes of each reply to request ``seq`` in one received
    datagram, and whether the exchange ended in it (:func:`nicwatch.sources.netlink.
    split_replies` with the ``genlmsghdr`` stripped)."""
    return netlink.split_replies(datagram, seq, GENLMSGHDR.size, strip=True)


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
    config: bool = False  # configuration (rings, channels): see CONFIG_REFRESH

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
    Request("RINGS_GET", ETHTOOL_MSG_RINGS_GET, ETHTOOL_A_RINGS_HEADER, rings_part,
            config=True),
    Request("CHANNELS_GET", ETHTOOL_MSG_CHANNELS_GET, ETHTOOL_A_CHANNELS_HEADER,
            channels_part, config=True),
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

    dumps = 0  # DUMP requests sent by read_all/read_some (tests, benchmarks)

    def read_all(self, ifindexes: Collection[int] | None = None) -> NetlinkResult:
        """Dump every message type once and return per-ifindex infos (only ``ifindexes``
        if given; an ifindex no dump mentioned is absent).

        A message type whose dump fails as a whole (e.g. EOPNOTSUPP from a kernel that
        predates it) is reported in ``errors`` and the others are still read. Socket
        errors raise OSError.
        """
        return self.read_some(ifindexes, None)

    def read_some(self, ifindexes: Collection[int] | None,
                  config: Collection[int] | None) -> NetlinkResult:
        """:meth:`read_all` with the rings and channels (:data:`CONFIG_MESSAGES`) of the
        ``config`` ifindexes only (all of ``ifindexes`` if None); with ``config`` empty
        those dumps are not sent at all."""
        wanted = None if ifindexes is None else frozenset(ifindexes)
        config_wanted = wanted if config is None else frozenset(config)
        drafts: dict[int, _Draft] = {}
        errors: dict[str, str] = {}
        for request in REQUESTS:
            subset = config_wanted if request.config else wanted
            if subset is not None and not subset:
                continue
            try:
                parts = decode_dump(request, self._dump(request), subset)
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
        self.dumps += 1
        return self._exchange(request.message(self._family, self._seq), self._seq)


# CTRL_ATTR_MCAST_GROUPS (uapi genetlink.h): a nest of one nest per group, each with
# CTRL_ATTR_MCAST_GRP_NAME and CTRL_ATTR_MCAST_GRP_ID.
CTRL_ATTR_MCAST_GROUPS = 7
CTRL_ATTR_MCAST_GRP_NAME = 1
CTRL_ATTR_MCAST_GRP_ID = 2
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
EVERY = None  # EthtoolWatch.changed(): every interface (notifications were lost)


def mcast_group_id(reply: bytes, name: str) -> int | None:
    """The id of multicast group ``name`` in a CTRL_CMD_GETFAMILY reply's attributes."""
    groups = attribute_index(reply, 0, len(reply)).get(CTRL_ATTR_MCAST_GROUPS)
    if groups is None:
        return None
    for _, start, end in attributes(reply, *groups):
        group = attribute_index(reply, start, end)
        group_name = group.get(CTRL_ATTR_MCAST_GRP_NAME)
        if group_name is not None and string_attr(reply, group_name) == name:
            return uint_attr(reply, group, CTRL_ATTR_MCAST_GRP_ID)
    return None


class EthtoolWatch(GenericNetlinkSocket):
    """The ethtool family's ``monitor`` multicast group (no privilege needed), read without
    blocking: which interfaces' rings or channels changed since the last call. The group's
    id is asked of the controller (CTRL_CMD_GETFAMILY) at open; raises
    :class:`EthtoolNetlinkUnavailable` or OSError when it cannot be joined."""

    family_name = ETHTOOL_GENL_NAME
    unavailable = EthtoolNetlinkUnavailable

    def __init__(self) -> None:
        super().__init__()
        try:
            (reply,) = self.request(GENL_ID_CTRL, 0, GENLMSGHDR.pack(CTRL_CMD_GETFAMILY, 1, 0)
                                    + nlattr(2, ETHTOOL_GENL_NAME.encode() + b"\0"))
            group = mcast_group_id(reply, ETHTOOL_MCGRP_MONITOR_NAME)
            if group is None:
                raise EthtoolNetlinkUnavailable("ethtool family without a monitor group")
            self._sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group)
            self._sock.setblocking(False)
        except (KernelError, ValueError) as e:  # ParseError, or not exactly one reply
            self._sock.close()
            raise EthtoolNetlinkUnavailable(f"ethtool monitor group: {e}") from e
        except BaseException:
            self._sock.close()
            raise

    def changed(self) -> set[int] | None:
        """ifindexes notified since the last call; ``EVERY`` (None) when notifications were
        lost (the socket's buffer overflowed: ENOBUFS) or could not be read."""
        ifindexes: set[int] = set()
        while True:
            try:
                datagram = self._sock.recv(1 << 16)
            except BlockingIOError:
                return ifindexes
            except OSError:  # ENOBUFS: some were dropped; which ones is unknown
                self._drain()
                return EVERY
            try:
                ifindexes |= notified_ifindexes(datagram, self._family)
            except ParseError:
                return EVERY

    def _drain(self) -> None:
        try:
            while self._sock.recv(1 << 16):
                pass
        except OSError:
            pass


class Notifications(Protocol):
    """What EthtoolNetlinkSource asks which interfaces changed: an EthtoolWatch, or a
    double."""

    def changed(self) -> set[int] | None: ...
    def close(self) -> None: ...


@runtime_checkable
class NetlinkReader(Protocol):
    """What EthtoolNetlinkSource reads through: EthtoolNetlink, or simulate's double."""

    def read_all(self, ifindexes: Collection[int] | None = None) -> NetlinkResult: ...
    def close(self) -> None: ...


@runtime_checkable
class PartialReader(Protocol):
    """A reader that can leave the configuration dumps out (EthtoolNetlink.read_some)."""

    def read_some(self, ifindexes: Collection[int] | None,
                  config: Collection[int] | None) -> NetlinkResult: ...


class _Kept(NamedTuple):
    """One interface's last rings and channels and what they were read under."""

    state: tuple[object, ...]  # ifindex, carrier changes, carrier, operstate
    at: float  # monotonic time of the read
    rings: Rings | None
    channels: Channels | None


def _state(nc: NetClass) -> tuple[object, ...]:
    return (nc.ifindex, nc.carrier_changes, nc.carrier, nc.operstate)


def _with_config(info: EthtoolNetlinkInfo | None, kept: _Kept) -> EthtoolNetlinkInfo | None:
    """``info`` with the kept rings and channels (as the dumps would have given them)."""
    if info is None:
        if kept.rings is None and kept.channels is None:
            return None
        return EthtoolNetlinkInfo(rings=kept.rings, channels=kept.channels)
    return dataclasses.replace(info, rings=kept.rings, channels=kept.channels)


class EthtoolNetlinkSource:
    """The ethtool netlink dumps as a :class:`~nicwatch.sources.Source`: the ``netlink`` part
    of each Reading. ``reader``: an :class:`EthtoolNetlink`, or a double with its
    ``read_all``/``close``. ``refresh``: seconds an interface's rings and channels are
    reused while ``watch`` (notifications) and its link state say nothing changed (0, or a
    reader without ``read_some``, or no ``watch``: read every poll)."""

    name = "ethtool_netlink"
    fills: ClassVar[frozenset[str]] = frozenset({"netlink"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, reader: NetlinkReader, refresh: float = 0.0,
                 watch: Notifications | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.reader = reader
        # asked once here, not per poll (a runtime-checked protocol)
        self._partial = reader if isinstance(reader, PartialReader) else None
        self.refresh = refresh
        self.watch = watch
        self.clock = clock
        self._kept: dict[str, _Kept] = {}

    @classmethod
    def open(cls, options: SourceOptions) -> EthtoolNetlinkSource | None:
        """None when switched off or when this kernel has no ethtool family (logged)."""
        if not options.ethtool_netlink:
            return None
        try:
            reader = EthtoolNetlink()
        except (EthtoolNetlinkUnavailable, OSError) as e:
            log.warning("ethtool_netlink_unavailable", error=str(e))
            return None
        try:
            watch: EthtoolWatch | None = EthtoolWatch()
        except (EthtoolNetlinkUnavailable, OSError) as e:  # rings and channels every poll
            log.info("ethtool_netlink_no_notifications", error=str(e))
            watch = None
        return cls(reader, CONFIG_REFRESH, watch)

    def read(self, poll: Poll) -> None:
        ifindexes = [nc.ifindex for nc in poll.interfaces if nc.ifindex]
        partial = self._partial if self.refresh and self.watch is not None else None
        config: set[int] = set()
        now = self.clock()
        try:
            if partial is None:
                result = self.reader.read_all(ifindexes)
            else:
                config = self._due(poll.interfaces, now)
                result = partial.read_some(ifindexes, config)
        except OSError as e:
            poll.error("", self.name, errno_name(e.errno), str(e))
            self._kept = {}  # a change may have been missed
            return
        for message, kind in sorted(result.errors.items()):
            poll.error("", self.name, kind, f"{message} failed")
        config_read = partial is not None and not result.errors.keys() & CONFIG_MESSAGES
        kept: dict[str, _Kept] = {}
        for nc in poll.interfaces:
            info = result.infos.get(nc.ifindex) if nc.ifindex else None
            if partial is not None and nc.ifindex:
                if nc.ifindex not in config:
                    kept[nc.name] = last = self._kept[nc.name]
                    info = _with_config(info, last)
                elif config_read:  # else asked again next poll
                    kept[nc.name] = _Kept(_state(nc), now, None if info is None else info.rings,
                                          None if info is None else info.channels)
            if info is not None:
                poll.put(nc.name, Reading.netlink, info)
        self._kept = kept  # an interface gone takes its rings and channels with it

    def _due(self, interfaces: tuple[NetClass, ...], now: float) -> set[int]:
        """The ifindexes whose rings and channels are read in this poll."""
        changed = self.watch.changed() if self.watch is not None else EVERY
        due = set()
        for nc in interfaces:
            last = self._kept.get(nc.name)
            if nc.ifindex and (last is None or changed is EVERY or nc.ifindex in changed
                               or last.state != _state(nc)
                               or now - last.at >= self.refresh * 0.9):
                due.add(nc.ifindex)
        return due

    def close(self) -> None:
        self.reader.close()
        if self.watch is not None:
            self.watch.close()
