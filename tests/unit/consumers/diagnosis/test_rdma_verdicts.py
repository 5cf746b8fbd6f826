"""RDMA verdicts from one end of a queue pair (issue #38 items 10 and 12).

A host sees one side of each of its queue pairs: as a requester it counts the RNR NAKs and
sequence NAKs it receives and the QPs that exhausted their retries; as a responder it counts
the packets it dropped for want of a receive WQE and those that arrived out of sequence. The
peer's counters are on another host, so every one-sided case is its own verdict. The expected
verdict of each case is written here before the code that makes it hold.

mlx5 readings start from the real ConnectX port of prometheus/procfs' published fixture
(tests/fixtures/published/rdma/mlx5_0-hw_counters-procfs-fixture.txt) and add the 30 s of
the case; bnxt_re readings use the counter names of bnxt_re's own table, old and new
(tests/fixtures/rdma/bnxt_re-hw_counters-names.txt)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest
from ttar import unpack

from nicwatch.consumers.diagnosis.engine import Window, evaluate
from nicwatch.consumers.diagnosis.windows import COUNTERS
from nicwatch.model import RdmaPort, SeriesKey
from nicwatch.normalize.rdma import normalize_rdma
from nicwatch.sources.sysfs_infiniband import read_rdma_ports

from paths import FIXTURES

S = 30.0
PROCFS = FIXTURES / "published/rdma/mlx5_0-hw_counters-procfs-fixture.txt"
BNXT_NAMES = FIXTURES / "rdma/bnxt_re-hw_counters-names.txt"
LINE = 50e9  # a 400G port in bytes/s


def bnxt_names(section: str) -> list[str]:
    out, current = [], None
    for line in BNXT_NAMES.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("["):
            current = line.strip("[]")
            continue
        if current == section:
            out.append(line.split()[0])
    return out


@pytest.fixture(scope="module")
def mlx5(tmp_path_factory: pytest.TempPathFactory) -> RdmaPort:
    (p,) = read_rdma_ports(unpack(PROCFS.read_text(), tmp_path_factory.mktemp("procfs")))
    return replace(p, driver="mlx5")


def thor(names: str = "new") -> RdmaPort:
    """A Thor2 RoCE port (bnxt_re) with every hw counter of its table at 1,000."""
    counters = dict.fromkeys(bnxt_names(names), 1000)
    return RdmaPort("bnxt_re0", 1, "Ethernet", "ACTIVE", "LinkUp", int(LINE), "ens1f0np0", None,
                    None, MappingProxyType(counters), MappingProxyType({}), (),
                    driver="bnxt_re")


def with_cc(port: RdmaPort) -> RdmaPort:
    """The port as a 6.9+ PF shows it: the congestion counters (cong_cnts) and the extended
    error counters (extended_err_cnts) beside the fixture's q counters, at 0."""
    return replace(port, hw_counters=MappingProxyType({
        **port.hw_counters, "np_ecn_marked_roce_packets": 0, "np_cnp_sent": 0,
        "rp_cnp_handled": 0, "rp_cnp_ignored": 0, "req_transport_retries_exceeded": 0,
        "req_rnr_retries_exceeded": 0}))


def busy_mlx5(cc: bool = False) -> dict[str, float]:
    """30 s of healthy, busy RoCE on mlx5: 0.7 of line rate of 4 KiB reads, no error;
    with ``cc`` a few CNPs and ECN marks (per second)."""
    rates = {"rx_read_requests": 0.7 * LINE / 4096, "rx_write_requests": 2000.0}
    if cc:
        rates.update(np_ecn_marked_roce_packets=40.0, np_cnp_sent=10.0, rp_cnp_handled=8.0)
    return rates


def busy_thor(new: bool = True) -> dict[str, float]:
    if new:
        return {"rx_read_requests": 0.7 * LINE / 4096, "tx_bytes": 0.7 * LINE,
                "rx_bytes": 0.7 * LINE, "rx_pkts": 0.7 * LINE / 4096,
                "tx_pkts": 0.7 * LINE / 4096, "np_ecn_marked_roce_packets": 40.0,
                "np_cnp_pkts": 10.0, "rp_cnp_handled": 8.0}
    return {"rx_read_req": 0.7 * LINE / 4096, "tx_bytes": 0.7 * LINE, "rx_bytes": 0.7 * LINE,
            "rx_pkts": 0.7 * LINE / 4096, "tx_pkts": 0.7 * LINE / 4096,
            "rx_ecn_marked_pkts": 40.0, "tx_cnp_pkts": 10.0, "rx_cnp_pkts": 8.0}


def window(port: RdmaPort, rates: dict[str, float], device: str = "enp1s0np0") -> Window:
    """The window of two readings of ``port`` S seconds apart, its hw counters rising at
    ``rates`` (per second), normalized by the driver's table as the daemon does."""
    later = dict(port.hw_counters)
    for name, rate in rates.items():
        assert name in later, name  # only counters the port really has
        later[name] += int(rate * S)
    a = normalize_rdma(port, 0.0, 0.0)
    b = normalize_rdma(replace(port, hw_counters=MappingProxyType(later)), S, S)
    deltas = {k: float(cv.value - a.counters[k].value) for k, cv in b.counters.items()
              if k.metric in COUNTERS and k in a.counters}
    gauges = {SeriesKey("nic_link_speed_bytes_per_second"): LINE}
    return Window(device, S, deltas, {k: v / S for k, v in deltas.items()}, gauges)


