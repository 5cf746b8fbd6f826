"""SR-IOV source: the real RTM_GETLINK + RTEXT_FILTER_VF reply on veths, kernel-layout
replies built from published VF listings, and the sysfs VF counts of a fixture tree. The lab
(tests/lab/test_lab_nsim_sriov.py) compares the source with `ip -j -d link show` on
netdevsim's VFs, legacy and switchdev, under QEMU; the kernel-layout replies remain for the
listings of real NICs (ice, mlx5) and for what netdevsim cannot show (VF statistics, a list
past 65,535 bytes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nicwatch.model import DevlinkPort, NetClass, Reading
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.netlink import ParseError
from nicwatch.sources.sriov import (
    ZERO_FILL_POLLS,
    SriovSource,
    VfError,
    is_representor,
    parse_vf_link,
    read_sriov_counts,
    request_body,
)

from fixture_sriov import (
    UNSET,
    ZERO_FILL,
    Replies,
    Vf,
    fixture_text,
    ip_link_vfs,
    newlink,
    prom_vf_stats,
)
from netns import have_root_and_tools, make_veth_pair, ns_python

FIXTURE_TREE = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs" / "cx7-sriov"


# --- the real kernel ------------------------------------------------------------------------

REAL = """
import json, socket
from nicwatch.model import NetClass
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.sriov import SriovNetlink, SriovSource
out = {}
with SriovNetlink() as s:
    out["one"] = {n: s.vfs(i) for i, n in socket.if_nameindex()}
    out["dump"] = {n: v for n, v in s.dump().items()}
src = SriovSource.open(SourceOptions(vfs=True))
ncs = [NetClass(n, i, None, None, None, None, None, None, None, None, None, None, None, None)
       for i, n in socket.if_nameindex()]
