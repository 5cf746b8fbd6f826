"""ena (Amazon Elastic Network Adapter): ena_ethtool.c. A virtual NIC: no PAUSE, PFC, FEC
or CRC; what it has is the instance allowance shaping counters."""

from nicwatch.normalize.rules import DriverTable, IrqName, QueueStat, Rule

TABLE = DriverTable(
    driver="ena",
    source="drivers/net/ethernet/amazon/ena/ena_ethtool.c",
    rules=(
        Rule(r"(?P<limit>bw_in|bw_out|pps|conntrack|linklocal)_allowance_exceeded",
             "nic_cloud_allowance_exceeded_packets_total",
             evidence="ena_ethtool.c ena_stats_eni_strings (ENA_STAT_ENI_ENTRY, driver "
             "2.2.10+), packets"),
    ),
    gauges=(
        r"conntrack_allowance_available",
        r"ena_srd_mode",
        r"ena_srd_resource_utilization",
    ),
    queues=(
        QueueStat(r"queue_(?P<queue>\d+)_(?P<dir>tx|rx|xdp_tx)_(?P<name>.+)",
                  "queue_N_{dir}_{name}"),
    ),
    notes="The allowance counters count packets queued or dropped because the instance "
    "exceeded a limit (label limit: bw_in, bw_out, pps, conntrack, linklocal); drivers "
    "before 2.2.10 do not have them. `conntrack_allowance_available` (driver 2.8.1+) is the "
    "number of connections that can still be tracked, `ena_srd_mode` a feature bitmap and "
    "`ena_srd_resource_utilization` a percentage: all three are gauges. Device-level drops "
    "reach the kernel netdev counters.",
    irqs=(
        IrqName(r".+-Tx-Rx-(?P<queue>\d+)", "rxtx",
                "ena_netdev.c ena_setup_io_intr(): \"%s-Tx-Rx-%d\" (netdev name)"),
        IrqName(r"ena-mgmnt@pci:.+", "other", "ena_setup_mgmnt_intr()"),
    ),
    rx_queue_packets=(r"queue_(?P<queue>\d+)_rx_cnt",),
)
