"""The receive path consumer: windows between polls of a fixture host (mlx5 with its kernel
netdev records, sysfs and procfs in the kernel's formats), and the softirq share of the
CPUs serving each NIC."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nicwatch import metrics
from nicwatch.consumers.queue_spread import QueueSpread
from nicwatch.consumers.softirq import SoftirqLoad
from nicwatch.model import ExtraFamily

from fixture_netdev import KernelNetdev, mlx5_device
from fixture_rxpath import (
    FixtureHost,
    build,
    mlx5_collector,
    mlx5_nic,
    two_node_host,
    write_affinity,
    write_counts,
)
from netns import make_veth_pair, ns_python, ns_sh


class Host:
    """A two-node host with one ConnectX port whose counters the test moves."""

    def __init__(self, tmp_path: Path) -> None:
        self.fixture = FixtureHost(16, two_node_host(), [mlx5_nic()])
        self.sysfs, self.procfs = build(self.fixture, tmp_path)
        self.packets = [0] * 8
        self.kernel = KernelNetdev([mlx5_device(4, 8, 150, rx_packets=self.packets)])
        self.collector = mlx5_collector(self.sysfs, self.procfs, self.kernel)
        self.clock = 1000.0
        self.collector._monotonic = lambda: self.clock  # the samples' times

    def receive(self, per_queue: list[int], seconds: float = 5.0) -> None:
        """Packets per queue in the next window; interrupts on each queue's CPU."""
        for q, n in enumerate(per_queue):
            self.packets[q] += n
            irq = self.fixture.nics[0].irqs[1 + q]
            cpu = irq.effective[0]
            irq.counts[cpu] = irq.counts.get(cpu, 0) + n // 32
        self.kernel.devices = [mlx5_device(4, 8, 150, rx_packets=list(self.packets))]
        write_counts(self.fixture, self.sysfs, self.procfs)
        self.clock += seconds

    def poll(self):
        return self.collector.poll()


def by_name(families: list[ExtraFamily]) -> dict[str, dict[tuple, float]]:
    return {f.name: dict(f.series) for f in families}


DEV = (("device", "ens1f0np0"),)


def test_one_hot_queue_between_two_polls(tmp_path):
    host = Host(tmp_path)
    rx = QueueSpread(peak_window=60.0)
    rx.observe(host.poll())
    assert by_name(rx.families())[metrics.RX_QUEUE_BUSIEST_SHARE.name] == {}  # first poll
    host.receive([1000, 1000, 1000, 1000, 1000, 1000, 1000, 13000])
    rx.observe(host.poll())
    got = by_name(rx.families())
    assert got[metrics.RX_QUEUE_BUSIEST_SHARE.name] == {
        DEV + (("window", "poll"),): pytest.approx(0.65),
        DEV + (("window", "peak"),): pytest.approx(0.65)}
    assert got[metrics.RX_QUEUE_IMBALANCE.name][DEV + (("window", "poll"),)] == \
        pytest.approx(5.2)
    # the CPU that took queue 7's interrupts: 15, its completion vector's
    assert got[metrics.RX_QUEUE_BUSIEST.name] == {
        DEV + (("queue", "7"), ("cpus", "15")): pytest.approx(0.65)}
    assert got[metrics.IRQ_CPUS.name] == {DEV: 8.0}
    assert got[metrics.IRQS_MOVED.name] == {DEV: 0.0}
    assert got[metrics.RX_CPU_BUSY_QUEUES.name] == {DEV: 1.0}


