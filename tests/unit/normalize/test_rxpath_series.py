"""The receive path's series and analysis (normalize.rxpath), through the whole collector on
fixture hosts (sysfs and procfs in the kernel's formats, netdev genl replies in the kernel's
layout, `ethtool -S` as the drivers print it) and on real veth queues."""

from __future__ import annotations

from pathlib import Path

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.model import CounterValue, Sample, SeriesKey
from nicwatch.normalize import NormalizeOptions, RawOptions
from nicwatch.normalize.rxpath import (
    QueueCpus,
    balance,
    cpulist,
    cumulative_balance,
    irq_deltas,
    parse_cpus,
    queue_cpus,
    queue_deltas,
    queues_in_use,
)

from fixture_ethtool import RecordedEthtool
from fixture_netdev import KernelNetdev, mlx5_device
from fixture_rxpath import FixtureHost, build, ice_nic, mlx5_nic, two_node_host
from paths import ETHTOOL


def fixture_host(*nics) -> FixtureHost:
    host = FixtureHost(16, two_node_host(), list(nics))
    for cpu in range(16):
        host.softnet[cpu] = [1000 * cpu, cpu % 3, 7 * cpu, 11 * cpu, cpu % 5]
    return host


def samples(tmp_path: Path, host: FixtureHost, netdev=None, per_queue=()) -> dict[str, Sample]:
    sysfs, procfs = build(host, tmp_path)
    dumps = {"mlx5_core": "mlx5_core.txt", "ice": "ice.txt"}
    ports = {nic.name: {"stats": ETHTOOL / dumps.get(nic.driver, "ice.txt"),
                        "driver": nic.driver} for nic in host.nics}
    c = Collector(sysfs, Selection(include=".*"),
                  NormalizeOptions(raw=RawOptions(per_queue=tuple(per_queue))),
                  ioctl=RecordedEthtool(ports), netdev=netdev, procfs=procfs)
    try:
        return {s.identity.device: s for s in c.poll().samples}
    finally:
        c.close()


def series(s: Sample, metric: str) -> dict[tuple, float]:
    out: dict[tuple, float] = {k.labels: cv.value for k, cv in s.counters.items()
                               if k.metric == metric}
    out.update({k.labels: v for k, v in s.gauges.items() if k.metric == metric})
    return out


def irq_info(s: Sample) -> dict[str, dict[str, str]]:
    return {dict(k)["irq"]: dict(k) for k in series(s, "nic_irq_info")}


def test_mlx5_queues_napis_irqs_and_qstats(tmp_path):
    kernel = KernelNetdev([mlx5_device(4, 8, 150, rx_packets=[900, 100, 0, 0, 0, 0, 0, 5000])])
    s = samples(tmp_path, fixture_host(mlx5_nic()), kernel)["ens1f0np0"]
    # device-scope qstats (the driver's base stats included), one family each
    assert series(s, "nic_rx_alloc_failures_total") == {(): 3}
    assert series(s, "nic_tx_queue_stops_total") == {(): 1}
    assert "nic_rx_hw_drops_total" not in {k.metric for k in s.counters}  # not filled: absent
    # per rx queue from qstats, not from the driver's rxN_packets (which mlx5_core.txt has)
    packets = {k.labels: cv for k, cv in s.counters.items()
               if k.metric == "nic_rx_queue_packets_total"}
    assert {dict(k)["queue"]: cv.raw for k, cv in packets.items()} == {
        "0": 900, "1": 100, "2": 0, "3": 0, "4": 0, "5": 0, "6": 0, "7": 5000}
    assert {cv.source for cv in packets.values()} == {"netdev_genl"}
    # queue -> NAPI -> irq from the kernel; the async vector is the device's own
    info = irq_info(s)
    assert info["151"] == {"irq": "151", "queue": "0", "kind": "rxtx", "affinity": "8",
                           "effective": "8", "node": "1"}
    assert info["150"]["queue"] == "" and info["150"]["kind"] == "other"
    assert series(s, "nic_irqs") == {(("placement", "local"),): 8,
                                     (("placement", "remote"),): 0,
                                     (("placement", "unknown"),): 0}
    # the softnet counters of CPUs 8-15 (where its interrupts go), 32 bits wide
    squeeze = {k: cv for k, cv in s.counters.items() if k.metric == "nic_rx_cpu_time_squeeze_total"}
    assert sorted(int(dict(k.labels)["cpu"]) for k in squeeze) == list(range(8, 16))
    assert squeeze[SeriesKey("nic_rx_cpu_time_squeeze_total", (("cpu", "9"),))] == \
        CounterValue(63, "softnet_stat", width=32)
    # received_rps and flow_limit_count (softnet_stat columns 10 and 11), the same CPUs
    assert series(s, "nic_rx_cpu_received_rps_total")[(("cpu", "9"),)] == 99
    assert series(s, "nic_rx_cpu_flow_limit_total") == {(("cpu", str(c)),): c % 5
                                                          for c in range(8, 16)}


