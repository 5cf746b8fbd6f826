"""`promtool check metrics` on what nicwatch serves (issue #42 item 9): the demo's /metrics as
a user scrapes it, every fixture host's, and one sample of every family metrics.py
declares (EXPORTED: a family neither emits, such as one only a fault brings, is linted
too). promtool's lint refuses, among others, a name holding a metric type (`_counter_`,
`_gauge`): the RDMA saturation gauge was nic_rdma_counter_saturated and failed it with exit
status 3."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.exporter.render import SelfStats, render
from nicwatch.metrics import EXPORTED
from nicwatch.tracker import Tracker

from hostd import free_port
from paths import SYSFS
from promtext import promtool_check
from waiting import wait_until


def _scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text: str = r.read().decode()
            return text
    except OSError:
        return ""


def test_the_demo_exposition_is_promtool_clean(tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "demo.log").open("w+")
    demo = subprocess.Popen([sys.executable, "-m", "nicwatch", "demo", "--interval=1s",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        # Three polls in: rates, peaks and the saturated PortCounter are all there.
        text = wait_until(lambda: (t := _scrape(port)) and
                          "nic_rdma_portcounters_saturated{" in t and
                          "nicwatch_polls_total 3" in t and t,
                          timeout=60, what="the demo's third poll", interval=0.5, alive=demo)
    finally:
        demo.terminate()
        demo.wait(timeout=15)
        log.close()
    promtool_check(text)


def test_every_declared_family_name_passes_promtool() -> None:
    lines = []
    for family in EXPORTED.values():  # every family metrics.py declares, as it is typed
        lines += [f"# HELP {family.name} {family.help}",
                  f"# TYPE {family.name} {family.type}", f"{family.name} 1"]
    promtool_check("\n".join(lines) + "\n")


FIXTURE_HOSTS = sorted(p.name for p in SYSFS.iterdir() if (p / "class" / "net").is_dir())


@pytest.mark.parametrize("host", FIXTURE_HOSTS)
def test_every_fixture_host_exposition_is_promtool_clean(host: str) -> None:
    """Every fixture sysfs tree (the golden tests pin ten of them byte for byte), each
    interface selected, two polls (rates and peaks), rendered with its RDMA ports."""
    collector = Collector(SYSFS / host, Selection(".*"), clock=lambda: 1_790_000_000.0,
                          monotonic=iter(range(0, 1000, 5)).__next__)
    tracker = Tracker()
    try:
        for _ in range(2):
            result = collector.poll()
            tracked = tracker.update(result.samples)
            rdma = tracker.update_rdma(result.rdma)
    finally:
        collector.close()
    assert tracked, f"{host}: no interface selected"
    stats = SelfStats(polls=2, last_poll_time=1_790_000_005.0,
                      durations={"read": 0.001, "normalize": 0.002, "track": 0.0, "render": 0.0})
    promtool_check(render(tracked, stats, rdma=rdma).decode())
