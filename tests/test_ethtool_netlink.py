"""nicwatch.sources.ethtool_netlink against the running kernel (veth pairs in network
namespaces, the host's virtio_net eth0), plus decoding of hand-built replies for what only
real NICs (mlx5, bnxt) fill in: FEC lane arrays, STATS_GET counters, pause counters."""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import struct
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from netns import PYTHON, ns_python, ns_sh, sh
from pyroute2.netlink import NLA_F_NESTED, NLM_F_DUMP, NLM_F_REQUEST
from pyroute2.netlink.generic import GenericNetlinkSocket
from pyroute2.netlink.generic.ethtool import ethtool_strset_msg

from nicwatch.model import Channels, FecParams, PauseParams, Rings
from nicwatch.sources import ethtool_netlink as en

# --- reading through a subprocess (inside a namespace, or in the root one) ------------------

# Prints one read_all() as JSON, plus (netlink type, flags, genl cmd) of every request the
# reader sent, counted by wrapping the send() of pyroute2's socket core.
READ_ALL = textwrap.dedent("""
    import dataclasses, json, struct
    from nicwatch.sources.ethtool_netlink import EthtoolNetlink

    def plain(info):
        out = {}
        for f in dataclasses.fields(info):
            value = getattr(info, f.name)
            if f.name == "std_stats":
                out[f.name] = dict(value)
            else:
                out[f.name] = None if value is None else dataclasses.asdict(value)
        return out

    sent = []
    with EthtoolNetlink() as reader:
        core = reader._sock.asyncore
        real_send = core.send
        def send(data, flags=0):
            sent.append(struct.unpack_from("=HH", data, 4) + (data[16],))
            return real_send(data, flags)
        core.send = send
        result = reader.read_all(IFINDEXES)
    print(json.dumps({
        "infos": {str(i): plain(info) for i, info in result.infos.items()},
        "errors": dict(result.errors),
        "requests": sent,
    }))
""")


@dataclasses.dataclass
class Snapshot:
    infos: dict[int, dict]
    errors: dict[str, str]
    requests: list[tuple[int, int, int]]


def _snapshot(out: dict) -> Snapshot:
    infos = {int(ifindex): info for ifindex, info in out["infos"].items()}
    return Snapshot(infos, out["errors"], [tuple(r) for r in out["requests"]])


def read_in_ns(ns: str, ifindexes: list[int] | None = None) -> Snapshot:
    return _snapshot(ns_python(ns, READ_ALL.replace("IFINDEXES", repr(ifindexes))))


def read_in_root_ns(ifindexes: list[int] | None = None) -> Snapshot:
    out = sh(PYTHON, "-c", READ_ALL.replace("IFINDEXES", repr(ifindexes))).stdout
    return _snapshot(json.loads(out))


def ns_ifindex(ns: str, dev: str) -> int:
    (link,) = json.loads(ns_sh(ns, "ip", "-j", "link", "show", "dev", dev).stdout)
    return link["ifindex"]


def ethtool_settings(text: str) -> tuple[dict, dict]:
    """``ethtool -g`` / ``ethtool -l`` output -> (pre-set maximums, current settings) as
    ``{"RX": 256, "RX Mini": None, ...}``; ``n/a`` is None."""
    maxima, _, current = text.partition("Current hardware settings:")

    def parse(block: str) -> dict:
        values = {}
        for name, value in re.findall(r"^([A-Za-z ]+):\s+(\S+)$", block, re.M):
            values[name] = None if value == "n/a" else int(value) if value.isdigit() else value
        return values

    return parse(maxima), parse(current)


def channels_from_ethtool(text: str) -> dict:
    maxima, current = ethtool_settings(text)
    return {
        "rx": current["RX"], "tx": current["TX"],
        "other": current["Other"], "combined": current["Combined"],
        "rx_max": maxima["RX"], "tx_max": maxima["TX"],
        "other_max": maxima["Other"], "combined_max": maxima["Combined"],
    }


# --- veth in a namespace --------------------------------------------------------------------