def test_ice_without_netdev_records_falls_back_to_names_and_ethtool(tmp_path):
    s = samples(tmp_path, fixture_host(ice_nic()))["ens1f0"]
    info = irq_info(s)
    assert info["201"]["queue"] == "0" and info["201"]["kind"] == "rxtx"
    assert info["200"]["kind"] == "other"  # ice-0000:3b:00.0:misc
    packets = {dict(k.labels)["queue"]: cv for k, cv in s.counters.items()
               if k.metric == "nic_rx_queue_packets_total"}
    assert packets["1"].raw == 8088 and packets["1"].source == "ethtool_ioctl"  # ice.txt


def test_a_nic_on_node_1_pinned_to_node_0(tmp_path):
    nic = mlx5_nic(cpus=tuple(range(8)))  # spread over node 0's CPUs
    nic.numa_node, nic.local_cpus = 1, tuple(range(8, 16))
    s = samples(tmp_path, fixture_host(nic))["ens1f0np0"]
    assert series(s, "nic_irqs")[(("placement", "remote"),)] == 8
    assert {v["node"] for v in irq_info(s).values()} == {"0"}


def test_queue_statistics_per_queue_are_opt_in_by_name(tmp_path):
    kernel = KernelNetdev([mlx5_device(4, 2, 150)])
    s = samples(tmp_path, fixture_host(mlx5_nic(channels=2)), kernel,
                per_queue=("rx-alloc-fail", "tx-stop"))["ens1f0np0"]
    assert series(s, "nic_queue_stat_total") == {
        (("queue", q), ("stat", stat)): 0 for q in ("0", "1") for stat in ("rx-alloc-fail",
                                                                         "tx-stop")}


def test_an_unknown_driver_with_the_common_naming(tmp_path):
    nic = ice_nic()
    nic.driver = "idpf"
    for irq in nic.irqs[1:]:
        irq.name = irq.name.removeprefix("ice-")  # <netdev>-TxRx-<n>
    host = fixture_host(nic)
    sysfs, procfs = build(host, tmp_path)
    c = Collector(sysfs, Selection(include=".*"), procfs=procfs)
    (s,) = c.poll().samples
    c.close()
    assert irq_info(s)["203"]["queue"] == "2"


# --------------------------------------------------------------------------- analysis


def test_cpu_lists_round_trip():
    assert cpulist([3, 0, 1, 2, 8, 10, 11]) == "0-3,8,10-11"
    assert parse_cpus("0-3,8,10-11") == (0, 1, 2, 3, 8, 10, 11)
    assert cpulist(()) == "" and parse_cpus("") == ()


def test_balance_of_one_hot_queue():
    cpus = {q: QueueCpus((q,)) for q in range(8)}
    b = balance({0: 7000, 1: 1000, 2: 1000, 3: 1000, 4: 0, 5: 0, 6: 0, 7: 0}, 8, cpus)
    assert b is not None
    assert b.busiest.queue == 0 and b.busiest.share == pytest.approx(0.7)
    assert b.fair == 0.125 and b.ratio == pytest.approx(5.6)
    assert b.stacked == () and b.most_stacked == 1


def test_an_even_spread_is_ratio_one_and_idle_is_no_verdict():
    cpus = {q: QueueCpus((q,)) for q in range(4)}
    b = balance(dict.fromkeys(range(4), 2500), 4, cpus)
    assert b is not None and b.ratio == pytest.approx(1.0)
    assert balance(dict.fromkeys(range(4), 10), 4, cpus) is None  # 40 packets: no verdict


