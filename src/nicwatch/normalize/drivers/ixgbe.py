"""ixgbe (Intel 82598/82599/X5xx): ixgbe_ethtool.c. Several names are copies of the netdev
counters (`rx_missed_errors`, `rx_crc_errors`); hardware registers are accumulated into 64
bits by the driver."""

from nicwatch.normalize.rules import DriverTable, QueueStat, Rule

TABLE = DriverTable(
    driver="ixgbe",
    rules=(
        Rule(r"rx_flow_control_xoff", "nic_rx_pause_frames_total"),
        Rule(r"tx_flow_control_xoff", "nic_tx_pause_frames_total"),
        # QPRDC summed over queues: dropped for lack of a host receive descriptor.
        Rule(r"rx_no_dma_resources", "nic_rx_out_of_buffer_drops_total"),
        # MPC summed over packet buffers: missed because the receive FIFO was full.
        Rule(r"rx_missed_errors", "nic_rx_discards_total"),
        Rule(r"rx_crc_errors", "nic_rx_crc_errors_total"),
        Rule(r"rx_bytes_nic", "nic_phy_rx_bytes_total"),
        Rule(r"tx_bytes_nic", "nic_phy_tx_bytes_total"),
    ),
    queues=(
        QueueStat(r"(?P<dir>tx|rx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_queue_N_{name}"),
    ),
    notes="Priority flow control is counted per packet buffer (`rx_pb_N_pxoff`, "
    "`tx_pb_N_pxoff`), i.e. per traffic class rather than per priority, so it stays raw. "
    "`rx_no_buffer_count` (RNBC) counts times the ring was empty while the packet waited "
    "in the FIFO, not drops, and stays raw. Per-queue names are counted over the allocated "
    "queues, not only the active ones.",
)
