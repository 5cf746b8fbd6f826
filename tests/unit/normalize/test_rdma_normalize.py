"""normalize.rdma: PortCounters widths and saturation, the per-driver tables (a name means
what its driver counts), raw counters, the RoCE GID and MTU gauges; and the InfiniBand port
of prometheus/procfs' published fixture with the values procfs' own test asserts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest
from ttar import unpack

from nicwatch import metrics
from nicwatch.model import RdmaGid, RdmaPort, SeriesKey
from nicwatch.normalize import rdma
from nicwatch.normalize.rdma import gid_for_address
from nicwatch.sources.sysfs_infiniband import read_rdma_ports

from paths import FIXTURES

BASE = (("port", "1"), ("rdma_device", "mlx5_0"))
PROCFS_FIXTURE = FIXTURES / "published/rdma/mlx5_0-hw_counters-procfs-fixture.txt"


def port(**changes: object) -> RdmaPort:
    plain = RdmaPort("mlx5_0", 1, "Ethernet", "ACTIVE", "LinkUp", 50_000_000_000, "eth2",
                     None, None, MappingProxyType({}), MappingProxyType({}), (), driver="mlx5")
    return replace(plain, **changes)  # type: ignore[arg-type]


def key(metric: str, *extra: tuple[str, str]) -> SeriesKey:
    return SeriesKey(metric, (*extra, *BASE))


def test_counters_ext_wins_over_the_32_bit_file_and_never_saturates() -> None:
    """counters_ext/ (pre-4.5 kernels, MLNX_OFED): its 64-bit value replaces the counters/
    one it extends, even when the 32-bit file stands at its maximum; a file of it no table
    knows stays raw under its directory's name."""
    counters = rdma.rdma_counters(port(
        counters={"port_xmit_data": 4_294_967_295, "port_rcv_data": 7, "symbol_error": 3},
        counters_ext={"port_xmit_data_64": 4_294_967_295, "port_unicast_rcv_packets": 61148,
                      "port_future_counter": 9}))
    data = counters[key("nic_rdma_tx_bytes_total")]
    assert (data.raw, data.width, data.saturated, data.value) == (
        4_294_967_295, 64, False, 4 * 4_294_967_295)
    assert counters[key("nic_rdma_rx_bytes_total")].raw == 7  # no counters_ext file: counters/
    assert counters[key("nic_rdma_rx_unicast_packets_total")].raw == 61148
    assert counters[key(rdma.RAW_COUNTER, ("counter", "counters_ext/port_future_counter"))].raw \
        == 9
    assert not any(k.metric == "nic_rdma_portcounters_saturated"
                   for k in rdma.rdma_gauges(port(), counters))
    assert set(rdma.COUNTERS_EXT.values()) <= set(rdma.PMA_BY_NAME)


def test_every_table_maps_into_declared_rdma_families_once_per_driver() -> None:
    for table in rdma.DRIVERS.values():
        names = [c.name for c in table.counters]
        assert len(names) == len(set(names)), table.key
        for c in table.counters:
            assert c.metric is None or metrics.FAMILIES[c.metric].labels == metrics.RDMA
            assert c.evidence.startswith("drivers/infiniband/"), c
    for c in rdma.PMA:
        assert metrics.FAMILIES[c.metric].type == "counter"


def test_pma_counters_narrower_than_64_bits_saturate() -> None:
    counters = rdma.rdma_counters(port(counters={"link_downed": 255, "symbol_error": 12,
                                                 "port_xmit_data": 4_294_967_295}))
    downed = counters[key("nic_rdma_link_downed_total")]
    assert (downed.width, downed.saturates, downed.saturated) == (8, True, True)
    assert not counters[key("nic_rdma_symbol_errors_total")].saturated
    # no unicast/multicast files: the 32-bit table, so 2**32 - 1 is saturation
    data = counters[key("nic_rdma_tx_bytes_total")]
    assert (data.width, data.saturated, data.value) == (32, True, 4 * 4_294_967_295)
    gauges = rdma.rdma_gauges(port(), counters)
    assert gauges[key("nic_rdma_portcounters_saturated", ("counter", "link_downed"))] == 1
    assert gauges[key("nic_rdma_portcounters_saturated", ("counter", "port_xmit_data"))] == 1
    assert key("nic_rdma_portcounters_saturated", ("counter", "symbol_error")) not in gauges


def test_extended_pma_counters_are_64_bit_and_never_saturated() -> None:
    ext = {"port_xmit_data": 4_294_967_295, "unicast_xmit_packets": 7}
    data = rdma.rdma_counters(port(counters=ext))[key("nic_rdma_tx_bytes_total")]
    assert (data.width, data.saturates, data.saturated) == (64, False, False)
    big = rdma.rdma_counters(port(counters={"port_rcv_data": 1 << 33}))
    assert big[key("nic_rdma_rx_bytes_total")].width == 64  # no 32-bit counter holds that


def test_a_name_means_what_its_driver_counts() -> None:
    # bnxt_re's old spelling maps like its new one; irdma's CNP counters have other names;
    # a counter a driver's table does not know stays raw; mana's current_rate is a value
    bnxt = rdma.rdma_counters(port(driver="bnxt_re", hw_counters={"to_retransmits": 9,
                                                                  "res_exceeds_wqe": 2}))
    assert bnxt[key("nic_rdma_local_ack_timeout_errors_total")].raw == 9
    assert bnxt[key("nic_rdma_hw_stat_total", ("counter", "res_exceeds_wqe"))].raw == 2
    irdma = rdma.rdma_counters(port(driver="irdma", hw_counters={"cnpHandled": 4}))
    assert irdma[key("nic_rdma_cnp_handled_total")].raw == 4
    mana_port = port(driver="mana", hw_counters={"current_rate": 100_000, "rx_pkt": 3})
    mana = rdma.rdma_counters(mana_port)
    assert not [k for k in mana if "current_rate" in str(k)]
    assert rdma.rdma_gauges(mana_port, mana)[
        key("nic_rdma_hw_value", ("counter", "current_rate"))] == 100_000
    unknown = rdma.rdma_counters(port(driver=None, hw_counters={"rx_write_requests": 1}))
    assert list(unknown) == [key("nic_rdma_hw_stat_total", ("counter", "rx_write_requests"))]


