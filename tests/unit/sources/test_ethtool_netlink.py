"""nicwatch.sources.ethtool_netlink against the running kernel (veth pairs in network
namespaces, the host's virtio_net eth0), plus decoding of hand-built replies for what only
real NICs (mlx5, bnxt) fill in: FEC lane arrays, STATS_GET counters, pause counters, and the
netlink framing (multi-part dumps, errors, stale messages, malformed bytes). The lab
(tests/lab/test_lab_nsim_ethtool.py, test_lab_e1000e.py) has a real driver answer the ring,
channel, PAUSE and FEC requests, with pause and FEC statistics, under QEMU; the hand-built
replies remain for per-lane FEC and the mlx5/bnxt statistics."""

from __future__ import annotations

import dataclasses
import errno
import json
import re
import struct
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyroute2.netlink.generic import GenericNetlinkSocket
from pyroute2.netlink.generic.ethtool import ethtool_strset_msg

from nicwatch.model import Channels, FecParams, PauseParams, Rings
from nicwatch.sources import ethtool_netlink as en

from fixture_ethtool import attrs, header, nest, nlattr, string, u8, u32, u64, u64_array
from netns import PYTHON, namespace_with, ns_python, ns_sh, sh

# netlink.h values, spelled out here rather than taken from the module under test.
NLM_F_REQUEST = 0x1
NLM_F_MULTI = 0x2
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLA_F_NESTED = 0x8000

# --- reading through a subprocess (inside a namespace, or in the root one) ------------------

