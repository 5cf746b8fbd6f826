"""The typed hand-off between the sources and the Reading: each part is declared once (a
``Part`` of Reading or HostReading) and is both the typed key a source puts a value with and the
field a Reading has; the type checker and, in tests, put() refuse a value of the wrong type;
each source puts only the parts it declares; the registry's order puts every part before a
source reads it."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

import pytest

from nicwatch import sources
from nicwatch.collect import Collector, Selection
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
from nicwatch.model import HOST_PARTS, READING_PARTS, HostReading, Part, Reading, Rings
from nicwatch.normalize.lldp import decode_frame
from nicwatch.sources import PartError, Poll, check_order
from nicwatch.sources.lldp import LldpSource
from nicwatch.sources.registry import SOURCES
from nicwatch.sources.sriov import SriovSource

from paths import REPO

COLLECTORS_OWN = {"device", "time", "monotonic", "netclass", "errors"}


@pytest.mark.parametrize(("record", "parts"), [(Reading, READING_PARTS),
                                               (HostReading, HOST_PARTS)])
def test_each_part_is_a_field_of_its_record_with_an_empty_default(record, parts):
    fields = {f.name: f for f in dataclasses.fields(record)}
    assert [p.name for p in parts] == [n for n in fields if n not in COLLECTORS_OWN]
    for part in parts:
        assert getattr(record, part.name) is part  # the class attribute is the key
        assert fields[part.name].default is part.default
        assert part.default is None or part.default == (), part  # absent: empty
        sources._checked(sources.PART_SPECS if record is Reading else sources.HOST_SPECS,
                         "test", part, part.default)  # the default is a value of its type


def test_a_reading_reads_each_part_as_its_value_and_stays_frozen():
    reading = Reading(device="eth0", time=1.0, monotonic=2.0,
                      netclass=None, rings=Rings(1, 2, 3, 4))  # type: ignore[arg-type]
    assert reading.rings == Rings(1, 2, 3, 4) and reading.stats is None and reading.rdma == ()
    assert dataclasses.replace(reading, rings=None).rings is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        reading.rings = None  # type: ignore[misc]  # the refusal tested
    # slots, as before parts were declared this way: no instance dict (1.6 kB a Reading with
    # 30 attributes, where CPython's key-sharing dicts give up) and a part read at a field's cost
    assert not hasattr(reading, "__dict__") and not hasattr(HostReading(), "__dict__")
    with pytest.raises(AttributeError):
        Reading.stats = Reading.rings  # type: ignore[misc]  # a key is declared once
    assert Reading.stats.name == "stats" and Reading.stats.default is None
    assert HostReading(softnet=()).softnet == () and HostReading().rdma_ports is None


def test_a_part_declared_without_its_type_is_refused():
    untyped: Part[None] = Part(None)
    with pytest.raises(TypeError, match="without its type"):
        untyped.hint  # noqa: B018


def test_a_value_of_the_wrong_type_is_refused_in_tests():
    assert sources.checking_types()  # tests/conftest.py
    poll = Poll([])
    poll.parts["eth0"] = {}
    with pytest.raises(PartError, match="'rings': int"):
        poll.put("eth0", Reading.rings, 4096)  # type: ignore[arg-type]  # the refusal tested
    with pytest.raises(PartError, match="'rdma'"):
        poll.put("eth0", Reading.rdma, (Rings(1, 2, 3, 4),))  # type: ignore[arg-type]  # tested
    with pytest.raises(PartError, match=r"HostReading\.softnet is not a Reading part"):
        poll.put("eth0", HostReading.softnet, ())  # a host part is no Reading's
    with pytest.raises(PartError, match=r"Reading\.rings is not a host part"):
        poll.put_host(Reading.rings, None)
    poll.put("eth0", Reading.rings, None)  # absent is a value of every Optional part
    poll.put_host(HostReading.softirq_seconds, (1, 2.5))  # an int is a float
    assert poll.parts["eth0"] == {"rings": None} and poll.host == {"softirq_seconds": (1, 2.5)}
    assert poll.get("eth0", Reading.rings) is None and poll.get("eth0", Reading.rdma) == ()


_TYPED = """\
from nicwatch.model import HostReading, Reading, StatSet
from nicwatch.sources import Poll


def fill(poll: Poll, stats: StatSet, reading: Reading) -> None:
    poll.put("eth0", Reading.stats, stats)
    poll.put("eth0", Reading.stats, None)
    poll.put_host(HostReading.softirq_seconds, (1.0, 2.0))
    found: StatSet | None = poll.get("eth0", Reading.stats)
    kept: StatSet | None = reading.stats
    poll.put("eth0", Reading.rings, 4096)  # refused
    poll.put("eth0", Reading.stat, stats)  # refused
    poll.put_host(HostReading.softnet, (1.0,))  # refused
    count: int = poll.get("eth0", Reading.stats)  # refused
    size: int = reading.rings  # refused
