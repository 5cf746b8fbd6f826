"""The vendor mlx5 ecn/ tree, rdma_cm default_roce_tos and tc/<port>/traffic_class read from
a fixture tree shaped like the driver's (tests/fixtures/sysfs/README.md, mlx5-roce-qos)."""

from __future__ import annotations

import shutil

import pytest

from nicwatch.model import RoceEcn
from nicwatch.sources.sysfs_infiniband import read_rdma_ports
from nicwatch.sources.sysfs_roce import parse_traffic_class, read_mlx5_trust, read_roce_ecn

from paths import SYSFS

ECN = "devices/pci0000:20/0000:20:03.1/0000:21:00.0/net/enp33s0f0np0/ecn"


def test_ecn_tree_of_the_vendor_driver():
    assert read_roce_ecn(SYSFS / "mlx5-roce-qos", "enp33s0f0np0") == RoceEcn(
        rp_enabled=(True,) * 8, np_enabled=(True,) * 8, cnp_dscp=48, cnp_802p_prio=6)


def test_upstream_driver_has_no_ecn_tree():
    assert read_roce_ecn(SYSFS / "mlx5-rdma", "enp33s0f0np0") is None


def test_rdma_port_carries_default_tos_and_traffic_class():
    (port,) = read_rdma_ports(SYSFS / "mlx5-roce-qos")
    assert (port.default_roce_tos, port.traffic_class) == (106, 106)
    (plain,) = read_rdma_ports(SYSFS / "mlx5-rdma")
    assert (plain.default_roce_tos, plain.traffic_class) == (None, None)


def test_disabled_priority_missing_file_and_garbage(tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-roce-qos", root, symlinks=True)
    (root / ECN / "roce_np/enable/3").write_text("0\n")
    (root / ECN / "roce_rp/enable/5").unlink()
    (root / ECN / "roce_np/cnp_dscp").write_text("forty-eight\n")
    problems: list[str] = []
    ecn = read_roce_ecn(root, "enp33s0f0np0", problems)
    assert ecn.np_enabled[3] is False and ecn.rp_enabled[5] is None
    assert ecn.cnp_dscp is None and ecn.cnp_802p_prio == 6
    assert len(problems) == 1 and "cnp_dscp" in problems[0]


def test_unset_traffic_class_is_absent_not_a_problem(tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-roce-qos", root, symlinks=True)
    tc = root / "devices/pci0000:20/0000:20:03.1/0000:21:00.0/infiniband/mlx5_0/tc/1"
    (tc / "traffic_class").write_text("")
    (port,) = read_rdma_ports(root)
    assert port.traffic_class is None and port.problems == ()


@pytest.mark.parametrize("text", ["Global tclass=256", "tclass=106", ""])
def test_traffic_class_garbage(text):
    with pytest.raises(ValueError):
        parse_traffic_class(text)


def test_collector_reads_the_ecn_tree_on_the_pcie_cadence(tmp_path):
    from nicwatch.collect import Collector, Selection
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-roce-qos", root, symlinks=True)

    def np3(collector) -> bool:
        (reading,) = [s.reading for s in collector.poll().samples]
        return reading.roce_ecn.np_enabled[3]

    slow, every = Collector(root, Selection(), pcie_refresh=3600), Collector(root, Selection())
    assert np3(slow) is True and np3(every) is True
    (root / ECN / "roce_np/enable/3").write_text("0\n")
    assert np3(slow) is True  # cached until the next PCIe re-read
    assert np3(every) is False


NETDEV = "devices/pci0000:20/0000:20:03.1/0000:21:00.0/net/enp33s0f0np0"


def test_vendor_qos_trust_file(tmp_path):
    """The vendor mlx5 qos/trust file as mlnx_qos reads it (one word and a newline,
    Mellanox/mlnx-tools python/mlnx_qos Trust.getTrust); absent in the fixture tree (newer
    vendor drivers and upstream have none), garbage noted, not guessed."""
    assert read_mlx5_trust(SYSFS / "mlx5-roce-qos", "enp33s0f0np0") is None
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-roce-qos", root, symlinks=True)
    (root / NETDEV / "qos").mkdir()
    (root / NETDEV / "qos/trust").write_text("dscp\n")
    assert read_mlx5_trust(root, "enp33s0f0np0") == "dscp"
    (root / NETDEV / "qos/trust").write_text("l2\n")
    problems: list[str] = []
    assert read_mlx5_trust(root, "enp33s0f0np0", problems) is None
    assert len(problems) == 1 and "qos/trust" in problems[0]


def test_collector_serves_the_vendor_trust_with_its_source(tmp_path):
    from nicwatch.collect import Collector, Selection
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-roce-qos", root, symlinks=True)
    (root / NETDEV / "qos").mkdir()
    (root / NETDEV / "qos/trust").write_text("pcp\n")
    collector = Collector(root, Selection())
    try:
        (sample,) = collector.poll().samples
    finally:
        collector.close()
    assert sample.reading.mlx5_trust == "pcp"
    assert [dict(k.labels) for k in sample.gauges if k.metric == "nic_qos_trust_info"] == [
        {"source": "mlx5_sysfs", "trust": "pcp"}]


def test_an_interface_without_the_tree_is_looked_at_again_as_a_new_ifindex_or_after_a_minute(
        tmp_path, monkeypatch):
    """The vendor driver makes ecn/ when it registers the netdev: an interface without one
    is not asked again every poll (2,000 failed lookups a poll on a host of veths), but a
    netdev registered again (new ifindex) or a minute later is."""
    from nicwatch.collect import Collector, Selection
    from nicwatch.sources import sysfs_roce
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    clock = [1000.0]
    monkeypatch.setattr(sysfs_roce.time, "monotonic", lambda: clock[0])
    collector = Collector(root, Selection(), pcie_refresh=5.0)

    def ecn():
        (reading,) = [s.reading for s in collector.poll().samples]
        return reading.roce_ecn
    assert ecn() is None
    shutil.copytree(SYSFS / "mlx5-roce-qos" / ECN, root / NETDEV / "ecn")
    clock[0] += 10  # past the 5 s refresh, within the minute: still taken as absent
    assert ecn() is None
    ifindex = root / NETDEV / "ifindex"
    ifindex.write_text(f"{int(ifindex.read_text()) + 1}\n")  # registered again
    assert ecn() is not None and ecn().cnp_dscp == 48
    shutil.rmtree(root / NETDEV / "ecn")
    clock[0] += 10  # a tree that was there is read on the 5 s refresh
    assert ecn() is None
    shutil.copytree(SYSFS / "mlx5-roce-qos" / ECN, root / NETDEV / "ecn")
    clock[0] += 60  # a minute on, an absent tree is looked for again
    assert ecn() is not None