# Prints one read_all() as JSON, plus (netlink type, flags, genl cmd, sizes of the datagrams
# received for it) of every request the reader sent, recorded by a proxy around its socket.
READ_ALL = textwrap.dedent("""
    import dataclasses, json, socket, struct
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

    class Recording:
        def __init__(self, sock):
            self.sock = sock
        def send(self, data, *args):
            sent.append([*struct.unpack_from("=HH", data, 4), data[16], []])
            return self.sock.send(data, *args)
        def recv_into(self, buf, nbytes=0, flags=0):
            size = self.sock.recv_into(buf, nbytes, flags)
            if not flags & socket.MSG_PEEK:
                sent[-1][3].append(size)
            return size
        def __getattr__(self, name):
            return getattr(self.sock, name)

    with EthtoolNetlink() as reader:
        reader._sock = Recording(reader._sock)
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
    requests: list[tuple[int, int, int]]  # (netlink type, flags, genl cmd)
    datagrams: list[list[int]]  # sizes of the datagrams received, per request


def _snapshot(out: dict) -> Snapshot:
    infos = {int(ifindex): info for ifindex, info in out["infos"].items()}
    return Snapshot(infos, out["errors"], [tuple(r[:3]) for r in out["requests"]],
                    [r[3] for r in out["requests"]])


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
        for name, value in re.findall(r"^([A-Za-z ]+):\s+(\S+)$", block, re.MULTILINE):
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


def veth_namespace_with(pairs: int):
    """A namespace holding ``pairs`` veth pairs ve<n>a/ve<n>b (no addresses, nothing sent);
    pair n has n % 4 + 1 rx/tx queues. Yields (namespace, {device: (ifindex, queues)})."""
    batch = "".join(
        f"link add ve{n}a numtxqueues {n % 4 + 1} numrxqueues {n % 4 + 1} type veth "
        f"peer name ve{n}b numtxqueues {n % 4 + 1} numrxqueues {n % 4 + 1}\n"
        for n in range(pairs)
    )
    with namespace_with("nwe", batch) as ns:
        links = json.loads(ns_sh(ns, "ip", "-j", "link", "show").stdout)
        ifindexes = {link["ifname"]: link["ifindex"] for link in links}
        yield ns, {f"ve{n}{end}": (ifindexes[f"ve{n}{end}"], n % 4 + 1)
                   for n in range(pairs) for end in "ab"}


@pytest.fixture
def veth_namespace():
    """4 veth pairs (8 interfaces)."""
    yield from veth_namespace_with(4)


@pytest.fixture
def crowded_namespace():
    """150 veth pairs: 300 interfaces, more than one STATS_GET dump datagram holds."""
    yield from veth_namespace_with(150)


@pytest.mark.netns
def test_one_dump_per_message_type_covers_all_interfaces(veth_namespace):
    ns, devices = veth_namespace
    snap = read_in_ns(ns)

    for dev, (ifindex, queues) in devices.items():
        channels = snap.infos[ifindex]["channels"]
        assert (channels["rx_max"], channels["tx_max"]) == (queues, queues), dev
    # Seven requests for eight interfaces: one DUMP per message type.
    assert [cmd for _, _, cmd in snap.requests] == [
        en.ETHTOOL_MSG_RINGS_GET,
        en.ETHTOOL_MSG_CHANNELS_GET,
        en.ETHTOOL_MSG_PAUSE_GET,
        en.ETHTOOL_MSG_FEC_GET,
        en.ETHTOOL_MSG_STATS_GET,
        en.ETHTOOL_MSG_LINKSTATE_GET,
        en.ETHTOOL_MSG_LINKMODES_GET,
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


@pytest.mark.netns
def test_dump_spanning_several_datagrams_is_read_to_its_end(crowded_namespace):
    ns, devices = crowded_namespace
    snap = read_in_ns(ns)

    assert snap.errors == {}
    for dev, (ifindex, queues) in devices.items():
        assert snap.infos[ifindex]["channels"]["rx_max"] == queues, dev
    stats = [cmd for _, _, cmd in snap.requests].index(en.ETHTOOL_MSG_STATS_GET)
    stats_datagrams = snap.datagrams[stats]
    assert len(stats_datagrams) >= 2, stats_datagrams
    # The next poll of the same socket starts a fresh dump: nothing was left behind.
    ifindex, queues = devices["ve149b"]
    assert read_in_ns(ns, [ifindex]).infos[ifindex]["channels"]["tx_max"] == queues


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
    monkeypatch.setattr(en.EthtoolNetlink, "family_name", "nicwatch-no-such-family")
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


def test_reply_not_matching_its_layout_is_a_parse_error_and_others_still_read(monkeypatch):
    """Real CHANNELS_GET replies decoded as FEC replies: attribute 5 (COMBINED_MAX, a u32)
    is read as the FEC STATS nest, whose 4 bytes cannot hold an attribute."""
    requests = tuple(
        dataclasses.replace(r, to_part=en.fec_part) if r.name == "CHANNELS_GET" else r
        for r in en.REQUESTS
    )
    monkeypatch.setattr(en, "REQUESTS", requests)
    ifindex = eth0_ifindex()
    with en.EthtoolNetlink() as reader:
        result = reader.read_all([ifindex])
    assert result.errors == {"CHANNELS_GET": "parse"}
    assert result.infos[ifindex].channels is None
    assert result.infos[ifindex].rings is not None


def test_datagram_larger_than_the_receive_buffer_grows_it():
    ifindex = eth0_ifindex()
    with en.EthtoolNetlink() as reader:
        expected = reader.read_all([ifindex])
        reader._buf = bytearray(16)
        assert reader.read_all([ifindex]) == expected
        assert len(reader._buf) > 16


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


# --- decoding hand-built replies (layouts from uapi netlink.h, ethtool_netlink.h) ----------


def netlink_message(msg_type: int, payload: bytes, seq: int,
                    flags: int = NLM_F_MULTI) -> bytes:
    length = 16 + len(payload)
    return (struct.pack("=IHHII", length, msg_type, flags, seq, 4242) + payload
            + b"\0" * (-length % 4))


def genl_reply(*attributes: bytes, seq: int = 9, flags: int = NLM_F_MULTI) -> bytes:
    """nlmsghdr (type: an ethtool family id) + genlmsghdr (cmd, version 1) + attributes."""
    return netlink_message(0x15, struct.pack("=BBH", 0x21, 1, 0) + attrs(*attributes), seq,
                           flags)


def done(seq: int = 9, code: int = 0) -> bytes:
    return netlink_message(NLMSG_DONE, struct.pack("=i", code), seq)


def error(seq: int, code: int) -> bytes:
    """struct nlmsgerr: the negative errno and the header of the request it answers."""
    request = struct.pack("=IHHII", 36, 0x15, 0x301, seq, 0)
    return netlink_message(NLMSG_ERROR, struct.pack("=i", code) + request, seq, flags=0)


# --- framing -------------------------------------------------------------------------------


def test_dump_split_over_datagrams_ends_at_done():
    first = genl_reply(header(2, 1), u32(5, 0)) + genl_reply(header(2, 2))
    second = genl_reply(header(2, 3)) + done()

    replies, finished = en.split_replies(first, seq=9)
    assert replies == [attrs(header(2, 1), u32(5, 0)), attrs(header(2, 2))]
    assert not finished
    replies, finished = en.split_replies(second, seq=9)
    assert replies == [attrs(header(2, 3))]
    assert finished


def test_reply_without_multi_flag_ends_the_exchange():
    replies, finished = en.split_replies(genl_reply(u32(1, 0x15), seq=3, flags=0), seq=3)
    assert replies == [attrs(u32(1, 0x15))]
    assert finished


def test_messages_of_an_abandoned_exchange_are_skipped():
    """What an earlier dump left on the socket, its DONE included, is not this dump's."""
    stale = genl_reply(header(2, 1), seq=8) + done(seq=8)
    replies, finished = en.split_replies(stale + genl_reply(header(2, 4)), seq=9)
    assert replies == [attrs(header(2, 4))]
    assert not finished


def test_error_reply_raises_kernel_error_with_errno():
    with pytest.raises(en.KernelError) as caught:
        en.split_replies(error(seq=9, code=-errno.EOPNOTSUPP), seq=9)
    assert caught.value.errno == errno.EOPNOTSUPP
    assert str(caught.value) == "EOPNOTSUPP"


def test_acknowledgement_ends_the_exchange_without_error():
    assert en.split_replies(error(seq=9, code=0), seq=9) == ([], True)


def test_dump_failing_partway_reports_the_error_of_its_done():
    datagram = genl_reply(header(2, 1)) + done(code=-errno.EMSGSIZE)
    with pytest.raises(en.KernelError) as caught:
        en.split_replies(datagram, seq=9)
    assert caught.value.errno == errno.EMSGSIZE


@pytest.mark.parametrize("datagram", [
    genl_reply(header(2, 1))[:-4],  # message longer than the datagram
    genl_reply(header(2, 1)) + b"\0" * 8,  # trailing bytes shorter than a header
    struct.pack("=IHHII", 8, 0x15, 2, 9, 0),  # length shorter than the header itself
    netlink_message(0x15, b"\x21\x01", seq=9),  # no room for the genlmsghdr
])
def test_malformed_framing_is_a_parse_error(datagram):
    with pytest.raises(en.ParseError):
        en.split_replies(datagram, seq=9)


# --- attributes ----------------------------------------------------------------------------

attribute_types = st.integers(0, 0x3FFF)


@given(st.lists(st.tuples(attribute_types, st.booleans(), st.binary(max_size=40)),
                max_size=12))
def test_attributes_round_trip(entries):
    data = b"".join(nlattr(t | (NLA_F_NESTED if nested else 0), payload)
                    for t, nested, payload in entries)
    walked = [(t, data[s:e]) for t, s, e in en.attributes(data, 0, len(data))]
    assert walked == [(t, payload) for t, _, payload in entries]


@pytest.mark.parametrize("data", [
    struct.pack("=HH", 12, 1) + b"\0" * 4,  # runs past the end
    struct.pack("=HH", 2, 1),  # shorter than its own header
    u32(1, 5) + b"\0\0",  # trailing bytes
])
def test_malformed_attributes_are_a_parse_error(data):
    with pytest.raises(en.ParseError):
        list(en.attributes(data, 0, len(data)))


def attribute_trees(max_leaves: int = 12):
    """Attribute lists with small type numbers, so that they collide with the ones the
    decoders read, and payloads of any length."""
    leaves = st.builds(nlattr, st.integers(0, 6), st.binary(max_size=20))
    return st.recursive(
        leaves,
        lambda children: st.builds(lambda t, kids: nest(t, *kids), st.integers(0, 6),
                                   st.lists(children, max_size=4)),
        max_leaves=max_leaves,
    ).flatmap(lambda first: st.lists(st.just(first) | leaves, max_size=5))


@given(attribute_trees())
def test_any_reply_decodes_or_is_a_parse_error(tree):
    """Whatever the kernel (or a bug) sends, a decoder returns a part or raises ParseError,
    which read_all reports as "parse" for that message type; nothing else escapes."""
    data = attrs(*tree)
    for request in en.REQUESTS:
        try:
            en.reply_ifindex(data, request.header)
            part = request.to_part(data)
        except en.ParseError:
            continue
        assert isinstance(part, dict)


# --- decoding a dump -----------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    attrs(header(1, 5), u32(2, 8)),  # as the kernel writes it
    attrs(u32(2, 8), header(1, 5)),  # header not first
    attrs(nest(1, string(2, "eth9"), u32(1, 5))),  # DEV_INDEX not first in the header
    attrs(nest(1, u32(1, 5))),  # header of DEV_INDEX only
])
def test_reply_ifindex_in_any_attribute_order(reply):
    assert en.reply_ifindex(reply, 1) == 5


