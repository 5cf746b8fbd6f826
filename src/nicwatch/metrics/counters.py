"""The canonical counter families of a NIC port, the platform around it, its queues and
the CPUs that serve it, and the opt-in raw families."""

from __future__ import annotations

from nicwatch.metrics.family import DEVLINK_HEALTH, Family, _counter, _gauge

COUNTERS: tuple[Family, ...] = (
    # Traffic as the kernel's netdev sees it.
    _counter("nic_rx_bytes_total", "Bytes received by the netdev (kernel rtnl_link_stats64). "
             "Traffic that bypasses the kernel, such as RDMA, is not included.", unit="bytes",
             burst=True),
    _counter("nic_tx_bytes_total", "Bytes transmitted by the netdev (kernel rtnl_link_stats64). "
             "Traffic that bypasses the kernel, such as RDMA, is not included.", unit="bytes",
             burst=True),
    _counter("nic_rx_packets_total", "Packets received by the netdev (kernel rtnl_link_stats64).",
             unit="packets"),
    _counter("nic_tx_packets_total",
             "Packets transmitted by the netdev (kernel rtnl_link_stats64).", unit="packets"),
    _counter("nic_rx_errors_total", "Receive errors counted by the netdev (kernel "
             "rtnl_link_stats64 rx_errors).", unit="packets", health=True),
    _counter("nic_tx_errors_total", "Transmit errors counted by the netdev (kernel "
             "rtnl_link_stats64 tx_errors).", unit="packets", health=True),
    _counter("nic_rx_dropped_total", "Received packets dropped by the netdev (kernel "
             "rtnl_link_stats64 rx_dropped); what a driver counts here varies.", unit="packets"),
    _counter("nic_tx_dropped_total", "Packets dropped on transmit by the netdev (kernel "
             "rtnl_link_stats64 tx_dropped).", unit="packets"),
    # Physical port traffic (includes RDMA).
    _counter("nic_phy_rx_bytes_total", "Bytes received on the physical port, including "
             "traffic that bypasses the kernel (RDMA).", unit="bytes", burst=True),
    _counter("nic_phy_tx_bytes_total", "Bytes transmitted on the physical port, including "
             "traffic that bypasses the kernel (RDMA).", unit="bytes", burst=True),
    _counter("nic_phy_rx_packets_total", "Frames received on the physical port as the port's "
             "own frame counter counts them, including traffic that bypasses the kernel "
             "(RDMA): the denominator of drop ratios where the netdev's packet count is not "
             "known. be2net has no port frame counter: its receive queues' packets, summed.",
             unit="frames"),
    _counter("nic_phy_tx_packets_total", "Frames transmitted on the physical port as the "
             "port's own frame counter counts them, including RDMA (be2net: its transmit "
             "queues' packets, summed).", unit="frames"),
    # Flow control. IEEE 802.3 Annex 31B PAUSE frames are MAC Control frames with opcode
    # 0x0001; an XON is a PAUSE frame with pause_time 0. IEEE 802.1Qbb PFC frames are MAC
    # Control frames with opcode 0x0101 and a per-priority enable vector.
    _counter("nic_rx_pause_frames_total", "IEEE 802.3x link-level PAUSE frames received "
             "(MAC Control opcode 0x0001), XOFF and XON (pause_time 0) alike where the driver "
             "counts them together; where it counts XON apart (ixgbe, i40e, ice, e1000e) "
             "XOFF only, XON in nic_rx_pause_xon_frames_total. PFC frames not "
             "included: IEEE 802.3 30.3.4.3 aPAUSEMACCtrlFramesReceived, which is also what the "
             "kernel's ethtool-netlink pause statistic is specified to be. Rising: the link "
             "partner asked this port to stop sending.", unit="frames", health=True),
    _counter("nic_tx_pause_frames_total", "IEEE 802.3x link-level PAUSE frames sent (MAC "
             "Control opcode 0x0001), XOFF and XON (pause_time 0) alike where the driver counts "
             "them together; where it counts XON apart (ixgbe, i40e, ice, e1000e) XOFF only, "
             "XON in nic_tx_pause_xon_frames_total. PFC frames not "
             "included: IEEE 802.3 30.3.4.2 aPAUSEMACCtrlFramesTransmitted. Rising: this port "
             "asked its link partner to stop sending (its receive side could not keep up).",
             unit="frames", health=True),
    _counter("nic_rx_pause_ctrl_frames_total", "PAUSE MAC Control frames received as a NIC "
             "whose counter may also count PFC frames reports them (the kernel's "
             "ethtool-netlink pause statistic on such drivers; mlx5: the PPCNT IEEE 802.3 "
             "group's a_pause_mac_ctrl_frames_received, rx_pause_ctrl_phy). Not comparable "
             "with nic_rx_pause_frames_total, and not to be added to PFC frames.",
             unit="frames", health=True),
    _counter("nic_tx_pause_ctrl_frames_total", "PAUSE MAC Control frames sent as a NIC whose "
             "counter may also count PFC frames reports them (mlx5: PPCNT IEEE 802.3 group "
             "a_pause_mac_ctrl_frames_transmitted, tx_pause_ctrl_phy, also the kernel's "
             "ethtool-netlink pause statistic). Not comparable with nic_tx_pause_frames_total, "
             "and not to be added to PFC frames.", unit="frames", health=True),
    _counter("nic_rx_pfc_frames_total", "IEEE 802.1Qbb PFC frames received (MAC Control opcode "
             "0x0101) with this priority's bit set in the enable vector, XOFF and XON (time 0) "
             "alike where the driver counts them together; XOFF only where it counts XON "
             "apart (i40e, ice: nic_rx_pfc_xon_frames_total). be2net counts PFC only in "
             "total: priority=\"all\". Drivers that count per traffic class or packet "
             "buffer instead of per priority use nic_rx_pfc_tc_frames_total.",
             labels=("priority",), unit="frames", health=True),
    _counter("nic_tx_pfc_frames_total", "IEEE 802.1Qbb PFC frames sent (MAC Control opcode "
             "0x0101) with this priority's bit set in the enable vector, XOFF and XON (time 0) "
             "alike where the driver counts them together; XOFF only where it counts XON "
             "apart (i40e, ice: nic_tx_pfc_xon_frames_total); be2net: priority=\"all\".",
             labels=("priority",), unit="frames", health=True),
    _counter("nic_rx_pfc_tc_frames_total", "IEEE 802.1Qbb PFC frames received, counted by the "
             "NIC per traffic class (packet buffer) rather than per priority, XOFF only (ixgbe "
             "counts XON apart: nic_rx_pfc_tc_xon_frames_total); tc is the traffic class "
             "(ixgbe packet buffer) number, not a priority.",
             labels=("tc",), unit="frames", health=True),
    _counter("nic_tx_pfc_tc_frames_total", "IEEE 802.1Qbb PFC frames sent, counted per traffic "
             "class (packet buffer), XOFF only (XON: nic_tx_pfc_tc_xon_frames_total); tc is not a "
             "priority.", labels=("tc",), unit="frames", health=True),
    # XON (pause_time 0: the release) where the driver counts it apart from XOFF (the
    # pause): one pause episode is one XOFF and, usually, one XON.
    _counter("nic_rx_pause_xon_frames_total", "IEEE 802.3x XON frames received (PAUSE with "
             "pause_time 0: the link partner released the pause), where the driver counts "
             "them apart from XOFF (ixgbe, i40e, ice, e1000e).", unit="frames"),
    _counter("nic_tx_pause_xon_frames_total", "IEEE 802.3x XON frames sent (this port "
             "released its link partner), where the driver counts them apart from XOFF.",
             unit="frames"),
    _counter("nic_rx_pfc_xon_frames_total", "IEEE 802.1Qbb PFC frames received with this "
             "priority's time 0 (the release), where the driver counts them apart (i40e, "
             "ice).", labels=("priority",), unit="frames"),
    _counter("nic_tx_pfc_xon_frames_total", "IEEE 802.1Qbb PFC XON frames sent on this "
             "priority, where the driver counts them apart (i40e, ice).",
             labels=("priority",), unit="frames"),
    _counter("nic_rx_pfc_tc_xon_frames_total", "PFC XON frames received per traffic class "
             "(ixgbe packet buffer); tc is not a priority.", labels=("tc",), unit="frames"),
    _counter("nic_tx_pfc_tc_xon_frames_total", "PFC XON frames sent per traffic class "
             "(ixgbe packet buffer); tc is not a priority.", labels=("tc",), unit="frames"),
    _counter("nic_rx_pause_duration_seconds_total", "Time this port's transmitter was held "
             "paused by received PAUSE/PFC frames, per priority (priority=\"global\" for "
             "802.3x). Its rate is the fraction of time paused.", labels=("priority",),
             unit="seconds", health=True),
    _counter("nic_tx_pause_duration_seconds_total", "Time this port held its link partner "
             "paused by sent PAUSE/PFC frames, per priority (priority=\"global\" for 802.3x). "
             "Its rate is the fraction of time paused.", labels=("priority",), unit="seconds",
             health=True),
    _counter("nic_pause_storm_events_total", "Pause storm watchdog events (kind=warning: the "
             "port sent pauses for a long time; kind=error: pause transmission was disabled "
             "and drops may follow; bnxt reports kind=continuous/resume and their roce_ forms).",
             labels=("kind",), unit="events", health=True),
    # Drops and discards.
    _counter("nic_rx_out_of_buffer_drops_total", "Packets dropped because the host receive "
             "ring had no free descriptor (the host did not refill it fast enough).",
             unit="packets", health=True),
    _counter("nic_rx_discards_total", "Received packets discarded by the port before reaching "
             "the host, e.g. port buffer exhausted (ifInDiscards).", unit="packets",
             health=True),
    _counter("nic_tx_discards_total", "Transmit packets discarded by the port.",
             unit="packets", health=True),
    _counter("nic_rx_buffer_almost_full_events_total", "Times the port receive buffer passed "
             "its occupancy threshold (mlx5: 85%).", unit="events", health=True),
    # Physical layer errors.
    _counter("nic_rx_crc_errors_total", "Frames received with a bad frame check sequence "
             "(FCS/CRC).", unit="frames", health=True),
    _counter("nic_rx_symbol_errors_total", "Symbol errors during carrier on receive, as the "
             "MAC/PHY counts them (IEEE 802.3 30.3.2.1.5 aSymbolErrorDuringCarrier; mlx5: PPCNT "
             "IEEE 802.3 group). Not the PCS counter some drivers also report to the kernel "
             "under this name (bnxt), which is nic_rx_pcs_symbol_errors_total.", unit="errors",
             health=True),
    _counter("nic_rx_pcs_symbol_errors_total", "Symbol errors counted at the PCS, after FEC "
             "where FEC is active (mlx5: rx_pcs_symbol_err_phy, \"not corrected by FEC\"; "
             "bnxt: rx_pcs_symbol_err, which bnxt also reports to the kernel as "
             "SymbolErrorDuringCarrier).", unit="errors", health=True),
    _counter("nic_fec_corrected_blocks_total", "FEC codewords with errors that FEC corrected, "
             "per lane where the driver reports lanes, else lane=\"total\".",
             labels=("lane",), unit="blocks", health=True, total_label=("lane", "total")),
    _counter("nic_fec_uncorrectable_blocks_total", "FEC codewords FEC could not correct (the "
             "frame is lost), per lane where reported, else lane=\"total\".",
             labels=("lane",), unit="blocks", health=True, total_label=("lane", "total")),
    _counter("nic_fec_corrected_bit_errors_total", "Bit errors corrected by FEC (pre-FEC bit "
             "errors). Divide its rate by 8 x nic_link_speed_bytes_per_second for the pre-FEC bit "
             "error ratio (FEC also decodes idle codewords, so line rate, not traffic, is the "
             "denominator).", unit="bits", health=True),
    _counter("nic_link_down_events_total", "Times the physical link went down, as counted by "
             "the NIC.", unit="events", health=True),
    _counter("nic_carrier_up_events_total", "Times the netdev carrier came up (sysfs "
             "carrier_up_count).", unit="events"),
    _counter("nic_carrier_down_events_total", "Times the netdev carrier went down (sysfs "
             "carrier_down_count).", unit="events", health=True),
    _counter("nic_cloud_allowance_exceeded_packets_total", "Packets queued or dropped because "
             "a cloud instance allowance was exceeded (ENA), per limit.", labels=("limit",),
             unit="packets", health=True),
    # Link physics (docs/link-physics.md).
    _counter("nic_fec_lane_bit_errors_total", "Pre-FEC bit errors received on this serdes "
             "lane (lane counts from 0): the bits FEC corrected on it (ethtool netlink "
             "ETHTOOL_A_FEC_STAT_CORR_BITS lane entries) or, where the driver has only that, "
             "the PHY's raw error count of the lane (mlx5 rx_err_lane_N_phy, lanes 0-3). "
             "Absent where the driver reports no lanes: nic_fec_corrected_bit_errors_total has "
             "the port's total.", labels=("lane",), unit="bits"),
    _counter("nic_fec_codewords_total", "RS-FEC codewords received by how many symbols FEC "
             "corrected in each (ethtool netlink ETHTOOL_A_FEC_STAT_HIST, kernel 6.18): the "
             "bin holds codewords with bin_low..bin_high corrected symbols; lane \"total\" is "
             "every lane, else the lane where the driver reports lanes. A bin near the code's "
             "correction limit filling is the margin running out "
             "(nic_fec_margin_symbols).", labels=("bin_low", "bin_high", "lane"),
             unit="codewords", total_label=("lane", "total")),
)

