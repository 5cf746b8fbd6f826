"""The daemon's collector reads speed and duplex of the interfaces due for them with one
ethtool netlink LINKMODES_GET dump instead of two sysfs files each, and gets what the files
say; a poll whose dump fails reads the files. Against the kernel, in a namespace the test
creates."""

from __future__ import annotations

import json

import pytest

from netns import PYTHON, namespace_with, ns_sh

# In the namespace: three collectors over the same interfaces (the sysfs files; the dump;
# the dump through a double that fails while told to), each poll's speed and duplex per
# interface, the speed/duplex files read (counted in sysfs_net.read_text, which every sysfs
# attribute read goes through) and the dumps asked for.
SNIPPET = """
import errno, json, subprocess
from nicwatch.collect import PCIE_REFRESH, Collector, Selection
from nicwatch.sources import sysfs_net
from nicwatch.sources.ethtool_netlink import EthtoolNetlink
from nicwatch.sources.netlink import KernelError
from nicwatch.sources.rtnetlink import RtNetlink

files = []
read_text = sysfs_net.read_text
def counting(path):
    if str(path).endswith(("/speed", "/duplex")):
        files.append(str(path))
    return read_text(path)
sysfs_net.read_text = counting


class Reader:
    def __init__(self):
        self.reader, self.fail, self.dumps = EthtoolNetlink(), None, 0
    def link_modes(self, ifindexes=None):
        self.dumps += 1
        if self.fail is not None:
            raise self.fail
        return self.reader.link_modes(ifindexes)
    def close(self):
        self.reader.close()


now = [1000.0]
def collector(link_modes=None):
    return Collector("/sys", Selection(include=".*"), rtnetlink=RtNetlink(),
                     link_modes=link_modes, pcie_refresh=PCIE_REFRESH,
                     monotonic=lambda: now[0])

sysfs_path, reader = collector(), Reader()
dump_path = collector(reader)
out = []
def poll(step):
    row = {"step": step}
    for label, c in (("sysfs", sysfs_path), ("dump", dump_path)):
        files.clear()
        dumps = reader.dumps
        result = c.poll()
        row[label] = {
            "modes": {s.reading.netclass.name: [s.reading.netclass.speed_mbps,
                                                s.reading.netclass.duplex]
                      for s in result.samples},
            "files": len(files), "dumps": reader.dumps - dumps,
            "errors": sorted(f"{d}:{e.source}:{e.kind}" for d, e in result.errors),
        }
    out.append(row)

poll("first")
now[0] += 1.0
poll("1 s later, links unchanged")
subprocess.run(["ip", "link", "set", "lu1", "down"], check=True)
poll("lu1 down")
now[0] += PCIE_REFRESH
reader.fail = KernelError(errno.ENODEV)
poll("dump fails: ENODEV")
now[0] += PCIE_REFRESH
reader.fail = OSError(errno.ENOBUFS, "No buffer space available")
poll("dump fails: ENOBUFS")
now[0] += PCIE_REFRESH
reader.fail = None
subprocess.run(["ip", "link", "set", "lu1", "up"], check=True)
poll("dump works again")
subprocess.run(["ip", "link", "set", "lv0", "down"], check=True)
subprocess.run(["ip", "link", "set", "lv1", "down"], check=True)
poll("lv0 and lv1 down")
sysfs_path.close()
dump_path.close()
print(json.dumps(out))
"""


@pytest.fixture
def namespace():
    """Two veth pairs up (one of them taken down and up again by the snippet), one down, a
    bridge without ports up, lo down."""
    with namespace_with("nwk", "link add lu0 type veth peer name lu1\n"
                        "link add lv0 type veth peer name lv1\n"
                        "link add ld0 type veth peer name ld1\n"
                        "link add lbr0 type bridge\n"
                        "link set lu0 up\nlink set lu1 up\nlink set lv0 up\nlink set lv1 up\n"
                        "link set lbr0 up\n") as ns:
        yield ns