@pytest.mark.netns
def test_veth_channels_follow_ethtool_and_unsupported_parts_are_absent(veth_pair_mq):
    ns, dev = veth_pair_mq.ns_a, veth_pair_mq.a
    ifindex = ns_ifindex(ns, dev)

    snap = read_in_ns(ns)
    info = snap.infos[ifindex]
    channels = channels_from_ethtool(ns_sh(ns, "ethtool", "-l", dev).stdout)
    assert info["channels"] == channels
    assert (channels["rx_max"], channels["tx_max"]) == (8, 8)  # queues given at creation
    # veth has no rings, PAUSE or FEC (the dumps skip it) and fills no standard stats.
    assert info["rings"] is None
    assert info["pause"] is None
    assert info["fec"] is None
    assert info["std_stats"] == {}
    assert snap.errors == {}

    ns_sh(ns, "ethtool", "-L", dev, "rx", "4", "tx", "4")
    info = read_in_ns(ns).infos[ifindex]
    assert info["channels"] == channels_from_ethtool(ns_sh(ns, "ethtool", "-l", dev).stdout)
    assert info["channels"]["rx"] == info["channels"]["tx"] == 4
    assert info["channels"]["rx_max"] == 8


@pytest.fixture
def veth_namespace():
    """One namespace holding 4 veth pairs (8 interfaces); pair n has n+1 rx/tx queues.
    Yields (namespace, {device: (ifindex, queues)})."""
    ns = f"nwe-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", ns)
    try:
        for n in range(4):
            queues = str(n + 1)
            sh("ip", "-n", ns, "link", "add", f"ve{n}a", "numtxqueues", queues,
               "numrxqueues", queues, "type", "veth", "peer", "name", f"ve{n}b",
               "numtxqueues", queues, "numrxqueues", queues)
        devices = {
            f"ve{n}{end}": (ns_ifindex(ns, f"ve{n}{end}"), n + 1)
            for n in range(4) for end in "ab"
        }
        yield ns, devices
    finally:
        sh("ip", "netns", "del", ns, check=False)


@pytest.mark.netns
def test_one_dump_per_message_type_covers_all_interfaces(veth_namespace):
    ns, devices = veth_namespace
    snap = read_in_ns(ns)

    for dev, (ifindex, queues) in devices.items():
        channels = snap.infos[ifindex]["channels"]
        assert (channels["rx_max"], channels["tx_max"]) == (queues, queues), dev
    # Five requests for eight interfaces: one DUMP per message type.
    assert [cmd for _, _, cmd in snap.requests] == [
        en.ETHTOOL_MSG_RINGS_GET,
        en.ETHTOOL_MSG_CHANNELS_GET,
        en.ETHTOOL_MSG_PAUSE_GET,
        en.ETHTOOL_MSG_FEC_GET,
        en.ETHTOOL_MSG_STATS_GET,
    ]
    assert all(flags & NLM_F_DUMP == NLM_F_DUMP for _, flags, _ in snap.requests)
    assert len({msg_type for msg_type, _, _ in snap.requests}) == 1  # the family id


@pytest.mark.netns
def test_filter_by_ifindexes_and_unknown_ifindex_is_absent(veth_namespace):
    ns, devices = veth_namespace
    ifindex, queues = devices["ve2a"]
    unknown = max(i for i, _ in devices.values()) + 1000

    snap = read_in_ns(ns, [ifindex, unknown])
    assert list(snap.infos) == [ifindex]
    assert snap.infos[ifindex]["channels"]["rx_max"] == queues
    assert read_in_ns(ns, []).infos == {}


# --- the host's eth0 (virtio_net) in the root namespace ------------------------------------


def eth0_ifindex() -> int:
    return int(Path("/sys/class/net/eth0/ifindex").read_text())


