"""What the receive path source costs per poll on a large host; prints one JSON document.

  python benchmarks/rxpath.py [ROUNDS]

A fixture host in the kernel's formats (tests/helpers/fixture_rxpath.py): 256 CPUs on two
nodes, two ConnectX-7 ports with 64 channels each (65 vectors per port, as mlx5 allocates
one completion vector per channel plus the async one) and 200 other interrupts (NVMe and
the like), so /proc/interrupts has 330 lines of 256 counts. Per poll
(CPU time of this process, ``time.process_time``, median of 5 batches):

* ``steady``: the counts only (/sys/kernel/irq/<n>/per_cpu_count of each NIC vector, kept
  open and re-read with pread as on the live /sys, and softnet_stat), the layout within its
  refresh (collect.RXPATH_REFRESH);
* ``layout``: the first poll: names, affinities, RPS masks and NUMA nodes as well;
  ``layout_refresh``: a poll that re-reads the layout (every collect.RXPATH_REFRESH) while
  the names and affinities are kept (collect.RXPATH_AFFINITY_SAFETY);
* ``busy``: as ``steady``, with every count moving between polls (each NIC vector took
  interrupts on its CPU, every CPU's softnet line moved), as on a loaded host; the files
  are rewritten between polls, outside the time measured (median of ``ROUNDS`` x 5 polls);
* ``proc_only``: the counts from /proc/interrupts (a kernel without /sys/kernel/irq).

Also printed: the load average when it ran (the development machine is shared).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from timing import per_call

from nicwatch.sources import Poll
from nicwatch.sources.interrupts import InterruptSource
from nicwatch.sources.sysfs_net import read_netclass

from fixture_rxpath import FixtureHost, FixtureIrq, build, mlx5_nic, write_counts

CPUS = 256
NAMES = ("ens1f0np0", "ens1f1np1")


def per_poll_moving(fn: Callable[[], object], move: Callable[[], object],
                    rounds: int) -> float:
    """Median CPU seconds of ``fn`` over ``5 * rounds`` calls, ``move`` before each one
    (not timed)."""
    times = []
    for _ in range(5 * rounds):
        move()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def host() -> FixtureHost:
    nodes = {0: tuple(range(128)), 1: tuple(range(128, 256))}
    nics = [mlx5_nic("ens1f0np0", "0000:17:00.0", 1, tuple(range(128, 192)), 300, 64, 4),
            mlx5_nic("ens1f1np1", "0000:17:00.1", 1, tuple(range(192, 256)), 500, 64, 5)]
    for nic in nics:
        for i, irq in enumerate(nic.irqs):
            irq.counts = {irq.effective[0]: 1000 * i + 7}
    others = [FixtureIrq(40 + i, f"nvme{i // 64}q{i % 64}", (i % CPUS,), (i % CPUS,),
                         {i % CPUS: 123456}) for i in range(200)]
    return FixtureHost(CPUS, nodes, nics, other_irqs=others)


def measure(root: Path, sys_kernel_irq: bool, rounds: int) -> dict[str, float]:
    fixture = host()
    sysfs, procfs = build(fixture, root, sys_kernel_irq)
    netclasses = [read_netclass(sysfs, n) for n in NAMES]

    def poll(src: InterruptSource) -> None:
        src.read(Poll(list(netclasses)))

    # per_cpu_count kept open and re-read with pread, as on the live /sys (the fixture's
    # files are rewritten in place, so a pread at 0 sees the new text as sysfs's show()
    # would); a source without keep_open (an older checkout, for before/after) reads as is
    try:
        cached = InterruptSource(sysfs, procfs, refresh=3600.0, keep_open=True)
    except TypeError:
        cached = InterruptSource(sysfs, procfs, refresh=3600.0)
    poll(cached)
    def move() -> None:
        for nic in fixture.nics:
            for irq in nic.irqs:
                cpu = irq.effective[0]
                irq.counts[cpu] = irq.counts.get(cpu, 0) + 997
        for cpu in range(CPUS):
            row = fixture.softnet.setdefault(cpu, [0, 0, 0, 0, 0])
            row[0] += 4099
            row[2] += cpu % 3
        write_counts(fixture, sysfs, procfs, proc_interrupts=not sys_kernel_irq)

    out = {"steady_ms": per_call(lambda: poll(cached), rounds) * 1e3,
           "busy_ms": per_poll_moving(lambda: poll(cached), move, rounds) * 1e3,
           "layout_ms": per_call(lambda: poll(InterruptSource(sysfs, procfs, 0.0)),
                                 max(1, rounds // 5)) * 1e3,
           "interrupts_bytes": (procfs / "interrupts").stat().st_size}
    try:  # the layout's refresh without the affinities (kept for their safety period)
        relayout = InterruptSource(sysfs, procfs, 0.0, safety=3600.0, keep_open=True)
    except TypeError:  # an older checkout: every layout read reads the affinities
        relayout = None
    if relayout is not None:
        poll(relayout)
        out["layout_refresh_ms"] = per_call(lambda: poll(relayout), rounds) * 1e3
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        out = {"cpus": CPUS, "nic_vectors": 2 * 65, "other_irqs": 200,
           "load_average": [round(x, 2) for x in os.getloadavg()],
               "sys_kernel_irq": measure(Path(tmp) / "a", True, rounds),
               "proc_only": measure(Path(tmp) / "b", False, rounds)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
