"""RDMA ports no polled interface carries are diagnosed on their own (issue #38 item 11): an
InfiniBand HCA port (no netdev at all) and a RoCE port over a bond the daemon does not poll.
The expected verdicts are written here before the code that makes them hold.

The InfiniBand port is the real ConnectX port of prometheus/procfs' published fixture
(tests/fixtures/published/rdma/mlx5_0-hw_counters-procfs-fixture.txt), read by nicwatch's
sysfs reader and normalized; the second poll adds the case's counts to its hw_counters."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest
from ttar import unpack

from nicwatch.collect import PollResult
from nicwatch.consumers.diagnosis.consumer import Diagnosis
from nicwatch.model import RdmaPort, RdmaSample
from nicwatch.normalize.rdma import normalize_rdma
from nicwatch.sources.sysfs_infiniband import read_rdma_ports

from paths import FIXTURES

PROCFS = FIXTURES / "published/rdma/mlx5_0-hw_counters-procfs-fixture.txt"
WALL0 = 1764500000.0


@pytest.fixture(scope="module")
def ib_port(tmp_path_factory: pytest.TempPathFactory) -> RdmaPort:
    (p,) = read_rdma_ports(unpack(PROCFS.read_text(), tmp_path_factory.mktemp("procfs")))
    assert p.netdev is None and p.link_layer == "InfiniBand"
    return replace(p, driver="mlx5")


def polls(port: RdmaPort, steps: list[dict[str, int]], seconds: float = 5.0
          ) -> Diagnosis:
    """The consumer fed one poll per step (no netdev polled at all), each step adding its
    counts to the port's hw_counters."""
    diagnosis = Diagnosis()
    counters = dict(port.hw_counters)
    for i, step in enumerate([{}, *steps]):
        for name, n in step.items():
            counters[name] += n
        now = i * seconds
        sample: RdmaSample = normalize_rdma(
            replace(port, hw_counters=MappingProxyType(dict(counters))), WALL0 + now, now)
        diagnosis.update(PollResult((), (), rdma=(sample,)), (), WALL0 + now)
    return diagnosis


def held(d: Diagnosis) -> set[tuple[str, str]]:
    return {(v.device, v.label) for v in d.verdicts}


def test_an_infiniband_port_without_a_netdev_is_diagnosed(ib_port: RdmaPort) -> None:
    """2,000 out-of-sequence packets over three polls on the HCA port: transport loss, on
    the port named as `rdma link` names it."""
    d = polls(ib_port, [{"out_of_sequence": 700}, {"out_of_sequence": 700},
                        {"out_of_sequence": 600}])
    assert held(d) == {("mlx5_0/1", "rdma_transport_loss")}
    (v,) = d.verdicts
    assert any(e.series.startswith("nic_rdma_out_of_sequence_total") and e.delta == 2000
               for e in v.evidence)


def test_a_quiet_infiniband_port_holds_nothing(ib_port: RdmaPort) -> None:
    d = polls(ib_port, [{"rx_read_requests": 10_000}, {"rx_read_requests": 10_000}])
    assert held(d) == set()


def test_a_roce_port_over_an_unpolled_bond_is_diagnosed(ib_port: RdmaPort) -> None:
    """RoCE over a bond (mlx5_bond_0, netdev bond0) when bond0 is not among the polled
    interfaces: the port's own verdict, under its netdev's name."""
    bond = replace(ib_port, device="mlx5_bond_0", netdev="bond0", link_layer="Ethernet")
    d = polls(bond, [{"out_of_buffer": 2500}, {"out_of_buffer": 2500}])
    assert held(d) == {("bond0", "rdma_receiver_not_ready")}