def held(w: Window) -> set[str]:
    return {v.label for v in evaluate([w])}


RDMA = ("rdma_transport_loss", "rdma_receiver_not_ready", "rdma_rnr_naks_received",
        "rdma_qp_retries_exceeded")


# --------------------------------------------------------------------------- healthy busy

def test_a_healthy_busy_mlx5_port_is_silent_and_known(mlx5: RdmaPort) -> None:
    w = window(with_cc(mlx5), busy_mlx5(cc=True))
    assert held(w) == set()
    verdicts = {v.signature: v for v in evaluate([w], all_verdicts=True)}
    for name in RDMA:  # evaluated on the port's series, not silent for want of them
        assert any(r.held is False for r in verdicts[name].conditions
                   if r.condition.required), name


@pytest.mark.parametrize("new", [True, False])
def test_a_healthy_busy_thor_port_is_silent_and_known(new: bool) -> None:
    w = window(thor("new" if new else "old"), busy_thor(new))
    assert held(w) == set()
    verdicts = {v.signature: v for v in evaluate([w], all_verdicts=True)}
    for name in RDMA:
        assert any(r.held is False for r in verdicts[name].conditions
                   if r.condition.required), name


# --------------------------------------------------------------------------- one-sided cases

def test_a_requester_with_rnr_naks_alone(mlx5: RdmaPort) -> None:
    """5,000 RNR NAKs received in 30 s, nothing on the responder side of this host: the
    remote receiver was not ready."""
    w = window(mlx5, {**busy_mlx5(), "rnr_nak_retry_err": 5000 / S})
    assert held(w) == {"rdma_rnr_naks_received"}


def test_a_responder_out_of_buffer_alone(mlx5: RdmaPort) -> None:
    """5,000 packets dropped for want of a receive WQE (so 5,000 RNR NAKs sent), no RNR NAK
    received: this host's receiver is not ready."""
    w = window(mlx5, {**busy_mlx5(), "out_of_buffer": 5000 / S})
    assert held(w) == {"rdma_receiver_not_ready"}


@pytest.mark.parametrize("counter", ["packet_seq_err", "out_of_sequence"])
def test_sequence_errors_alone_are_loss(mlx5: RdmaPort, counter: str) -> None:
    """2,000 sequence NAKs received (requester) or 2,000 out-of-sequence packets
    (responder), without a timeout or duplicate on this host: loss on the path."""
    w = window(mlx5, {**busy_mlx5(), counter: 2000 / S})
    assert held(w) == {"rdma_transport_loss"}


def test_ack_timeouts_with_qps_failed(mlx5: RdmaPort) -> None:
    """ACK timeouts that ran out of retries: queue pairs went to the error state (mlx5 6.9+
    req_transport_retries_exceeded, bnxt_re max_retry_exceeded)."""
    w = window(with_cc(mlx5), {**busy_mlx5(), "local_ack_timeout_err": 300 / S,
                               "req_transport_retries_exceeded": 12 / S})
    assert held(w) == {"rdma_qp_retries_exceeded"}
    w = window(thor(), {**busy_thor(), "local_ack_timeout_err": 300 / S,
                        "max_retry_exceeded": 12 / S})
    assert held(w) == {"rdma_qp_retries_exceeded"}


def test_rnr_retries_exceeded_alone(mlx5: RdmaPort) -> None:
    """QPs that ran out of RNR retries (mlx5 6.9+ req_rnr_retries_exceeded): the remote
    receiver was not ready long enough to fail them."""
    w = window(with_cc(mlx5), {**busy_mlx5(), "req_rnr_retries_exceeded": 3 / S})
    assert held(w) == {"rdma_rnr_naks_received"}


def test_ack_timeouts_alone_hold_nothing(mlx5: RdmaPort) -> None:
    """A timeout alone is the tail of a transfer lost or a peer gone: not loss by itself."""
    w = window(mlx5, {**busy_mlx5(), "local_ack_timeout_err": 5 / S})
    assert held(w) == set()


# --------------------------------------------------------------------------- bnxt_re names

@pytest.mark.parametrize("new", [True, False])
def test_thor_out_of_buffer_is_receiver_not_ready(new: bool) -> None:
    name = "out_of_buffer" if new else "rx_out_of_buffer"
    w = window(thor("new" if new else "old"), {**busy_thor(new), name: 5000 / S})
    assert held(w) == {"rdma_receiver_not_ready"}


@pytest.mark.parametrize("new", [True, False])
def test_thor_out_of_sequence_is_loss(new: bool) -> None:
    name = "out_of_sequence" if new else "oos_drop_count"
    w = window(thor("new" if new else "old"), {**busy_thor(new), name: 2000 / S})
    assert held(w) == {"rdma_transport_loss"}


@pytest.mark.parametrize("new", [True, False])
def test_thor_ecn_and_cnps_are_known(new: bool) -> None:
    """ECN marks and CNPs of a Thor port feed ecn_cnp_rate (never unknown there)."""
    from nicwatch.consumers.diagnosis.quantities import ecn_cnp_rate
    w = window(thor("new" if new else "old"), busy_thor(new))
    m = ecn_cnp_rate(w, "3")
    assert m.value is not None and m.value == pytest.approx(50.0)
    assert {e.series.partition("{")[0] for e in m.evidence} == {
        "nic_rdma_ecn_marked_packets_total", "nic_rdma_cnp_sent_total"}
