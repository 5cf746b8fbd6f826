"""Issue #30's "done when": a 400G port (8 x 50G PAM4 lanes, RS(544,514)) with one bad lane
is named by lane on /metrics, in `nicwatch show`, in `nicwatch check` (fec_lane_ber) and,
with deploy/prometheus/tests/phy.yml, by the alert, while its aggregate ratio stays below
the threshold. The port is a ConnectX-7 on a fixture host (sysfs and procfs in the kernel's
formats, its recorded mlx5 `ethtool -S`) whose ethtool netlink replies are built in the
kernel's layout (tests/helpers/fixture_linkphysics.py); the error rates are chosen: lane 5 at
1e-4, the others at 2e-7."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from nicwatch.cli.check import check_once
from nicwatch.cli.show import format_table
from nicwatch.collect import Collector, Selection
from nicwatch.consumers.checks import evaluate, parse_expectations
from nicwatch.consumers.linkphysics import LinkPhysicsConsumer, with_physics
from nicwatch.exporter.render import SelfStats, render
from nicwatch.tracker import Tracker

from fixture_ethtool import RecordedEthtool
from fixture_linkphysics import Port400G
from fixture_rxpath import FixtureHost, build, mlx5_nic, two_node_host
from paths import ETHTOOL
from promtext import parse_exposition, promtool_check, series
from snapshot_helpers import HOST

RS544_THRESHOLD = 2.4e-5  # deploy/prometheus/thresholds.toml NicPreFecBerHigh.by_fec.rs544
CHECK = "[[expect]]\nall = true\nfec_lane_ber = 'within_limit'\n"
DEV = "ens1f0np0"


def collector(tmp_path, port: Port400G) -> tuple[Collector, list[float]]:
    nic = mlx5_nic(ifindex=port.ifindex)
    sysfs, procfs = build(FixtureHost(16, two_node_host(), [nic]), tmp_path)
    clock = [1000.0]
    return Collector(sysfs, Selection(include=".*"), procfs=procfs, netlink=port,
                     ioctl=RecordedEthtool({DEV: {"stats": ETHTOOL / "mlx5_core.txt",
                                                  "driver": "mlx5_core"}}),
                     monotonic=lambda: clock[0]), clock


def two_polls(tmp_path, port: Port400G):
    c, clock = collector(tmp_path, port)
    tracker, physics = Tracker(), LinkPhysicsConsumer()
    try:
        for _ in range(2):
            result = c.poll()
            tracked = tracker.update(result.samples)
            physics.observe(result, tracked)
            clock[0] += port.seconds
    finally:
        c.close()
    stats = SelfStats(polls=2, last_poll_time=1_790_000_005.0,
                      durations={"read": 0.001, "normalize": 0.001, "track": 0.0, "render": 0.0})
    # every series, the FEC codeword histogram included (--collector.detail=full)
    text = render(tracked, stats, extra=physics.families(), detail="full").decode()
    return tracked, parse_exposition(text), text


def test_the_bad_lane_is_named_on_metrics_while_the_port_total_looks_fine(tmp_path):
    port = Port400G(ifindex=4)
    _, exposition, text = two_polls(tmp_path, port)
    promtool_check(text)

    def ber(lane: str) -> float:
        return exposition[series("nic_pre_fec_ber", device=DEV, fec="rs544", lane=lane)]

    assert ber("5") == pytest.approx(1e-4, rel=1e-6)
    assert ber("5") > RS544_THRESHOLD
    assert all(ber(str(lane)) == pytest.approx(2e-7, rel=1e-3) for lane in range(8)
               if lane != 5)
    # (1e-4 + 7 x 2e-7) / 8 = 1.27e-5: the port's own ratio stays below the threshold.
    assert ber("total") == pytest.approx((1e-4 + 7 * 2e-7) / 8, rel=1e-6)
    assert ber("total") < RS544_THRESHOLD
    assert exposition[series("nic_link_lane_serdes_bytes_per_second", device=DEV)] * 8 == 53.125e9
    assert exposition[series("nic_link_lanes", device=DEV)] == 8
    # Histogram: the worst codewords had 13 corrected symbols of RS(544,514)'s 15.
    assert exposition[series("nic_fec_margin_symbols", device=DEV, lane="total")] == 2
    assert exposition[series("nic_fec_codewords_total", device=DEV, bin_low="13",
                             bin_high="13", lane="total")] == 2 * (10 ** 9 >> 13)
    # The per-lane counters: the netlink lanes win over mlx5's own rx_err_lane_N_phy.
    assert exposition[series("nic_fec_lane_bit_errors_total", device=DEV, lane="5")] == (
        2 * port.per_poll_bits()[5])
    # LINKSTATE_GET's down count is the NIC's own (3), not mlx5's link_down_events_phy.
    assert exposition[series("nic_link_down_events_total", device=DEV)] == 3
    assert not any(k[0] == "nic_link_down_reason" for k in exposition)  # the link is up


def test_check_fails_naming_the_lane_and_a_healthy_busy_port_passes(tmp_path):
    tracked, _, _ = two_polls(tmp_path / "bad", Port400G(ifindex=4))
    expectations = parse_expectations(tomllib.loads(CHECK), "host.toml")
    (result,) = evaluate(expectations, with_physics(tracked)).results
    assert (result.check, result.passed) == ("fec_lane_ber", False)
    assert result.actual == "lane 5 BER 1.0e-04 > 2.4e-05 (rs544)"
    assert result.fix is not None and "lane 5" in result.fix
    # Busy and healthy: every lane at 1e-5 (corrections all the time, as on any PAM4 link).
    healthy, _, _ = two_polls(tmp_path / "ok", Port400G(ifindex=4, bad_ber=1e-5, good_ber=1e-5))
    (ok,) = evaluate(expectations, with_physics(healthy)).results
    assert (ok.passed, ok.actual) == (True, "within_limit")
    # One poll has no rate: the check reports the value absent, not a pass.
    (once,) = evaluate(expectations, [t.sample for t in tracked]).results
    assert (once.passed, once.actual) == (False, "absent")


def test_nicwatch_check_polls_twice_for_the_ratio(tmp_path):
    port = Port400G(ifindex=4)
    c, clock = collector(tmp_path, port)
    waited = []

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        clock[0] += port.seconds

    expectations = parse_expectations(tomllib.loads(CHECK), "host.toml")
    report, _ = check_once(c, expectations, sleep=sleep)
    assert waited == [1.0] and port.polls == 2
    assert report.results[0].actual == "lane 5 BER 1.0e-04 > 2.4e-05 (rs544)"


def test_show_names_the_lane_and_why_a_link_is_down(tmp_path):
    tracked, _, _ = two_polls(tmp_path / "bad", Port400G(ifindex=4))
    table = format_table(with_physics(tracked))
    header = next(line for line in table.splitlines() if "PRE-FEC BER" in line)
    row = next(line for line in table.splitlines()[table.splitlines().index(header):]
               if line.startswith(DEV))
    assert "lane 5 1.0e-04 (2.4e-04)" in row and "rs544" in row and "1.3e-05" in row
    # The link down with the driver's reason: bad signal integrity, serdes ALOS (3, 4).
    down, exposition, _ = two_polls(tmp_path / "down", Port400G(ifindex=4, down=(3, 4)))
    assert exposition[series("nic_link_down_reason", device=DEV,
                             reason="bad_signal_integrity", subreason="serdes_alos")] == 1
    assert "bad_signal_integrity/serdes_alos" in format_table(with_physics(down))


def test_the_record_report_names_the_lane_and_the_downs(tmp_path):
    """`nicwatch record`'s report over the run: the worst lane's ratio from the counters'
    deltas over the whole run (3 polls, 10 s), the port's, and the link downs counted."""
    from nicwatch.snapshot import report
    from nicwatch.snapshot.files import build, diff, poll_of

    port = Port400G(ifindex=4)
    c, clock = collector(tmp_path, port)
    tracker, timeline, polls = Tracker(), report.Timeline(), []
    try:
        for _ in range(3):
            samples = c.poll().samples
            timeline.add(samples[0].monotonic, tracker.update(samples))
            polls.append(poll_of(samples, samples[0].time, samples[0].monotonic))
            port.down_cnt += 1  # the NIC counts one link down between polls
            clock[0] += port.seconds
    finally:
        c.close()
    before, after = build(HOST, polls[:1], "before"), build(HOST, polls[-1:], "after")
    text = report.text_report(report.make_report(before, after, None, diff(before, after),
                                                 timeline, ["a.json", "b.json"]))
    line = next(x for x in text.splitlines() if x.strip().startswith("Link:"))
    assert line.strip() == ("Link: went down 0 (carrier), 2 (NIC's count) times; pre-FEC BER "
                            "worst lane 5 1.0e-04, port 1.3e-05, rs544 limit 2.4e-04.")


def test_a_check_on_a_down_link_says_why_it_is_down(tmp_path):
    down, _, _ = two_polls(tmp_path, Port400G(ifindex=4, down=(5, 1)))  # cable_issue/unsupported
    samples = with_physics(down)
    expectations = parse_expectations(tomllib.loads(
        "[[expect]]\nall = true\nfec_lane_ber = 'within_limit'\n"), "host.toml")
    # The fixture's FEC counters still move, so make the check one a down link cannot answer.
    without_ber = [dataclasses.replace(s, gauges={k: v for k, v in s.gauges.items()
                                                  if k.metric != "nic_pre_fec_ber"})
                   for s in samples]
    (result,) = evaluate(expectations, without_ber).results
    assert (result.passed, result.actual) == (False, "absent")
    assert result.fix == ("# link down: cable_issue/unsupported_cable (the driver's extended "
                          "link state); ethtool ens1f0np0; nicwatch show")