poll = Poll(ncs)
src.read(poll)
src.close()
out["parts"] = {n: sorted(p) for n, p in poll.parts.items()}
out["errors"] = [str(e) for e in poll.errors]
out["netlink"] = src.reader is not None
print(json.dumps(out))
"""


@pytest.fixture
def veth_pair_vf():
    if not have_root_and_tools():
        pytest.fail("needs root and iproute2 to create namespaces")
    pair = make_veth_pair(subnet=43)
    yield pair
    pair.delete()


@pytest.mark.netns
def test_the_real_vf_reply_of_a_veth_has_no_vfs_and_is_parsed(veth_pair_vf):
    """A veth has no parent device, so the kernel sends no IFLA_NUM_VF and no VF list;
    the reply to the real request with RTEXT_FILTER_VF parses, per ifindex and as a dump."""
    got = ns_python(veth_pair_vf.ns_a, REAL)
    assert set(got["one"]) == {"lo", veth_pair_vf.a}
    assert got["one"][veth_pair_vf.a] == [None, []]
    assert got["dump"][veth_pair_vf.a] == [None, []] and got["dump"]["lo"] == [None, []]
    # The source on the namespace's live /sys: no SR-IOV files, nothing asked, no errors.
    assert got["netlink"] is True
    assert got["parts"] == {"lo": [], veth_pair_vf.a: []}
    assert got["errors"] == []


def test_the_source_is_opt_in():
    assert SriovSource.open(SourceOptions()) is None
    source = SriovSource.open(SourceOptions(sysfs=str(FIXTURE_TREE), vfs=True))
    assert source is not None and source.reader is None  # a fixture tree: no netlink
    source.close()


def test_request_carries_the_vf_filter():
    body = request_body(7)
    # ifinfomsg (16 bytes, ifindex 7), then IFLA_EXT_MASK (29) = RTEXT_FILTER_VF.
    assert body[4:8] == (7).to_bytes(4, "little") and body[16:] == bytes.fromhex(
        "08001d0001000000")
    assert request_body(7, skip_stats=True)[20:] == (9).to_bytes(4, "little")


# --- kernel-layout replies from published listings ---------------------------------------


def test_mlx5_listing_vlan_spoofchk_and_trust():
    text = fixture_text("mlx5-danm-246.txt")
    vfs = ip_link_vfs(text)
    assert len(vfs) == 11
    name, ifindex, num, got = parse_vf_link(newlink("enp101s0f0", vfs, ifindex=4))
    assert (name, ifindex, num, len(got)) == ("enp101s0f0", 4, 11, 11)
    by = {v.vf: v for v in got}
    assert (by[0].vlan, by[0].spoofchk, by[0].trust, by[0].link_state) == (10, False, False,
                                                                            "auto")
    assert (by[9].vlan, by[9].spoofchk) == (10, True)
    assert by[1].vlan == 0 and by[1].vlan_proto == "802.1Q"
    assert all(v.mac is None for v in got)  # MAC 00:00:00:00:00:00: none set
    assert all(v.stats == {} for v in got)  # no IFLA_VF_STATS nest: no counters
    assert by[3].min_tx_rate_mbps == 0 and by[3].max_tx_rate_mbps == 0


def test_administrative_macs_and_unreported_trust():
    vfs = ip_link_vfs(fixture_text("lxd-14879.txt"))
    vfs[2].trust = UNSET  # a driver that does not fill trust: the kernel's -1 preset
    _n, _i, _num, got = parse_vf_link(newlink("pf0", vfs))
    by = {v.vf: v for v in got}
    assert by[1].mac == "02:00:01:01:28:13" and by[1].vlan == 128
    assert by[3].mac == "0a:e0:f2:db:e7:26" and by[3].spoofchk is True
    assert by[3].trust is None and by[4].trust is False


def test_e810_counters_by_kernel_name():
    stats = prom_vf_stats(fixture_text("ice-e810-node-exporter-3544.prom"))
    vfs = [Vf(n, spoofchk=1, trust=0, stats=s) for n, s in sorted(stats["eno12399np0"].items())]
    _n, _i, _num, got = parse_vf_link(newlink("eno12399np0", vfs))
    assert [dict(v.stats) for v in got] == [
        {"rx_packets": 2854}, {"rx_packets": 5787, "rx_dropped": 5787},
        {"rx_packets": 5787, "rx_dropped": 5787}]


def test_all_eight_counters_and_padding_attributes():
    full = {"rx_packets": 1, "tx_packets": 2, "rx_bytes": 3 << 40, "tx_bytes": 4,
            "broadcast": 5, "multicast": 6, "rx_dropped": 7, "tx_dropped": 8}
    for pad in (False, True):
        _n, _i, _num, got = parse_vf_link(newlink("pf0", [Vf(0, stats=full)], pad=pad))
        assert dict(got[0].stats) == full


def test_qinq_port_vlan_protocol():
    _n, _i, _num, got = parse_vf_link(newlink("pf0", [Vf(0, vlan=100, qos=3, proto=0x88A8)]))
    assert (got[0].vlan, got[0].qos, got[0].vlan_proto) == (100, 3, "802.1ad")


@pytest.mark.parametrize("count", [64, 256])
def test_many_vfs_even_when_the_list_length_wraps(count):
    """Past ~220 VFs the IFLA_VFINFO_LIST length no longer fits its u16 nla_len and wraps;
    the VF entries are read up to IFLA_NUM_VF regardless."""
    stats = {"rx_packets": 10, "tx_packets": 20, "rx_bytes": 30, "tx_bytes": 40,
             "broadcast": 1, "multicast": 2, "rx_dropped": 3, "tx_dropped": 4}
    vfs = [Vf(i, mac=f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}", stats=stats)
           for i in range(count)]
    payload = newlink("pf0", vfs)
    _n, _i, num, got = parse_vf_link(payload)
    assert num == count and [v.vf for v in got] == list(range(count))
    assert got[-1].mac == f"02:00:00:00:{(count - 1) >> 8:02x}:{(count - 1) & 255:02x}"
    if count == 256:
        assert len(payload) > 65535


def test_a_device_without_vf_support_and_one_with_vfs_but_no_list():
    assert parse_vf_link(newlink("veth0", [], num_vf=None))[2:] == (None, ())
    # IFLA_NUM_VF 4 but no ndo_get_vf_config: no list at all.
    assert parse_vf_link(newlink("pf0", [Vf(i) for i in range(4)], vfinfo=False))[2:] == (4, ())


def e810_vfs() -> list[Vf]:
    stats = prom_vf_stats(fixture_text("ice-e810-node-exporter-3544.prom"))["eno12399np0"]
    return [Vf(n, mac=f"02:00:00:00:00:0{n}", spoofchk=1, trust=0, stats=s)
            for n, s in sorted(stats.items())]


def test_a_vf_the_driver_could_not_describe_is_missing_and_the_others_are_served():
    """rtnl_fill_vfinfo() writes no entry for a VF whose ndo_get_vf_config failed (ice
    during a VF reset, i40e with -EAGAIN) while IFLA_NUM_VF still counts it: the list is
    shorter than announced, and the VFs that are there are read, not the whole PF dropped
    (this was a parse error before)."""
    vfs = e810_vfs()
    _n, _i, num, got = parse_vf_link(newlink("eno12399np0", [vfs[0], vfs[2]], num_vf=3))
    assert num == 3 and [(v.vf, dict(v.stats)) for v in got] == [
        (0, {"rx_packets": 2854}), (2, {"rx_packets": 5787, "rx_dropped": 5787})]
    # The same with 256 VFs, past the u16 wrap of the list length, VF 100 skipped.
    many = [Vf(i, mac=f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}", stats=dict(ZERO_FILL))
            for i in range(256) if i != 100]
    payload = newlink("pf0", many, num_vf=256)
    assert len(payload) > 65535
    _n, _i, num, got = parse_vf_link(payload)
    assert num == 256 and [v.vf for v in got] == [i for i in range(256) if i != 100]


def test_a_list_cut_inside_an_entry_is_still_a_parse_error():
    payload = newlink("pf0", [Vf(0), Vf(1)], num_vf=3)
    with pytest.raises(ParseError):
        parse_vf_link(payload[:-300])  # cut inside the list


# --- sysfs and the source ------------------------------------------------------------------


def test_sysfs_vf_counts_of_the_fixture_tree(tmp_path):
    assert read_sriov_counts(FIXTURE_TREE, "eth2") == (4, 16)
    root = tmp_path / "sys"
    shutil.copytree(FIXTURE_TREE, root, symlinks=True)
    dev = root / "class/net/eth2/device"
    (dev / "sriov_numvfs").write_text("four\n")
    problems: list[str] = []
    assert read_sriov_counts(root, "eth2", problems) == (None, 16)
    assert problems and "sriov_numvfs" in problems[0]


class Reader:
    def __init__(self, replies: dict[int, tuple]) -> None:
        self.replies = replies
        self.asked: list[int] = []

    def vfs(self, ifindex: int):
        self.asked.append(ifindex)
        reply = self.replies[ifindex]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def close(self) -> None:
        pass


def netclass(name: str, ifindex: int) -> NetClass:
    return NetClass(name, ifindex, None, None, None, None, None, None, None, None, None, None,
                    None, None)


def test_source_reads_sysfs_counts_and_asks_netlink_only_for_sriov_pfs(tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(FIXTURE_TREE, root, symlinks=True)
    (root / "class/net/veth0").mkdir()  # an interface without a device: not SR-IOV
    vfs = ip_link_vfs(fixture_text("mlx5-danm-246.txt"))[:4]
    _n, _i, num, parsed = parse_vf_link(newlink("eth2", vfs, ifindex=5))
    reader = Reader({5: (num, parsed)})
    poll = Poll([netclass("eth2", 5), netclass("veth0", 6)])
    SriovSource(root, reader).read(poll)
    assert reader.asked == [5]
    state = poll.parts["eth2"]["sriov"]
    assert (state.enabled, state.total, state.announced, len(state.vfs)) == (4, 16, 4, 4)
    assert state.unreadable == ()
    assert "sriov" not in poll.parts["veth0"] and poll.errors == []


def test_vfs_enabled_but_not_reported_stay_visible_and_errors_are_named(tmp_path):
    reader = Reader({5: (0, ())})
    poll = Poll([netclass("eth2", 5)])
    SriovSource(FIXTURE_TREE, reader).read(poll)
    state = poll.parts["eth2"]["sriov"]
    assert (state.enabled, state.total, state.announced, state.vfs) == (4, 16, 0, ())
    reader = Reader({5: VfError(0, "ifindex 5: IFLA_VFINFO_LIST holds 2 of the 3 VFs")})
    poll = Poll([netclass("eth2", 5)])
    SriovSource(FIXTURE_TREE, reader).read(poll)
    assert poll.parts["eth2"]["sriov"].announced is None  # unknown, not zero
    assert [(d, e.source, e.kind) for d, e in poll.errors] == [("eth2", "sriov", "parse")]
    assert "2 of the 3" in poll.errors[0][1].message
    json.dumps([e.message for _d, e in poll.errors])


def polled(source: SriovSource):
    poll = Poll([netclass("eth2", 5)])
    source.read(poll)
    return poll.parts["eth2"]["sriov"]


def test_missing_and_zero_filled_vfs_are_unreadable_for_that_poll_only():
    """VF 1 of the E810 listing goes missing for a poll (a VF reset: ice skips it), then
    reads all zeros with its MAC unchanged (i40e's -EBUSY, zero-filled by the kernel): both
    polls serve the other VFs and name VF 1 unreadable; its zeros are not counters."""
    vfs = e810_vfs()
    zero = Vf(1, mac=vfs[1].mac, spoofchk=1, trust=0, stats=dict(ZERO_FILL))
    grown = [Vf(v.vf, mac=v.mac, stats={k: n + 10 for k, n in (v.stats or {}).items()})
             for v in vfs]
    source = SriovSource(FIXTURE_TREE, Replies(
        newlink("eth2", vfs, ifindex=5, num_vf=3),
        newlink("eth2", [vfs[0], vfs[2]], ifindex=5, num_vf=3),
        newlink("eth2", [vfs[0], zero, vfs[2]], ifindex=5, num_vf=3),
        newlink("eth2", grown, ifindex=5, num_vf=3)))
    assert polled(source).unreadable == ()
    state = polled(source)
    assert state.unreadable == (1,) and [v.vf for v in state.vfs] == [0, 2]
    state = polled(source)
    assert state.unreadable == (1,) and [v.vf for v in state.vfs] == [0, 1, 2]
    assert dict(state.vfs[1].stats) == {} and dict(state.vfs[0].stats) == {"rx_packets": 2854}
    state = polled(source)
    assert state.unreadable == () and dict(state.vfs[1].stats) == {
        "rx_packets": 5797, "rx_dropped": 5797}


def test_zeros_that_last_or_come_with_a_new_mac_are_believed():
    """A VF re-created (sriov_numvfs 0 -> N) restarts at zero: with a new MAC at once, with
    the same MAC once the zeros outlast ZERO_FILL_POLLS polls (then the tracker counts the
    restart, as it counts any VF reset)."""
    vfs = e810_vfs()
    zero = Vf(1, mac=vfs[1].mac, stats=dict(ZERO_FILL))
    source = SriovSource(FIXTURE_TREE, Replies(
        newlink("eth2", vfs, ifindex=5, num_vf=3),
        *(newlink("eth2", [vfs[0], zero, vfs[2]], ifindex=5, num_vf=3)
          for _ in range(ZERO_FILL_POLLS + 1))))
    polled(source)
    for _ in range(ZERO_FILL_POLLS):
        assert polled(source).unreadable == (1,)
    state = polled(source)
    assert state.unreadable == () and dict(state.vfs[1].stats) == ZERO_FILL
    renamed = Vf(1, mac="02:00:00:00:00:99", stats=dict(ZERO_FILL))
    source = SriovSource(FIXTURE_TREE, Replies(
        newlink("eth2", vfs, ifindex=5, num_vf=3),
        newlink("eth2", [vfs[0], renamed, vfs[2]], ifindex=5, num_vf=3)))
    polled(source)
    assert polled(source).unreadable == ()


def test_drop_counters_zeroed_while_the_vf_keeps_counting_are_left_out():
    """mlx5_eswitch_get_vport_stats fills the packet counters, then returns when its drop
    query fails: rx/tx_dropped arrive as the kernel's zeros while the packets go on."""
    before = {"rx_packets": 900, "tx_packets": 800, "rx_dropped": 7, "tx_dropped": 3}
    after = {"rx_packets": 950, "tx_packets": 820, "rx_dropped": 0, "tx_dropped": 0}
    later = {"rx_packets": 990, "tx_packets": 850, "rx_dropped": 9, "tx_dropped": 3}
    mac = "02:00:00:00:00:01"
    source = SriovSource(FIXTURE_TREE, Replies(
        *(newlink("eth2", [Vf(0, mac=mac, stats=s)], ifindex=5, num_vf=1)
          for s in (before, after, later))))
    polled(source)
    state = polled(source)
    assert dict(state.vfs[0].stats) == {"rx_packets": 950, "tx_packets": 820}
    assert state.unreadable == ()  # the VF was read; two of its counters were not
    assert dict(polled(source).vfs[0].stats) == later


def test_the_daemon_pipeline_serves_the_vf_counts_of_a_fixture_tree():
    """Registry -> collector -> tracker -> render with --collector.vfs on the fixture tree:
    sysfs counts served, no netlink (a fixture tree), nothing served with it off."""
    from nicwatch.collect import Collector, Selection
    from nicwatch.exporter.render import SelfStats, render
    from nicwatch.sources.registry import open_sources
    from nicwatch.tracker import Tracker

    def exposition(vfs: bool) -> str:
        collector = Collector(FIXTURE_TREE, Selection(include=".*"), sources=open_sources(
            SourceOptions(sysfs=str(FIXTURE_TREE), vfs=vfs)))
        try:
            result = collector.poll()
        finally:
            collector.close()
        assert not [e for _d, e in result.errors if e.source == "sriov"]
        return render(Tracker().update(result.samples), SelfStats()).decode()

    text = exposition(True)
    assert 'nic_sriov_vfs{device="eth2",state="enabled"} 4' in text
    assert 'nic_sriov_vfs{device="eth2",state="total"} 16' in text
    assert 'state="reported"' not in text and "# TYPE nic_sriov_vfs gauge" in text
    assert "nic_sriov_vfs" not in exposition(False)


# --- representors ---------------------------------------------------------------------------

EP = "devices/pci0000:40/0000:40:01.1/0000:41:00.0"


def with_representors(tmp_path: Path) -> Path:
    """The cx7-sriov tree with two VF representors of eth2 in switchdev mode. A representor
    is registered on its PF's device (mlx5: SET_NETDEV_DEV to the PF's PCI device;
    netdevsim's nsim_create: its bus device, where sriov_numvfs lives), so its ``device``
    link is the PF's and sysfs shows it the PF's sriov_numvfs and sriov_totalvfs. Its
    phys_port_name is devlink's spelling for a pci_vf port, pf<N>vf<M>
    (net/devlink/port.c __devlink_port_phys_port_name_get); the uplink's is p<N>."""
    root = tmp_path / "sys"
    shutil.copytree(FIXTURE_TREE, root, symlinks=True)
    (root / EP / "net/eth2/phys_port_name").write_text("p0\n")
    for rep, name in (("eth2pf0vf0", "pf0vf0"), ("eth2pf0vf1", "pf0vf1")):
        net = root / EP / "net" / rep
        net.mkdir()
        (net / "device").symlink_to("../../../0000:41:00.0")
        (net / "phys_port_name").write_text(name + "\n")
        (root / "class/net" / rep).symlink_to(f"../../{EP}/net/{rep}")
    return root


def test_vf_representors_are_not_reported_as_pfs(tmp_path):
    """The lab's finding (tests/lab/test_lab_nsim_sriov.py): each representor was asked for
    VFs and reported the PF's 4 as its own. Told by the devlink port's flavour (pci_vf, as
    netdevsim's __nsim_dev_port_add and mlx5 register it) or, without a devlink port, by
    phys_port_name; only the PF's own netdev (the uplink) reports them."""
    root = with_representors(tmp_path)
    assert read_sriov_counts(root, "eth2pf0vf0") == (4, 16)  # what fooled the source
    vfs = ip_link_vfs(fixture_text("mlx5-danm-246.txt"))[:4]
    _n, _i, num, parsed = parse_vf_link(newlink("eth2", vfs, ifindex=5))
    # with devlink ports: the representors' flavour is pci_vf, the uplink's physical
    reader = Reader({5: (num, parsed)})
    poll = Poll([netclass("eth2", 5), netclass("eth2pf0vf0", 8), netclass("eth2pf0vf1", 9)])
    handle = "pci/0000:41:00.0"
    poll.put("eth2", Reading.devlink_port, DevlinkPort(handle, 65535, 5, "eth2", "physical", 0))
    for index, (rep, ifindex) in enumerate((("eth2pf0vf0", 8), ("eth2pf0vf1", 9)), 1):
        poll.put(rep, Reading.devlink_port, DevlinkPort(handle, index, ifindex, rep, "pci_vf", None,
                                                  pf=0, vf=index - 1))
    SriovSource(root, reader).read(poll)
    assert reader.asked == [5]
    assert len(poll.parts["eth2"]["sriov"].vfs) == 4
    assert "sriov" not in poll.parts["eth2pf0vf0"] and "sriov" not in poll.parts["eth2pf0vf1"]
    assert poll.errors == []
    # without the devlink source (a kernel without devlink): phys_port_name tells them
    reader = Reader({5: (num, parsed)})
    poll = Poll([netclass("eth2", 5), netclass("eth2pf0vf0", 8), netclass("eth2pf0vf1", 9)])
    SriovSource(root, reader).read(poll)
    assert reader.asked == [5]
    assert [n for n, p in poll.parts.items() if "sriov" in p] == ["eth2"]


@pytest.mark.parametrize(("name", "representor"), [
    ("pf0vf1", True), ("c1pf0vf1", True), ("pf0sf3", True), ("pf0", True), ("c2pf1", True),
    ("p0pf0vf1", True),  # sfc (ef100_rep.c)
    ("p0", False), ("p1s0", False), ("p0s1", False), ("", False), ("vf1", False),
    ("pf0vf", False), ("eth0", False)])
def test_representor_by_phys_port_name(name, representor):
    assert is_representor(None, name) is representor


def test_representor_by_devlink_port_flavour_over_phys_port_name():
    def port(flavour):
        return DevlinkPort("pci/0000:41:00.0", 1, 8, "x", flavour, None)
    assert [is_representor(port(f), "p0") for f in ("pci_vf", "pci_sf", "pci_pf")] == [
        True, True, True]
    assert not is_representor(port("physical"), "pf0vf0")  # the port knows best
    assert is_representor(port(None), "pf0vf0")  # a flavour this code does not know
    assert not is_representor(None, None)


def test_an_interface_without_sriov_is_not_looked_at_again_until_it_changes(tmp_path,
                                                                           monkeypatch):
    """A device without the SR-IOV count files has none while it is bound: its sysfs is read
    again only after NOT_A_PF_SECONDS or as a new ifindex (before: two failed opens per
    interface and poll, 1.3 ms a poll on 32 veths). A PF is read every poll."""
    import nicwatch.sources.sriov as sriov

    root = tmp_path / "sys"
    shutil.copytree(FIXTURE_TREE, root, symlinks=True)
    (root / "class/net/veth0").mkdir()
    read: list[str] = []
    real = sriov.read_sriov_counts
    monkeypatch.setattr(sriov, "read_sriov_counts",
                        lambda r, name, p=None: read.append(name) or real(r, name, p))
    now = [100.0]
    source = SriovSource(root, None, clock=lambda: now[0])
    for _ in range(3):
        source.read(Poll([netclass("eth2", 5), netclass("veth0", 6)]))
        now[0] += 5
    assert read == ["eth2", "veth0", "eth2", "eth2"]
    read.clear()
    source.read(Poll([netclass("eth2", 5), netclass("veth0", 7)]))  # re-created
    now[0] += sriov.NOT_A_PF_SECONDS
    source.read(Poll([netclass("eth2", 5), netclass("veth0", 7)]))
    assert read == ["eth2", "veth0", "eth2", "veth0"]
