"""The daemon's collector reads a PCIe path's AER counts and power state at most every
PCIE_REFRESH seconds, and its link attributes and identity only when the interface's link
state or ifindex changed (what a uevent or a retrain with the port leaves) or every
PCIE_LINK_SAFETY seconds: a poll inside those windows reuses the last reading. A fixture
tree shaped like the kernel's (tests/fixtures/sysfs/mlx5-rdma)."""

from __future__ import annotations

import shutil
import time

import pytest

from nicwatch import collect
from nicwatch.collect import PCIE_LINK_SAFETY, PCIE_REFRESH, Collector, Selection

from netns import make_veth_pair, ns_python
from paths import SYSFS

ENDPOINT = "devices/pci0000:20/0000:20:03.1/0000:21:00.0"
NETDEV = f"{ENDPOINT}/net/enp33s0f0np0"
AER_CORRECTABLE = """Receiver Error {n}
Bad TLP 0
Bad DLLP 0
RELAY_NUM Rollover 0
Replay Timer Timeout 0
Advisory Non-Fatal 0
Corrected Internal Error 0
Header Log Overflow 0
TOTAL_ERR_COR {n}
"""


def widths(collector: Collector) -> set:
    return {s.reading.pcie.hops[0].link.current_width for s in collector.poll().samples
            if s.reading.pcie is not None}


def correctable(collector: Collector) -> set:
    return {s.reading.pcie.hops[0].aer.total_correctable for s in collector.poll().samples
            if s.reading.pcie is not None}


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    now = [time.monotonic()]
    monkeypatch.setattr(collect.time, "monotonic", lambda: now[0])
    return root, now


def test_a_link_that_retrains_without_telling_shows_within_the_safety_period(tree):
    root, now = tree
    cadenced = Collector(root, Selection(include=".*"), pcie_refresh=PCIE_REFRESH)
    every_poll = Collector(root, Selection(include=".*"))
    assert widths(cadenced) == widths(every_poll) == {16}
    # The link retrained at x8; the interface's carrier stayed up, no uevent.
    (root / ENDPOINT / "current_link_width").write_text("8\n")
    seen_at = None
    for step in range(1, 30):
        now[0] += PCIE_REFRESH  # polls at the default interval
        assert widths(every_poll) == {8}
        if widths(cadenced) == {8}:
            seen_at = step * PCIE_REFRESH
            break
    # Not at the next poll (that is the saving), and within the documented period.
    assert seen_at is not None and PCIE_REFRESH < seen_at <= PCIE_LINK_SAFETY, seen_at


def test_a_link_state_change_rereads_the_path_at_the_next_poll(tree):
    root, now = tree
    cadenced = Collector(root, Selection(include=".*"), pcie_refresh=PCIE_REFRESH)
    assert widths(cadenced) == {16}
    (root / ENDPOINT / "current_link_width").write_text("8\n")
    now[0] += 1.0  # a poll at a 1 s interval, nothing changed for the interface
    assert widths(cadenced) == {16}
    # The port went down and up again with the retrain: the carrier count moved.
    (root / NETDEV / "carrier_changes").write_text("4\n")
    now[0] += 1.0
    assert widths(cadenced) == {8}


def test_aer_counts_keep_the_pcie_cadence(tree):
    root, now = tree
    cadenced = Collector(root, Selection(include=".*"), pcie_refresh=PCIE_REFRESH)
    assert correctable(cadenced) == {0}
    (root / ENDPOINT / "aer_dev_correctable").write_text(AER_CORRECTABLE.format(n=7))
    now[0] += 1.0
    assert correctable(cadenced) == {0}  # within PCIE_REFRESH: the last reading
    now[0] += PCIE_REFRESH - 1.0  # one default interval after the last read
    assert correctable(cadenced) == {7}
    (root / ENDPOINT / "current_link_width").write_text("8\n")
    now[0] += PCIE_REFRESH
    # the counts again, not the link (nothing said it changed)
    assert widths(cadenced) == {16}


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
    netdev netlink sources reuse the layout for RXPATH_REFRESH seconds, the interrupts'
    affinities for RXPATH_AFFINITY_SAFETY, and a fixture tree's per_cpu_count files are not
    kept open; off, neither opens."""
    from nicwatch.collect import RXPATH_AFFINITY_SAFETY, RXPATH_REFRESH
    from nicwatch.config import build
    from nicwatch.daemon import build_collector

    def rxpath_sources(**flags: str) -> dict[str, float]:
        collector = build_collector(build(None, {"path.sysfs": str(SYSFS / "mlx5-rdma"),
                                                 **flags}))
        try:
            out = {s.name: getattr(s, "refresh", None) for s in collector.sources
                   if s.name in ("rxpath", "netdev_genl")}
            for s in collector.sources:
                if s.name == "rxpath":
                    out["rxpath_safety"] = s.safety
                    out["rxpath_kept_open"] = s._files is not None
            return out
        finally:
            collector.close()

    on = rxpath_sources()
    assert on["rxpath"] == RXPATH_REFRESH == 30.0
    assert on["rxpath_safety"] == RXPATH_AFFINITY_SAFETY == 300.0
    assert on["rxpath_kept_open"] is False  # a fixture tree, not the live /sys
    assert set(on) <= {"rxpath", "netdev_genl", "rxpath_safety", "rxpath_kept_open"}
    assert rxpath_sources(**{"collector.receive_path": "false"}) == {}