def test_the_peak_window_keeps_the_worst_poll(tmp_path):
    host = Host(tmp_path)
    rx = QueueSpread(peak_window=12.0)
    rx.observe(host.poll())
    host.receive([9000, 1000, 0, 0, 0, 0, 0, 0])  # 0.9
    rx.observe(host.poll())
    host.receive([1000] * 8)  # even
    rx.observe(host.poll())
    got = by_name(rx.families())[metrics.RX_QUEUE_BUSIEST_SHARE.name]
    assert got[DEV + (("window", "poll"),)] == pytest.approx(0.125)
    assert got[DEV + (("window", "peak"),)] == pytest.approx(0.9)
    host.receive([1000] * 8)
    rx.observe(host.poll())  # 10 s after the hot poll: still within the 12 s window
    got = by_name(rx.families())[metrics.RX_QUEUE_BUSIEST_SHARE.name]
    assert got[DEV + (("window", "peak"),)] == pytest.approx(0.9)
    host.receive([1000] * 8)
    rx.observe(host.poll())  # 15 s after it: out of the window, as the tracker's peaks
    got = by_name(rx.families())[metrics.RX_QUEUE_BUSIEST_SHARE.name]
    assert got[DEV + (("window", "peak"),)] == pytest.approx(0.125)


def test_idle_is_no_verdict(tmp_path):
    host = Host(tmp_path)
    rx = QueueSpread()
    rx.observe(host.poll())
    host.receive([0, 0, 0, 0, 0, 0, 0, 30])  # ARP and LLDP
    rx.observe(host.poll())
    got = by_name(rx.families())
    assert got[metrics.RX_QUEUE_BUSIEST_SHARE.name] == {}
    assert got[metrics.RX_QUEUE_BUSIEST.name] == {}


def test_busy_queues_stacked_and_an_interrupt_moved(tmp_path):
    host = Host(tmp_path)
    rx = QueueSpread()
    rx.observe(host.poll())
    # irqbalance puts queues 1 and 2 on CPU 8, with queue 0: three busy queues on one core
    for q in (1, 2):
        irq = host.fixture.nics[0].irqs[1 + q]
        irq.affinity = irq.effective = (8,)
        write_affinity(irq, host.procfs)
    host.receive([3000, 3000, 3000, 1000, 0, 0, 0, 0])
    poll = host.poll()
    rx.observe(poll)
    got = by_name(rx.families())
    # queues 1 and 2 took their interrupts on CPU 8, outside the affinity known before
    assert got[metrics.IRQS_MOVED.name] == {DEV: 2.0}
    host.receive([3000, 3000, 3000, 1000, 0, 0, 0, 0])
    rx.observe(host.poll())
    got = by_name(rx.families())
    assert got[metrics.RX_CPU_BUSY_QUEUES.name] == {DEV: 3.0}
    assert got[metrics.IRQS_MOVED.name] == {DEV: 0.0}  # the affinity read since is CPU 8


def test_a_replaced_interface_starts_over(tmp_path):
    host = Host(tmp_path)
    rx = QueueSpread()
    rx.observe(host.poll())
    host.receive([5000] * 8)
    (sample,) = host.poll().samples
    renumbered = replace(sample, identity=replace(sample.identity, ifindex=99))
    rx.update([renumbered])
    assert rx.windows == {}


def test_softirq_share_of_the_serving_cpus(tmp_path):
    host = Host(tmp_path)
    (sample,) = host.poll().samples
    assert sample.rx_cpus == tuple(range(8, 16))
    load = SoftirqLoad()
    load.update(0.0, (0.0,) * 16)
    load.update(1.0, tuple(0.1 * (c % 10) for c in range(16)))  # CPU 9: 0.9 of the second
    load._samples = [sample]
    got = by_name(load.families())
    assert got[metrics.IRQ_CPU_SOFTIRQ_RATIO.name][DEV + (("stat", "max"),)] == \
        pytest.approx(0.9)
    per_cpu = got[metrics.RX_CPU_SOFTIRQ_RATIO.name]
    assert set(per_cpu) == {DEV + (("cpu", str(c)),) for c in range(8, 16)}
    assert per_cpu[DEV + (("cpu", "9"),)] == pytest.approx(0.9)


