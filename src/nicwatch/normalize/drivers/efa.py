"""efa (AWS Elastic Fabric Adapter, beside ena): the port's ``hw_counters``, mapped to
the RDMA families."""

from nicwatch.normalize.rules import HwCounter, RdmaDriver

_EFA = "drivers/infiniband/hw/efa/efa_verbs.c EFA_DEFINE_PORT_STATS"
RDMA = RdmaDriver("efa", "efa (AWS Elastic Fabric Adapter)", (
    HwCounter("tx_bytes", "nic_rdma_tx_bytes_total", "bytes sent (no PMA on efa)",
              f"{_EFA} EFA_TX_BYTES"),
    HwCounter("rx_bytes", "nic_rdma_rx_bytes_total", "bytes received", f"{_EFA} EFA_RX_BYTES"),
    HwCounter("tx_pkts", "nic_rdma_tx_packets_total", "packets sent", f"{_EFA} EFA_TX_PKTS"),
    HwCounter("rx_pkts", "nic_rdma_rx_packets_total", "packets received",
              f"{_EFA} EFA_RX_PKTS"),
), note="`rx_drops`, the work-request counters (`send_wrs`, `rdma_read_wrs`, ...) and their "
        "byte counts have no family and stay raw.")
