"""The record report: a ConnectX-7 run with a PAUSE storm and an out-of-buffer burst
(fixture tree and recorded counters), rendered by headless Chromium with its charts."""

import dataclasses
import html
import math
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from nicwatch.snapshot import report
from nicwatch.snapshot.files import build, diff, poll_of
from nicwatch.tracker import Tracker

from snapshot_helpers import HOST, mlx5_collector, mlx5_stats, write_stats

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")
GBIT = 125_000_000  # bytes per second in one Gb/s


@pytest.fixture(scope="module")
def storm(tmp_path_factory):
    """30 one-second polls: 100-300 Gb/s on the port, a 5 s PAUSE storm, one drop burst."""
    path = tmp_path_factory.mktemp("storm") / "eth2.txt"
    stats = mlx5_stats(4)
    collector = mlx5_collector(path, interval=1.0)
    tracker, timeline, polls = Tracker(), report.Timeline(), []
    for i in range(30):
        stats["tx_bytes_phy"] += 100 * GBIT * (1 + i % 3)
        stats["rx_bytes_phy"] += 90 * GBIT
        if 10 <= i < 15:
            stats["tx_pause_ctrl_phy"] += 50_000
            stats["tx_prio3_pause"] += 50_000
        if i == 12:
            stats["rx_out_of_buffer"] += 2281
        write_stats(path, stats)
        samples = collector.poll().samples
        timeline.add(samples[0].monotonic, tracker.update(samples))
        polls.append(poll_of(samples, samples[0].time, samples[0].monotonic))
    before, after = build(HOST, polls[:1], "before"), build(HOST, polls[-1:], "after")
    run = report.Run(("ib_write_bw", "-d", "mlx5_0", "--report_gbits"), 0, 1.0)
    return report.make_report(before, after, run, diff(before, after), timeline,
                              ["before.json", "after.json", "series.json.gz"])


