"""mlx5_ib (the RDMA side of mlx5_core: ConnectX, BlueField): the port's
``hw_counters`` (drivers/infiniband/hw/mlx5/counters.c), mapped to the RDMA families."""

from nicwatch.normalize.rules import HwCounter, RdmaDriver

_MLX5 = "drivers/infiniband/hw/mlx5/counters.c"
_MLX5_Q = f"{_MLX5} basic/retrans/extended_err/roce_accl q_cnts (QUERY_Q_COUNTER, be32)"
_MLX5_CC = f"{_MLX5} cong_cnts (QUERY_CONG_STATISTICS, 64-bit)"
_MLX5_OP = f"{_MLX5} *_op_cnts, IB_STAT_FLAG_OPTIONAL (5.16+): netlink only, when enabled"
_MLX5_DOC = "; meaning: NVIDIA 'Understanding mlx5 Linux counters'"


def _mlx5(name: str, metric: str | None, meaning: str, width: int = 32,
          evidence: str = _MLX5_Q) -> HwCounter:
    return HwCounter(name, metric, meaning, evidence + _MLX5_DOC, width,
                     optional=evidence == _MLX5_OP)


RDMA = RdmaDriver("mlx5", "mlx5 (ConnectX, BlueField)", (
    _mlx5("rx_write_requests", "nic_rdma_rx_write_requests_total",
          "RDMA WRITE requests received by the port's QPs"),
    _mlx5("rx_read_requests", "nic_rdma_rx_read_requests_total",
          "RDMA READ requests received"),
    _mlx5("rx_atomic_requests", "nic_rdma_rx_atomic_requests_total",
          "ATOMIC requests received"),
    _mlx5("rx_dct_connect", "nic_rdma_rx_dct_connects_total",
          "connection requests received for the port's DCTs"),
    _mlx5("out_of_buffer", "nic_rdma_out_of_buffer_drops_total",
          "packets dropped for lack of a receive WQE (the consumer did not post receive "
          "buffers in time)"),
    _mlx5("out_of_sequence", "nic_rdma_out_of_sequence_total",
          "packets received out of sequence (a loss upstream in a lossless fabric)"),
    _mlx5("duplicate_request", "nic_rdma_duplicate_requests_total",
          "requests received that had been executed before (the requester retransmitted)"),
    _mlx5("rnr_nak_retry_err", "nic_rdma_rnr_nak_retry_errors_total",
          "RNR NAKs received (the responder had no receive WQE); the QP's retry limit was "
          "not exceeded"),
    _mlx5("packet_seq_err", "nic_rdma_packet_seq_errors_total",
          "NAK sequence error packets received; the retry limit was not exceeded"),
    _mlx5("implied_nak_seq_err", "nic_rdma_implied_nak_seq_errors_total",
          "times the requester saw an ACK with a PSN beyond the expected one for a READ or "
          "ATOMIC response (an implied NAK)"),
    _mlx5("local_ack_timeout_err", "nic_rdma_local_ack_timeout_errors_total",
          "times a QP's ack timer expired at the sender (RC, XRC, DCT) and it retransmitted; "
          "the retry limit was not exceeded"),
    _mlx5("resp_local_length_error", "nic_rdma_resp_local_length_errors_total",
          "local length errors the responder detected"),
    _mlx5("resp_cqe_error", "nic_rdma_resp_cqe_errors_total",
          "responder completions with an error"),
    _mlx5("req_cqe_error", "nic_rdma_req_cqe_errors_total",
          "requester completions with an error"),
    _mlx5("req_remote_invalid_request", "nic_rdma_req_remote_invalid_requests_total",
          "remote invalid request errors the requester detected"),
    _mlx5("req_remote_access_errors", "nic_rdma_req_remote_access_errors_total",
          "remote access errors the requester detected"),
    _mlx5("resp_remote_access_errors", "nic_rdma_resp_remote_access_errors_total",
          "remote access errors the responder detected"),
    _mlx5("resp_cqe_flush_error", "nic_rdma_resp_cqe_flush_errors_total",
          "responder completions flushed with error (QP moved to the error state)"),
    _mlx5("req_cqe_flush_error", "nic_rdma_req_cqe_flush_errors_total",
          "requester completions flushed with error"),
    _mlx5("req_transport_retries_exceeded", "nic_rdma_req_transport_retries_exceeded_total",
          "times the requester exceeded its transport retries (the QP failed)",
          evidence=f"{_MLX5} extended_err_cnts (6.9+)"),
    _mlx5("req_rnr_retries_exceeded", "nic_rdma_req_rnr_retries_exceeded_total",
          "times the requester exceeded its RNR NAK retries (the QP failed)",
          evidence=f"{_MLX5} extended_err_cnts (6.9+)"),
    _mlx5("roce_adp_retrans", "nic_rdma_adaptive_retransmissions_total",
          "adaptive retransmissions of RoCE traffic"),
    _mlx5("roce_adp_retrans_to", "nic_rdma_adaptive_retransmission_timeouts_total",
          "times RoCE traffic reached a timeout under adaptive retransmission"),
    _mlx5("roce_slow_restart", "nic_rdma_slow_restarts_total",
          "times RoCE slow restart was used"),
    _mlx5("roce_slow_restart_cnps", "nic_rdma_slow_restart_cnps_total",
          "CNPs RoCE slow restart generated"),
    _mlx5("roce_slow_restart_trans", "nic_rdma_slow_restart_transitions_total",
          "times RoCE slow restart changed state to slow restart"),
    _mlx5("rp_cnp_ignored", "nic_rdma_cnp_ignored_total",
          "CNPs received and ignored by the reaction point (congestion control off for "
          "the priority)", 64, _MLX5_CC),
    _mlx5("rp_cnp_handled", "nic_rdma_cnp_handled_total",
          "CNPs handled by the reaction point to throttle the sending rate", 64, _MLX5_CC),
    _mlx5("np_ecn_marked_roce_packets", "nic_rdma_ecn_marked_packets_total",
          "RoCEv2 packets the notification point received with ECN CE (11)", 64, _MLX5_CC),
    _mlx5("np_cnp_sent", "nic_rdma_cnp_sent_total",
          "CNPs the notification point sent for ECN-marked packets", 64, _MLX5_CC),
    _mlx5("rx_icrc_encapsulated", "nic_rdma_icrc_errors_total",
          "RoCE packets received with an ICRC error", 64,
          f"{_MLX5} ext_ppcnt_cnts (PPCNT Ethernet extended group)"),
    _mlx5("cc_rx_ce_pkts", "nic_rdma_rx_ce_packets_total",
          "RoCE packets received with ECN CE, counted by a steering flow counter (optional "
          "counter)", 64, _MLX5_OP),
    _mlx5("cc_rx_cnp_pkts", "nic_rdma_rx_cnp_packets_total",
          "CNPs received, flow counter (optional)", 64, _MLX5_OP),
    _mlx5("cc_tx_cnp_pkts", "nic_rdma_tx_cnp_packets_total",
          "CNPs sent, flow counter (optional)", 64, _MLX5_OP),
    _mlx5("rdma_tx_packets", "nic_rdma_flow_tx_packets_total",
          "RDMA packets sent, link-wide flow counter of the RDMA TX steering (optional)", 64,
          _MLX5_OP),
    _mlx5("rdma_tx_bytes", "nic_rdma_flow_tx_bytes_total",
          "RDMA bytes sent, link-wide flow counter (optional)", 64, _MLX5_OP),
    _mlx5("rdma_rx_packets", "nic_rdma_flow_rx_packets_total",
          "RDMA packets received, link-wide flow counter (optional)", 64, _MLX5_OP),
    _mlx5("rdma_rx_bytes", "nic_rdma_flow_rx_bytes_total",
          "RDMA bytes received, link-wide flow counter (optional)", 64, _MLX5_OP),
))
