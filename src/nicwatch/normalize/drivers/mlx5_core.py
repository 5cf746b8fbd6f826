"""mlx5_core (ConnectX-4 to -8, BlueField): en_stats.c and mlx5/counters.rst.

Port counters carry a `_phy` suffix (PPCNT groups); per-priority PAUSE/PFC names exist only
for priorities with PFC (or global pause) enabled, so the set changes at runtime.
"""

from nicwatch.normalize.rules import (
    DriverTable,
    IrqName,
    NetlinkFill,
    QueueStat,
    Rule,
    SameRegister,
    VfDrop,
    VfStats,
)

_E = "en_stats.c"
_8023 = f"{_E} pport_802_3_stats_desc (PPCNT IEEE 802.3 group)"
_PRIO = f"{_E} pport_per_prio_pfc_stats_desc (PPCNT per-priority group)"
_GLOBAL = (f"{_E} mlx5e_grp_per_prio_pfc_fill_stats: the \"global\" names read "
           "per_prio_counters[0] and exist only while 802.3x pause is enabled "
           "(mlx5e_query_global_pause_combined)")
_DOC = "Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst"
# The same PPCNT register on NVIDIA's Spectrum switch ASIC counts PFC frames here: 1,234
# injected PFC frames gave a_pause_mac_ctrl_frames_received = 1234 and prio 3 rx_pause = 1234.
_PFC_TOO = "sonic-net/sonic-buildimage issue #5540 (PPCNT: PFC frames counted here too)"