def test_eth0_rings_and_channels_match_ethtool():
    ifindex = eth0_ifindex()
    snap = read_in_root_ns([ifindex])
    info = snap.infos[ifindex]

    maxima, current = ethtool_settings(sh("ethtool", "-g", "eth0").stdout)
    assert info["rings"] == {
        "rx": current["RX"], "tx": current["TX"], "rx_max": maxima["RX"], "tx_max": maxima["TX"],
    }
    assert info["channels"] == channels_from_ethtool(sh("ethtool", "-l", "eth0").stdout)
    # PAUSE is reported exactly when `ethtool -a` can read it (virtio_net: EOPNOTSUPP).
    pause_readable = sh("ethtool", "-a", "eth0", check=False).returncode == 0
    assert (info["pause"] is not None) == pause_readable
    if info["pause"] is None:
        assert not any(key.startswith("pause.") for key in info["std_stats"])
    assert snap.errors == {}


def test_reader_is_reused_across_polls():
    ifindex = eth0_ifindex()
    with en.EthtoolNetlink() as reader:
        first = reader.read_all([ifindex])
        second = reader.read_all([ifindex])
    assert first.infos[ifindex].rings == second.infos[ifindex].rings is not None
    assert first.infos[ifindex].channels == second.infos[ifindex].channels is not None


def test_missing_family_raises_unavailable(monkeypatch):
    monkeypatch.setattr(en, "ETHTOOL_GENL_NAME", "nicwatch-no-such-family")
    with pytest.raises(en.EthtoolNetlinkUnavailable):
        en.EthtoolNetlink()


def test_failed_message_type_is_reported_and_others_still_read(monkeypatch):
    """A kernel without STATS_GET answers EOPNOTSUPP for the unknown command; simulated by
    sending a command number no kernel has."""
    requests = tuple(
        dataclasses.replace(r, cmd=250) if r.name == "STATS_GET" else r for r in en.REQUESTS
    )
    monkeypatch.setattr(en, "REQUESTS", requests)
    ifindex = eth0_ifindex()
    with en.EthtoolNetlink() as reader:
        result = reader.read_all([ifindex])
    assert result.errors == {"STATS_GET": "EOPNOTSUPP"}
    assert result.infos[ifindex].rings is not None


def test_stat_names_match_the_kernel_string_sets():
    """The eth-* names are the kernel's own (string sets ETH_SS_STATS_ETH_PHY..RMON = 17..20
    in uapi ethtool.h); the rmon keys are the RFC 2819 names in snake case."""
    sock = GenericNetlinkSocket()
    try:
        sock.bind("ethtool", ethtool_strset_msg)
        msg = ethtool_strset_msg()
        msg["cmd"] = 1  # ETHTOOL_MSG_STRSET_GET
        msg["version"] = 1
        wanted = [("ETHTOOL_A_STRINGSETS_STRINGSET", {"attrs": [("ETHTOOL_A_STRINGSET_ID", i)]})
                  for i in (17, 18, 19, 20)]
        msg["attrs"] = [
            ("ETHTOOL_A_STRSET_HEADER", {"attrs": []}),
            ("ETHTOOL_A_STRSET_STRINGSETS", {"attrs": wanted}),
        ]
        (reply,) = sock.nlm_request(msg, msg_type=sock.prid, msg_flags=NLM_F_REQUEST)
    finally:
        sock.close()
    kernel = {}
    sets = reply.get_attr("ETHTOOL_A_STRSET_STRINGSETS")
    for string_set in sets.get_attrs("ETHTOOL_A_STRINGSETS_STRINGSET"):
        strings = string_set.get_attr("ETHTOOL_A_STRINGSET_STRINGS")
        kernel[string_set.get_attr("ETHTOOL_A_STRINGSET_ID")] = tuple(
            s.get_attr("ETHTOOL_A_STRING_VALUE")
            for s in strings.get_attrs("ETHTOOL_A_STRINGS_STRING")
        )

    assert kernel[17] == en.STAT_NAMES["eth-phy"]
    assert kernel[18] == en.STAT_NAMES["eth-mac"]
    assert kernel[19] == en.STAT_NAMES["eth-ctrl"]
    rmon = tuple(
        "etherStats" + "".join(word.capitalize() for word in name.split("_"))
        for name in en.STAT_NAMES["rmon"]
    )
    assert kernel[20] == rmon


# --- decoding hand-built replies (layouts from uapi ethtool_netlink.h) ----------------------


def nlattr(attr_type: int, payload: bytes = b"") -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, attr_type) + payload + b"\0" * (-length % 4)


