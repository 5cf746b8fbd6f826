"""IEEE 802.1Qbb PFC configuration from the kernel's DCB netlink interface (dcbnl).

ethtool has no notion of PFC; which priorities are lossless is DCB state, read with an
rtnetlink ``RTM_GETDCB`` request carrying ``DCB_CMD_IEEE_GET`` and the interface name. The
reply nests ``DCB_ATTR_IEEE_PFC`` (``struct ieee_pfc``, include/uapi/linux/dcbnl.h) inside
``DCB_ATTR_IEEE``; it is what ``dcb pfc show dev X`` prints. There is no dump: one request
per interface. pyroute2 0.9.7 knows the message type number only, so the message layout is
declared here.

A device without DCB operations (veth, virtio_net, most non-RDMA NICs) answers EOPNOTSUPP;
a DCB-capable driver without IEEE PFC support replies without the PFC attribute. Both mean
"not reported" and read as ``None``, never as "PFC off".
"""

from __future__ import annotations

import errno
import socket
import struct
from typing import Protocol, runtime_checkable

from pyroute2.netlink import NETLINK_ROUTE, NLM_F_REQUEST, nla, nlmsg
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.nlsocket import NetlinkSocket

from nicwatch.model import IeeePfc
from nicwatch.sources import Poll, SourceOptions, errno_name

RTM_GETDCB = 78
DCB_CMD_IEEE_GET = 21  # enum dcbnl_commands
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


class DcbMsg(nlmsg):
    """``struct dcbmsg`` and the attributes of an IEEE_GET reply that are read here."""

    fields = (("family", "B"), ("cmd", "B"), ("pad", "H"))
    nla_map = (
        (0, "DCB_ATTR_UNDEFINED", "none"),
        (1, "DCB_ATTR_IFNAME", "asciiz"),
        (13, "DCB_ATTR_IEEE", "ieee"),
    )

    class ieee(nla):
        nla_map = (
            (0, "DCB_ATTR_IEEE_UNSPEC", "none"),
            (2, "DCB_ATTR_IEEE_PFC", "cdata"),
        )


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


def pfc_from_reply(msg: DcbMsg) -> IeeePfc | None:
    """The PFC configuration in a decoded IEEE_GET reply; ``None`` when it has none."""
    ieee = msg.get_attr("DCB_ATTR_IEEE")
    payload = None if ieee is None else ieee.get_attr("DCB_ATTR_IEEE_PFC")
    return None if payload is None else parse_ieee_pfc(payload)


def request(ifname: str) -> DcbMsg:
    msg = DcbMsg()
    msg["family"] = socket.AF_UNSPEC
    msg["cmd"] = DCB_CMD_IEEE_GET
    msg["attrs"] = [("DCB_ATTR_IFNAME", ifname)]
    return msg


class DcbNetlink:
    """An rtnetlink socket for DCB requests, reused across polls. Sees the interfaces of
    the network namespace it was created in. Not thread-safe."""

    def __init__(self) -> None:
        self._sock = NetlinkSocket(NETLINK_ROUTE)
        self._sock.marshal.msg_map[RTM_GETDCB] = DcbMsg

    def __enter__(self) -> DcbNetlink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def ieee_pfc(self, ifname: str) -> IeeePfc | None:
        """PFC configuration of ``ifname``; ``None`` when the device does not report it.
        Raises DcbError for anything else (ENODEV: no such interface, ``parse``)."""
        try:
            replies = tuple(self._sock.nlm_request(request(ifname), msg_type=RTM_GETDCB,
                                                   msg_flags=NLM_F_REQUEST))
        except NetlinkError as e:
            if e.code == errno.EOPNOTSUPP:
                return None
            raise DcbError(e.code, f"{ifname}: RTM_GETDCB: {errno_name(e.code)}") from None
        for reply in replies:
            if reply["cmd"] == DCB_CMD_IEEE_GET:
                try:
                    return pfc_from_reply(reply)
                except (ValueError, struct.error) as e:
                    raise DcbError(0, f"{ifname}: {e}") from None
        return None


@runtime_checkable
class DcbReader(Protocol):
    """What DcbSource reads through: DcbNetlink, or simulate's double."""

    def ieee_pfc(self, ifname: str) -> IeeePfc | None: ...
    def close(self) -> None: ...


class DcbSource:
    """IEEE PFC over rtnetlink DCB as a :class:`~nicwatch.sources.Source`: the ``dcb_pfc``
    part of each Reading. ``reader``: a :class:`DcbNetlink`, or a double with its
    ``ieee_pfc``/``close``."""

    name = "dcbnl"

    def __init__(self, reader: DcbReader) -> None:
        self.reader = reader

    @classmethod
    def open(cls, options: SourceOptions) -> DcbSource:
        return cls(DcbNetlink())

    def read(self, poll: Poll) -> None:
        for nc in poll.each():
            try:
                poll.put(nc.name, "dcb_pfc", self.reader.ieee_pfc(nc.name))
            except DcbError as e:
                poll.error(nc.name, self.name, e.kind, str(e))

    def close(self) -> None:
        self.reader.close()
