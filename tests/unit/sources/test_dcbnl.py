"""dcbnl: the IEEE PFC reply parsed from hand-built netlink messages (no NIC here has DCB
operations), and the kernel path for real on a veth, which has none and must say so."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nicwatch.sources.dcbnl import (
    DCB_CMD_IEEE_GET,
    RTM_GETDCB,
    IeeePfc,
    parse_ieee_pfc,
    pfc_from_reply,
    request,
)

from fixture_dcb import ieee_pfc, nla, reply
from netns import make_veth_pair, ns_python

DCB_ATTR_IFNAME, DCB_ATTR_IEEE, DCB_ATTR_DCBX = 1, 13, 14
DCB_ATTR_IEEE_ETS, DCB_ATTR_IEEE_PFC = 1, 2


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



# --------------------------------------------------------------------------- ETS, APP, trust

from nicwatch.model import DcbApp, IeeeEts  # noqa: E402
from nicwatch.sources.dcbnl import parse_ieee_ets, qos_from_reply  # noqa: E402

from fixture_dcb import (  # noqa: E402
    SEL_DSCP,
    SEL_PCP,
    app_table,
    apptrust,
    ieee_ets,
    ieee_reply,
    roce_reply,
)


def test_roce_reply_gives_ets_and_the_dscp_map():
    raw = roce_reply("ens3np0")
    qos = qos_from_reply(raw)
    assert qos.ets == IeeeEts(willing=False, ets_cap=8, prio_tc=(0, 0, 0, 3, 0, 0, 6, 0),
                              tc_tx_bw=(50, 0, 0, 50, 0, 0, 0, 0),
                              tc_tsa=("ets",) * 6 + ("strict", "ets"))
    assert qos.apps == (DcbApp(SEL_DSCP, 3, 26), DcbApp(SEL_DSCP, 6, 48))
    assert qos.apptrust is None
    assert pfc_from_reply(raw).enabled == (3,)  # the same message still gives PFC


def test_apptrust_table_and_pcp_entries_of_newer_kernels():
    raw = ieee_reply("sw0p1", app_table((SEL_PCP, 4, 0), (SEL_DSCP, 2, 10)),
                     apptrust(SEL_DSCP, SEL_PCP))
    qos = qos_from_reply(raw)
    assert qos.apptrust == (SEL_DSCP, SEL_PCP)
    assert qos.apps == (DcbApp(SEL_PCP, 4, 0), DcbApp(SEL_DSCP, 2, 10))
    assert qos.ets is None


def test_tsa_values_outside_the_named_ones_are_kept_as_numbers():
    ets = parse_ieee_ets(ieee_ets((0,) * 8, (100,) + (0,) * 7, (1, 255, 7, 0, 0, 0, 0, 0)))
    assert ets.tc_tsa[:3] == ("cbs", "vendor", "7")
    with pytest.raises(ValueError, match="fewer than the 35"):
        parse_ieee_ets(bytes(34))


def test_reply_without_ieee_nest_has_no_qos():
    assert qos_from_reply(reply(nla(DCB_ATTR_IFNAME, b"ens3np0\0"))) is None


def test_peer_attributes_of_a_driver_dcbx_agent():
    """A qede/bnx2x-style reply: the port's own PFC on priority 3, the peer's (what the
    driver's DCBX agent learned from the switch) on 3 and 4, its ETS, and an APP nest with
    RoCE v2 (selector 3, UDP 4791) on priority 4."""
    from nicwatch.sources.dcbnl import (
        DCB_ATTR_IEEE_APP,
        DCB_ATTR_IEEE_PEER_APP,
        DCB_ATTR_IEEE_PEER_ETS,
        DCB_ATTR_IEEE_PEER_PFC,
        peer_from_reply,
    )

    peer_apps = nla(DCB_ATTR_IEEE_PEER_APP,
                    nla(DCB_ATTR_IEEE_APP, struct.pack("=BBH", 3, 4, 4791)))
    raw = ieee_reply("ens1f0", nla(DCB_ATTR_IEEE_PFC, ieee_pfc(8, 0b1000, 0, 0)),
                     nla(DCB_ATTR_IEEE_PEER_PFC, ieee_pfc(8, 0b11000, 0, 0)),
                     nla(DCB_ATTR_IEEE_PEER_ETS, ieee_ets((0, 0, 0, 3, 4, 0, 0, 0),
                                                          (40, 0, 0, 30, 30, 0, 0, 0),
                                                          (2,) * 8, willing=1)),
                     peer_apps)
    peer = peer_from_reply(raw)
    assert peer is not None and peer.pfc is not None and peer.ets is not None
    assert peer.pfc.enabled == (3, 4) and pfc_from_reply(raw).enabled == (3,)
    assert peer.ets.willing and peer.ets.prio_tc == (0, 0, 0, 3, 4, 0, 0, 0)
    assert peer.apps == (DcbApp(3, 4, 4791),)
    assert peer_from_reply(roce_reply("ens3np0")) is None  # mlx5 fills no peer attributes