# Counters of the platform around a NIC rather than of the NIC's own port.
PLATFORM_COUNTERS: tuple[Family, ...] = (
    _counter("nic_pcie_aer_errors_total", "PCIe AER errors reported by a device on the NIC's "
             "PCIe path (hop=\"0\" is the NIC function, 1 its upstream port, ...), by severity "
             "(correctable, nonfatal, fatal).", labels=("hop", "pci_address", "severity"),
             unit="errors", health=True),
    # devlink health reporters (docs/devlink.md): per reporter of the interface's PCI
    # function (devlink_port="") and of its devlink port.
    _counter("nic_devlink_health_errors_total", "Errors the driver reported to this devlink "
             "health reporter since it was created (driver load): e.g. mlx5 tx (TX timeout, "
             "error completion), rx, fw (firmware syndrome), fw_fatal (firmware fatal "
             "error).", labels=DEVLINK_HEALTH, unit="errors", health=True),
    _counter("nic_devlink_health_recoveries_total", "Recoveries of this devlink health "
             "reporter that completed (automatic, requested, or run by the driver itself and "
             "reported with devlink_health_reporter_recovery_done). Always 0 for a reporter "
             "without a recover operation (nic_devlink_health_recoverable 0: mlx5 fw and vnic, "
             "every ice reporter), so errors_total minus this is not what was left "
             "unrecovered; nic_devlink_health_reporter_state says whether the reporter is in "
             "error now.", labels=DEVLINK_HEALTH, unit="recoveries"),
    _counter("nic_module_read_errors_total", "Module EEPROM reads (--collector.module, one "
             "attempt per interface and module interval) that failed, by kind (errno name such "
             "as ETIMEDOUT or EBUSY, or parse). An unsupported driver, an empty cage and a "
             "missing CAP_NET_ADMIN are states (nic_module_read_state), not counted here.",
             labels=("kind",), unit="errors"),
    # SR-IOV VFs of a PF (opt-in, --collector.vfs; docs/sriov.md): the PF's RTM_GETLINK
    # reply with RTEXT_FILTER_VF, IFLA_VF_STATS, as the driver counts them for the VF.
    _counter("nic_vf_rx_packets_total", "Packets received by this SR-IOV VF of the PF "
             "(IFLA_VF_STATS_RX_PACKETS).", labels=("vf",), unit="packets"),
    _counter("nic_vf_tx_packets_total", "Packets transmitted by this SR-IOV VF "
             "(IFLA_VF_STATS_TX_PACKETS).", labels=("vf",), unit="packets"),
    _counter("nic_vf_rx_bytes_total", "Bytes received by this SR-IOV VF "
             "(IFLA_VF_STATS_RX_BYTES).", labels=("vf",), unit="bytes"),
    _counter("nic_vf_tx_bytes_total", "Bytes transmitted by this SR-IOV VF "
             "(IFLA_VF_STATS_TX_BYTES).", labels=("vf",), unit="bytes"),
    _counter("nic_vf_rx_broadcast_total", "Broadcast packets received by this SR-IOV VF "
             "(IFLA_VF_STATS_BROADCAST).", labels=("vf",), unit="packets"),
    _counter("nic_vf_rx_multicast_total", "Multicast packets received by this SR-IOV VF "
             "(IFLA_VF_STATS_MULTICAST).", labels=("vf",), unit="packets"),
    _counter("nic_vf_rx_dropped_total", "Packets on their way to this SR-IOV VF that the PF's "
             "NIC dropped (IFLA_VF_STATS_RX_DROPPED, kernel commit c5a9f6f0ab40), as the PF "
             "driver counts them: ice and i40e, the VF's receive queues had no descriptor "
             "(plus i40e's other VSI receive discards); mlx5, the e-switch dropped them before "
             "the VF (port-VLAN egress filter, VF vport down), in legacy e-switch mode only "
             "(absent in switchdev). Per driver: docs/sriov.md.", labels=("vf",),
             unit="packets"),
    _counter("nic_vf_tx_dropped_total", "Packets this SR-IOV VF sent that the PF's NIC "
             "dropped (IFLA_VF_STATS_TX_DROPPED, since the same commit), as the PF driver "
             "counts them: mlx5, the e-switch's ingress filter (spoof check, port VLAN) or the "
             "VF vport down, legacy mode only; i40e, failed transmit checks, on kernels with "
             "the 2025 fix (exported once non-zero); absent for ice, which never updates it.",
             labels=("vf",), unit="packets"),
)

