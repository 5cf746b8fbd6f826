"""The daemon's collector reads PCIe paths (link files, AER) at most every PCIE_REFRESH
seconds: a poll inside that window reuses the last reading, a poll after it sees a
retrained link. A fixture tree shaped like the kernel's (tests/fixtures/sysfs/mlx5-rdma)."""

from __future__ import annotations

import shutil
import time

import pytest

from nicwatch import collect
from nicwatch.collect import PCIE_REFRESH, Collector, Selection

from netns import make_veth_pair, ns_python
from paths import SYSFS

ENDPOINT = "devices/pci0000:20/0000:20:03.1/0000:21:00.0"


def widths(collector: Collector) -> set:
    return {s.reading.pcie.hops[0].link.current_width for s in collector.poll().samples
            if s.reading.pcie is not None}


def test_a_retrained_link_shows_within_one_default_interval(tmp_path, monkeypatch):
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    now = [time.monotonic()]
    monkeypatch.setattr(collect.time, "monotonic", lambda: now[0])
    cadenced = Collector(root, Selection(include=".*"), pcie_refresh=PCIE_REFRESH)
    every_poll = Collector(root, Selection(include=".*"))
    assert widths(cadenced) == widths(every_poll) == {16}
    (root / ENDPOINT / "current_link_width").write_text("8\n")  # the link retrained at x8
    now[0] += 1.0  # a poll at a 1 s interval: the cached path, read 1 s ago
    assert widths(cadenced) == {16} and widths(every_poll) == {8}
    now[0] += PCIE_REFRESH - 1.0  # one default interval after the last read
    assert widths(cadenced) == {8}


# In the namespace: the collector's reads of the speed and duplex files, counted by wrapping
# sysfs_net.link_mode, and what the files say at each poll; the collector's clock is a list
# the snippet advances.
LINK_MODE = """
import json, subprocess
from nicwatch.collect import PCIE_REFRESH, Collector, Selection
from nicwatch.sources import sysfs_net
from nicwatch.sources.rtnetlink import RtNetlink

reads = []
read = sysfs_net.link_mode
sysfs_net.link_mode = lambda root, name: reads.append(name) or read(root, name)
now = [1000.0]
c = Collector("/sys", Selection(include=%(iface)r), rtnetlink=RtNetlink(),
              pcie_refresh=PCIE_REFRESH, monotonic=lambda: now[0])
out = []
def poll(step):
    nc = c.poll().samples[0].reading.netclass
    out.append([step, len(reads), nc.speed_mbps, nc.duplex, read("/sys", %(iface)r)])
poll("first")
now[0] += 1.0
poll("1 s later, link unchanged")
subprocess.run(["ip", "link", "set", %(iface)r, "down"], check=True)
poll("link down")
subprocess.run(["ip", "link", "set", %(iface)r, "up"], check=True)
poll("link up again")
now[0] += PCIE_REFRESH
poll("one default interval later")
c.close()
print(json.dumps(out))
"""


@pytest.mark.netns
def test_speed_and_duplex_are_reread_on_a_link_change_and_within_one_default_interval():
    pair = make_veth_pair(subnet=87)
    try:
        got = ns_python(pair.ns_a, LINK_MODE % {"iface": pair.a})
    finally:
        pair.delete()
    reads = [n for _, n, *_ in got]
    # Read at the first poll, not again while the link stays as it was, again after each
    # change of its state and once the last reading is one default interval old.
    assert [b - a for a, b in zip([0, *reads], reads, strict=False)] == [1, 0, 1, 1, 1], got
    for step, _, speed, duplex, (file_speed, file_duplex) in got:
        assert (speed, duplex) == (file_speed, file_duplex), step


def test_the_daemon_reads_the_receive_path_layout_every_rxpath_refresh_or_not_at_all():
    """--collector.receive-path reaches the sources: on (the default), the receive path and
    netdev netlink sources reuse the layout for RXPATH_REFRESH seconds; off, neither opens."""
    from nicwatch.collect import RXPATH_REFRESH
    from nicwatch.config import build
    from nicwatch.daemon import build_collector

    def rxpath_sources(**flags: str) -> dict[str, float]:
        collector = build_collector(build(None, {"path.sysfs": str(SYSFS / "mlx5-rdma"),
                                                 **flags}))
        try:
            return {s.name: getattr(s, "refresh", None) for s in collector.sources
                    if s.name in ("rxpath", "netdev_genl")}
        finally:
            collector.close()

    on = rxpath_sources()
    assert on["rxpath"] == RXPATH_REFRESH == 30.0
    assert set(on) <= {"rxpath", "netdev_genl"}
    assert rxpath_sources(**{"collector.receive_path": "false"}) == {}
