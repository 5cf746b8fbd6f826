"""IEEE 802.1Qbb PFC configuration from the kernel's DCB netlink interface (dcbnl).

ethtool has no notion of PFC; which priorities are lossless is DCB state, read with an
rtnetlink ``RTM_GETDCB`` request carrying ``DCB_CMD_IEEE_GET`` and the interface name. The
reply nests ``DCB_ATTR_IEEE_PFC`` (``struct ieee_pfc``, include/uapi/linux/dcbnl.h) inside
``DCB_ATTR_IEEE``; it is what ``dcb pfc show dev X`` prints. The same reply carries
``DCB_ATTR_IEEE_ETS`` (``struct ieee_ets``: priority to traffic class, TC bandwidth and
TSA; ``dcb ets show``), ``DCB_ATTR_IEEE_APP_TABLE`` (``struct dcb_app`` entries, each in a
``DCB_ATTR_IEEE_APP`` or, for the non-IEEE PCP selector, ``DCB_ATTR_DCB_APP`` attribute;
``dcb app show``: the DSCP to priority map) and, from Linux 6.3 on drivers that implement
``dcbnl_getapptrust``, ``DCB_ATTR_DCB_APP_TRUST_TABLE`` (one u8 selector per attribute, in
trust order; ``dcb apptrust show``). There is no dump: one request
per interface. The request goes over the plain rtnetlink socket of
:mod:`nicwatch.sources.netlink` and the reply is decoded with :mod:`struct` (~20 us per
interface, where pyroute2's message classes cost ~0.6 ms).

A device without DCB operations (veth, virtio_net, most non-RDMA NICs) answers EOPNOTSUPP;
a DCB-capable driver without IEEE PFC support replies without the PFC attribute. Both mean
"not reported" and read as ``None``, never as "PFC off".

Everything read here is configuration (the PFC counters of ``struct ieee_pfc`` are not
exported: the driver's PFC counters are), so the daemon does not ask every poll: an
interface's answer is reused until the kernel says its DCB state changed (``DcbWatch``: the
``RTNLGRP_DCB`` multicast group, which ``dcbnl_notify`` writes after every IEEE or CEE set,
the interface named in ``DCB_ATTR_IFNAME``), its link state or ifindex changed (DCBX
negotiates with the peer when the link comes up, and a driver whose firmware runs DCBX need
not notify), or ``refresh`` seconds passed (``collect.DCB_REFRESH``, 30 s: what a silent
change waits at most).
"""

from __future__ import annotations

import errno
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from nicwatch.model import DcbApp, DcbPeer, DcbQos, IeeeEts, IeeePfc, Reading
from nicwatch.sources import Poll, SourceOptions, errno_name
from nicwatch.sources.netlink import (
    NETLINK_ROUTE,
    NLM_F_REQUEST,
    KernelError,
    NetlinkSocket,
    ParseError,
    attribute_index,
    attributes,
    message,
    nlattr,
)

RTM_GETDCB = 78
DCB_CMD_IEEE_GET = 21  # enum dcbnl_commands
DCB_ATTR_IFNAME = 1  # enum dcbnl_attrs
DCB_ATTR_IEEE = 13
DCB_ATTR_IEEE_ETS = 1  # enum ieee_attrs
DCB_ATTR_IEEE_PFC = 2
DCB_ATTR_IEEE_APP_TABLE = 3
# What the driver's DCBX agent learned from the link peer (dcbnl_ieee_fill: ieee_peer_getets,
# ieee_peer_getpfc, peer_getappinfo/peer_getapptable; bnx2x, qede, i40e, ...): the same
# structs as the port's own, the APP nest holding DCB_ATTR_IEEE_APP entries.
DCB_ATTR_IEEE_PEER_ETS = 4
DCB_ATTR_IEEE_PEER_PFC = 5
DCB_ATTR_IEEE_PEER_APP = 6
DCB_ATTR_DCB_APP_TRUST_TABLE = 11  # Linux 6.3
DCB_ATTR_IEEE_APP = 1  # enum ieee_attrs_app: a struct dcb_app (or a u8 selector in trust)
DCB_ATTR_DCB_APP = 2  # the same for non-IEEE selectors (DCB_APP_SEL_PCP)
IEEE_8021QAZ_APP_SEL_DSCP = 5
DCB_APP_SEL_PCP = 255
# struct ieee_ets: u8 willing, ets_cap, cbs; then u8[8] each: tc_tx_bw, tc_rx_bw, tc_tsa,
# prio_tc, tc_reco_bw, tc_reco_tsa, reco_prio_tc (59 bytes). The first seven fields are read.
_IEEE_ETS = struct.Struct("=BBB8s8s8s8s")
_DCB_APP = struct.Struct("=BBH")  # struct dcb_app: selector, priority, protocol
TSA_NAMES = {0: "strict", 1: "cbs", 2: "ets", 255: "vendor"}  # IEEE_8021QAZ_TSA_*
_DCBMSG = struct.Struct("=BBH")  # struct dcbmsg: dcb_family, cmd, dcb_pad
IEEE_8021QAZ_MAX_TCS = 8