# The netdev generic netlink family's device-scope queue statistics (qstats-get, 6.9+;
# definitions: Documentation/netlink/specs/netdev.yaml, attribute set "qstats"), one family
# per statistic, absent where the driver does not fill it. Device scope counts since the
# device was reset, across reconfigurations (the queues' counts plus what the driver keeps
# for queues gone since). rx/tx packets and bytes are not repeated here: the netdev
# counters (nic_rx_packets_total, ...) are those. Per queue: nic_rx_queue_packets_total and,
# opt-in by name in --collector.per-queue, nic_queue_stat_total{stat="rx-alloc-fail"}.
QSTATS_COUNTERS: tuple[Family, ...] = (
    _counter("nic_rx_alloc_failures_total", "Times a receive buffer or skb allocation failed "
             "on the receive path (netdev qstats rx-alloc-fail); whether a packet was lost "
             "depends on the driver.", unit="events", health=True),
    _counter("nic_rx_hw_drops_total", "Packets that entered the device but never left it, "
             "for any reason: no buffer, processing errors, policies, filters (netdev qstats "
             "rx-hw-drops).", unit="packets", health=True),
    _counter("nic_rx_hw_drop_overruns_total", "Packets the device dropped for a transient "
             "lack of resources such as buffer space or host descriptors (netdev qstats "
             "rx-hw-drop-overruns); part of nic_rx_hw_drops_total.", unit="packets",
             health=True),
    _counter("nic_rx_hw_drop_ratelimits_total", "Packets the device dropped because the "
             "received bit rate exceeded its rate limit (netdev qstats rx-hw-drop-ratelimits).",
             unit="packets", health=True),
    _counter("nic_rx_csum_packets_total", "Received packets by checksum offload result "
             "(netdev qstats rx-csum-*): complete (CHECKSUM_COMPLETE), unnecessary "
             "(CHECKSUM_UNNECESSARY), none (not checked by the device), bad (bad checksum, "
             "still delivered).", labels=("result",), unit="packets"),
    _counter("nic_rx_hw_gro_packets_total", "Packets the device built by hardware GRO "
             "coalescing, not LRO (netdev qstats rx-hw-gro-packets).", unit="packets"),
    _counter("nic_rx_hw_gro_bytes_total", "Bytes of nic_rx_hw_gro_packets_total (netdev "
             "qstats rx-hw-gro-bytes).", unit="bytes"),
    _counter("nic_rx_hw_gro_wire_packets_total", "Wire packets hardware GRO coalesced into "
             "bigger ones (netdev qstats rx-hw-gro-wire-packets).", unit="packets"),
    _counter("nic_rx_hw_gro_wire_bytes_total", "Bytes of nic_rx_hw_gro_wire_packets_total "
             "(netdev qstats rx-hw-gro-wire-bytes).", unit="bytes"),
    _counter("nic_tx_hw_drops_total", "Packets that arrived at the device for transmit and "
             "never left it: errors, policies, filters (netdev qstats tx-hw-drops).",
             unit="packets", health=True),
    _counter("nic_tx_hw_drop_errors_total", "Transmit packets the device dropped as invalid "
             "or malformed (netdev qstats tx-hw-drop-errors); part of nic_tx_hw_drops_total.",
             unit="packets", health=True),
    _counter("nic_tx_hw_drop_ratelimits_total", "Transmit packets the device dropped for "
             "exceeding its rate limit (netdev qstats tx-hw-drop-ratelimits).",
             unit="packets", health=True),
    _counter("nic_tx_csum_packets_total", "Transmitted packets by checksum offload (netdev "
             "qstats): csum=none (no checksum needed from the device, tx-csum-none), "
             "csum=needed (the device computed it, tx-needs-csum).", labels=("csum",),
             unit="packets"),
    _counter("nic_tx_hw_gso_packets_total", "Packets the device segmented (netdev qstats "
             "tx-hw-gso-packets).", unit="packets"),
    _counter("nic_tx_hw_gso_bytes_total", "Bytes of nic_tx_hw_gso_packets_total (netdev "
             "qstats tx-hw-gso-bytes).", unit="bytes"),
    _counter("nic_tx_hw_gso_wire_packets_total", "Wire packets the device made from "
             "nic_tx_hw_gso_packets_total (netdev qstats tx-hw-gso-wire-packets).",
             unit="packets"),
    _counter("nic_tx_hw_gso_wire_bytes_total", "Bytes of nic_tx_hw_gso_wire_packets_total "
             "(netdev qstats tx-hw-gso-wire-bytes).", unit="bytes"),
    _counter("nic_tx_queue_stops_total", "Times the driver stopped a transmit queue because "
             "it was full (netdev qstats tx-stop), summed over queues.", unit="events"),
    _counter("nic_tx_queue_wakes_total", "Times the driver restarted a stopped transmit "
             "queue (netdev qstats tx-wake).", unit="events"),
)

