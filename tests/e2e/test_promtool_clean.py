"""`promtool check metrics` on what nicwatch serves (issue #42 item 9): the demo's /metrics as
a user scrapes it, and one sample of every family metrics.py declares (EXPORTED) (a family the demo
does not emit, such as one only a saturated IB PortCounter or a fault brings, is linted
too). The golden fixture hosts are checked in test_golden_metrics.py. promtool's lint
refuses, among others, a name holding a metric type (`_counter_`, `_gauge`): the RDMA
saturation gauge was nic_rdma_counter_saturated and failed it with exit status 3."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

from nicwatch.metrics import EXPORTED

from hostd import free_port
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