TABLE = DriverTable(
    driver="mlx5_core",
    source="drivers/net/ethernet/mellanox/mlx5/core/en_stats.c",
    rules=(
        # The IEEE 802.3 group's PAUSE MAC Control counters, which the driver also reports as
        # the kernel's standard pause statistics. NVIDIA documents them as "link layer pause
        # packets" and they rise on PFC-only hosts, so they are not the 802.3x family.
        Rule(r"rx_pause_ctrl_phy", "nic_rx_pause_ctrl_frames_total",
             evidence=f"{_8023}: a_pause_mac_ctrl_frames_received; {_DOC}; {_PFC_TOO}"),
        Rule(r"tx_pause_ctrl_phy", "nic_tx_pause_ctrl_frames_total",
             evidence=f"{_8023}: a_pause_mac_ctrl_frames_transmitted; {_DOC}; {_PFC_TOO}"),
        # 802.3x global pause only: the per-priority group's priority-0 slot, reported under
        # this name only in global pause mode.
        Rule(r"rx_global_pause", "nic_rx_pause_frames_total", evidence=f"{_GLOBAL}: rx_pause"),
        Rule(r"tx_global_pause", "nic_tx_pause_frames_total", evidence=f"{_GLOBAL}: tx_pause"),
        Rule(r"rx_prio(?P<priority>[0-7])_pause", "nic_rx_pfc_frames_total",
             evidence=f"{_PRIO}: rx_pause of the priority, only for PFC-enabled priorities"),
        Rule(r"tx_prio(?P<priority>[0-7])_pause", "nic_tx_pfc_frames_total",
             evidence=f"{_PRIO}: tx_pause of the priority, only for PFC-enabled priorities"),
        Rule(r"rx_prio(?P<priority>[0-7])_pause_duration", "nic_rx_pause_duration_seconds_total",
             scale=1e-6, evidence=f"{_PRIO}: rx_pause_duration, microseconds ({_DOC})"),
        Rule(r"tx_prio(?P<priority>[0-7])_pause_duration", "nic_tx_pause_duration_seconds_total",
             scale=1e-6, evidence=f"{_PRIO}: tx_pause_duration, microseconds ({_DOC})"),
        Rule(r"rx_global_pause_duration", "nic_rx_pause_duration_seconds_total",
             (("priority", "global"),), scale=1e-6,
             evidence=f"{_GLOBAL}: rx_pause_duration, microseconds"),
        Rule(r"tx_global_pause_duration", "nic_tx_pause_duration_seconds_total",
             (("priority", "global"),), scale=1e-6,
             evidence=f"{_GLOBAL}: tx_pause_duration, microseconds"),
        Rule(r"tx_pause_storm_(?P<kind>warning|error)_events", "nic_pause_storm_events_total",
             evidence=f"{_E} pport_pfc_stall_stats_desc: device_stall_minor/critical_"
             "watermark_cnt (needs pfcc_mask and stall_detect)"),
        # Q counter: the RQ had no WQE posted by the host.
        Rule(r"rx_out_of_buffer", "nic_rx_out_of_buffer_drops_total", width=32,
             evidence=f"{_E} q_stats_desc: rx_out_of_buffer (query_q_counter_out "
             "out_of_buffer, 32 bits, MLX5E_READ_CTR32_CPU)"),
        # RFC 2863 if_in_discards / if_out_discards: port buffer exhausted.
        Rule(r"rx_discards_phy", "nic_rx_discards_total",
             evidence=f"{_E} pport_2863_stats_desc: if_in_discards"),
        Rule(r"tx_discards_phy", "nic_tx_discards_total",
             evidence=f"{_E} pport_2863_stats_desc: if_out_discards"),
        Rule(r"rx_buffer_passed_thres_phy", "nic_rx_buffer_almost_full_events_total",
             evidence=f"{_E} pport_eth_ext_stats_desc: rx_buffer_almost_full (PPCNT "
             f"extended group; {_DOC}: buffer passed 85% occupancy)"),
        Rule(r"rx_crc_errors_phy", "nic_rx_crc_errors_total",
             evidence=f"{_8023}: a_frame_check_sequence_errors"),
        Rule(r"rx_symbol_err_phy", "nic_rx_symbol_errors_total",
             evidence=f"{_8023}: a_symbol_error_during_carrier"),
        Rule(r"rx_pcs_symbol_err_phy", "nic_rx_pcs_symbol_errors_total",
             evidence=f"{_E} pport_phy_statistical_stats_desc: phy_symbol_errors ({_DOC}: "
             "\"not corrected by FEC\")"),
        Rule(r"rx_corrected_bits_phy", "nic_fec_corrected_bit_errors_total",
             evidence=f"{_E} pport_phy_statistical_stats_desc: phy_corrected_bits"),
        # Per-lane pre-FEC errors: only lanes 0-3 exist in the driver (an 8-lane port shows 4);
        # present with the PCAM per_lane_error_counters capability.
        Rule(r"rx_err_lane_(?P<lane>[0-3])_phy", "nic_fec_lane_bit_errors_total",
             evidence=f"{_E} pport_phy_statistical_err_lanes_stats_desc: phy_raw_errors_laneN "
             "(mlx5e_grp_phy_fill_stats, MLX5_CAP_PCAM_FEATURE per_lane_error_counters)"),
        Rule(r"rx_packets_phy", "nic_phy_rx_packets_total",
             evidence=f"{_8023}: a_frames_received_ok, frames"),
        Rule(r"tx_packets_phy", "nic_phy_tx_packets_total",
             evidence=f"{_8023}: a_frames_transmitted_ok, frames"),
        Rule(r"rx_bytes_phy", "nic_phy_rx_bytes_total",
             evidence=f"{_8023}: a_octets_received_ok, bytes"),
        Rule(r"tx_bytes_phy", "nic_phy_tx_bytes_total",
             evidence=f"{_8023}: a_octets_transmitted_ok, bytes"),
        Rule(r"link_down_events_phy", "nic_link_down_events_total", width=32,
             evidence=f"{_E} phy group fill_stats: phys_layer_cntrs.link_down_events "
             "(MLX5_GET, 32 bits)"),
    ),
    netlink=(
        NetlinkFill("pause.rx_frames", ("rx_pause_ctrl_phy",), "nic_rx_pause_ctrl_frames_total",
                    f"{_E} mlx5e_stats_pause_get (5.10): a_pause_mac_ctrl_frames_received"),
        NetlinkFill("pause.tx_frames", ("tx_pause_ctrl_phy",), "nic_tx_pause_ctrl_frames_total",
                    f"{_E} mlx5e_stats_pause_get (5.10): a_pause_mac_ctrl_frames_transmitted"),
        NetlinkFill("eth-phy.SymbolErrorDuringCarrier", ("rx_symbol_err_phy",),
                    "nic_rx_symbol_errors_total",
                    f"{_E} mlx5e_stats_eth_phy_get (5.13): a_symbol_error_during_carrier"),
        NetlinkFill("eth-mac.FrameCheckSequenceErrors", ("rx_crc_errors_phy",),
                    "nic_rx_crc_errors_total",
                    f"{_E} mlx5e_stats_eth_mac_get (5.13): a_frame_check_sequence_errors"),
        NetlinkFill("eth-mac.OctetsReceivedOK", ("rx_bytes_phy",), "nic_phy_rx_bytes_total",
                    f"{_E} mlx5e_stats_eth_mac_get (5.13): a_octets_received_ok"),
        NetlinkFill("eth-mac.OctetsTransmittedOK", ("tx_bytes_phy",), "nic_phy_tx_bytes_total",
                    f"{_E} mlx5e_stats_eth_mac_get (5.13): a_octets_transmitted_ok"),
        NetlinkFill("fec.corrected_bits", ("rx_corrected_bits_phy",),
                    "nic_fec_corrected_bit_errors_total",
                    f"{_E} mlx5e_stats_fec_get / fec_set_corrected_bits_total (5.13): "
                    "phy_corrected_bits"),
    ),
    same_register=tuple(
        SameRegister((f"{d}_prio0_pause{s}", f"{d}_global_pause{s}"), _GLOBAL)
        for d in ("rx", "tx") for s in ("", "_duration")
    ),
    gauges=(r"outbound_pci_stalled_(?:rd|wr)",),
    # A count of module events despite "temp" in its name: en_stats.c mlx5e_pme_error_desc,
    # pme_stats.error_counters[MLX5_MODULE_EVENT_ERROR_HIGH_TEMPERATURE] (++ per event).
    counters=(r"module_high_temp",),
    vf=VfStats(
        evidence="mlx5e_get_vf_stats -> mlx5_eswitch_get_vport_stats (eswitch.c): the VF "
        "vport's QUERY_VPORT_COUNTER, drops from mlx5_esw_query_vport_drop_stats "
        "(esw/legacy.c)",
        drops=(
            ("rx_dropped", VfDrop(
                "packets on their way to the VF that the e-switch dropped: the VF vport's "
                "egress ACL drop rule (legacy-mode port VLAN / QoS filtering towards the VF) "
                "plus receive_discard_vport_down (arrived while the VF's vport was down); "
                "not receive-ring overflow inside the VF",
                "esw/legacy.c mlx5_esw_query_vport_drop_stats: egress.legacy.drop_counter "
                "+ rx_discard_vport_down; returns 0 unless esw->mode == MLX5_ESWITCH_LEGACY",
                legacy_only=True)),
            ("tx_dropped", VfDrop(
                "packets the VF sent that the e-switch dropped: the VF vport's ingress ACL "
                "drop rule (spoof check: a source MAC not the VF's; a tagged frame from a VF "
                "with a port VLAN) plus transmit_discard_vport_down",
                "esw/legacy.c mlx5_esw_query_vport_drop_stats: ingress.legacy.drop_counter "
                "+ tx_discard_vport_down; 0 unless in legacy mode",
                legacy_only=True)),
        )),
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
    notes="`rx_pause_ctrl_phy` / `tx_pause_ctrl_phy` (IEEE 802.3 group) are what the "
    "driver reports as the kernel's standard pause statistics; they are exported as "
    "`nic_*_pause_ctrl_frames_total` because the PPCNT register counts PFC frames as well "
    "(on NVIDIA's Spectrum ASIC, whose PPCNT is the same register, 1,234 injected PFC "
    "frames showed in both it and the priority's `rx_pause`; ConnectX hosts running PFC "
    "only report the same): mapped to 802.3x PAUSE they would light "
    "up \"global PAUSE\" on a PFC-only host and count the same frames twice. 802.3x PAUSE "
    "comes from `*_global_pause`, which the driver reads from the priority-0 slot of the "
    "per-priority group and lists only in global pause mode (so it and `*_prio0_pause` "
    "never feed two families at once). Whether the per-priority counters include XON "
    "frames is not documented. Pause durations are microseconds in the driver and seconds "
    "here; "
    "`rx_out_of_buffer` and `link_down_events_phy` are 32-bit and wrap. Per-priority PFC "
    "names appear only for priorities with PFC enabled, `*_global_pause*` only with 802.3x "
    "pause on, `tx_pause_storm_*` only with the stall-detect capability. The software totals "
    "without an index (`rx_buff_alloc_err`, `tx_queue_dropped`, ...) already sum the channels. "
    "A VF or SF has no `*_phy` names. FEC blocks come only from ethtool netlink; "
    "`rx_err_lane_N_phy` (pre-FEC raw errors per lane, lanes 0-3 only) feed "
    "nic_fec_lane_bit_errors_total (docs/link-physics.md); `rx_prioN_*discard*` and the PCIe "
    "counters have no canonical family yet and stay raw.",
    irqs=(
        IrqName(r"mlx5_comp(?P<queue>\d+)@pci:.+", "rxtx",
                "pci_irq.c irq_set_name() \"mlx5_comp%d\", mlx5_irq_alloc() \"%s@pci:%s\" "
                "(pci_name); channel i uses completion vector i (en_main.c mlx5e_open_channel)"),
        IrqName(r"mlx5_(?:async|ctrl|pages_eq|cmd_eq|async_eq)\d*@pci:.+", "other",
                "pci_irq.c: the control (async) EQ vector"),
    ),
    rx_queue_packets=(r"rx(?P<queue>\d+)_packets",),
    # mlx5_fw_version_query (mlx5/core/fw.c, 2026 fix 'report 0 or 0xfff.. versions in case
    # of failure') leaves 0 when the query is unsupported and U32_MAX when it failed, printed
    # "%d.%d.%04d" by mlx5_devlink_info_get.
    devlink_unreadable=frozenset({"0.0.0000", "255.255.65535"}),
    # The vendor driver's qos/trust file is what mlnx_qos (Mellanox/mlnx-tools) sets.
    trust_command="mlnx_qos -i {dev} --trust {trust}",
)
