"""counters/ against counters_ext/, and the HCA's identity (issue #38 item 13), on the real
published tree of node_exporter (tests/fixtures/published/rdma/node_exporter-infiniband-sys.ttar:
an i40iw0 without PMA and a two-port ConnectX-3 mlx4_0 with counters/ and counters_ext/),
read by nicwatch's RDMA source. Expected values written before the code.

mlx4_0 port 1's counters/ is the 64-bit PortCountersExtended table already: it has the
unicast/multicast files (only the extended table has them) and port_rcv_packets reads
6,825,908,347, above 2^32. Its counters_ext/port_rcv_packets_64 reads 0: the 64-bit counters/
value is the one to keep, as node_exporter's own port_packets_received series does."""

from __future__ import annotations

import pytest
from ttar import unpack

from nicwatch.model import SeriesKey
from nicwatch.normalize.rdma import normalize_rdma
from nicwatch.sources.rdma import RdmaSource

from paths import FIXTURES
from promtext import parse_exposition

TREE = FIXTURES / "published/rdma/node_exporter-infiniband-sys.ttar"
EXPECTED = FIXTURES / "published/rdma/node_exporter-infiniband-e2e-output.txt"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = unpack(TREE.read_text(), tmp_path_factory.mktemp("ne") / "sys", strip="sys/")
    return {p.key: normalize_rdma(p, 0.0, 0.0) for p in RdmaSource(root).read_ports()}


def labels(device: str, port: str) -> tuple[tuple[str, str], ...]:
    return (("port", port), ("rdma_device", device))


def test_a_64_bit_counters_file_wins_over_counters_ext(samples: dict) -> None:
    port1 = samples["mlx4_0/1"].counters
    rx = port1[SeriesKey("nic_rdma_rx_packets_total", labels("mlx4_0", "1"))]
    assert (rx.raw, rx.width, rx.saturates) == (6825908347, 64, False)
    tx = port1[SeriesKey("nic_rdma_tx_packets_total", labels("mlx4_0", "1"))]
    assert tx.raw == 6235865  # counters/port_xmit_packets, not port_xmit_packets_64 (0)
    # the counters_ext/ file it supersedes stays reachable raw, under its directory's name
    raw = SeriesKey("nic_rdma_hw_stat_total",
                    (("counter", "counters_ext/port_rcv_packets_64"), *labels("mlx4_0", "1")))
    assert port1[raw].raw == 0


def test_counters_ext_still_wins_over_a_32_bit_counters_file() -> None:
    """A pre-4.5 kernel's counters/ (no unicast files, values below 2^32) is the 32-bit
    table: there counters_ext/ is the 64-bit value."""
    from dataclasses import replace
    from types import MappingProxyType

    from nicwatch.model import RdmaPort
    from nicwatch.normalize.rdma import rdma_counters
    plain = RdmaPort("mlx4_0", 1, "InfiniBand", "ACTIVE", "LinkUp", None, None, None, None,
                     MappingProxyType({}), MappingProxyType({"port_rcv_data": 4_294_967_295}),
                     (), driver="mlx4")
    port = replace(plain, counters_ext=MappingProxyType({"port_rcv_data_64": 5_000_000_000}))
    data = rdma_counters(port)[SeriesKey("nic_rdma_rx_bytes_total", labels("mlx4_0", "1"))]
    assert (data.raw, data.width) == (5_000_000_000, 64)


def test_the_hca_identity_is_exported_as_node_exporter_does(samples: dict) -> None:
    """nic_rdma_info{board_id,firmware_version,hca_type} per port carries the values
    node_exporter's node_infiniband_info has for the device."""
    expected = {}
    for (name, pairs), _value in parse_exposition(EXPECTED.read_text()).items():
        if name == "node_infiniband_info":
            d = dict(pairs)
            expected[d["device"]] = (d["board_id"], d["firmware_version"], d["hca_type"])
    assert set(expected) == {"i40iw0", "mlx4_0"}
    for key, sample in samples.items():
        device = key.split("/")[0]
        (info,) = [k for k in sample.gauges if k.metric == "nic_rdma_info"]
        got = dict(info.labels)
        assert (got["board_id"], got["firmware_version"], got["hca_type"]) == expected[device]
        assert got["rdma_device"] == device and sample.gauges[info] == 1.0
