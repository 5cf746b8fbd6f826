"""The SIOCETHTOOL reader against the real kernel: veth pairs in test namespaces, and the
host's own eth0 (virtio_net)."""

import re
import subprocess

import pytest

from nicwatch.sources.ethtool_ioctl import EthtoolError, EthtoolIoctl

from netns import ns_python, ns_sh

pytestmark = pytest.mark.netns


def ethtool_s(ns: str | None, dev: str) -> dict[str, int]:
    argv = ["ethtool", "-S", dev]
    out = (ns_sh(ns, *argv) if ns else subprocess.run(argv, capture_output=True, text=True,
                                                       check=True)).stdout
    stats = {}
    for line in out.splitlines()[1:]:
        name, _, value = line.rpartition(":")
        stats[name.strip()] = int(value)
    return stats


READ = """
import json
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl, EthtoolError
e = EthtoolIoctl()
out = {{}}
for call in {calls!r}:
    try:
        v = getattr(e, call)({dev!r})
        out[call] = v.as_dict() if call == "statistics" else (v.__repr__())
    except EthtoolError as x:
        out[call] = "error:" + x.kind
print(json.dumps(out))
"""


def read_in(ns, dev, *calls):
    return ns_python(ns, READ.format(dev=dev, calls=list(calls)))


def test_statistics_equal_ethtool_s_on_a_veth(veth_pair_mq):
    p = veth_pair_mq
    got = read_in(p.ns_a, p.a, "statistics")["statistics"]
    want = ethtool_s(p.ns_a, p.a)
    assert got == want
    assert len(got) == 1 + 7 * 8 + 2 * 8  # peer_ifindex + 7 per rx queue + 2 per tx queue
    peer_ifindex = int(ns_sh(p.ns_b, "cat", f"/sys/class/net/{p.b}/ifindex").stdout)
    assert got["peer_ifindex"] == peer_ifindex


def test_driver_info_rings_channels_and_errors_on_a_veth(veth_pair_mq):
    p = veth_pair_mq
    got = read_in(p.ns_a, p.a, "driver_info", "rings", "channels", "perm_address")
    assert "driver='veth'" in got["driver_info"]
    assert "n_stats=73" in got["driver_info"]
    assert got["rings"] == "error:EOPNOTSUPP"  # veth has no rings: unsupported, not zero
    assert "rx=8" in got["channels"] and "rx_max=8" in got["channels"]
    gone = read_in(p.ns_a, "nosuchdev0", "statistics")
    assert gone["statistics"] == "error:ENODEV"


STAT_SET_CHANGE = """
import json, subprocess
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl
e = EthtoolIoctl()
dev = {dev!r}
before = e.statistics(dev)
subprocess.run(["ethtool", "-L", dev, "rx", "2", "tx", "3"], check=True)
after = e.statistics(dev)
again = e.statistics(dev)
subprocess.run(["ethtool", "-L", dev, "rx", "8", "tx", "8"], check=True)
grown = e.statistics(dev)
print(json.dumps({{
    "before": [len(before.names), before.generation],
    "after": [len(after.names), after.generation, len(after.values)],
    "again": [again.generation, again.names is after.names],
    "grown": [len(grown.names), grown.generation, len(grown.values)],
    "after_names": list(after.names),
}}))
"""


def test_stat_set_change_is_followed_without_garbage(veth_pair_mq):
    p = veth_pair_mq
    got = ns_python(p.ns_a, STAT_SET_CHANGE.format(dev=p.a))
    n_before, g_before = got["before"]
    assert n_before == 73
    n_after, g_after, n_values = got["after"]
    assert n_after == n_values == 1 + 7 * 2 + 2 * 3  # names re-read, values match them
    assert g_after == g_before + 1
    assert got["again"] == [g_after, True]  # unchanged set: cached names, same generation
    assert got["grown"] == [73, g_before, 73]  # growth is seen too (the first set again)
    assert all(re.fullmatch(r"peer_ifindex|(rx|tx)_queue_\d+_\w+", n) for n in got["after_names"])
    assert not any(re.match(r"rx_queue_[2-7]_", n) for n in got["after_names"])


def test_host_eth0_matches_ethtool():
    e = EthtoolIoctl()
    stats = e.statistics("eth0").as_dict()
    want = ethtool_s(None, "eth0")
    assert stats.keys() == want.keys()
    for name, value in want.items():  # live counters may move between the two reads
        assert 0 <= stats[name] <= value or stats[name] == value
    info = e.driver_info("eth0")
    out = subprocess.run(["ethtool", "-i", "eth0"], capture_output=True, text=True).stdout
    assert f"driver: {info.driver}" in out and f"bus-info: {info.bus_info}" in out
    rings = e.rings("eth0")
    g = subprocess.run(["ethtool", "-g", "eth0"], capture_output=True, text=True).stdout
    rx_values = re.findall(r"^RX:\s+(\d+)", g, re.M)
    assert [rings.rx_max, rings.rx] == [int(v) for v in rx_values]
    with pytest.raises(EthtoolError) as err:
        e.rings("lo")
    assert err.value.kind == "EOPNOTSUPP"