def nest(attr_type: int, *children: bytes) -> bytes:
    return nlattr(attr_type | NLA_F_NESTED, b"".join(children))


def u8(attr_type: int, value: int) -> bytes:
    return nlattr(attr_type, struct.pack("=B", value))


def u32(attr_type: int, value: int) -> bytes:
    return nlattr(attr_type, struct.pack("=I", value))


def u64(attr_type: int, value: int) -> bytes:
    return nlattr(attr_type, struct.pack("=Q", value))


def string(attr_type: int, value: str) -> bytes:
    return nlattr(attr_type, value.encode() + b"\0")


def u64_array(attr_type: int, *values: int) -> bytes:
    return nlattr(attr_type, struct.pack(f"={len(values)}Q", *values))


def reply(msg_class, cmd: int, *attrs: bytes):
    """A decoded generic-netlink message: nlmsghdr, genlmsghdr, attributes."""
    body = struct.pack("=BBH", cmd, 1, 0) + b"".join(attrs)
    data = struct.pack("=IHHII", 16 + len(body), 0x15, 0, 1, 0) + body
    msg = msg_class(data)
    msg.decode()
    return msg


def header(attr_type: int, ifindex: int = 7) -> bytes:
    return nest(attr_type, u32(1, ifindex), string(2, "eth9"))


def test_fec_array_decoding():
    assert en.decode_fec_array(b"") == ()
    assert en.decode_fec_array(struct.pack("=3Q", 30, 10, 20)) == (30, 10, 20)
    assert en.fec_array_stats("fec.corrected_blocks", b"") == {}
    assert en.fec_array_stats("fec.corrected_blocks", struct.pack("=Q", 5)) == {
        "fec.corrected_blocks": 5,
    }
    assert en.fec_array_stats("fec.corrected_bits", struct.pack("=3Q", 30, 10, 20)) == {
        "fec.corrected_bits": 30,
        "fec.corrected_bits.lane0": 10,
        "fec.corrected_bits.lane1": 20,
    }


@given(st.lists(st.integers(0, 2**64 - 1), max_size=9))
def test_fec_array_keys_only_for_lanes_present(values):
    stats = en.fec_array_stats("fec.uncorrectable_blocks", struct.pack(f"={len(values)}Q", *values))
    expected = {}
    if values:
        expected["fec.uncorrectable_blocks"] = values[0]
        for lane, value in enumerate(values[1:]):
            expected[f"fec.uncorrectable_blocks.lane{lane}"] = value
    assert stats == expected


