"""ixgbe (Intel 82598/82599/X5xx): ixgbe_ethtool.c. Several names are copies of the netdev
counters (`rx_missed_errors`, `rx_crc_errors`); hardware registers are accumulated into 64
bits by the driver."""

from nicwatch.normalize.rules import DriverTable, IrqName, QueueStat, Rule

_G = "ixgbe_ethtool.c ixgbe_gstrings_stats"
_PB = "ixgbe_ethtool.c ixgbe_get_strings: tx/rx_pb_%d_pxon/pxoff = stats.pxon/pxoff{tx,rx}c[i]"

TABLE = DriverTable(
    driver="ixgbe",
    source="drivers/net/ethernet/intel/ixgbe/ixgbe_ethtool.c",
    rules=(
        # XOFF (the pause) and XON (its release) apart: one pause episode is one of each.
        Rule(r"rx_flow_control_xoff", "nic_rx_pause_frames_total",
             evidence=f"{_G}: stats.lxoffrxc (LXOFFRXC), XOFF"),
        Rule(r"rx_flow_control_xon", "nic_rx_pause_xon_frames_total",
             evidence=f"{_G}: stats.lxonrxc (LXONRXC), XON"),
        Rule(r"tx_flow_control_xoff", "nic_tx_pause_frames_total",
             evidence=f"{_G}: stats.lxofftxc (LXOFFTXC), XOFF"),
        Rule(r"tx_flow_control_xon", "nic_tx_pause_xon_frames_total",
             evidence=f"{_G}: stats.lxontxc (LXONTXC), XON"),
        Rule(r"rx_pb_(?P<tc>[0-7])_pxoff", "nic_rx_pfc_tc_frames_total",
             evidence=f"{_PB} (PXOFFRXCNT per packet buffer), XOFF"),
        Rule(r"rx_pb_(?P<tc>[0-7])_pxon", "nic_rx_pfc_tc_xon_frames_total",
             evidence=f"{_PB} (PXONRXCNT per packet buffer), XON"),
        Rule(r"tx_pb_(?P<tc>[0-7])_pxoff", "nic_tx_pfc_tc_frames_total",
             evidence=f"{_PB} (PXOFFTXC per packet buffer), XOFF"),
        Rule(r"tx_pb_(?P<tc>[0-7])_pxon", "nic_tx_pfc_tc_xon_frames_total",
             evidence=f"{_PB} (PXONTXC per packet buffer), XON"),
        # GPRC/GPTC: the port's good frames (the netdev rx_packets counts the rings' instead).
        Rule(r"rx_pkts_nic", "nic_phy_rx_packets_total",
             evidence=f"{_G}: stats.gprc (GPRC), good frames received by the port"),
        Rule(r"tx_pkts_nic", "nic_phy_tx_packets_total",
             evidence=f"{_G}: stats.gptc (GPTC), good frames sent by the port"),
        # QPRDC summed over queues: dropped for lack of a host receive descriptor.
        Rule(r"rx_no_dma_resources", "nic_rx_out_of_buffer_drops_total",
             evidence=f"{_G}: hw_rx_no_dma_resources (QPRDC summed over queues)"),
        # MPC summed over packet buffers: missed because the receive FIFO was full.
        Rule(r"rx_missed_errors", "nic_rx_discards_total",
             evidence=f"{_G}: rx_missed_errors = netdev stats (MPC summed over packet "
             "buffers)"),
        Rule(r"rx_crc_errors", "nic_rx_crc_errors_total",
             evidence=f"{_G}: rx_crc_errors (CRCERRS)"),
        Rule(r"rx_bytes_nic", "nic_phy_rx_bytes_total",
             evidence=f"{_G}: stats.gorc (GORCL/H), bytes"),
        Rule(r"tx_bytes_nic", "nic_phy_tx_bytes_total",
             evidence=f"{_G}: stats.gotc (GOTCL/H), bytes"),
    ),
    queues=(
        QueueStat(r"(?P<dir>tx|rx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_queue_N_{name}"),
    ),
    notes="Priority flow control is counted per packet buffer (`rx_pb_N_pxon` / `_pxoff`), "
    "i.e. per traffic class rather than per priority, so it feeds the `tc` family; XOFF "
    "(the pause) and XON (its release) feed separate families, link-level and per TC. "
    "The transmitted pause time is IXGBE_DEFAULT_FCPAUSE (0xFFFF quanta, ixgbe_type.h) "
    "unless configured otherwise; there are no pause duration counters. "
    "`rx_no_buffer_count` (RNBC) counts times the ring was empty while the packet waited "
    "in the FIFO, not drops, and stays raw. "
    "ixgbe does not implement the kernel's standard pause statistics. Per-queue names are "
    "counted over the allocated queues, not only the active ones.",
    irqs=(
        IrqName(r".+-TxRx-(?P<queue>\d+)", "rxtx",
                "ixgbe_main.c ixgbe_request_msix_irqs(): \"%s-TxRx-%u\" (netdev name)"),
        IrqName(r".+-rx-(?P<queue>\d+)", "rx", "ixgbe_request_msix_irqs()"),
        IrqName(r".+-tx-(?P<queue>\d+)", "tx", "ixgbe_request_msix_irqs()"),
    ),
    rx_queue_packets=(r"rx_queue_(?P<queue>\d+)_packets",),
)
