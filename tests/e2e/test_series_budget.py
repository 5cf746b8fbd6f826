"""The series budget (--collector.detail, docs/metrics.md "Detail tiers"): what the default
exposition of the demo host serves, that every family the shipped dashboards (grafana/) and
alerts (deploy/prometheus/) name is served at the default tier, and what each level adds.

The exposition is the daemon's own (``Daemon.poll_once``) over the demo's simulated host
(nicwatch/demo/simulate.py, the collector `nicwatch demo` builds), 8 ports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from nicwatch import metrics
from nicwatch.cli.demo import CONFIG
from nicwatch.collect import Collector, Selection
from nicwatch.config import build
from nicwatch.daemon import Daemon
from nicwatch.demo.simulate import (
    SimulatedDcb,
    SimulatedDevlink,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    SimulatedModules,
    SimulatedNetdev,
    SimulatedVfs,
    Simulation,
    demo_ports,
)
from nicwatch.sources.sriov import SriovSource

from paths import TESTS
from promtext import parse_exposition, promtool_check

ROOT = TESTS.parent
PORTS = 8
# A name a query uses: a family, or a derived *_peak_per_second gauge.
NAME = re.compile(r'(?<![\w:"$])((?:nic|nicwatch)_[a-z0-9_]+)(?![\w(])')
SELECTOR = re.compile(r'((?:nic|nicwatch)_[a-z0-9_]+)\s*\{([^}]*)\}')
MATCHER = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def demo_daemon(root: Path, detail: str | None, config_text: str = CONFIG):
    """A daemon over the demo's simulated host and its simulation."""
    sysfs, procfs = root / "sys", root / "proc"
    ports = demo_ports(PORTS)
    sim = Simulation(ports, seed=1)
    sim.write_sysfs(sysfs)
    sim.write_procfs(procfs)
    (root / "nicwatch.toml").write_text(config_text)
    flags = {"path.sysfs": str(sysfs), "state.file": str(root / "identity.json"),
             "interfaces.include": "|".join(p.name for p in ports),
             # the simulation has modules and VFs; the daemon drops the sources of a switch
             # that is off, also from a collector built here (as the demo turns them on)
             "collector.module": "true", "collector.vfs": "true"}
    if detail is not None:
        flags["collector.detail"] = detail
    config = build(str(root / "nicwatch.toml"), flags)
    collector = Collector(
        sysfs, Selection(config.interfaces_include), ioctl=SimulatedEthtool(sim),
        netlink=SimulatedEthtoolNetlink(sim), dcb=SimulatedDcb(sim),
        devlink=SimulatedDevlink(sim), module=SimulatedModules(sim),
        netdev=SimulatedNetdev(sim), procfs=procfs)
    collector.sources.append(SriovSource(sysfs, SimulatedVfs(sim)))
    daemon = Daemon(config, str(root / "nicwatch.toml"), flags, collector=collector)
    daemon.server = None
    return daemon, sim


def polled(daemon, sim, polls: int = 3) -> str:
    for _ in range(polls):
        sim.advance()
        sim.write_counters(Path(daemon.config.path_sysfs))
        exposition = daemon.poll_once()
    return exposition.get(False, False).decode()


def demo_exposition(root: Path, detail: str | None) -> str:
    """The demo host's exposition after three polls, at ``detail`` (None: the default)."""
    daemon, sim = demo_daemon(root, detail)
    try:
        return polled(daemon, sim)
    finally:
        daemon.collector.close()


@pytest.fixture(scope="module")
def expositions(tmp_path_factory) -> dict[str, str]:
    return {level: demo_exposition(tmp_path_factory.mktemp(f"demo-{level}"), detail)
            for level, detail in (("default", None), *((d, d) for d in metrics.DETAIL_LEVELS))}


def _walk(node, key: str):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, str):
                yield v
            else:
                yield from _walk(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)


def shipped_queries() -> dict[str, str]:
    """Every PromQL expression of the shipped dashboards and alert rules, by where it is."""
    out = {}
    for path in sorted((ROOT / "grafana").glob("*.json")):
        for i, expr in enumerate(_walk(json.loads(path.read_text()), "expr")):
            out[f"{path.name} query {i}"] = expr
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "nicwatch-rules.yml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            out[f"rule {rule.get('alert') or rule.get('record')}"] = rule["expr"]
    assert len(out) > 100, "the dashboards and rules were not found"
    return out


def _families(text: str) -> set[str]:
    return {line.split("{", 1)[0].split(" ", 1)[0] for line in text.splitlines()
            if line and not line.startswith("#")}


def _per_port(text: str) -> float:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#")) / PORTS


def test_every_family_the_dashboards_and_alerts_name_is_at_the_default_tier():
    declared = {*metrics.EXPORTED, *(metrics.peak_name(c) for c in metrics.RATED_COUNTERS)}
    wrong = {}
    for where, expr in shipped_queries().items():
        for name in NAME.findall(expr):
            if name not in declared:
                wrong[f"{where}: {name}"] = "not a declared family"
            elif metrics.family_tier(name) != metrics.PORT and name not in metrics.PARTIAL:
                wrong[f"{where}: {name}"] = metrics.family_tier(name)
    assert not wrong


