"""rtnetlink links: one RTM_GETLINK dump gives what /sys/class/net/<if>/ gives, checked for
real on veth pairs in namespaces after real traffic, and the decoder on messages built to
the kernel's layout (uapi if_link.h, rtnetlink.h)."""

from __future__ import annotations

import struct

import pytest

from nicwatch.daemon import live_sysfs
from nicwatch.sources.netlink import ParseError, split_replies
from nicwatch.sources.rtnetlink import (
    IFLA_ADDRESS,
    IFLA_CARRIER,
    IFLA_CARRIER_CHANGES,
    IFLA_IFNAME,
    IFLA_MTU,
    IFLA_OPERSTATE,
    IFLA_STATS64,
    RTM_NEWLINK,
    STATS64_FIELDS,
    parse_link,
)

from netns import make_veth_pair, ns_python, ns_sh

NET_FIELDS = ("ifindex", "address", "operstate", "mtu", "carrier", "carrier_changes",
              "carrier_up_count", "carrier_down_count", "stats")

# In the namespace: the dump, sysfs, the dump again; and the collector's NetClass read both
# ways (files, then the dump, then files again).
COMPARE = """
import dataclasses, json
from nicwatch.collect import Collector, Selection
from nicwatch.sources import sysfs_net
from nicwatch.sources.rtnetlink import RtNetlink

FIELDS = %r
def plain(nc):
    return {f: (dict(getattr(nc, f)) if f == "stats" else getattr(nc, f)) for f in FIELDS}
with RtNetlink() as rt:
    before = rt.links()
    sysfs = {name: plain(sysfs_net.read_netclass("/sys", name))
             for name in sysfs_net.list_interfaces("/sys")}
    after = rt.links()
out = {"sysfs": sysfs, "before": {n: plain(l) for n, l in before.items()},
       "after": {n: plain(l) for n, l in after.items()}}
sel = Selection(include=".*")
files, links = Collector("/sys", sel), Collector("/sys", sel, rtnetlink=RtNetlink())
def netclasses(c):
    return {s.reading.netclass.name: s.reading.netclass for s in c.poll().samples}
a, b, a2 = netclasses(files), netclasses(links), netclasses(files)
out["collector"] = {n: [b[n] in (a[n], a2[n]), sorted(
    f.name for f in dataclasses.fields(a[n]) if getattr(a[n], f.name) != getattr(b[n], f.name))]
    for n in a}
out["collector_names"] = [sorted(a), sorted(b)]
links.close()
files.close()
print(json.dumps(out))
"""


def run_compare(ns: str) -> dict:
    return ns_python(ns, COMPARE % (NET_FIELDS,))


@pytest.fixture
def veth_pair_rt():
    pair = make_veth_pair(queues=4, subnet=41)
    # A second pair left down: operstate down, carrier unknown (sysfs refuses to read it).
    ns_sh(pair.ns_a, "ip", "link", "add", "nwdown0", "type", "veth", "peer", "name", "nwdown1")
    yield pair
    pair.delete()


@pytest.mark.netns
def test_dump_equals_sysfs_after_real_traffic(veth_pair_rt):
    p = veth_pair_rt
    p.send_udp(300, 1000)
    got = run_compare(p.ns_a)
    sysfs, before, after = got["sysfs"], got["before"], got["after"]
    assert set(sysfs) == set(before) == {"lo", p.a, "nwdown0", "nwdown1"}
    for name, files in sysfs.items():
        # Nothing else talks here (no IPv6), so the counters hold still between the reads;
        # "before or after" only guards against a stray frame.
        assert files in (before[name], after[name]), name
    sent = sysfs[p.a]["stats"]
    assert sent["tx_packets"] >= 300 and sent["tx_bytes"] >= 300 * 1000
    assert sorted(sent) == sorted(STATS64_FIELDS) and len(sent) == 24
    assert sysfs[p.a]["operstate"] == "up" and sysfs[p.a]["carrier"] is True
    down = before["nwdown0"]
    assert (down["operstate"], down["carrier"]) == ("down", None)
    # The collector's NetClass is the same whichever way it is read.
    names_files, names_links = got["collector_names"]
    assert names_files == names_links
    assert all(same for same, _ in got["collector"].values()), got["collector"]


