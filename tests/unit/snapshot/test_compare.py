"""`nicwatch compare` on what a veth cannot show: two `record` directories of a ConnectX-6 Dx
port on the cx6-dual-gen4x8-width fixture tree (PCIe trained x8 of x16, a BIOS lane split),
before and after the fix: rx ring 1,024 -> 8,192, the link retrained at x16, a firmware
upgrade; out-of-buffer drops at 1,000 per second before, none after."""

import dataclasses
import itertools
import json
import shutil
import subprocess
import sys

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.model import Channels, DriverInfo, Rings
from nicwatch.snapshot import compare as C
from nicwatch.snapshot.files import build, encode, poll_of

from fixture_ethtool import RecordedEthtool
from snapshot_helpers import HOST, SYSFS, T0, mlx5_stats, write_stats

NICWATCH = [sys.executable, "-m", "nicwatch"]
DEVICE = "ens1f0np0"
GBIT = 125_000_000


class Upgraded(RecordedEthtool):
    def driver_info(self, ifname: str) -> DriverInfo:
        info = super().driver_info(ifname)
        return dataclasses.replace(info, firmware_version="22.41.1000 (MT_0000000359)")


def record_dir(tmp, name: str, tree, ring: int, drops_per_poll: int, upgraded: bool,
               start: float) -> object:
    """A record directory as `nicwatch record` writes it: before.json and after.json of
    11 polls one second apart, 90 Gb/s received."""
    path = tmp / f"{name}.txt"
    stats = mlx5_stats(4)
    ports = {DEVICE: {"stats": path, "driver": "mlx5_core", "perm_address": "0c:42:a1:00:00:00",
                      "rings": Rings(ring, 8192, 8192, 8192),
                      "channels": Channels(None, None, None, 32, None, None, None, 63)}}
    wall, mono = itertools.count(start, 1.0), itertools.count(start - T0 + 1000.0, 1.0)
    ethtool = (Upgraded if upgraded else RecordedEthtool)(ports)
    collector = Collector(tree, Selection(include=DEVICE), ioctl=ethtool, clock=wall.__next__,
                          monotonic=mono.__next__)
    polls = []
    for _ in range(11):
        stats["rx_bytes_phy"] += 90 * GBIT
        stats["rx_out_of_buffer"] += drops_per_poll
        write_stats(path, stats)
        samples = collector.poll().samples
        polls.append(poll_of(samples, samples[0].time, samples[0].monotonic))
    out = tmp / name
    out.mkdir()
    meta = {"record": {"command": ["ib_write_bw", "-d", "mlx5_0"], "interval": 1.0}}
    (out / "before.json").write_bytes(encode(build(HOST, polls[:1], "before", True, meta)))
    (out / "after.json").write_bytes(encode(build(HOST, polls[-1:], "after", True, meta)))
    return out


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cx6")
    fixed = tmp / "tree-x16"
    shutil.copytree(SYSFS / "cx6-dual-gen4x8-width", fixed, symlinks=True)
    width = fixed / "devices/pci0000:00/0000:00:03.1/0000:01:00.0/current_link_width"
    assert width.read_text().strip() == "8"
    width.write_text("16\n")
    before = record_dir(tmp, "ring1024", SYSFS / "cx6-dual-gen4x8-width", 1024, 1000, False, T0)
    after = record_dir(tmp, "ring8192", fixed, 8192, 0, True, T0 + 86_400)
    return before, after


