"""bnxt_en (Broadcom NetXtreme-C/E, P5/P7 "Thor"): bnxt_ethtool.c. Per-ring names are
`[N]: name`; port and extended port statistics are firmware counters DMA'd about once a
second and accumulated into 64 bits."""

from nicwatch.normalize.rules import DriverTable, QueueStat, Rule

TABLE = DriverTable(
    driver="bnxt_en",
    rules=(
        Rule(r"rx_pause_frames", "nic_rx_pause_frames_total"),
        Rule(r"tx_pause_frames", "nic_tx_pause_frames_total"),
        Rule(r"rx_pfc_ena_frames_pri(?P<priority>[0-7])", "nic_rx_pfc_frames_total"),
        Rule(r"tx_pfc_ena_frames_pri(?P<priority>[0-7])", "nic_tx_pfc_frames_total"),
        Rule(r"pfc_pri(?P<priority>[0-7])_rx_duration_us", "nic_rx_pause_duration_seconds_total",
             scale=1e-6),
        Rule(r"pfc_pri(?P<priority>[0-7])_tx_duration_us", "nic_tx_pause_duration_seconds_total",
             scale=1e-6),
        Rule(r"(?P<kind>continuous|resume)_pause_events", "nic_pause_storm_events_total"),
        Rule(r"continuous_roce_pause_events", "nic_pause_storm_events_total",
             (("kind", "roce_continuous"),)),
        Rule(r"resume_roce_pause_events", "nic_pause_storm_events_total",
             (("kind", "roce_resume"),)),
        # Sum over rings of the hardware ring discards (no receive buffer). Since 6.6 the
        # total survives ring reconfiguration; older drivers named it rx_total_discard_pkts.
        Rule(r"rx_total_ring_discards|rx_total_discard_pkts", "nic_rx_out_of_buffer_drops_total"),
        Rule(r"rx_stat_discard", "nic_rx_discards_total"),
        Rule(r"tx_stat_discard", "nic_tx_discards_total"),
        Rule(r"rx_buffer_passed_threshold", "nic_rx_buffer_almost_full_events_total"),
        Rule(r"rx_fcs_err_frames", "nic_rx_crc_errors_total"),
        Rule(r"rx_pcs_symbol_err", "nic_rx_pcs_symbol_errors_total"),
        Rule(r"rx_corrected_bits", "nic_fec_corrected_bit_errors_total"),
        Rule(r"rx_fec_corrected_blocks", "nic_fec_corrected_blocks_total", (("lane", "total"),)),
        Rule(r"rx_fec_uncorrectable_blocks", "nic_fec_uncorrectable_blocks_total",
             (("lane", "total"),)),
        Rule(r"rx_bytes", "nic_phy_rx_bytes_total"),
        Rule(r"tx_bytes", "nic_phy_tx_bytes_total"),
        Rule(r"link_down_events", "nic_link_down_events_total"),
    ),
    queues=(QueueStat(r"\[(?P<queue>\d+)\]: (?P<name>.+)", "[N]: {name}"),),
    notes="Pause durations (`pfc_priN_*_duration_us`) are microseconds in the driver. "
    "`continuous_*` / `resume_*` pause events are the firmware pause-storm watchdog; the "
    "`*_roce_*` variants count the RoCE class and are kind=\"roce_continuous\" / "
    "\"roce_resume\". `rx_bits` equals 8 x `rx_bytes` and stays raw. Per-CoS discards "
    "(`rx_discard_packets_cosN`, CoS not priority) and the aggregate `rx_pfc_frames` stay "
    "raw. FEC blocks exist only with firmware whose extended port statistics are large "
    "enough; ethtool netlink reports them too.",
)
