"""`nicwatch incidents` as a user types it (issue #42 item 7), on incidents the real consumer
captured over the demo's simulated ports: `show` takes a unique prefix of an id, as git
takes a commit's; a prefix of several is one line naming them (exit 2); `--dir` on a
directory that does not exist says so (exit 2) instead of "no incidents"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.consumers import incidents
from nicwatch.consumers.history import Recorder
from nicwatch.consumers.incidents import Capture, Incidents, Trigger
from nicwatch.demo.simulate import (
    SimulatedDcb,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    Simulation,
    demo_ports,
)
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import Tracker

HOST = HostInfo("lab1", "6f0c1b1e-0d3a-4c55-9a51-2f1d2c3b4a59", 1764486000.0, "6.8.0-test",
                "#1 SMP")
NICWATCH = [sys.executable, "-m", "nicwatch"]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Four incidents with one onset: a trigger on received bytes fires on every port."""
    tmp = tmp_path_factory.mktemp("incidents")
    now = [1000.0]
    sim = Simulation(demo_ports(4), seed=3, clock=lambda: now[0])
    sim.write_sysfs(tmp / "sys")
    collector = Collector(tmp / "sys", Selection("enp.*"), ioctl=SimulatedEthtool(sim),
                          netlink=SimulatedEthtoolNetlink(sim), dcb=SimulatedDcb(sim),
                          monotonic=lambda: now[0])
    tracker, history = Tracker(), Recorder(HOST, 1000)
    capture = Incidents(Capture(before=5.0, after=10.0,
                                triggers=(Trigger("rx", "nic_rx_bytes_total", 0.0),)),
                        tmp / "incidents", HOST, history)
    try:
        for _ in range(2):
            now[0] += 5.0
            sim.write_counters(tmp / "sys")
            samples = collector.poll().samples
            history.add(samples, 1764500000.0 + now[0], now[0])
            capture.observe(None, tracker.update(samples), 1764500000.0 + now[0], now[0])
        assert capture.flush()
    finally:
        capture.close(1.0)
        collector.close()
    ids = [i["id"] for i in incidents.listed(tmp / "incidents").items]
    assert len(ids) == 4
    return tmp / "incidents", ids


def incidents_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*NICWATCH, "incidents", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_show_takes_a_unique_prefix(captured: tuple[Path, list[str]]) -> None:
    directory, ids = captured
    full = incidents_cli("--dir", str(directory), "show", ids[0])
    assert full.returncode == 0 and ids[0].split("-")[1] in full.stdout, full.stderr
    # the onset and the interface: unique among four incidents of one onset
    stamp, device = ids[0].split("-")[:2]
    assert sum(i.startswith(f"{stamp}-{device}-") for i in ids) == 1
    short = incidents_cli("--dir", str(directory), "show", f"{stamp}-{device}")
    assert (short.returncode, short.stdout, short.stderr) == (0, full.stdout, "")


def test_a_prefix_of_several_is_one_line_naming_them(captured: tuple[Path, list[str]]) -> None:
    directory, ids = captured
    stamp = ids[0].split("-")[0]
    r = incidents_cli("--dir", str(directory), "show", stamp)
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == (f"nicwatch: error: incidents show: 4 incidents start with {stamp!r} "
                        f"({', '.join(sorted(ids)[:3])} and 1 more); give more of the id\n")
    missing = incidents_cli("--dir", str(directory), "show", "1999")
    assert missing.returncode == 1 and "no incident '1999'" in missing.stderr


def test_a_dir_that_does_not_exist_says_so(tmp_path: Path) -> None:
    gone = tmp_path / "incidnets"
    for args in ((), ("show", "20261204")):
        r = incidents_cli("--dir", str(gone), *args)
        assert (r.returncode, r.stdout) == (2, ""), r.stderr
        assert r.stderr == f"nicwatch: error: --dir {gone}: no such directory\n"
    empty = incidents_cli("--dir", str(tmp_path))  # an empty one has no incidents
    assert (empty.returncode, empty.stdout) == (0, f"no incidents in {tmp_path}\n")


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")
# Run in the page: how wide it lays out, and whether the verdict's block overflows its box.
MEASURE = """<script>
const v = document.querySelector('section.verdict pre');
document.body.setAttribute('data-measured', JSON.stringify({
  width: document.documentElement.scrollWidth, viewport: window.innerWidth,
  verdict: v ? [v.scrollWidth, v.clientWidth, v.textContent] : null}));
</script></body>"""


@pytest.mark.parametrize("width", [1280, 1400])
def test_the_incident_page_wraps_its_verdict(captured: tuple[Path, list[str]], tmp_path: Path,
                                             width: int) -> None:
    """Issue #42 item 15: the verdict of the marginal-optic port's incident (its `next:`
    lines run to 174 characters) ran past a 1,280 px page. The page the daemon wrote,
    opened in Chromium at 1,280 and 1,400 px: nothing overflows, every verdict line is
    there."""
    import html
    import json
    import re
    import shutil
    chromium = shutil.which("chromium")
    assert chromium, "Debian package chromium is needed (apt-get install chromium)"
    directory, ids = captured
    (inc_id,) = [i for i in ids if "-enp3s0np0-" in i]  # the demo's marginal optic
    text = (directory / inc_id / "report.txt").read_text()
    verdict = text[text.index("Verdict\n-------\n") + 16:].split("\n\n")[0].splitlines()
    assert max(len(line) for line in verdict) > 160  # wider than 1,280 px in monospace
    page = tmp_path / "report.html"
    page.write_text((directory / inc_id / "report.html").read_text().replace("</body>",
                                                                             MEASURE))
    r = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        f"--window-size={width},2000", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    found = re.search(r'data-measured="([^"]*)"', r.stdout)
    assert found, r.stdout[:500]
    m = json.loads(html.unescape(found.group(1)))
    assert m["viewport"] == width and m["width"] <= width, m
    scroll, client, shown = m["verdict"]
    assert scroll <= client, m
    assert all(line.strip() in shown for line in verdict if line.strip())
