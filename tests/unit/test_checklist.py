"""docs/architecture.md's "How to add" lists, kept honest: the names they give exist, every
part a source can put is normalized and kept in snapshots (a Reading field without normalize
and snapshot handling fails here), a part's state reaches the flight recorder's state key,
and every family a consumer returns is declared in metrics.py."""

from __future__ import annotations

import ast
import dataclasses
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from nicwatch import metrics
from nicwatch.collect import Collector, PollResult, Selection
from nicwatch.config import Config
from nicwatch.consumers import Services
from nicwatch.consumers.incidents import Capture, Trigger
from nicwatch.consumers.registry import CONSUMERS
from nicwatch.demo.fabric import SimulatedLldp
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
from nicwatch.model import READING_PARTS, Reading
from nicwatch.normalize import normalize
from nicwatch.snapshot.records import interface_snapshot
from nicwatch.snapshot.statekey import reading_state, state_key
from nicwatch.sources.host import read_host
from nicwatch.sources.sriov import SriovSource
from nicwatch.tracker import Tracker

from paths import REPO

DOC = REPO / "docs" / "architecture.md"
DEFAULTS = {f.name: f.default for f in dataclasses.fields(Reading)}


@pytest.fixture(scope="module")
def demo() -> tuple[list[Reading], PollResult]:
    """Readings of the demo's simulated host from every source (opt-ins included), and from
    the ioctl source alone (its rings and channels, which the netlink dumps otherwise win)."""
    with tempfile.TemporaryDirectory(prefix="nicwatch-test-") as tmp:
        sysfs = Path(tmp)
        simulation = Simulation(demo_ports(), seed=1)
        simulation.write_sysfs(sysfs / "sys")
        simulation.write_procfs(sysfs / "proc")
        sysfs = sysfs / "sys"
        every = Collector(sysfs, Selection(include=".*"), ioctl=SimulatedEthtool(simulation),
                          netlink=SimulatedEthtoolNetlink(simulation),
                          dcb=SimulatedDcb(simulation), devlink=SimulatedDevlink(simulation),
                          module=SimulatedModules(simulation),
                          netdev=SimulatedNetdev(simulation), procfs=sysfs.parent / "proc")
        every.sources.append(SriovSource(sysfs, SimulatedVfs(simulation)))
        every.sources.append(SimulatedLldp(simulation))
        ioctl = Collector(sysfs, Selection(include=".*"), ioctl=SimulatedEthtool(simulation))
        try:
            result = every.first_poll()
            alone = ioctl.poll()
        finally:
            every.close()
            ioctl.close()
    return [s.reading for s in (*result.samples, *alone.samples)], result


def _with(readings: list[Reading], part: str) -> Reading:
    found = next((r for r in readings if getattr(r, part) not in (None, ())), None)
    assert found is not None, f"the demo's simulated host has no {part}: give it one " \
                              "(demo/simulate.py), so `nicwatch demo` shows it"
    return found


def _normalized(reading: Reading) -> tuple[Any, ...]:
    s = normalize(reading)
    return dict(s.counters), dict(s.gauges), s.identity, s.supported


@pytest.mark.parametrize("part", sorted(part.name for part in READING_PARTS))
def test_every_part_is_normalized_and_kept_in_snapshots(demo, part):
    readings, _ = demo
    reading = _with(readings, part)
    without = dataclasses.replace(reading, **{part: DEFAULTS[part]})
    assert _normalized(reading) != _normalized(without), f"normalize ignores {part}"
    kept = interface_snapshot(normalize(reading))
    assert kept != interface_snapshot(normalize(without)), f"a snapshot loses {part}"
    if reading_state(reading) != reading_state(without):
        # the flight recorder reuses a state while its key is equal
        assert state_key(reading) != state_key(without), f"state_key misses {part}"


def test_every_family_a_consumer_returns_is_declared(demo, tmp_path):
    """Through the contract the daemon uses (open with shared services, observe with the
    tracker's view), with a capture trigger configured, so incidents returns all of its."""
    _, result = demo
    trigger = Trigger("any-rx", family="nic_rx_packets_total", rate_above=0.0)
    config = Config(state_file=str(tmp_path / "state.json"),
                    sections={"capture": Capture(directory=str(tmp_path / "incidents"),
                                                 triggers=(trigger,))})
    host = read_host("/proc")
    services = Services()
    tracked = Tracker(60.0).update(result.samples)
    returned = set()
    for open_consumer in CONSUMERS:
        consumer = open_consumer(config, host, services)
        try:
            consumer.observe(result, tracked)
            for family in consumer.families():
                declared = metrics.EXPORTED.get(family.name)
                assert declared is not None, (type(consumer).__name__, family.name)
                assert (declared.type, declared.help) == (family.type, family.help)
                returned.add(family.name)
        finally:
            consumer.close(1.0)
    assert {f.name for f in metrics.INCIDENT_FAMILIES} <= returned


