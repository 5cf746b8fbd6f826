"""bnxt_re's counter table in both of its spellings (issue #38 item 12): the names of the
driver's own rdma_stat_desc table (tests/fixtures/rdma/bnxt_re-hw_counters-names.txt: the
6.x names, the mlx5 spellings of the 2025 rename, and Broadcom's out-of-tree ones) map to the
family of what each counts. Expected mappings written before the code."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from nicwatch.model import RdmaPort, SeriesKey
from nicwatch.normalize import rdma

from paths import FIXTURES

NAMES = FIXTURES / "rdma/bnxt_re-hw_counters-names.txt"
BASE = (("port", "1"), ("rdma_device", "bnxt_re0"))

# name -> family, for every bnxt_re counter with a family's meaning (hw_counters.c: the
# enum each name is the label of, and the firmware field bnxt_re copies into it)
EXPECTED = {
    # BNXT_RE_OOB (e_errs.oob / ext rx_out_of_buffer): no receive WQE posted
    "out_of_buffer": "nic_rdma_out_of_buffer_drops_total",
    "rx_out_of_buffer": "nic_rdma_out_of_buffer_drops_total",
    # BNXT_RE_OUT_OF_SEQ_ERR (res_oos_drop_count): the responder dropped out of sequence
    "out_of_sequence": "nic_rdma_out_of_sequence_total",
    "oos_drop_count": "nic_rdma_out_of_sequence_total",
    # BNXT_RE_TX_CNP (cnp_tx_pkts): CNPs sent
    "np_cnp_pkts": "nic_rdma_cnp_sent_total", "tx_cnp_pkts": "nic_rdma_cnp_sent_total",
    "np_cnp_sent": "nic_rdma_cnp_sent_total",
    # BNXT_RE_RX_CNP (cnp_rx_pkts): CNPs received
    "rp_cnp_handled": "nic_rdma_rx_cnp_packets_total",
    "rx_cnp_pkts": "nic_rdma_rx_cnp_packets_total",
    # BNXT_RE_RX_ECN (ecn_marked): RoCE packets received with ECN CE
    "np_ecn_marked_roce_packets": "nic_rdma_ecn_marked_packets_total",
    "rx_ecn_marked_pkts": "nic_rdma_ecn_marked_packets_total",
    "rp_cnp_ignored": "nic_rdma_cnp_ignored_total",
    "rnr_nak_retry_err": "nic_rdma_rnr_nak_retry_errors_total",
    "rnr_naks_rcvd": "nic_rdma_rnr_nak_retry_errors_total",
    "packet_seq_err": "nic_rdma_packet_seq_errors_total",
    "seq_err_naks_rcvd": "nic_rdma_packet_seq_errors_total",
    "local_ack_timeout_err": "nic_rdma_local_ack_timeout_errors_total",
    "to_retransmits": "nic_rdma_local_ack_timeout_errors_total",
    "implied_nak_seq_err": "nic_rdma_implied_nak_seq_errors_total",
    "missing_resp": "nic_rdma_implied_nak_seq_errors_total",
    "duplicate_request": "nic_rdma_duplicate_requests_total",
    "dup_req": "nic_rdma_duplicate_requests_total",
    "max_retry_exceeded": "nic_rdma_req_transport_retries_exceeded_total",
    "rx_read_requests": "nic_rdma_rx_read_requests_total",
    "rx_read_req": "nic_rdma_rx_read_requests_total",
    "rx_write_requests": "nic_rdma_rx_write_requests_total",
    "rx_write_req": "nic_rdma_rx_write_requests_total",
    "rx_atomic_requests": "nic_rdma_rx_atomic_requests_total",
    "rx_atomic_req": "nic_rdma_rx_atomic_requests_total",
    "req_cqe_error": "nic_rdma_req_cqe_errors_total",
    "resp_cqe_error": "nic_rdma_resp_cqe_errors_total",
    "resp_remote_access_errors": "nic_rdma_resp_remote_access_errors_total",
}


def names() -> list[str]:
    return [line.split()[0] for line in NAMES.read_text().splitlines()
            if line.strip() and not line.startswith(("#", "["))]


def port(counters: dict[str, int]) -> RdmaPort:
    return RdmaPort("bnxt_re0", 1, "Ethernet", "ACTIVE", "LinkUp", 50_000_000_000,
                    "ens1f0np0", None, None, MappingProxyType(counters), MappingProxyType({}),
                    (), driver="bnxt_re")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_bnxt_re_name_maps_to_its_meaning(name: str) -> None:
    assert name in names(), "a name bnxt_re really has"
    got = rdma.rdma_counters(port({name: 7}))
    assert got == {SeriesKey(EXPECTED[name], BASE): got[SeriesKey(EXPECTED[name], BASE)]}
    assert got[SeriesKey(EXPECTED[name], BASE)].raw == 7


def test_every_name_of_the_table_is_mapped_or_raw_never_lost() -> None:
    all_names = names()
    got = rdma.rdma_counters(port(dict.fromkeys(all_names, 1)))
    raw = {dict(k.labels)["counter"] for k in got if k.metric == rdma.RAW_COUNTER}
    mapped = {k.metric for k in got if k.metric != rdma.RAW_COUNTER}
    assert set(EXPECTED.values()) <= mapped
    # a family two spellings feed (both present here) takes one; the other stays raw
    assert {"to_retransmits", "local_ack_timeout_err"} & raw
    assert len(raw) + len(mapped) == len(dict.fromkeys(all_names))


def test_the_table_no_longer_says_bnxt_re_has_no_pma() -> None:
    """bnxt_re answers PMA MADs (bnxt_re_process_mad: PortCounters and
    PortCountersExtended from its own statistics), so counters/ is there and wins."""
    text = " ".join([rdma.BNXT_RE.note, *(c.meaning for c in rdma.BNXT_RE.counters),
                     rdma.__doc__ or ""])
    assert "no PMA on bnxt_re" not in text and "(bnxt_re, efa" not in text
