"""The simulated ports behind `nicwatch demo`: the generated sysfs tree reads like the fixture
trees through the real sources, the simulated ethtool/netlink/DCB sources answer like the
real ones, counters follow the script, and the demo command's usage errors are one line."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nicwatch.collect import Collector, Selection
from nicwatch.demo.simulate import (
    BURST_ON,
    BURST_PAUSED,
    SimulatedDcb,
    SimulatedEthtool,
    SimulatedEthtoolNetlink,
    Simulation,
    SysfsRefresher,
    demo_ports,
    stat_names,
)
from nicwatch.normalize import pcie_verdict as pcie
from nicwatch.sources import sysfs_net
from nicwatch.sources.ethtool_ioctl import EthtoolError
from nicwatch.sources.sysfs_infiniband import read_rdma_ports
from nicwatch.sources.sysfs_pci import read_pcie_path
from nicwatch.tracker import Tracker


class Clock:
    """Monotonic seconds that only move when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sim(clock: Clock) -> Simulation:
    return Simulation(demo_ports(4), seed=7, clock=clock)


@pytest.fixture
def tree(sim: Simulation, tmp_path: Path) -> Path:
    sim.write_sysfs(tmp_path)
    return tmp_path


def test_the_script() -> None:
    ports = demo_ports(5)
    assert [p.speed_mbps for p in ports] == [200_000] + [400_000] * 4
    assert [p.rx_ring for p in ports] == [8192, 8192, 8192, 8192, 1024]
    assert [p.pause_bursts for p in ports] == [False, True, False, False, False]
    assert [p.bad_optic for p in ports] == [False, False, True, False, False]
    assert (ports[0].pcie_width, ports[0].pcie_max_width) == (8, 16)
    with pytest.raises(ValueError, match="between 4 and 30, got 3"):
        demo_ports(3)


def test_sysfs_tree_reads_like_the_fixtures(tree: Path) -> None:
    """The real readers find four mlx5 netdevs (and the bond over the last two, which has
    no device); the PCIe verdicts are the scripted ones."""
    names = sysfs_net.list_interfaces(tree)
    assert names == ["bond0", "enp1s0np0", "enp2s0np0", "enp3s0np0", "enp4s0np0"]
    assert not sysfs_net.has_device(tree, "bond0")
    names.remove("bond0")
    nics = {}
    for name in names:
        nc = sysfs_net.read_netclass(tree, name)
        assert (nc.driver, nc.operstate, nc.mtu) == ("mlx5_core", "up", 9000)
        path = read_pcie_path(tree, nc.pci_address)
        assert path.problems == () and [h.bdf for h in path.hops][1].startswith("0000:00:")
        nics[name] = (path, pcie.line_rate_from_mbps(nc.speed_mbps))
    verdicts = pcie.assess_all(nics)
    assert verdicts["enp1s0np0"].reasons == (pcie.WIDTH, pcie.CEILING_BELOW_LINE_RATE)
    assert verdicts["enp1s0np0"].slot_limits == ()  # the root port is x16 capable
    assert verdicts["enp1s0np0"].ceiling.bytes_per_second * 8 == 126_024_000_000
    assert all(verdicts[n].reasons == () for n in names[1:])
    ports = read_rdma_ports(tree)
    assert [(p.device, p.netdev, p.link_layer, p.problems) for p in ports] == [
        (f"mlx5_{i}", name, "Ethernet", ()) for i, name in enumerate(names)]


def test_ethtool_answers_like_the_ioctl_class(sim: Simulation, clock: Clock) -> None:
    ethtool = SimulatedEthtool(sim)
    info = ethtool.driver_info("enp2s0np0")
    assert (info.driver, info.version, info.bus_info) == ("mlx5_core", "simulated",
                                                          "0000:02:00.0")
    assert "simulated" in info.firmware_version and info.n_stats == len(stat_names())
    assert ethtool.perm_address("enp2s0np0") == "b8:3f:d2:5e:02:00"
    assert ethtool.rings("enp4s0np0").rx == 1024 and ethtool.rings("enp2s0np0").rx == 8192
    first = ethtool.statistics("enp2s0np0")
    clock.now += 5
    second = ethtool.statistics("enp2s0np0")
    assert first.names == second.names and first.generation == second.generation
    assert all(b >= a for a, b in zip(first.values, second.values, strict=False))
    assert second.as_dict()["rx_bytes_phy"] > first.as_dict()["rx_bytes_phy"]
    with pytest.raises(EthtoolError) as e:
        ethtool.statistics("eth0")
    assert e.value.kind == "ENODEV"


def test_pause_bursts_follow_the_script(sim: Simulation, clock: Clock) -> None:
    """Port 1 is paused 40% of the time during the first half of each minute, not after."""
    def paused_seconds() -> float:
        return sim.ethtool_stats("enp2s0np0")["rx_prio3_pause_duration"] / 1e6

    start = paused_seconds()
    clock.now += BURST_ON
    during = paused_seconds() - start
    clock.now += BURST_ON
    after = paused_seconds() - start - during
    assert during == pytest.approx(BURST_ON * BURST_PAUSED, rel=0.06)
    assert after == pytest.approx(0, abs=1e-6)
    assert sim.ethtool_stats("enp3s0np0")["rx_prio3_pause_duration"] == 0


