"""The diagnosis consumer over the demo's simulated ConnectX host (the real collector and
tracker on a generated sysfs tree): each scripted fault is diagnosed as exactly its cause, the
healthy port as nothing, and the verdicts are exported with the time they have held since."""

from __future__ import annotations

from pathlib import Path

import pytest

from nicwatch import metrics
from nicwatch.collect import Collector, Selection
from nicwatch.consumers.diagnosis.consumer import Diagnosis
from nicwatch.consumers.diagnosis.signatures import CONTEXT
from nicwatch.consumers.registry import CONSUMERS
from nicwatch.demo.simulate import (
    BURST_PERIOD,
    SimulatedDcb,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    SimulatedNetdev,
    Simulation,
    demo_ports,
)
from nicwatch.tracker import Tracker

WALL0 = 1764500000.0
OPTIC = {"physical_layer", *(f"physical_layer{{lane={lane}}}" for lane in range(4))}
# The cause of each scripted port of the demo, in port order (nicwatch.demo.simulate): a
# script of 5, 10, 11, 12 or 13 ports runs the first N - 1 of them and the small-ring port
# last. Port 1 also carries the link physics demo's bad lane (lane 3 at 8e-5, the port about
# 2e-5): a physical-layer fault of that lane alone; the marginal optic has every lane near
# 2.8e-5 and the port's uncorrectable codewords.
SCRIPT = ({"pcie_limited"}, {"paused_by_peer{priority=3}", "physical_layer{lane=3}"}, OPTIC,
          set(), {"pause_storm{priority=3}"}, {"rdma_transport_loss"},
          {"ecn_not_engaging{priority=3}"}, {"congestion_control_misconfigured"},
          {"rdma_receiver_not_ready"}, {"rx_cpu_saturated"}, {"pausing_peer{priority=3}"})


def expected(ports: int, last: set[str] | None = None) -> dict[str, set[str]]:
    """What a script of ``ports`` ports holds: its scripted ports, then the small ring."""
    return {**{f"enp{i + 1}s0np0": SCRIPT[i] for i in range(ports - 1)},
            f"enp{ports}s0np0": {"host_rx_bottleneck"} if last is None else last}


class Rig:
    def __init__(self, tmp: Path, ports: int = 5, demo_config: bool = False) -> None:
        self.now = 1000.0
        self.paused = 0.0  # simulated seconds the ports stood still (freeze)
        self.frozen: float | None = None
        self.sim = Simulation(demo_ports(ports), seed=5, clock=self.sim_clock)
        self.tree = tmp / "sys"
        self.sim.write_sysfs(self.tree)
        procfs = tmp / "proc"
        self.sim.write_procfs(procfs)
        self.collector = Collector(
            self.tree, Selection("enp.*"), ioctl=SimulatedEthtool(self.sim),
            netlink=SimulatedEthtoolNetlink(self.sim), dcb=SimulatedDcb(self.sim),
            netdev=SimulatedNetdev(self.sim), procfs=procfs, monotonic=lambda: self.now)
        self.tracker = Tracker()
        self.diagnosis = Diagnosis()
        if demo_config:  # the configuration `nicwatch demo` runs with: its [[consistent]] group
            from nicwatch.cli.demo import CONFIG
            from nicwatch.config import build
            (tmp / "nicwatch.toml").write_text(CONFIG)
            from nicwatch.consumers.checks import expectations_of
            self.diagnosis = Diagnosis(expectations_of(build(str(tmp / "nicwatch.toml"), {})))

    def sim_clock(self) -> float:
        return self.now - self.paused if self.frozen is None else self.frozen

    def freeze(self) -> None:
        """The ports stand still from now on (every counter keeps its value) while the
        collector's clock goes on."""
        self.frozen = self.sim_clock()

    def thaw(self) -> None:
        """The ports go on from where they stood (no jump over the frozen time)."""
        assert self.frozen is not None
        self.paused = self.now - self.frozen
        self.frozen = None

    def poll(self, n: int = 1) -> dict[str, set[str]]:
        for _ in range(n):
            self.now += 5.0
            self.sim.write_counters(self.tree)
            result = self.collector.poll()
            tracked = self.tracker.update(result.samples)
            self.diagnosis.update(result, tracked, WALL0 + self.now - 1000.0)
        out: dict[str, set[str]] = {p: set() for p in self.sim.ports}
        for v in self.diagnosis.verdicts:
            if v.klass != CONTEXT:
                out[v.device].add(v.label)
        return out