class Charts(HTMLParser):
    """The charts of a rendered page: aria-label -> number of points of each line."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, list[int]] = {}
        self._current: str | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            self._current = attrs["aria-label"]
            self.charts[self._current] = []
        elif tag == "polyline" and self._current:
            self.charts[self._current].append(len(attrs["points"].split()))

    def handle_endtag(self, tag):
        if tag == "svg":
            self._current = None

    def handle_data(self, data):
        self.text.append(data)


def test_the_summary_states_totals_rates_and_the_pause_storm(storm):
    (s,) = storm.interfaces
    rows = {r.family: r for r in s.rows}
    tx = rows["nic_phy_tx_bytes_total"]
    assert tx.delta == sum(100 * GBIT * (1 + i % 3) for i in range(1, 30))
    assert tx.mean == pytest.approx(tx.delta / 29) and tx.peak == pytest.approx(300 * GBIT)
    # A PFC storm: the ConnectX 802.3 PAUSE control counter rises with the PFC frames and
    # is reported as such, not as 802.3x PAUSE (docs/field-notes.md).
    assert "nic_tx_pause_frames_total" not in rows
    pause = rows["nic_tx_pause_ctrl_frames_total"]
    assert (pause.delta, pause.peak) == (250_000, 50_000)
    pfc = [r for r in s.rows if r.family == "nic_tx_pfc_frames_total"]
    assert [(r.delta, r.peak) for r in pfc] == [(250_000, 50_000)]
    assert rows["nic_rx_out_of_buffer_drops_total"].delta == 2281
    text = report.text_report(storm)
    lines = [line.split() for line in text.splitlines()]
    # Which priority moved: the PFC family's breakdown by label follows its total.
    pfc_line = ["!", "nic_tx_pfc_frames_total", "250,000", "frames", "8.62k/s", "50k/s"]
    assert lines[lines.index(pfc_line) + 1] == ["priority=3", "250,000", "frames", "8.62k/s",
                                                "50k/s"], text
    assert ["!", "nic_tx_pause_ctrl_frames_total", "250,000", "frames", "8.62k/s",
            "50k/s"] in lines
    assert ["!", "nic_rx_out_of_buffer_drops_total", "2,281", "packets", "78.7/s",
            "2.28k/s"] in lines
    assert ["nic_phy_tx_bytes_total", "737,500,000,000", "B", "203", "Gb/s", "300",
            "Gb/s"] in lines
    assert f"boot id            {HOST.boot_id}" in text and "PCI 0000:41:00.0" in text


def test_the_report_renders_in_headless_chromium_with_its_charts(storm, tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, "Debian package chromium is needed (apt-get install chromium)"
    page = tmp_path / "report.html"
    page.write_text(report.html_report(storm))
    r = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        "--dump-dom", page.as_uri()], capture_output=True, text=True,
                       timeout=120, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    parsed = Charts()
    parsed.feed(r.stdout)
    assert set(parsed.charts) == {"Throughput", "PAUSE/PFC frames", "Drops and discards"}
    # 29 rates per line (the first poll has none); every line the port has is drawn.
    assert parsed.charts["Throughput"] == [29, 29, 29, 29]
    assert parsed.charts["PAUSE/PFC frames"] == [29, 29, 29, 29]
    assert 29 in parsed.charts["Drops and discards"]
    text = " ".join(parsed.text)
    assert "ib_write_bw -d mlx5_0 --report_gbits" in text and HOST.boot_id in text
    assert "no activity" not in text and "not counted" not in text


def test_long_runs_keep_their_peaks_and_missing_counters_say_so():
    times = [float(t) for t in range(5000)]
    values = [1.0] * 5000
    values[4321] = 250.0  # one burst in 5000 polls
    values[100] = math.nan  # a reset
    svg = report.svg_chart("Drops", "packets/s", times, [("rx", values)])
    points = [p for chunk in svg.split('points="')[1:] for p in chunk.split('"')[0].split()]
    assert len(points) <= report.MAX_POINTS
    ys = [float(p.split(",")[1]) for p in points]
    assert min(ys) == pytest.approx(report._TOP)  # the burst is the top of the scale
    assert "not counted by this interface" in report.svg_chart("PAUSE", "frames/s", times, [])
    assert "no activity" in report.svg_chart("PAUSE", "frames/s", times, [("rx", [0.0] * 5000)])


def test_the_drops_table_lists_every_drop_and_error_counter_that_moved(storm):
    """nic_tx_dropped_total is not a health family (no peak gauge), but a drop: the
    "Drops and errors" table lists it with the health families."""
    (s,) = storm.interfaces
    dropped = report.FamilyRow("nic_tx_dropped_total", "packets", False, 17, "ok", 0.5, 4.0)
    s = type(s)(s.device, s.identity, s.seconds, s.flags, (*s.rows, dropped),
                s.families | {"nic_tx_dropped_total"})
    text = "\n".join(report._counters_text(storm, s))
    trouble = text.partition("DROPS AND ERRORS")[2].partition("\n\n")[0]
    rows = {c[0]: c[1:] for c in (line.lstrip("! ").split() for line in trouble.splitlines()[1:])}
    assert rows["nic_rx_out_of_buffer_drops_total"][:2] == ["2,281", "packets"]
    assert rows["nic_tx_dropped_total"][:2] == ["17", "packets"]
    assert rows["nic_tx_dropped_total"][-1] == "4/s"  # the peak
    assert "nic_tx_bytes_total" not in trouble


def test_rates_use_one_convention_in_record_diff_and_incident_reports():
    from nicwatch.cli.snapshot import _rate_cell
    row = type("Row", (), {"rate": 1_930_000.0, "unit": "bytes"})()
    assert _rate_cell(row) == report.rate(1_930_000.0, "bytes") == "15.4 Mb/s"


@pytest.mark.parametrize("seconds, shown", [
    (3.21, "3.2 s"), (34.000999999, "34 s"), (39.993, "40 s"), (114.96, "1m55s"),
    (3599.6, "1h00m"), (7500, "2h05m"), (None, "-"), (float("nan"), "-"), (-1, "-")])
def test_durations_have_one_format_that_reads_at_a_glance(seconds, shown):
    """`nicwatch incidents` printed 34.000999999s and 1m54s960ms; one format everywhere."""
    assert report.duration(seconds) == shown


# Run in the page by the screenshot test only (the report itself has no script): the page's
# width, the table cells whose text wraps onto a second line, and the marks drawn.
MEASURE = """<script>
const cells = [...document.querySelectorAll('td, th')].filter(c => {
  const r = document.createRange(); r.selectNodeContents(c);
  const tops = [...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top));
  return new Set(tops).size > 1;
});
document.body.setAttribute('data-measured', JSON.stringify({
  width: document.documentElement.scrollWidth, viewport: window.innerWidth,
  wrapped: cells.map(c => c.textContent),
  marks: [...document.querySelectorAll('svg line.mark')].map(l => +l.getAttribute('x1'))}));
