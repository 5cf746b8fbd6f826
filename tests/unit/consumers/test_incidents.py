"""Incident capture over the demo's simulated ports (the real collector, tracker and history
on a generated sysfs tree): the seed scenario's PAUSE burst opens an incident with the
evidence, a burst that goes on extends it, it closes `after` the last firing; the capture
directory stays under max_bytes and a full file system leaves nothing partial."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.config import ConfigError, build
from nicwatch.consumers import incidents
from nicwatch.consumers.history import Recorder
from nicwatch.consumers.incidents import Capture, Incidents, Trigger, parse_capture
from nicwatch.demo.simulate import (
    BURST_PERIOD,
    PFC_PRIORITY,
    SimulatedDcb,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    Simulation,
    demo_ports,
)
from nicwatch.snapshot.format import load, when
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import Tracker

HOST = HostInfo("lab1", "6f0c1b1e-0d3a-4c55-9a51-2f1d2c3b4a59", 1764486000.0, "6.8.0-test",
                "#1 SMP")
PFC = Trigger("nic_rx_pfc_frames_total", "nic_rx_pfc_frames_total", 1000.0)
WALL0 = 1764500000.0


class Rig:
    """The demo's four ports, polled every ``interval`` simulated seconds."""

    def __init__(self, tmp: Path, capture: Capture, interval: float = 5.0) -> None:
        self.now = 1000.0
        self.sim = Simulation(demo_ports(4), seed=3, clock=lambda: self.now)
        self.tree = tmp / "sys"
        self.sim.write_sysfs(self.tree)
        self.collector = Collector(self.tree, Selection("enp.*"), ioctl=SimulatedEthtool(self.sim),
                                   netlink=SimulatedEthtoolNetlink(self.sim),
                                   dcb=SimulatedDcb(self.sim), monotonic=lambda: self.now)
        self.tracker = Tracker()
        self.history = Recorder(HOST, 1000)
        self.dir = tmp / "incidents"
        self.incidents = Incidents(capture, self.dir, HOST, self.history)
        self.interval = interval

    def wall(self) -> float:
        return WALL0 + self.now - 1000.0

    def poll(self, n: int = 1) -> None:
        for _ in range(n):
            self.now += self.interval
            self.sim.write_counters(self.tree)
            samples = self.collector.poll().samples
            tracked = self.tracker.update(samples)
            self.history.add(samples, self.wall(), self.now)
            self.incidents.observe(tracked, self.wall(), self.now)
        assert self.incidents.flush()


def test_pause_burst_on_one_priority_is_captured_with_its_evidence(tmp_path: Path) -> None:
    """The issue's done-when: the report names the port, the priority, the onset and the
    boot, and the raw statistics are saved."""
    cap = Capture(before=5.0, after=10.0, triggers=(PFC,))
    rig = Rig(tmp_path, cap)  # the burst is on from the start (t = 0) to t = 30 s
    rig.poll(1)  # t = 5: the first poll has no rates yet
    assert rig.incidents.totals[PFC.name] == 0
    rig.poll(1)  # t = 10
    (item,) = incidents.listed(rig.dir)
    assert item["device"] == "enp2s0np0" and item["open"]
    assert item["labels"] == {"priority": str(PFC_PRIORITY)}
    assert item["value"] > 1000
    onset = item["onset"]
    text = (rig.dir / item["id"] / "report.txt").read_text()
    assert "enp2s0np0" in text and f"priority={PFC_PRIORITY}" in text
    assert re.search(rf"^onset +{when(onset)}$", text, re.M)
    assert HOST.boot_id in text and "nic_rx_pfc_frames_total" in text
    snap = load(rig.dir / item["id"] / "onset.json.gz")
    (poll,) = snap.polls
    port = next(i for i in poll.interfaces if i.device == "enp2s0np0")
    assert f"rx_prio{PFC_PRIORITY}_pause" in port.raw["ethtool"].names  # raw statistics saved
    assert snap.host.boot_id == HOST.boot_id and poll.time == onset
    # The burst goes on: the same incident is extended, not reopened every poll.
    rig.poll(3)  # t = 25
    assert rig.incidents.totals[PFC.name] == 1 and len(rig.incidents.open) == 1
    rig.poll(2)  # t = 35: the burst ended at t = 30, fired last at t = 30
    assert len(rig.incidents.open) == 1
    rig.poll(1)  # t = 40: `after` (10 s) without firing closes it
    assert not rig.incidents.open
    (item,) = incidents.listed(rig.dir)
    assert not item["open"] and item["end"] > item["last_fired"] >= onset + 20
    times = [p.time for p in load(rig.dir / item["id"] / "history.json.gz").polls]
    assert min(times) == onset - 5 and max(times) == item["end"] == onset + 30
    assert re.search(r"^state +closed$", (rig.dir / item["id"] / "report.txt").read_text(), re.M)
    # The next burst (t = 60..90; no cooldown) is a new incident.
    rig.poll(5)
    assert rig.incidents.totals[PFC.name] == 2
    fams = {f.name: f for f in rig.incidents.families()}
    assert fams["nicwatch_incident_open"].series == (
        ((("device", "enp1s0np0"),), 0.0), ((("device", "enp2s0np0"),), 1.0),
        ((("device", "enp3s0np0"),), 0.0), ((("device", "enp4s0np0"),), 0.0))
    assert fams["nic_incidents_total"].series == (((("trigger", PFC.name),), 2.0),)