# struct ieee_pfc: u8 pfc_cap, pfc_en, mbc; u16 delay; u64 requests[8]; u64 indications[8],
# natural alignment (one pad byte before delay, two before the u64 arrays): 136 bytes.
_IEEE_PFC_HEAD = struct.Struct("=BBBxH")
_IEEE_PFC = struct.Struct(f"=BBBxH2x{IEEE_8021QAZ_MAX_TCS}Q{IEEE_8021QAZ_MAX_TCS}Q")


class DcbError(OSError):
    """A DCB request failed for a reason other than "not supported"; ``kind`` is the errno
    name (ENODEV, EPERM, ...) or ``parse``."""

    @property
    def kind(self) -> str:
        return errno_name(self.errno) if self.errno else "parse"




def parse_ieee_pfc(payload: bytes) -> IeeePfc:
    """A ``DCB_ATTR_IEEE_PFC`` payload. The counters are read only when all 136 bytes are
    there; a payload shorter than the configuration part raises ValueError."""
    if len(payload) < _IEEE_PFC_HEAD.size:
        raise ValueError(f"DCB_ATTR_IEEE_PFC has {len(payload)} bytes, "
                         f"fewer than the {_IEEE_PFC_HEAD.size} of its configuration")
    cap, enabled, mbc, delay = _IEEE_PFC_HEAD.unpack_from(payload)
    requests = indications = None
    if len(payload) >= _IEEE_PFC.size:
        counters = _IEEE_PFC.unpack_from(payload)[4:]
        requests = counters[:IEEE_8021QAZ_MAX_TCS]
        indications = counters[IEEE_8021QAZ_MAX_TCS:]
    return IeeePfc(
        enabled=tuple(p for p in range(IEEE_8021QAZ_MAX_TCS) if enabled >> p & 1),
        capability=cap, mbc=bool(mbc), delay=delay,
        requests=requests, indications=indications)


def pfc_from_reply(payload: bytes) -> IeeePfc | None:
    """The PFC configuration in an IEEE_GET reply (its payload after the ``nlmsghdr``:
    ``struct dcbmsg``, then attributes); ``None`` when it has none. Raises ValueError for
    bytes that do not fit the layout."""
    if len(payload) < _DCBMSG.size:
        raise ParseError(f"DCB reply of {len(payload)} bytes has no dcbmsg")
    top = attribute_index(payload, _DCBMSG.size, len(payload))
    ieee = top.get(DCB_ATTR_IEEE)
    span = None if ieee is None else attribute_index(payload, *ieee).get(DCB_ATTR_IEEE_PFC)
    return None if span is None else parse_ieee_pfc(payload[span[0]:span[1]])


def parse_ieee_ets(payload: bytes) -> IeeeEts:
    """A ``DCB_ATTR_IEEE_ETS`` payload; ValueError when shorter than its operational part."""
    if len(payload) < _IEEE_ETS.size:
        raise ValueError(f"DCB_ATTR_IEEE_ETS has {len(payload)} bytes, fewer than the "
                         f"{_IEEE_ETS.size} of willing, ets_cap, cbs, tc_tx_bw, tc_rx_bw, "
                         "tc_tsa and prio_tc")
    willing, cap, _cbs, tx_bw, _rx_bw, tsa, prio_tc = _IEEE_ETS.unpack_from(payload)
    return IeeeEts(willing=bool(willing), ets_cap=cap, prio_tc=tuple(prio_tc),
                   tc_tx_bw=tuple(tx_bw), tc_tsa=tuple(TSA_NAMES.get(t, str(t)) for t in tsa))


