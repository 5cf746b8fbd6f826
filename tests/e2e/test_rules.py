"""The shipped Prometheus rules: generated == committed, promtool check and unit tests, and
the conventions every alert keeps (severity, summary, description, a runbook section, tests
that fire, do not fire, cross the `for` boundary and survive a counter reset), plus: every
metric a rule or dashboard reads is one nicwatch exports."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nicwatch.consumers import checks
from nicwatch.consumers import softirq as cpuload
from nicwatch.consumers.diagnosis.consumer import Diagnosis
from nicwatch.consumers.fabric import FabricRole
from nicwatch.consumers.identity import IdentityState
from nicwatch.consumers.incidents import Capture, Incidents
from nicwatch.consumers.linkphysics import LinkPhysicsConsumer
from nicwatch.consumers.queue_spread import QueueSpread
from nicwatch.exporter.render import SelfStats, render, render_age
from nicwatch.metrics import CANONICAL_COUNTERS, FAMILIES
from nicwatch.sources.host import read_host

from grafana import dashboards, load_script
from paths import REPO
from promtext import parse_exposition

PROMETHEUS = REPO / "deploy" / "prometheus"
RULES = PROMETHEUS / "nicwatch-rules.yml"
UNIT_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
RUNBOOKS = REPO / "docs" / "runbooks.md"
rules_generator = load_script(PROMETHEUS / "generate.py", "prometheus_generate")

SEVERITIES = {"critical", "warning", "info"}
METRIC = re.compile(r"\b((?:nic|nicwatch)_[a-z0-9_]+|[a-z_]+:[a-z0-9_]+:[a-z0-9_]+)\b")


@functools.cache
def shipped_groups() -> list[dict]:
    return yaml.safe_load(RULES.read_text())["groups"]


def alerts() -> dict[str, dict]:
    return {r["alert"]: r for g in shipped_groups() for r in g["rules"] if "alert" in r}


@functools.cache
def unit_tests() -> list[dict]:
    return [t for path in UNIT_TESTS for t in yaml.safe_load(path.read_text())["tests"]]


def exported_families(tmp_path: Path) -> set[str]:
    """Every family name nicwatch can put on /metrics, taken from the code that renders it."""
    names = set(FAMILIES) | {"nic_stat_resets_total", "nic_stat_wrap_safe_interval_seconds",
                             "nic_stat_wrap_ambiguous"}
    for name in CANONICAL_COUNTERS:
        base = FAMILIES[name].base
        names |= {f"{base}_per_second", f"{base}_peak_per_second"}
    body = render([], SelfStats(last_poll_time=1.0, durations={"read": 0.1},
                                source_errors={("sysfs", "eth0"): 1})).decode()
    names |= {name for name, _ in parse_exposition(body)}
    names |= {name for name, _ in parse_exposition(render_age(1.0, False).decode())}
    names |= {IdentityState(tmp_path / "identity.json").family([]).name,
              checks.VIOLATION.name, checks.CHECK_COUNT.name}
    names |= {f.name for f in cpuload.SoftirqLoad().families()}
    receive_path = QueueSpread()
    receive_path.update([])
    names |= {f.name for f in receive_path.families()}
    names |= {f.name for f in Incidents(Capture(), None, read_host("/proc")).families()}
    physics = LinkPhysicsConsumer()
    physics.observe(None, [])  # type: ignore[arg-type]
    names |= {f.name for f in physics.families()}
    names |= {f.name for f in Diagnosis().families()}
    names |= {f.name for f in FabricRole("gpu-backend").families()}
    return names


def test_committed_files_are_what_the_generator_writes() -> None:
    for path, text in rules_generator.outputs(rules_generator.load_settings()).items():
        assert path.read_text() == text, (
            f"{path} is stale: run .venv/bin/python deploy/prometheus/generate.py")


def test_promtool_check_rules_is_clean() -> None:
    r = subprocess.run(["promtool", "check", "rules", str(RULES)], check=False, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"SUCCESS: \d+ rules found", r.stdout) and "warning" not in r.stdout.lower()


def test_promtool_unit_tests_pass() -> None:
    r = subprocess.run(["promtool", "test", "rules", *map(str, UNIT_TESTS)],
                       check=False, capture_output=True, text=True, cwd=PROMETHEUS / "tests")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("SUCCESS") == len(UNIT_TESTS)


def test_prometheus_rule_resource_carries_the_same_groups() -> None:
    resource = yaml.safe_load((REPO / "deploy/kubernetes/prometheusrule.yaml").read_text())
    assert resource["apiVersion"] == "monitoring.coreos.com/v1"
    assert resource["kind"] == "PrometheusRule"
    assert resource["spec"]["groups"] == shipped_groups()


@pytest.mark.parametrize("name", sorted(alerts()))
def test_alert_conventions(name: str) -> None:
    rule = alerts()[name]
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    assert set(annotations) == {"summary", "description", "runbook_url"}
    assert annotations["runbook_url"].endswith(f"runbooks.md#{name.lower()}")
    runbook_headings = re.findall(r"^## (\w+)$", RUNBOOKS.read_text(), re.MULTILINE)
    assert name in runbook_headings


def test_runbooks_have_no_section_for_a_missing_alert() -> None:
    assert sorted(re.findall(r"^## (\w+)$", RUNBOOKS.read_text(), re.MULTILINE)) == sorted(alerts())


def _decreases(values: str) -> bool:
    """Whether a promtool `values` string starts a segment below an earlier one (a reset)."""
    starts = [float(m.group(0)) for token in values.split()
              if (m := re.match(r"-?[0-9.e]+", token))]
    return any(later < earlier for i, earlier in enumerate(starts) for later in starts[i + 1:])


@pytest.mark.parametrize("name", sorted(alerts()))
def test_every_alert_has_unit_tests(name: str) -> None:
    """Fires (with its annotations checked), does not fire, crosses its `for` boundary, and
    (for counter rules) sees a counter reset that must not fire."""
    rule = alerts()[name]
    groups = [t for t in unit_tests()
              if any(a["alertname"] == name for a in t.get("alert_rule_test", ()))]
    cases = [(t, a) for t in groups for a in t["alert_rule_test"] if a["alertname"] == name]
    firing = [a for _, a in cases if a.get("exp_alerts")]
    assert firing and all("exp_annotations" in e for a in firing for e in a["exp_alerts"])
    assert any(not a.get("exp_alerts") for _, a in cases), "no case where it must not fire"
    boundary = False
    for t in groups:
        times = {a["eval_time"]: bool(a.get("exp_alerts"))
                 for a in t["alert_rule_test"] if a["alertname"] == name}
        quiet = [_minutes(e) for e, fires in times.items() if not fires]
        loud = [_minutes(e) for e, fires in times.items() if fires]
        boundary |= any(q < f for q in quiet for f in loud)
    assert boundary, "no test has it quiet before and firing after"
    if re.search(r"\b(rate|increase)\(", rule["expr"]):
        assert any(_decreases(s["values"]) for t in groups for s in t["input_series"]), (
            "no counter reset in its tests")


def _minutes(duration: str) -> float:
    value, unit = re.fullmatch(r"([0-9.]+)([smh])", duration).groups()
    return float(value) * {"s": 1 / 60, "m": 1, "h": 60}[unit]


def test_rules_and_dashboards_read_only_exported_families(tmp_path: Path) -> None:
    exported = exported_families(tmp_path)
    recorded = {r["record"] for g in shipped_groups() for r in g["rules"] if "record" in r}
    exprs = [r["expr"] for g in shipped_groups() for r in g["rules"]]
    exprs += [t["expr"] for build in dashboards.DASHBOARDS.values()
              for _, t in dashboards.iter_targets(build())]
    used = {m for expr in exprs for m in METRIC.findall(expr)}
    assert used - exported - recorded == set()
    assert "nic_expectation_violation" in used and "nic_pcie_degraded" in used


@pytest.mark.parametrize(("text", "message"), [
    ("[alerts.NicRxPauseTimeHigh]\nfor = 10\n", "alerts.NicRxPauseTimeHigh.for: expected"),
    ("[labels]\nport = [\"job\", \"in stance\"]\n", "labels.port: expected a list of label names"),
    ("[runbooks]\nbase_url = 3\n", "runbooks.base_url: expected a URL"),
    ("[alerts.NicNope]\nfor = \"1m\"\nseverity = \"info\"\n", "unknown ['NicNope']"),
    ("[alerts.NicwatchDown]\nfor = \"1m\"\nseverity = \"page\"\n",
     "alerts.NicwatchDown.severity: expected one of critical, warning, info, got 'page'"),
])
def test_bad_thresholds_file_is_one_line_exit_2(tmp_path: Path, text: str, message: str) -> None:
    base = (PROMETHEUS / "thresholds.toml").read_text()
    section = text.split("\n", 1)[0]
    if section in base:  # replace that section of the shipped file
        start = base.index(section)
        end = base.find("\n[", start + 1)
        base = base[:start] + base[end + 1:] if end != -1 else base[:start]
    path = tmp_path / "thresholds.toml"
    path.write_text(base + "\n" + text)
    r = subprocess.run([sys.executable, str(PROMETHEUS / "generate.py"), "--check",
                        "--thresholds", str(path)], check=False, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and message in r.stderr and str(path) in r.stderr, r.stderr


def test_thresholds_change_the_rules(tmp_path: Path) -> None:
    """The one place: a threshold edited in thresholds.toml lands in the rule, its
    annotation and the PrometheusRule alike."""
    path = tmp_path / "thresholds.toml"
    path.write_text((PROMETHEUS / "thresholds.toml").read_text().replace(
        "threshold = 0.10  # fraction of time the peer", "threshold = 0.25  # fraction of time"))
    outputs = rules_generator.outputs(rules_generator.load_settings(path))
    for generated in (outputs[rules_generator.RULES_FILE],
                      outputs[rules_generator.PROMETHEUS_RULE_FILE]):
        rule = next(r for g in yaml.safe_load(generated).get("groups") or
                    yaml.safe_load(generated)["spec"]["groups"] for r in g["rules"]
                    if r.get("alert") == "NicRxPauseTimeHigh")
        assert rule["expr"].endswith("> 0.25") and "(threshold 25%)" in rule["annotations"][
            "description"]


def test_every_diagnosis_class_has_one_alert_covering_its_signatures() -> None:
    """Each signature class but the context (configuration drift) pages through one
    NicDiagnosis* alert whose signature regex names every signature of the class; before
    NicDiagnosisHostTransmit, tx_drops (host_transmit, #42 item 13) had none."""
    from nicwatch.consumers.diagnosis.signatures import CONTEXT, SIGNATURES
    covered: dict[str, set[str]] = {}
    for name, rule in alerts().items():
        m = re.fullmatch(r'nic_diagnosis\{signature=~"([^"]+)"\} == 1', rule["expr"])
        if m:
            covered[name] = set(m.group(1).split("|"))
    by_class: dict[str, set[str]] = {}
    for sig in SIGNATURES:
        if sig.klass != CONTEXT:
            by_class.setdefault(sig.klass, set()).add(sig.name)
    for klass, names in by_class.items():
        owners = [a for a, sigs in covered.items() if sigs & names]
        assert len(owners) == 1 and covered[owners[0]] == names, (klass, names, owners)
    assert set().union(*covered.values()) == {s.name for s in SIGNATURES
                                              if s.klass != CONTEXT}