@pytest.mark.netns
def test_the_peer_namespace_is_not_seen(veth_pair_rt):
    """The socket sees its own namespace, like /sys: the peer end is not in the dump."""
    p = veth_pair_rt
    names = ns_python(p.ns_b, (
        "import json\nfrom nicwatch.sources.rtnetlink import RtNetlink\n"
        "with RtNetlink() as rt:\n    print(json.dumps(sorted(rt.links())))\n"))
    assert names == sorted(["lo", p.b])


# --- decoding messages built to the kernel's layout ----------------------------------------


def nla(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + bytes(-size % 4)


def newlink(ifindex: int, flags: int, *attrs: bytes) -> bytes:
    """RTM_NEWLINK as rtnl_fill_ifinfo() lays it out, split from its datagram."""
    body = struct.pack("=BxHiII", 0, 1, ifindex, flags, 0) + b"".join(attrs)
    (payload,), _ = split_replies(
        struct.pack("=IHHII", 16 + len(body), RTM_NEWLINK, 2, 5, 0) + body, 5, 16)
    return payload


def stats64(n: int) -> bytes:
    return struct.pack(f"={n}Q", *range(1000, 1000 + n))


def test_stats64_fields_by_name_and_the_newer_field_without_a_sysfs_file_left_out():
    link = parse_link(newlink(7, 0x1, nla(IFLA_IFNAME, b"ens3np0\0"),
                              nla(IFLA_MTU, b"\xdc\x05\0\0"),
                              nla(IFLA_STATS64, stats64(25)), nla(IFLA_OPERSTATE, b"\x06"),
                              nla(IFLA_CARRIER, b"\x01"),
                              nla(IFLA_CARRIER_CHANGES, struct.pack("=I", 3)),
                              nla(IFLA_ADDRESS, bytes.fromhex("b8cef6000001"))))
    assert (link.name, link.ifindex, link.mtu, link.operstate, link.carrier,
            link.carrier_changes, link.address) == (
        "ens3np0", 7, 1500, "up", True, 3, "b8:ce:f6:00:00:01")
    assert link.stats["rx_packets"] == 1000 and link.stats["tx_bytes"] == 1003
    assert link.stats["rx_nohandler"] == 1023 and len(link.stats) == 24
    assert list(link.stats) == sorted(link.stats)  # sysfs file-name order


def test_a_down_link_has_no_carrier_and_absent_attributes_stay_absent():
    link = parse_link(newlink(3, 0x0, nla(IFLA_IFNAME, b"eth1\0"), nla(IFLA_CARRIER, b"\x00"),
                              nla(IFLA_OPERSTATE, b"\x09")))
    assert (link.carrier, link.operstate, link.mtu, link.address, dict(link.stats)) == (
        None, None, None, None, {})


@pytest.mark.parametrize("payload", [
    b"\0" * 8,  # shorter than ifinfomsg
    struct.pack("=BxHiII", 0, 1, 2, 1, 0) + nla(IFLA_IFNAME, b"x\0") + nla(IFLA_STATS64, bytes(64)),
    struct.pack("=BxHiII", 0, 1, 2, 1, 0) + struct.pack("=HH", 40, IFLA_MTU) + bytes(4),
])
def test_bytes_that_do_not_fit_the_layout_are_a_parse_error(payload):
    with pytest.raises(ParseError):
        parse_link(payload)


def test_a_message_without_a_name_is_skipped():
    assert parse_link(newlink(2, 1, nla(IFLA_MTU, b"\0\0\1\0"))) is None


def test_netlink_is_used_only_for_the_live_sysfs(tmp_path):
    assert live_sysfs("/sys") and live_sysfs("/sys/")
    assert not live_sysfs(str(tmp_path))