# The receive path (docs/receive-path.md): packets per receive queue, and the softnet counters
# of the CPUs serving the interface (its interrupts' effective affinity and its RPS CPUs).
# The softnet counters are host-wide per CPU: a CPU serving two NICs shows under both.
RXPATH_COUNTERS: tuple[Family, ...] = (
    _counter("nic_rx_queue_packets_total", "Packets received on this receive queue: netdev "
             "qstats rx-packets per queue (6.9+; since the queue's last reconfiguration), else "
             "the driver's per-queue counter (mlx5 rxN_packets, ice rx_queue_N_packets, veth "
             "rx_queue_N_xdp_packets: NAPI-path packets only, ...).", labels=("queue",),
             unit="packets"),
    _counter("nic_rx_cpu_processed_total", "Packets CPU `cpu`, which serves this NIC, took "
             "from its backlog and NAPI queues (/proc/net/softnet_stat processed, all NICs "
             "together; 32 bits, extended).", labels=("cpu",), unit="packets"),
    _counter("nic_rx_cpu_dropped_total", "Packets CPU `cpu`, which serves this NIC, dropped "
             "because its input backlog was full (net.core.netdev_max_backlog, or the flow "
             "limit; softnet_stat dropped, all NICs together).", labels=("cpu",),
             unit="packets", health=True),
    _counter("nic_rx_cpu_time_squeeze_total", "Times CPU `cpu`, which serves this NIC, ended "
             "a receive softirq run with work left because the budget (net.core.netdev_budget "
             "packets or netdev_budget_usecs) ran out (softnet_stat time_squeeze, all NICs "
             "together). Rising while the CPU's softirq share is near 1: it cannot keep up.",
             labels=("cpu",), unit="events", health=True),
    _counter("nic_rx_cpu_received_rps_total", "Times CPU `cpu`, which serves this NIC, was "
             "woken by another CPU (an inter-processor interrupt) to process packets RPS or "
             "RFS steered to it (softnet_stat received_rps, all NICs together; 32 bits, "
             "extended). Zero without RPS/RFS.", labels=("cpu",), unit="events"),
    _counter("nic_rx_cpu_flow_limit_total", "Packets CPU `cpu`, which serves this NIC, "
             "dropped because their flow took more than half of the CPU's recent backlog packets "
             "while the backlog was over half full (flow limit, on for the CPUs in "
             "net.core.flow_limit_cpu_bitmap; softnet_stat "
             "flow_limit_count, all NICs together; 32 bits, extended). Counted in "
             "nic_rx_cpu_dropped_total too.", labels=("cpu",), unit="packets", health=True),
)

# Opt-in families carrying driver names verbatim (see NormalizeOptions).
RAW_COUNTER = _counter("nic_driver_stat_total", "Raw driver statistic (ethtool -S) that is a "
                       "counter, summed over queues unless listed per queue.", labels=("stat",))
RAW_GAUGE = _gauge("nic_driver_stat_value", "Raw driver statistic (ethtool -S) that is a gauge "
                   "(a level, state or percentage): listed as such in the driver's table, or "
                   "named as one (temperature, level, state, status, mode, current, "
                   "utilization, ...) unless the table lists it as a counter; per-queue "
                   "gauges keep their queue number in the name.", labels=("stat",))
QUEUE_COUNTER = _counter("nic_queue_stat_total", "Per-queue statistic, for the statistics "
                         "listed in --collector.per-queue only: a driver's queue-less raw name "
                         "(rx_buff_alloc_err), or a netdev qstats name (rx-alloc-fail, "
                         "tx-stop, ...; queue is the rx or tx queue its name says).",
                         labels=("queue", "stat"))