def parse_app_table(payload: bytes) -> tuple[DcbApp, ...]:
    """The entries of a ``DCB_ATTR_IEEE_APP_TABLE`` nest, in kernel order."""
    apps = []
    for kind, start, end in attributes(payload, 0, len(payload)):
        if kind in (DCB_ATTR_IEEE_APP, DCB_ATTR_DCB_APP):
            if end - start < _DCB_APP.size:
                raise ValueError(f"dcb_app attribute of {end - start} bytes")
            apps.append(DcbApp(*_DCB_APP.unpack_from(payload, start)))
    return tuple(apps)


def parse_apptrust(payload: bytes) -> tuple[int, ...]:
    """The selectors of a ``DCB_ATTR_DCB_APP_TRUST_TABLE`` nest, most trusted first."""
    return tuple(payload[start] for kind, start, end in attributes(payload, 0, len(payload))
                 if kind in (DCB_ATTR_IEEE_APP, DCB_ATTR_DCB_APP) and end > start)


def qos_from_reply(payload: bytes) -> DcbQos | None:
    """ETS, APP table and app trust of an IEEE_GET reply; ``None`` without ``DCB_ATTR_IEEE``.
    Raises ValueError for bytes that do not fit the layout."""
    if len(payload) < _DCBMSG.size:
        raise ParseError(f"DCB reply of {len(payload)} bytes has no dcbmsg")
    ieee = attribute_index(payload, _DCBMSG.size, len(payload)).get(DCB_ATTR_IEEE)
    if ieee is None:
        return None
    body = payload[ieee[0]:ieee[1]]
    attrs = attribute_index(body, 0, len(body))
    ets = attrs.get(DCB_ATTR_IEEE_ETS)
    apps = attrs.get(DCB_ATTR_IEEE_APP_TABLE)
    trust = attrs.get(DCB_ATTR_DCB_APP_TRUST_TABLE)
    return DcbQos(
        ets=None if ets is None else parse_ieee_ets(body[ets[0]:ets[1]]),
        apps=() if apps is None else parse_app_table(body[apps[0]:apps[1]]),
        apptrust=None if trust is None else parse_apptrust(body[trust[0]:trust[1]]))


def peer_from_reply(payload: bytes) -> DcbPeer | None:
    """The link peer's PFC, ETS and application table in an IEEE_GET reply; None when the
    driver sent none of them. Raises ValueError for bytes that do not fit the layout."""
    if len(payload) < _DCBMSG.size:
        raise ParseError(f"DCB reply of {len(payload)} bytes has no dcbmsg")
    ieee = attribute_index(payload, _DCBMSG.size, len(payload)).get(DCB_ATTR_IEEE)
    if ieee is None:
        return None
    body = payload[ieee[0]:ieee[1]]
    attrs = attribute_index(body, 0, len(body))
    pfc, ets, apps = (attrs.get(k) for k in (DCB_ATTR_IEEE_PEER_PFC, DCB_ATTR_IEEE_PEER_ETS,
                                             DCB_ATTR_IEEE_PEER_APP))
    if pfc is None and ets is None and apps is None:
        return None
    return DcbPeer(pfc=None if pfc is None else parse_ieee_pfc(body[pfc[0]:pfc[1]]),
                   ets=None if ets is None else parse_ieee_ets(body[ets[0]:ets[1]]),
                   apps=None if apps is None else parse_app_table(body[apps[0]:apps[1]]))


def request_body(ifname: str) -> bytes:
    """``struct dcbmsg`` (IEEE_GET) and the interface name: what follows the ``nlmsghdr``."""
    return (_DCBMSG.pack(socket.AF_UNSPEC, DCB_CMD_IEEE_GET, 0)
            + nlattr(DCB_ATTR_IFNAME, ifname.encode() + b"\0"))


def request(ifname: str, seq: int = 1) -> bytes:
    """The whole RTM_GETDCB request message for ``ifname``."""
    return message(RTM_GETDCB, NLM_F_REQUEST, seq, request_body(ifname))