SKEW = """
import json, subprocess, sys
from nicwatch.collect import Collector, Selection
from nicwatch.consumers.queue_spread import QueueSpread
from nicwatch.sources.ethtool_ioctl import EthtoolIoctl

SEND = '''
import socket
for port in {{ports}}:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # a flow: its own hash
    for _ in range({{count}}):
        s.sendto(b"x" * 64, ("{{addr}}", port))
'''
collector = Collector("/sys", Selection(include={dev!r}), ioctl=EthtoolIoctl())
rx = QueueSpread()
rx.observe(collector.poll())
out = []
for ports, count in (([9], 4000), (list(range(5000, 5064)), 64)):
    subprocess.run(["ip", "netns", "exec", {ns_a!r}, sys.executable, "-c",
                    SEND.format(ports=ports, count=count, addr={addr!r})], check=True)
    rx.observe(collector.poll())
    win = rx.windows[{dev!r}]
    spread = win.balance
    out.append(None if spread is None else
               [spread.packets, spread.in_use, spread.busiest.queue, spread.ratio,
                sorted(s.packets for s in spread.shares)])
collector.close()
print(json.dumps(out))
"""


@pytest.mark.netns
def test_real_veth_traffic_one_flow_then_many():
    """For real: veth with 4 queues and GRO on (NAPI per rx queue, so its per-queue
    rx_queue_N_xdp_packets count; veth has no qstats). veth hands a packet to the peer's rx
    queue of the tx queue the sender's flow hash picked: one UDP flow lands on one queue
    (ratio 4: it took all), 64 flows spread over the four."""
    pair = make_veth_pair(queues=4, subnet=31)
    try:
        ns_sh(pair.ns_b, "ethtool", "-K", pair.b, "gro", "on")
        # veth takes the NAPI path only for packets it may coalesce: a sender without TSO
        # (veth_skb_is_eligible_for_gro)
        ns_sh(pair.ns_a, "ethtool", "-K", pair.a, "tso", "off")
        one, many = ns_python(pair.ns_b, SKEW.format(dev=pair.b, ns_a=pair.ns_a,
                                                     addr=pair.addr_b))
    finally:
        pair.delete()
    assert one is not None and many is not None
    packets, in_use, _queue, ratio, per_queue = one
    assert in_use == 4 and packets >= 4000
    assert ratio == pytest.approx(4.0, abs=0.01)  # one queue took (nearly) everything
    packets, in_use, _queue, ratio, per_queue = many
    assert packets >= 4096 and in_use == 4
    assert ratio < 2.0  # 64 flows over 4 queues: the busiest under twice its fair share
    assert all(n > 0 for n in per_queue)


def test_an_idle_window_scans_no_gauges_and_queue_labels_are_read_once(tmp_path, monkeypatch):
    """Unchanged is cheap: a window with too few packets for a verdict does not look up
    each queue's CPUs in the gauges (before: every poll did, for nothing), and a queue
    series' labels are parsed the first time it is seen only."""
    import nicwatch.consumers.queue_spread as consumer
    import nicwatch.normalize.rxpath as normalize

    host = Host(tmp_path)
    rx = QueueSpread(peak_window=60.0)
    rx.observe(host.poll())
    looked: list[int] = []
    real_cpus, real_number = consumer.queue_cpus, normalize._queue_number
    monkeypatch.setattr(consumer, "queue_cpus", lambda g: looked.append(1) or real_cpus(g))
    parsed: list[str] = []
    monkeypatch.setattr(normalize, "_queue_number",
                        lambda text: parsed.append(text) or real_number(text))
    host.receive([10] * 8)  # 80 packets: no verdict
    result = host.poll()
    parsed.clear()  # (normalizing the poll parses labels of its own)
    rx.observe(result)
    assert looked == [] and parsed == []  # the first poll's queue labels were kept
    assert by_name(rx.families())[metrics.RX_QUEUE_BUSIEST_SHARE.name] == {}
    host.receive([1000] * 7 + [13000])
    result = host.poll()
    parsed.clear()
    rx.observe(result)
    assert looked == [1]
    assert by_name(rx.families())[metrics.RX_QUEUE_BUSIEST_SHARE.name][
        DEV + (("window", "poll"),)] == pytest.approx(0.65)
