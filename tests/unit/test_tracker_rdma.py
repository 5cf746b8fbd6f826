"""Tracker.update_rdma: RDMA ports tracked by their own key; a saturating PortCounters
counter is never extended as a wrap and has no rate at its maximum; 32-bit Q counters wrap."""

from __future__ import annotations

from types import MappingProxyType

from nicwatch.model import CounterValue, RdmaPort, RdmaSample, SeriesKey
from nicwatch.tracker import COUNTER_DECREASE, TrackedRdma, Tracker

BASE = (("port", "1"), ("rdma_device", "mlx5_0"))
DOWNED = SeriesKey("nic_rdma_link_downed_total", BASE)
OOB = SeriesKey("nic_rdma_out_of_buffer_drops_total", BASE)
PORT = RdmaPort("mlx5_0", 1, "InfiniBand", "ACTIVE", "LinkUp", 50_000_000_000, None, None,
                None, MappingProxyType({}), MappingProxyType({}), (), driver="mlx5")


def sample(t: float, downed: int, oob: int | None = None) -> RdmaSample:
    counters = {DOWNED: CounterValue(downed, "rdma", 8, saturates=True)}
    if oob is not None:
        counters[OOB] = CounterValue(oob, "rdma", 32)
    return RdmaSample(PORT, t, t, counters, {})


def test_a_saturated_counter_is_not_a_wrap_and_has_no_rate() -> None:
    tracker = Tracker()
    tracker.update_rdma([sample(0, 250)])
    (moving,) = tracker.update_rdma([sample(5, 254)])
    assert moving.counters[DOWNED].value == 254 and moving.counters[DOWNED].rate == 4 / 5
    (full,) = tracker.update_rdma([sample(10, 255)])
    assert full.counters[DOWNED].value == 255 and full.counters[DOWNED].rate is None
    (still,) = tracker.update_rdma([sample(15, 255)])
    assert still.counters[DOWNED].rate is None and still.resets == {}


def test_a_saturating_counter_that_falls_was_cleared_never_wrapped() -> None:
    tracker = Tracker()
    tracker.update_rdma([sample(0, 255)])
    (cleared,) = tracker.update_rdma([sample(5, 3)])
    # an 8-bit wrap would make it 256 + 3; a PMA counter stops at 255, so this is a reset
    assert cleared.counters[DOWNED].value == 3 and cleared.counters[DOWNED].rate is None
    assert cleared.resets == {COUNTER_DECREASE: 1}


def test_a_32_bit_q_counter_wraps_on_the_ports_rate() -> None:
    tracker = Tracker()
    tracker.update_rdma([sample(0, 0, 2**32 - 10)])
    (wrapped,) = tracker.update_rdma([sample(5, 0, 5)])
    assert wrapped.counters[OOB].value == 2**32 + 5 and wrapped.counters[OOB].rate == 15 / 5
    assert wrapped.resets == {}


def test_ports_are_tracked_apart_from_interfaces_and_from_each_other() -> None:
    tracker = Tracker()
    other = RdmaPort("mlx5_1", 1, "InfiniBand", "ACTIVE", "LinkUp", None, None, None, None,
                     MappingProxyType({}), MappingProxyType({}), ())
    tracker.update_rdma([sample(0, 1), RdmaSample(other, 0, 0, {DOWNED: CounterValue(
        9, "rdma", 8, saturates=True)}, {})])
    first, second = tracker.update_rdma([sample(5, 2), RdmaSample(other, 5, 5, {
        DOWNED: CounterValue(9, "rdma", 8, saturates=True)}, {})])
    assert (first.counters[DOWNED].rate, second.counters[DOWNED].rate) == (0.2, 0.0)
    assert tracker.update([]) == []


def _back_after(seconds: float) -> TrackedRdma:
    tracker = Tracker(retention=600.0)
    tracker.update_rdma([sample(0, 10, 100)])
    tracker.update_rdma([])  # the port is gone
    (back,) = tracker.update_rdma([sample(seconds, 10, 200)])
    return back


def test_a_port_back_after_the_retention_starts_afresh_as_an_interface_does() -> None:
    # Before the two paths were one, a port gone for longer than the retention was still
    # remembered when it came back (its state was dropped only after the poll that used it):
    # its first poll back had a rate over the whole absence.
    back = _back_after(700.0)
    assert back.counters[OOB].rate is None and back.counters[DOWNED].rate is None
    kept = _back_after(500.0)
    assert kept.counters[OOB].rate == 100 / 500