def test_every_series_the_dashboards_and_alerts_select_is_served_by_default(expositions):
    """Each selector of a shipped query (its equality matchers) that finds series in the
    full exposition finds them in the default one: nothing a panel or alert reads was
    moved behind --collector.detail, including the partly served families."""
    full = parse_exposition(expositions[metrics.FULL])
    default = parse_exposition(expositions["default"])
    checked, missing = 0, []
    for where, expr in shipped_queries().items():
        selectors = {(m.group(1), tuple(MATCHER.findall(m.group(2))))
                     for m in SELECTOR.finditer(expr)}
        bare = set(NAME.findall(expr)) - {name for name, _ in selectors}
        for name, matchers in [*selectors, *((n, ()) for n in bare)]:
            def hits(series, name=name, matchers=matchers):
                return [k for k in series if k[0] == name
                        and all(dict(k[1]).get(label) == value for label, value in matchers
                                if label not in ("job", "instance"))]
            if hits(full):
                checked += 1
                if not hits(default):
                    missing.append(f"{where}: {name}{dict(matchers)}")
    assert checked > 150  # the demo serves most of what the dashboards and alerts read
    assert not missing


def test_the_default_tier_keeps_to_its_budget_and_each_level_adds(expositions):
    port, queue, full = (expositions[d] for d in metrics.DETAIL_LEVELS)
    assert _families(expositions["default"]) == _families(port)
    # before the tiers: 962 series a port on this host (7,700 for 8 ports), 745 KB a scrape
    assert _per_port(port) < 500
    assert _per_port(port) < _per_port(queue) < _per_port(full)
    assert _per_port(full) > 900
    fam_port, fam_queue, fam_full = _families(port), _families(queue), _families(full)
    assert {"nic_rx_queue_packets_total", "nic_irq_info", "nic_rx_cpu_processed_total"} \
        <= fam_queue - fam_port
    assert {"nic_fec_codewords_total", "nic_rx_crc_errors_peak_per_second"} \
        <= fam_full - fam_queue
    assert fam_port <= fam_queue <= fam_full
    for text in (port, queue, full):
        promtool_check(text)


def test_module_flags_are_counted_and_served_when_set(expositions):
    full = parse_exposition(expositions[metrics.FULL])
    default = parse_exposition(expositions["default"])
    flags = {k: v for k, v in full.items() if k[0] == "nic_module_flag"}
    assert len(flags) >= 200 * PORTS
    assert not [k for k, v in default.items() if k[0] == "nic_module_flag" and not v]
    assert {k: v for k, v in default.items() if k[0] == "nic_module_flag"} == \
        {k: v for k, v in flags.items() if v}
    for text in (full, default):
        counts = {dict(k[1])["device"]: v for k, v in text.items()
                  if k[0] == "nic_module_flags_set"}
        assert len(counts) == PORTS
        for device, count in counts.items():
            assert count == sum(1 for k, v in flags.items()
                                if dict(k[1])["device"] == device and v)


def test_module_thresholds_keep_the_warning_levels_by_default(expositions):
    full = parse_exposition(expositions[metrics.FULL])
    default = parse_exposition(expositions["default"])
    for name, (keep, _) in metrics.PARTIAL.items():
        served = {k for k in default if k[0] == name}
        assert served == {k for k, v in full.items() if k[0] == name
                          and keep(tuple(x for x in k[1] if x[0] != "device"), v)}
    levels = {dict(k[1])["level"] for k in default
              if k[0] == "nic_module_vdm_pre_fec_ber_threshold"}
    assert levels == {"high_warning"}
    assert {dict(k[1])["level"] for k in full
            if k[0] == "nic_module_vdm_pre_fec_ber_threshold"} >= {"high_alarm", "low_alarm"}


def test_a_set_flag_is_served_and_a_clear_one_is_not():
    exposure = metrics.exposure()
    labels = (("lane", "1"), ("level", "state"), ("quantity", "rx_los"))
    assert exposure.shown("nic_module_flag", labels, 1.0)
    assert not exposure.shown("nic_module_flag", labels, 0.0)
    assert metrics.exposure(metrics.FULL).shown("nic_module_flag", labels, 0.0)
    assert not exposure.shown("nic_irq_info", (("irq", "100"),), 1.0)
    assert metrics.exposure(metrics.QUEUE).shown("nic_irq_info", (("irq", "100"),), 1.0)


def test_the_detail_level_is_checked_and_defaults_to_port(tmp_path):
    from nicwatch.config import build
    from nicwatch.values import ConfigError

    assert build(None, {}).collector_detail == metrics.PORT
    assert build(None, {"collector.detail": "queue"}).collector_detail == metrics.QUEUE
    (tmp_path / "c.toml").write_text('[collector]\ndetail = "full"\n')
    assert build(str(tmp_path / "c.toml"), {}).collector_detail == metrics.FULL
    with pytest.raises(ConfigError, match="expected one of port, queue, full, got 'all'"):
        build(None, {"collector.detail": "all"})


def test_a_reload_applies_a_new_detail_level(tmp_path):
    """SIGHUP (Daemon.reload) with collector.detail changed in the file: the next render
    serves the new level (the renderer is built for it)."""
    daemon, sim = demo_daemon(tmp_path, None, CONFIG + '\n[collector]\ndetail = "port"\n')
    try:
        before = parse_exposition(polled(daemon, sim))
        assert not [k for k, v in before.items() if k[0] == "nic_module_flag" and not v]
        (tmp_path / "nicwatch.toml").write_text(CONFIG + '\n[collector]\ndetail = "full"\n')
        daemon.reload()
        assert daemon.config.collector_detail == metrics.FULL
        after = parse_exposition(polled(daemon, sim, 1))
        assert [k for k, v in after.items() if k[0] == "nic_module_flag" and not v]
    finally:
        daemon.collector.close()