@pytest.mark.parametrize("reply", [
    attrs(u32(2, 8)),  # no header
    attrs(nest(1, string(2, "eth9"))),  # header without DEV_INDEX
    attrs(header(2, 5)),  # the header type of another message
])
def test_reply_without_a_device_index_has_no_ifindex(reply):
    assert en.reply_ifindex(reply, 1) is None


def test_header_cut_short_is_a_parse_error_not_a_device():
    reply = attrs(nest(1, u32(1, 5), string(2, "eth9")))[:12]  # nest claims 24 bytes
    with pytest.raises(en.ParseError):
        en.reply_ifindex(reply, 1)


def test_only_wanted_devices_are_decoded():
    """An unwanted device's message is dropped after its header: the rest of it, here an
    attribute with a 3-byte integer, is never decoded."""
    channels = next(r for r in en.REQUESTS if r.name == "CHANNELS_GET")
    good = attrs(header(1, 5), u32(2, 8), u32(6, 4))
    bad = attrs(header(1, 6), nlattr(2, b"\1\2\3"))
    no_header = attrs(u32(2, 8))

    parts = en.decode_dump(channels, [good, bad, no_header], frozenset({5}))
    assert parts == [(5, {"channels": Channels(rx=4, tx=None, other=None, combined=None,
                                               rx_max=8, tx_max=None, other_max=None,
                                               combined_max=None)})]
    assert en.decode_dump(channels, [good, bad], frozenset()) == []
    with pytest.raises(en.ParseError):
        en.decode_dump(channels, [good, bad], None)  # None: every device


