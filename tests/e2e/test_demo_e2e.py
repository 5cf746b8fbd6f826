"""End to end: `nicwatch demo` scraped every second by a real Prometheus (Debian's
/usr/bin/prometheus) that loads the shipped rules. Every dashboard query returns data, every
rule evaluates without error, and the demo's scripted faults reach the alerts: the 1,024
ring among 8,192s (NicConfigDiffersFromPeers, NicRingSizeExpectationViolated) and the 200G
card at PCIe Gen4 x8 (NicPcieLinkDegraded, NicPcieBandwidthBelowLineRate), and their
diagnoses (NicDiagnosisHostReceive, NicDiagnosisPhysicalLayer).

The shipped alerts wait 5 to 15 minutes (`for`), so they are asserted pending; a test-only
copy of those rules without `for` (in its own group, next to the unchanged shipped
file) must fire. The long `for` durations themselves are covered by promtool unit tests."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from grafana import dashboards, queries
from paths import PROMETHEUS, REPO
from promtext import parse_exposition

RULES = REPO / "deploy" / "prometheus" / "nicwatch-rules.yml"
DEADLINE = 45.0  # seconds for every condition to hold
FAULTS = {  # alert -> labels that identify the scripted fault
    "NicConfigDiffersFromPeers": {"device": "enp4s0np0", "property": "rx_ring"},
    "NicRingSizeExpectationViolated": {"device": "enp4s0np0", "check": "rx_ring"},
    "NicPcieLinkDegraded": {"device": "enp1s0np0", "reason": "width"},
    "NicPcieBandwidthBelowLineRate": {"device": "enp1s0np0"},
    # diagnosis (docs/diagnosis.md): the small ring's drops and the marginal optic
    "NicDiagnosisHostReceive": {"device": "enp4s0np0", "signature": "host_rx_bottleneck"},
    "NicDiagnosisPhysicalLayer": {"device": "enp3s0np0", "signature": "physical_layer",
                                  "lane": "0"},
}
SHORT_FOR_GROUP = "e2e-short-for"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read()


def api(port: int, path: str, **params: str) -> dict:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    return json.loads(get(f"http://127.0.0.1:{port}/api/v1/{path}{query}"))["data"]


def short_for_copy() -> dict:
    """The fault alerts of the shipped file with `for` and `keep_firing_for` removed, and a
    `copy` label: without it both groups write the same ALERTS series, and Prometheus reports
    an "out of order sample" on whichever group evaluates second."""
    rules = [{k: v for k, v in rule.items() if k not in ("for", "keep_firing_for")}
             | {"labels": {**rule.get("labels", {}), "copy": SHORT_FOR_GROUP}}
             for group in yaml.safe_load(RULES.read_text())["groups"]
             for rule in group["rules"] if rule.get("alert") in FAULTS]
    assert len(rules) == len(FAULTS)
    return {"groups": [{"name": SHORT_FOR_GROUP, "rules": rules}]}


def dashboard_queries() -> list[tuple[str, str]]:
    return [(f"{name}: {title}", expr) for name, build in dashboards.DASHBOARDS.items()
            for title, expr in queries(build())]


def matches(alert: dict, name: str) -> bool:
    labels = alert["labels"]
    return labels["alertname"] == name and FAULTS[name].items() <= labels.items()


class Stack:
    """The demo and Prometheus, started by this test and stopped by their PIDs."""

    def __init__(self, tmp_path: Path) -> None:
        self.demo_port, self.prom_port = free_port(), free_port()
        (tmp_path / "short-for.yml").write_text(yaml.safe_dump(short_for_copy()))
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "rule_files": [str(RULES), str(tmp_path / "short-for.yml")],
            "scrape_configs": [{"job_name": "nicwatch", "static_configs": [
                {"targets": [f"127.0.0.1:{self.demo_port}"]}]}],
        }))
        self.demo_log = (tmp_path / "demo.log").open("w+")
        self.prom_log = (tmp_path / "prometheus.log").open("w+")
        self.demo = subprocess.Popen(
            [sys.executable, "-m", "nicwatch.cli.demo", "--interval=1s", "--log.format=json",
             f"--web.listen-address=127.0.0.1:{self.demo_port}"],
            stdout=self.demo_log, stderr=subprocess.STDOUT)
        self.prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.prom_port}", "--log.level=warn"],
            stdout=self.prom_log, stderr=subprocess.STDOUT)

    def stop(self) -> tuple[int, int]:
        for process in (self.prometheus, self.demo):
            if process.poll() is None:
                process.terminate()
        codes = (self.prometheus.wait(timeout=15), self.demo.wait(timeout=15))
        self.demo_log.close()
        self.prom_log.close()
        return codes

    def logs(self) -> str:
        return "".join(f"--- {f.name}\n" + Path(f.name).read_text()[-3000:]
                       for f in (self.demo_log, self.prom_log))


@pytest.fixture
def stack(tmp_path: Path):
    s = Stack(tmp_path)
    yield s
    s.stop()


def state(stack: Stack) -> dict:
    """Everything the test asserts, read once."""
    rules = [rule | {"group": group["name"]} for group in api(stack.prom_port, "rules")["groups"]
             for rule in group["rules"]]
    alerts = [rule_alert | {"group": rule["group"]} for rule in rules
              for rule_alert in rule.get("alerts", ())]
    empty = [title for title, expr in dashboard_queries()
             if not api(stack.prom_port, "query", query=expr)["result"]]
    return {"rules": rules, "alerts": alerts, "empty": empty}


def settled(s: dict) -> bool:
    evaluated = all(r["lastEvaluation"] > "2000" for r in s["rules"])
    shipped = all(any(matches(a, n) and a["group"] != SHORT_FOR_GROUP for a in s["alerts"])
                  for n in FAULTS)
    copies = all(any(matches(a, n) and a["group"] == SHORT_FOR_GROUP and a["state"] == "firing"
                     for a in s["alerts"]) for n in FAULTS)
    return evaluated and shipped and copies and not s["empty"]


def test_demo_under_prometheus_lights_up_dashboards_and_alerts(stack: Stack) -> None:
    deadline = time.monotonic() + DEADLINE
    while True:
        assert stack.demo.poll() is None and stack.prometheus.poll() is None, stack.logs()
        try:
            get(f"http://127.0.0.1:{stack.prom_port}/-/ready")
            s = state(stack)
        except OSError:  # not listening yet
            s = None
        if s is not None and (settled(s) or time.monotonic() > deadline):
            break
        time.sleep(1)
    assert s is not None, stack.logs()

    # Every rule of every group evaluates without error.
    broken = [(r["group"], r["name"], r.get("lastError")) for r in s["rules"]
              if r["health"] != "ok"]
    assert broken == [] and len(s["rules"]) > 30, broken
    # Every dashboard panel query returns data.
    assert s["empty"] == [], "\n".join(s["empty"])
    # The scripted faults reach the shipped alerts (pending: `for` not over yet) ...
    for name in FAULTS:
        shipped = [a for a in s["alerts"] if matches(a, name) and a["group"] != SHORT_FOR_GROUP]
        assert [a["state"] for a in shipped] in (["pending"], ["firing"]), (name, s["alerts"])
        # ... and fire without it.
        copy = [a for a in s["alerts"] if matches(a, name) and a["group"] == SHORT_FOR_GROUP]
        assert [a["state"] for a in copy] == ["firing"], (name, copy)
    ring = next(a for a in s["alerts"] if matches(a, "NicConfigDiffersFromPeers"))
    assert ring["annotations"]["description"].startswith(
        "enp4s0np0 has rx_ring 1024 while the median of the mlx5_core ports at 400 Gb/s it is "
        "compared with is 8192.")
    # Only the faulty ports are named.
    named = {a["labels"]["device"] for a in s["alerts"] if a["labels"]["alertname"] in FAULTS}
    # enp3s0np0: the optic's diagnosis; enp2s0np0: its bad lane 3 (physical_layer on lane 3)
    assert named == {"enp1s0np0", "enp2s0np0", "enp3s0np0", "enp4s0np0"}
    # One ring, one ring alert: the demo's [[expect]] check and its [[consistent]] group both
    # find the 1,024 ring (two nic_expectation_violation series); the alert is one series.
    rings = [a["labels"] for a in s["alerts"] if a["group"] == SHORT_FOR_GROUP
             and a["labels"]["alertname"] == "NicRingSizeExpectationViolated"]
    assert [(r["device"], r["check"], r["property"]) for r in rings] == [
        ("enp4s0np0", "rx_ring", "rx_ring")], rings
    violations = api(stack.prom_port, "query", query='nic_expectation_violation{device='
                     '"enp4s0np0", check=~"(consistent_)?rx_ring"} == 1')["result"]
    assert len(violations) == 2, violations

    # The demo says it is simulated, on /metrics and in its log.
    metrics = parse_exposition(get(f"http://127.0.0.1:{stack.demo_port}/metrics").decode())
    infos = [dict(labels) for name, labels in metrics if name == "nic_info"]
    assert len(infos) == 4 and {i["driver_version"] for i in infos} == {"simulated"}
    prometheus_code, demo_code = stack.stop()
    assert demo_code == 0 and prometheus_code == 0
    events = [json.loads(line) for line in Path(stack.demo_log.name).read_text().splitlines()
              if line.startswith("{")]
    assert events[0]["event"] == "simulated_hardware"
    assert events[-1]["event"] == "stopped"
