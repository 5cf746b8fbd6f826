"""be2net (Emulex OneConnect BE2/BE3/Skyhawk/Lancer): be_ethtool.c. Every statistic without
a queue prefix is copied into ethtool as a u32, so it wraps at 2**32; per-queue names are
`rxqN: name` and `txqN: name`."""

from nicwatch.normalize.rules import DriverTable, QueueStat, Rule

_ET = "be_ethtool.c et_stats (DRVSTAT_INFO, struct be_drv_stats u32)"

TABLE = DriverTable(
    driver="be2net",
    source="drivers/net/ethernet/emulex/benet/be_ethtool.c",
    rules=(
        Rule(r"rx_pause_frames", "nic_rx_pause_frames_total", width=32,
             evidence=f"{_ET}: rx_pause_frames (PFC counted apart: rx_priority_pause_frames)"),
        Rule(r"tx_pauseframes", "nic_tx_pause_frames_total", width=32,
             evidence=f"{_ET}: tx_pauseframes"),
        # PFC in total, not per priority: priority="all".
        Rule(r"rx_priority_pause_frames", "nic_rx_pfc_frames_total", (("priority", "all"),),
             width=32, evidence=f"{_ET}: rx_priority_pause_frames (every priority)"),
        Rule(r"tx_priority_pauseframes", "nic_tx_pfc_frames_total", (("priority", "all"),),
             width=32, evidence=f"{_ET}: tx_priority_pauseframes (every priority)"),
        # No port frame counter: the queues' packets (u64 per queue in be_rx_stats) stand in.
        Rule(r"rxq(?P<queue>\d+): rx_pkts", "nic_phy_rx_packets_total",
             evidence="be_ethtool.c et_rx_stats: rx_pkts (per RX queue, u64), summed: the "
             "frames the host's queues received, the port's own count being absent"),
        Rule(r"txq(?P<queue>\d+): tx_pkts", "nic_phy_tx_packets_total",
             evidence="be_ethtool.c et_tx_stats: tx_pkts (per TX queue, u64), summed"),
        Rule(r"rx_crc_errors", "nic_rx_crc_errors_total", width=32,
             evidence=f"{_ET}: rx_crc_errors"),
        # No hardware packet buffer left to hold the frame (per adapter on BE3).
        Rule(r"rx_drops_no_pbuf", "nic_rx_discards_total", width=32,
             evidence=f"{_ET}: rx_drops_no_pbuf"),
        # No receive buffer posted by the driver on that queue.
        Rule(r"rxq(?P<queue>\d+): rx_drops_no_frags", "nic_rx_out_of_buffer_drops_total",
             evidence="be_ethtool.c et_rx_stats: rx_drops_no_frags (per RX queue, u32)"),
    ),
    width32=(
        r"rx_crc_errors|rx_alignment_symbol_errors|rx_pause_frames|rx_control_frames",
        r"rx_in_range_errors|rx_out_range_errors|rx_frame_too_long|rx_address_filtered",
        r"rx_dropped_(?:too_small|too_short|header_too_small|tcp_length|runt)",
        r"rxpp_fifo_overflow_drop|rx_input_fifo_overflow_drop|pmem_fifo_overflow_drop",
        r"rx_(?:ip|tcp|udp)_checksum_errs|tx_pauseframes|tx_controlframes",
        r"rx_priority_pause_frames|tx_priority_pauseframes|jabber_events",
        r"rx_drops_(?:no_pbuf|no_erx_descr|no_tpre_descr|too_many_frags|mtu)",
        r"forwarded_packets|dma_map_errors|eth_red_drops",
        r"rx_roce_bytes_lsd|rx_roce_bytes_msd|rx_roce_frames|roce_drops_payload_len|roce_drops_crc",
        # Per queue, everything after rx_bytes and rx_pkts is read as a u32.
        r"rxq\d+: rx_(?:vxlan_offload_pkts|compl|compl_err|mcast_pkts|post_fail|drops_no_skbs)",
        r"rxq\d+: rx_drops_no_frags",
    ),
    queues=(QueueStat(r"(?P<dir>rx|tx)q(?P<queue>\d+): (?P<name>.+)", "{dir}qN: {name}"),),
    notes="All adapter statistics are 32-bit. `rx_drops_no_frags` exists only per receive "
    "queue, as a 32-bit driver counter, and is summed over the queues: a queue wrapping "
    "after 2**32 drops shows as a counter reset. On BE3 `rx_drops_no_pbuf` is shared by the "
    "ports of one adapter. PFC is counted only in total (`rx_priority_pause_frames`, "
    "`tx_priority_pauseframes`), not per priority: it feeds the PFC families with "
    "priority=\"all\". PAUSE and PFC frames count XOFF and XON together (no XON counter "
    "of its own) and there are no pause durations. There is no port frame counter: the "
    "receive and transmit queues' packets (`rxqN: rx_pkts`, `txqN: tx_pkts`) feed "
    "nic_phy_rx/tx_packets_total, so frames the port dropped before a queue are not in "
    "them. The combined `rx_alignment_symbol_errors` stays raw.",
    rx_queue_packets=(r"rxq(?P<queue>\d+): rx_pkts",),
)
