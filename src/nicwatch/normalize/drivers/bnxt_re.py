"""bnxt_re (the RDMA side of bnxt_en: Broadcom NetXtreme-E/Thor RoCE): the port's
``hw_counters`` in both spellings, mapped to the RDMA families."""

from nicwatch.normalize.rules import HwCounter, RdmaDriver

_BNXT = ("drivers/infiniband/hw/bnxt_re/hw_counters.c bnxt_re_stat_descs (renamed to the "
         "mlx5 spelling by 'RDMA/bnxt_re: RoCE related hardware counters update', rdma-next "
         "2025-08, 'for compatibility with open-source monitoring agents'; both spellings "
         "are here)")
_BNXT_OOT = ("drivers/infiniband/hw/bnxt_re/hw_counters.c of Broadcom's out-of-tree bnxt_re "
             "(2025, HAVE_RDMA_STAT_DESC)")


def _bnxt(names: tuple[str, ...], metric: str | None, meaning: str, enum: str,
          evidence: str = _BNXT) -> list[HwCounter]:
    return [HwCounter(n, metric, meaning, f"{evidence}: {enum}") for n in names]


RDMA = RdmaDriver("bnxt_re", "bnxt_re (Broadcom NetXtreme-E/Thor RoCE)", tuple(
    _bnxt(("local_ack_timeout_err", "to_retransmits"), "nic_rdma_local_ack_timeout_errors_total",
          "retransmissions after an ack timeout", "BNXT_RE_TO_RETRANSMITS")
    + _bnxt(("packet_seq_err", "seq_err_naks_rcvd"), "nic_rdma_packet_seq_errors_total",
            "sequence error NAKs received (the requester's packets were lost)",
            "BNXT_RE_SEQ_ERR_NAKS_RCVD")
    + _bnxt(("rnr_nak_retry_err", "rnr_naks_rcvd"), "nic_rdma_rnr_nak_retry_errors_total",
            "RNR NAKs received (the responder had no receive WQE posted)",
            "BNXT_RE_RNR_NAKS_RCVD")
    + _bnxt(("implied_nak_seq_err", "missing_resp"), "nic_rdma_implied_nak_seq_errors_total",
            "missing responses the requester detected (implied NAKs)", "BNXT_RE_MISSING_RESP")
    + _bnxt(("duplicate_request", "dup_req"), "nic_rdma_duplicate_requests_total",
            "duplicate requests received", "BNXT_RE_DUP_REQ")
    + _bnxt(("req_remote_invalid_request", "remote_invalid_req_err"),
            "nic_rdma_req_remote_invalid_requests_total", "remote invalid request errors",
            "BNXT_RE_REMOTE_INVALID_REQ_ERR")
    + _bnxt(("req_remote_access_errors", "remote_access_err"),
            "nic_rdma_req_remote_access_errors_total", "remote access errors",
            "BNXT_RE_REMOTE_ACCESS_ERR")
    + _bnxt(("resp_local_length_error", "res_length_mismatch"),
            "nic_rdma_resp_local_length_errors_total", "responder length mismatches",
            "BNXT_RE_RES_LENGTH_MISMATCH")
    + _bnxt(("out_of_buffer", "rx_out_of_buffer"), "nic_rdma_out_of_buffer_drops_total",
            "packets the responder dropped for lack of a posted receive WQE (it sent an RNR "
            "NAK for each); gen P5/P7 chips (Thor, Thor2)", "BNXT_RE_OOB (ext stats oob)")
    + _bnxt(("out_of_sequence", "oos_drop_count"), "nic_rdma_out_of_sequence_total",
            "packets the responder dropped as out of sequence (a packet before them was "
            "lost)", "BNXT_RE_OUT_OF_SEQ_ERR (res_oos_drop_count)")
    + _bnxt(("np_cnp_pkts", "tx_cnp_pkts"), "nic_rdma_cnp_sent_total",
            "CNPs sent by the notification point for ECN-marked packets received",
            "BNXT_RE_TX_CNP (cnp_tx_pkts)")
    + _bnxt(("np_cnp_sent",), "nic_rdma_cnp_sent_total", "CNPs sent (np_cnp_pkts in mainline)",
            "BNXT_RE_TX_CNP (cnp_tx_pkts)", _BNXT_OOT)
    + _bnxt(("rp_cnp_handled", "rx_cnp_pkts"), "nic_rdma_rx_cnp_packets_total",
            "CNPs received by the reaction point (all of them: the hardware field counts "
            "received CNPs, not only those that lowered the rate)",
            "BNXT_RE_RX_CNP (cnp_rx_pkts)")
    + _bnxt(("rp_cnp_ignored",), "nic_rdma_cnp_ignored_total",
            "CNPs received and ignored by the reaction point", "BNXT_RE_RX_CNP_IGNORED",
            _BNXT_OOT)
    + _bnxt(("np_ecn_marked_roce_packets", "rx_ecn_marked_pkts"),
            "nic_rdma_ecn_marked_packets_total",
            "RoCE packets the notification point received with ECN CE",
            "BNXT_RE_RX_ECN (ecn_marked)")
    + _bnxt(("rx_read_requests", "rx_read_req"), "nic_rdma_rx_read_requests_total",
            "RDMA READ requests received", "BNXT_RE_RX_READ_REQ")
    + _bnxt(("rx_write_requests", "rx_write_req"), "nic_rdma_rx_write_requests_total",
            "RDMA WRITE requests received", "BNXT_RE_RX_WRITE_REQ")
    + _bnxt(("rx_atomic_requests", "rx_atomic_req"), "nic_rdma_rx_atomic_requests_total",
            "ATOMIC requests received", "BNXT_RE_RX_ATOMIC_REQ")
    + _bnxt(("req_cqe_error",), "nic_rdma_req_cqe_errors_total",
            "requester completions with an error (bad response, local QP operation, "
            "protection, memory management, remote invalid request, access and operation "
            "errors summed)", "BNXT_RE_REQ_CQE_ERROR")
    + _bnxt(("resp_cqe_error",), "nic_rdma_resp_cqe_errors_total",
            "responder completions with an error (completion and CQ load errors summed)",
            "BNXT_RE_RESP_CQE_ERROR")
    + _bnxt(("resp_remote_access_errors",), "nic_rdma_resp_remote_access_errors_total",
            "remote access errors the responder detected (rx and tx no-permission summed)",
            "BNXT_RE_RESP_REMOTE_ACCESS_ERRS")
    + _bnxt(("rx_bytes",), "nic_rdma_rx_bytes_total",
            "RoCE bytes received (CNPs included); the PortCounters win where the port has "
            "them", "BNXT_RE_RX_BYTES")
    + _bnxt(("tx_bytes",), "nic_rdma_tx_bytes_total", "RoCE bytes sent", "BNXT_RE_TX_BYTES")
    + _bnxt(("rx_pkts",), "nic_rdma_rx_packets_total", "RoCE packets received",
            "BNXT_RE_RX_PKTS")
    + _bnxt(("tx_pkts",), "nic_rdma_tx_packets_total", "RoCE packets sent", "BNXT_RE_TX_PKTS")
    + _bnxt(("max_retry_exceeded",), "nic_rdma_req_transport_retries_exceeded_total",
            "times a QP exceeded its retry count (the QP failed)",
            "BNXT_RE_MAX_RETRY_EXCEEDED")),
    note="Both spellings of each counter are mapped: the 6.x names (`rnr_naks_rcvd`, "
         "`oos_drop_count`, `rx_out_of_buffer`, `tx_cnp_pkts`, `rx_cnp_pkts`, "
         "`rx_ecn_marked_pkts`, ...) and the mlx5 names they were renamed to "
         "(`rnr_nak_retry_err`, `out_of_sequence`, `out_of_buffer`, `np_cnp_pkts`, "
         "`rp_cnp_handled`, `np_ecn_marked_roce_packets`, ...). bnxt_re's "
         "`rnr_nak_retry_err` counts every RNR NAK received, as mlx5's does; its "
         "`rp_cnp_handled` counts every CNP received (`nic_rdma_rx_cnp_packets_total`). "
         "bnxt_re answers PMA MADs (`bnxt_re_process_mad`: PortCounters and "
         "PortCountersExtended from its own statistics), so its `counters/` win over its "
         "`rx_bytes`/`tx_bytes`/`rx_pkts`/`tx_pkts` where the kernel has them.")
