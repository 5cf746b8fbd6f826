"""The typed hand-off between the sources and the Reading: Poll.put's overloads, ReadingParts
and Reading agree; each source puts only the parts it declares; the registry's order puts every
part before a source reads it."""

from __future__ import annotations

import dataclasses
import socket
import tempfile
import typing
from pathlib import Path
from typing import ClassVar, get_args, get_type_hints

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
from nicwatch.model import HostParts, Reading, ReadingParts, Rings
from nicwatch.normalize.lldp import decode_frame
from nicwatch.sources import PartError, Poll, check_order
from nicwatch.sources.lldp import LldpSource
from nicwatch.sources.registry import SOURCES
from nicwatch.sources.sriov import SriovSource

COLLECTORS_OWN = {"device", "time", "monotonic", "netclass", "errors"}


def test_reading_parts_are_the_readings_fields_the_sources_fill():
    reading = get_type_hints(Reading)
    parts = get_type_hints(ReadingParts)
    assert {name: reading[name] for name in reading.keys() - COLLECTORS_OWN} == parts
    defaults = {f.name: f.default for f in dataclasses.fields(Reading) if f.name in parts}
    assert all(d is None or d == () for d in defaults.values()), defaults  # absent: empty


def test_put_has_one_overload_per_part_with_its_type():
    typed = {}
    for overload in typing.get_overloads(Poll.put):
        hints = get_type_hints(overload, globalns=vars(sources))
        [name] = get_args(hints["field"])
        typed[name] = hints["value"]
    assert typed == get_type_hints(ReadingParts)
    host = {}
    for overload in typing.get_overloads(Poll.put_host):
        hints = get_type_hints(overload, globalns=vars(sources))
        host[get_args(hints["field"])[0]] = hints["value"]
    assert host == get_type_hints(HostParts)


def test_a_value_of_the_wrong_type_is_refused_in_tests():
    assert sources.checking_types()  # tests/conftest.py
    poll = Poll([])
    poll.parts["eth0"] = {}
    with pytest.raises(PartError, match="'rings': int"):
        poll.put("eth0", "rings", 4096)  # type: ignore[call-overload]  # the refusal tested
    with pytest.raises(PartError, match="'rdma'"):
        poll.put("eth0", "rdma", (Rings(1, 2, 3, 4),))  # type: ignore[call-overload]  # tested
    poll.put("eth0", "rings", None)  # absent is a value of every Optional part
    poll.put_host("softirq_seconds", (1, 2.5))  # an int is a float
    assert poll.parts["eth0"] == {"rings": None} and poll.host == {"softirq_seconds": (1, 2.5)}


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
    assert sorted(filled) == sorted(get_type_hints(ReadingParts).keys()
                                    | get_type_hints(HostParts).keys())  # each part once
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
