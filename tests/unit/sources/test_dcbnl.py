"""dcbnl: the IEEE PFC reply parsed from hand-built netlink messages (no NIC here has DCB
operations), and the kernel path for real on a veth, which has none and must say so."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from netns import make_veth_pair, ns_python

from nicwatch.sources.dcbnl import (
    DCB_CMD_IEEE_GET,
    RTM_GETDCB,
    IeeePfc,
    parse_ieee_pfc,
    pfc_from_reply,
    request,
)
from nicwatch.sources.netlink import split_replies

DCB_ATTR_IFNAME, DCB_ATTR_IEEE, DCB_ATTR_DCBX = 1, 13, 14
DCB_ATTR_IEEE_ETS, DCB_ATTR_IEEE_PFC = 1, 2


def nla(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + bytes(-size % 4)


def ieee_pfc(cap: int, enabled: int, mbc: int, delay: int, requests=(0,) * 8,
             indications=(0,) * 8) -> bytes:
    """struct ieee_pfc as the kernel lays it out (x86-64: 136 bytes)."""
    return struct.pack("=BBBxH2x8Q8Q", cap, enabled, mbc, delay, *requests, *indications)


def reply(*attrs: bytes) -> bytes:
    """An RTM_GETDCB reply as dcbnl_ieee_fill() builds it, split from its datagram like a
    received one (the payload after the nlmsghdr)."""
    body = struct.pack("=BBH", 0, DCB_CMD_IEEE_GET, 0) + b"".join(attrs)
    (msg,), done = split_replies(struct.pack("=IHHII", 16 + len(body), RTM_GETDCB, 0, 7, 0)
                                 + body, seq=7, family_header=4)
    assert done  # a plain reply (no NLM_F_MULTI) ends the exchange
    return msg


def test_mlx5_style_reply_with_pfc_on_priority_3():
    ets = nla(DCB_ATTR_IEEE_ETS, bytes(59))  # struct ieee_ets; other attributes are skipped
    pfc = ieee_pfc(8, 0b0000_1000, 0, 32639, requests=(0, 0, 0, 8_330_000, 0, 0, 0, 0),
                   indications=(0, 0, 0, 41, 0, 0, 0, 0))
    msg = reply(nla(DCB_ATTR_IFNAME, b"ens3np0\0"),
                nla(DCB_ATTR_IEEE, ets + nla(DCB_ATTR_IEEE_PFC, pfc)),
                nla(DCB_ATTR_DCBX, b"\x08"))
    assert pfc_from_reply(msg) == IeeePfc(
        enabled=(3,), capability=8, mbc=False, delay=32639,
        requests=(0, 0, 0, 8_330_000, 0, 0, 0, 0), indications=(0, 0, 0, 41, 0, 0, 0, 0))


@pytest.mark.parametrize(("bitmap", "priorities"), [
    (0, ()), (0b1000_0001, (0, 7)), (0b0001_1000, (3, 4)), (0xFF, tuple(range(8)))])
def test_pfc_en_bitmap(bitmap, priorities):
    assert parse_ieee_pfc(ieee_pfc(4, bitmap, 1, 0)).enabled == priorities


def test_configuration_only_payload_has_no_counters_and_a_truncated_one_is_an_error():
    pfc = parse_ieee_pfc(ieee_pfc(8, 0b1000, 1, 5)[:6])
    assert (pfc.enabled, pfc.mbc, pfc.delay, pfc.requests, pfc.indications) == (
        (3,), True, 5, None, None)
    with pytest.raises(ValueError, match="fewer than the 6"):
        parse_ieee_pfc(b"\x08\x08\x00")


@pytest.mark.parametrize("attrs", [
    (nla(DCB_ATTR_IFNAME, b"ens3np0\0"), nla(DCB_ATTR_IEEE, nla(DCB_ATTR_IEEE_ETS, bytes(59)))),
    (nla(DCB_ATTR_IFNAME, b"ens3np0\0"),),
])
def test_reply_without_ieee_pfc_is_not_reported(attrs):
    assert pfc_from_reply(reply(*attrs)) is None


@given(st.binary(max_size=160))
def test_any_payload_parses_or_raises_value_error(payload):
    try:
        pfc = parse_ieee_pfc(payload)
    except ValueError:
        assert len(payload) < 6
    else:
        assert set(pfc.enabled) <= set(range(8)) and (pfc.requests is None) == (len(payload) < 136)


def test_request_carries_the_command_and_interface_name():
    raw = request("ens3np0")
    assert struct.unpack_from("=I", raw)[0] == len(raw)  # nlmsghdr.nlmsg_len
    assert struct.unpack_from("=H", raw, 4)[0] == RTM_GETDCB  # nlmsghdr.nlmsg_type
    assert raw[16:18] == bytes([0, DCB_CMD_IEEE_GET])
    assert raw[20:24] == struct.pack("=HH", 12, DCB_ATTR_IFNAME) and raw[24:32] == b"ens3np0\0"


@pytest.fixture
def veth_pair_dcb():
    pair = make_veth_pair(subnet=31)
    yield pair
    pair.delete()


@pytest.mark.netns
def test_kernel_path_on_a_veth_reports_unsupported(veth_pair_dcb):
    p = veth_pair_dcb
    got = ns_python(p.ns_a, (
        "import json\n"
        "from nicwatch.sources.dcbnl import DcbNetlink, DcbError\n"
        "with DcbNetlink() as d:\n"
        f"    pfc = d.ieee_pfc({p.a!r})\n"
        "    try:\n"
        f"        d.ieee_pfc({p.b!r})\n"  # the peer lives in the other namespace
        "        err = None\n"
        "    except DcbError as e:\n"
        "        err = e.kind\n"
        "print(json.dumps([pfc, err]))\n"))
    assert got == [None, "ENODEV"]

