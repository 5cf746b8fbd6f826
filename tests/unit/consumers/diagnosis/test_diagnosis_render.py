"""The verdict in the views: the record/incident report opens with a "Verdict" section, and
`show` (one poll) carries the configuration signatures in its DIAGNOSIS column and JSON, over
the demo's simulated host."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nicwatch.cli.show import format_table, sample_json
from nicwatch.collect import Collector, Selection
from nicwatch.consumers.diagnosis.render import ONE_POLL, show_cell
from nicwatch.demo.simulate import (
    SimulatedDcb,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    Simulation,
    demo_ports,
)
from nicwatch.model import SeriesKey
from nicwatch.snapshot import report
from nicwatch.snapshot.diff import diff
from nicwatch.snapshot.records import build, poll_of
from nicwatch.sources.host import HostInfo

HOST = HostInfo("lab1", "6f0c1b1e-0d3a-4c55-9a51-2f1d2c3b4a59", 1764486000.0, "6.8.0-test",
                "#1 SMP")


@pytest.fixture(scope="module")
def polls(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo")
    now = [1000.0]
    sim = Simulation(demo_ports(4), seed=2, clock=lambda: now[0])
    tree = tmp / "sys"
    sim.write_sysfs(tree)
    collector = Collector(tree, Selection("enp.*"), ioctl=SimulatedEthtool(sim),
                          netlink=SimulatedEthtoolNetlink(sim), dcb=SimulatedDcb(sim),
                          monotonic=lambda: now[0])
    out = []
    for _ in range(2):
        result = collector.poll()
        out.append((result, poll_of(result.samples, 1764500000.0 + now[0], now[0],
                                    rdma=result.rdma)))
        now[0] += 20.0
        sim.write_counters(tree)
    return out


def test_the_report_opens_with_its_verdict(polls: list) -> None:
    before = build(HOST, [polls[0][1]], "before")
    after = build(HOST, [polls[1][1]], "after")
    rep = report.make_report(before, after, report.Run(("sleep", "20"), 0, 5.0),
                             diff(before, after), report.Timeline(), ())
    text = report.text_report(rep).splitlines()
    assert text[2:4] == ["Verdict", "-------"]
    body = "\n".join(text[4:text.index("", 4)])
    assert "enp2s0np0 priority 3: Paused by the peer (victim) (paused_by_peer) holds" in body
    assert "enp3s0np0: Physical layer (physical_layer) holds" in body
    assert "enp4s0np0: Host receive bottleneck (host_rx_bottleneck) holds" in body
    assert "nic_rx_out_of_buffer_drops_total +" in body  # evidence under each
    doc = report.json_report(rep)
    assert {(v["device"], v["signature"]) for v in doc["verdict"]} >= {
        ("enp2s0np0", "paused_by_peer"), ("enp3s0np0", "physical_layer")}


def test_a_report_of_one_reading_says_it_could_not_diagnose(polls: list) -> None:
    one = build(HOST, [polls[0][1]])
    rep = report.make_report(one, one, None, diff(one, one), report.Timeline(), ())
    text = report.text_report(rep)
    assert "Verdict\n-------\nnot diagnosed: no interface has two readings" in text


def test_show_column_and_json(polls: list) -> None:
    result = polls[1][0]
    sample = result.samples[1]
    assert show_cell(sample) == "-"  # the demo's QoS profile is right
    ecn = SeriesKey("nic_roce_ecn_enabled", (("point", "np"), ("priority", "3")))
    assert ecn in sample.gauges
    broken = dataclasses.replace(sample, gauges={**sample.gauges, ecn: 0.0})
    assert show_cell(broken) == "congestion_control_misconfigured"
    table = format_table([broken])
    assert "DIAGNOSIS" in table.splitlines()[0]
    assert table.splitlines()[1].rstrip().endswith("congestion_control_misconfigured")
    doc = sample_json(broken)["diagnosis"]
    assert doc["evaluated"] == ONE_POLL
    assert [v["signature"] for v in doc["holds"]] == ["congestion_control_misconfigured"]
    (v,) = doc["holds"]
    assert any(e["series"] == 'nic_roce_ecn_enabled{point="np",priority="3"}'
               for e in v["evidence"])


def test_the_rates_are_unknown_in_one_poll_never_healthy(polls: list, tmp_path: Path) -> None:
    """One reading: every rate-based signature is unknown, so none holds and none is said
    to be fine; the JSON says what was evaluated."""
    from nicwatch.consumers.diagnosis.engine import Window, evaluate
    from nicwatch.consumers.diagnosis.windows import gauges_of
    s = polls[1][0].samples[3]
    verdicts = evaluate([Window(s.identity.device, 0.0, {}, {}, gauges_of(s.gauges))],
                        all_verdicts=True)
    rate_based = [v for v in verdicts if v.signature == "host_rx_bottleneck"]
    assert rate_based and all(not v.holds for v in rate_based)
    assert rate_based[0].conditions[0].held is None