def test_stats_request_asks_for_all_four_groups_in_one_dump():
    stats = next(r for r in en.REQUESTS if r.name == "STATS_GET")
    message = stats.message(family=0x15, seq=77)
    length, msg_type, flags, seq, _ = struct.unpack_from("=IHHII", message)
    assert (length, msg_type, flags & NLM_F_DUMP, seq) == (len(message), 0x15, NLM_F_DUMP, 77)
    assert message[16:18] == bytes([en.ETHTOOL_MSG_STATS_GET, 1])  # cmd, version
    assert message[20:] == attrs(
        nest(2, u32(3, 0)),  # HEADER: FLAGS 0, no device (a dump)
        nest(3, nlattr(1), u32(2, 4), u32(4, 0b1111)),  # GROUPS: NOMASK, SIZE 4, VALUE
    )


# --- message parts -------------------------------------------------------------------------


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
    with pytest.raises(en.ParseError):
        en.decode_fec_array(b"\0" * 12)


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


def test_group_stat_read_in_place_stays_inside_its_nest():
    data = u64(3, 77) + u64(4, 88)  # two GRP_STAT payloads back to back
    assert en.decode_group_stat(data, 12, 24) == (4, 88)
    with pytest.raises(en.ParseError):
        en.decode_group_stat(data, 0, 8)  # its u64 would run into the next nest
    with pytest.raises(en.ParseError):
        en.decode_group_stat(b"")


