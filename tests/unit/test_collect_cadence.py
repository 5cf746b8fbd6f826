"""The daemon's collector reads PCIe paths (link files, AER) at most every PCIE_REFRESH
seconds: a poll inside that window reuses the last reading, a poll after it sees a
retrained link. A fixture tree shaped like the kernel's (tests/fixtures/sysfs/mlx5-rdma)."""

from __future__ import annotations

import shutil
import time

from paths import SYSFS

from nicwatch import collect
from nicwatch.collect import PCIE_REFRESH, Collector, Selection

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
