"""rdma_rxe (soft-RoCE over any netdev): the port's ``hw_counters``, mapped to the
RDMA families."""

from nicwatch.normalize.rules import HwCounter, RdmaDriver

_RXE = "drivers/infiniband/sw/rxe/rxe_hw_counters.c rxe_counter_descs"
RDMA = RdmaDriver("rxe", "rxe (soft-RoCE)", (
    HwCounter("sent_pkts", "nic_rdma_tx_packets_total", "RoCE packets sent (no PMA on rxe)",
              f"{_RXE} RXE_CNT_SENT_PKTS"),
    HwCounter("rcvd_pkts", "nic_rdma_rx_packets_total", "RoCE packets received",
              f"{_RXE} RXE_CNT_RCVD_PKTS"),
    HwCounter("duplicate_request", "nic_rdma_duplicate_requests_total",
              "duplicate requests received", f"{_RXE} RXE_CNT_DUP_REQ"),
    HwCounter("out_of_seq_request", "nic_rdma_out_of_sequence_total",
              "requests received out of sequence", f"{_RXE} RXE_CNT_OUT_OF_SEQ_REQ"),
    HwCounter("rcvd_rnr_err", "nic_rdma_rnr_nak_retry_errors_total", "RNR NAKs received",
              f"{_RXE} RXE_CNT_RCV_RNR"),
    HwCounter("rcvd_seq_err", "nic_rdma_packet_seq_errors_total",
              "sequence error NAKs received", f"{_RXE} RXE_CNT_RCV_SEQ_ERR"),
    HwCounter("retry_exceeded_err", "nic_rdma_req_transport_retries_exceeded_total",
              "times the requester exceeded its retries", f"{_RXE} RXE_CNT_RETRY_EXCEEDED"),
    HwCounter("retry_rnr_exceeded_err", "nic_rdma_req_rnr_retries_exceeded_total",
              "times the requester exceeded its RNR retries",
              f"{_RXE} RXE_CNT_RNR_RETRY_EXCEEDED"),
    HwCounter("link_downed", "nic_rdma_link_downed_total",
              "times the port went down with its netdev (no PMA on rxe)",
              f"{_RXE} RXE_CNT_LINK_DOWNED"),
))
