"""One fault, one page: for each fault of deploy/prometheus/tests/faults.yml, promtool shows
that exactly the alerts listed there fire (every other alert of the shipped rules is checked
to stay silent), and a real Alertmanager running the shipped configuration
(deploy/alertmanager/alertmanager.yml, generated from thresholds.toml's ``inhibits``) lets
exactly one of them through: the one the test's name says pages; the others are inhibited,
still listed as context."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from grafana import load_script
from paths import REPO

PROMETHEUS = REPO / "deploy" / "prometheus"
FAULTS = PROMETHEUS / "tests" / "faults.yml"
ALERTMANAGER_CONFIG = REPO / "deploy" / "alertmanager" / "alertmanager.yml"
rules_generator = load_script(PROMETHEUS / "generate.py", "prometheus_generate_one_page")


def faults() -> list[dict]:
    return yaml.safe_load(FAULTS.read_text())["tests"]


def page_of(test: dict) -> str:
    m = re.match(r"page (\w+): ", test["name"])
    assert m, f"{test['name']!r}: a fault's name starts with 'page <the alert that pages>: '"
    return m.group(1)


def all_alert_names() -> set[str]:
    rules = yaml.safe_load((PROMETHEUS / "nicwatch-rules.yml").read_text())
    return {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}


def test_each_fault_fires_exactly_the_alerts_listed(tmp_path: Path) -> None:
    """The alerts a fault fires, counted: every alert not listed for an evaluation time
    gets an empty expectation, so promtool fails if any other alert fires."""
    names = all_alert_names()
    document = yaml.safe_load(FAULTS.read_text())
    document["rule_files"] = [str(PROMETHEUS / "nicwatch-rules.yml")]
    for test in document["tests"]:
        listed = {(a["eval_time"], a["alertname"]) for a in test["alert_rule_test"]}
        firing = {a["alertname"] for a in test["alert_rule_test"] if a.get("exp_alerts")}
        assert page_of(test) in firing and len(firing) >= 2, test["name"]
        for eval_time in sorted({t for t, _ in listed}):
            test["alert_rule_test"] += [{"eval_time": eval_time, "alertname": name,
                                         "exp_alerts": []}
                                        for name in sorted(names)
                                        if (eval_time, name) not in listed]
    path = tmp_path / "faults-counted.yml"
    path.write_text(yaml.safe_dump(document))
    r = subprocess.run(["promtool", "test", "rules", str(path)], check=False,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr


def test_amtool_accepts_the_shipped_configuration() -> None:
    r = subprocess.run(["amtool", "check-config", str(ALERTMANAGER_CONFIG)], check=False,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    inhibit_rules = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())["inhibit_rules"]
    assert re.search(rf"- {len(inhibit_rules)} inhibit rules", r.stdout), r.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api(base: str, path: str, body: object = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read()
    return json.loads(text) if text else None


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    assert binary, "Alertmanager is not installed (scripts/test installs prometheus-alertmanager)"
    port = _free_port()
    proc = subprocess.Popen(
        [binary, f"--config.file={ALERTMANAGER_CONFIG}", f"--storage.path={tmp_path}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "alertmanager.log").open("w"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=5):
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    (tmp_path / "alertmanager.log").read_text())
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_alertmanager_pages_once_per_fault(alertmanager: str) -> None:
    """Every fault's alerts at once (each fault on its own port): one alert per fault is
    neither inhibited nor silenced, and it is the fault's page; the rest are inhibited."""
    now = datetime.now(UTC)
    posted, pages = [], set()
    for test in faults():
        pages.add(page_of(test))
        for case in test["alert_rule_test"]:
            for alert in case.get("exp_alerts") or ():
                posted.append({
                    "labels": {"alertname": case["alertname"], **alert["exp_labels"]},
                    "annotations": alert["exp_annotations"],
                    "startsAt": now.isoformat(), "endsAt": (now + timedelta(hours=1)).isoformat(),
                })
    _api(alertmanager, "/api/v2/alerts", posted)
    deadline = time.monotonic() + 15
    while True:
        shown = _api(alertmanager, "/api/v2/alerts?active=true&silenced=true&inhibited=true")
        assert isinstance(shown, list)
        notified = sorted(a["labels"]["alertname"] for a in shown
                          if a["status"]["state"] == "active")
        inhibited = [a for a in shown if a["status"]["inhibitedBy"]]
        if (len(shown) == len(posted) and len(notified) == len(faults())) or (
                time.monotonic() > deadline):
            break
        time.sleep(0.25)
    assert len(shown) == len(posted), "Alertmanager did not take every alert"
    assert notified == sorted(pages), (notified, len(posted))
    assert len(inhibited) == len(posted) - len(pages)
    assert all(a["status"]["state"] == "suppressed" for a in inhibited)


@pytest.mark.parametrize(("section", "message"), [
    ('inhibits = ["NicNope"]', "inhibits: NicNope: no such alert"),
    ('inhibits = ["NicPcieLinkDegraded"]', "an alert cannot hold itself back"),
    ('inhibits = ["NicwatchDown"]', "shorter than NicPcieLinkDegraded's"),
    ('inhibits = [\'NicExpectationViolated{property=="mtu"}\']', "bad matcher"),
    ('inhibits = [{ alert = "NicRxDiscards", also = 1 }]', "also: unknown key"),
])
def test_a_bad_inhibits_entry_is_one_line_exit_2(tmp_path: Path, section: str,
                                                  message: str) -> None:
    base = (PROMETHEUS / "thresholds.toml").read_text()
    head = "[alerts.NicPcieLinkDegraded]\n"
    start = base.index(head)
    end = base.index("\n[", start)
    body = f'{head}for = "5m"\nseverity = "warning"\n{section}\n'
    if "NicwatchDown" in section:  # an inhibitor that waits longer than its target
        body = body.replace('for = "5m"', 'for = "10m"').replace(
            "NicwatchDown", "NicPcieBandwidthBelowLineRate")
        message = "shorter than NicPcieLinkDegraded's (10m)"
    path = tmp_path / "thresholds.toml"
    path.write_text(base[:start] + body + base[end + 1:])
    r = subprocess.run([sys.executable, str(PROMETHEUS / "generate.py"), "--check",
                        "--thresholds", str(path)], check=False, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and message in r.stderr and str(path) in r.stderr, r.stderr


def test_a_cycle_of_inhibits_is_refused(tmp_path: Path) -> None:
    """Two alerts holding each other back would leave nothing to page."""
    text = (PROMETHEUS / "thresholds.toml").read_text().replace(
        '[alerts.NicPreFecBerHigh]\n', '[alerts.NicPreFecBerHigh]\ninhibits = ["NicCrcErrors"]\n'
    ).replace('[alerts.NicCrcErrors]\n', '[alerts.NicCrcErrors]\ninhibits = ["NicPreFecBerHigh"]\n')
    path = tmp_path / "thresholds.toml"
    path.write_text(text)
    with pytest.raises(rules_generator.ThresholdError, match="a cycle back to"):
        rules_generator.load_settings(path)
