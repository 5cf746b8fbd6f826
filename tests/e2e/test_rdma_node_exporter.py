"""InfiniBand ports of a real published sysfs tree show with the values a peer exporter reports
for them: node_exporter's own fixture tree (collector/fixtures/sys.ttar, its class/infiniband
part: an i40iw iWARP device whose PortCounters all read "N/A (no PMA)", and a two-port
ConnectX-3 with counters/ and the separate 64-bit counters_ext/) read by nicwatch's RDMA
source and normalized, against node_exporter's published expected output for it
(collector/fixtures/e2e-output.txt). Both files are in tests/fixtures/published/rdma with
their provenance.

Units: node_exporter multiplies the data counters (4-byte words) by 4, as nicwatch does;
its ``legacy_*`` series are the counters_ext/ files. A counters_ext/ file wins in nicwatch
only over a 32-bit counters/ file; where counters/ is the 64-bit extended table already
(its unicast/multicast files are there, as on both mlx4_0 ports) counters/ is the family
and the counters_ext/ file stays raw under its directory's name. A counters_ext/ file with
no counters/ file beside it (port 2's packets) is the family."""

from __future__ import annotations

import pytest
from ttar import unpack

from nicwatch.model import CounterValue, SeriesKey
from nicwatch.normalize.rdma import COUNTERS_EXT, PMA_BY_NAME, normalize_rdma, pma_width
from nicwatch.sources.rdma import RdmaSource

from paths import FIXTURES
from promtext import parse_exposition

PUBLISHED = FIXTURES / "published/rdma"
TREE = PUBLISHED / "node_exporter-infiniband-sys.ttar"
EXPECTED = PUBLISHED / "node_exporter-infiniband-e2e-output.txt"
RAW = "nic_rdma_hw_stat_total"

# node_exporter's counter series -> (the sysfs file it reads, nicwatch's series for it).
COUNTERS: dict[str, tuple[str, str]] = {
    "node_infiniband_link_downed_total": ("counters/link_downed", "nic_rdma_link_downed_total"),
    "node_infiniband_link_error_recovery_total": (
        "counters/link_error_recovery", "nic_rdma_link_error_recoveries_total"),
    "node_infiniband_port_constraint_errors_received_total": (
        "counters/port_rcv_constraint_errors", "nic_rdma_rx_constraint_errors_total"),
    "node_infiniband_port_constraint_errors_transmitted_total": (
        "counters/port_xmit_constraint_errors", "nic_rdma_tx_constraint_errors_total"),
    "node_infiniband_port_data_received_bytes_total": (
        "counters/port_rcv_data", "nic_rdma_rx_bytes_total"),
    "node_infiniband_port_data_transmitted_bytes_total": (
        "counters/port_xmit_data", "nic_rdma_tx_bytes_total"),
    # Not a mainline PortCounters file: nicwatch keeps it raw, by its file name.
    "node_infiniband_port_discards_received_total": (
        "counters/port_rcv_discards", "counters/port_rcv_discards"),
    "node_infiniband_port_discards_transmitted_total": (
        "counters/port_xmit_discards", "nic_rdma_tx_discards_total"),
    "node_infiniband_port_errors_received_total": (
        "counters/port_rcv_errors", "nic_rdma_rx_errors_total"),
    "node_infiniband_port_packets_received_total": (
        "counters/port_rcv_packets", "nic_rdma_rx_packets_total"),
    "node_infiniband_port_packets_transmitted_total": (
        "counters/port_xmit_packets", "nic_rdma_tx_packets_total"),
    "node_infiniband_port_transmit_wait_total": (
        "counters/port_xmit_wait", "nic_rdma_tx_wait_ticks_total"),
    "node_infiniband_unicast_packets_received_total": (
        "counters/unicast_rcv_packets", "nic_rdma_rx_unicast_packets_total"),
    "node_infiniband_unicast_packets_transmitted_total": (
        "counters/unicast_xmit_packets", "nic_rdma_tx_unicast_packets_total"),
    "node_infiniband_multicast_packets_received_total": (
        "counters/multicast_rcv_packets", "nic_rdma_rx_multicast_packets_total"),
    "node_infiniband_multicast_packets_transmitted_total": (
        "counters/multicast_xmit_packets", "nic_rdma_tx_multicast_packets_total"),
    "node_infiniband_legacy_data_received_bytes_total": (
        "counters_ext/port_rcv_data_64", "nic_rdma_rx_bytes_total"),
    "node_infiniband_legacy_data_transmitted_bytes_total": (
        "counters_ext/port_xmit_data_64", "nic_rdma_tx_bytes_total"),
    "node_infiniband_legacy_packets_received_total": (
        "counters_ext/port_rcv_packets_64", "nic_rdma_rx_packets_total"),
    "node_infiniband_legacy_packets_transmitted_total": (
        "counters_ext/port_xmit_packets_64", "nic_rdma_tx_packets_total"),
    "node_infiniband_legacy_unicast_packets_received_total": (
        "counters_ext/port_unicast_rcv_packets", "nic_rdma_rx_unicast_packets_total"),
    "node_infiniband_legacy_unicast_packets_transmitted_total": (
        "counters_ext/port_unicast_xmit_packets", "nic_rdma_tx_unicast_packets_total"),
    "node_infiniband_legacy_multicast_packets_received_total": (
        "counters_ext/port_multicast_rcv_packets", "nic_rdma_rx_multicast_packets_total"),
    "node_infiniband_legacy_multicast_packets_transmitted_total": (
        "counters_ext/port_multicast_xmit_packets", "nic_rdma_tx_multicast_packets_total"),
}
EXTENDS = {f"counters/{name}": f"counters_ext/{ext}" for ext, name in COUNTERS_EXT.items()}


