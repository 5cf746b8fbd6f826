"""bnxt_en (Broadcom NetXtreme-C/E, P5/P7 "Thor"): bnxt_ethtool.c. Per-ring names are
`[N]: name`; port and extended port statistics are firmware counters DMA'd about once a
second and accumulated into 64 bits."""

from nicwatch.normalize.rules import DriverTable, IrqName, NetlinkFill, QueueStat, Rule

_PORT = "bnxt_ethtool.c bnxt_port_stats_arr (struct rx/tx_port_stats, firmware)"
_EXT = "bnxt_ethtool.c bnxt_port_stats_ext_arr (struct rx/tx_port_stats_ext, firmware)"
_SW = "bnxt_ethtool.c bnxt_get_ethtool_stats ring totals"

TABLE = DriverTable(
    driver="bnxt_en",
    source="drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c",
    rules=(
        Rule(r"rx_pause_frames", "nic_rx_pause_frames_total",
             evidence=f"{_PORT}: rx_pause_frames; reported to the kernel as the standard "
             "pause statistic, confirmed equivalent by the maintainer (commit 9a27a33027f2 "
             "series, 5.10); PFC counted apart in rx_pfc_frames"),
        Rule(r"tx_pause_frames", "nic_tx_pause_frames_total",
             evidence=f"{_PORT}: tx_pause_frames, as rx"),
        Rule(r"rx_pfc_ena_frames_pri(?P<priority>[0-7])", "nic_rx_pfc_frames_total",
             evidence=f"{_PORT}: rx_pfc_ena_frames_pri0..7 (PFC frames with the priority "
             "enabled)"),
        Rule(r"tx_pfc_ena_frames_pri(?P<priority>[0-7])", "nic_tx_pfc_frames_total",
             evidence=f"{_PORT}: tx_pfc_ena_frames_pri0..7"),
        Rule(r"pfc_pri(?P<priority>[0-7])_rx_duration_us", "nic_rx_pause_duration_seconds_total",
             scale=1e-6, evidence=f"{_EXT}: pfc_pri%d_rx_duration_us, microseconds"),
        Rule(r"pfc_pri(?P<priority>[0-7])_tx_duration_us", "nic_tx_pause_duration_seconds_total",
             scale=1e-6, evidence=f"{_EXT}: pfc_pri%d_tx_duration_us, microseconds"),
        Rule(r"(?P<kind>continuous|resume)_pause_events", "nic_pause_storm_events_total",
             evidence=f"{_EXT}: continuous_pause_events, resume_pause_events"),
        Rule(r"continuous_roce_pause_events", "nic_pause_storm_events_total",
             (("kind", "roce_continuous"),), evidence=f"{_EXT}: continuous_roce_pause_events"),
        Rule(r"resume_roce_pause_events", "nic_pause_storm_events_total",
             (("kind", "roce_resume"),), evidence=f"{_EXT}: resume_roce_pause_events"),
        # Sum over rings of the hardware ring discards (no receive buffer). Since 6.6 the
        # total survives ring reconfiguration; older drivers named it rx_total_discard_pkts.
        Rule(r"rx_total_ring_discards|rx_total_discard_pkts", "nic_rx_out_of_buffer_drops_total",
             evidence=f"{_SW}: rx_total_ring_discards (6.6+, bnxt_sw_func_stats), "
             "rx_total_discard_pkts before"),
        Rule(r"rx_stat_discard", "nic_rx_discards_total", evidence=f"{_PORT}: rx_stat_discard"),
        Rule(r"tx_stat_discard", "nic_tx_discards_total", evidence=f"{_PORT}: tx_stat_discard"),
        Rule(r"rx_buffer_passed_threshold", "nic_rx_buffer_almost_full_events_total",
             evidence=f"{_EXT}: rx_buffer_passed_threshold"),
        Rule(r"rx_fcs_err_frames", "nic_rx_crc_errors_total",
             evidence=f"{_PORT}: rx_fcs_err_frames"),
        Rule(r"rx_pcs_symbol_err", "nic_rx_pcs_symbol_errors_total",
             evidence=f"{_EXT}: rx_pcs_symbol_err"),
        Rule(r"rx_corrected_bits", "nic_fec_corrected_bit_errors_total",
             evidence=f"{_EXT}: rx_corrected_bits"),
        Rule(r"rx_fec_corrected_blocks", "nic_fec_corrected_blocks_total", (("lane", "total"),),
             evidence=f"{_EXT}: rx_fec_corrected_blocks (firmware with large ext stats)"),
        Rule(r"rx_fec_uncorrectable_blocks", "nic_fec_uncorrectable_blocks_total",
             (("lane", "total"),), evidence=f"{_EXT}: rx_fec_uncorrectable_blocks"),
        Rule(r"rx_bytes", "nic_phy_rx_bytes_total", evidence=f"{_PORT}: rx_bytes, bytes"),
        Rule(r"rx_total_frames", "nic_phy_rx_packets_total",
             evidence=f"{_PORT}: rx_total_frames, every frame the port received"),
        Rule(r"tx_total_frames", "nic_phy_tx_packets_total",
             evidence=f"{_PORT}: tx_total_frames, every frame the port sent"),
        Rule(r"tx_bytes", "nic_phy_tx_bytes_total", evidence=f"{_PORT}: tx_bytes, bytes"),
        Rule(r"link_down_events", "nic_link_down_events_total",
             evidence=f"{_EXT}: link_down_events"),
    ),
    netlink=(
        NetlinkFill("pause.rx_frames", ("rx_pause_frames",), "nic_rx_pause_frames_total",
                    "bnxt_ethtool.c bnxt_get_pause_stats (5.10): rx_pause_frames"),
        NetlinkFill("pause.tx_frames", ("tx_pause_frames",), "nic_tx_pause_frames_total",
                    "bnxt_ethtool.c bnxt_get_pause_stats (5.10): tx_pause_frames"),
        # bnxt reports its PCS counter as the IEEE symbol error counter: it belongs with the
        # table's PCS family, so one hardware counter never feeds two families.
        NetlinkFill("eth-phy.SymbolErrorDuringCarrier", ("rx_pcs_symbol_err",),
                    "nic_rx_pcs_symbol_errors_total",
                    "bnxt_ethtool.c bnxt_get_eth_phy_stats (5.13): rx_pcs_symbol_err"),
        NetlinkFill("fec.corrected_bits", ("rx_corrected_bits",),
                    "nic_fec_corrected_bit_errors_total",
                    "bnxt_ethtool.c bnxt_get_fec_stats (5.13): rx_corrected_bits"),
        NetlinkFill("fec.corrected_blocks", ("rx_fec_corrected_blocks",),
                    "nic_fec_corrected_blocks_total",
                    "bnxt_ethtool.c bnxt_get_fec_stats (6.x): rx_fec_corrected_blocks",
                    (("lane", "total"),)),
        NetlinkFill("fec.uncorrectable_blocks", ("rx_fec_uncorrectable_blocks",),
                    "nic_fec_uncorrectable_blocks_total",
                    "bnxt_ethtool.c bnxt_get_fec_stats (6.x): rx_fec_uncorrectable_blocks",
                    (("lane", "total"),)),
    ),
    queues=(QueueStat(r"\[(?P<queue>\d+)\]: (?P<name>.+)", "[N]: {name}"),),
    notes="bnxt reports `rx_pcs_symbol_err` to the kernel as the IEEE "
    "SymbolErrorDuringCarrier; nicwatch keeps that value in the PCS family, where the "
    "table puts the same counter. Pause durations (`pfc_priN_*_duration_us`) are "
    "microseconds in the driver. "
    "`continuous_*` / `resume_*` pause events are the firmware pause-storm watchdog; the "
    "`*_roce_*` variants count the RoCE class and are kind=\"roce_continuous\" / "
    "\"roce_resume\". `rx_bits` equals 8 x `rx_bytes` and stays raw. Per-CoS discards "
    "(`rx_discard_packets_cosN`, CoS not priority) and the aggregate `rx_pfc_frames` stay "
    "raw. FEC blocks exist only with firmware whose extended port statistics are large "
    "enough; ethtool netlink reports them too.",
    irqs=(
        IrqName(r".+-TxRx-(?P<queue>\d+)", "rxtx",
                "bnxt.c bnxt_setup_msix(): \"%s-%s-%d\" (netdev name, \"TxRx\", ring)"),
        IrqName(r".+-rx-(?P<queue>\d+)", "rx", "bnxt_setup_msix()"),
        IrqName(r".+-tx-(?P<queue>\d+)", "tx", "bnxt_setup_msix()"),
    ),
    rx_queue_packets=(r"\[(?P<queue>\d+)\]: rx_ucast_packets",
                      r"\[(?P<queue>\d+)\]: rx_mcast_packets",
                      r"\[(?P<queue>\d+)\]: rx_bcast_packets"),
)