def test_each_scripted_fault_is_diagnosed_as_exactly_its_cause(tmp_path: Path) -> None:
    """Polled 35 s into the script (port 1's PAUSE burst on for the first 30 s): the Gen4 x8
    card is PCIe-limited, the bursting port paused by its peer on priority 3, the marginal
    optic a physical-layer fault, the 1,024 ring a host receive bottleneck; port 3 is
    healthy and busy, and nothing holds there."""
    rig = Rig(tmp_path)
    held = rig.poll(7)
    assert held == expected(5)
    by = {(v.device, v.signature): v for v in rig.diagnosis.verdicts}
    ring = by[("enp5s0np0", "host_rx_bottleneck")]
    assert "the rx ring is below its maximum" in ring.reasons
    assert "one receive queue dominates" in ring.reasons
    optic = next(v for v in rig.diagnosis.verdicts
                 if v.label == "physical_layer" and v.device == "enp3s0np0")
    assert {r.condition.quantity for r in optic.conditions if r.held} >= {
        "fec_uncorrectable", "pcs_symbol_errors"}
    assert 29 <= optic.seconds <= 31
    # the bad lane: named, with its ratio over the window and RS(544,514)'s threshold
    (lane,) = [v for v in rig.diagnosis.verdicts
               if v.device == "enp2s0np0" and v.signature == "physical_layer"]
    values = {e.series: e.value for e in lane.evidence}
    ber = values['nic_pre_fec_ber{fec="rs544",lane="3"} over the window']
    assert ber is not None and 7e-5 < ber < 9e-5
    assert values["rs544 threshold (normalize/linkphysics.py FEC_CODES)"] == 2.4e-5


def test_a_quiet_interface_is_not_evaluated_again_and_its_fault_shows_at_once(
        tmp_path: Path) -> None:
    """While the ports stand still, an interface whose window increased nothing and held
    nothing is not evaluated again (its window would be the same series, all 0, with the same
    gauges). At every poll the verdicts equal the evaluation of every interface's whole
    window, and once the ports move on, each scripted fault is diagnosed as before."""
    from nicwatch.consumers.diagnosis.engine import evaluate

    def check() -> None:
        d = rig.diagnosis
        full = evaluate([w for dev in d.recent.devices() if (w := d.recent.window(dev))])
        assert [v.label + v.device for v in d.verdicts] == [v.label + v.device for v in full]

    rig = Rig(tmp_path)
    rig.freeze()
    for _ in range(8):
        rig.poll()
        check()
    quiet = rig.diagnosis.skipped
    # the healthy port (3) and the marginal optic's (nothing moves: no FEC errors either),
    # each poll after the first two
    assert quiet >= 2 * 6, quiet
    rig.thaw()
    for _ in range(7):
        rig.poll()
        check()
    assert rig.poll(0) == expected(5)


def test_still_quiet_only_for_the_same_series_all_zero_with_the_same_gauges() -> None:
    from nicwatch.consumers.diagnosis.consumer import still_quiet
    from nicwatch.model import SeriesKey
    drops, pfc = SeriesKey("nic_rx_discards_total"), SeriesKey(
        "nic_rx_pfc_frames_total", (("priority", "3"),))
    ring = {SeriesKey("nic_ring_descriptors", (("ring", "rx"),)): 1024.0}
    quiet = (frozenset({drops, pfc}), ring)
    assert still_quiet(quiet, {drops: 0.0, pfc: 0.0}, dict(ring))
    assert not still_quiet(None, {drops: 0.0, pfc: 0.0}, ring)  # not quiet, or never seen
    assert not still_quiet(quiet, {drops: 0.0, pfc: 7.0}, ring)  # PFC frames on a quiet port
    assert not still_quiet(quiet, {drops: 0.0}, ring)  # a series gone (unknown now, not 0)
    assert not still_quiet(quiet, {drops: 0.0, pfc: 0.0, SeriesKey("nic_rx_packets_total"): 0.0},
                           ring)  # a series more
    assert not still_quiet(quiet, {drops: 0.0, pfc: 0.0}, {**ring, next(iter(ring)): 512.0})