def node_exporter_series() -> dict[tuple[str, str, str], float]:
    """(name, device, port) -> value of every node_infiniband_* sample with a port."""
    out = {}
    for (name, label_pairs), value in parse_exposition(EXPECTED.read_text()).items():
        labels = dict(label_pairs)
        if "port" in labels:
            out[(name, labels["device"], labels["port"])] = value
    return out


@pytest.fixture(scope="module")
def nicwatch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = unpack(TREE.read_text(), tmp_path_factory.mktemp("ne") / "sys", strip="sys/")
    ports = RdmaSource(root).read_ports()
    return {port.key: (port, normalize_rdma(port, 0.0, 0.0)) for port in ports}


def nicwatch_counter(nicwatch: dict, device: str, port: str, series: str) -> CounterValue:
    _port, sample = nicwatch[f"{device}/{port}"]
    labels = (("port", port), ("rdma_device", device))
    if series.startswith(("counters/", "counters_ext/")):
        return sample.counters[SeriesKey(RAW, (("counter", series),) + labels)]
    return sample.counters[SeriesKey(series, labels)]


def wide(rdma_port: object, name: str) -> bool:
    """counters/<name> is there in 64 bits (normalize.rdma.pma_width)."""
    counters = rdma_port.counters  # type: ignore[attr-defined]
    return name in counters and pma_width(PMA_BY_NAME[name], counters, counters[name]) == 64


def nicwatch_series(rdma_port: object, path: str, series: str) -> str:
    """Where nicwatch has the value of node_exporter's ``path``: the family, or the raw
    series of a counters_ext/ file a 64-bit counters/ file supersedes."""
    ext = path.removeprefix("counters_ext/")
    if ext != path and wide(rdma_port, COUNTERS_EXT[ext]):
        return path
    return series


def test_every_port_is_read_without_a_problem_and_without_a_netdev(nicwatch: dict) -> None:
    assert sorted(nicwatch) == ["i40iw0/1", "mlx4_0/1", "mlx4_0/2"]
    for port, _sample in nicwatch.values():
        assert port.problems == () and port.netdev is None and port.link_layer == "InfiniBand"


