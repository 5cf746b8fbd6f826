"""The receive path between two polls: how each NIC's packets spread over its receive
queues, which CPUs took its interrupts, and the busiest queue's share over the peak window.

Everything is computed with normalize.rxpath from the Samples of consecutive polls (the
per-queue packet counters and the per-CPU interrupt counts of the Reading); this consumer
keeps the previous poll of each interface and the per-poll shares of the peak window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.model import ExtraFamily, Irq, Labels, Sample, SeriesKey
from nicwatch.normalize.rxpath import (
    IRQ_INFO,
    MIN_WINDOW_PACKETS,
    Balance,
    QueueCpus,
    balance,
    cpulist,
    irq_deltas,
    queue_counts,
    queue_cpus,
    queue_deltas,
    queues_in_use,
)

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample


KNOWN_QUEUE_SERIES = 1 << 16  # queue numbers remembered at most (then forgotten at once)


@dataclass(frozen=True, slots=True)
class PeakWindow:
    """One interface between two polls. ``balance``: None without enough packets or queue
    counters; ``irq_cpus``: queue -> CPUs that took its interrupts (None: counts not read);
    ``moved``: queue interrupts taken outside the effective affinity known before."""

    seconds: float
    balance: Balance | None
    irq_cpus: Mapping[int, tuple[int, ...]] | None
    moved: int | None

    def cpus_of(self, queue: int) -> QueueCpus:
        """Where a queue was served in this window: the CPUs that took its interrupts, else
        what its affinity and RPS say."""
        shares = self.balance.shares if self.balance is not None else ()
        known = next((s.cpus for s in shares if s.queue == queue), QueueCpus())
        took = (self.irq_cpus or {}).get(queue)
        return QueueCpus(took, known.rps) if took else known


@dataclass(slots=True)
class _Last:
    ifindex: int | None
    monotonic: float
    queues: dict[int, int]
    irqs: tuple[Irq, ...]
    effective: dict[int, tuple[int, ...]]  # irq -> effective affinity at that poll


def _queue_irqs(gauges: Mapping[SeriesKey, float]) -> dict[int, int]:
    """irq -> receive queue, from nic_irq_info (tx-only interrupts left out)."""
    out = {}
    for key in gauges:
        if key.metric == IRQ_INFO:
            labels = dict(key.labels)
            if labels.get("queue", "").isdigit() and labels.get("kind") != "tx":
                out[int(labels["irq"])] = int(labels["queue"])
    return out


def window(prev: _Last | None, sample: Sample,
           known: dict[SeriesKey, int | None] | None = None) -> tuple[PeakWindow | None, _Last]:
    """The window from ``prev`` to ``sample`` (None on the first poll or after the
    interface was replaced) and what to keep for the next. ``known``: queue numbers of
    series seen before (normalize.rxpath.queue_counts)."""
    rx = sample.reading.rxpath
    irqs = rx.irqs if rx is not None else ()
    counts = queue_counts(sample.counters, known)
    last = _Last(sample.identity.ifindex, sample.monotonic, counts, irqs,
                 {i.irq: i.effective or () for i in irqs})
    if prev is None or prev.ifindex != sample.identity.ifindex or \
            sample.monotonic <= prev.monotonic:
        return None, last
    gauges = sample.gauges
    deltas = queue_deltas(prev.queues, counts) if counts else None
    # an idle window (too few packets: balance() is None) costs no scan of the gauges
    spread = None if deltas is None or sum(n for n in deltas.values() if n > 0) < max(
        1, MIN_WINDOW_PACKETS) else balance(deltas, queues_in_use(gauges, len(counts)),
                                            queue_cpus(gauges))
    irq_cpus: dict[int, tuple[int, ...]] | None = None
    moved: int | None = None
    if irqs and prev.irqs:
        taken = irq_deltas(prev.irqs, irqs)
        queue_of = _queue_irqs(gauges)
        if taken:
            by_queue: dict[int, set[int]] = {}
            moved = 0
            for irq, per_cpu in taken.items():
                queue = queue_of.get(irq)
                if queue is None:
                    continue
                cpus = {cpu for cpu, n in per_cpu.items() if n}
                by_queue.setdefault(queue, set()).update(cpus)
                before = prev.effective.get(irq, ())
                if before and cpus - set(before):
                    moved += 1
            irq_cpus = {q: tuple(sorted(c)) for q, c in by_queue.items()}
    return PeakWindow(sample.monotonic - prev.monotonic, spread, irq_cpus, moved), last


class QueueSpread(BaseConsumer):
    """A :class:`~nicwatch.consumers.Consumer`: per interface, the last window's queue
    spread, the busiest queue and its CPUs, stacked busy queues, the CPUs that took the
    queue interrupts and those that moved; and the busiest share's peak over the peak
    window (``--rates.peak-window``)."""

    def __init__(self, peak_window: float = 60.0) -> None:
        self.peak_window = peak_window
        self._last: dict[str, _Last] = {}
        self._peaks: dict[str, deque[tuple[float, float, float]]] = {}
        self.windows: dict[str, PeakWindow] = {}
        self._families: list[ExtraFamily] = []
        self._queue_of: dict[SeriesKey, int | None] = {}  # a queue series' queue number

    @classmethod
    def open(cls, config: Config, host: object = None,
             services: Services | None = None) -> QueueSpread:
        consumer = cls(config.rates_peak_window)
        if services is not None:
            services.receive_path = consumer
        return consumer

    def reconfigure(self, config: Config) -> None:
        self.peak_window = config.rates_peak_window

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self.update(result.samples)

    def update(self, samples: Sequence[Sample]) -> None:
        windows: dict[str, PeakWindow] = {}
        last: dict[str, _Last] = {}
        if len(self._queue_of) > KNOWN_QUEUE_SERIES:  # interfaces came and went
            self._queue_of.clear()
        for sample in samples:
            device = sample.identity.device
            prev = self._last.get(device)
            win, last[device] = window(prev, sample, self._queue_of)
            if prev is not None and prev.ifindex != sample.identity.ifindex:
                self._peaks.pop(device, None)
            if win is not None:
                windows[device] = win
                peaks = self._peaks.setdefault(device, deque())
                if win.balance is not None:
                    peaks.append((sample.monotonic, win.balance.busiest.share,
                                  win.balance.ratio))
                while peaks and peaks[0][0] < sample.monotonic - self.peak_window:
                    peaks.popleft()
        self._last = last
        self._peaks = {d: p for d, p in self._peaks.items() if d in last}
        self.windows = windows
        self._families = self._build()

    def peak(self, device: str) -> tuple[float, float] | None:
        """(busiest share, imbalance ratio), each the highest within the peak window."""
        peaks = self._peaks.get(device)
        if not peaks:
            return None
        return max(p[1] for p in peaks), max(p[2] for p in peaks)

    def _build(self) -> list[ExtraFamily]:
        share: list[tuple[Labels, float]] = []
        ratio: list[tuple[Labels, float]] = []
        busiest: list[tuple[Labels, float]] = []
        stacked: list[tuple[Labels, float]] = []
        cpus: list[tuple[Labels, float]] = []
        moved: list[tuple[Labels, float]] = []
        for device in sorted(self.windows):
            win = self.windows[device]
            dev: Labels = (("device", device),)
            spread = win.balance
            if spread is not None:
                share.append((dev + (("window", "poll"),), spread.busiest.share))
                ratio.append((dev + (("window", "poll"),), spread.ratio))
                top = spread.busiest
                served = win.cpus_of(top.queue).cpus
                busiest.append((dev + (("queue", str(top.queue)), ("cpus", cpulist(served))),
                                top.share))
                stacked.append((dev, float(spread.most_stacked)))
            peak = self.peak(device)
            if peak is not None:
                share.append((dev + (("window", "peak"),), peak[0]))
                ratio.append((dev + (("window", "peak"),), peak[1]))
            if win.irq_cpus is not None:
                cpus.append((dev, float(len({c for cs in win.irq_cpus.values() for c in cs}))))
            if win.moved is not None:
                moved.append((dev, float(win.moved)))
        return [metrics.extra(metrics.RX_QUEUE_BUSIEST_SHARE, tuple(share)),
                metrics.extra(metrics.RX_QUEUE_IMBALANCE, tuple(ratio)),
                metrics.extra(metrics.RX_QUEUE_BUSIEST, tuple(busiest)),
                metrics.extra(metrics.RX_CPU_BUSY_QUEUES, tuple(stacked)),
                metrics.extra(metrics.IRQ_CPUS, tuple(cpus)),
                metrics.extra(metrics.IRQS_MOVED, tuple(moved))]

    def families(self) -> list[ExtraFamily]:
        return self._families