CONSTANTS = """
import collections, json, subprocess
from nicwatch.sources import Poll
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl, EthtoolIoctlSource
from nicwatch.sources.sysfs_net import read_netclass

class Counting:
    '''The real reader, each call counted.'''
    def __init__(self):
        self.real, self.calls = EthtoolIoctl(), collections.Counter()
    def __getattr__(self, name):
        def call(*args):
            self.calls[name] += 1
            return getattr(self.real, name)(*args)
        return call

reader, now = Counting(), [0.0]
source = EthtoolIoctlSource(reader, refresh=60.0, monotonic=lambda: now[0])
out = []
for t, action in ((0, None), (5, None), (10, None), (15, "ethtool -L {dev} rx 2 tx 2"),
                  (20, None), (80, None)):
    if action:
        subprocess.run(action.split(), check=True)
    now[0] = t
    reader.calls.clear()
    poll = Poll([read_netclass("/sys", {dev!r})], lambda: False)
    source.read(poll)
    parts = poll.parts[{dev!r}]
    out.append({{"calls": dict(reader.calls), "parts": sorted(parts),
                "driver": parts["driver_info"].driver, "stats": len(parts["stats"].names),
                "errors": [e.kind for _, e in poll.errors]}})
print(json.dumps(out))
"""


def test_driver_constants_are_asked_for_once_a_minute_and_on_a_new_stat_set(veth_pair_mq):
    """Driver info, the permanent address and veth's unsupported rings are asked for once per
    refresh on the real kernel, not every poll; the statistics and the channels veth does
    report every poll (no netlink part here, so they come from the ioctl); a channel change
    (a new statistics set) asks for the constants again at once. Every reading is whole."""
    p = veth_pair_mq
    got = ns_python(p.ns_a, CONSTANTS.format(dev=p.a))
    poll = {"statistics": 1, "channels": 1}
    full = {**poll, "driver_info": 1, "perm_address": 1, "rings": 1}
    assert [g["calls"] for g in got] == [
        full, poll, poll,
        full,  # the statistics set changed: everything remembered is asked for again
        poll, full]  # 60 s after the last full read
    assert all(g["parts"] == ["channels", "driver_info", "perm_address", "stats"] for g in got)
    assert {g["driver"] for g in got} == {"veth"} and not any(g["errors"] for g in got)
    assert [g["stats"] for g in got] == [73, 73, 73, 19, 19, 19]


def test_a_failed_driver_info_is_asked_for_again_next_poll():
    """A real error (EIO from a driver mid-reset) is reported and nothing is remembered, so
    the next poll asks again rather than leaving driver info out for a minute."""
    import errno

    from nicwatch.model import DriverInfo, StatSet
    from nicwatch.sources import Poll
    from nicwatch.sources.ethtool_ioctl import EthtoolIoctlSource

    from fixture_devlink import netclass

    class Flaky:
        def __init__(self):
            self.calls, self.asked = [], 0

        def driver_info(self, name):
            self.calls.append("driver_info")
            self.asked += 1
            if self.asked == 1:
                raise EthtoolError(errno.EIO, f"{name}: Input/output error")
            return DriverInfo("mlx5_core", "6.18", "28.46.3048", "0000:41:00.0", 2)

        def perm_address(self, name):
            self.calls.append("perm_address")
            return "b8:3f:d2:00:00:01"

        def statistics(self, name):
            self.calls.append("statistics")
            return StatSet(("rx_packets", "tx_packets"), (1, 2), 1)

        def rings(self, name):
            raise EthtoolError(errno.EOPNOTSUPP, "no rings")

        channels = rings

        def forget(self, name):
            pass

    reader = Flaky()
    source = EthtoolIoctlSource(reader, monotonic=lambda: 0.0)
    nc = netclass("ens1np0", 4, "0000:41:00.0")
    kinds, infos = [], []
    for _ in range(3):
        reader.calls.clear()
        poll = Poll([nc], lambda: False)
        source.read(poll)
        kinds.append([e.kind for _, e in poll.errors])
        infos.append(("driver_info" in reader.calls, "driver_info" in poll.parts["ens1np0"]))
    assert kinds == [["EIO"], [], []]
    assert infos == [(True, False), (True, True), (False, True)]


SHARED_SETS = """
import json, subprocess
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl
q = ["numtxqueues", "4", "numrxqueues", "4"]
subprocess.run(["ip", "link", "add", "nwsa", *q, "type", "veth", "peer", "name", "nwsb", *q],
               check=True)
e = EthtoolIoctl()
a, b = e.statistics("nwsa"), e.statistics("nwsb")
subprocess.run(["ethtool", "-L", "nwsa", "rx", "2", "tx", "2"], check=True)
a2, b2 = e.statistics("nwsa"), e.statistics("nwsb")
print(json.dumps({{
    "shared": [a.names is b.names, a.generation == b.generation, len(a.names)],
    "changed": [len(a2.names), a2.generation != a.generation],
    "other_kept": [b2.names is b.names, b2.generation == b.generation],
}}))
"""


def test_interfaces_with_one_stat_set_share_its_names_until_one_changes(veth_pair_mq):
    """Ports with equal name lists share one names tuple and generation (kept once; one
    plan serves them downstream); a port whose set changes gets its own, the others keep
    theirs."""
    got = ns_python(veth_pair_mq.ns_a, SHARED_SETS.format())
    assert got["shared"] == [True, True, 1 + 7 * 4 + 2 * 4]
    assert got["changed"] == [1 + 7 * 2 + 2 * 2, True]
    assert got["other_kept"] == [True, True]