def test_every_counter_node_exporter_reports_has_the_same_value_in_nicwatch(
        nicwatch: dict) -> None:
    expected = node_exporter_series()
    compared, raw_ext = 0, []
    for (name, device, port), value in expected.items():
        if name not in COUNTERS:
            continue
        path, series = COUNTERS[name]
        rdma_port, _sample = nicwatch[f"{device}/{port}"]
        where = nicwatch_series(rdma_port, path, series)
        if where != series:
            raw_ext.append((name, device, port))
        got = nicwatch_counter(nicwatch, device, port, where)
        # a raw series keeps the file's unit (data in 4-byte words, as the file counts)
        scale = PMA_BY_NAME[COUNTERS_EXT[path.removeprefix("counters_ext/")]].scale \
            if where != series else 1.0
        assert got.value * scale == value, (name, device, port, got)
        compared += 1
    assert compared == 40  # every counter sample of the e2e output (51 less 11 gauges)
    # The counters_ext/ files a 64-bit counters/ file supersedes (both ports have the
    # unicast/multicast files of the extended table): kept raw. mlx4_0 port 1's
    # port_rcv_packets is 6825908347 in counters/ against 0 in port_rcv_packets_64; port 2
    # has no counters/ packets files, so its packets_64 files are the family.
    assert sorted(raw_ext) == sorted([
        *((f"node_infiniband_legacy_{n}", "mlx4_0", p) for p in ("1", "2")
          for n in ("data_received_bytes_total", "data_transmitted_bytes_total",
                    "unicast_packets_received_total", "unicast_packets_transmitted_total",
                    "multicast_packets_received_total", "multicast_packets_transmitted_total")),
        *((f"node_infiniband_legacy_packets_{d}_total", "mlx4_0", "1")
          for d in ("received", "transmitted"))])


def test_nicwatch_has_no_counter_node_exporter_does_not_report(nicwatch: dict) -> None:
    """The other way round: every counter nicwatch exposes for these ports is one of
    node_exporter's series (nothing invented, nothing read from "N/A (no PMA)")."""
    expected = {(device, port, nicwatch_series(nicwatch[f"{device}/{port}"][0],
                                               *COUNTERS[name]))
                for name, device, port in node_exporter_series() if name in COUNTERS}
    for key, (_port, sample) in nicwatch.items():
        device, port = key.split("/")
        for series in sample.counters:
            labels = dict(series.labels)
            name = labels.get("counter") if series.metric == RAW else series.metric
            assert (device, port, name) in expected, (key, series)
    assert not nicwatch["i40iw0/1"][1].counters


def test_saturated_transmit_wait_is_flagged_and_states_and_rates_agree(nicwatch: dict) -> None:
    expected = node_exporter_series()
    wait = nicwatch_counter(nicwatch, "mlx4_0", "1", "nic_rdma_tx_wait_ticks_total")
    assert wait.raw == 2**32 - 1 and wait.saturated
    _port, sample = nicwatch["mlx4_0/1"]
    saturated = {dict(k.labels)["counter"] for k in sample.gauges
                 if k.metric == "nic_rdma_portcounters_saturated"}
    assert saturated == {"port_xmit_wait"}
    for key, (port, sample) in nicwatch.items():
        device, number = key.split("/")
        labels = (("port", number), ("rdma_device", device))
        assert sample.gauges[SeriesKey("nic_rdma_port_rate_bytes_per_second", labels)] == \
            expected[("node_infiniband_rate_bytes_per_second", device, number)]
        # node_exporter's state ids are the numbers of "4: ACTIVE" / "5: LinkUp".
        assert expected[("node_infiniband_state_id", device, number)] == 4
        assert port.state == "ACTIVE" and sample.gauges[
            SeriesKey("nic_rdma_port_active", labels)] == 1.0
        assert expected[("node_infiniband_physical_state_id", device, number)] == 5
        assert port.phys_state == "LinkUp"


def test_the_fixture_is_the_published_one() -> None:
    """Provenance header present, every record copied (node_exporter's sys.ttar at that
    commit has 75 Path records under sys/class/infiniband)."""
    text = TREE.read_text()
    assert "prometheus/node_exporter collector/fixtures/sys.ttar @ a7dcc3a0" in text
    assert text.count("\nPath: sys/class/infiniband/") == 75
    assert "Apache-2.0" in EXPECTED.read_text().splitlines()[0]