"""


@pytest.mark.slow
def test_the_type_checker_refuses_a_value_of_the_wrong_type_and_a_misspelt_part(tmp_path):
    """What the daemon relies on instead of checking each value at run time."""
    pytest.importorskip("mypy")
    (tmp_path / "typed.py").write_text(_TYPED)
    env = dict(os.environ, MYPYPATH=str(REPO / "src"))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
         "--cache-dir", str(tmp_path / "cache"), "--follow-imports=silent",
         "typed.py"], capture_output=True, text=True, env=env, cwd=tmp_path)
    refused = sorted({int(line.split(":")[1]) for line in done.stdout.splitlines()
                      if line.startswith("typed.py:") and ": error:" in line})
    expected = [n for n, line in enumerate(_TYPED.splitlines(), 1) if "# refused" in line]
    assert len(expected) == 5 and refused == expected, done.stdout + done.stderr


class Filler:
    name = "filler"
    fills: ClassVar[frozenset[str]] = frozenset({"netlink"})
    needs: ClassVar[frozenset[str]] = frozenset()


class Reader:
    name = "reader"
    fills: ClassVar[frozenset[str]] = frozenset({"rings"})
    needs: ClassVar[frozenset[str]] = frozenset({"netlink"})


def test_a_source_before_the_one_that_fills_what_it_reads_is_refused():
    check_order([Filler, Reader])
    check_order([Reader])  # nothing fills netlink: absent, the reader copes
    with pytest.raises(ValueError, match="reader reads netlink, which filler fills after it"):
        check_order([Reader, Filler])
    with pytest.raises(ValueError):
        Collector("/nonexistent", sources=[Reader(), Filler()])  # type: ignore[list-item]


def test_the_registry_declares_every_part_and_reads_none_before_it_is_filled():
    check_order(SOURCES)
    filled = [part for registered in SOURCES for part in registered.fills]
    assert sorted(filled) == sorted(p.name for p in (*READING_PARTS, *HOST_PARTS))  # once each
    assert all(registered.needs <= set(filled) for registered in SOURCES)


def test_each_source_puts_only_the_parts_it_declares():
    """Every source over the demo's simulated host (all of them, opt-ins included), one at a
    time over one Poll: what each adds to the parts is within its ``fills``, and between them
    every declared part is put."""
    with tempfile.TemporaryDirectory(prefix="nicwatch-test-") as tmp:
        sysfs = Path(tmp) / "sys"
        simulation = Simulation(demo_ports(), seed=1)
        simulation.write_sysfs(sysfs)
        simulation.write_procfs(Path(tmp) / "proc")
        modules = SimulatedModules(simulation)
        collector = Collector(sysfs, Selection(include=".*"),
                              ioctl=SimulatedEthtool(simulation),
                              netlink=SimulatedEthtoolNetlink(simulation),
                              dcb=SimulatedDcb(simulation), devlink=SimulatedDevlink(simulation),
                              module=modules, netdev=SimulatedNetdev(simulation),
                              procfs=Path(tmp) / "proc")
        collector.sources.append(SriovSource(sysfs, SimulatedVfs(simulation)))
        pairs: list[socket.socket] = []

        def opener(ifname: str, ifindex: int) -> socket.socket:
            pairs.extend(socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
            return pairs[-2]

        collector.sources.append(LldpSource(decode_frame, opener=opener, firmware=None))
        try:
            collector.first_poll()  # the module source's thread has read once
            poll = Poll(collector._select([]))
            seen: set[str] = set()
            for source in collector.sources:
                before = {name: set(parts) for name, parts in poll.parts.items()}
                host = set(poll.host)
                source.read(poll)
                added = {part for name, parts in poll.parts.items()
                         for part in set(parts) - before[name]} | (set(poll.host) - host)
                assert added <= source.fills, (source.name, added - source.fills)
                seen |= added
            # without the netlink dumps, the ioctl source reads rings and channels itself
            alone = Poll(poll.interfaces)
            ioctl = next(s for s in collector.sources if s.name == "ethtool_ioctl")
            ioctl.read(alone)
            added = {part for parts in alone.parts.values() for part in parts}
            assert added == ioctl.fills
            seen |= added
        finally:
            collector.close()
            for end in pairs:
                end.close()
    assert seen == {part for registered in SOURCES for part in registered.fills}