def test_the_checklist_names_what_exists():
    text = DOC.read_text()
    section = text[text.index("## How to add"):text.index("## Rules the code keeps")]
    src = REPO / "src" / "nicwatch"
    paths = set(re.findall(r"`((?:sources|consumers|normalize|cli|demo|snapshot|diagnosis|model|"
                           r"metrics|exporter)/[\w/.<>]*)`", section))
    assert {"sources/registry.py", "model/reading.py", "metrics/", "metrics/own.py",
            "consumers/registry.py"} <= paths
    for path in (p for p in paths if "<" not in p):
        assert (src / path).exists() or (src / path).with_suffix(".py").exists(), path
    names = {"SOURCES": src / "sources/registry.py", "Reading": src / "model/reading.py",
             "CONSUMERS": src / "consumers/registry.py", "COMMANDS": src / "cli/common.py",
             "check_order": src / "sources/__init__.py", "state_key": src / "snapshot/statekey.py",
             "CONSUMER_FAMILIES": src / "metrics/own.py", "SELF": src / "metrics/own.py"}
    for name, where in names.items():
        assert f"`{name}`" in section, name
        assert re.search(rf"^(def |class )?{name}\b", where.read_text(), re.M), (name, where)


# Every module of every package names families through metrics' constants, except these,
# which still spell names as data (each with why; a listed file that no longer spells one
# fails, so the list only shrinks):
SPELLED = {
    "metrics/": "declares the families",
    "normalize/drivers/": "the driver tables: raw names to families, as data",
    "normalize/standard.py": "the kernel-standard table (netlink and rtnl_link_stats64 names)",
    "normalize/rdma.py": "the IB PortCounters table",
    "normalize/rxpath.py": "the per-queue and softnet table",
    "normalize/sriov.py": "the VF counter table",
    "normalize/devlink.py": "the devlink health and info table",
    "normalize/hwmon.py": "the hwmon sensor table",
    "normalize/linkphysics.py": "the link physics families it computes",
    "normalize/module/": "the module decoders' field tables",
    "demo/": "the simulated host's counters, keyed by the family they feed",
}


def test_every_package_names_families_by_their_constants():
    """A family is referred to by its constant in metrics, never by a name literal, so a
    renamed family fails at import rather than reading nothing. Every module of src/nicwatch
    is scanned (the diagnosis among them: its quantities and windows name some 140 families)
    but the tables listed in SPELLED."""
    src = REPO / "src" / "nicwatch"
    found, spelled = [], set()
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        tree = ast.parse(path.read_text())
        hits = [f"{rel}:{node.lineno} {node.value}" for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and node.value in metrics.EXPORTED]
        allowed = next((entry for entry in SPELLED if rel.startswith(entry)), None)
        if allowed is None:
            found += hits
        elif hits:
            spelled.add(allowed)
    assert found == []
    assert spelled == set(SPELLED), f"no longer spells a family: {set(SPELLED) - spelled}"
    packages = {p.relative_to(src).parts[0] for p in src.iterdir() if p.is_dir()
                and (p / "__init__.py").exists()}
    assert {"consumers", "cli", "snapshot", "exporter", "sources", "pasted", "values"} <= packages


def test_where_a_new_thing_goes_names_what_exists():
    """The table at the top of docs/architecture.md: every source path and test it names
    exists (a placeholder such as <driver> aside), and it has a row for each kind of thing."""
    text = DOC.read_text()
    table = text[text.index("## Where does a new thing go"):text.index("One poll, in the daemon")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    kinds = {row.split("|")[1].strip() for row in rows[1:]}
    assert kinds == {"counter of an existing driver", "driver", "source (a kernel interface)",
                     "kind of counted thing (a queue pair)", "consumer", "diagnosis signature",
                     "CLI command"}
    src = REPO / "src" / "nicwatch"
    code = set(re.findall(r"`((?:sources|consumers|normalize|cli|demo|diagnosis|model|metrics|"
                          r"exporter)/[\w/.<>]*)`", table))
    tests = set(re.findall(r"(tests/[\w/.<>]+?)[,;:)]?(?=\s|$|\|)", table))
    assert len(code) >= 10 and len(tests) >= 6, (code, tests)
    for path in code:
        if "<" not in path:
            assert (src / path).exists(), path
    for path in tests:
        if "<" not in path:
            assert (REPO / path).exists(), path
    for name in re.findall(r"\b(test_\w+\.py)\b", table):
        if "<" not in name:
            assert list(REPO.glob(f"tests/**/{name}")), name
