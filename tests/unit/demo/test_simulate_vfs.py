"""The demo's SR-IOV VFs: counters monotonic with the port's, VF 3 dropping, sysfs counts."""

from __future__ import annotations

import errno

import pytest

from nicwatch.demo.simulate import (
    VF_DROP_RATIO,
    VFS,
    SimulatedVfs,
    Simulation,
    demo_ports,
)
from nicwatch.sources.sriov import VfError, read_sriov_counts


def test_vfs_follow_the_port_and_one_drops(tmp_path):
    now = [0.0]
    ports = demo_ports()
    sim = Simulation(ports, clock=lambda: now[0])
    reader = SimulatedVfs(sim)
    count, first = reader.vfs(ports[0].ifindex)
    assert count == VFS == len(first) and [v.vf for v in first] == list(range(VFS))
    now[0] = 30.0
    _count, later = reader.vfs(ports[0].ifindex)
    for a, b in zip(first, later, strict=True):
        assert all(b.stats[k] >= a.stats[k] for k in a.stats)
        assert b.stats["rx_bytes"] > a.stats["rx_bytes"]
    drops = {v.vf: v.stats["rx_dropped"] / v.stats["rx_packets"] for v in later}
    assert drops[3] == pytest.approx(VF_DROP_RATIO, rel=1e-3) and drops[0] == 0
    assert reader.vfs(ports[1].ifindex) == (0, ())
    with pytest.raises(VfError) as e:
        reader.vfs(999)
    assert e.value.errno == errno.ENODEV
    sim.write_sysfs(tmp_path)
    assert read_sriov_counts(tmp_path, ports[0].name) == (VFS, 16)
    assert read_sriov_counts(tmp_path, ports[1].name) == (None, None)


def test_the_demo_serves_its_dropping_vf_as_mlx5_in_legacy_mode(tmp_path):
    """The demo's PFs are mlx5_core with only their uplink devlink port (legacy e-switch):
    the VF drop counters are measurements there, so the dropping VF reaches /metrics."""
    from nicwatch.collect import Collector, Selection
    from nicwatch.demo.simulate import SimulatedDevlink, SimulatedEthtool
    from nicwatch.sources.sriov import SriovSource

    now = [0.0]
    ports = demo_ports()
    sim = Simulation(ports, clock=lambda: now[0])
    sim.write_sysfs(tmp_path)
    collector = Collector(tmp_path, Selection(ports[0].name), ioctl=SimulatedEthtool(sim),
                          devlink=SimulatedDevlink(sim))
    collector.sources.append(SriovSource(tmp_path, SimulatedVfs(sim)))
    try:
        now[0] = 30.0
        (sample,) = [s for s in collector.poll().samples if s.identity.device == ports[0].name]
    finally:
        collector.close()
    assert sample.reading.devlink_vf_ports == 0
    dropped = {dict(k.labels)["vf"]: v.raw for k, v in sample.counters.items()
               if k.metric == "nic_vf_rx_dropped_total"}
    assert set(dropped) == {str(n) for n in range(VFS)} and dropped["3"] > 0
