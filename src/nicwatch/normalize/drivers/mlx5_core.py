"""mlx5_core (ConnectX-4 to -8, BlueField): en_stats.c and mlx5/counters.rst.

Port counters carry a `_phy` suffix (PPCNT groups); per-priority PAUSE/PFC names exist only
for priorities with PFC (or global pause) enabled, so the set changes at runtime.
"""

from nicwatch.normalize.rules import DriverTable, QueueStat, Rule

TABLE = DriverTable(
    driver="mlx5_core",
    rules=(
        # 802.3 group: a_pause_mac_ctrl_frames_{received,transmitted}, as netlink pause stats.
        Rule(r"rx_pause_ctrl_phy", "nic_rx_pause_frames_total"),
        Rule(r"tx_pause_ctrl_phy", "nic_tx_pause_frames_total"),
        Rule(r"rx_prio(?P<priority>[0-7])_pause", "nic_rx_pfc_frames_total"),
        Rule(r"tx_prio(?P<priority>[0-7])_pause", "nic_tx_pfc_frames_total"),
        Rule(r"rx_prio(?P<priority>[0-7])_pause_duration", "nic_rx_pause_duration_seconds_total",
             scale=1e-6),
        Rule(r"tx_prio(?P<priority>[0-7])_pause_duration", "nic_tx_pause_duration_seconds_total",
             scale=1e-6),
        # (rx|tx)_global_pause repeats rx/tx_pause_ctrl_phy and stays raw; only its duration
        # has no other source.
        Rule(r"rx_global_pause_duration", "nic_rx_pause_duration_seconds_total",
             (("priority", "global"),), scale=1e-6),
        Rule(r"tx_global_pause_duration", "nic_tx_pause_duration_seconds_total",
             (("priority", "global"),), scale=1e-6),
        Rule(r"tx_pause_storm_(?P<kind>warning|error)_events", "nic_pause_storm_events_total"),
        # Q counter: the RQ had no WQE posted by the host.
        Rule(r"rx_out_of_buffer", "nic_rx_out_of_buffer_drops_total", width=32),
        # RFC 2863 if_in_discards / if_out_discards: port buffer exhausted.
        Rule(r"rx_discards_phy", "nic_rx_discards_total"),
        Rule(r"tx_discards_phy", "nic_tx_discards_total"),
        Rule(r"rx_buffer_passed_thres_phy", "nic_rx_buffer_almost_full_events_total"),
        Rule(r"rx_crc_errors_phy", "nic_rx_crc_errors_total"),
        Rule(r"rx_symbol_err_phy", "nic_rx_symbol_errors_total"),
        Rule(r"rx_pcs_symbol_err_phy", "nic_rx_pcs_symbol_errors_total"),
        Rule(r"rx_corrected_bits_phy", "nic_fec_corrected_bit_errors_total"),
        Rule(r"rx_bytes_phy", "nic_phy_rx_bytes_total"),
        Rule(r"tx_bytes_phy", "nic_phy_tx_bytes_total"),
        Rule(r"link_down_events_phy", "nic_link_down_events_total", width=32),
    ),
    gauges=(r"outbound_pci_stalled_(?:rd|wr)",),
    width32=(
        r"rx_out_of_buffer",
        r"rx_if_down_packets",
        r"dev_internal_queue_oob",
        r"link_down_events_phy",
        r"(?:rx|tx)_pci_signal_integrity",
        r"outbound_pci_stalled_(?:rd|wr)_events",
    ),
    queues=(
        # rq, sq (index = channel + tc * channels), rq_xdpsq `rxN_xdp_tx_*`, xdpsq `txN_xdp_*`,
        # XSK `rxN_xsk_*` / `txN_xsk_*`.
        QueueStat(r"(?P<dir>rx|tx)(?P<queue>\d+)_(?P<name>.+)", "{dir}N_{name}"),
        QueueStat(r"ch(?P<queue>\d+)_(?P<name>.+)", "chN_{name}"),
        QueueStat(r"ptp_(?P<kind>tx|cq|rq)(?P<queue>\d+)_(?P<name>.+)", "ptp_{kind}N_{name}"),
        QueueStat(r"qos_tx(?P<queue>\d+)_(?P<name>.+)", "qos_txN_{name}"),
    ),
    notes="Pause durations are microseconds in the driver and seconds here; "
    "`rx_out_of_buffer` and `link_down_events_phy` are 32-bit and wrap. Per-priority PFC "
    "names appear only for priorities with PFC enabled, `*_global_pause*` only with 802.3x "
    "pause on, `tx_pause_storm_*` only with the stall-detect capability. The software totals "
    "without an index (`rx_buff_alloc_err`, `tx_queue_dropped`, ...) already sum the channels. "
    "A VF or SF has no `*_phy` names. FEC blocks come only from ethtool netlink; "
    "`rx_err_lane_N_phy` (pre-FEC errors per lane), `rx_prioN_*discard*` and the PCIe "
    "counters have no canonical family yet and stay raw.",
)
