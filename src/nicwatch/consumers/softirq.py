"""Softirq load on the CPUs local to each NIC.

Receive processing for a NIC runs in softirq context on the CPUs its interrupts go to. When
one of those cores is saturated the NIC's rings fill, and out-of-buffer drops and sent PAUSE
frames follow, so the share of time in softirq is exported next to them. Per-CPU softirq
times come from sources.host (psutil, /proc/stat); a NIC's local CPUs from its PCI function's
local_cpulist.
"""

from __future__ import annotations

from collections.abc import Sequence

from nicwatch.model import ExtraFamily, Sample

HELP = ("Share of time the CPUs local to this NIC (its PCI function's local_cpulist) spent in "
        "softirq between the last two polls: stat=max is the busiest such CPU, stat=mean "
        "their average. A max near 1 means the core serving receive work is saturated.")


class SoftirqLoad:
    def __init__(self) -> None:
        self._last: tuple[float, tuple[float, ...]] | None = None
        self.ratios: tuple[float, ...] = ()

    def update(self, monotonic: float, softirq: tuple[float, ...]) -> None:
        last, self._last = self._last, (monotonic, softirq)
        if last is None or monotonic <= last[0] or len(softirq) != len(last[1]):
            self.ratios = ()
            return
        dt = monotonic - last[0]
        self.ratios = tuple(min(1.0, max(0.0, (now - then) / dt))
                            for now, then in zip(softirq, last[1]))

    def family(self, samples: Sequence[Sample]) -> ExtraFamily:
        series = []
        for s in sorted(samples, key=lambda s: s.identity.device):
            path = s.reading.pcie
            cpus = path.hops[0].local_cpus if path and path.hops else None
            local = [self.ratios[c] for c in cpus or () if c < len(self.ratios)]
            if local:
                dev = (("device", s.identity.device),)
                series += [(dev + (("stat", "max"),), max(local)),
                           (dev + (("stat", "mean"),), sum(local) / len(local))]
        return ExtraFamily("nic_local_cpu_softirq_ratio", "gauge", HELP, tuple(series))
