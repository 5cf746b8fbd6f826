"""Diagnosis as a consumer: every poll, the signature table evaluated per interface over the
last ``window`` seconds of tracked polls (docs/diagnosis.md).

Each poll adds one step per interface: the increase of every counter series the signatures
read (the tracker's extended values; a series the tracker saw reset adds nothing), the
interface's RDMA ports' counters (labelled by rdma_device and port), and the gauges the
signatures read, with the receive path's signals computed here from the same poll (serving
CPUs' softirq share, the busiest queue, how many NAPI instances run in threads) and the
configured [[consistent]] groups' results. An RDMA port no polled interface carries (an
InfiniBand port has no netdev; RoCE over a bond left out of the selection) has steps of its
own, under its netdev's name or else ``mlx5_0/1``. The steps within the window make a
:class:`~nicwatch.consumers.diagnosis.engine.Window`; the one
:func:`~nicwatch.consumers.diagnosis.engine.evaluate` names what holds. Exported: ``nic_diagnosis``
and ``nic_diagnosis_since_timestamp_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.consumers.checks import (
    CONSISTENT_PREFIX,
    CheckReport,
    ExpectationChecks,
    Expectations,
    expectations_of,
    violation_series,
)
from nicwatch.consumers.checks import evaluate as evaluate_checks
from nicwatch.consumers.diagnosis.engine import Verdict, Window, evaluate
from nicwatch.consumers.diagnosis.quantities import NAPI_THREADED
from nicwatch.consumers.diagnosis.windows import COUNTERS, WINDOW, Recent, Step, gauges_of
from nicwatch.consumers.queue_spread import QueueSpread
from nicwatch.consumers.softirq import SoftirqLoad
from nicwatch.model import ExtraFamily, Labels, NetdevQueues, RdmaSample, SeriesKey
from nicwatch.normalize.rxpath import cpulist

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample


class Diagnosis(BaseConsumer):
    """A :class:`~nicwatch.consumers.Consumer`: the verdicts of the last poll
    (``verdicts``), and since when each has held."""

    def __init__(self, expectations: Expectations | None = None,
                 window: float = WINDOW, softirq: SoftirqLoad | None = None,
                 receive_path: QueueSpread | None = None,
                 checks: ExpectationChecks | None = None) -> None:
        groups = expectations.groups if expectations is not None else ()
        self._drift = Expectations(groups=groups)
        # The daemon's checks consumer evaluates every expectation each poll before this
        # one: its [[consistent]] results are read, not evaluated a second time. Alone
        # (nicwatch diagnose, tests) the consumer evaluates the groups itself.
        self._checks = checks
        self.recent = Recent(window)
        self._last: dict[str, tuple[float, int | None, dict[SeriesKey, float]]] = {}
        # The daemon's softirq and receive-path consumers (Services), which observe each
        # poll before this one: their shares and windows are read, not computed again.
        # Alone (nicwatch diagnose, tests) the consumer feeds its own.
        self._feed_softirq = softirq is None
        self._softirq = softirq if softirq is not None else SoftirqLoad()
        self._feed_rx = receive_path is None
        self._rxpath = receive_path if receive_path is not None else QueueSpread()
        self._since: dict[tuple[str, str, str], float] = {}
        # device -> (series, gauges) of its last window when every increase in it was 0 and
        # nothing held on it: a quiet interface (most of a host with thousands)
        self._quiet: dict[str, tuple[frozenset[SeriesKey], dict[SeriesKey, float]]] = {}
        self.skipped = 0  # windows not evaluated again, in all (quiet and unchanged)
        self.verdicts: list[Verdict] = []
        self._families: list[ExtraFamily] = self._build()

    @classmethod
    def open(cls, config: Config, host: object = None,
             services: Services | None = None) -> Diagnosis:
        return cls(expectations_of(config),
                   softirq=services.softirq if services is not None else None,
                   receive_path=services.receive_path if services is not None else None,
                   checks=services.checks if services is not None else None)

    def reconfigure(self, config: Any) -> None:
        self._drift = Expectations(groups=expectations_of(config).groups)

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self.update(result, tracked, time.time())

    def update(self, result: PollResult, tracked: Sequence[TrackedSample],
               wall: float) -> list[Verdict]:
        samples = result.samples
        softirq = result.host.softirq_seconds
        if self._feed_softirq and softirq is not None and samples:
            self._softirq.update(samples[0].monotonic, softirq)
        if self._feed_rx:
            self._rxpath.update(samples)
        rdma: dict[str, list[RdmaSample]] = {}
        for port in result.rdma:
            if port.netdev:
                rdma.setdefault(port.netdev, []).append(port)
        drift: dict[str, dict[SeriesKey, float]] = {}
        if self._drift:
            for name, labels, value in violation_series(self._group_report(result)):
                d = dict(labels)
                device = d.pop("device", "")
                drift.setdefault(device, {})[SeriesKey(name, tuple(sorted(d.items())))] = value
        windows = []
        for t in tracked:
            sample = t.sample
            device = sample.identity.device
            # Every value is kept as the next step's base; an increase counts only where the
            # tracker has a rate (none across a reset, none on a first reading).
            values = {k: tr.value for k, tr in t.counters.items() if k.metric in COUNTERS}
            fresh = {k for k, tr in t.counters.items() if tr.rate is None}
            for port in rdma.get(device, ()):
                values.update(_rdma_values(port))
            gauges = gauges_of(sample.gauges)
            for port in rdma.get(device, ()):
                gauges.update(gauges_of(port.gauges))
            gauges.update(self._receive_path(device, sample))
            gauges.update(drift.get(device, {}))
            window = self._step(device, sample.monotonic, sample.identity.ifindex, values,
                                fresh, gauges, wall, sample.identity.pci_address)
            if window is not None:
                windows.append(window)
        present = {t.sample.identity.device for t in tracked}
        # RDMA ports no polled interface carries (an InfiniBand HCA's ports have no netdev;
        # RoCE over a bond the selection leaves out): each is diagnosed on its own, under its
        # netdev's name where it has one, else as `rdma link` names it ("mlx5_0/1").
        alone: dict[str, list[RdmaSample]] = {}
        for port in result.rdma:
            if not port.netdev or port.netdev not in present:
                alone.setdefault(port.netdev or port.key, []).append(port)
        for device, ports in alone.items():
            values = {k: v for port in ports for k, v in _rdma_values(port).items()}
            gauges = {k: v for port in ports for k, v in gauges_of(port.gauges).items()}
            window = self._step(device, max(p.monotonic for p in ports), None, values, set(),
                                gauges, wall)
            if window is not None:
                windows.append(window)
        present |= alone.keys()
        self.recent.keep(present)
        self._last = {d: v for d, v in self._last.items() if d in present}
        verdicts = evaluate(windows)
        held = {v.device for v in verdicts}
        for w in windows:
            if w.device in held or any(w.deltas.values()):  # peaks are increases too
                self._quiet.pop(w.device, None)
            else:
                self._quiet[w.device] = (frozenset(w.deltas), dict(w.gauges))
        self._quiet = {d: q for d, q in self._quiet.items() if d in present}
        since: dict[tuple[str, str, str], float] = {}
        out = []
        from dataclasses import replace
        for v in verdicts:
            key = (v.device, v.signature, v.scope_value)
            since[key] = self._since.get(key, wall)
            out.append(replace(v, since=since[key]))
        self._since = since
        self.verdicts = out
        self._families = self._build()
        return out

    def _group_report(self, result: PollResult) -> CheckReport:
        """The [[consistent]] groups' results of this poll: the checks consumer's when the
        daemon runs one (it observed the poll first), else evaluated here."""
        report = self._checks.report_of(result) if self._checks is not None else None
        if report is None:
            return evaluate_checks(self._drift, result.samples)
        return CheckReport(tuple(r for r in report.results
                                 if r.check.startswith(CONSISTENT_PREFIX)), (), True)

    def _step(self, device: str, monotonic: float, ifindex: int | None,
              values: dict[SeriesKey, float], fresh: set[SeriesKey],
              gauges: dict[SeriesKey, float], wall: float,
              pci_address: str | None = None) -> Window | None:
        """Add this poll's step of ``device`` (its counters' increases since its last poll)
        and return its window to evaluate, or None (a first poll, a replaced interface, a
        quiet interface unchanged)."""
        prev = self._last.get(device)
        self._last[device] = (monotonic, ifindex, values)
        if prev is None or prev[1] != ifindex:
            self.recent.reset(device)
            return None
        seconds = monotonic - prev[0]
        if seconds <= 0:
            return None
        before = prev[2]
        increments = {k: v - before[k] for k, v in values.items()
                      if k in before and v >= before[k] and k not in fresh}
        self.recent.add(device, Step(monotonic, wall, seconds, increments, gauges,
                                     pci_address=pci_address))
        if still_quiet(self._quiet.get(device), increments, gauges):
            self.skipped += 1
            return None
        return self.recent.window(device)

    def _receive_path(self, device: str, sample: Any) -> dict[SeriesKey, float]:
        """The serving CPUs' softirq share and the busiest queue, as the receive-path
        consumers export them (the same functions, on the same poll)."""
        out: dict[SeriesKey, float] = {}
        ratios = self._softirq.ratios
        for cpu in sample.rx_cpus:
            if cpu < len(ratios):
                out[SeriesKey(metrics.RX_CPU_SOFTIRQ_RATIO.name, (("cpu", str(cpu)),))] = \
                    ratios[cpu]
        threaded = threaded_napis(sample.reading.queues)
        if threaded is not None:
            out[SeriesKey(NAPI_THREADED)] = float(threaded)
        win = self._rxpath.windows.get(device)
        if win is not None and win.balance is not None:
            top = win.balance.busiest
            out[SeriesKey(metrics.RX_QUEUE_IMBALANCE.name, (("window", "poll"),))] = \
                win.balance.ratio
            out[SeriesKey(metrics.RX_QUEUE_BUSIEST.name, (
                ("cpus", cpulist(win.cpus_of(top.queue).cpus)),
                ("queue", str(top.queue))))] = top.share
        return out

    def _build(self) -> list[ExtraFamily]:
        held: list[tuple[Labels, float]] = []
        since: list[tuple[Labels, float]] = []
        for v in self.verdicts:
            labels = series_labels(v)
            held.append((labels, 1.0))
            since.append((labels, v.since if v.since is not None else 0.0))
        return [metrics.extra(metrics.DIAGNOSIS, tuple(held)),
                metrics.extra(metrics.DIAGNOSIS_SINCE, tuple(since))]

    def families(self) -> list[ExtraFamily]:
        return self._families


def threaded_napis(queues: NetdevQueues | None) -> int | None:
    """How many of the interface's NAPI instances run in threads (napi-get's pid: threaded
    NAPI, /sys/class/net/<dev>/threaded); None where napi-get was not read."""
    if queues is None or queues.napis is None:
        return None
    return sum(1 for n in queues.napis if n.pid is not None)


def _rdma_values(port: RdmaSample) -> dict[SeriesKey, float]:
    """The port's counters the signatures read (a saturated PortCounter is no count)."""
    return {k: cv.value for k, cv in port.counters.items()
            if k.metric in COUNTERS and not cv.saturated}


def still_quiet(quiet: tuple[frozenset[SeriesKey], dict[SeriesKey, float]] | None,
                increments: Mapping[SeriesKey, float], gauges: Mapping[SeriesKey, float]
                ) -> bool:
    """Whether an interface's window, with this step added, evaluates as its last one did,
    to nothing: the last window had every increase 0 and held nothing (``quiet``: its
    series and gauges), and this step increases the same series by 0 with the same gauges.
    The window then has the same series, all 0 (each step in it has them: the steps before
    kept it quiet), and the same gauges, so every quantity is as before (a rate is 0
    whatever the window's length). At 2,000 idle interfaces the signatures were evaluated
    on every one of them each poll."""
    return (quiet is not None and quiet[0] == increments.keys()
            and not any(increments.values()) and gauges == quiet[1])


def series_labels(v: Verdict) -> Labels:
    return (("device", v.device), ("signature", v.signature),
            ("priority", v.scope_value if v.scope == "priority" else ""),
            ("lane", v.scope_value if v.scope == "lane" else ""))