def test_fec_reply_with_masked_bitset():
    bits = nest(
        3,  # ETHTOOL_A_BITSET_BITS
        nest(1, u32(1, 50), string(2, "RS"), nlattr(3)),  # BIT: INDEX, NAME, VALUE
        nest(1, u32(1, 49), string(2, "None"), nlattr(3)),
        nest(1, u32(1, 51), string(2, "BASER")),  # in the mask but not set
        nest(1, u32(1, 99), string(2, "Future"), nlattr(3)),
    )
    reply = attrs(
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
    assert en.reply_ifindex(reply, en.ETHTOOL_A_FEC_HEADER) == 7
    assert en.fec_part(reply) == {
        "fec": FecParams(configured=("rs", "off", "future"), active="rs", auto=False),
        "std_stats": {
            "fec.corrected_blocks": 30,
            "fec.corrected_blocks.lane0": 10,
            "fec.corrected_blocks.lane1": 20,
            "fec.corrected_bits": 5,
        },
    }


def test_fec_reply_with_nomask_bitset_as_the_kernel_sends_it():
    """fec_fill_reply() puts the modes without a mask: NOMASK, only the set bits are
    listed, and none carries a VALUE flag."""
    modes = nest(2, nlattr(1), u32(2, 128), nest(  # MODES: NOMASK, SIZE, BITS
        3,
        nest(1, u32(1, 50), string(2, "RS")),
        nest(1, u32(1, 51), string(2, "BASER")),
        nest(1, u32(1, 77))),  # a bit without a name
    )
    reply = attrs(header(1), modes, u8(3, 1), u32(4, 51))
    assert en.fec_part(reply)["fec"] == FecParams(
        configured=("rs", "baser", "link_mode_77"), active="baser", auto=True)


def test_fec_reply_without_active_mode_or_stats():
    reply = attrs(header(1), nest(2, u32(2, 128)), u8(3, 1))
    assert en.fec_part(reply) == {
        "fec": FecParams(configured=(), active=None, auto=True),
        "std_stats": {},
    }


def test_stats_reply():
    reply = attrs(
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
    assert en.reply_ifindex(reply, en.ETHTOOL_A_STATS_HEADER) == 7
    assert en.stats_part(reply) == {
        "std_stats": {
            "eth-mac.FrameCheckSequenceErrors": 2**40 + 3,
            "eth-mac.FramesTransmittedOK": 123,
            "rmon.jabbers": 77,
        },
    }


def test_pause_reply_empty_stats_nest_is_not_support():
    reply = attrs(header(1), u8(2, 1), u8(3, 1), u8(4, 0), nest(5))
    assert en.pause_part(reply) == {
        "pause": PauseParams(autoneg=True, rx=True, tx=False),
        "std_stats": {},
    }


def test_pause_reply_counters_present_only():
    reply = attrs(
        header(1), u8(2, 0), u8(3, 1), u8(4, 1),
        nest(5, nlattr(1), u64(3, 42)),  # PAD, RX_FRAMES; no TX_FRAMES
    )
    assert en.pause_part(reply)["std_stats"] == {"pause.rx_frames": 42}


def test_rings_reply_omitted_rings_are_none():
    reply = attrs(
        header(1), u32(2, 4096), u32(6, 1024),  # RX_MAX, RX; TX omitted
        u32(10, 2048), u8(11, 0),  # RX_BUF_LEN, TCP_DATA_SPLIT: not read
    )
    assert en.rings_part(reply) == {
        "rings": Rings(rx=1024, tx=None, rx_max=4096, tx_max=None),
    }
    assert en.rings_part(attrs(header(1))) == {"rings": None}


def test_channels_reply():
    reply = attrs(header(1), u32(5, 63), u32(9, 8), u32(4, 1), u32(8, 1))
    assert en.channels_part(reply) == {
        "channels": Channels(rx=None, tx=None, other=1, combined=8, rx_max=None, tx_max=None,
                             other_max=1, combined_max=63),
    }


# --- LINKMODES_GET: speed and duplex -------------------------------------------------------

# ETHTOOL_A_LINKMODES_* and ETHTOOL_A_BITSET_* (uapi ethtool_netlink.h), spelled out here.
LM_HEADER, LM_AUTONEG, LM_OURS, LM_PEER, LM_SPEED, LM_DUPLEX, LM_LANES = 1, 2, 3, 4, 5, 6, 9
BITSET_SIZE, BITSET_VALUE, BITSET_MASK = 2, 4, 5
LINK_MODE_BITS = 121  # __ETHTOOL_LINK_MODE_MASK_NBITS of 6.x: four u32 words


def compact_bitset(attr_type: int, value: int, mask: int | None = None) -> bytes:
    words = (LINK_MODE_BITS + 31) // 32
    array = lambda bits: struct.pack(f"={words}I", *((bits >> 32 * i) & 0xFFFFFFFF  # noqa: E731
                                                    for i in range(words)))
    members = [u32(BITSET_SIZE, LINK_MODE_BITS), nlattr(BITSET_VALUE, array(value))]
    if mask is not None:
        members.append(nlattr(BITSET_MASK, array(mask)))
    return nest(attr_type, *members)


def linkmodes_reply(ifindex: int = 7, speed: int | None = 25000, duplex: int | None = 1,
                    peer: bool = True, lanes: int | None = 1) -> bytes:
    """A LINKMODES_GET_REPLY as linkmodes_fill_reply() lays it out: header (DEV_INDEX,
    DEV_NAME), AUTONEG, OURS (advertised in supported), PEER when the partner advertised
    anything, SPEED, DUPLEX, LANES when known."""
    parts = [header(LM_HEADER, ifindex), u8(LM_AUTONEG, 1),
             compact_bitset(LM_OURS, 1 << 31 | 1 << 6, 1 << 31 | 1 << 32 | 1 << 6)]
    if peer:
        parts.append(compact_bitset(LM_PEER, 1 << 31))
    if speed is not None:
        parts.append(u32(LM_SPEED, speed))
    if duplex is not None:
        parts.append(u8(LM_DUPLEX, duplex))
    if lanes is not None:
        parts.append(u32(LM_LANES, lanes))
    return attrs(*parts)


def test_linkmodes_constants_match_the_uapi_enums():
    assert en.ETHTOOL_MSG_LINKMODES_GET == 4
    assert (en.ETHTOOL_A_LINKMODES_HEADER, en.ETHTOOL_A_LINKMODES_SPEED,
            en.ETHTOOL_A_LINKMODES_DUPLEX) == (LM_HEADER, LM_SPEED, LM_DUPLEX)
    assert en.ETHTOOL_FLAG_COMPACT_BITSETS == 1


@pytest.mark.parametrize(("speed", "duplex", "expected"), [
    (25000, 1, (25000, "full")),
    (100, 0, (100, "half")),
    (0xFFFFFFFF, 0xFF, (None, "unknown")),  # SPEED_UNKNOWN, DUPLEX_UNKNOWN: no link
    (0, 2, (None, "unknown")),  # sysfs prints "unknown" for any duplex but 0 and 1
    (0x7FFFFFFF, 1, (0x7FFFFFFF, "full")),  # the largest speed sysfs prints as positive
    (0x80000000, 1, (None, "full")),  # negative as sysfs's "%d" prints it
])
def test_link_mode_maps_speed_and_duplex_as_sysfs_prints_them(speed, duplex, expected):
    assert en.link_mode_of(linkmodes_reply(speed=speed, duplex=duplex)) == expected


def test_link_mode_attributes_missing_are_none():
    assert en.link_mode_of(linkmodes_reply(speed=None, duplex=None, peer=False,
                                           lanes=None)) == (None, None)
    assert en.link_mode_of(linkmodes_reply(speed=None)) == (None, "full")
    assert en.link_mode_of(linkmodes_reply(duplex=None)) == (25000, None)


@pytest.mark.parametrize("reply", [
    attrs(header(LM_HEADER), nlattr(LM_SPEED, struct.pack("=Q", 1000)), u8(LM_DUPLEX, 1)),
    attrs(header(LM_HEADER), u32(LM_SPEED, 1000), u32(LM_DUPLEX, 1)),
])
def test_link_mode_of_an_unexpected_width_is_a_parse_error(reply):
    with pytest.raises(en.ParseError):
        en.link_mode_of(reply)


def test_link_modes_of_a_dump_by_ifindex():
    datagram = (genl_reply(linkmodes_reply(ifindex=3, speed=10000, duplex=1))
                + genl_reply(linkmodes_reply(ifindex=5, speed=0xFFFFFFFF, duplex=0xFF,
                                             peer=False, lanes=None))
                + genl_reply(attrs(nest(LM_HEADER, string(2, "nodev")), u32(LM_SPEED, 1)))
                + done())
    replies, finished = en.split_replies(datagram, seq=9)
    assert finished
    # lo (ifindex 1) is not in it: the dump skips a device without get_link_ksettings;
    # a reply whose header has no DEV_INDEX names no device.
    assert en.decode_link_modes(replies) == {3: (10000, "full"), 5: (None, "unknown")}
    # Only the devices asked for are decoded; one the dump does not have is absent.
    assert en.decode_link_modes(replies, frozenset({5, 9})) == {5: (None, "unknown")}


@pytest.mark.parametrize("cut", [3, 10, 20, 60, 100, -3])
def test_truncated_linkmodes_reply_is_a_parse_error(cut):
    reply = linkmodes_reply()
    with pytest.raises(en.ParseError):
        en.decode_link_modes([reply[:cut]])


# In a namespace: every interface's rtnetlink state, its sysfs speed and duplex, and the
# LINKMODES_GET dump's entry for it (null: not in the dump); and the attribute types inside
# the OURS bitset nest of each raw reply of the same request (compact: SIZE, VALUE, MASK).
LINK_MODES = textwrap.dedent("""
    import json
    from nicwatch.sources import netlink, sysfs_net
    from nicwatch.sources import ethtool_netlink as en
    from nicwatch.sources.rtnetlink import RtNetlink

    with RtNetlink() as rt:
        links = rt.links()
    with en.EthtoolNetlink() as reader:
        dumped = reader.link_modes()
        some = reader.link_modes([links["lu0"].ifindex, links["lo"].ifindex])
        raw = reader.genl_request(en.ETHTOOL_MSG_LINKMODES_GET, netlink.NLM_F_DUMP,
                                  en._LINKMODES_REQUEST)
    ours = sorted({t for reply in raw
                   for span in [netlink.attribute_index(reply, 0, len(reply))[3]]
                   for t, _, _ in netlink.attributes(reply, *span)})
    print(json.dumps({
        "links": {name: [link.ifindex, link.up, sysfs_net.link_mode("/sys", name),
                         dumped.get(link.ifindex)] for name, link in links.items()},
        "ours": ours,
        "some": {str(ifindex): mode for ifindex, mode in some.items()},
    }))
""")


@pytest.fixture
def link_modes_namespace():
    """veth pairs in every state: both ends up, one end up (no carrier), both down; a bridge
    without ports, up (speed and duplex unknown) and one down; lo down."""
    with namespace_with("nwl", "link add lu0 type veth peer name lu1\n"
                        "link add lh0 type veth peer name lh1\n"
                        "link add ld0 type veth peer name ld1\n"
                        "link add lbr0 type bridge\nlink add lbr1 type bridge\n"
                        "link set lu0 up\nlink set lu1 up\nlink set lh0 up\n"
                        "link set lbr0 up\n") as ns:
        yield ns


@pytest.mark.netns
def test_linkmodes_dump_as_the_collector_maps_it_equals_sysfs(link_modes_namespace):
    out = ns_python(link_modes_namespace, LINK_MODES)
    links = {name: (ifindex, up, tuple(sysfs), None if dumped is None else tuple(dumped))
             for name, (ifindex, up, sysfs, dumped) in out["links"].items()}
    assert set(links) == {"lo", "lu0", "lu1", "lh0", "lh1", "ld0", "ld1", "lbr0", "lbr1"}
    up = {name for name, (_, is_up, _, _) in links.items() if is_up}
    assert up == {"lu0", "lu1", "lh0", "lbr0"}

    # What the kernel says, as it is: veth fixes 10000/full whether it is up or not (the
    # dump does not ask netif_running, sysfs does); a bridge without ports knows neither;
    # lo has no get_link_ksettings, so the dump skips it (EOPNOTSUPP).
    for name in ("lu0", "lu1", "lh0", "lh1", "ld0", "ld1"):
        assert links[name][3] == (10000, "full"), name
    assert links["lbr0"][3] == links["lbr1"][3] == (None, "unknown")
    assert links["lo"][3] is None

    # As the collector maps it (not up, or not in the dump: unknown), it is what sysfs says.
    for name, (_ifindex, is_up, sysfs, dumped) in links.items():
        mapped = dumped if is_up and dumped is not None else (None, None)
        assert mapped == sysfs, name
    assert links["lh0"][2] == (10000, "full")  # up without carrier: still read
    assert links["lbr0"][2] == (None, "unknown")
    assert links["ld0"][2] == links["lo"][2] == (None, None)

    # Asked for lu0 and lo: lu0 only (lo is not in the dump).
    assert out["some"] == {str(links["lu0"][0]): [10000, "full"]}

    # Compact bitsets: OURS is SIZE, VALUE and MASK arrays, no nest per bit with its name.
    assert out["ours"] == [BITSET_SIZE, BITSET_VALUE, BITSET_MASK]
