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
        Rule(r"rx_flow_control_xo(?:n|ff)", "nic_rx_pause_frames_total",
             evidence=f"{_G}: stats.lxonrxc + stats.lxoffrxc (LXONRXC, LXOFFRXC)"),
        Rule(r"tx_flow_control_xo(?:n|ff)", "nic_tx_pause_frames_total",
             evidence=f"{_G}: stats.lxontxc + stats.lxofftxc (LXONTXC, LXOFFTXC)"),
        Rule(r"rx_pb_(?P<tc>[0-7])_pxo(?:n|ff)", "nic_rx_pfc_tc_frames_total",
             evidence=f"{_PB} (PXONRXCNT, PXOFFRXCNT per packet buffer), XON + XOFF"),
        Rule(r"tx_pb_(?P<tc>[0-7])_pxo(?:n|ff)", "nic_tx_pfc_tc_frames_total",
             evidence=f"{_PB} (PXONTXC, PXOFFTXC per packet buffer), XON + XOFF"),
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
    "i.e. per traffic class rather than per priority, so it feeds the `tc` family, XON plus "
    "XOFF like the link-level PAUSE family. `rx_no_buffer_count` (RNBC) counts times the "
    "ring was empty while the packet waited in the FIFO, not drops, and stays raw. "
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
