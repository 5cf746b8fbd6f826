"""Damaged sysfs under --path.sysfs: garbage, empty, truncated, huge and non-UTF-8 attribute
files, files that cannot be read (a directory, a FIFO, a symlink loop), broken links and
directories. Hypothesis damages a copy of a fixture tree between two clean polls of the
daemon's own poll (collect, track, identity, expectations, render) and checks that nothing
raises, both exposition formats always parse, a damaged PCI or RDMA attribute is reported
in nicwatch_source_errors_total, a damaged netdev attribute is absent (never a made-up
value), and everything comes back once the tree is repaired."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)

from nicwatch.collect import Collector, PollResult, Selection
from nicwatch.config import build
from nicwatch.daemon import Daemon
from nicwatch.sources.sysfs_pci import BDF

from faults import counters_never_fall_without_reset
from paths import SYSFS
from promtext import parse_exposition, series

SCENARIOS = ("mlx5-rdma", "gen3-old-kernel", "cx6-dual-gen4x8-width", "virtio-no-pcie",
             "gpu-switch-uplink-x8", "qemu-vm-passthrough")

NET_FIELDS = {"ifindex": "ifindex", "address": "address", "operstate": "operstate",
              "mtu": "mtu", "speed": "speed_mbps", "duplex": "duplex", "carrier": "carrier",
              "carrier_changes": "carrier_changes", "carrier_up_count": "carrier_up_count",
              "carrier_down_count": "carrier_down_count"}
PCI_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
             "vendor", "device", "class", "numa_node", "local_cpulist", "power_state",
             "aer_dev_correctable",
             "aer_dev_nonfatal", "aer_dev_fatal", "aer_rootport_total_err_cor",
             "aer_rootport_total_err_nonfatal", "aer_rootport_total_err_fatal")
PORT_FILES = ("link_layer", "state", "phys_state", "rate")
HUGE = 70_000  # more than a sysfs attribute can hold (a page; nicwatch reads up to 64 KiB)

# Damage that no parser can take for a value: each must end up absent or reported.
INVALID = ("empty", "huge", "not_utf8", "directory", "fifo", "loop")
FILE_DAMAGE = ("garbage", "truncated", *INVALID)
LINK_DAMAGE = ("dangling", "loop", "outside")
DIR_DAMAGE = ("file", "empty_dir")


@dataclass(frozen=True)
class Target:
    path: str  # relative to the tree root, as the source opens it
    kind: str  # "net", "stat", "pci", "port", "counter", "link", "dir"
    device: str | None = None  # netdev whose record holds the value
    field: str | None = None  # NetClass field, or statistic name
    reported_as: str | None = None  # path in a problem string (PCI: the resolved path)


class RecordingCollector(Collector):
    """The real collector; keeps the last PollResult so the test can see the Readings."""

    last: PollResult

    def poll(self) -> PollResult:
        self.last = super().poll()
        return self.last


def targets(root: Path, result: PollResult) -> list[Target]:
    """Every file, link and directory a clean poll of ``root`` read."""
    out: list[Target] = []
    real_root = Path(os.path.realpath(root))
    for s in result.samples:
        dev = s.identity.device
        iface = f"class/net/{dev}"
        out += [Target(f"{iface}/{name}", "net", dev, field) for name, field in NET_FIELDS.items()
                if os.path.lexists(root / iface / name)]
        out += [Target(f"{iface}/statistics/{name}", "stat", dev, name)
                for name in sorted(s.reading.netclass.stats)]
        out += [Target(f"{iface}/statistics", "dir", dev), Target(iface, "link", dev)]
        if os.path.lexists(root / iface / "device"):
            out.append(Target(f"{iface}/device", "link", dev))
        path = s.reading.pcie
        if path is None:
            continue
        out.append(Target(f"bus/pci/devices/{path.function}", "link", dev))
        directory = Path(os.path.realpath(root / "bus/pci/devices" / path.function))
        while BDF.fullmatch(directory.name):
            rel = str(directory.relative_to(real_root))
            out += [Target(f"{rel}/{name}", "pci", dev, reported_as=f"{rel}/{name}")
                    for name in PCI_FILES if (directory / name).is_file()]
            directory = directory.parent
        for port in s.reading.rdma:
            port_dir = f"class/infiniband/{port.device}/ports/{port.port}"
            out += [Target(f"{port_dir}/{name}", "port", dev, port.device, f"{port_dir}/{name}")
                    for name in PORT_FILES]
            for sub in ("hw_counters", "counters"):
                out.append(Target(f"{port_dir}/{sub}", "dir", dev))
                out += [Target(f"{port_dir}/{sub}/{name}", "counter", dev, port.device,
                               f"{port_dir}/{sub}/{name}")
                        for name in sorted(os.listdir(root / port_dir / sub)) if name != "lifespan"]
    return out


def damage(root: Path, target: Target, how: str, garbage: bytes) -> None:
    """Replace ``target`` under ``root`` by damage of kind ``how``."""
    path = root / target.path
    original = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    content = {"garbage": garbage, "truncated": original[:len(original) // 2], "empty": b"",
               "huge": (original.strip() or b"1") * (HUGE // max(1, len(original.strip())) + 1),
               "not_utf8": b"\xff\xfe" + original, "file": garbage}.get(how)
    if content is not None:
        path.write_bytes(content)
    elif how in ("directory", "empty_dir"):
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "loop":
        path.symlink_to(path.name)
    elif how == "dangling":
        path.symlink_to("does-not-exist")
    elif how == "outside":
        path.symlink_to("/")


def restore(root: Path, pristine: Path, rel: str) -> None:
    path, source = root / rel, pristine / rel
    if path.is_symlink() or path.is_file() or path.is_fifo():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if source.is_symlink():
        path.symlink_to(os.readlink(source))
    elif source.is_dir():
        shutil.copytree(source, path, symlinks=True)
    else:
        shutil.copy2(source, path)


def comparable(m: dict) -> set:
    """The series that must be the same before damage and after repair: not nicwatch's own,
    not resets (damage may fake one), not daemon-side rates."""
    return {k for k in m if not k[0].startswith("nicwatch_")
            and k[0] != "nic_stat_resets_total" and not k[0].endswith("per_second")}


def errors(m: dict, device: str, source: str) -> float:
    return m.get(series("nicwatch_source_errors_total", device=device, source=source), 0)


def hops(reading) -> set[str]:
    """PCI addresses of the devices whose directories the poll read for this netdev."""
    return {hop.bdf for hop in reading.pcie.hops} if reading.pcie else set()


def check_scrape(daemon: Daemon, openmetrics: bool = False) -> dict:
    """One poll of the daemon, its text exposition parsed (and the OpenMetrics one)."""
    exposition = daemon.poll_once()
    if openmetrics:
        list(parse_openmetrics(exposition.get(True, False).decode()))
    return parse_exposition(exposition.get(False, False).decode())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_damaged_sysfs_never_breaks_a_poll(scenario, tmp_path):
    pristine = SYSFS / scenario
    root = tmp_path / "sys"
    shutil.copytree(pristine, root, symlinks=True)
    collector = RecordingCollector(root, Selection(include=".*"))
    config = build(None, {"state.file": str(tmp_path / "state" / "identity.json")})
    daemon = Daemon(config, collector=collector)
    check_scrape(daemon)
    known = targets(root, collector.last)
    assert known, scenario

    def how_for(target: Target) -> st.SearchStrategy[str]:
        return st.sampled_from({"link": LINK_DAMAGE, "dir": DIR_DAMAGE}.get(target.kind,
                                                                            FILE_DAMAGE))

    damages = st.lists(st.sampled_from(known).flatmap(
        lambda t: st.tuples(st.just(t), how_for(t), st.binary(max_size=40))),
        min_size=1, max_size=4, unique_by=lambda d: d[0].path)

    # Derandomized, so CI runs the same damage every time; no shrinking: a failing example
    # is already small (one to four damaged paths) and shrinking re-polls for minutes.
    @settings(max_examples=30, deadline=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow])
    @given(damages)
    def poll_damaged(chosen):
        before = check_scrape(daemon)
        # Nested paths (a directory and a file in it): only the outermost is damaged.
        paths = [t.path for t, _, _ in chosen]
        applied = [(t, how, garbage) for t, how, garbage in chosen
                   if not any(t.path.startswith(p + "/") for p in paths)]
        try:
            for t, how, garbage in applied:
                damage(root, t, how, garbage)
            damaged = check_scrape(daemon, openmetrics=True)
            result = collector.last
        finally:
            for t, _, _ in applied:
                restore(root, pristine, t.path)
        repaired = check_scrape(daemon)
        readings = {s.identity.device: s.reading for s in result.samples}
        for t, how, _ in applied:
            if how not in INVALID or t.device not in readings:
                continue
            reading = readings[t.device]
            if t.kind == "net":  # absent, never a made-up value
                assert getattr(reading.netclass, t.field) is None, (t, how)
            elif t.kind == "stat":
                assert t.field not in reading.netclass.stats, (t, how)
            elif t.kind == "pci" and Path(t.path).parent.name in hops(reading):
                assert any(p.startswith(t.reported_as) for p in reading.pcie.problems), (t, how)
                assert errors(damaged, t.device, "sysfs_pci") > \
                    errors(before, t.device, "sysfs_pci"), (t, how)
            elif t.kind in ("port", "counter"):
                ports = [p for p in reading.rdma if p.device == t.field]
                if ports:  # still attached to this netdev despite the damage
                    assert any(p.startswith(t.reported_as) for port in ports
                               for p in port.problems), (t, how)
                    assert errors(damaged, t.device, "sysfs_infiniband") > \
                        errors(before, t.device, "sysfs_infiniband"), (t, how)
        assert comparable(repaired) == comparable(before)
        counters_never_fall_without_reset([before, damaged, repaired])

    poll_damaged()


OUT_OF_FDS = """
import errno, os, resource, sys
from nicwatch.sources import sysfs_net, sysfs_pci
resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
for call in (lambda: sysfs_net.list_interfaces(sys.argv[1]),
             lambda: sysfs_net.read_netclass(sys.argv[1], "enp33s0f0np0"),
             lambda: sysfs_pci.read_pcie_path(sys.argv[1], "0000:21:00.0")):
    try:
        print(call())
    except OSError as e:
        print(errno.errorcode[e.errno])
"""


def test_running_out_of_file_descriptors_fails_the_read_instead_of_emptying_it():
    """EMFILE is the daemon's own trouble, not the attribute's: it must fail the poll (the
    last exposition stays served) rather than make every interface look empty or gone."""
    r = subprocess.run([sys.executable, "-c", OUT_OF_FDS, str(SYSFS / "mlx5-rdma")],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["EMFILE", "EMFILE", "EMFILE"]  # every sysfs source alike