def test_the_fix_reads_as_a_before_after_table(sides):
    before, after = sides
    r = subprocess.run([*NICWATCH, "compare", str(before), str(after), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (iface,) = json.loads(r.stdout)["interfaces"]
    config = {(c["name"], tuple(c["labels"].items())): (c["a"], c["b"])
              for c in iface["configuration"]}
    assert config[("nic_ring_descriptors", (("ring", "rx"),))] == (1024, 8192)
    width = (("hop", "0"), ("kind", "current"), ("pci_address", "0000:01:00.0"))
    assert config[("nic_pcie_link_width", width)] == (8, 16)
    assert config[("nic_pcie_degraded", (("reason", "width"),))] == (1, 0)
    assert config[("identity.firmware_version", ())] == ("28.46.3048 (MT_0000000834)",
                                                         "22.41.1000 (MT_0000000359)")
    assert ("nic_ring_descriptors", (("ring", "tx"),)) not in config  # unchanged
    # identity first, then rings, then PCIe: the order a fix reads
    names = [c["name"] for c in iface["configuration"]]
    assert names.index("identity.firmware_version") < names.index("nic_ring_descriptors") \
        < names.index("nic_pcie_link_width")
    rates = {r["family"]: r for r in iface["rates"]}
    oob = rates["nic_rx_out_of_buffer_drops_total"]
    assert (oob["a"], oob["b"], oob["ratio"], oob["health"]) == (1000, 0, 0, True)
    rx = rates["nic_phy_rx_bytes_total"]
    assert rx["a"] == rx["b"] == 90 * GBIT and rx["ratio"] == 1
    assert iface["rates"][0]["health"]  # health counters first
    text = subprocess.run([*NICWATCH, "compare", str(before), str(after)],
                          capture_output=True, text=True).stdout
    lines = [line.split() for line in text.splitlines()]
    assert ["nic_ring_descriptors{ring=rx}", "1,024", "8,192"] in lines, text
    assert ["!", "nic_rx_out_of_buffer_drops_total", "1k/s", "0/s", "x0"] in lines, text


def test_margin_flags_the_worse_direction_only(sides):
    before, after = sides
    fixed = subprocess.run([*NICWATCH, "compare", str(before), str(after), "--margin", "10%"],
                           capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout
    broke = subprocess.run([*NICWATCH, "compare", str(after), str(before), "--margin", "10%"],
                           capture_output=True, text=True)
    assert broke.returncode == 1, broke.stdout
    assert "nic_rx_out_of_buffer_drops_total 0/s -> 1k/s" in broke.stdout


@pytest.mark.parametrize(("a", "b", "margin", "worse"), [
    (100.0, 110.0, 0.10, False),  # exactly at the margin: not worse
    (100.0, 110.5, 0.10, True),
    (0.0, 0.1, 0.10, True),  # a baseline of zero: any counted event
    (0.0, 0.0, 0.10, False),
    (None, 5.0, 0.10, False),  # not counted in the baseline: cannot be compared
])
def test_worse_is_above_the_margin_of_the_baseline(a, b, margin, worse):
    row = C.RateRow("nic_rx_discards_total", (), "packets", True, a, b, "ok", "ok",
                    None if b is None else b * 10)
    iface = C.InterfaceComparison("eth0", "eth0", (), (), (row,))
    c = C.Comparison(None, None, (), (iface,), (), ())  # type: ignore[arg-type]
    assert bool(C.worse(c, margin)) is worse


def test_an_incident_directory_and_a_one_poll_snapshot_are_sides_too(sides, tmp_path):
    """An incident directory's history gives rates; a snapshot of one poll gives its
    configuration and no rates (absent, not zero)."""
    from nicwatch.snapshot.files import load, write_atomic
    before, after = sides
    a, b = load(after / "before.json"), load(after / "after.json")
    incident = tmp_path / "20260922T141500.000Z-ens1f0np0-x-00000000"
    incident.mkdir()
    history = dataclasses.replace(b, polls=(*a.polls, *b.polls), label="incident history")
    write_atomic(incident / "history.json.gz", encode(history), True)
    r = subprocess.run([*NICWATCH, "compare", str(before), str(incident), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["b"]["kind"] == "incident" and out["b"]["seconds"] == 10
    (iface,) = out["interfaces"]
    rx = next(x for x in iface["rates"] if x["family"] == "nic_phy_rx_bytes_total")
    assert rx["b"] == 90 * GBIT
    r = subprocess.run([*NICWATCH, "compare", str(before), str(after / "after.json"), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["b"]["kind"] == "snapshot" and out["b"]["seconds"] is None
    (iface,) = out["interfaces"]
    assert {(c["name"], c["a"], c["b"]) for c in iface["configuration"]} >= {
        ("nic_pcie_link_width", 8, 16)}
    assert all(x["b"] is None and x["status_b"] == "one_poll" for x in iface["rates"])
    text = subprocess.run([*NICWATCH, "compare", str(before), str(after / "after.json")],
                          capture_output=True, text=True).stdout
    assert "one poll at 2026-09-22 14:15:10Z (no rates)" in text, text