@given(st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_group_stat_with_4_byte_value(index, value):
    assert en.decode_group_stat(u32(index, value)) == (index, value)


@given(st.integers(0, 40), st.integers(0, 2**64 - 1))
def test_group_stat_with_8_byte_value(index, value):
    assert en.decode_group_stat(u64(index, value)) == (index, value)


def test_fec_reply():
    bits = nest(
        3,  # ETHTOOL_A_BITSET_BITS
        nest(1, u32(1, 50), string(2, "RS"), nlattr(3)),  # BIT: INDEX, NAME, VALUE
        nest(1, u32(1, 49), string(2, "None"), nlattr(3)),
        nest(1, u32(1, 51), string(2, "BASER")),  # in the mask but not set
        nest(1, u32(1, 99), string(2, "Future"), nlattr(3)),
    )
    msg = reply(
        en.FecMsg, en.ETHTOOL_MSG_FEC_GET,
        header(1),
        nest(2, u32(2, 128), bits),  # MODES: SIZE, BITS
        u8(3, 0),  # AUTO
        u32(4, 50),  # ACTIVE = ETHTOOL_LINK_MODE_FEC_RS_BIT
        nest(
            5,  # STATS
            nlattr(1),  # PAD
            u64_array(2, 30, 10, 20),  # CORRECTED: total, lane0, lane1
            u64_array(3),  # UNCORR: not reported
            u64_array(4, 5),  # CORR_BITS: total only
        ),
    )
    assert en.reply_ifindex(msg, "ETHTOOL_A_FEC_HEADER") == 7
    assert en.fec_part(msg) == {
        "fec": FecParams(configured=("rs", "off", "future"), active="rs", auto=False),
        "std_stats": {
            "fec.corrected_blocks": 30,
            "fec.corrected_blocks.lane0": 10,
            "fec.corrected_blocks.lane1": 20,
            "fec.corrected_bits": 5,
        },
    }


def test_fec_reply_without_active_mode_or_stats():
    msg = reply(en.FecMsg, en.ETHTOOL_MSG_FEC_GET, header(1), nest(2, u32(2, 128)), u8(3, 1))
    assert en.fec_part(msg) == {
        "fec": FecParams(configured=(), active=None, auto=True),
        "std_stats": {},
    }


def test_stats_reply():
    msg = reply(
        en.StatsMsg, en.ETHTOOL_MSG_STATS_GET,
        header(2),
        u32(5, 0),  # ETHTOOL_A_STATS_SRC (6.3+), not read
        nest(4, u32(2, 0), u32(3, 17)),  # eth-phy: driver filled nothing
        nest(
            4, u32(2, 1), u32(3, 18),  # eth-mac
            nlattr(1),  # GRP_PAD, emitted for alignment
            nest(4, u64(4, 2**40 + 3)),  # FrameCheckSequenceErrors, 8 bytes
            nest(4, u32(0, 123)),  # FramesTransmittedOK, 4-byte NLA_UINT
            nest(4, u64(40, 9)),  # an index newer than our table
        ),
        nest(
            4, u32(2, 3), u32(3, 20),  # rmon
            nest(4, u64(3, 77)),  # jabbers
            nest(5, u32(7, 0), u32(8, 64), u64(9, 1)),  # HIST_RX bucket, not read
        ),
        nest(4, u32(2, 4), u32(3, 21), nest(4, u64(0, 5))),  # phydev: not requested
    )
    assert en.reply_ifindex(msg, "ETHTOOL_A_STATS_HEADER") == 7
    assert en.stats_part(msg) == {
        "std_stats": {
            "eth-mac.FrameCheckSequenceErrors": 2**40 + 3,
            "eth-mac.FramesTransmittedOK": 123,
            "rmon.jabbers": 77,
        },
    }


def test_pause_reply_empty_stats_nest_is_not_support():
    msg = reply(
        en.PauseMsg, en.ETHTOOL_MSG_PAUSE_GET,
        header(1), u8(2, 1), u8(3, 1), u8(4, 0), nest(5),
    )
    assert en.pause_part(msg) == {
        "pause": PauseParams(autoneg=True, rx=True, tx=False),
        "std_stats": {},
    }


def test_pause_reply_counters_present_only():
    msg = reply(
        en.PauseMsg, en.ETHTOOL_MSG_PAUSE_GET,
        header(1), u8(2, 0), u8(3, 1), u8(4, 1),
        nest(5, nlattr(1), u64(3, 42)),  # PAD, RX_FRAMES; no TX_FRAMES
    )
    assert en.pause_part(msg)["std_stats"] == {"pause.rx_frames": 42}


def test_rings_reply_omitted_rings_are_none():
    msg = reply(
        en.RingsMsg, en.ETHTOOL_MSG_RINGS_GET,
        header(1), u32(2, 4096), u32(6, 1024),  # RX_MAX, RX; TX omitted
        u32(10, 2048), u8(11, 0),  # RX_BUF_LEN, TCP_DATA_SPLIT: not read
    )
    assert en.rings_part(msg) == {
        "rings": Rings(rx=1024, tx=None, rx_max=4096, tx_max=None),
    }
    assert en.rings_part(reply(en.RingsMsg, en.ETHTOOL_MSG_RINGS_GET, header(1))) == {
        "rings": None,
    }


def test_channels_reply():
    msg = reply(
        en.ChannelsMsg, en.ETHTOOL_MSG_CHANNELS_GET,
        header(1), u32(5, 63), u32(9, 8), u32(4, 1), u32(8, 1),
    )
    assert en.channels_part(msg) == {
        "channels": Channels(rx=None, tx=None, other=1, combined=8, rx_max=None, tx_max=None,
                             other_max=1, combined_max=63),
    }