def test_real_collector_over_the_simulation(sim: Simulation, clock: Clock, tree: Path) -> None:
    """Collector and Tracker, unchanged, see the scripted faults as canonical families."""
    collector = Collector(tree, Selection("enp.*"), ioctl=SimulatedEthtool(sim),
                          netlink=SimulatedEthtoolNetlink(sim), dcb=SimulatedDcb(sim),
                          monotonic=clock)
    tracker = Tracker()
    tracker.update(collector.poll().samples)
    clock.now += BURST_ON  # one step, within the first burst
    sim.write_counters(tree)
    result = collector.poll()
    assert result.errors == ()
    tracked = {t.sample.identity.device: t for t in tracker.update(result.samples)}

    def rate(device: str, metric: str, **labels: str) -> float:
        key = next(k for k in tracked[device].counters
                   if k.metric == metric and dict(k.labels).items() >= labels.items())
        return tracked[device].counters[key].rate

    # Port 1: paused 40% on priority 3 (the script's first 30 s of each minute).
    assert rate("enp2s0np0", "nic_rx_pause_duration_seconds_total", priority="3") == (
        pytest.approx(BURST_PAUSED, rel=0.06))
    # Port 2: pre-FEC BER 3e-5 of the line, uncorrectable FEC codewords from netlink.
    ber = rate("enp3s0np0", "nic_fec_corrected_bit_errors_total") / 400e9
    assert ber == pytest.approx(3e-5, rel=0.06)
    assert sum(cv.raw for k, cv in tracked["enp3s0np0"].sample.counters.items()
               if k.metric == "nic_fec_uncorrectable_blocks_total") >= 1
    # Last port: out-of-buffer drops, 0.3% of netdev packets (sysfs moved with the counters).
    drops = rate("enp4s0np0", "nic_rx_out_of_buffer_drops_total")
    assert drops / rate("enp4s0np0", "nic_rx_packets_total") == pytest.approx(3e-3, rel=0.1)
    gauges = dict(tracked["enp4s0np0"].sample.gauges.items())
    by_name = {(k.metric, k.labels): v for k, v in gauges.items()}
    assert by_name[("nic_ring_descriptors", (("ring", "rx"),))] == 1024
    assert by_name[("nic_pfc_enabled", (("priority", "3"),))] == 1
    info = next(k for k in gauges if k.metric == "nic_info")
    assert dict(info.labels)["driver_version"] == "simulated"
    assert dict(info.labels)["rdma_device"] == "mlx5_3"


def test_refresher_keeps_sysfs_moving(sim: Simulation, clock: Clock, tree: Path) -> None:
    rx = tree / "class/net/enp2s0np0/statistics/rx_bytes"
    before = int(rx.read_text())
    clock.now += 1
    refresher = SysfsRefresher(sim, tree, period=0.01)
    refresher.start()
    try:
        for _ in range(500):
            if int(rx.read_text()) > before:
                break
            time.sleep(0.01)
    finally:
        refresher.stop()
    assert int(rx.read_text()) > before
    assert not list(tree.rglob(".*.tmp"))  # every rewrite was renamed into place


@pytest.mark.parametrize(("args", "message"), [
    (["--ports", "2"], "nicwatch demo: error: --ports must be between 4 and 30, got 2\n"),
    (["--interval", "soon"], "nicwatch demo: error: flag --interval: expected a duration"),
    (["--web.listen-address", "nowhere"], "nicwatch demo: error: flag --web.listen-address"),
    (["--ports", "many"], "nicwatch demo: error: argument --ports: invalid int value"),
])
def test_demo_usage_errors_are_one_line(args: list[str], message: str) -> None:
    r = subprocess.run([sys.executable, "-m", "nicwatch.cli.demo", *args], check=False,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr


def test_demo_reports_a_busy_listen_address() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "nicwatch.cli.demo", "--log.level=error",
                            f"--web.listen-address=127.0.0.1:{port}"], check=False,
                           capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"nicwatch demo: error: 127.0.0.1:{port}: ")
    assert "in use" in r.stderr.lower()


def test_the_demo_port_with_one_bad_lane(sim: Simulation, clock: Clock, tree: Path) -> None:
    """Port 1's lane 3 (of 4 x 100G PAM4 lanes, 106.25 Gb/s each) at a pre-FEC BER of 8e-5
    is named by nic_pre_fec_ber while the port's own ratio stays below the rs544 threshold
    (2.4e-5, deploy/prometheus/thresholds.toml)."""
    from nicwatch.consumers.linkphysics import physics_of

    collector = Collector(tree, Selection("enp.*"), ioctl=SimulatedEthtool(sim),
                          netlink=SimulatedEthtoolNetlink(sim), monotonic=clock)
    tracker = Tracker()
    tracker.update(collector.poll().samples)
    clock.now += 10
    sim.write_counters(tree)
    physics = physics_of(tracker.update(collector.poll().samples))
    port = physics["enp2s0np0"]
    assert (port.fec, port.lanes) == ("rs544", 4)
    assert port.worst_lane() == ("3", pytest.approx(8e-5, rel=0.05))
    assert port.ber["total"] < 2.4e-5 < port.ber["3"]
    assert max(v for lane, v in port.ber.items() if lane not in ("3", "total")) < 1e-6
    # The other ports' lanes share their errors evenly: no lane stands out.
    healthy = physics["enp4s0np0"].worst_lane()
    assert healthy is not None and healthy[1] < 1e-6
