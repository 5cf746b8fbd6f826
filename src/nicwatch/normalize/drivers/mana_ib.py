"""mana_ib (the RDMA side of mana: Microsoft Azure Network Adapter): the port's
``hw_counters``, mapped to the RDMA families."""

from nicwatch.normalize.rules import HwCounter, RdmaDriver

_MANA = "drivers/infiniband/hw/mana/counters.c mana_ib_port_stats_desc"
RDMA = RdmaDriver("mana", "mana (Microsoft Azure Network Adapter)", (
    HwCounter("requester_oos_nak", "nic_rdma_packet_seq_errors_total",
              "out-of-sequence NAKs the requester received", f"{_MANA} MANA_IB_REQUESTER_OOS_NAK"),
    HwCounter("requester_rnr_nak", "nic_rdma_rnr_nak_retry_errors_total",
              "RNR NAKs the requester received", f"{_MANA} MANA_IB_REQUESTER_RNR_NAK"),
    HwCounter("responder_oos", "nic_rdma_out_of_sequence_total",
              "out-of-sequence packets the responder received", f"{_MANA} MANA_IB_RESPONDER_OOS"),
    HwCounter("responder_dup_request", "nic_rdma_duplicate_requests_total",
              "duplicate requests the responder received",
              f"{_MANA} MANA_IB_RESPONDER_DUP_REQUEST"),
    HwCounter("requester_implicit_nak", "nic_rdma_implied_nak_seq_errors_total",
              "implicit NAKs the requester detected", f"{_MANA} MANA_IB_REQUESTER_IMPLICIT_NAK"),
    HwCounter("tx_bytes", "nic_rdma_tx_bytes_total", "bytes sent (no PMA on mana)",
              f"{_MANA} MANA_IB_TX_BYTES (6.12+)"),
    HwCounter("rx_bytes", "nic_rdma_rx_bytes_total", "bytes received", f"{_MANA} MANA_IB_RX_BYTES"),
    HwCounter("tx_pkt", "nic_rdma_tx_packets_total", "packets sent", f"{_MANA} MANA_IB_TX_PKT"),
    HwCounter("rx_pkt", "nic_rdma_rx_packets_total", "packets received", f"{_MANA} MANA_IB_RX_PKT"),
    HwCounter("rx_write_req", "nic_rdma_rx_write_requests_total", "RDMA WRITE requests received",
              f"{_MANA} MANA_IB_RX_WRITE_REQ"),
    HwCounter("rx_read_req", "nic_rdma_rx_read_requests_total", "RDMA READ requests received",
              f"{_MANA} MANA_IB_RX_READ_REQ"),
    HwCounter("current_rate", None, "the current rate of the congestion control (a value, "
              "not a counter)", f"{_MANA} MANA_IB_CURRENT_RATE (resp.current_rate)", value=True),
), note="`requester_timeout` (a timeout, not said to be a retransmission) and the NAK "
        "error counters stay raw.")