def test_cooldown_and_device_and_label_filters(tmp_path: Path) -> None:
    other = Trigger("p5", "nic_rx_pfc_frames_total", 1000.0, (("priority", "5"),))
    elsewhere = Trigger("enp3", "nic_rx_pfc_frames_total", 1000.0, device="enp3.*")
    cap = Capture(before=5.0, after=5.0, cooldown=600.0, triggers=(PFC, other, elsewhere))
    rig = Rig(tmp_path, cap)
    rig.poll(int(BURST_PERIOD * 2.2 // rig.interval))
    assert rig.incidents.totals == {PFC.name: 1, "p5": 0, "enp3": 0}


def test_many_incidents_stay_under_max_bytes(tmp_path: Path) -> None:
    cap = Capture(before=5.0, after=5.0, triggers=(PFC,))
    rig = Rig(tmp_path, cap)
    rig.poll(9)  # t = 45: one incident (t = 10 to 35), closed
    (first,) = incidents.listed(rig.dir)
    size = sum(p.stat().st_size for p in (rig.dir / first["id"]).iterdir())
    limit = int(size * 2.5)
    rig.incidents.configure(Capture(before=5.0, after=5.0, max_bytes=limit, triggers=(PFC,)),
                            rig.dir)
    rig.poll(int(BURST_PERIOD * 4 // rig.interval))
    ids = [i["id"] for i in incidents.listed(rig.dir)]
    assert rig.incidents.totals[PFC.name] >= 4
    assert first["id"] not in ids and 1 <= len(ids) <= 2
    total = sum(p.stat().st_size for p in rig.dir.rglob("*") if p.is_file())
    assert total <= limit
    assert not [p for p in rig.dir.iterdir() if p.name.startswith(".")]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_file_system_leaves_nothing_partial(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(small)], check=True)
    try:
        cap = Capture(before=5.0, after=5.0, triggers=(PFC,))
        rig = Rig(tmp_path, cap)
        rig.incidents.configure(cap, small)
        rig.poll(3)
        assert rig.incidents.totals[PFC.name] == 1
        assert rig.incidents.failures == {"ENOSPC": 1}
        assert list(small.iterdir()) == []  # no directory, no temporary file
        fams = {f.name: f for f in rig.incidents.families()}
        assert fams["nicwatch_incident_write_failures_total"].series == (
            ((("reason", "ENOSPC"),), 1.0),)
    finally:
        subprocess.run(["umount", str(small)], check=True)


# --------------------------------------------------------------------------- configuration


def _cfg(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nicwatch.toml"
    path.write_text(text)
    return path


GOOD = """
[capture]
directory = "/tmp/x"
before = "2m"
after = "1m"
max_bytes = "256MiB"
cooldown = "5m"

[[capture.trigger]]
family = "nic_rx_pfc_frames_total"
rate_above = 1000
labels = { priority = 3 }
device = "ens.*"

[[capture.trigger]]
event = "pcie_degraded"
"""


def test_capture_section_parses(tmp_path: Path) -> None:
    config = build(str(_cfg(tmp_path, GOOD)), {})
    c = config.capture
    assert (c.directory, c.before, c.after, c.max_bytes, c.cooldown) == (
        "/tmp/x", 120.0, 60.0, 256 << 20, 300.0)
    assert c.triggers == (
        Trigger('nic_rx_pfc_frames_total{priority=3}', "nic_rx_pfc_frames_total", 1000.0,
                (("priority", "3"),), "ens.*"),
        Trigger("pcie_degraded", event="pcie_degraded"))


@pytest.mark.parametrize("body,message", [
    ('family = "nic_rx_pfc_frame_total"\nrate_above = 1', "not a canonical counter family"),
    ('family = "nic_link_up"\nrate_above = 1', "not a canonical counter family"),
    ('family = "nic_tx_dropped_total"\nrate_above = -1', "0 or more"),
    ('family = "nic_tx_dropped_total"\nrate_above = nan', "0 or more"),
    ('family = "nic_tx_dropped_total"', "0 or more, got None"),
    ('family = "nic_tx_dropped_total"\nrate_above = 1\nlabels = { lane = "1" }', "no label"),
    ('event = "link_flap"', "unknown event"),
    ('family = "nic_tx_dropped_total"\nrate_above = 1\nevent = "link_down"', "either family"),
    ('family = "nic_tx_dropped_total"\nrate_above = 1\ndevice = "("', "bad regular expression"),
])
def test_bad_triggers_are_one_line_errors(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        build(str(_cfg(tmp_path, f"[[capture.trigger]]\n{body}\n")), {})
    assert "\n" not in str(e.value) and "capture.trigger[1]" in str(e.value)


@pytest.mark.parametrize("body,message", [
    ('before = "2 minutes"', "capture.before"), ('after = "-1s"', "capture.after"),
    ('max_bytes = "lots"', "capture.max_bytes"), ('cooldown = "1x"', "capture.cooldown"),
    ('keep = "1h"', "unknown key"),
])
def test_bad_capture_settings(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_capture({"capture": dict([tuple(x.strip().strip('"') for x in body.split("="))])},
                      "f.toml")


def test_serve_with_a_bad_trigger_exits_2_with_one_line(tmp_path: Path) -> None:
    path = _cfg(tmp_path, '[[capture.trigger]]\nfamily = "nic_tx_droped_total"\nrate_above = 1\n')
    proc = subprocess.run([str(Path(sys.executable).with_name("nicwatch")), "serve",
                           "--config", str(path), f"--state.file={tmp_path / 's.json'}"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "nic_tx_droped_total" in proc.stderr


@pytest.mark.parametrize("body,message", [
    ('before = "30d"', "between 1s and 24h"), ('after = "2d"', "between 100ms and 24h"),
    ('max_bytes = "1KiB"', "between 1MiB and 1024GiB"),
])
def test_capture_settings_have_bounds(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(str(_cfg(tmp_path, f"[capture]\n{body}\n")), {})
