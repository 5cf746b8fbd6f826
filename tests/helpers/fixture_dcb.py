"""DCB IEEE_GET replies built to the kernel's layout (net/dcb/dcbnl.c dcbnl_ieee_fill(),
include/uapi/linux/dcbnl.h), and a DCB handle that answers with them: no NIC on a test
machine has DCB operations (veth answers EOPNOTSUPP)."""

from __future__ import annotations

import struct

from nicwatch.sources.dcbnl import DCB_CMD_IEEE_GET, RTM_GETDCB, pfc_from_reply, qos_from_reply
from nicwatch.sources.netlink import split_replies

DCB_ATTR_IFNAME, DCB_ATTR_IEEE, DCB_ATTR_DCBX = 1, 13, 14  # enum dcbnl_attrs
DCB_ATTR_IEEE_ETS, DCB_ATTR_IEEE_PFC, DCB_ATTR_IEEE_APP_TABLE = 1, 2, 3  # enum ieee_attrs
DCB_ATTR_DCB_APP_TRUST_TABLE = 11
DCB_ATTR_IEEE_APP, DCB_ATTR_DCB_APP = 1, 2  # enum ieee_attrs_app
NLA_F_NESTED = 1 << 15
SEL_DSCP, SEL_PCP = 5, 255


def nla(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + bytes(-size % 4)


def ieee_pfc(cap: int, enabled: int, mbc: int, delay: int, requests=(0,) * 8,
             indications=(0,) * 8) -> bytes:
    """struct ieee_pfc as the kernel lays it out (x86-64: 136 bytes)."""
    return struct.pack("=BBBxH2x8Q8Q", cap, enabled, mbc, delay, *requests, *indications)


def ieee_ets(prio_tc, tc_tx_bw, tc_tsa, willing=0, ets_cap=8) -> bytes:
    """struct ieee_ets: willing, ets_cap, cbs, then tc_tx_bw, tc_rx_bw, tc_tsa, prio_tc,
    tc_reco_bw, tc_reco_tsa, reco_prio_tc (u8[8] each): 59 bytes."""
    return (bytes([willing, ets_cap, 0]) + bytes(tc_tx_bw) + bytes(8) + bytes(tc_tsa)
            + bytes(prio_tc) + bytes(24))


def app_table(*entries: tuple[int, int, int]) -> bytes:
    """A DCB_ATTR_IEEE_APP_TABLE nest of struct dcb_app {selector, priority, protocol}; the
    PCP selector goes in DCB_ATTR_DCB_APP as dcbnl_app_attr_type_get() picks."""
    return nla(DCB_ATTR_IEEE_APP_TABLE | NLA_F_NESTED, b"".join(
        nla(DCB_ATTR_DCB_APP if sel == SEL_PCP else DCB_ATTR_IEEE_APP,
            struct.pack("=BBH", sel, prio, proto)) for sel, prio, proto in entries))


def apptrust(*selectors: int) -> bytes:
    return nla(DCB_ATTR_DCB_APP_TRUST_TABLE | NLA_F_NESTED, b"".join(
        nla(DCB_ATTR_DCB_APP if s == SEL_PCP else DCB_ATTR_IEEE_APP, bytes([s]))
        for s in selectors))


def reply(*attrs: bytes) -> bytes:
    """An RTM_GETDCB reply as dcbnl_ieee_fill() builds it, split from its datagram like a
    received one (the payload after the nlmsghdr)."""
    body = struct.pack("=BBH", 0, DCB_CMD_IEEE_GET, 0) + b"".join(attrs)
    (msg,), done = split_replies(struct.pack("=IHHII", 16 + len(body), RTM_GETDCB, 0, 7, 0)
                                 + body, seq=7, family_header=4)
    assert done  # a plain reply (no NLM_F_MULTI) ends the exchange
    return msg


def ieee_reply(ifname: str, *ieee_attrs: bytes) -> bytes:
    return reply(nla(DCB_ATTR_IFNAME, ifname.encode() + b"\0"),
                 nla(DCB_ATTR_IEEE | NLA_F_NESTED, b"".join(ieee_attrs)),
                 nla(DCB_ATTR_DCBX, b"\x08"))


def roce_reply(ifname: str, dscp_map=((26, 3), (48, 6)), pfc_en=0b1000) -> bytes:
    """An mlx5 port set up for RoCE the usual way (mlnx_qos --trust dscp --pfc 0,0,0,1,...):
    RoCE on DSCP 26 -> priority 3 (PFC, its own TC with half the bandwidth), CNPs on DSCP 48
    -> priority 6, every other DSCP to priority 0 (mlx5 lists only the non-default entries
    here: those it or the operator added)."""
    return ieee_reply(
        ifname,
        nla(DCB_ATTR_IEEE_ETS, ieee_ets(prio_tc=(0, 0, 0, 3, 0, 0, 6, 0),
                                        tc_tx_bw=(50, 0, 0, 50, 0, 0, 0, 0),
                                        tc_tsa=(2, 2, 2, 2, 2, 2, 0, 2))),
        nla(DCB_ATTR_IEEE_PFC, ieee_pfc(8, pfc_en, 0, 32639)),
        app_table(*((SEL_DSCP, prio, dscp) for dscp, prio in dscp_map)))


class RecordedDcb:
    """``ieee()`` of :class:`~nicwatch.sources.dcbnl.DcbNetlink` from built replies."""

    def __init__(self, replies: dict[str, bytes]) -> None:
        self.replies = replies

    def ieee(self, ifname: str):
        raw = self.replies.get(ifname)
        return (None, None) if raw is None else (pfc_from_reply(raw), qos_from_reply(raw))

    def ieee_pfc(self, ifname: str):
        return self.ieee(ifname)[0]

    def close(self) -> None:
        pass