class DcbNetlink(NetlinkSocket):
    """An rtnetlink socket for DCB requests, reused across polls. Sees the interfaces of
    the network namespace it was created in. Not thread-safe."""

    family_header = _DCBMSG.size

    def __init__(self) -> None:
        super().__init__(NETLINK_ROUTE)

    def __enter__(self) -> DcbNetlink:
        return self

    def ieee_pfc(self, ifname: str) -> IeeePfc | None:
        """PFC configuration of ``ifname``; ``None`` when the device does not report it.
        Raises DcbError for anything else (ENODEV: no such interface, ``parse``)."""
        return self.ieee(ifname)[0]

    def ieee(self, ifname: str) -> tuple[IeeePfc | None, DcbQos | None]:
        """PFC and the rest of the QoS configuration of ``ifname`` from one IEEE_GET
        request; ``(None, None)`` when the device has no DCB. Raises DcbError as
        :meth:`ieee_pfc`."""
        return self.ieee_with_peer(ifname)[:2]

    def ieee_with_peer(self, ifname: str
                       ) -> tuple[IeeePfc | None, DcbQos | None, DcbPeer | None]:
        """:meth:`ieee` and the link peer's attributes of the same reply."""
        try:
            replies = self.request(RTM_GETDCB, 0, request_body(ifname))
        except KernelError as e:
            if e.errno == errno.EOPNOTSUPP:
                return None, None, None
            raise DcbError(e.errno, f"{ifname}: RTM_GETDCB: {errno_name(e.errno)}") from None
        except ParseError as e:
            raise DcbError(0, f"{ifname}: {e}") from None
        for reply in replies:
            if reply[1] == DCB_CMD_IEEE_GET:
                try:
                    return pfc_from_reply(reply), qos_from_reply(reply), peer_from_reply(reply)
                except (ValueError, struct.error) as e:
                    raise DcbError(0, f"{ifname}: {e}") from None
        return None, None, None


@runtime_checkable
class DcbReader(Protocol):
    """What DcbSource reads through: DcbNetlink, or simulate's double."""

    def ieee(self, ifname: str) -> tuple[IeeePfc | None, DcbQos | None]: ...
    def close(self) -> None: ...


@runtime_checkable
class DcbPeerReader(Protocol):
    """A DcbReader that also returns the link peer's attributes (DcbNetlink)."""

    def ieee_with_peer(self, ifname: str
                       ) -> tuple[IeeePfc | None, DcbQos | None, DcbPeer | None]: ...


RTNLGRP_DCB = 23  # enum rtnetlink_groups
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
_NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
EVERY = None  # DcbWatch.changed(): every interface (the socket overflowed)


def notified_names(datagram: bytes) -> set[str]:
    """The interfaces named by the DCB notifications of one datagram (``DCB_ATTR_IFNAME``
    after each ``struct dcbmsg``); ParseError for bytes that do not fit."""
    names: set[str] = set()
    at = 0
    while at + _NLMSGHDR.size <= len(datagram):
        length, kind = _NLMSGHDR.unpack_from(datagram, at)[:2]
        if length < _NLMSGHDR.size or at + length > len(datagram):
            raise ParseError(f"netlink message of {length} bytes at {at}")
        start = at + _NLMSGHDR.size + _DCBMSG.size
        if kind in (RTM_GETDCB, RTM_GETDCB + 1) and start <= at + length:  # RTM_SETDCB: 79
            name = attribute_index(datagram, start, at + length).get(DCB_ATTR_IFNAME)
            if name is not None:
                names.add(datagram[name[0]:name[1]].rstrip(b"\0").decode("utf-8", "replace"))
        at += (length + 3) & ~3
    return names


