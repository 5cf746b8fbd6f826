"""state_key: the flight recorder rebuilds an interface's state only when its key changes, so
the key must change with every non-counter field (records, tuples of records, plain values,
the PCIe verdict) and stay equal when only counters move. Readings come from the mlx5-rdma
fixture tree (a ConnectX port with an RDMA port), polled through the collector."""

import dataclasses

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.model import DriverInfo, SourceError
from nicwatch.snapshot.files import reading_state, state_key

from paths import FIXTURES


@pytest.fixture(scope="module")
def reading():
    collector = Collector(FIXTURES / "sysfs" / "mlx5-rdma", Selection(include=".*"))
    samples = [s for s in collector.poll().samples if s.reading.rdma]
    assert samples, "the fixture tree has an interface with an RDMA port"
    return samples[0].reading


def replace_port(reading, **changes):
    port = dataclasses.replace(reading.rdma[0], **changes)
    return dataclasses.replace(reading, rdma=(port, *reading.rdma[1:]))


def counters_moved(reading):
    port = reading.rdma[0]
    return [
        dataclasses.replace(reading, time=reading.time + 5, monotonic=reading.monotonic + 5),
        dataclasses.replace(reading, netclass=dataclasses.replace(
            reading.netclass, stats={k: v + 7 for k, v in reading.netclass.stats.items()})),
        replace_port(reading, hw_counters={k: v + 1 for k, v in port.hw_counters.items()}),
        replace_port(reading, counters={k: v + 1 for k, v in port.counters.items()}),
    ]


def state_changed(reading):
    return [
        dataclasses.replace(reading, netclass=dataclasses.replace(
            reading.netclass, mtu=(reading.netclass.mtu or 1500) + 1)),
        replace_port(reading, state="1: DOWN"),
        dataclasses.replace(reading, rdma=()),
        dataclasses.replace(reading, driver_info=DriverInfo("mlx5_core", "x", "99.1", "b", 0)),
        dataclasses.replace(reading, perm_address="02:00:00:00:00:01"),
        dataclasses.replace(reading, errors=(SourceError("dcbnl", "EIO", "read failed"),)),
    ]


def test_only_counters_moved_keeps_the_key_and_the_state(reading):
    key, state = state_key(reading), reading_state(reading)
    assert reading.rdma[0].hw_counters and reading.netclass.stats  # something to move
    for moved in counters_moved(reading):
        assert state_key(moved) == key
        assert reading_state(moved) == state


@pytest.mark.parametrize("index", range(6))
def test_every_kind_of_state_change_changes_the_key(reading, index):
    changed = state_changed(reading)[index]
    assert reading_state(changed) != reading_state(reading)  # the change is state
    assert state_key(changed) != state_key(reading)


def test_the_pcie_verdict_is_part_of_the_key(reading):
    assert state_key(reading, None) != state_key(reading, "degraded")


def test_receive_path_counts_keep_the_key_and_its_layout_changes_it(reading):
    """The receive path and netdev queue records carry counters (per-CPU interrupt counts,
    softnet lines, per-queue qstats) beside the layout: only the layout is state."""
    from nicwatch.model import Irq, NetdevQueues, QueueStats, ReceivePath, SoftnetCpu

    def with_rx(counts, effective=(8,), rx_packets=5):
        return dataclasses.replace(
            reading,
            rxpath=ReceivePath((Irq(151, "mlx5_comp0@pci:0000:17:00.0", counts, (8,),
                                    effective),), "msi_irqs", (),
                               (SoftnetCpu(8, (counts[8], 0, 0, 0, 0)),)),
            queues=NetdevQueues((), (), (QueueStats("rx", 0, {"rx-packets": rx_packets}),),
                                {"rx-packets": rx_packets}))

    base = with_rx((0,) * 8 + (100,))
    moved = with_rx((0,) * 8 + (250,), rx_packets=9)
    assert state_key(moved) == state_key(base)
    assert state_key(with_rx((0,) * 8 + (100,), effective=(9,))) != state_key(base)
