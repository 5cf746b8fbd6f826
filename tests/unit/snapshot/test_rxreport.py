"""The receive path section of run reports: a two-node fixture host with one ConnectX-7 port
(its kernel netdev records, per-queue qstats, interrupts pinned one per CPU, softnet_stat in
the kernel's format) whose queue 7 takes most of the packets while its CPU squeezes; the
section names the hot queue, its share and its CPU in text, JSON and HTML."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from nicwatch.snapshot import report, rxreport
from nicwatch.snapshot.files import build, diff, poll_of
from nicwatch.tracker import Tracker

from fixture_netdev import KernelNetdev, mlx5_device
from fixture_rxpath import FixtureHost, mlx5_collector, mlx5_nic, two_node_host, write_counts
from fixture_rxpath import build as build_tree
from snapshot_helpers import HOST


class Run:
    def __init__(self, tmp_path: Path) -> None:
        self.fixture = FixtureHost(16, two_node_host(), [mlx5_nic()])
        for cpu in range(16):
            self.fixture.softnet[cpu] = [1000 * cpu, 0, 0, 0, 0]
        self.sysfs, self.procfs = build_tree(self.fixture, tmp_path)
        self.packets = [0] * 8
        self.kernel = KernelNetdev([mlx5_device(4, 8, 150, rx_packets=self.packets)])
        self.collector = mlx5_collector(self.sysfs, self.procfs, self.kernel)

    def receive(self, per_queue: list[int], squeeze: int = 0, dropped: int = 0) -> None:
        for q, n in enumerate(per_queue):
            self.packets[q] += n
            cpu = self.fixture.nics[0].irqs[1 + q].effective[0]
            row = self.fixture.softnet[cpu]
            row[0] += n
            if q == 7:
                row[1] += dropped
                row[2] += squeeze
        self.kernel.devices = [mlx5_device(4, 8, 150, rx_packets=list(self.packets))]
        write_counts(self.fixture, self.sysfs, self.procfs)

    def report(self, polls: int, per_queue: list[int], **kw) -> report.Report:
        tracker, timeline, taken = Tracker(), report.Timeline(), []
        for i in range(polls):
            if i:
                self.receive(per_queue, **kw)
            samples = self.collector.poll().samples
            timeline.add(samples[0].monotonic, tracker.update(samples))
            taken.append(poll_of(samples, samples[0].time, samples[0].monotonic))
        before, after = build(HOST, taken[:1], "before"), build(HOST, taken[-1:], "after")
        return report.make_report(before, after, report.Run(("iperf3", "-c", "x"), 0, 1.0),
                                  diff(before, after), timeline, ["before.json"])


def test_the_hot_queue_its_share_and_its_cpu(tmp_path):
    rep = Run(tmp_path).report(3, [1000, 1000, 1000, 1000, 1000, 1000, 1000, 23000],
                               squeeze=40, dropped=3)
    # 2 windows: 60,000 packets, queue 7 took 46,000 (76.67%, 6.13x the fair 12.5%)
    text = report.text_report(rep)
    assert ("Receive path: 60,000 packets over 8 receive queues (8 in use); busiest queue 7: "
            "46,000 packets, 76.67%, 6.13x its fair share of 12.50%, on CPU 15 (irq).") in text
    lines = text.splitlines()
    at = lines.index("    QUEUE  PACKETS   SHARE  CPU")
    assert lines[at + 1].split() == ["7", "46,000", "76.67%", "CPU", "15", "(irq)"]
    assert lines[at + 2].split() == ["0", "2,000", "3.33%", "CPU", "8", "(irq)"]
    # CPU 15: queue 7 alone, its packets, the squeeze and drops of its softnet line
    cpu_head = next(i for i, line in enumerate(lines) if line.strip().startswith("CPU  QUEUES"))
    assert lines[cpu_head].split() == ["CPU", "QUEUES", "SHARED", "PACKETS", "SHARE",
                                       "PROCESSED", "DROPPED", "TIME_SQUEEZE", "RECEIVED_RPS",
                                       "FLOW_LIMIT_COUNT"]
    assert lines[cpu_head + 1].split() == ["15", "7", "-", "46,000", "76.67%", "46,000", "6",
                                           "80", "0", "0"]

    got = json.loads(json.dumps(report.json_report(rep)))["interfaces"][0]["receive_path"]
    assert (got["packets"], got["queues_counted"], got["queues_in_use"]) == (60000, 8, 8)
    assert round(got["busiest_ratio"], 3) == 6.133
    assert got["queues"][0] == {"queue": 7, "packets": 46000, "share": 46000 / 60000,
                                "irq_cpus": [15], "rps_cpus": []}
    hot = got["cpus"][0]
    assert (hot["cpu"], hot["queues"], hot["packets"], hot["time_squeeze"], hot["dropped"]) == \
        (15, [7], 46000, 80, 6)
    assert got["notes"] == []

    page = report.html_report(rep)
    assert "<h3>Receive path</h3>" in page and "busiest queue 7: 46,000 packets" in page


def test_an_even_spread_and_too_few_packets_say_so(tmp_path):
    rep = Run(tmp_path).report(2, [5000] * 8)
    (s,) = rxreport.summaries(rep.diff, rep.after).values()
    assert s.ratio == 1.0 and s.queues[0].share == 0.125
    few = Run(tmp_path / "few").report(2, [10, 0, 0, 0, 0, 0, 0, 20])
    (s,) = rxreport.summaries(few.diff, few.after).values()
    assert s.ratio is None and s.packets == 30
    assert "fewer than 1,000 packets" in report.text_report(few)


def test_queues_without_interrupts_or_rps_name_no_cpu(tmp_path):
    """mlx5 per-queue counters (its `ethtool -S` rxN_packets) read without the receive path
    collector: the queues are counted, no CPU is guessed."""
    from snapshot_helpers import mlx5_collector, mlx5_stats, write_stats
    path = tmp_path / "eth2.txt"
    stats = mlx5_stats(4)
    write_stats(path, stats)
    collector = mlx5_collector(path)
    first = collector.poll().samples
    stats["rx2_packets"] += 3000
    write_stats(path, stats)
    second = collector.poll().samples
    a = build(HOST, [poll_of(first, first[0].time, first[0].monotonic)])
    b = build(HOST, [poll_of(second, second[0].time, second[0].monotonic)])
    rep = report.make_report(a, b, None, diff(a, b), report.Timeline(), [])
    text = report.text_report(rep)
    assert "busiest queue 2: 3,000 packets, 100.00%" in text and "on CPU unknown" in text
    assert "Note: no CPU known for its queues" in text
    got = report.json_report(rep)["interfaces"][0]["receive_path"]
    assert got["cpus"] == [] and got["queues"][0]["irq_cpus"] == []


def test_no_receive_path_series_no_section(tmp_path):
    rep = Run(tmp_path).report(2, [100] * 8)
    bare = rxreport.summarize(dataclasses.replace(rep.diff.interfaces[0], rows=()), None)
    assert bare is None and rxreport.text_lines(bare) == [] and rxreport.html_section(bare) == ""


def test_the_incident_report_has_the_section(tmp_path):
    """An incident opened by the hot CPU's time_squeeze rising: its report (cut from the
    flight recorder's history) names the hot queue and its CPU too."""
    from nicwatch.consumers import incidents
    from nicwatch.consumers.history import Recorder
    from nicwatch.consumers.incidents import Capture, Incidents, Trigger

    run = Run(tmp_path)
    clock = [1000.0]
    run.collector._monotonic = lambda: clock[0]
    squeeze = Trigger("squeeze", "nic_rx_cpu_time_squeeze_total", 1.0)
    history = Recorder(HOST, 100)
    inc = Incidents(Capture(before=10.0, after=10.0, triggers=(squeeze,)), tmp_path / "inc",
                    HOST, history)
    tracker = Tracker()
    for i in range(4):
        if i:
            run.receive([1000] * 7 + [23000], squeeze=40)
        clock[0] += 5.0
        samples = run.collector.poll().samples
        tracked = tracker.update(samples)
        history.add(samples, 1_790_000_000.0 + clock[0], clock[0])
        inc.observe(None, tracked, 1_790_000_000.0 + clock[0], clock[0])
    assert inc.flush()
    (item,) = incidents.listed(tmp_path / "inc").items
    text = (tmp_path / "inc" / item["id"] / "report.txt").read_text()
    assert "busiest queue 7:" in text and "on CPU 15 (irq)." in text, text
    got = json.loads((tmp_path / "inc" / item["id"] / "report.json").read_text())
    assert got["interfaces"][0]["receive_path"]["cpus"][0]["cpu"] == 15