class DcbWatch:
    """The kernel's DCB notifications (the ``RTNLGRP_DCB`` rtnetlink group: no privilege
    needed), read without blocking: which interfaces' DCB state changed since the last
    call."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK
                                   | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
        try:
            self._sock.bind((0, 0))
            self._sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, RTNLGRP_DCB)
        except BaseException:
            self._sock.close()
            raise

    def changed(self) -> set[str] | None:
        """Names notified since the last call; ``EVERY`` (None) when notifications were lost
        (the socket's buffer overflowed: ENOBUFS) or could not be read."""
        names: set[str] = set()
        while True:
            try:
                datagram = self._sock.recv(1 << 16)
            except BlockingIOError:
                return names
            except OSError:  # ENOBUFS: some were dropped; which ones is unknown
                self._drain()
                return EVERY
            try:
                names |= notified_names(datagram)
            except ParseError:
                return EVERY

    def _drain(self) -> None:
        try:
            while self._sock.recv(1 << 16):
                pass
        except OSError:
            pass

    def close(self) -> None:
        self._sock.close()


class Notifications(Protocol):
    """What DcbSource asks which interfaces changed: a DcbWatch, or a test double."""

    def changed(self) -> set[str] | None: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Kept:
    """One interface's last answer and what it was read under."""

    state: tuple[object, ...]  # ifindex, carrier changes, carrier, operstate
    at: float  # monotonic time of the read
    pfc: IeeePfc | None
    qos: DcbQos | None
    peer: DcbPeer | None
    error: DcbError | None


class DcbSource:
    """IEEE PFC, ETS and the application table over rtnetlink DCB as a
    :class:`~nicwatch.sources.Source`: the ``dcb_pfc``, ``dcb_qos`` and ``dcb_peer`` parts
    of each Reading (one request per interface). ``reader``: a :class:`DcbNetlink`, or a
    double with its ``ieee``/``close``. ``refresh``: seconds an interface's answer (or its
    error, put again each poll) is reused while ``watch`` (notifications) and its link state
    say nothing changed (0: asked every poll)."""

    name = "dcbnl"
    fills: ClassVar[frozenset[str]] = frozenset({"dcb_pfc", "dcb_qos", "dcb_peer"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, reader: DcbReader, refresh: float = 0.0,
                 watch: Notifications | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.reader = reader
        # a reader that also answers the peer's attributes (a runtime-checked protocol: asked
        # once here, not per interface and poll)
        self._peer: DcbPeerReader | None = reader if isinstance(reader, DcbPeerReader) else None
        self.refresh = refresh
        self.watch = watch
        self.clock = clock
        self.requests = 0  # RTM_GETDCB requests sent (tests, benchmarks)
        self._kept: dict[str, _Kept] = {}

    @classmethod
    def open(cls, options: SourceOptions) -> DcbSource:
        reader = DcbNetlink()
        watch: DcbWatch | None = None
        if options.dcb_refresh:
            try:
                watch = DcbWatch()
            except OSError:  # without notifications: the link state and the period
                watch = None
        return cls(reader, options.dcb_refresh, watch)

    def read(self, poll: Poll) -> None:
        refresh = self.refresh
        changed = self.watch.changed() if self.watch is not None and refresh else set()
        now = self.clock()
        kept: dict[str, _Kept] = {}
        for nc in poll.each():
            state = (nc.ifindex, nc.carrier_changes, nc.carrier, nc.operstate)
            last = self._kept.get(nc.name)
            if (last is None or not refresh or changed is EVERY or nc.name in changed
                    or last.state != state or now - last.at >= refresh * 0.9):
                last = self._ask(nc.name, state, now)
            kept[nc.name] = last
            if last.error is not None:
                poll.error(nc.name, self.name, last.error.kind, str(last.error))
            else:
                if self._peer is not None:
                    poll.put(nc.name, Reading.dcb_peer, last.peer)
                poll.put(nc.name, Reading.dcb_pfc, last.pfc)
                poll.put(nc.name, Reading.dcb_qos, last.qos)
        self._kept = kept  # an interface gone takes its answer with it

    def _ask(self, ifname: str, state: tuple[object, ...], now: float) -> _Kept:
        self.requests += 1
        peer: DcbPeer | None = None
        try:
            if self._peer is not None:
                pfc, qos, peer = self._peer.ieee_with_peer(ifname)
            else:
                pfc, qos = self.reader.ieee(ifname)
        except DcbError as e:
            return _Kept(state, now, None, None, None, e)
        return _Kept(state, now, pfc, qos, peer, None)

    def close(self) -> None:
        self.reader.close()
        if self.watch is not None:
            self.watch.close()