def test_the_burst_ends_and_its_verdict_with_it(tmp_path: Path) -> None:
    """30 s after the burst stopped the window holds none of it."""
    rig = Rig(tmp_path)
    rig.poll(7)
    assert "paused_by_peer{priority=3}" in rig.poll(1)["enp2s0np0"]  # t = 40 s
    held = rig.poll(int((BURST_PERIOD - 40) // 5))  # t = 60 s: the window is the off half
    assert "paused_by_peer{priority=3}" not in held["enp2s0np0"]


def test_families_and_since(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.poll(3)
    first = {v.label: v.since for v in rig.diagnosis.verdicts if v.device == "enp3s0np0"}
    rig.poll(2)
    later = {v.label: v.since for v in rig.diagnosis.verdicts if v.device == "enp3s0np0"}
    since = first["physical_layer{lane=0}"]
    assert since is not None and WALL0 < since <= WALL0 + 15.0
    assert later["physical_layer{lane=0}"] == since
    fams = {f.name: f for f in rig.diagnosis.families()}
    assert set(fams) == {metrics.DIAGNOSIS.name, metrics.DIAGNOSIS_SINCE.name}
    series = dict(fams[metrics.DIAGNOSIS.name].series)
    labels = (("device", "enp3s0np0"), ("signature", "physical_layer"), ("priority", ""),
              ("lane", "0"))
    assert series[labels] == 1.0
    assert dict(fams[metrics.DIAGNOSIS_SINCE.name].series)[labels] == since


def test_the_first_poll_holds_nothing_and_the_consumer_is_registered(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    assert rig.poll(1) == {p: set() for p in rig.sim.ports}  # one reading: no window yet
    assert Diagnosis.open in CONSUMERS


def test_the_seven_port_script_adds_a_storm_and_transport_loss(tmp_path: Path) -> None:
    """``--ports 8``: port 4 a pause storm on priority 3 (not also 'pausing the peer', which
    it explains), port 5 RoCE transport loss, ports 6 healthy, the last the small ring."""
    held = Rig(tmp_path, ports=8).poll(7)
    assert held == {
        "enp1s0np0": {"pcie_limited"},
        # port 1 also carries the link physics demo's bad lane (lane 3 at 8e-5, the port
        # about 2e-5): a physical-layer fault of that lane alone
        "enp2s0np0": {"paused_by_peer{priority=3}", "physical_layer{lane=3}"},
        # the marginal optic: every lane near 2.8e-5 and the port's uncorrectable codewords
        "enp3s0np0": OPTIC,
        "enp4s0np0": set(),
        "enp5s0np0": {"pause_storm{priority=3}"},
        "enp6s0np0": {"rdma_transport_loss"},
        "enp7s0np0": set(),
        "enp8s0np0": {"host_rx_bottleneck"},
    }


def test_the_ten_port_script_adds_ecn_congestion_control_and_rnr(tmp_path: Path) -> None:
    """``--ports 10``: port 6 PFC on priority 3 with no ECN marks or CNPs (ECN not
    engaging), port 7 ECN off at the notification point on the lossless priority (congestion
    control misconfigured), port 8 RNR NAKs with RDMA out-of-buffer drops; every earlier
    fault is still exactly its cause and the last port still the small ring."""
    rig = Rig(tmp_path, ports=10)
    held = rig.poll(7)
    assert held == expected(10)
    by = {(v.device, v.signature): v for v in rig.diagnosis.verdicts}
    ecn = by[("enp7s0np0", "ecn_not_engaging")]
    assert "PFC is enabled on this priority" in ecn.reasons
    assert any(e.series.startswith("nic_rdma_cnp_sent_total") and e.delta == 0
               for e in ecn.evidence)
    cc = by[("enp8s0np0", "congestion_control_misconfigured")]
    held_conditions = {r.condition.quantity for r in cc.conditions if r.held}
    assert held_conditions == {"ecn_off_on_lossless"}
    assert any('point="np"' in e.series and 'priority="3"' in e.series and e.value == 0
               for e in cc.evidence)
    rnr = by[("enp9s0np0", "rdma_receiver_not_ready")]
    assert {e.series.partition("{")[0] for e in rnr.evidence} >= {
        "nic_rdma_rnr_nak_retry_errors_total", "nic_rdma_out_of_buffer_drops_total"}


def test_a_reload_keeps_the_window_and_a_restart_starts_it_again(tmp_path: Path) -> None:
    """docs/diagnosis.md "After a restart": reconfigure (SIGHUP) keeps the verdicts and their
    since; a new consumer (a restart: the flight recorder is in memory too) has no window at
    its first poll and a verdict with a new since at its second."""
    from nicwatch.config import build
    rig = Rig(tmp_path)
    rig.poll(3)
    before = {v.label: v.since for v in rig.diagnosis.verdicts if v.device == "enp3s0np0"}
    rig.diagnosis.reconfigure(build(None, {}))
    rig.poll(1)
    after = {v.label: v.since for v in rig.diagnosis.verdicts if v.device == "enp3s0np0"}
    assert after["physical_layer{lane=0}"] == before["physical_layer{lane=0}"]
    rig.diagnosis = Diagnosis()
    assert rig.poll(1)["enp3s0np0"] == set()
    restarted = {v.label: v.since for v in rig.diagnosis.verdicts if v.device == "enp3s0np0"}
    assert restarted == {}
    rig.poll(1)
    again = {v.label: v.since for v in rig.diagnosis.verdicts if v.device == "enp3s0np0"}
    assert again["physical_layer{lane=0}"] > before["physical_layer{lane=0}"]


def test_the_eleven_port_script_adds_a_saturated_receive_cpu(tmp_path: Path) -> None:
    """``--ports 11``: port 9's eight vectors on a CPU of their own, 95 % of it in softirq
    (the simulated /proc/stat) with time_squeeze rising there: receive CPU saturated, on
    that port only (the two shared CPUs at 5 %); every earlier fault unchanged."""
    rig = Rig(tmp_path, ports=11)
    held = rig.poll(7)
    assert held == expected(11)
    (cpu,) = [v for v in rig.diagnosis.verdicts if v.signature == "rx_cpu_saturated"]
    values = {e.series: e.value for e in cpu.evidence}
    assert values['nic_rx_cpu_softirq_ratio{cpu="2"}'] == pytest.approx(0.95, abs=0.01)
    assert any(e.series == 'nic_rx_cpu_time_squeeze_total{cpu="2"}' and (e.rate or 0) > 30
               for e in cpu.evidence)




def test_the_twelve_port_script_adds_a_port_pausing_its_peer(tmp_path: Path) -> None:
    """``--ports 12``: port 10 sends PFC on priority 3, holding its peer paused 30 % of the
    time while traffic arrives and nothing drops: pausing the peer, on that priority only;
    not a pause storm (its peak far under 0.8 of a poll, rx traffic present) and not a host
    receive bottleneck (no drops); every earlier fault unchanged."""
    rig = Rig(tmp_path, ports=12)
    held = rig.poll(7)
    assert held == expected(12)
    (v,) = [v for v in rig.diagnosis.verdicts if v.device == "enp11s0np0"]
    results = {r.condition.quantity: r for r in v.conditions}
    assert results["tx_pause_fraction"].held
    assert results["tx_pause_fraction"].value == pytest.approx(0.3, abs=0.02)
    assert results["tx_pfc_frames_rate"].held
    assert results["tx_pfc_frames_rate"].value == pytest.approx(6000, rel=0.06)
    # the receive side: known, and not dropping (so no host_rx_bottleneck beside it)
    assert results["host_rx_drop_ratio"].value == 0.0
    assert results["host_rx_drop_ratio"].held is False
    assert any(e.series == 'nic_tx_pause_duration_seconds_total{priority="3"}'
               and (e.delta or 0) > 0 for e in v.evidence)
    # what keeps it from being a storm: the storm signature evaluated on the same window
    from nicwatch.consumers.diagnosis.engine import evaluate_one
    from nicwatch.consumers.diagnosis.signatures import SIGNATURES
    storm = next(s for s in SIGNATURES if s.name == "pause_storm")
    window = rig.diagnosis.recent.window("enp11s0np0")
    assert window is not None
    no_storm = {r.condition.quantity: r for r in evaluate_one(storm, window, "3").conditions}
    assert no_storm["tx_pause_fraction_peak"].value is not None
    assert no_storm["tx_pause_fraction_peak"].value < 0.4
    assert no_storm["rx_traffic_share"].value is not None
    assert no_storm["rx_traffic_share"].value > 0.2


def test_the_thirteen_port_script_adds_configuration_drift(tmp_path: Path) -> None:
    """``--ports 13`` with the demo's own configuration (its [[consistent]] group "fabric":
    rx_ring, tx_ring, mtu, channels): port 11's rx ring 4,096 among 8,192s is configuration
    drift and nothing else, a context verdict of its own (no other verdict on that port to
    carry it); the small ring of the last port is drift too, carried as the context of its
    host receive bottleneck; every other fault unchanged and without drift."""
    rig = Rig(tmp_path, ports=13, demo_config=True)
    held = rig.poll(7)
    # (held lists the verdicts that are causes: port 12's drift is context only)
    assert held == {**expected(12), "enp12s0np0": set(), "enp13s0np0": {"host_rx_bottleneck"}}
    drift = {v.device: v for v in rig.diagnosis.verdicts if v.signature == "config_drift"}
    assert set(drift) == {"enp12s0np0", "enp13s0np0"}
    assert all(v.klass == CONTEXT for v in drift.values())
    assert [e.series for e in drift["enp12s0np0"].evidence] == [
        'nic_expectation_violation{actual="4096",check="consistent_rx_ring",expected="8192"}']
    # drift is context: on the drifting port it is the only verdict, on the last port the
    # context of its bottleneck, and on no other port's verdicts
    assert [v.signature for v in rig.diagnosis.verdicts if v.device == "enp12s0np0"] == [
        "config_drift"]
    (bottleneck,) = [v for v in rig.diagnosis.verdicts
                     if v.device == "enp13s0np0" and v.signature == "host_rx_bottleneck"]
    assert bottleneck.context == tuple(e.series for e in drift["enp13s0np0"].evidence)
    assert any("consistent_rx_ring" in c for c in bottleneck.context)
    assert all(not v.context for v in rig.diagnosis.verdicts
               if v.device not in drift)


def test_the_consistent_groups_are_evaluated_once_a_poll_by_the_checks_consumer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opened as the daemon opens them (one Services), the diagnosis consumer reads the
    [[consistent]] results the checks consumer computed for the same poll instead of
    evaluating the groups again (before: twice a poll), and diagnoses the same drift."""
    from dataclasses import replace

    from nicwatch.cli.demo import CONFIG
    from nicwatch.config import build
    from nicwatch.consumers import Services
    from nicwatch.consumers.checks import ExpectationChecks, properties

    rig = Rig(tmp_path, ports=13)
    (tmp_path / "nicwatch.toml").write_text(CONFIG)
    config = build(str(tmp_path / "nicwatch.toml"), {})
    services = Services()
    checks = ExpectationChecks.open(config, None, services)
    rig.diagnosis = Diagnosis.open(config, None, services)
    read: list[str] = []  # devices whose channels a [[consistent]] evaluation read
    channels = properties.PROPERTIES["channels"]  # in the group only, not in [[expect]]
    monkeypatch.setitem(properties.PROPERTIES, "channels", replace(
        channels, actual=lambda s: read.append(s.identity.device) or channels.actual(s)))
    for _ in range(7):
        rig.now += 5.0
        rig.sim.write_counters(rig.tree)
        result = rig.collector.poll()
        tracked = rig.tracker.update(result.samples)
        members = sorted(s.identity.device for s in result.samples
                         if s.identity.driver == "mlx5_core")
        read.clear()
        checks.observe(result, tracked)
        rig.diagnosis.update(result, tracked, WALL0 + rig.now - 1000.0)
        assert len(members) == 13 and sorted(read) == members  # each member read once
    drift = {v.device for v in rig.diagnosis.verdicts if v.signature == "config_drift"}
    assert drift == {"enp12s0np0", "enp13s0np0"}
    # A poll the checks consumer did not observe is evaluated here, not read stale.
    result = rig.collector.poll()
    read.clear()
    rig.diagnosis.update(result, rig.tracker.update(result.samples), WALL0 + rig.now)
    assert sorted(read) == members