def test_busy_queues_stacked_on_one_cpu():
    cpus = {0: QueueCpus((3,)), 1: QueueCpus((3,)), 2: QueueCpus((3,)), 3: QueueCpus((5,))}
    b = balance({0: 3000, 1: 3000, 2: 3000, 3: 1000}, 4, cpus)
    assert b is not None and b.stacked == ((3, (0, 1, 2)),) and b.most_stacked == 3


def test_queues_in_use_from_channels():
    """ixgbe counts every allocated queue; the fair share is over the channels in use."""
    gauges = {SeriesKey("nic_channels", (("type", "combined"),)): 8.0}
    assert queues_in_use(gauges, 64) == 8
    assert queues_in_use({}, 64) == 64
    assert queues_in_use(gauges, 4) == 4


def test_cumulative_balance_of_a_sample(tmp_path):
    kernel = KernelNetdev([mlx5_device(4, 8, 150, rx_packets=[900, 100, 0, 0, 0, 0, 0, 5000])])
    s = samples(tmp_path, fixture_host(mlx5_nic()), kernel)["ens1f0np0"]
    b = cumulative_balance(s.counters, s.gauges)
    assert b is not None and b.busiest.queue == 7 and b.busiest.cpus == QueueCpus((15,))
    assert b.busiest.share == pytest.approx(5000 / 6000)
    assert queue_cpus(s.gauges)[0] == QueueCpus((8,))


def test_deltas_across_wraps_and_reconfiguration():
    from nicwatch.model import Irq
    a = (Irq(5, "x", (10, (1 << 32) - 5), (0, 1), (1,)),)
    b = (Irq(5, "x", (10, 3), (0, 1), (1,)),)
    assert irq_deltas(a, b) == {5: {1: 8}}
    assert irq_deltas(b, b) == {5: {}}
    assert queue_deltas({0: 10, 1: 5}, {0: 12, 1: 9}) == {0: 2, 1: 4}
    assert queue_deltas({0: 10, 1: 5}, {0: 2, 1: 9}) is None  # reset: no window
    assert queue_deltas({0: 10}, {0: 12, 1: 9}) is None  # `ethtool -L`: no window


def test_driver_queue_packets_are_a_plan_summed_per_queue_in_queue_order() -> None:
    # bnxt_en counts a queue's packets in three counters (unicast, multicast, broadcast);
    # the names come in the driver's order, not the queues'. The plan made once per name
    # list sums them per queue, and a changed list gets a plan of its own.
    from nicwatch.model import NetClass, Reading, StatSet
    from nicwatch.normalize.drivers import TABLES
    from nicwatch.normalize.rxpath import rxpath_counters

    table = TABLES["bnxt_en"]
    names = ("[10]: rx_ucast_packets", "[2]: rx_ucast_packets", "rx_total_discard_pkts",
             "[10]: rx_mcast_packets", "[2]: rx_mcast_packets", "[2]: rx_bcast_packets",
             "[10]: rx_bcast_packets")

    def packets(names: tuple[str, ...], values: tuple[int, ...]) -> list[tuple[str, int, str]]:
        reading = Reading("eth0", 0.0, 0.0, NetClass("eth0", *[None] * 13),
                          stats=StatSet(names, values, 1))
        return [(dict(k.labels)["queue"], cv.raw, cv.source)
                for k, cv in rxpath_counters(reading, table).items()
                if k.metric == "nic_rx_queue_packets_total"]

    assert packets(names, (100, 7, 999, 10, 1, 0, 2)) == [
        ("2", 8, "ethtool_ioctl"), ("10", 112, "ethtool_ioctl")]
    assert packets(names, (0, 0, 5, 0, 0, 0, 0)) == [
        ("2", 0, "ethtool_ioctl"), ("10", 0, "ethtool_ioctl")]
    fewer = names[:3]  # the set changed: queue 10's other counters are gone
    assert packets(fewer, (100, 7, 999)) == [("2", 7, "ethtool_ioctl"),
                                            ("10", 100, "ethtool_ioctl")]
