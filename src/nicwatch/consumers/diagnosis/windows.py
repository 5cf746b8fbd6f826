"""Windows for the engine from whatever evidence there is.

* :class:`Recent`: consecutive polls of each interface (the daemon's tracked samples, or the
  polls of a snapshot, record or history file), the steps within the last ``seconds`` kept;
* :func:`from_snapshots`: two snapshots or a series (record, incident, history): every pair
  of consecutive polls diffed with the tracker's wrap rule (snapshot.rows, as snapshot.diff);
* :func:`from_ethtool`: two pasted `ethtool -S` outputs of one interface taken a known
  interval apart, mapped through the driver's table.

A step is one pair of consecutive readings: the increase of each counter series that did
not reset, and the gauges of the later reading. A window sums the steps' increases, keeps
their highest per-step rate (the peak, of the counters in PEAK_COUNTERS: those a signature
reads a peak of) and the newest gauges.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from nicwatch import metrics
from nicwatch.consumers.diagnosis.measures import Window
from nicwatch.consumers.diagnosis.quantities import DIRECTIONS, NAPI_THREADED, READS
from nicwatch.consumers.diagnosis.signatures import SIGNATURES
from nicwatch.model import CounterValue, SeriesKey
from nicwatch.snapshot.records import InterfaceSnapshot, Snapshot
from nicwatch.snapshot.rows import OK, counter_rows
from nicwatch.tracker import advance

WINDOW = 30.0  # seconds of polls a verdict rests on, live (docs/diagnosis.md)

# The counter families a window keeps (others are not): those the signatures' quantities
# declare they read (quantities.READS), and the one a single reading's ratios read besides
# (lifetime_ratios: FEC blocks corrected).
COUNTERS = frozenset({
    name for signature in SIGNATURES for condition in signature.conditions
    for name in READS[condition.quantity]
    if (family := metrics.EXPORTED.get(name)) is not None and family.type == "counter"
} | {metrics.FEC_CORRECTED_BLOCKS.name})
# The counters whose highest per-poll rate a signature reads (quantities._peak: traffic against
# the PCIe ceiling, tx pause per poll for a storm); the others' peaks are not kept.
PEAK_COUNTERS = frozenset({
    metrics.RX_BYTES.name, metrics.TX_BYTES.name, metrics.PHY_RX_BYTES.name,
    metrics.PHY_TX_BYTES.name, metrics.RDMA_RX_BYTES.name, metrics.RDMA_TX_BYTES.name,
    metrics.TX_PAUSE_DURATION_SECONDS.name,
    # XOFF frames a poll: the paused fraction a storm reads where no duration is counted
    metrics.TX_PAUSE_FRAMES.name, metrics.TX_PFC_FRAMES.name, metrics.TX_PFC_TC_FRAMES.name,
    metrics.TX_PAUSE_CTRL_FRAMES.name,
    metrics.TX_PAUSE_XON_FRAMES.name, metrics.TX_PFC_XON_FRAMES.name,
    metrics.TX_PFC_TC_XON_FRAMES.name,
})
GAUGES = frozenset({
    metrics.RING_DESCRIPTORS.name, metrics.RING_MAX_DESCRIPTORS.name,
    metrics.LINK_SPEED_BYTES_PER_SECOND.name,
    metrics.PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND.name, metrics.PFC_ENABLED.name,
    metrics.ROCE_ECN_ENABLED.name, metrics.ROCE_CNP_PRIORITY.name,
    metrics.QOS_DSCP_PRIORITY.name, metrics.QOS_TRUST_INFO.name,
    metrics.RDMA_DEFAULT_ROCE_TOS.name, metrics.RDMA_TRAFFIC_CLASS.name,
    metrics.MODULE_RX_POWER_WATTS.name, metrics.MODULE_RX_POWER_THRESHOLD_WATTS.name,
    metrics.LINK_LANES.name, metrics.FEC_MODE_INFO.name,
    # consumer families, where the window is built live (consumers/diagnosis/consumer.py)
    metrics.RX_CPU_SOFTIRQ_RATIO.name, metrics.RX_QUEUE_IMBALANCE.name,
    metrics.RX_QUEUE_BUSIEST.name, metrics.EXPECTATION_VIOLATION.name,
    # the link peer's PFC (docs/fabric.md), named in a pause verdict's next check
    metrics.LLDP_PEER_PFC_ENABLED.name,
    # not exported: NAPI instances in threaded mode
    NAPI_THREADED,
})


@dataclass(frozen=True, slots=True)
class Step:
    monotonic: float  # of the later reading
    wall: float
    seconds: float
    increments: Mapping[SeriesKey, float]
    gauges: Mapping[SeriesKey, float]
    # series a signature reads whose increase is unknown in this step: "status: series"
    # (reset, appeared, gone, saturated; snapshot.diff's statuses)
    skipped: tuple[str, ...] = ()
    pci_address: str | None = None  # the interface's PCI function, where known


def gauges_of(gauges: Mapping[SeriesKey, float]) -> dict[SeriesKey, float]:
    return {k: v for k, v in gauges.items() if k.metric in GAUGES}


# Increases at or above this are not summed as running totals: a float adds integers exactly
# below it, so a running total equals the sum over the steps only there.
_EXACT = 2.0 ** 53


class _Running:
    """One interface's steps in its window and their running totals: per series the sum of
    its increases, and a monotonic queue of its per-step rates (highest leftmost, by step
    number) for the peak. A series with an increase a float does not add exactly (a
    fraction; ``inexact`` counts them in the window) or a total beyond 2**53 (``big``) is
    summed over the steps in order instead, so every window equals the sum over its steps
    to the bit."""

    __slots__ = ("big", "breaks", "first", "inexact", "peaks", "shapes", "steps", "sums")

    def __init__(self) -> None:
        self.steps: deque[Step] = deque()
        # each step's series in order, and how many steps list other series or another
        # order than the step before (0: the window's order is any step's)
        self.shapes: deque[tuple[SeriesKey, ...]] = deque()
        self.breaks = 0
        self.first = 0  # the number of steps[0]
        self.sums: dict[SeriesKey, float] = {}
        self.inexact: dict[SeriesKey, int] = {}
        self.big: set[SeriesKey] = set()
        self.peaks: dict[SeriesKey, deque[tuple[int, float]]] = {}

    def push(self, step: Step) -> None:
        number = self.first + len(self.steps)
        shape = tuple(step.increments)
        if self.steps and shape != self.shapes[-1]:
            self.breaks += 1
        self.steps.append(step)
        self.shapes.append(shape)
        sums, peaks = self.sums, self.peaks
        get = sums.get
        timed = step.seconds > 0
        for key, inc in step.increments.items():
            total = sums[key] = get(key, 0.0) + inc
            if inc % 1 or not -_EXACT < inc < _EXACT:  # as pop() takes it off again
                self.inexact[key] = self.inexact.get(key, 0) + 1
            if not -_EXACT < total < _EXACT:
                self.big.add(key)
            if timed and key.metric in PEAK_COUNTERS:
                rate = inc / step.seconds
                if rate > -1.0:
                    queue = peaks.get(key)
                    if queue is None:
                        queue = peaks[key] = deque()
                    while queue and queue[-1][1] < rate:  # the older of equal ones stays
                        queue.pop()
                    queue.append((number, rate))

    def pop(self) -> None:
        step = self.steps.popleft()
        number = self.first
        self.first += 1
        sums, inexact, peaks = self.sums, self.inexact, self.peaks
        shape = self.shapes.popleft()
        if self.shapes and shape != self.shapes[0]:
            self.breaks -= 1
        for key, inc in step.increments.items():
            sums[key] -= inc
            if inc % 1 or not -_EXACT < inc < _EXACT:
                if inexact[key] > 1:
                    inexact[key] -= 1
                else:  # the last fraction left: the running total starts exact again
                    del inexact[key]
                    sums[key] = self._sum(key)
            queue = peaks.get(key)
            if queue and queue[0][0] == number:
                queue.popleft()
                if not queue:
                    del peaks[key]
        if len(sums) > len(self.steps[-1].increments):  # series no step has any more
            present = set().union(*(s.increments for s in self.steps))
            for key in [k for k in sums if k not in present]:
                del sums[key]
                inexact.pop(key, None)
                self.big.discard(key)

    def _sum(self, key: SeriesKey) -> float:
        total = 0.0
        for s in self.steps:
            inc = s.increments.get(key)
            if inc is not None:
                total += inc
        return total

    def deltas(self) -> dict[SeriesKey, float]:
        """The increases over the window, in the order the steps first have each series
        (as a sum over the steps gives them)."""
        steps = self.steps
        if len(steps) == 1 or not self.breaks:
            order: Iterable[SeriesKey] = steps[-1].increments
        else:
            order = dict.fromkeys(chain.from_iterable(s.increments for s in steps))
        sums = self.sums
        out = {k: sums[k] for k in order}
        for key in (*self.inexact, *self.big):
            if key in out:
                out[key] = self._sum(key)
        return out


class Recent:
    """The steps of each interface within the last ``seconds`` (None: all of them), with
    running totals (each step's increases added once and taken off when it leaves the
    window), so a window costs its series, not its series times its steps."""

    def __init__(self, seconds: float | None = WINDOW) -> None:
        self.seconds = seconds
        self._steps: dict[str, _Running] = {}

    def add(self, device: str, step: Step) -> None:
        running = self._steps.get(device)
        if running is None:
            running = self._steps[device] = _Running()
        running.push(step)
        if self.seconds is not None:
            # keep the steps that end within the window (at least the newest)
            steps = running.steps
            while len(steps) > 1 and steps[0].monotonic <= step.monotonic - self.seconds:
                running.pop()

    def keep(self, devices: Iterable[str]) -> None:
        wanted = set(devices)
        for device in [d for d in self._steps if d not in wanted]:
            del self._steps[device]

    def reset(self, device: str) -> None:
        self._steps.pop(device, None)

    def devices(self) -> list[str]:
        return sorted(self._steps)

    def window(self, device: str, extra_gauges: Mapping[SeriesKey, float] | None = None
               ) -> Window | None:
        running = self._steps.get(device)
        if running is None or not running.steps:
            return None
        steps = running.steps
        seconds = sum(s.seconds for s in steps)
        deltas = running.deltas()
        kept = running.peaks
        # in the order the timed steps first have each series, as taking the highest step
        # by step gives them (the same as the deltas' unless a series skipped a step)
        timed = (deltas if not running.breaks and all(s.seconds > 0 for s in steps) else
                 dict.fromkeys(chain.from_iterable(s.increments for s in steps
                                                   if s.seconds > 0)))
        peaks = {k: q[0][1] for k in timed if (q := kept.get(k))} if kept else {}
        gauges = dict(steps[-1].gauges)
        if extra_gauges:
            gauges.update(extra_gauges)
        return Window(device, seconds, deltas, peaks, gauges, len(steps) + 1, steps[-1].wall,
                      notes_of(steps), steps[-1].pci_address)


SKIPPED_SHOWN = 6  # series named per status in a window's notes


def notes_of(steps: Iterable[Step]) -> tuple[str, ...]:
    """One note per status: the series whose increase some step could not take."""
    by_status: dict[str, dict[str, None]] = {}
    for step in steps:
        for item in step.skipped:
            status, _, series = item.partition(": ")
            by_status.setdefault(status, {})[series] = None
    out = []
    for status, found in by_status.items():
        names = list(found)
        more = f" and {len(names) - SKIPPED_SHOWN} more" if len(names) > SKIPPED_SHOWN else ""
        out.append(f"{len(names)} series left out ({STATUS_TEXT.get(status, status)}): "
                   + ", ".join(names[:SKIPPED_SHOWN]) + more)
    return tuple(out)


STATUS_TEXT = {
    "new": "appeared between readings: no increase without a first value",
    "gone": "disappeared between readings",
    "counter_decrease": "went backwards: a reset, not an increase",
    "source_changed": "now read from another source",
    "saturated": "an IB PortCounter at its maximum: its increase is unknown",
}


def step_between(x: InterfaceSnapshot, y: InterfaceSnapshot) -> Step:
    """One step from two readings of an interface, with snapshot.diff's wrap and reset
    rule (snapshot.rows: no increase across a reset or a replaced interface)."""
    rows = counter_rows(x, y)
    increments = {SeriesKey(r.name, r.labels): r.delta for r in rows
                  if r.status == OK and r.delta is not None and r.name in COUNTERS}
    skipped = tuple(f"{r.status}: {_series_name(SeriesKey(r.name, r.labels))}"
                    for r in rows if r.name in COUNTERS
                    and (r.status != OK or r.delta is None))
    return Step(y.monotonic, y.time, y.monotonic - x.monotonic, increments,
                gauges_of(y.gauges), skipped, y.identity.pci_address)


def from_snapshots(snapshots: Sequence[Snapshot], seconds: float | None = None
                   ) -> list[Window]:
    """Windows over the polls of ``snapshots`` in order (two snapshots, a record's series,
    an incident's window or a history dump), each interface by name; the last ``seconds``
    only when given."""
    recent = Recent(seconds)
    last: dict[str, InterfaceSnapshot] = {}
    for snap in snapshots:
        for poll in snap.polls:
            for i in poll.interfaces:
                prev = last.get(i.device)
                if prev is not None and i.monotonic > prev.monotonic:
                    recent.add(i.device, step_between(prev, i))
                last[i.device] = i
    return [w for d in recent.devices() if (w := recent.window(d)) is not None]


def _extend(a: Mapping[SeriesKey, tuple[int, int]], b: Mapping[SeriesKey, tuple[int, int]],
            scales: Mapping[SeriesKey, float]) -> dict[SeriesKey, float]:
    """Increases from ``a`` to ``b`` (raw, width); a 32-bit counter that fell from the upper
    half of its range wrapped (the tracker's rule without a line rate), any other fall is a
    reset and leaves the series out."""
    out = {}
    for key, (raw_b, width) in b.items():
        if key not in a:
            continue
        raw_a = a[key][0]
        ext = advance(raw_a, raw_a, raw_b, width)
        if ext is not None:
            out[key] = (ext - raw_a) * scales.get(key, 1.0)
    return out


def from_ethtool(device: str, driver: str, names_a: Sequence[str], values_a: Sequence[int],
                 names_b: Sequence[str], values_b: Sequence[int], seconds: float,
                 speed_bytes: float | None = None, pci_address: str | None = None,
                 lanes: int | None = None, fec: str | None = None,
                 rdma_a: Mapping[SeriesKey, CounterValue] | None = None,
                 rdma_b: Mapping[SeriesKey, CounterValue] | None = None) -> Window:
    """One window from two `ethtool -S` readings ``seconds`` apart, mapped through the
    driver's table; ``speed_bytes``: the line rate, when the operator knows it;
    ``pci_address``: the bus-info of pasted `ethtool -i` output, when there is one;
    ``lanes`` and ``fec`` (the kernel's active FEC mode name: rs, baser, llrs, off): the
    link's, as `ethtool` shows them, for each lane's pre-FEC bit error ratio; ``rdma_a``
    and ``rdma_b``: the RDMA ports' counter series of pasted `rdma statistic show` outputs
    taken with them (:func:`rdma_series`), merged as live polling merges a port's series
    into its netdev's window."""
    from nicwatch.normalize import RawOptions, normalize_driver_stats

    def read(names: Sequence[str], values: Sequence[int]
             ) -> tuple[dict[SeriesKey, tuple[int, int]], dict[SeriesKey, float],
                        dict[SeriesKey, float]]:
        counters, gauges = normalize_driver_stats(driver, tuple(names), tuple(values),
                                                  RawOptions())
        return ({k: (cv.raw, cv.width) for k, cv in counters.items()},
                {k: cv.scale for k, cv in counters.items()}, gauges)

    a, _, _ = read(names_a, values_a)
    b, scales, gauges_b = read(names_b, values_b)
    for side, rdma in ((a, rdma_a), (b, rdma_b)):
        for k, cv in (rdma or {}).items():
            side[k] = (cv.raw, cv.width)
            scales.setdefault(k, cv.scale)
    fell = tuple(f"counter_decrease: {_series_name(k)}" for k in b
                 if k in a and k.metric in COUNTERS and not _extend(a, {k: b[k]}, scales))
    increments = {k: v for k, v in _extend(a, b, scales).items() if k.metric in COUNTERS}
    gauges = gauges_of(gauges_b)
    if speed_bytes:
        gauges[SeriesKey(metrics.LINK_SPEED_BYTES_PER_SECOND.name)] = speed_bytes
    if lanes:
        gauges[SeriesKey(metrics.LINK_LANES.name)] = float(lanes)
    if fec:
        gauges[SeriesKey(metrics.FEC_MODE_INFO.name, (("active", fec), ("configured", fec)))] = 1.0
    recent = Recent(None)
    recent.add(device, Step(seconds, 0.0, seconds, increments, gauges, fell))
    window = recent.window(device)
    assert window is not None
    unmapped = _unmapped(driver, names_b)
    lane_note = _lane_note(window, speed_bytes, lanes, fec)
    unread = ((f"{len(unmapped)} statistic(s) the {driver} table does not map (not read by "
               f"any signature): {_few(unmapped)}",) if unmapped else ())
    notes = window.notes + lane_note + unread
    return Window(window.device, window.seconds, window.deltas, window.peaks, window.gauges,
                  2, None, notes, pci_address)


def _lane_note(w: Window, speed_bytes: float | None, lanes: int | None,
               fec: str | None) -> tuple[str, ...]:
    """Where per-lane bit errors rose but a lane's ratio cannot be had (no speed, lane count
    or FEC mode given): the lanes by their errors, worst first, and what is missing."""
    rose = sorted(((dict(k.labels).get("lane", ""), v) for k, v in w.deltas.items()
                   if k.metric == metrics.FEC_LANE_BIT_ERRORS.name and v > 0),
                  key=lambda lv: -lv[1])
    lacks = [flag for flag, have in (("--speed", speed_bytes), ("--lanes", lanes),
                                     ("--fec", fec)) if not have]
    if not rose or not lacks:
        return ()
    lanes_text = ", ".join(f"lane {lane} +{v:,.0f}" for lane, v in rose)
    return (f"pre-FEC bit errors rose on {lanes_text} (nic_fec_lane_bit_errors_total, worst "
            f"first); a lane's bit error ratio against its FEC code needs {' '.join(lacks)}",)


def _unmapped(driver: str, names: Sequence[str]) -> list[str]:
    from nicwatch.normalize import RawOptions
    from nicwatch.normalize.drivers import TABLES
    from nicwatch.normalize.engine import compile_plan
    table = TABLES[driver]
    plan = compile_plan("ethtool_ioctl", table.rules, tuple(names), table, RawOptions())
    mapped = {names[e.index] for e in (*plan.counters, *plan.gauges)}
    return [n for n in names if n not in mapped]


# ------------------------------------------------------------------ a pasted pair's trust
# Two pasted outputs are a window only if they are two readings of one interface within one
# run of its driver, the stated interval apart. Three things show that they are not, each
# from first principles rather than a tuned number:
#   * the statistic set changed: the same driver on the same interface prints the same
#     names between two reads unless it was reloaded or reconfigured (a kernel upgrade
#     renames them: mlx5's rx_cache_* became rx_pp_* with page-pool statistics);
#   * a counter fell: a counter only rises (a 32-bit one may wrap from the upper half of
#     its range, tracker.advance); a fall is a reset, swapped files or another interface;
#   * an increase no link carries: bytes above the line rate, frames above the line rate
#     over the smallest frame on the wire (64 bytes + 8 preamble + 12 inter-frame gap).
#     The line rate is --speed, else the fastest Ethernet there is (800 Gb/s, IEEE 802.3df).
#     A stated interval can be short by the time `ethtool -S` itself takes to run, so an
#     increase is refused only beyond LINE_SLACK times the most the link carries.
FASTEST_LINE_BYTES = 800e9 / 8  # 800GBASE-R (IEEE 802.3df), bytes/s
MIN_FRAME_ON_WIRE = 64 + 8 + 12  # bytes: minimum frame, preamble + SFD, inter-frame gap
LINE_SLACK = 1.1
BYTE_FAMILIES = (metrics.PHY_RX_BYTES.name, metrics.PHY_TX_BYTES.name, metrics.RX_BYTES.name,
                 metrics.TX_BYTES.name)
FRAME_FAMILIES = (metrics.RX_PACKETS.name, metrics.TX_PACKETS.name,
                  metrics.RX_PAUSE_FRAMES.name, metrics.TX_PAUSE_FRAMES.name,
                  metrics.RX_PAUSE_CTRL_FRAMES.name, metrics.TX_PAUSE_CTRL_FRAMES.name,
                  metrics.RX_PFC_FRAMES.name, metrics.TX_PFC_FRAMES.name)
NAMES_SHOWN = 3  # of a list in the one-line refusal


def _few(items: Sequence[str]) -> str:
    more = f" and {len(items) - NAMES_SHOWN} more" if len(items) > NAMES_SHOWN else ""
    return ", ".join(items[:NAMES_SHOWN]) + more


def _rate_text(bytes_per_second: float) -> str:
    for unit, size in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6)):
        if bytes_per_second >= size:
            return f"{bytes_per_second / size:,.1f} {unit}"
    return f"{bytes_per_second:,.0f} B/s"


def pair_refusal(driver: str, names_a: Sequence[str], values_a: Sequence[int],
                 names_b: Sequence[str], values_b: Sequence[int], seconds: float,
                 speed_bytes: float | None = None) -> str | None:
    """Why two `ethtool -S` outputs cannot be one interface ``seconds`` apart (one line
    naming the statistics and values that show it), None when nothing says so."""
    from nicwatch.normalize import RawOptions
    from nicwatch.normalize.drivers import TABLES
    from nicwatch.normalize.engine import compile_plan
    reasons: list[str] = []
    only_a = [n for n in names_a if n not in set(names_b)]
    only_b = [n for n in names_b if n not in set(names_a)]
    if only_a or only_b:
        parts = [f"{len(only_a)} only in BEFORE ({_few(only_a)})" if only_a else "",
                 f"{len(only_b)} only in AFTER ({_few(only_b)})" if only_b else ""]
        reasons.append("the statistic set changed: " + ", ".join(p for p in parts if p))
    table = TABLES[driver]
    # every statistic the table does not name a gauge is a counter (the raw family's rule)
    plan_b = compile_plan("ethtool_ioctl", table.rules, tuple(names_b), table,
                          RawOptions(enabled=True))
    before = dict(zip(names_a, values_a, strict=True))
    fell: dict[str, str] = {}
    increase: dict[SeriesKey, int] = {}
    raw_of: dict[SeriesKey, list[str]] = {}
    for e in plan_b.counters:
        name = names_b[e.index]
        raw_of.setdefault(e.key, []).append(name)
        if name not in before:
            continue
        a, b = before[name], values_b[e.index]
        ext = advance(a, a, b, e.width)
        if ext is None:
            fell.setdefault(name, f"{name} {a:,} -> {b:,}")
        elif e.key.metric in BYTE_FAMILIES or e.key.metric in FRAME_FAMILIES:
            increase[e.key] = increase.get(e.key, 0) + (ext - a)
    if fell:
        reasons.append(f"{len(fell)} counter(s) fell: {_few(list(fell.values()))}")
    line = speed_bytes or FASTEST_LINE_BYTES
    line_text = (f"the {line * 8 / 1e9:g} Gb/s line rate" if speed_bytes else
                 f"{line * 8 / 1e9:g} Gb/s, the fastest Ethernet link (no --speed given)")
    over: list[str] = []
    for key, inc in sorted(increase.items(), key=lambda kv: -kv[1]):
        if seconds <= 0 or inc <= 0:
            continue
        rate = inc / seconds
        names = "+".join(raw_of[key][:2]) + f" ({key.metric})"
        if key.metric in BYTE_FAMILIES and rate > line * LINE_SLACK:
            over.append(f"{names} rose {inc:,} in {seconds:g} s: {_rate_text(rate)}, "
                        f"{rate / line:,.0f}x {line_text}")
        elif key.metric in FRAME_FAMILIES and rate > line / MIN_FRAME_ON_WIRE * LINE_SLACK:
            most = line / MIN_FRAME_ON_WIRE
            over.append(f"{names} rose {inc:,} in {seconds:g} s: {rate:,.0f} frames/s, "
                        f"{rate / most:,.0f}x the {most:,.0f} frames/s of {line_text}")
    if over:
        reasons.append("more than the link carries: " + "; ".join(over[:2]))
    if not reasons:
        return None
    return ("not two readings of one interface " f"{seconds:g} s apart (a reboot or driver "
            "reload, swapped files, or another interface): " + "; ".join(reasons))


# ------------------------------------------------------------------ one reading alone
WHY_NO_RATE = (
    "one reading: a rate is an increase over a known time, and one `ethtool -S` has neither "
    "a second reading to subtract nor the time its counters started from (driver load, a "
    "reset or boot; the output carries no boot time or uptime), so no per-second rate and "
    "no signature (each reads rates over a window) can be claimed")


@dataclass(frozen=True, slots=True)
class Total:
    series: str  # the canonical series, labels included
    stats: tuple[str, ...]  # the driver's statistics it sums
    value: float  # since the counters started, base units


@dataclass(frozen=True, slots=True)
class Ratio:
    name: str
    value: float
    numerator: str
    denominator: str
    bound: str = ""  # "at least" when the denominator is an upper bound


@dataclass(frozen=True, slots=True)
class Lifetime:
    """What one pasted reading says: its counters' totals since they started, ratios of
    them (rates cancel out of a ratio; the time they started does not matter), and why no
    rate can be claimed."""

    device: str
    driver: str
    source: str
    totals: tuple[Total, ...]
    ratios: tuple[Ratio, ...]
    unmapped: int  # statistics the driver's table does not map to a canonical counter
    why: str = WHY_NO_RATE


def _family(totals: Mapping[SeriesKey, float], *metrics: str) -> tuple[float, str] | None:
    """The sum of the first of ``metrics`` present (over its labels), and its name."""
    for m in metrics:
        keys = [k for k in totals if k.metric == m and dict(k.labels).get("lane") != "total"
                and dict(k.labels).get("priority") != "total"]
        if keys:
            return sum(totals[k] for k in keys), m
    return None


def _frames(totals: Mapping[SeriesKey, float], direction: str
            ) -> tuple[float, str, str] | None:
    """Frames received or sent: the packet counter, else the most the port's bytes can
    be (64-byte frames), which makes a ratio over it a lower bound."""
    got = _family(totals, DIRECTIONS[direction].packets)
    if got is not None:
        return got[0], got[1], ""
    phy = _family(totals, DIRECTIONS[direction].phy_bytes)
    if phy is not None:
        return phy[0] / 64, f"{phy[1]} / 64 (frames at most)", "at least"
    return None


def lifetime_ratios(totals: Mapping[SeriesKey, float]) -> list[Ratio]:
    out: list[Ratio] = []

    def ratio(name: str, num: tuple[float, str] | None,
              den: tuple[float, str, str] | None) -> None:
        if num is None or den is None or den[0] + num[0] <= 0:
            return
        out.append(Ratio(name, num[0] / (num[0] + den[0]), num[1],
                         f"{num[1]} + {den[1]}", den[2]))

    drops = [d for d in (_family(totals, metrics.RX_OUT_OF_BUFFER_DROPS.name,
                                 metrics.RX_HW_DROP_OVERRUNS.name),
                         _family(totals, metrics.RX_DISCARDS.name)) if d is not None]
    rx = _frames(totals, "rx")
    tx = _frames(totals, "tx")
    if drops:
        names = " + ".join(d[1] for d in drops)
        ratio("receive drops per frame arriving",
              (sum(d[0] for d in drops), f"({names})" if len(drops) > 1 else names), rx)
    # the largest of the families the driver has (mlx5's pause_ctrl may count PFC frames
    # too, so they are never added; quantities.tx_pause_frames_rate's rule)
    pause = max((f for f in (_family(totals, m) for m in (
        metrics.TX_PAUSE_FRAMES.name, metrics.TX_PFC_FRAMES.name,
        metrics.TX_PAUSE_CTRL_FRAMES.name)) if f is not None), default=None,
        key=lambda f: f[0])
    ratio("PAUSE/PFC frames sent per frame sent", pause, tx)
    ratio("CRC errors per frame arriving", _family(totals, metrics.RX_CRC_ERRORS.name), rx)
    corrected = _family(totals, metrics.FEC_CORRECTED_BLOCKS.name)
    if corrected is not None:
        ratio("FEC uncorrectable per FEC-decoded block with errors",
              _family(totals, metrics.FEC_UNCORRECTABLE_BLOCKS.name), (*corrected, ""))
    return out


def lifetime(device: str, driver: str, names: Sequence[str], values: Sequence[int],
             source: str) -> Lifetime:
    """One `ethtool -S` reading mapped through the driver's table: every counter series a
    signature reads, since the counters started, and the ratios between them."""
    from nicwatch.normalize import RawOptions
    from nicwatch.normalize.drivers import TABLES
    from nicwatch.normalize.engine import compile_plan
    table = TABLES[driver]
    plan = compile_plan("ethtool_ioctl", table.rules, tuple(names), table, RawOptions())
    totals: dict[SeriesKey, float] = {}
    stats: dict[SeriesKey, list[str]] = {}
    for e in plan.counters:
        if e.key.metric not in COUNTERS:
            continue
        totals[e.key] = totals.get(e.key, 0.0) + values[e.index] * e.scale
        stats.setdefault(e.key, []).append(names[e.index])
    mapped = {names[e.index] for e in (*plan.counters, *plan.gauges)}
    rows = tuple(Total(_series_name(k), tuple(stats[k]), v) for k, v in sorted(
        totals.items(), key=lambda kv: (kv[0].metric, kv[0].labels)))
    return Lifetime(device, driver, source, rows, tuple(lifetime_ratios(totals)),
                    sum(n not in mapped for n in names))


def _series_name(key: SeriesKey) -> str:
    if not key.labels:
        return key.metric
    return key.metric + "{" + ",".join(f'{k}="{v}"' for k, v in key.labels) + "}"


# ------------------------------------------------------------------ pasted RDMA counters
# netdev driver -> the RDMA driver of its ports, where the device name does not say
RDMA_DRIVER_OF_NETDEV = {"mlx5_core": "mlx5", "bnxt_en": "bnxt_re", "ice": "irdma",
                         "i40e": "irdma", "mana": "mana"}


def rdma_series(ports: Mapping[str, Mapping[str, int]], netdev_driver: str | None = None
                ) -> dict[SeriesKey, CounterValue]:
    """The counter series of pasted `rdma statistic show` ports ("mlx5_0/1" -> name ->
    raw), mapped through the RDMA driver's hw_counter table exactly as live polling maps
    RDMA_NLDEV_CMD_STAT_GET (normalize.rdma.rdma_counters): labelled rdma_device and port."""
    from nicwatch.model import RdmaPort
    from nicwatch.normalize.rdma import DRIVERS, rdma_counters
    from nicwatch.pasted.rdma_text import driver_of
    out: dict[SeriesKey, CounterValue] = {}
    for key, counters in ports.items():
        device, _, port = key.rpartition("/")
        driver = driver_of(device)
        if driver not in DRIVERS:
            driver = RDMA_DRIVER_OF_NETDEV.get(netdev_driver or "")
        rp = RdmaPort(device, int(port), None, None, None, None, None, None, None,
                      dict(counters), {}, (), source="netlink", driver=driver)
        out.update((k, cv) for k, cv in rdma_counters(rp).items() if not cv.saturates)
    return out


def rdma_refusal(a: Mapping[str, Mapping[str, int]], b: Mapping[str, Mapping[str, int]]
                 ) -> str | None:
    """Why two `rdma statistic show` outputs are not one host's ports a while apart: the
    ports or their counter names changed, or a counter fell (RDMA hw counters are 64-bit
    in the kernel's netlink reply; a fall is a reset)."""
    reasons = []
    if set(a) != set(b):
        reasons.append(f"the ports changed: BEFORE {_few(sorted(a))}, AFTER {_few(sorted(b))}")
    fell = [f"{port} {name} {a[port][name]:,} -> {v:,}" for port in sorted(set(a) & set(b))
            for name, v in b[port].items() if name in a[port] and v < a[port][name]]
    changed = [port for port in sorted(set(a) & set(b)) if set(a[port]) != set(b[port])]
    if changed:
        reasons.append(f"the counter set of {_few(changed)} changed")
    if fell:
        reasons.append(f"{len(fell)} counter(s) fell: {_few(fell)}")
    if not reasons:
        return None
    return ("not two readings of the same RDMA ports (a reboot or driver reload, swapped "
            "files, or another host): " + "; ".join(reasons))
