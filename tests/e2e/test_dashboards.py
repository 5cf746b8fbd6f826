"""The Grafana dashboards: generated == committed, and a lint in the spirit of
grafana/dashboard-linter (a Go binary that cannot be installed here): one datasource
variable and no hard-coded datasource, multi-value job/instance variables, every query
selecting the dashboard's variables, $__rate_interval in every rate, counters only inside
rate/increase, known units, bits for throughput, unique panel ids, and every query parsed by
promtool. The lint is also run on broken dashboards to show it catches each problem."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from grafana import GRAFANA, dashboards

NAMES = sorted(dashboards.DASHBOARDS)
DS = {"type": "prometheus", "uid": "${datasource}"}
# Grafana unit ids (packages/grafana-data valueFormats: "dBm" Signal, "celsius" Temperature).
UNITS = {"bps", "pps", "cps", "percentunit", "s", "short", "sci", "none", "dBm", "celsius",
         "dateTimeAsIso"}  # Grafana's "Date & time" unit of epoch milliseconds
SELECTOR = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}')
METRIC = re.compile(r'(?<![\w:"$])((?:nic|nicwatch)_[a-z0-9_]+|[a-z_]+:[a-z0-9_]+:[a-z0-9_]+'
                    r'|up|ALERTS)(?![\w(])')
RANGE_FUNCTION = re.compile(r"\b(rate|irate|increase)\(\s*[^\[]*\[([^\]]*)\]")
RAW_COUNTER = re.compile(r"\b\w+_total\{[^}]*\}(\[[^\]]*\])?")
FLEET_WIDE = ("peer_group:",)  # aggregates over every host: no job or instance labels


def committed(name: str) -> dict:
    return json.loads((GRAFANA / name).read_text())


def expressions(name: str) -> list[str]:
    return [t["expr"] for _, t in dashboards.iter_targets(committed(name))]


def substituted(expr: str) -> str:
    """An expression with the dashboard variables replaced by concrete values."""
    for var, value in (("$__rate_interval", "2m"), ("$__range", "1h"), ("$__interval", "30s"),
                       ("$job", ".+"), ("$instance", ".+"), ("$device", ".+")):
        expr = expr.replace(var, value)
    return expr


def _datasources(node) -> Iterator[object]:
    if isinstance(node, dict):
        if "datasource" in node:
            yield node["datasource"]
        for value in node.values():
            yield from _datasources(value)
    elif isinstance(node, list):
        for value in node:
            yield from _datasources(value)


def lint_query(expr: str, per_device: bool) -> list[str]:
    problems = []
    selectors = dict(SELECTOR.findall(expr))
    for metric in METRIC.findall(re.sub(r'"[^"]*"', '""', expr)):
        if metric.startswith(FLEET_WIDE):
            continue
        wanted = ['job=~"$job"', 'instance=~"$instance"']
        if per_device and metric.startswith("nic_rdma_") and (
                'device=~"(|$device)"' in selectors.get(metric, "")):
            pass  # RDMA ports: InfiniBand ports have no device label (grafana RDMA_HOST)
        elif per_device and metric.startswith(("nic_", "device:")):
            wanted.append('device=~"$device"')
        for matcher in wanted:
            if matcher not in selectors.get(metric, ""):
                problems.append(f"{metric} lacks {matcher}: {expr}")
    for function, window in RANGE_FUNCTION.findall(expr):
        if window != "$__rate_interval" and not (function == "increase" and window == "$__range"):
            problems.append(f"{function}() over [{window}]: {expr}")
    for match in RAW_COUNTER.finditer(expr):
        if not match.group(1):
            problems.append(f"counter {match.group(0)} outside rate()/increase(): {expr}")
    return problems


def lint(dash: dict, per_device: bool) -> list[str]:
    """Everything wrong with a dashboard, as messages; empty when it is clean."""
    problems = []
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    datasource = variables.get("datasource", {})
    if datasource.get("type") != "datasource" or datasource.get("query") != "prometheus":
        problems.append("no prometheus datasource variable named datasource")
    for var in ("job", "instance", *(("device",) if per_device else ())):
        v = variables.get(var, {})
        if not (v.get("type") == "query" and v.get("multi") and v.get("includeAll")
                and v.get("allValue") == ".+"):
            problems.append(f"variable {var} is not a multi-value query with All = .+")
    body = {k: v for k, v in dash.items() if k != "annotations"}  # the built-in annotation
    problems += [f"hard-coded datasource {ds}" for ds in _datasources(body) if ds != DS]
    ids = [p["id"] for p in dash["panels"]]
    if len(ids) != len(set(ids)):
        problems.append("duplicate panel ids")
    for panel in dash["panels"]:
        if panel["type"] == "row":
            continue
        title = panel["title"]
        if not (title and panel.get("description")):
            problems.append(f"panel {panel['id']} lacks a title or description")
        if not panel.get("targets"):
            problems.append(f"{title}: no queries")
        config = panel["fieldConfig"]
        unit = config["defaults"].get("unit")
        units = [unit] + [p["value"] for o in config["overrides"] for p in o["properties"]
                          if p["id"] == "unit"]
        problems += [f"{title}: unknown unit {u}" for u in units if u and u not in UNITS]
        if unit == "bps" and not all(t["expr"].endswith("* 8") for t in panel["targets"]):
            problems.append(f"{title}: bits per second from a query not multiplied by 8")
        for t in panel["targets"]:
            problems += [f"{title}: {p}" for p in lint_query(t["expr"], per_device)]
            if panel["type"] == "timeseries" and not re.search(r"\{\{(device|instance)\}\}",
                                                              t["legendFormat"]):
                problems.append(f"{title}: legend {t['legendFormat']!r} names no port")
    return problems


@pytest.mark.parametrize("name", NAMES)
def test_committed_dashboard_is_what_the_generator_writes(name: str) -> None:
    assert (GRAFANA / name).read_text() == dashboards.render(dashboards.DASHBOARDS[name]()), (
        "stale: run .venv/bin/python grafana/generate.py")


def test_generator_check_mode_agrees() -> None:
    r = subprocess.run([sys.executable, str(GRAFANA / "generate.py"), "--check"],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("name", NAMES)
def test_dashboard_is_clean(name: str) -> None:
    assert lint(committed(name), per_device="host" in name) == []


@pytest.mark.parametrize("name", NAMES)
def test_importable_classic_dashboard(name: str) -> None:
    dash = committed(name)
    assert dash["schemaVersion"] == dashboards.SCHEMA_VERSION
    assert dash["uid"] == name.removesuffix(".json") and dash["id"] is None
    for panel in dash["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]


def test_lint_finds_each_kind_of_problem() -> None:
    dash = copy.deepcopy(committed("nicwatch-host.json"))
    panel = next(p for p in dash["panels"] if p["title"] == "Kernel netdev traffic")
    panel["targets"][0]["expr"] = 'rate(nic_rx_bytes_total{job=~"$job"}[5m])'
    panel["targets"][1]["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
    panel["fieldConfig"]["defaults"]["unit"] = "Bps/s"
    phy = next(p for p in dash["panels"] if p["title"] == "Physical port (including RDMA)")
    phy["targets"][0]["expr"] = phy["targets"][0]["expr"].removesuffix(" * 8")
    dash["panels"][2]["id"] = dash["panels"][1]["id"]
    next(v for v in dash["templating"]["list"] if v["name"] == "job")["multi"] = False
    problems = "\n".join(lint(dash, per_device=True))
    for expected in ('nic_rx_bytes_total lacks instance=~"$instance"',
                     'nic_rx_bytes_total lacks device=~"$device"', "rate() over [5m]",
                     "hard-coded datasource", "unknown unit Bps/s", "duplicate panel ids",
                     "variable job is not a multi-value query",
                     "bits per second from a query not multiplied by 8"):
        assert expected in problems
    summed = 'sum(nic_rx_bytes_total{job=~"$job", instance=~"$instance"})'
    assert lint_query(summed, False) == [
        f'counter {summed[4:-1]} outside rate()/increase(): {summed}']


def test_every_query_parses(tmp_path: Path) -> None:
    """promtool parses each query (as a recording rule) after variable substitution."""
    queries = [substituted(e) for name in NAMES for e in expressions(name)]
    rules = [f"      - record: q{i}\n        expr: {json.dumps(q)}" for i, q in enumerate(queries)]
    path = tmp_path / "queries.yml"
    path.write_text("groups:\n  - name: q\n    rules:\n" + "\n".join(rules) + "\n")
    r = subprocess.run(["promtool", "check", "rules", "--lint=none", str(path)],
                       check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(rules)} rules found" in r.stdout
    path.write_text("groups:\n  - name: q\n    rules:\n      - record: q\n"
                    "        expr: rate(x[5m]\n")
    assert subprocess.run(["promtool", "check", "rules", str(path)],
                          check=False, capture_output=True).returncode != 0
