"""The softirq column of /proc/stat in a procfs tree (--path.procfs, the demo's simulation):
per CPU, in seconds of USER_HZ ticks; without the file, this host's (psutil) as before."""

from __future__ import annotations

import os
from pathlib import Path

from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.host import SoftirqSource, stat_softirq_seconds

# The first lines of /proc/stat on this project's development VM (Linux 6.18.44, 2 CPUs):
# cpuN user nice system idle iowait irq softirq steal guest guest_nice (fs/proc/stat.c).
STAT = """cpu  908236 681 688269 604927 24610 0 17809 7116 0 0
cpu0 435040 341 324420 351536 8992 0 1457 2811 0 0
cpu1 473195 339 363849 253391 15618 0 16352 4305 0 0
intr 28380858 0 0 0
ctxt 51203349
btime 1764640000
"""


def test_the_softirq_column_per_cpu_in_seconds() -> None:
    assert stat_softirq_seconds(STAT, 100) == (14.57, 163.52)
    # an offline CPU has no line: 0 until it has one, never a shifted index
    assert stat_softirq_seconds(STAT.replace("cpu0 ", "cpu2 "), 100) == (0.0, 163.52, 14.57)
    assert stat_softirq_seconds("intr 1 2 3", 100) == ()


def test_a_tree_is_read_and_without_its_file_the_host_is(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(STAT)
    source = SoftirqSource.open(SourceOptions(procfs=str(tmp_path)))
    poll = Poll(())
    source.read(poll)
    hz = os.sysconf("SC_CLK_TCK")
    assert poll.host["softirq_seconds"] == (1457 / hz, 16352 / hz)
    empty = SoftirqSource.open(SourceOptions(procfs=str(tmp_path / "none")))
    poll = Poll(())
    empty.read(poll)
    assert len(poll.host["softirq_seconds"]) == os.cpu_count()