</script></body>"""


def _render(chromium, page, tmp_path, *extra, width=1400):
    r = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        f"--window-size={width},2000", *extra, page.as_uri()],
                       capture_output=True, text=True, timeout=120,
                       env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("width", [1280, 1400])
def test_the_incident_page_reads_at_1400_px_with_its_window_marked(storm, tmp_path, width):
    """Rendered by Chromium at 1,400 px and at 1,280 (issue #42 item 15): nothing
    overflows, no cell wraps, the onset and close are drawn on every chart at their
    moments, the breakdown names priority 3, and the PFC line is drawn over the dashed
    PAUSE-ctrl line it equals (mlx5)."""
    import json
    import re
    chromium = shutil.which("chromium")
    assert chromium, "Debian package chromium is needed (apt-get install chromium)"
    rep = dataclasses.replace(storm, title="nicwatch incident test", run=None,
                              marks=(("onset", 10.0), ("closed", 15.0)),
                              axis="time since 2026-09-21 14:15:00Z")
    page = tmp_path / "report.html"
    markup = report.html_report(rep)
    page.write_text(markup)
    _render(chromium, page, tmp_path, "--screenshot=report.png", width=width)
    assert (tmp_path / "report.png").stat().st_size > 10_000  # kept with the test run
    measured_page = tmp_path / "measured.html"
    measured_page.write_text(markup.replace("</body>", MEASURE))
    dom = _render(chromium, measured_page, tmp_path, "--dump-dom", width=width)
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found, dom[:500]
    m = json.loads(html.unescape(found.group(1)))
    assert m["viewport"] == width and m["width"] <= width, m
    assert m["wrapped"] == [], m
    # three charts, two marks each, 5 s apart on an axis that ends at the last poll (29 s:
    # 30 polls a second apart), not at a rounder 30 s
    plot = report.WIDTH - report._LEFT - report._RIGHT
    xs = sorted(set(m["marks"]))
    assert len(m["marks"]) == 6 and len(xs) == 2, m
    assert xs[0] == pytest.approx(report._LEFT + plot * 10 / 29, abs=0.1)
    assert xs[1] - xs[0] == pytest.approx(plot * 5 / 29, abs=0.1)
    assert "priority=3" in dom and "tx PFC prio 3" in dom
    pause = dom[dom.index('aria-label="PAUSE/PFC frames"'):]
    pause = pause[:pause.index("</svg>")]
    lines = re.findall(r'<polyline class="([^"]+)" stroke="[^"]+"[^>]*points="([^"]+)"', pause)
    ctrl = [i for i, (cls, _) in enumerate(lines) if "dashed" in cls]
    pfc = [i for i, (cls, points) in enumerate(lines) if "dashed" not in cls
           and points == lines[ctrl[-1]][1]]
    assert ctrl and pfc and max(ctrl) < min(pfc)  # the equal PFC line lies on top


@pytest.mark.parametrize("value, unit, shown", [
    (128_009_000_000.0, "bytes", "128,009,000,000 B"),  # a scaled counter (a float)
    (14_223_222_916, "bytes", "14,223,222,916 B"),
    (69.57162, "seconds", "69.5716 seconds"),
    (0.000125, "seconds", "0.000125 seconds"),
    (123_456.7, "", "123,457"),
    (2281, "packets", "2,281 packets")])
def test_amounts_have_one_number_format(value, unit, shown):
    """The reports mixed `1.28009e+11 B` with `14,223,222,916 B`: never an exponent."""
    assert report.amount(value, unit) == shown


def test_a_short_last_sample_is_merged_not_a_rate_of_its_own(tmp_path):
    """Issue #42 item 12: record's last sample, taken when the command exits, was 1.1 ms
    after the one before; its rate over 1.1 ms made the PEAK column (4.92 Gb/s against a
    true maximum of 4.36) and every chart's last point (the drops line falling to 0). The
    ConnectX counters here move in steps, as mlx5 refreshes them; 10 polls 1 s apart, then
    one 1.1 ms later that catches one step of bytes and no drop."""
    import itertools

    from nicwatch.collect import Collector, Selection

    from fixture_ethtool import RecordedEthtool
    from snapshot_helpers import SYSFS, T0

    interval, short = 1.0, 0.0011
    times = [1000.0 + i * interval for i in range(11)] + [1010.0 + short]
    tx_per_poll = [4.0, 4.36, 4.2, 4.1, 4.3, 4.25, 4.0, 4.36, 4.1, 4.2, 4.3]  # Gb/s
    path = tmp_path / "eth2.txt"
    stats = mlx5_stats(4)
    ports = {"eth2": {"stats": path, "driver": "mlx5_core",
                      "perm_address": "b8:3f:d2:41:00:00"}}
    clock = iter(times)
    wall = itertools.count(T0, interval)
    collector = Collector(SYSFS / "cx7-gen5-healthy", Selection(),
                          ioctl=RecordedEthtool(ports), clock=wall.__next__,
                          monotonic=clock.__next__)
    tracker, timeline, polls = Tracker(), report.Timeline(interval), []
    for i in range(12):
        if 0 < i <= 10:
            stats["tx_bytes_phy"] += int(tx_per_poll[i] * GBIT * interval)
            stats["rx_out_of_buffer"] += 100
        elif i == 11:  # one refresh step lands in the short sample: 4.92 Gb/s over it
            stats["tx_bytes_phy"] += int(4.92 * GBIT * short)
        write_stats(path, stats)
        samples = collector.poll().samples
        timeline.add(samples[0].monotonic, tracker.update(samples))
        polls.append(poll_of(samples, samples[0].time, samples[0].monotonic))
    collector.close()
    before, after = build(HOST, polls[:1], "before"), build(HOST, polls[-1:], "after")
    rep = report.make_report(before, after, report.Run(("true",), 0, interval),
                             diff(before, after), timeline, [])
    (s,) = rep.interfaces
    rows = {r.family: r for r in s.rows}
    assert rows["nic_phy_tx_bytes_total"].peak == pytest.approx(4.36 * GBIT, rel=1e-6)
    assert rows["nic_rx_out_of_buffer_drops_total"].peak == pytest.approx(100.0)
    lines = [line.split() for line in report.text_report(rep).splitlines()]
    tx = next(line for line in lines if line[:1] == ["nic_phy_tx_bytes_total"])
    assert tx[-2:] == ["4.36", "Gb/s"], tx
    # the charts: ten rates (the first poll has none), the last over 1.0011 s
    series = timeline.devices["eth2"]
    assert len(series.seconds) == 11 and series.seconds[-1] == pytest.approx(10 + short)
    drops = series.rates["nic_rx_out_of_buffer_drops_total"]
    assert drops[-1] == pytest.approx(100 / (1 + short))
    tx_last = series.rates["nic_phy_tx_bytes_total"][-1]
    assert tx_last == pytest.approx((4.3 * GBIT + 4.92 * GBIT * short) / (1 + short),
                                    rel=1e-6)
    assert report.json_report(rep)["interfaces"][0]["counters"]
