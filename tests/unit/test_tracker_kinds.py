"""A kind of counted thing the tracker has never seen (here a queue pair) is tracked by one
path as interfaces and RDMA ports are: a sample type with the members of model.Counted is
all it takes (wraps on its line rate, resets, its own state apart from other kinds')."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from nicwatch.model import Counted, CounterValue, Labels, NicIdentity, Sample, SeriesKey
from nicwatch.tracker import COUNTER_DECREASE, TrackedThing, Tracker

RX = SeriesKey("nic_rdma_out_of_buffer_drops_total", (("qp", "7"),))


@dataclass(frozen=True)
class QueuePair:
    name: str
    monotonic: float
    counters: Mapping[SeriesKey, CounterValue]
    gauges: Mapping[SeriesKey, float]
    rate: float | None = 50e9 / 8  # bytes/s
    reports_wrap_safety: ClassVar[bool] = True

    @property
    def key(self) -> str:
        return self.name

    @property
    def own_labels(self) -> Labels:
        return (("qp", self.name),)

    @property
    def reset_labels(self) -> Labels:
        return self.own_labels

    @property
    def incarnation(self) -> tuple[int | None, str | None]:
        return None, None

    @property
    def stats_generation(self) -> int | None:
        return None

    def line_rate(self, gauge: SeriesKey) -> float | None:
        return self.rate


@dataclass(frozen=True, slots=True)
class TrackedQueuePair(TrackedThing[QueuePair]):
    """Its tracked record: the shared one, typed."""


def qp(t: float, raw: int) -> QueuePair:
    return QueuePair("eth0", t, {RX: CounterValue(raw, "qp", 32)}, {})


def test_a_new_kind_is_tracked_by_the_one_path() -> None:
    tracker = Tracker()
    kind = TrackedQueuePair
    thing: Counted = qp(0, 0)  # the protocol is met
    tracker.track([thing], kind)
    (moved,) = tracker.track([qp(5, 2**32 - 10)], kind)
    assert moved.counters[RX].value == 2**32 - 10 and moved.counters[RX].rate == (2**32 - 10) / 5
    assert moved.wrap_safe_interval is not None and moved.wrap_ambiguous is False
    (wrapped,) = tracker.track([qp(10, 5)], kind)
    assert wrapped.counters[RX].value == 2**32 + 5 and wrapped.counters[RX].rate == 15 / 5
    assert wrapped.resets == {}
    (still,) = tracker.track([qp(15, 5)], kind)
    assert still.counters[RX].rate == 0.0
    (reset,) = tracker.track([qp(20, 1)], kind)  # more than its link carries in 5 s
    assert reset.counters[RX].value == 1 and reset.counters[RX].rate is None
    assert reset.resets == {COUNTER_DECREASE: 1}


def test_kinds_keep_their_things_apart_under_the_same_key() -> None:
    tracker = Tracker()
    tracker.track([qp(0, 100)], TrackedQueuePair)
    counters = {SeriesKey("nic_rx_bytes_total"): CounterValue(50, "ethtool_ioctl")}
    iface = Sample(NicIdentity("eth0", 7, "mlx5_core", None, None, None, None, None), 0, 0,
                   counters, {}, frozenset(), 1, None)  # no reading: the tracker reads none
    assert iface.key == "eth0"
    tracker.update([iface])
    (again,) = tracker.track([qp(5, 160)], TrackedQueuePair)
    assert again.counters[RX].rate == 60 / 5 and again.resets == {}
