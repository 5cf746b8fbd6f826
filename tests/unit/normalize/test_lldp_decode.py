"""The LLDPDU and IEEE 802.1Qaz DCBX decoder: frames written byte by byte from the standard,
hostile frames (each refused with one line naming the problem), and fuzzing (any bytes either
decode or raise LldpError, nothing else)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.model import DcbApp, DcbxEts, DcbxPfc
from nicwatch.normalize.lldp import (
    MAX_TEXT,
    LldpError,
    decode_frame,
    encode_frame,
    roce_priority,
    tlv,
)

from paths import FIXTURES

HEAD = bytes.fromhex("0180c200000e" "020000000001" "88cc")
# 802.1AB 8.5: Chassis ID subtype 4 (MAC), Port ID subtype 5 (interface name), TTL 120.
MANDATORY = (bytes.fromhex("0207" "04" "020000000001")
             + bytes.fromhex("0405" "05") + b"eth0"
             + bytes.fromhex("0602" "0078"))
END = bytes.fromhex("0000")


def test_a_frame_written_from_the_standard_decodes_field_by_field() -> None:
    frame = (HEAD + MANDATORY
             + bytes.fromhex("0a05") + b"leaf1"  # System Name
             + bytes.fromhex("0806") + b"Eth1/1"  # Port Description
             # Management Address: string length 5, IPv4 198.18.0.9, ifIndex 2, no OID
             + bytes.fromhex("100c" "05" "01" "c6120009" "02" "00000002" "00")
             # 802.1Qaz PFC Configuration: willing, capability 8, PFC on priorities 3 and 4
             + bytes.fromhex("fe06" "0080c2" "0b" "88" "18")
             # ETS Configuration: not willing, max TCs 0 (= 8); priorities 0-7 -> TCs
             # 0,0,0,3,3,0,0,7; bandwidth 50/0/0/50/0/0/0/0; TSA ets/strict... per TC
             + bytes.fromhex("fe19" "0080c2" "09" "00" "00033007" "3200003200000000"
                             "0200000200000000")
             # Application Priority: RoCE v2 (selector 3: UDP, port 4791) -> priority 3;
             # DSCP 26 -> priority 3
             + bytes.fromhex("fe0b" "0080c2" "0c" "00" "63" "12b7" "65" "001a")
             + END + bytes(20))  # padding to the Ethernet minimum, ignored after End
    n = decode_frame(frame, received_at=1000.0)
    assert (n.chassis_id, n.chassis_id_subtype) == ("02:00:00:00:00:01", "mac")
    assert (n.port_id, n.port_id_subtype) == ("eth0", "interface_name")
    assert n.ttl == 120 and n.received_at == 1000.0
    assert (n.system_name, n.port_description, n.management_address) == (
        "leaf1", "Eth1/1", "198.18.0.9")
    assert n.pfc == DcbxPfc(willing=True, mbc=False, capability=8, enabled=(3, 4))
    assert n.ets == DcbxEts(willing=False, cbs=False, max_tcs=8,
                            prio_tc=(0, 0, 0, 3, 3, 0, 0, 7), tc_bw=(50, 0, 0, 50, 0, 0, 0, 0),
                            tc_tsa=("ets", "strict", "strict", "ets", "strict", "strict",
                                    "strict", "strict"))
    assert n.apps == (DcbApp(selector=3, priority=3, protocol=4791),
                      DcbApp(selector=5, priority=3, protocol=26))
    assert roce_priority(n.apps) == 3


def test_encode_and_decode_agree() -> None:
    pfc = DcbxPfc(willing=False, mbc=True, capability=4, enabled=(3,))
    ets = DcbxEts(willing=True, cbs=False, max_tcs=8, prio_tc=(0, 1, 2, 3, 4, 5, 6, 7),
                  tc_bw=(10, 10, 10, 40, 10, 10, 5, 5), tc_tsa=("ets",) * 8)
    apps = (DcbApp(selector=1, priority=5, protocol=0x8915),)
    frame = encode_frame(b"\x02\0\0\0\0\x02", b"\x02\0\0\0\0\x03", b"\x02\0\0\0\0\x02", 90,
                         system_name="host-b", port_description="veth",
                         management_ipv4="198.18.0.2", pfc=pfc, ets=ets, apps=apps)
    n = decode_frame(frame)
    assert (n.chassis_id, n.port_id, n.port_id_subtype, n.ttl) == (
        "02:00:00:00:00:03", "02:00:00:00:00:02", "mac", 90)
    assert (n.pfc, n.ets, n.apps, n.management_address) == (pfc, ets, apps, "198.18.0.2")
    assert roce_priority(apps) == 5  # RoCE v1 by EtherType when no v2 entry


@pytest.mark.parametrize(("frame", "message"), [
    (HEAD + MANDATORY[:-1], "TLV type 3 of 2 bytes at byte 16 runs 1 bytes past the frame"),
    (HEAD + MANDATORY[:-3], "TLV header cut short at byte 16"),
    (HEAD + MANDATORY[:9] + bytes.fromhex("04ff05") + b"eth0" + MANDATORY[-4:],
     "TLV type 2 of 255 bytes at byte 9 runs"),
    (HEAD + MANDATORY + b"\x0a", "TLV header cut short at byte 20"),
    (HEAD + MANDATORY[9:] + MANDATORY[:9] + END, "first TLVs are types [2, 3, 1]"),
    (HEAD + MANDATORY[:-4] + bytes.fromhex("0603" "000078") + END, "TTL TLV of 3 bytes"),
    (HEAD + MANDATORY + bytes.fromhex("fe05" "0080c2" "0b" "88") + END,
     "PFC Configuration TLV of 5 bytes, not 6"),
    (HEAD + MANDATORY + bytes.fromhex("fe09" "0080c2" "09" "0000000000") + END,
     "ETS Configuration TLV of 9 bytes, not 25"),
    (HEAD + MANDATORY + bytes.fromhex("fe07" "0080c2" "0c" "006312") + END,
     "Application Priority TLV of 7 bytes: not 5 + 3n"),
    (HEAD + MANDATORY + MANDATORY[9:16] + END, "a second TLV of type 2"),
    (HEAD + MANDATORY + bytes.fromhex("1003" "ff0102") + END, "Management Address TLV"),
    (HEAD[:12] + b"\x08\x00" + MANDATORY + END, "EtherType 0x0800, not LLDP"),
    (HEAD + MANDATORY[:4], "shorter than the"),
    (HEAD + bytes.fromhex("0201" "04") + MANDATORY[9:] + END, "without an id"),
])
def test_hostile_frames_are_refused_with_one_line(frame: bytes, message: str) -> None:
    with pytest.raises(LldpError) as info:
        decode_frame(frame)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_text_is_bounded_and_printable() -> None:
    name = ("\x1b[2J" + "x" * 600)[:511]
    frame = HEAD + MANDATORY + tlv(5, name.encode()) + END
    n = decode_frame(frame)
    assert n.system_name is not None and len(n.system_name) == MAX_TEXT
    assert n.system_name.startswith("?[2J")
    port = HEAD + MANDATORY[:9] + tlv(2, b"\x07" + bytes(range(200))) + MANDATORY[-4:] + END
    assert decode_frame(port).port_id == bytes(range(64)).hex()  # binary: hex, cut


def test_vlan_tagged_frame_and_ttl_zero() -> None:
    tagged = HEAD[:12] + bytes.fromhex("81000003") + b"\x88\xcc" + MANDATORY[:-2] + b"\0\0"
    n = decode_frame(tagged)
    assert n.ttl == 0 and n.port_id == "eth0"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=1600))
def test_any_bytes_decode_or_raise_lldp_error(data: bytes) -> None:
    for frame in (data, HEAD + data, HEAD + MANDATORY + data):
        try:
            decode_frame(frame)
        except LldpError:
            pass


_TLVS = st.lists(st.tuples(st.integers(0, 127), st.binary(max_size=40)), max_size=12)


@settings(max_examples=400, deadline=None)
@given(_TLVS, st.sampled_from([b"\x00\x80\xc2\x09", b"\x00\x80\xc2\x0a", b"\x00\x80\xc2\x0b",
                               b"\x00\x80\xc2\x0c"]), st.binary(max_size=30))
def test_any_tlv_sequence_decodes_or_raises_lldp_error(
        items: list[tuple[int, bytes]], oui: bytes, dcbx: bytes) -> None:
    body = b"".join(struct.pack("!H", k << 9 | len(v)) + v for k, v in items)
    frame = HEAD + MANDATORY + body + tlv(127, oui + dcbx)
    try:
        n = decode_frame(frame)
    except LldpError:
        return
    assert n.ttl == 120 and n.chassis_id == "02:00:00:00:00:01"


def test_a_frame_lldpd_sent() -> None:
    """tests/fixtures/lldp/README.md: Debian's lldpd 1.0.16 with its defaults."""
    raw = bytes.fromhex((FIXTURES / "lldp" / "lldpd-1.0.16-veth.hex").read_text().strip())
    n = decode_frame(raw, 5.0)
    assert (n.chassis_id, n.chassis_id_subtype, n.port_id, n.port_id_subtype) == (
        "d6:8a:d9:c2:16:e1", "mac", "d6:8a:d9:c2:16:e1", "mac")
    assert (n.ttl, n.system_name, n.port_description, n.management_address) == (
        120, "vm", "nwbf6150c", "198.18.7.2")
    assert (n.pfc, n.ets, n.apps) == (None, None, None)
