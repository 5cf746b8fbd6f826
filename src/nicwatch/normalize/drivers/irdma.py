"""irdma (the RDMA side of ice and i40e: Intel E810/X722 iWARP and RoCE): the port's
``hw_counters``, mapped to the RDMA families."""

from nicwatch.normalize.rules import HwCounter, RdmaDriver

_IRDMA = "drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_descs"
RDMA = RdmaDriver("irdma", "irdma (Intel E810/X722 iWARP and RoCE)", (
    HwCounter("cnpHandled", "nic_rdma_cnp_handled_total", "CNPs handled (rate reduced)",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RXRPCNPHANDLED (gen2)"),
    HwCounter("cnpIgnored", "nic_rdma_cnp_ignored_total", "CNPs received and ignored",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RXRPCNPIGNORED"),
    HwCounter("cnpSent", "nic_rdma_cnp_sent_total", "CNPs sent",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_TXNPCNPSENT"),
    HwCounter("InRdmaReads", "nic_rdma_rx_read_requests_total", "RDMA READ requests received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXRDS (iwInRdmaReads before 6.x)"),
    HwCounter("iwInRdmaReads", "nic_rdma_rx_read_requests_total", "RDMA READs received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXRDS"),
    HwCounter("InRdmaWrites", "nic_rdma_rx_write_requests_total", "RDMA WRITEs received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXWRS"),
    HwCounter("iwInRdmaWrites", "nic_rdma_rx_write_requests_total", "RDMA WRITEs received",
              f"{_IRDMA} IRDMA_HW_STAT_INDEX_RDMARXWRS"),
), note="The ip4/ip6/tcp/udp protocol counters (`ip4InOctets`, `tcpRetransSegs`, ...) "
        "count the function's RDMA protocol engine and stay raw.")