def test_mlx5_q_counters_are_32_bit_and_wrap_the_congestion_counters_do_not() -> None:
    counters = rdma.rdma_counters(port(hw_counters={"out_of_buffer": 1, "np_cnp_sent": 2}))
    assert counters[key("nic_rdma_out_of_buffer_drops_total")].width == 32
    assert not counters[key("nic_rdma_out_of_buffer_drops_total")].saturates
    assert counters[key("nic_rdma_cnp_sent_total")].width == 64


def test_pma_families_win_over_a_drivers_own_counters() -> None:
    both = rdma.rdma_counters(port(driver="bnxt_re", counters={"port_rcv_data": 10},
                                   hw_counters={"rx_bytes": 99}))
    assert both[key("nic_rdma_rx_bytes_total")].raw == 10  # PortCounters first
    assert both[key("nic_rdma_hw_stat_total", ("counter", "rx_bytes"))].raw == 99


@pytest.mark.parametrize(("netdev_mtu", "active"), [
    (9000, 4096), (4200, 4096), (4191, 2048), (1500, 1024), (1100, 512), (300, None)])
def test_the_roce_active_mtu_follows_iboe_get_mtu(netdev_mtu: int, active: int | None) -> None:
    assert rdma.iboe_mtu(netdev_mtu) == active


def test_addresses_without_a_roce_v2_gid() -> None:
    v4 = gid_for_address("198.18.0.1")
    assert v4 == "0000:0000:0000:0000:0000:ffff:c612:0001"
    v6 = gid_for_address("2001:db8::5")
    gids = (RdmaGid(0, v4, "IB/RoCE v1", "eth2"), RdmaGid(1, v4, "RoCE v2", "eth2"),
            RdmaGid(2, v6, "IB/RoCE v1", "eth2"))  # v6 has only a v1 entry
    p = port(gids=gids, addresses=("198.18.0.1", "2001:db8::5"), netdev_mtu=9000)
    assert rdma.addresses_without_gid(p) == ("2001:db8::5",)
    gauges = rdma.rdma_gauges(p, {})
    assert gauges[key("nic_rdma_addresses_without_roce_v2_gid")] == 1
    assert gauges[key("nic_rdma_roce_v2_gids")] == 1
    assert gauges[key("nic_rdma_active_mtu_bytes")] == 4096
    assert rdma.addresses_without_gid(replace(p, addresses=None)) is None  # unknown, not 0


def test_procfs_published_infiniband_port_has_the_values_procfs_asserts(tmp_path: Path) -> None:
    """prometheus/procfs sysfs/class_infiniband_test.go (TestInfiniBandClass, commit
    3c943fdba94a) asserts these values for mlx5_0 port 1 of the same fixture: data in bytes
    (the files' 4-byte words x 4), the rate in bytes/s."""
    (ib_port,) = read_rdma_ports(unpack(PROCFS_FIXTURE.read_text(), tmp_path))
    sample = rdma.normalize_rdma(ib_port, 0.0, 0.0)
    values = {k.metric: cv.value for k, cv in sample.counters.items()}
    assert ib_port.netdev is None and ib_port.link_layer == "InfiniBand"
    expected = {
        "nic_rdma_rx_bytes_total": 72505381512,  # mlx5Port1PortRcvData
        "nic_rdma_tx_bytes_total": 11523046035392,  # mlx5Port1PortXmitData
        "nic_rdma_rx_packets_total": 541889824,
        "nic_rdma_tx_packets_total": 10907922116,
        "nic_rdma_rx_unicast_packets_total": 541889824,
        "nic_rdma_tx_unicast_packets_total": 10907922116,
        "nic_rdma_duplicate_requests_total": 41,
        "nic_rdma_local_ack_timeout_errors_total": 131,
        "nic_rdma_out_of_sequence_total": 1,
        "nic_rdma_packet_seq_errors_total": 1,
        "nic_rdma_req_cqe_errors_total": 3481,
        "nic_rdma_req_cqe_flush_errors_total": 80,
        "nic_rdma_resp_cqe_errors_total": 8109,
        "nic_rdma_resp_cqe_flush_errors_total": 4708,
        "nic_rdma_adaptive_retransmissions_total": 99,
        "nic_rdma_adaptive_retransmission_timeouts_total": 4,
        "nic_rdma_slow_restart_cnps_total": 131,
        "nic_rdma_rx_read_requests_total": 175528982,
        "nic_rdma_rx_write_requests_total": 742114,
        "nic_rdma_vl15_dropped_total": 0,
        "nic_rdma_tx_wait_ticks_total": 0,
    }
    assert {m: values[m] for m in expected} == expected
    assert sample.gauges[SeriesKey("nic_rdma_port_rate_bytes_per_second", BASE)] == 3125000000
    info = next(k for k in sample.gauges if k.metric == "nic_rdma_port_info")
    assert dict(info.labels)["state"] == "ACTIVE" and dict(info.labels)["link_layer"] == \
        "InfiniBand"
    assert not [k for k in sample.counters if k.metric == rdma.RAW_COUNTER]  # all mapped