@pytest.mark.netns
def test_speed_and_duplex_from_one_dump_equal_the_sysfs_files(namespace):
    *logged, last = ns_sh(namespace, PYTHON, "-c", SNIPPET).stdout.splitlines()
    rows = {row["step"]: row for row in json.loads(last)}
    for step, row in rows.items():
        sysfs, dump = row["sysfs"], row["dump"]
        assert dump["modes"] == sysfs["modes"], step
        assert dump["errors"] == sysfs["errors"], step  # a failed dump is no source error
        assert sysfs["dumps"] == 0, step

    first = rows["first"]
    assert len(first["sysfs"]["modes"]) == 8  # lo, 3 veth pairs, the bridge
    assert first["sysfs"]["modes"]["lu0"] == [10000, "full"]
    assert first["sysfs"]["modes"]["ld0"] == first["sysfs"]["modes"]["lo"] == [None, None]
    assert first["sysfs"]["modes"]["lbr0"] == [None, "unknown"]
    assert first["sysfs"]["files"] == 2 * 8
    # One dump for all eight interfaces, and not a single speed or duplex file.
    assert (first["dump"]["dumps"], first["dump"]["files"]) == (1, 0)

    # Nothing due: no dump, no files.
    assert rows["1 s later, links unchanged"]["dump"]["dumps"] == 0
    assert rows["1 s later, links unchanged"]["sysfs"]["files"] == 0
    # lu1 went down (and lu0 lost its carrier): one dump for those two.
    down = rows["lu1 down"]
    assert (down["dump"]["dumps"], down["dump"]["files"]) == (1, 0)
    assert down["sysfs"]["files"] == 2 * 2
    assert down["dump"]["modes"]["lu1"] == [None, None]
    assert down["dump"]["modes"]["lu0"] == [10000, "full"]

    # A failed dump: that poll reads the files of every interface due, as without the dump.
    for step in ("dump fails: ENODEV", "dump fails: ENOBUFS"):
        assert rows[step]["dump"]["dumps"] == 1, step
        assert rows[step]["dump"]["files"] == rows[step]["sysfs"]["files"] == 2 * 8, step
    again = rows["dump works again"]
    assert (again["dump"]["dumps"], again["dump"]["files"]) == (1, 0)
    assert again["dump"]["modes"]["lu1"] == [10000, "full"]
    # The only links due are down: unknown without asking the kernel (sysfs says EINVAL).
    down = rows["lv0 and lv1 down"]
    assert (down["dump"]["dumps"], down["dump"]["files"]) == (0, 0)
    assert down["dump"]["modes"]["lv0"] == down["dump"]["modes"]["lv1"] == [None, None]
    # Logged (at debug) when the dumps start failing and when they work again, once each.
    events = [line.partition("] ")[2].split()[0] for line in logged]
    assert events == ["link_modes_dump_failed", "link_modes_dump_recovered"], logged


def test_the_daemon_dumps_link_modes_only_for_the_live_sysfs_with_ethtool_netlink_on(
        monkeypatch):
    from nicwatch.config import build
    from nicwatch.daemon import build_collector
    from nicwatch.sources import ethtool_netlink

    from paths import SYSFS

    def link_modes(**flags: str):
        collector = build_collector(build(None, flags))
        try:
            return collector.link_modes
        finally:
            collector.close()

    assert isinstance(link_modes(), ethtool_netlink.EthtoolNetlink)
    assert link_modes(**{"collector.ethtool_netlink": "false"}) is None
    assert link_modes(**{"path.sysfs": str(SYSFS / "cx7-gen5-healthy")}) is None
    # A kernel without the ethtool family: sysfs, as before.
    monkeypatch.setattr(ethtool_netlink.EthtoolNetlink, "family_name", "nicwatch-no-such-family")
    assert link_modes() is None
