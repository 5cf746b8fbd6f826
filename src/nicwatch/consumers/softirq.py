"""Softirq load on the CPUs local to each NIC, and on the CPUs that serve it.

Receive processing for a NIC runs in softirq context on the CPUs its interrupts go to (and
the CPUs RPS hands its packets to). When one of those cores is saturated the NIC's rings
fill, and out-of-buffer drops and sent PAUSE frames follow, so the share of time in softirq
is exported next to them. Per-CPU softirq times come from sources.host (psutil, /proc/stat);
a NIC's local CPUs from its PCI function's local_cpulist, the CPUs serving it from its
receive path reading (Sample.rx_cpus: effective affinity of its interrupts, RPS masks).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.model import ExtraFamily, Sample

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample


class SoftirqLoad(BaseConsumer):
    """A :class:`~nicwatch.consumers.Consumer` of the host-wide per-CPU softirq read
    (``result.host.softirq_seconds``, from sources.host.SoftirqSource)."""

    def __init__(self) -> None:
        self._last: tuple[float, tuple[float, ...]] | None = None
        self.ratios: tuple[float, ...] = ()
        self._samples: Sequence[Sample] = ()
        self._tracked: Sequence[TrackedSample] = ()

    @classmethod
    def open(cls, config: Config, host: object = None,
             services: Services | None = None) -> SoftirqLoad:
        load = cls()
        if services is not None:
            services.softirq = load
        return load

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self._samples = result.samples
        self._tracked = tracked
        softirq = result.host.softirq_seconds
        if softirq is not None:
            self.update(time.monotonic(), softirq)

    def families(self) -> list[ExtraFamily]:
        return [self.family(self._samples), *self.serving_families(self._samples),
                *self.squeezed_families(self._tracked)]


    def update(self, monotonic: float, softirq: tuple[float, ...]) -> None:
        last, self._last = self._last, (monotonic, softirq)
        if last is None or monotonic <= last[0] or len(softirq) != len(last[1]):
            self.ratios = ()
            return
        dt = monotonic - last[0]
        self.ratios = tuple(min(1.0, max(0.0, (now - then) / dt))
                            for now, then in zip(softirq, last[1], strict=False))

    def family(self, samples: Sequence[Sample]) -> ExtraFamily:
        series = []
        for s in sorted(samples, key=lambda s: s.identity.device):
            local = [self.ratios[c] for c in s.local_cpus or () if c < len(self.ratios)]
            if local:
                dev = (("device", s.identity.device),)
                series += [(dev + (("stat", "max"),), max(local)),
                           (dev + (("stat", "mean"),), sum(local) / len(local))]
        return metrics.extra(metrics.SOFTIRQ_RATIO, tuple(series))

    def serving_families(self, samples: Sequence[Sample]) -> list[ExtraFamily]:
        """The share of the CPUs serving each NIC: max and mean, and each CPU's own (for
        joining with its time_squeeze counter)."""
        summary: list[tuple[tuple[tuple[str, str], ...], float]] = []
        per_cpu: list[tuple[tuple[tuple[str, str], ...], float]] = []
        for s in sorted(samples, key=lambda s: s.identity.device):
            cpus = [c for c in s.rx_cpus if c < len(self.ratios)]
            if not cpus:
                continue
            dev = (("device", s.identity.device),)
            values = [self.ratios[c] for c in cpus]
            summary += [(dev + (("stat", "max"),), max(values)),
                        (dev + (("stat", "mean"),), sum(values) / len(values))]
            per_cpu += [(dev + (("cpu", str(c)),), v) for c, v in zip(cpus, values, strict=True)]
        return [metrics.extra(metrics.IRQ_CPU_SOFTIRQ_RATIO, tuple(summary)),
                metrics.extra(metrics.RX_CPU_SOFTIRQ_RATIO, tuple(per_cpu))]

    def squeezed_families(self, tracked: Sequence[TrackedSample]) -> list[ExtraFamily]:
        """Per NIC, over the last two polls: the highest softirq share of its serving CPUs
        whose time_squeeze rose, and how many of them ran out of budget or dropped from
        their backlog (the per-CPU series summarised a port: docs/receive-path.md)."""
        share: list[tuple[tuple[tuple[str, str], ...], float]] = []
        squeezed: list[tuple[tuple[tuple[str, str], ...], float]] = []
        dropping: list[tuple[tuple[tuple[str, str], ...], float]] = []
        for ts in sorted(tracked, key=lambda t: t.sample.identity.device):
            rose: dict[str, set[int]] = {_SQUEEZE: set(), _DROPPED: set()}
            for key, t in ts.counters.items():
                if key.metric in rose and t.rate is not None and t.rate > 0:
                    cpu = dict(key.labels).get("cpu")
                    if cpu is not None and cpu.isdigit():
                        rose[key.metric].add(int(cpu))
            dev = (("device", ts.sample.identity.device),)
            cpus = [c for c in ts.sample.rx_cpus if c < len(self.ratios)]
            if cpus:
                share.append((dev, max((self.ratios[c] for c in cpus if c in rose[_SQUEEZE]),
                                       default=0.0)))
            if ts.sample.rx_cpus:
                squeezed.append((dev, float(len(rose[_SQUEEZE]))))
                dropping.append((dev, float(len(rose[_DROPPED]))))
        return [metrics.extra(metrics.RX_CPU_SQUEEZED_SOFTIRQ, tuple(share)),
                metrics.extra(metrics.RX_CPUS_SQUEEZED, tuple(squeezed)),
                metrics.extra(metrics.RX_CPUS_DROPPING, tuple(dropping))]


_SQUEEZE, _DROPPED = metrics.RX_CPU_TIME_SQUEEZE.name, metrics.RX_CPU_DROPPED.name
