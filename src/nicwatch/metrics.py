"""The metric contract: every family nicwatch exports, with its meaning and unit.

This module is the single source of truth for names, types, labels and HELP text: the
canonical families driver tables map into, and the families of the tracker, the consumers
(checks, identity, softirq load) and the daemon itself (nicwatch_*). The exporter and the
consumers name families through it, and docs/metrics.md is generated from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nicwatch.model import ExtraFamily, Labels


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    type: str  # "counter" or "gauge"
    help: str
    labels: tuple[str, ...] = ()
    unit: str = ""
    health: bool = False  # a trouble counter; also gets a peak-rate gauge
    total_label: tuple[str, str] | None = None  # a summary series dropped when parts exist
    burst: bool = False  # not trouble, but its sub-scrape peaks matter (throughput)

    @property
    def peaked(self) -> bool:
        """Served with a *_peak_per_second gauge over the peak window."""
        return self.health or self.burst

    @property
    def base(self) -> str:
        return self.name[: -len("_total")] if self.name.endswith("_total") else self.name


def _counter(name: str, help: str, labels: Sequence[str] = (), unit: str = "",
             health: bool = False, total_label: tuple[str, str] | None = None,
             burst: bool = False) -> Family:
    return Family(name, "counter", help, tuple(labels), unit, health, total_label, burst)


def _gauge(name: str, help: str, labels: Sequence[str] = (), unit: str = "") -> Family:
    return Family(name, "gauge", help, tuple(labels), unit)


RDMA = ("rdma_device", "port")
DEVLINK_HEALTH = ("devlink", "devlink_port", "reporter")

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

# Pluggable transceiver modules (`ethtool -m`): decoded from the module EEPROM by
# nicwatch.normalize.module. SFF-8472 (SFP/SFP+/SFP28: A0h identity, A2h digital diagnostics),
# SFF-8636 (QSFP+/QSFP28: lower page monitors, page 00h identity, page 03h thresholds) and CMIS
# (QSFP-DD/OSFP/QSFP112/SFP-DD/DSFP: lower memory, pages 00h-02h, lane page 11h). Absent when
# no module EEPROM was read, the module does not implement the field, the page holding it
# fails its checksum, or the value is outside the physical bounds (then
# nic_module_value_implausible names it). docs/optics.md says what each value means.
_MODULE_LEVEL = ("level",)
MODULE_GAUGES: tuple[Family, ...] = (
    _gauge("nic_rdma_port_info", "An RDMA port; value 1. driver: the counter table that "
           "applies (mlx5, bnxt_re, irdma, efa, mana, rxe, ...; \"\" unknown); link_layer: "
           "InfiniBand or Ethernet (RoCE); state and phys_state as the kernel names them "
           "(ACTIVE, DOWN, ...; LinkUp, Polling, Disabled, ...).",
           labels=("driver", "link_layer", "node_guid", "pci_address", "phys_state", "state",
                   *RDMA)),
    _gauge("nic_rdma_info", "The HCA behind an RDMA port; value 1. board_id, "
           "firmware_version and hca_type: the device's board_id, fw_ver and hca_type files "
           "as printed (\"\" where absent), the labels node_exporter's node_infiniband_info "
           "has.", labels=("board_id", "firmware_version", "hca_type", *RDMA)),
    _gauge("nic_rdma_port_active", "1 when the RDMA port's logical state is ACTIVE, else 0.",
           labels=RDMA),
    _gauge("nic_rdma_port_rate_bytes_per_second", "The RDMA port's rate (ports/<n>/rate: "
           "width x lane speed).", labels=RDMA, unit="bytes_per_second"),
    _gauge("nic_rdma_portcounters_saturated", "1 while an IB PortCounters counter of this port "
           "stands at its maximum (2^width - 1): the PMA counters stop there instead of "
           "wrapping, so its increase since is unknown (no rate is computed) until someone "
           "clears it (perfquery -R). counter: the counters/ file.",
           labels=("counter", *RDMA)),
    _gauge("nic_rdma_hw_value", "A driver RDMA counter that is a value, not a count (mana "
           "current_rate), by the driver's name.", labels=("counter", *RDMA)),
    _gauge("nic_rdma_active_mtu_bytes", "The RoCE active MTU of this port: what the kernel "
           "derives from the netdev MTU (iboe_get_mtu, include/rdma/ib_addr.h: the MTU less 96 "
           "bytes of RoCE headers, rounded down to 256..4096), as mlx5, bnxt_re and irdma "
           "report active_mtu; computed, not read (no sysfs or netlink attribute has it).",
           labels=RDMA, unit="bytes"),
    _gauge("nic_rdma_roce_v2_gids", "RoCE v2 entries of this port's GID table that belong to "
           "its own netdev (gid_attrs/types, gid_attrs/ndevs).", labels=RDMA),
    _gauge("nic_rdma_addresses_without_roce_v2_gid", "IP addresses of the port's netdev "
           "without a RoCE v2 GID (IPv4 as ::ffff:a.b.c.d): RoCE v2 traffic to those addresses "
           "cannot be set up (rdma_cm resolves an address to a GID). Absent when the addresses "
           "or the GID table were not read.", labels=RDMA),
    _gauge("nic_rdma_default_roce_tos", "ToS byte (DSCP << 2 | ECN) rdma_cm gives new RoCE "
           "connections on this port (configfs rdma_cm/<dev>/ports/<n>/default_roce_tos; "
           "present once the rdma_cm/<dev> directory was created).", labels=RDMA),
    _gauge("nic_rdma_traffic_class", "Traffic class (ToS byte) forced on every RoCE QP of "
           "this port by the vendor mlx5 driver (infiniband/<dev>/tc/<n>/traffic_class "
           "\"Global tclass\"); absent when none is set.", labels=RDMA),
)

# CMIS VDM (versatile diagnostics, pages 20h-2Fh; docs/link-physics.md "CMIS VDM"): what the
# module measures per lane beyond power and bias, where page 01h byte 142 bit 6 advertises it.
# lane counts from 1 (the descriptor's lane field + 1); side: media (the module's optical or
# line input) or host (its electrical input from the NIC); stat: current, min, max, average.
_VDM_SRC = ("from the module's VDM (CMIS 5.x 8.22: descriptor pages 20h-23h, samples "
            "24h-27h, thresholds 28h-2Bh)")
_VDM_STAT = (" stat: current, or the module's min, max and average statistics (over the "
             "interval between two freezes, page 2Fh byte 144, which nicwatch never writes).")
VDM_ESNR = _gauge("nic_module_vdm_esnr_db", "Effective signal-to-noise ratio of this lane's "
                  "input as the module measures it (VDM types 5 media, 6 host; U16, 1/256 dB), "
                  + _VDM_SRC + ".", labels=("lane", "side"), unit="db")
VDM_PRE_FEC_BER = _gauge("nic_module_vdm_pre_fec_ber", "Pre-FEC bit error ratio of this "
                         "lane's input as the module measures it (VDM types 9-16; F16), "
                         + _VDM_SRC + "." + _VDM_STAT, labels=("lane", "side", "stat"))
VDM_ERRORED_FRAMES = _gauge("nic_module_vdm_errored_frames", "The module's errored frames "
                            "observable (FERC; VDM types 17-24, F16) of this lane's input, "
                            "as the module reports it, " + _VDM_SRC + "." + _VDM_STAT,
                            labels=("lane", "side", "stat"))
VDM_LASER_TEMPERATURE = _gauge("nic_module_vdm_laser_temperature_celsius", "Temperature of "
                               "this lane's laser as the module measures it (VDM type 4; S16, "
                               "1/256 C), " + _VDM_SRC + ".", labels=("lane",), unit="celsius")
_VDM_LIMIT = (" The module's own alarm and warning thresholds of the observable (level: "
              "high_alarm, low_alarm, high_warning, low_warning; its descriptor's threshold "
              "set on pages 28h-2Bh), in its unit; labels as on the observable. Only for "
              "stat current (statistics have none here), and none where the module's set is "
              "four zeros.")
VDM_ESNR_THRESHOLD = _gauge("nic_module_vdm_esnr_threshold_db", "eSNR thresholds." + _VDM_LIMIT,
                            labels=("lane", "side", "level"), unit="db")
VDM_PRE_FEC_BER_THRESHOLD = _gauge("nic_module_vdm_pre_fec_ber_threshold", "Pre-FEC BER "
                                   "thresholds." + _VDM_LIMIT,
                                   labels=("lane", "side", "stat", "level"))
VDM_ERRORED_FRAMES_THRESHOLD = _gauge("nic_module_vdm_errored_frames_threshold", "Errored "
                                      "frames thresholds." + _VDM_LIMIT,
                                      labels=("lane", "side", "stat", "level"))
VDM_LASER_TEMPERATURE_THRESHOLD = _gauge("nic_module_vdm_laser_temperature_threshold_celsius",
                                         "Laser temperature thresholds." + _VDM_LIMIT,
                                         labels=("lane", "level"), unit="celsius")
MODULE_VDM_GAUGES: tuple[Family, ...] = (
    VDM_ESNR, VDM_PRE_FEC_BER, VDM_ERRORED_FRAMES, VDM_LASER_TEMPERATURE, VDM_ESNR_THRESHOLD,
    VDM_PRE_FEC_BER_THRESHOLD, VDM_ERRORED_FRAMES_THRESHOLD, VDM_LASER_TEMPERATURE_THRESHOLD)

# RDMA ports (docs/rdma.md): every port of every RDMA device, InfiniBand ports without a
# netdev included. Their series carry rdma_device and port; the netdev, where the port has
# one, is the device label. Counters come from the IB PortCounters (counters/, sysfs), then
# the driver's hardware counters (RDMA netlink, else hw_counters/), per driver table
# (normalize/rdma.py). The PortCounters of 4 to 32 bits saturate at their maximum instead
# of wrapping (nic_rdma_portcounters_saturated).
_PMA = "IB PortCounters (counters/"


def _rdma(name: str, help: str, unit: str = "events", health: bool = False) -> Family:
    return _counter(name, help, RDMA, unit, health)


RDMA_COUNTERS: tuple[Family, ...] = (
    _rdma("nic_rdma_rx_bytes_total", "Bytes received by the RDMA port: counters/port_rcv_data "
          "x 4 (4-byte words), RDMA traffic the netdev does not see; from the driver's own "
          "counter where it has no PortCounters (bnxt_re, efa, mana).", "bytes"),
    _rdma("nic_rdma_tx_bytes_total", "Bytes sent by the RDMA port (counters/port_xmit_data x "
          "4; driver counter without PortCounters).", "bytes"),
    _rdma("nic_rdma_rx_packets_total", "Packets received by the RDMA port (counters/"
          "port_rcv_packets; driver counter without PortCounters).", "packets"),
    _rdma("nic_rdma_tx_packets_total", "Packets sent by the RDMA port (counters/"
          "port_xmit_packets; driver counter without PortCounters).", "packets"),
    _rdma("nic_rdma_rx_unicast_packets_total", "Unicast packets received (counters/"
          "unicast_rcv_packets, PortCountersExtended).", "packets"),
    _rdma("nic_rdma_tx_unicast_packets_total", "Unicast packets sent (counters/"
          "unicast_xmit_packets).", "packets"),
    _rdma("nic_rdma_rx_multicast_packets_total", "Multicast packets received (counters/"
          "multicast_rcv_packets).", "packets"),
    _rdma("nic_rdma_tx_multicast_packets_total", "Multicast packets sent (counters/"
          "multicast_xmit_packets).", "packets"),
    _rdma("nic_rdma_symbol_errors_total", f"{_PMA}symbol_error, 16 bits, saturating): minor "
          "link errors on one or more physical lanes. Rising: a marginal cable or optic.",
          health=True),
    _rdma("nic_rdma_link_error_recoveries_total", f"{_PMA}link_error_recovery, 8 bits): times "
          "the link recovered from errors by retraining.", health=True),
    _rdma("nic_rdma_link_downed_total", f"{_PMA}link_downed, 8 bits): times link error "
          "recovery failed and the link went down (rxe: its port went down).", health=True),
    _rdma("nic_rdma_rx_errors_total", f"{_PMA}port_rcv_errors, 16 bits): packets received "
          "with an error.", "packets", health=True),
    _rdma("nic_rdma_rx_remote_physical_errors_total", f"{_PMA}port_rcv_remote_physical_errors,"
          " 16 bits): packets an upstream link marked bad.", "packets", health=True),
    _rdma("nic_rdma_rx_switch_relay_errors_total", f"{_PMA}port_rcv_switch_relay_errors, 16 "
          "bits): packets a switch port could not relay.", "packets", health=True),
    _rdma("nic_rdma_tx_discards_total", f"{_PMA}port_xmit_discards, 16 bits): outbound "
          "packets discarded because the port was down or congested.", "packets", health=True),
    _rdma("nic_rdma_tx_constraint_errors_total", f"{_PMA}port_xmit_constraint_errors, 8 "
          "bits): outbound packets not sent for a partition or raw constraint.", "packets",
          health=True),
    _rdma("nic_rdma_rx_constraint_errors_total", f"{_PMA}port_rcv_constraint_errors, 8 "
          "bits): inbound packets discarded for a partition or raw constraint.", "packets",
          health=True),
    _rdma("nic_rdma_local_link_integrity_errors_total", f"{_PMA}local_link_integrity_errors, "
          "4 bits): times local physical errors passed the LocalPhyErrors threshold.",
          health=True),
    _rdma("nic_rdma_excessive_buffer_overrun_errors_total", f"{_PMA}"
          "excessive_buffer_overrun_errors, 4 bits): times consecutive flow-control periods "
          "overran a receive buffer.", health=True),
    _rdma("nic_rdma_vl15_dropped_total", f"{_PMA}VL15_dropped, 16 bits): subnet management "
          "packets dropped for lack of buffers.", "packets", health=True),
    _rdma("nic_rdma_tx_wait_ticks_total", f"{_PMA}port_xmit_wait, 32 bits): sample ticks the "
          "port had data to send and could not (no flow-control credits): fabric "
          "backpressure; the tick length is the device's (PortSamplesControl.TickTime).",
          "ticks"),
    _rdma("nic_rdma_cnp_sent_total", "RoCE congestion notification packets sent by this port "
          "as notification point (mlx5 np_cnp_sent, irdma cnpSent): it received ECN-marked "
          "packets. Normal under congestion control.", "packets"),
    _rdma("nic_rdma_cnp_handled_total", "RoCE CNPs handled by this port as reaction point "
          "(mlx5 rp_cnp_handled, irdma cnpHandled): it slowed down as asked. Normal under "
          "congestion control.", "packets"),
    _rdma("nic_rdma_cnp_ignored_total", "RoCE CNPs received as reaction point and ignored "
          "(mlx5 rp_cnp_ignored, irdma cnpIgnored): congestion was signalled and nothing "
          "slowed down (congestion control off for the priority).", "packets", health=True),
    _rdma("nic_rdma_ecn_marked_packets_total", "RoCEv2 packets received with ECN CE by the "
          "notification point (mlx5 np_ecn_marked_roce_packets).", "packets"),
    _rdma("nic_rdma_out_of_sequence_total", "Packets received out of sequence (mlx5 "
          "out_of_sequence, mana responder_oos, rxe out_of_seq_request): a loss upstream in a "
          "lossless fabric.", "packets", health=True),
    _rdma("nic_rdma_packet_seq_errors_total", "Sequence error NAKs received (mlx5 "
          "packet_seq_err, bnxt_re packet_seq_err/seq_err_naks_rcvd, mana requester_oos_nak, "
          "rxe rcvd_seq_err): the responder saw a gap and asked for a resend.", health=True),
    _rdma("nic_rdma_implied_nak_seq_errors_total", "Implied NAKs: the requester saw a response "
          "with a later PSN than expected (mlx5 implied_nak_seq_err, bnxt_re missing_resp, "
          "mana requester_implicit_nak).", health=True),
    _rdma("nic_rdma_local_ack_timeout_errors_total", "Times a QP's ack timer expired and it "
          "retransmitted, its retry limit not yet exceeded (mlx5 local_ack_timeout_err, "
          "bnxt_re to_retransmits).", health=True),
    _rdma("nic_rdma_rnr_nak_retry_errors_total", "RNR NAKs received: the responder had no "
          "receive WQE posted and the requester had to retry, its retry limit not exceeded "
          "(mlx5 rnr_nak_retry_err, bnxt_re rnr_naks_rcvd, mana requester_rnr_nak, rxe "
          "rcvd_rnr_err). QPs that ran out of retries: "
          "nic_rdma_req_rnr_retries_exceeded_total.", health=True),
    _rdma("nic_rdma_duplicate_requests_total", "Requests received that had been executed "
          "before (the requester retransmitted): mlx5/bnxt_re/rxe duplicate_request, mana "
          "responder_dup_request.", health=True),
    _rdma("nic_rdma_out_of_buffer_drops_total", "Packets dropped for lack of a posted receive "
          "WQE (mlx5 out_of_buffer, a 32-bit Q counter; bnxt_re rx_out_of_buffer): the RDMA "
          "consumer did not post receive buffers fast enough.", "packets", health=True),
    _rdma("nic_rdma_icrc_errors_total", "RoCE packets received with a bad ICRC (mlx5 "
          "rx_icrc_encapsulated).", "packets", health=True),
    _rdma("nic_rdma_req_cqe_errors_total", "Requester completions with an error (mlx5 "
          "req_cqe_error).", health=True),
    _rdma("nic_rdma_req_cqe_flush_errors_total", "Requester completions flushed with error "
          "(mlx5 req_cqe_flush_error): work requests of a QP that went to the error state.",
          health=True),
    _rdma("nic_rdma_resp_cqe_errors_total", "Responder completions with an error (mlx5 "
          "resp_cqe_error).", health=True),
    _rdma("nic_rdma_resp_cqe_flush_errors_total", "Responder completions flushed with error "
          "(mlx5 resp_cqe_flush_error).", health=True),
    _rdma("nic_rdma_req_remote_access_errors_total", "Remote access errors the requester "
          "detected (mlx5 req_remote_access_errors, bnxt_re remote_access_err).", health=True),
    _rdma("nic_rdma_req_remote_invalid_requests_total", "Remote invalid request errors the "
          "requester detected (mlx5 req_remote_invalid_request).", health=True),
    _rdma("nic_rdma_resp_local_length_errors_total", "Local length errors the responder "
          "detected (mlx5 resp_local_length_error, bnxt_re res_length_mismatch).", health=True),
    _rdma("nic_rdma_resp_remote_access_errors_total", "Remote access errors the responder "
          "detected (mlx5 resp_remote_access_errors).", health=True),
    _rdma("nic_rdma_req_transport_retries_exceeded_total", "Times a requester QP exceeded its "
          "transport retries and failed (mlx5 req_transport_retries_exceeded 6.9+, bnxt_re "
          "max_retry_exceeded, rxe retry_exceeded_err).", health=True),
    _rdma("nic_rdma_req_rnr_retries_exceeded_total", "Times a requester QP exceeded its RNR "
          "NAK retries and failed (mlx5 req_rnr_retries_exceeded 6.9+, rxe "
          "retry_rnr_exceeded_err).", health=True),
    _rdma("nic_rdma_adaptive_retransmissions_total", "Adaptive retransmissions of RoCE "
          "traffic (mlx5 roce_adp_retrans).", health=True),
    _rdma("nic_rdma_adaptive_retransmission_timeouts_total", "Times RoCE traffic reached a "
          "timeout under adaptive retransmission (mlx5 roce_adp_retrans_to).", health=True),
    _rdma("nic_rdma_slow_restarts_total", "Times RoCE slow restart was used (mlx5 "
          "roce_slow_restart)."),
    _rdma("nic_rdma_slow_restart_cnps_total", "CNPs RoCE slow restart generated (mlx5 "
          "roce_slow_restart_cnps).", "packets"),
    _rdma("nic_rdma_slow_restart_transitions_total", "Times RoCE slow restart changed state "
          "to slow restart (mlx5 roce_slow_restart_trans)."),
    _rdma("nic_rdma_rx_read_requests_total", "RDMA READ requests received (mlx5 "
          "rx_read_requests, irdma InRdmaReads, mana rx_read_req).", "requests"),
    _rdma("nic_rdma_rx_write_requests_total", "RDMA WRITE requests received (mlx5 "
          "rx_write_requests, irdma InRdmaWrites, mana rx_write_req).", "requests"),
    _rdma("nic_rdma_rx_atomic_requests_total", "ATOMIC requests received (mlx5 "
          "rx_atomic_requests).", "requests"),
    _rdma("nic_rdma_rx_dct_connects_total", "Connection requests received for the port's DCTs "
          "(mlx5 rx_dct_connect).", "requests"),
    _rdma("nic_rdma_rx_ce_packets_total", "RoCE packets received with ECN CE, counted by an "
          "mlx5 steering flow counter (optional counter cc_rx_ce_pkts, RDMA netlink only, "
          "present once an operator enabled it: docs/rdma.md).", "packets"),
    _rdma("nic_rdma_rx_cnp_packets_total", "CNPs received, mlx5 flow counter (optional "
          "counter cc_rx_cnp_pkts).", "packets"),
    _rdma("nic_rdma_tx_cnp_packets_total", "CNPs sent, mlx5 flow counter (optional counter "
          "cc_tx_cnp_pkts).", "packets"),
    _rdma("nic_rdma_flow_rx_bytes_total", "RDMA bytes received on the link, mlx5 RDMA RX "
          "steering flow counter (optional counter rdma_rx_bytes); not the PortCounters.",
          "bytes"),
    _rdma("nic_rdma_flow_tx_bytes_total", "RDMA bytes sent on the link, mlx5 RDMA TX steering "
          "flow counter (optional counter rdma_tx_bytes).", "bytes"),
    _rdma("nic_rdma_flow_rx_packets_total", "RDMA packets received, mlx5 flow counter "
          "(optional counter rdma_rx_packets).", "packets"),
    _rdma("nic_rdma_flow_tx_packets_total", "RDMA packets sent, mlx5 flow counter (optional "
          "counter rdma_tx_packets).", "packets"),
)
RDMA_RAW_COUNTER = _counter(
    "nic_rdma_hw_stat_total", "A hardware counter of an RDMA port that no canonical family "
    "has the meaning of on its driver, by the driver's name (counter); PortCounters files "
    "nicwatch does not know as counter=\"counters/<name>\".", ("counter", *RDMA))
RDMA_GAUGES: tuple[Family, ...] = (
    _gauge("nic_module_info", "Identity of the pluggable module in this port; value 1. "
           "identifier: module type as SFF-8024 names its identifier byte (SFP, QSFP+, QSFP28, "
           "QSFP-DD, OSFP, ...); spec: the memory map decoded (SFF-8472, SFF-8636, CMIS <rev> "
           "from CMIS byte 1); vendor, part, serial, revision: the ASCII vendor fields (SFF-8472 "
           "A0h bytes 20-35, 40-55, 56-59, 68-83; SFF-8636 and CMIS page 00h); firmware: the "
           "module firmware version (CMIS lower memory bytes 39-40, \"\" where the map has none).",
           labels=("identifier", "spec", "vendor", "part", "serial", "revision", "firmware")),
    _gauge("nic_module_firmware_info", "A firmware image of a CMIS module; value 1. image: "
           "active (the image running: lower memory bytes 39-40, CMIS 5.2 8.15) or inactive "
           "(the other image of a module with two: page 01h bytes 128-129, CMIS 5.2 8.3.7; "
           "the image a module firmware update writes, run after the module switches "
           "images); version: major.minor. The factory (boot) image's version is only "
           "available through a CDB command (a write to the module), which nicwatch never "
           "sends. Absent for SFF-8636 and SFF-8472 modules and where the page fails its "
           "checksum.", labels=("image", "version")),
    _gauge("nic_module_temperature_celsius", "Module internal temperature as the module "
           "measures it (signed, 1/256 C per bit: SFF-8472 A2h bytes 96-97, SFF-8636 bytes "
           "22-23, CMIS bytes 14-15); SFF-8472 externally calibrated modules are corrected with "
           "their slope and offset.", unit="celsius"),
    _gauge("nic_module_supply_voltage_volts", "Module internal supply voltage (Vcc) as the "
           "module measures it (100 uV per bit: SFF-8472 A2h bytes 98-99, SFF-8636 bytes "
           "26-27, CMIS bytes 16-17).", unit="volts"),
    _gauge("nic_module_rx_power_watts", "Received optical power of this lane (module-measured, "
           "0.1 uW per bit; SFF-8472 A2h bytes 104-105, with the external-calibration "
           "polynomial when A0h byte 92 bit 4 is set; SFF-8636 bytes 34-41; CMIS page 11h "
           "bytes 186-201). type: what the module measures, average (average power) or oma "
           "(optical modulation amplitude; SFF-8472 A0h byte 92 bit 3, SFF-8636 byte 220 bit "
           "3, CMIS page 01h byte 151 bit 4): the two differ by 1-3 dB, so compare rx power "
           "only within one type. 0 W is a dark receiver (a CMIS lane whose data path is not "
           "activated has no value here: see nic_module_data_path_state). lane counts from 1 "
           "(SFP: 1).", labels=("lane", "type"), unit="watts"),
    _gauge("nic_module_tx_power_watts", "Transmitted optical power of this lane "
           "(module-measured, 0.1 uW per bit; SFF-8472 A2h bytes 102-103, SFF-8636 bytes 50-57, "
           "CMIS page 11h bytes 154-169).", labels=("lane",), unit="watts"),
    _gauge("nic_module_tx_bias_amperes", "Laser bias current of this lane (module-measured, "
           "2 uA per bit; SFF-8472 A2h bytes 100-101, SFF-8636 bytes 42-49, CMIS page 11h bytes "
           "170-185 times the multiplier of page 01h byte 160).", labels=("lane",),
           unit="amperes"),
    _gauge("nic_module_temperature_threshold_celsius", "The module's own temperature alarm "
           "and warning thresholds (level: high_alarm, high_warning, low_warning, low_alarm), "
           "from its EEPROM: SFF-8472 A2h bytes 0-7, SFF-8636 page 03h bytes 128-135, CMIS "
           "page 02h bytes 128-135.", labels=_MODULE_LEVEL, unit="celsius"),
    _gauge("nic_module_supply_voltage_threshold_volts", "The module's own supply voltage "
           "alarm and warning thresholds by level (SFF-8472 A2h bytes 8-15, SFF-8636 page 03h "
           "bytes 144-151, CMIS page 02h bytes 136-143).", labels=_MODULE_LEVEL, unit="volts"),
    _gauge("nic_module_rx_power_threshold_watts", "The module's own rx power alarm and "
           "warning thresholds by level, for every lane alike (SFF-8472 A2h bytes 32-39, "
           "SFF-8636 page 03h bytes 176-183, CMIS page 02h bytes 192-199); type as on "
           "nic_module_rx_power_watts.", labels=("level", "type"), unit="watts"),
    _gauge("nic_module_tx_power_threshold_watts", "The module's own tx power alarm and "
           "warning thresholds by level (SFF-8472 A2h bytes 24-31, SFF-8636 page 03h bytes "
           "192-199, CMIS page 02h bytes 176-183).", labels=_MODULE_LEVEL, unit="watts"),
    _gauge("nic_module_tx_bias_threshold_amperes", "The module's own laser bias alarm and "
           "warning thresholds by level (SFF-8472 A2h bytes 16-23, SFF-8636 page 03h bytes "
           "184-191, CMIS page 02h bytes 184-191 times the page 01h bias multiplier).",
           labels=_MODULE_LEVEL, unit="amperes"),
    _gauge("nic_module_flags_set", "How many of the flags the module implements "
           "(nic_module_flag) are set in the last read: 0 when none is; absent when no flag "
           "was read. Below --collector.detail=full, nic_module_flag shows the set flags only "
           "(docs/metrics.md, Detail tiers).", unit=""),
    _gauge("nic_module_flag", "A flag the module itself raises: 1 set, 0 clear (below "
           "--collector.detail=full only the set flags are served: nic_module_flags_set counts "
           "them). quantity: "
           "temperature, supply_voltage, rx_power, tx_power, tx_bias (level high_alarm, "
           "high_warning, low_warning, low_alarm), rx_los, tx_los, tx_fault, rx_cdr_lol, "
           "tx_cdr_lol, tx_adaptive_eq_fault (level \"state\"), and the CMIS VDM observables' "
           "flags (page 2Ch: vdm_esnr_<side>, vdm_pre_fec_ber_<side>_current, "
           "vdm_errored_frames_<side>_current, vdm_laser_temperature; the four levels); lane "
           "\"\" for module-wide flags. "
           "From SFF-8472 A2h bytes 110 and 112-117, SFF-8636 bytes 3-14, CMIS lower memory "
           "byte 9 and page 11h bytes 135-152; present only where the module says it "
           "implements the flag. SFF-8636 and CMIS latch these flags until read, so a set "
           "flag may come from an event since the previous read.",
           labels=("quantity", "level", "lane")),
    _gauge("nic_module_checksum_valid", "1 when a checksum byte of the module EEPROM matches "
           "the bytes it covers (the low 8 bits of their sum), 0 when it does not: the read "
           "returned bytes other than the module's (an I2C error, a driver placing a page at "
           "the wrong offset) or the vendor programmed a wrong one. checksum: cc_base, cc_ext "
           "(SFF-8472 A0h bytes 63 and 95; SFF-8636 page 00h bytes 191 and 223), cc_dmi "
           "(SFF-8472 A2h byte 95), page_00h, page_01h, page_02h (CMIS bytes 222, 255, 255). "
           "Present for each checksum whose bytes were read. Nothing from a failing page is "
           "exported, and nic_module_read_state reads corrupt.", labels=("checksum",)),
    _gauge("nic_module_value_implausible", "1 for a module value that was decoded outside "
           "what the map's units can express (temperature below -128 or at/above 128 C, a "
           "negative or above-6.55 V supply, negative or above-6.55 mW power, negative "
           "bias): only SFF-8472 external calibration constants can compute one. The value "
           "itself is not exported. quantity: temperature, supply_voltage, tx_bias, tx_power, "
           "rx_power; lane as on the monitors; level \"\" for the measurement, else the "
           "threshold level.", labels=("quantity", "lane", "level")),
    _gauge("nic_module_state", "1 for the CMIS module state (lower memory byte 3 bits 3-1), 0 "
           "for the others: low_power (ModuleLowPwr: the host keeps it in low power, or the "
           "power mode policy is auto and the port is down; every data path is deactivated), "
           "power_up, ready, power_down, fault (ModuleFault), unknown (a reserved code). CMIS "
           "modules only.", labels=("state",)),
    _gauge("nic_module_data_path_state", "The CMIS data path state of this media lane (page "
           "11h bytes 128-131, a nibble per lane), value 1, one series per lane labelled with "
           "its state: deactivated, init, deinit, activated, tx_turn_on, tx_turn_off, "
           "initialized, unknown. Only an activated lane carries data; the others have no "
           "rx/tx power, bias or flags (their 0 W is the state, not a dark fiber).",
           labels=("lane", "state")),
    _gauge("nic_module_power_mode_policy", "The module power mode policy the driver reports "
           "(ethtool netlink MODULE_GET, kernel 5.16+; ETHTOOL_A_MODULE_POWER_MODE_POLICY): "
           "value 1, policy high (always high power) or auto (the host moves the module "
           "to high power when the port is up). Absent where the driver does not report it "
           "(most NIC drivers; mlxsw does).", labels=("policy",)),
    _gauge("nic_module_power_mode", "The module's operational power mode the driver reports "
           "(MODULE_GET, ETHTOOL_A_MODULE_POWER_MODE): value 1, mode low or high. A module "
           "in low power does not pass traffic. Absent where the driver does not report it.",
           labels=("mode",)),
    # The module collector's own state (nicwatch.sources.ethtool_module): present for every
    # polled interface once --collector.module read it, so absence is visible.
    _gauge("nic_module_read_timestamp_seconds", "When the module EEPROM behind this "
           "interface's nic_module_* values was read (Unix time): they are read on their own "
           "cadence (--collector.module.interval), and after a failed read the last good values "
           "stay, so time() minus this is their age.", unit="seconds"),
    _gauge("nic_module_read_state", "1 for the state of the last module EEPROM read of this "
           "interface, 0 for the others: ok; unsupported (the driver or kernel has no module "
           "access, EOPNOTSUPP); absent (no module answers, ENODEV or EIO: an empty cage); "
           "not_permitted (EPERM: nicwatch lacks CAP_NET_ADMIN); busy (EBUSY: the kernel refuses "
           "module reads while it flashes the module's firmware, ethtool "
           "--flash-module-firmware; the last good values stay); failed (any other error, see "
           "nic_module_read_errors_total); corrupt (the read succeeded but a checksum of the "
           "EEPROM fails: nic_module_checksum_valid names it).", labels=("state",)),
)

ASIC_TEMPERATURE = _gauge(
    "nic_asic_temperature_celsius", "Temperature of a sensor of the NIC chip as its driver's "
    "hwmon device reports it (tempN_input, millidegrees in sysfs). sensor: tempN_label where "
    "the driver names its sensors (mlx5: the firmware's name, \"asic\", and \"Module<n>\" for "
    "the module in the cage, the same reading as nic_module_temperature_celsius), else "
    "tempN (bnxt_en, ice: temp1, the chip). Absent when the driver registers no hwmon "
    "device or the read failed.", labels=("sensor",), unit="celsius")
ASIC_TEMPERATURE_THRESHOLD = _gauge(
    "nic_asic_temperature_threshold_celsius", "A temperature threshold of a NIC sensor as "
    "its driver reports it. level: warning (tempN_max: bnxt_en, ice), critical (tempN_crit: "
    "mlx5 MTMP temp_threshold_hi, bnxt_en and ice firmware critical threshold), emergency "
    "(tempN_emergency: bnxt_en and ice fatal threshold), shutdown (bnxt_en temp1_shutdown, "
    "when set in NVM). Only the levels the driver reports.", labels=("sensor", "level"),
    unit="celsius")
FIRMWARE_INFO = _gauge(
    "nic_firmware_info", "A firmware or hardware version the devlink instance behind this "
    "interface reports (devlink dev info, DEVLINK_CMD_INFO_GET); value 1. devlink: the "
    "instance (pci/<address>, netdevsim/netdevsim<n>), slot: running (what runs now), "
    "stored (what runs after activation: the flashed image) or fixed (hardware identity), "
    "component: the version's name as the driver reports it (fw.version, fw, fw.mgmt, "
    "fw.psid, ...), version: its value. Read every 60 s.",
    labels=("devlink", "slot", "component", "version"))
FIRMWARE_PENDING = _gauge(
    "nic_firmware_activation_pending", "1 when the stored version of this firmware component "
    "differs from the running one: an image was flashed and is not active yet (activate it "
    "with devlink dev reload ... action fw_activate where the driver supports it, else a "
    "cold reboot); 0 when they are equal. Only components with both a running and a stored "
    "version the driver could read (mlx5 reports 0.0.0000 or 255.255.65535 for a version "
    "its firmware query failed to read: not compared).", labels=("devlink", "component"))

GAUGES: tuple[Family, ...] = (
    _gauge("nic_info", "Identity of a network interface; value is always 1.",
           labels=("driver", "driver_version", "firmware_version", "pci_address", "mac",
                   "perm_mac", "rdma_device")),
    _gauge("nic_link_up", "1 when the interface operstate is up, else 0."),
    _gauge("nic_carrier", "1 when the interface has carrier, 0 when not."),
    _gauge("nic_mtu_bytes", "Interface MTU.", unit="bytes"),
    _gauge("nic_link_speed_bytes_per_second", "Negotiated link speed (line rate).",
           unit="bytes_per_second"),
    _gauge("nic_link_full_duplex", "1 for full duplex, 0 for half duplex."),
    _gauge("nic_ring_descriptors", "Configured descriptor ring size.", labels=("ring",)),
    _gauge("nic_ring_max_descriptors", "Largest descriptor ring size the driver allows.",
           labels=("ring",)),
    _gauge("nic_channels", "Configured channel (queue) count by type.", labels=("type",)),
    _gauge("nic_channels_max", "Largest channel count the driver allows by type.",
           labels=("type",)),
    _gauge("nic_pause_autoneg", "1 when 802.3x PAUSE is autonegotiated."),
    _gauge("nic_pfc_enabled", "1 when IEEE 802.1Qbb PFC is enabled for this priority, 0 when "
           "not (dcbnl pfc_en); absent when the driver has no DCB support.",
           labels=("priority",)),
    # RoCE QoS profile: dcbnl IEEE_GET (read every poll with PFC), the vendor mlx5 ecn/
    # sysfs tree and the RDMA ToS settings (read on the PCIe cadence). Absent where the
    # driver does not expose them (docs/roce-qos.md).
    _gauge("nic_qos_trust_info", "Which packet field selects the priority of received "
           "traffic; value 1. trust is dscp, pcp or none (an app-trust table with no "
           "selector: neither is trusted). source says where it was read, the first that "
           "has it: dcbnl_apptrust (the first selector of the dcbnl app-trust table, Linux "
           "6.3+ drivers with dcbnl_getapptrust), mlx5_sysfs (the vendor mlx5 "
           "/sys/class/net/<if>/qos/trust file that mlnx_qos reads), dcbnl_app_table (dscp "
           "when the DCB application table has DSCP entries, how upstream mlx5 and ice "
           "switch to DSCP trust, else pcp). Absent without DCB support and without the "
           "vendor file.", labels=("trust", "source")),
    _gauge("nic_qos_dscp_priority", "Priority that traffic with this DSCP gets, from the DCB "
           "application table (DSCP selector; dcb app show); only mapped DSCP values appear.",
           labels=("dscp",)),
    _gauge("nic_ets_priority_tc", "Traffic class that this priority is mapped to (dcbnl IEEE "
           "ETS prio_tc).", labels=("priority",)),
    _gauge("nic_ets_tc_bandwidth_ratio", "Share of the bandwidth ETS gives this traffic class "
           "(dcbnl IEEE ETS tc_tx_bw, percent / 100); meaningful for tsa=\"ets\".",
           labels=("tc",), unit="ratio"),
    _gauge("nic_ets_tc_tsa_info", "Transmission selection algorithm of this traffic class "
           "(dcbnl IEEE ETS tc_tsa: strict, cbs, ets, vendor); value 1.", labels=("tc", "tsa")),
    _gauge("nic_roce_ecn_enabled", "1 when RoCE ECN (DCQCN) is enabled for this priority at "
           "this point (rp: reaction point, slows the sender on CNPs; np: notification point, "
           "sends CNPs for ECN-marked packets), 0 when not; vendor mlx5 driver's "
           "ecn/roce_<point>/enable/<priority>, absent elsewhere.",
           labels=("point", "priority")),
    _gauge("nic_roce_cnp_dscp", "DSCP of the congestion notification packets this port "
           "sends (vendor mlx5 ecn/roce_np/cnp_dscp)."),
    _gauge("nic_roce_cnp_priority", "802.1p priority of the congestion notification packets "
           "this port sends (vendor mlx5 ecn/roce_np/cnp_802p_prio)."),
    _gauge("nic_pause_enabled", "1 when 802.3x PAUSE is enabled in this direction.",
           labels=("direction",)),
    _gauge("nic_fec_mode_info", "FEC configuration; value 1. configured lists the allowed "
           "modes (comma-separated), active the mode in use.", labels=("configured", "active")),
    _gauge("nic_link_lanes", "Serdes lanes the link runs on (ethtool netlink LINKMODES_GET "
           "ETHTOOL_A_LINKMODES_LANES, 5.11); absent while the driver does not say."),
    _gauge("nic_link_down_reason", "Why the link is down, as the driver reports it (ethtool "
           "netlink LINKSTATE_GET extended state and substate, 5.9: reason autoneg, "
           "link_training_failure, link_logical_mismatch, bad_signal_integrity, no_cable, "
           "cable_issue, eeprom_issue, calibration_failure, power_budget_exceeded, overheat, "
           "module; subreason e.g. serdes_alos, or \"\"); value 1, present only while the "
           "link is down and the driver gives a reason.", labels=("reason", "subreason")),
    _gauge("nic_numa_node", "NUMA node of the NIC's PCI function."),
    _gauge("nic_irq_info", "One interrupt of the NIC's device; value 1. queue: the receive "
           "queue (channel) it serves, from the kernel's NAPI records or the driver's name for "
           "it (\"\" for the device's own: async events, misc); kind: rxtx, rx, tx or other; "
           "affinity: /proc/irq/<irq>/smp_affinity_list, effective: effective_affinity_list "
           "(where it is delivered; \"\" when the kernel does not say), node: the NUMA node of "
           "those CPUs when they are all on one (\"\" otherwise).",
           labels=("irq", "queue", "kind", "affinity", "effective", "node")),
    _gauge("nic_irqs", "The NIC's queue interrupts by placement: local (delivered to CPUs on "
           "the NIC's NUMA node), remote (to CPUs of another node: every packet crosses the "
           "interconnect), unknown (CPUs on several nodes, or no node known).",
           labels=("placement",)),
    _gauge("nic_rx_queue_rps_info", "Receive packet steering of this receive queue; value 1. "
           "cpus: the CPUs of its queues/rx-<queue>/rps_cpus mask, which process its packets "
           "after the interrupt. Absent for queues without RPS.", labels=("queue", "cpus")),
    _gauge("nic_pcie_link_speed_gts", "PCIe link speed in GT/s of each device on the NIC's "
           "path (hop=\"0\" the NIC function, then each upstream port to the root port); "
           "kind=current is the trained speed, kind=max the device's capability.",
           labels=("hop", "pci_address", "kind")),
    _gauge("nic_pcie_link_width", "PCIe link width in lanes of each device on the NIC's path; "
           "kind=current trained, kind=max capability.", labels=("hop", "pci_address", "kind")),
    _gauge("nic_pcie_bandwidth_ceiling_bytes_per_second", "Usable PCIe bandwidth of the "
           "narrowest link on the NIC's path, per direction, after line encoding (as the "
           "kernel's pcie_bandwidth_available); TLP overhead takes another 5-15%."),
    _gauge("nic_pcie_shared_line_rate_bytes_per_second", "Sum of the line rates of all "
           "netdevs sharing this NIC's PCIe link (ports of one card share one link)."),
    _gauge("nic_pcie_degraded", "1 when the NIC's PCIe path is degraded for this reason: "
           "width or speed (a link on the path, the NIC's own or a switch uplink, trained "
           "below what both of its ends support), ceiling_below_line_rate (the path cannot "
           "carry the line rate of the physical ports sharing it); 0 otherwise.",
           labels=("reason",)),
    _gauge("nic_pcie_verdict_unknown", "1 when the NIC's PCIe path cannot be judged for this "
           "reason: link_state (the NIC's own link reads Unknown or 0 lanes: link down or in "
           "recovery, function in D3cold), no_own_link (all its link attributes read 0 or "
           "Unknown: a virtual function seen from a guest, whose PF's link is out of sight, "
           "or a function without link registers, max_link_width 255), "
           "upstream_link_state (a port above it does; the "
           "ceiling is only an upper bound), hidden_link_partner (trained below the card's "
           "maximum behind an emulated port or none: in a VM a fault cannot be told from a "
           "narrow host slot); 0 otherwise.", labels=("reason",)),
    _gauge("nic_pcie_emulated_ports", "Ports on the NIC's PCIe path that a hypervisor "
           "emulates (QEMU, VMware ids): their link values are invented, so the ceiling and "
           "the verdict leave them out. Above 0 inside a VM with a passthrough NIC."),
    _gauge("nic_pcie_slot_limited", "1 when the slot (the parent port) supports less than "
           "the card's capability in this respect (width or speed): a platform limit, not a "
           "training fault.", labels=("limit",)),
    _gauge("nic_sriov_vfs", "SR-IOV VFs of this PF: state=enabled (sysfs sriov_numvfs), "
           "total (sriov_totalvfs, the most the device allows), reported (VFs the PF's link "
           "reply described this poll, as ip -d link lists them), no_counters (reported VFs "
           "without counters: the driver has no VF statistics, so the kernel sends zeros, "
           "which are not exported, or the reply carried none), unreadable (enabled VFs the "
           "reply left out, as the kernel does when the driver cannot describe a VF, or whose "
           "counters the kernel zero-filled after the driver's read failed). reported, "
           "no_counters and unreadable only when the link reply was read. Representors "
           "(switchdev) carry none: their PF does. Opt-in (--collector.vfs).",
           labels=("state",)),
    _gauge("nic_vf_info", "One SR-IOV VF of this PF as the PF enforces it; value 1. mac: "
           "administrative MAC (empty: none set), vlan: port VLAN (0: none), link_state: "
           "auto, enable or disable, spoofchk and trust: on, off or empty when the driver "
           "does not report them. Opt-in (--collector.vfs).",
           labels=("vf", "mac", "vlan", "link_state", "spoofchk", "trust")),
    _gauge("nic_stat_supported", "1 when this interface provides the canonical counter "
           "family, 0 when it does not (absent is not zero).", labels=("counter",)),
    _gauge("nic_devlink_health_reporter_state", "1 for the state this devlink health "
           "reporter is in, 0 for the others: healthy, error (an error was reported and "
           "nothing has marked the reporter healthy since: for a reporter with a recover "
           "operation, recovery did not run or failed, e.g. auto-recovery off or a second "
           "error within the grace period; for one without, until the driver clears it, "
           "ice after a reset), unknown (a state value the kernel did not define).",
           labels=(*DEVLINK_HEALTH, "state")),
    _gauge("nic_devlink_health_last_dump_timestamp_seconds", "Wall-clock time of the dump this "
           "devlink health reporter holds (taken at an error; devlink keeps one until it is "
           "cleared); absent while none is stored.", labels=DEVLINK_HEALTH, unit="seconds"),
    _gauge("nic_devlink_health_auto_recover", "1 when this devlink health reporter recovers "
           "by itself after an error, 0 when an operator must (devlink health recover); absent "
           "for a reporter without a recover operation.", labels=DEVLINK_HEALTH),
    _gauge("nic_devlink_health_recoverable", "1 when this devlink health reporter has a "
           "recover operation (the kernel sends its grace period and auto-recover setting): "
           "devlink recovers it, automatically or on `devlink health recover`; 0 when it has "
           "none (mlx5 fw and vnic, every ice reporter): devlink health recover answers "
           "EOPNOTSUPP, its recovery count stays 0 and its state is healthy again only when "
           "the driver sets it.", labels=DEVLINK_HEALTH),
    _gauge("nic_bond_info", "This interface is a member of a Linux bond; value 1. bond: the "
           "bond (its master), mode: the bond's mode as bonding/mode names it (active-backup, "
           "802.3ad, balance-xor, ...). The bond itself is not polled by default (it has no "
           "device), so its counters, the sum of its members', are not counted twice.",
           labels=("bond", "mode")),
    _gauge("nic_bond_member_active", "1 when the bonding driver has this member active "
           "(bonding_slave/state: in active-backup the one that carries the traffic), 0 "
           "when it is a backup.", labels=("bond",)),
    _gauge("nic_devlink_port_info", "The devlink port whose netdev this interface is; value "
           "1. flavour: physical, pci_pf, pci_vf, pci_sf, virtual, ...; number: the physical "
           "port number (\"\" for other flavours); split_subport: the subport of a split port "
           "(\"\" when not split).",
           labels=("devlink", "devlink_port", "flavour", "number", "split_subport")),
    # NIC ASIC temperature (hwmon under the PCI function: mlx5, bnxt_en, ice).
    ASIC_TEMPERATURE,
    _gauge("nic_asic_temperature_highest_celsius", "Highest temperature this NIC sensor has "
           "read since its history was reset (mlx5 tempN_highest: the firmware's MTMP "
           "max_temperature, kept across driver reloads until reset); absent for drivers "
           "without it (bnxt_en, ice).", labels=("sensor",), unit="celsius"),
    ASIC_TEMPERATURE_THRESHOLD,
    _gauge("nic_asic_hwmon_info", "The hwmon device that reports this interface's NIC chip; "
           "value 1. hwmon: its directory (hwmonN: the number changes across reboots and "
           "driver reloads), name: its name file (mlx5, bnxt_en, ice), pci_address: the PCI "
           "function it is registered under (for ice's second and later PFs, PF 0 of the "
           "same device: the same chip).", labels=("hwmon", "name", "pci_address")),
    # Firmware versions (devlink dev info).
    FIRMWARE_INFO,
    FIRMWARE_PENDING,
    *MODULE_GAUGES,
    *MODULE_VDM_GAUGES,
)

# The other end of each link (--collector.lldp; docs/fabric.md): LLDP neighbours received
# passively, their IEEE 802.1Qaz DCBX and the dcbnl peer attributes, and this port's own
# identity as an LLDP agent announces it, so that recording rules join both ends.
LLDP_NEIGHBOR = ("chassis_id", "port_id")
FABRIC_FAMILIES: tuple[Family, ...] = (
    _counter("nic_lldp_frames_total", "LLDPDUs received on this port and parsed "
             "(--collector.lldp), malformed ones included.", unit="frames"),
    _counter("nic_lldp_malformed_frames_total", "LLDPDUs received on this port that do not "
             "decode (a TLV past the frame, the mandatory TLVs missing or out of order, a "
             "DCBX TLV of the wrong length); each is logged at debug level.", unit="frames"),
    _counter("nic_lldp_dropped_frames_total", "LLDP frames on this port not parsed: over the "
             "per-port rate limit (5 a second, bursts of 10: the kernel drops them from the "
             "socket's 64 KiB buffer) or from a new neighbour past the 8 a port keeps.",
             unit="frames"),
    _gauge("nic_lldp_receive_state", "1 for the state of this port's LLDP receiver, 0 for "
           "the others: ok (listening); starting (the receiver's thread has not opened the "
           "port's socket yet: the first poll or two); not_permitted (no CAP_NET_RAW, no "
           "packet socket); firmware_agent (the NIC firmware runs its own LLDP agent and "
           "takes the frames: i40e/ice fw-lldp-agent on, mlx5 DCBX in firmware mode, from "
           "dcbnl GDCBX); failed (the socket could not be opened or bound).",
           labels=("state",)),
    _gauge("nic_lldp_neighbor_info", "The LLDP neighbour of this port, from its last LLDPDU; "
           "value 1, gone when its TTL runs out. chassis_id/port_id as the subtypes render "
           "them (mac: aa:bb:cc:dd:ee:ff; network_address: the address; names as text; others "
           "hex); system_name, port_description, management_address \"\" when not sent.",
           labels=(*LLDP_NEIGHBOR, "chassis_id_subtype", "port_id_subtype", "system_name",
                   "port_description", "management_address")),
    _gauge("nic_lldp_neighbor_age_seconds", "Seconds since this neighbour's last LLDPDU "
           "(LLDP agents send every 30 s by default).", labels=LLDP_NEIGHBOR, unit="seconds"),
    _gauge("nic_lldp_neighbor_ttl_seconds", "The time to live this neighbour announced: its "
           "information is dropped this long after its last LLDPDU.", labels=LLDP_NEIGHBOR,
           unit="seconds"),
    _gauge("nic_lldp_local_info", "This port as this host's LLDP agent announces it (not "
           "sent by nicwatch); value 1. chassis_id: --fabric.chassis-id, else the MAC of the "
           "lowest-ifindex port with a device (lldpd's default); port_id: the port's MAC or "
           "its name (--fabric.port-id). A neighbour's nic_lldp_neighbor_info with the same "
           "chassis_id and port_id is the other end of this port's link.",
           labels=LLDP_NEIGHBOR),
    _gauge("nic_lldp_peer_pfc_enabled", "1 when the link peer announces IEEE 802.1Qbb PFC on "
           "this priority, 0 when not. source: lldp (its PFC Configuration TLV, received by "
           "nicwatch) or dcbnl (DCB_ATTR_IEEE_PEER_PFC, what the driver's DCBX agent learned); "
           "lldp when both have it.", labels=("priority", "source")),
    _gauge("nic_lldp_peer_roce_priority", "The priority the link peer's Application Priority "
           "TLV gives RoCE (v2: UDP port 4791; else v1: EtherType 0x8915); absent when it "
           "gives none. source as for nic_lldp_peer_pfc_enabled.", labels=("source",)),
    _gauge("nic_qos_roce_priority", "The priority this port's own DCB application table "
           "gives RoCE (v2: UDP port 4791; else v1: EtherType 0x8915); absent when it gives "
           "none."),
    _gauge("nic_lldp_peer_dcbx_mismatch", "1 when this port and its link peer disagree, 0 "
           "when they agree: setting pfc (the sets of PFC-enabled, lossless, priorities "
           "differ) or roce_priority (the RoCE application priorities differ); absent when "
           "either side does not report the setting.", labels=("setting",)),
)

FAMILIES: dict[str, Family] = {
    f.name: f for f in (*COUNTERS, *PLATFORM_COUNTERS, *QSTATS_COUNTERS, *RXPATH_COUNTERS,
                        RAW_COUNTER, RAW_GAUGE, QUEUE_COUNTER, *GAUGES, *RDMA_COUNTERS,
                        RDMA_RAW_COUNTER, *RDMA_GAUGES, *FABRIC_FAMILIES)
}
CANONICAL_COUNTERS: tuple[str, ...] = tuple(f.name for f in COUNTERS)
# Families that get nicwatch's own *_per_second gauges (with --collector.rates) and, where
# Family.peaked, a *_peak_per_second gauge.
RATED_COUNTERS: tuple[str, ...] = CANONICAL_COUNTERS + tuple(
    f.name for f in (*PLATFORM_COUNTERS, *QSTATS_COUNTERS, *RXPATH_COUNTERS, *RDMA_COUNTERS))


# The canonical families code names outside the rule tables (the state gauges rendered from
# model.NicState, the families consumers, views and snapshots read), each the declaration
# above by name: a family renamed or dropped above fails here, at import.
BOND_INFO = FAMILIES["nic_bond_info"]
BOND_MEMBER_ACTIVE = FAMILIES["nic_bond_member_active"]
CARRIER = FAMILIES["nic_carrier"]
CARRIER_DOWN_EVENTS = FAMILIES["nic_carrier_down_events_total"]
CHANNELS = FAMILIES["nic_channels"]
CHANNELS_MAX = FAMILIES["nic_channels_max"]
DEVLINK_HEALTH_ERRORS = FAMILIES["nic_devlink_health_errors_total"]
DEVLINK_HEALTH_RECOVERABLE = FAMILIES["nic_devlink_health_recoverable"]
DEVLINK_HEALTH_REPORTER_STATE = FAMILIES["nic_devlink_health_reporter_state"]
ETS_PRIORITY_TC = FAMILIES["nic_ets_priority_tc"]
ETS_TC_BANDWIDTH_RATIO = FAMILIES["nic_ets_tc_bandwidth_ratio"]
ETS_TC_TSA_INFO = FAMILIES["nic_ets_tc_tsa_info"]
FEC_MODE_INFO = FAMILIES["nic_fec_mode_info"]
FEC_UNCORRECTABLE_BLOCKS = FAMILIES["nic_fec_uncorrectable_blocks_total"]
INFO = FAMILIES["nic_info"]
IRQS = FAMILIES["nic_irqs"]
LINK_DOWN_EVENTS = FAMILIES["nic_link_down_events_total"]
LINK_DOWN_REASON = FAMILIES["nic_link_down_reason"]
LINK_FULL_DUPLEX = FAMILIES["nic_link_full_duplex"]
LINK_LANES = FAMILIES["nic_link_lanes"]
LINK_SPEED_BYTES_PER_SECOND = FAMILIES["nic_link_speed_bytes_per_second"]
LINK_UP = FAMILIES["nic_link_up"]
MODULE_CHECKSUM_VALID = FAMILIES["nic_module_checksum_valid"]
MODULE_DATA_PATH_STATE = FAMILIES["nic_module_data_path_state"]
MODULE_INFO = FAMILIES["nic_module_info"]
MODULE_POWER_MODE = FAMILIES["nic_module_power_mode"]
MODULE_POWER_MODE_POLICY = FAMILIES["nic_module_power_mode_policy"]
MODULE_READ_ERRORS = FAMILIES["nic_module_read_errors_total"]
MODULE_READ_STATE = FAMILIES["nic_module_read_state"]
MODULE_READ_TIMESTAMP_SECONDS = FAMILIES["nic_module_read_timestamp_seconds"]
MODULE_RX_POWER_THRESHOLD_WATTS = FAMILIES["nic_module_rx_power_threshold_watts"]
MODULE_RX_POWER_WATTS = FAMILIES["nic_module_rx_power_watts"]
MODULE_STATE = FAMILIES["nic_module_state"]
MODULE_TEMPERATURE_CELSIUS = FAMILIES["nic_module_temperature_celsius"]
MODULE_TEMPERATURE_THRESHOLD_CELSIUS = FAMILIES["nic_module_temperature_threshold_celsius"]
MTU_BYTES = FAMILIES["nic_mtu_bytes"]
NUMA_NODE = FAMILIES["nic_numa_node"]
PAUSE_AUTONEG = FAMILIES["nic_pause_autoneg"]
PAUSE_ENABLED = FAMILIES["nic_pause_enabled"]
PAUSE_STORM_EVENTS = FAMILIES["nic_pause_storm_events_total"]
PCIE_AER_ERRORS = FAMILIES["nic_pcie_aer_errors_total"]
PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND = FAMILIES["nic_pcie_bandwidth_ceiling_bytes_per_second"]
PCIE_DEGRADED = FAMILIES["nic_pcie_degraded"]
PCIE_EMULATED_PORTS = FAMILIES["nic_pcie_emulated_ports"]
PCIE_LINK_SPEED_GTS = FAMILIES["nic_pcie_link_speed_gts"]
PCIE_LINK_WIDTH = FAMILIES["nic_pcie_link_width"]
PCIE_SHARED_LINE_RATE_BYTES_PER_SECOND = FAMILIES["nic_pcie_shared_line_rate_bytes_per_second"]
PCIE_SLOT_LIMITED = FAMILIES["nic_pcie_slot_limited"]
PCIE_VERDICT_UNKNOWN = FAMILIES["nic_pcie_verdict_unknown"]
PFC_ENABLED = FAMILIES["nic_pfc_enabled"]
LLDP_FRAMES = FAMILIES["nic_lldp_frames_total"]
LLDP_MALFORMED_FRAMES = FAMILIES["nic_lldp_malformed_frames_total"]
LLDP_DROPPED_FRAMES = FAMILIES["nic_lldp_dropped_frames_total"]
LLDP_RECEIVE_STATE = FAMILIES["nic_lldp_receive_state"]
LLDP_NEIGHBOR_INFO = FAMILIES["nic_lldp_neighbor_info"]
LLDP_NEIGHBOR_AGE_SECONDS = FAMILIES["nic_lldp_neighbor_age_seconds"]
LLDP_NEIGHBOR_TTL_SECONDS = FAMILIES["nic_lldp_neighbor_ttl_seconds"]
LLDP_LOCAL_INFO = FAMILIES["nic_lldp_local_info"]
LLDP_PEER_PFC_ENABLED = FAMILIES["nic_lldp_peer_pfc_enabled"]
LLDP_PEER_ROCE_PRIORITY = FAMILIES["nic_lldp_peer_roce_priority"]
LLDP_PEER_DCBX_MISMATCH = FAMILIES["nic_lldp_peer_dcbx_mismatch"]
QOS_ROCE_PRIORITY = FAMILIES["nic_qos_roce_priority"]
PHY_RX_BYTES = FAMILIES["nic_phy_rx_bytes_total"]
PHY_TX_BYTES = FAMILIES["nic_phy_tx_bytes_total"]
QOS_DSCP_PRIORITY = FAMILIES["nic_qos_dscp_priority"]
QOS_TRUST_INFO = FAMILIES["nic_qos_trust_info"]
RDMA_ACTIVE_MTU_BYTES = FAMILIES["nic_rdma_active_mtu_bytes"]
RDMA_RX_BYTES = FAMILIES["nic_rdma_rx_bytes_total"]
RDMA_TX_BYTES = FAMILIES["nic_rdma_tx_bytes_total"]
RING_DESCRIPTORS = FAMILIES["nic_ring_descriptors"]
RING_MAX_DESCRIPTORS = FAMILIES["nic_ring_max_descriptors"]
ROCE_CNP_DSCP = FAMILIES["nic_roce_cnp_dscp"]
ROCE_CNP_PRIORITY = FAMILIES["nic_roce_cnp_priority"]
ROCE_ECN_ENABLED = FAMILIES["nic_roce_ecn_enabled"]
RX_BYTES = FAMILIES["nic_rx_bytes_total"]
RX_CRC_ERRORS = FAMILIES["nic_rx_crc_errors_total"]
RX_DISCARDS = FAMILIES["nic_rx_discards_total"]
RX_DROPPED = FAMILIES["nic_rx_dropped_total"]
RX_ERRORS = FAMILIES["nic_rx_errors_total"]
RX_OUT_OF_BUFFER_DROPS = FAMILIES["nic_rx_out_of_buffer_drops_total"]
RX_PACKETS = FAMILIES["nic_rx_packets_total"]
RX_PAUSE_CTRL_FRAMES = FAMILIES["nic_rx_pause_ctrl_frames_total"]
RX_PAUSE_DURATION_SECONDS = FAMILIES["nic_rx_pause_duration_seconds_total"]
RX_PAUSE_FRAMES = FAMILIES["nic_rx_pause_frames_total"]
RX_PFC_FRAMES = FAMILIES["nic_rx_pfc_frames_total"]
RX_PFC_TC_FRAMES = FAMILIES["nic_rx_pfc_tc_frames_total"]
RX_CPU_DROPPED = FAMILIES["nic_rx_cpu_dropped_total"]
RX_CPU_TIME_SQUEEZE = FAMILIES["nic_rx_cpu_time_squeeze_total"]
RX_QUEUE_PACKETS = FAMILIES["nic_rx_queue_packets_total"]
SRIOV_VFS = FAMILIES["nic_sriov_vfs"]
STAT_SUPPORTED = FAMILIES["nic_stat_supported"]
TX_BYTES = FAMILIES["nic_tx_bytes_total"]
TX_DISCARDS = FAMILIES["nic_tx_discards_total"]
TX_DROPPED = FAMILIES["nic_tx_dropped_total"]
TX_ERRORS = FAMILIES["nic_tx_errors_total"]
TX_PACKETS = FAMILIES["nic_tx_packets_total"]
TX_PAUSE_CTRL_FRAMES = FAMILIES["nic_tx_pause_ctrl_frames_total"]
TX_PAUSE_DURATION_SECONDS = FAMILIES["nic_tx_pause_duration_seconds_total"]
TX_PAUSE_FRAMES = FAMILIES["nic_tx_pause_frames_total"]
TX_PFC_FRAMES = FAMILIES["nic_tx_pfc_frames_total"]
TX_PFC_TC_FRAMES = FAMILIES["nic_tx_pfc_tc_frames_total"]
VF_RX_DROPPED = FAMILIES["nic_vf_rx_dropped_total"]
VF_TX_DROPPED = FAMILIES["nic_vf_tx_dropped_total"]
MODULE_FLAG = FAMILIES["nic_module_flag"]
MODULE_SUPPLY_VOLTAGE_THRESHOLD_VOLTS = FAMILIES["nic_module_supply_voltage_threshold_volts"]
MODULE_TX_BIAS_THRESHOLD_AMPERES = FAMILIES["nic_module_tx_bias_threshold_amperes"]
MODULE_TX_POWER_THRESHOLD_WATTS = FAMILIES["nic_module_tx_power_threshold_watts"]
MODULE_VALUE_IMPLAUSIBLE = FAMILIES["nic_module_value_implausible"]
MODULE_TX_POWER_WATTS = FAMILIES["nic_module_tx_power_watts"]
MODULE_TX_BIAS_AMPERES = FAMILIES["nic_module_tx_bias_amperes"]


# --------------------------------------------------------------------------- the daemon's own
# Families the tracker, the consumers and the daemon itself export, next to the canonical ones
# above: one contract for everything on /metrics (docs/metrics.md is generated from all of it).
# The *_per_second and *_peak_per_second gauges of RATED_COUNTERS are derived per family (see
# exporter.render).

STAT_RESETS = _counter(
    "nic_stat_resets_total", "Counter resets nicwatch detected per interface: a counter went "
    "backwards (counter_decrease), the driver's statistic set changed (stat_set_changed), or "
    "the interface was replaced under the same name (interface_replaced), or an SR-IOV VF's "
    "counters went backwards (vf_counter_decrease: the VF was re-created; not taken as a "
    "reset of the PF's own counters).", labels=("reason",))
STAT_WRAP_SAFE_INTERVAL = _gauge(
    "nic_stat_wrap_safe_interval_seconds", "Longest time between two polls in which no 32-bit "
    "hardware counter of this interface can move by 2^32 at its line rate (packet-like counters "
    "at 64-byte frames: 7.2 s at 400 Gb/s, 3.6 s at 800 Gb/s). Poll at least this often or a "
    "counter may wrap more than once unseen. Absent without 32-bit counters or a known link "
    "speed.", unit="seconds")
STAT_WRAP_AMBIGUOUS = _gauge(
    "nic_stat_wrap_ambiguous", "1 when the time since the last poll exceeded "
    "nic_stat_wrap_safe_interval_seconds: a 32-bit counter of this interface may have wrapped "
    "more than once unseen, so its value can be short by multiples of 2^32; 0 otherwise.")
TRACKER_FAMILIES: tuple[Family, ...] = (STAT_RESETS, STAT_WRAP_SAFE_INTERVAL, STAT_WRAP_AMBIGUOUS)

# consumers
EXPECTATION_VIOLATION = Family(
    "nic_expectation_violation", "gauge",
    "An expectation from the configuration that this interface does not meet (nicwatch "
    "check): check names the property, expected and actual its values (actual=\"absent\" "
    "when the driver does not report it); value 1, present only while violated.",
    ("check", "expected", "actual"))
EXPECTATION_CHECKS = Family(
    "nicwatch_expectation_checks", "gauge",
    "Expectation checks evaluated in the last poll, by result (pass, fail); present whenever "
    "expectations are configured, so 0 and 0 means they selected no interface.",
    ("result",))
IDENTITY_CHANGES = _counter(
    "nic_identity_changes_total", "Times this NIC (by permanent MAC) was seen at a different "
    "PCI address or interface name than the state file recorded, across daemon restarts and "
    "reboots.", labels=("kind",))
SOFTIRQ_RATIO = _gauge(
    "nic_local_cpu_softirq_ratio", "Share of time the CPUs local to this NIC (its PCI "
    "function's local_cpulist) spent in softirq between the last two polls: stat=max is the "
    "busiest such CPU, stat=mean their average. A max near 1 means the core serving receive "
    "work is saturated.", labels=("stat",), unit="ratio")
RX_CPU_SQUEEZED_SOFTIRQ = _gauge(
    "nic_rx_cpu_squeezed_softirq_ratio", "The highest share of time in softirq, between the "
    "last two polls, of the CPUs serving this NIC whose time_squeeze count rose over the same "
    "polls (nic_rx_cpu_softirq_ratio joined with nic_rx_cpu_time_squeeze_total on cpu, per "
    "poll); 0 when none of them ran out of budget. A value near 1: a serving core is saturated "
    "with receive work and cannot keep up (NicReceiveCpuSaturated).", unit="ratio")
RX_CPUS_SQUEEZED = _gauge(
    "nic_rx_cpus_squeezed", "CPUs serving this NIC whose time_squeeze count rose between the "
    "last two polls (net_rx_action stopped with packets left).")
RX_CPUS_DROPPING = _gauge(
    "nic_rx_cpus_dropping", "CPUs serving this NIC whose backlog dropped packets between the "
    "last two polls (nic_rx_cpu_dropped_total rose: the per-CPU backlog was full).")
IRQ_CPU_SOFTIRQ_RATIO = _gauge(
    "nic_irq_cpu_softirq_ratio", "Share of time the CPUs serving this NIC (its interrupts' "
    "effective affinity and its RPS CPUs) spent in softirq between the last two polls: "
    "stat=max the busiest of them, stat=mean their average.", labels=("stat",), unit="ratio")
RX_CPU_SOFTIRQ_RATIO = _gauge(
    "nic_rx_cpu_softirq_ratio", "Share of time CPU `cpu`, which serves this NIC, spent in "
    "softirq between the last two polls (/proc/stat); join with "
    "nic_rx_cpu_time_squeeze_total on cpu.", labels=("cpu",), unit="ratio")
RX_QUEUE_BUSIEST_SHARE = _gauge(
    "nic_rx_queue_busiest_share", "Share of the NIC's received packets (summed over its "
    "receive queues) that its busiest receive queue took: window=poll between the last two "
    "polls, window=peak the highest poll value within the peak window. Absent below 1000 "
    "packets in a poll (too few to judge a spread).", labels=("window",), unit="ratio")
RX_QUEUE_IMBALANCE = _gauge(
    "nic_rx_queue_imbalance_ratio", "The busiest receive queue's share divided by the fair "
    "share (1 / the receive queues in use: rx or combined channels): 1 is a perfect spread, "
    "N means one queue took all. window as for nic_rx_queue_busiest_share.",
    labels=("window",), unit="ratio")
RX_QUEUE_BUSIEST = _gauge(
    "nic_rx_queue_busiest_info", "The busiest receive queue in the last poll and the CPUs "
    "that served it (its interrupts' effective affinity, else its RPS CPUs; \"\" unknown); "
    "value: its share of the NIC's packets.", labels=("queue", "cpus"), unit="ratio")
RX_CPU_BUSY_QUEUES = _gauge(
    "nic_rx_cpu_busy_queues_max", "The most busy receive queues (each at least half its fair "
    "share of the last poll's packets) whose interrupts one CPU served in the last poll; "
    "above 1, queues the NIC spreads over are stacked on one core.")
IRQ_CPUS = _gauge(
    "nic_irq_interrupt_cpus", "CPUs that took the NIC's queue interrupts between the last two "
    "polls (/sys/kernel/irq/<n>/per_cpu_count or /proc/interrupts).")
IRQS_MOVED = _gauge(
    "nic_irqs_moved", "The NIC's queue interrupts taken between the last two polls on a CPU "
    "outside the effective affinity read before (moved by irqbalance or by hand).")
RXPATH_FAMILIES: tuple[Family, ...] = (
    IRQ_CPU_SOFTIRQ_RATIO, RX_CPU_SOFTIRQ_RATIO, RX_CPU_SQUEEZED_SOFTIRQ, RX_CPUS_SQUEEZED,
    RX_CPUS_DROPPING, RX_QUEUE_BUSIEST_SHARE, RX_QUEUE_IMBALANCE,
    RX_QUEUE_BUSIEST, RX_CPU_BUSY_QUEUES, IRQ_CPUS, IRQS_MOVED)
# incident capture (consumers/incidents/, docs/incidents.md)
INCIDENTS_TOTAL = _counter(
    "nic_incidents_total",
    "Incidents opened by each capture trigger of the [capture] config section since the "
    "daemon started (see `nicwatch incidents`); firings over a cap are merged into an open "
    "incident instead (nicwatch_incidents_merged_total).", labels=("trigger",))
INCIDENTS_MERGED = _counter(
    "nicwatch_incidents_merged_total",
    "Interfaces on which a capture trigger fired while a cap ([capture] max_open, "
    "max_per_trigger per per_trigger_window) kept it from opening an incident of its own: "
    "each was merged into an open incident of the trigger (listed in its incident.json), "
    "by trigger.", labels=("trigger",))
INCIDENT_OPEN = _gauge(
    "nicwatch_incident_open",
    "Incidents open on this interface: a capture trigger fired within its `after` window and "
    "the evidence is still being recorded.", labels=("device",))
INCIDENT_WRITE_FAILURES = _counter(
    "nicwatch_incident_write_failures_total",
    "Incident directory writes that failed, by reason (an errno name such as ENOSPC, or "
    "queue_full when more incidents waited for the writer than it holds); nothing partial "
    "is left, and a failed write is retried.", labels=("reason",))
INCIDENT_WRITES_PENDING = _gauge(
    "nicwatch_incident_writes_pending",
    "Incident directories waiting for the writer thread (each written when an incident opens "
    "and when it closes; a write that failed waits for its retry).")
INCIDENT_FAMILIES: tuple[Family, ...] = (INCIDENTS_TOTAL, INCIDENTS_MERGED, INCIDENT_OPEN,
                                         INCIDENT_WRITE_FAILURES, INCIDENT_WRITES_PENDING)
# link physics (consumers/linkphysics.py, normalize/linkphysics.py, docs/link-physics.md)
PRE_FEC_BER = _gauge(
    "nic_pre_fec_ber", "Pre-FEC bit error ratio between the last two polls: bit errors FEC "
    "corrected (nic_fec_lane_bit_errors_total per lane; nic_fec_corrected_bit_errors_total for "
    "lane \"total\") per bit the lane carried at its serdes rate for the link mode "
    "(nic_link_lane_serdes_bytes_per_second x 8: 53.125 Gb/s for a 50G PAM4 lane, 106.25 for "
    "100G, 25.78125 for 25G NRZ; lane \"total\" over every lane). fec names the code in use: "
    "rs544 (RS(544,514) KP4), rs528 (RS(528,514) KR4), baser (BASE-R FC-FEC), llrs, none. "
    "FEC decodes idle codewords too: the denominator is the line, not traffic.",
    labels=("lane", "fec"), unit="ratio")
LANE_BIT_RATE = _gauge(
    "nic_link_lane_serdes_bytes_per_second", "Serdes rate of one lane of the link mode (speed "
    "and lanes; IEEE 802.3 clause named in docs/link-physics.md) in bytes per second: x 8 is "
    "the lane's bit rate that nic_pre_fec_ber divides by (53.125 Gb/s for a 50G PAM4 lane); "
    "absent for a mode nicwatch has no rate for.", unit="bytes_per_second")
FEC_MARGIN = _gauge(
    "nic_fec_margin_symbols", "Symbols of FEC correction left in the worst codeword between "
    "the last two polls: the code's limit (15 for RS(544,514), 7 for RS(528,514)) minus the "
    "bin_high of the highest nic_fec_codewords_total bin that grew; the limit itself when no "
    "bin with errors grew, 0 or below when codewords reached the limit. Per lane where the "
    "histogram has lanes, else lane \"total\".", labels=("lane",), unit="symbols")
LINK_PHYSICS_FAMILIES: tuple[Family, ...] = (PRE_FEC_BER, LANE_BIT_RATE, FEC_MARGIN)
# diagnosis (consumers/diagnosis.py, docs/diagnosis.md)
DIAGNOSIS = _gauge(
    "nic_diagnosis", "A diagnosis signature (docs/diagnosis.md) that holds on this interface "
    "over the diagnosis window: signature names it, priority or lane where it is per priority "
    "(\"global\" for 802.3x PAUSE) or per lane (\"\" otherwise); value 1, present only while "
    "it holds. `nicwatch diagnose` shows the evidence.", labels=("signature", "priority", "lane"))
DIAGNOSIS_SINCE = _gauge(
    "nic_diagnosis_since_timestamp_seconds", "Wall-clock time since which the diagnosis "
    "signature has held without a break (as seen by this daemon); present only while it "
    "holds.", labels=("signature", "priority", "lane"), unit="seconds")
DIAGNOSIS_FAMILIES: tuple[Family, ...] = (DIAGNOSIS, DIAGNOSIS_SINCE)
# the port's role in the fabric (consumers/fabric.py, docs/fabric.md "Fleet drift")
FABRIC_ROLE = _gauge(
    "nic_fabric_role_info", "The role the operator gave this host's ports ([fabric] role, "
    "--fabric.role); value 1. The fleet drift rules compare each configuration among the "
    "ports of one role across hosts.", labels=("role",))
CONSUMER_FAMILIES: tuple[Family, ...] = (EXPECTATION_VIOLATION, EXPECTATION_CHECKS,
                                         IDENTITY_CHANGES, SOFTIRQ_RATIO, *RXPATH_FAMILIES,
                                         *INCIDENT_FAMILIES, *LINK_PHYSICS_FAMILIES,
                                         *DIAGNOSIS_FAMILIES, FABRIC_ROLE)

# self-metrics (labels are all of a series' labels: these carry no implicit device label)
BUILD_INFO = _gauge("nicwatch_build_info", "nicwatch version and Python runtime; value 1.",
                    labels=("version", "python"))
INTERFACES = _gauge("nicwatch_interfaces", "Interfaces polled in the last poll.")
POLLS = _counter("nicwatch_polls_total", "Polls completed since start.")
SKIPPED_POLLS = _counter("nicwatch_skipped_polls_total", "Poll slots skipped because the "
                         "previous poll overran the interval.")
LAST_POLL = _gauge("nicwatch_last_poll_timestamp_seconds", "Wall-clock time the last poll "
                   "finished.", unit="seconds")
LAST_POLL_AGE = _gauge(
    "nicwatch_last_poll_age_seconds", "Seconds since the last completed poll, computed when this "
    "scrape was answered (no kernel read). Grows without bound while the poller hangs or every "
    "poll fails; /readyz fails once it exceeds 3 poll intervals (at least 1 s).", unit="seconds")
POLL_INTERVAL = _gauge("nicwatch_poll_interval_seconds", "Configured poll interval.",
                       unit="seconds")
POLL_DURATION = _gauge("nicwatch_poll_duration_seconds", "Duration of the last poll by stage "
                       "(read: kernel sources; normalize; track; render: the previous render).",
                       labels=("stage",), unit="seconds")
SOURCE_ERRORS = _counter("nicwatch_source_errors_total", "Failed source reads by source and "
                         "interface (unsupported calls are not errors). source=netns, device "
                         "\"\": polls where --path.sysfs and the daemon's network namespace "
                         "disagreed, so nothing was read through kernel sockets.",
                         labels=("device", "source"))
RDMA_COUNTER_SKIPPED = _gauge(
    "nicwatch_rdma_counters_skipped", "RDMA counters not asked in the last poll because they "
    "failed with this errno (EINVAL, EOPNOTSUPP, EPERM, EACCES, EIO, ENOSYS: a driver or its "
    "firmware refusing the query, as on Fabric-Manager limited PFs) and are backed off: asked "
    "again after a minute, then twice as long each time they fail again, at most an hour; "
    "logged once when they start failing. device is the RDMA device; a port's whole netlink "
    "request counts as one (its counters then come from sysfs).", labels=("device", "reason"))
RDMA_SOURCE = _gauge(
    "nicwatch_rdma_source", "RDMA ports of this RDMA device whose hardware counters the last "
    "poll read through this source: netlink (RDMA_NLDEV_CMD_STAT_GET) or sysfs (hw_counters/ "
    "files: no RDMA netlink, a fixture tree, or the port's netlink request failing).",
    labels=("device", "source"))
RDMA_PORTS = _gauge("nicwatch_rdma_ports", "RDMA ports read in the last poll (after the "
                    "device include/exclude).")

SOURCE_UP = _gauge("nicwatch_source_up", "1 when this source's read in the last poll "
                   "completed without failing as a whole; 0 when it raised or failed as a "
                   "whole (its kernel interface unavailable, a dump refused): then its parts of "
                   "every interface are missing and every other source's are served. "
                   "Failures for single interfaces leave it 1 (nicwatch_source_errors_total).",
                   labels=("source",))
SOURCE_DURATION = _gauge("nicwatch_source_duration_seconds", "Wall-clock duration of this "
                         "source's read in the last poll (part of the read stage of "
                         "nicwatch_poll_duration_seconds).", labels=("source",), unit="seconds")
COLLECTOR_ENABLED = _gauge(
    "nicwatch_collector_enabled", "1 when this collector switch (--[no-]collector.NAME) is on, "
    "0 when --no-collector.NAME or --collector.disable-defaults turned it off: its sources are "
    "not read and its consumers not fed, so their series are absent by choice (not a failure, "
    "not stale). A switch that is on may still find its kernel interface missing "
    "(nicwatch_source_up, the start-up \"watching\" line).", labels=("collector",))
UEVENTS = _counter("nicwatch_uevents_total", "Kernel uevents of network interfaces by outcome: "
                   "taken (asked for an early poll), coalesced (joined an early poll already "
                   "pending: at most one a second after the previous poll) or ignored (an "
                   "interface the selection leaves out).", labels=("outcome",))
SELF: tuple[Family, ...] = (BUILD_INFO, INTERFACES, POLLS, SKIPPED_POLLS, UEVENTS, LAST_POLL,
                            LAST_POLL_AGE, POLL_INTERVAL, POLL_DURATION, SOURCE_ERRORS,
                            SOURCE_UP, SOURCE_DURATION, COLLECTOR_ENABLED,
                            RDMA_COUNTER_SKIPPED, RDMA_SOURCE,
                            RDMA_PORTS)

# Every family on /metrics by name, except the derived *_per_second / *_peak_per_second gauges.
EXPORTED: dict[str, Family] = {f.name: f for f in (*FAMILIES.values(), *TRACKER_FAMILIES,
                                                   *CONSUMER_FAMILIES, *SELF)}


def extra(family: Family, series: tuple[tuple[Labels, float], ...]) -> ExtraFamily:
    """A consumer's family for the exporter: the declared name, type and HELP, and ``series``
    ((labels, value) pairs)."""
    return ExtraFamily(family.name, family.type, family.help, series)


# --- Detail tiers (--collector.detail; docs/metrics.md "Detail tiers") ----------------------
# The exposition's series budget: what a scrape carries at each level. Consumers, snapshots,
# the flight recorder and the CLI views see every series whatever the level; only /metrics
# is trimmed. A family is served whole at the tier it belongs to and above; a few families
# are served in part below "full" (``PARTIAL``).
PORT, QUEUE, FULL = "port", "queue", "full"
DETAIL_LEVELS: tuple[str, ...] = (PORT, QUEUE, FULL)
DEFAULT_DETAIL = PORT
DETAIL_TEXT: dict[str, str] = {
    PORT: "per port, lane, priority, traffic class and module: what the shipped dashboards "
          "and alerts use (the default)",
    QUEUE: "adds the per-queue, per-interrupt and per-CPU series of the receive path",
    FULL: "every series nicwatch computes: adds every module flag (clear ones too), the "
          "states a state set is not in, every "
          "module and VDM threshold level, the FEC codeword histogram, the peak-rate gauges "
          "of error counters and nic_stat_supported for the families an interface has",
}
# Labels that make a family grow with the queues, interrupts or CPUs of a port.
_PER_QUEUE_LABELS = frozenset({"queue", "irq", "cpu"})
# Served at the port tier although labelled by queue: one series a port (the busiest queue).
# The per-CPU series have port summaries (nic_irq_cpu_softirq_ratio,
# nic_rx_cpu_squeezed_softirq_ratio, nic_rx_cpus_squeezed, nic_rx_cpus_dropping). Opt-in
# families whose own flag asks for them keep that flag.
_PORT_SUMMARIES = frozenset({"nic_rx_queue_busiest_info"})
_OPT_IN = frozenset({QUEUE_COUNTER.name, RAW_COUNTER.name, RAW_GAUGE.name,
                     RDMA_RAW_COUNTER.name})
# Peak-rate gauges served at the port tier: throughput bursts and flow control (the sub-scrape
# bursts the peaks exist for); an error counter's increase() already shows every error.
_PORT_PEAKS = frozenset({
    "nic_rx_pause_frames_total", "nic_tx_pause_frames_total", "nic_rx_pause_ctrl_frames_total",
    "nic_tx_pause_ctrl_frames_total", "nic_rx_pfc_frames_total", "nic_tx_pfc_frames_total",
    "nic_rx_pfc_tc_frames_total", "nic_tx_pfc_tc_frames_total",
    "nic_rx_pause_duration_seconds_total", "nic_tx_pause_duration_seconds_total"})
# Families served whole only at "full".
_FULL_FAMILIES = frozenset({"nic_fec_codewords_total"})


def peak_name(counter: str) -> str:
    """The name of a rated counter's peak-rate gauge."""
    return f"{FAMILIES[counter].base}_peak_per_second"


def _levels(*kept: str) -> Callable[[Labels, float], bool]:
    def keep(labels: Labels, value: float) -> bool:
        return any(k == "level" and v in kept for k, v in labels)
    return keep


def _set(labels: Labels, value: float) -> bool:
    return value != 0


def _unsupported(labels: Labels, value: float) -> bool:
    return value == 0


_WARNINGS = _levels("high_warning", "low_warning")
# Families served in part below "full": (which series are kept, what the doc says).
PARTIAL: dict[str, tuple[Callable[[Labels, float], bool], str]] = {
    "nic_module_flag": (_set, "set flags only (value 1); nic_module_flags_set counts them"),
    **dict.fromkeys(("nic_module_read_state", "nic_module_state",
                     "nic_devlink_health_reporter_state"),
                    (_set, "the current state only (value 1); the states it is not in (value "
                     "0) at full: select with == 1, as the shipped rules do")),
    "nic_stat_supported": (_unsupported, "the families the interface lacks only (value 0): "
                           "a family it provides is supported where its series are served"),
    **dict.fromkeys(("nic_module_temperature_threshold_celsius",
                     "nic_module_supply_voltage_threshold_volts",
                     "nic_module_rx_power_threshold_watts", "nic_module_tx_power_threshold_watts",
                     "nic_module_tx_bias_threshold_amperes"),
                    (_WARNINGS, "level high_warning and low_warning only")),
    **dict.fromkeys(("nic_module_vdm_pre_fec_ber_threshold",
                     "nic_module_vdm_errored_frames_threshold",
                     "nic_module_vdm_laser_temperature_threshold_celsius"),
                    (_levels("high_warning"), "level high_warning only (the direction of "
                     "trouble)")),
    "nic_module_vdm_esnr_threshold_db": (_levels("low_warning"),
                                         "level low_warning only (the direction of trouble)"),
}


def family_tier(name: str) -> str:
    """The lowest detail level that serves family ``name`` (a *_peak_per_second or
    *_per_second name included) whole."""
    for counter in RATED_COUNTERS:
        fam = FAMILIES[counter]
        if name in (f"{fam.base}_peak_per_second", f"{fam.base}_per_second"):
            tier = family_tier(counter)
            if name.endswith("_peak_per_second") and counter not in _PORT_PEAKS \
                    and not fam.burst:
                return FULL if tier == PORT else tier
            return tier
    if name in _FULL_FAMILIES or name in PARTIAL:
        return FULL
    family = EXPORTED.get(name)
    if family is not None and name not in _PORT_SUMMARIES | _OPT_IN \
            and set(family.labels) & _PER_QUEUE_LABELS:
        return QUEUE
    return PORT


@dataclass(frozen=True, slots=True)
class Exposure:
    """What one detail level serves: ``hidden`` families (and peak or rate gauges) are left
    out whole; a family in ``partial`` keeps the series its test accepts (labels without
    the device, value)."""

    detail: str
    hidden: frozenset[str]
    partial: dict[str, Callable[[Labels, float], bool]]
    unpeaked: frozenset[str]  # rated counters whose *_peak_per_second gauge is hidden

    def shown(self, name: str, labels: Labels, value: float) -> bool:
        if name in self.hidden:
            return False
        keep = self.partial.get(name)
        return keep is None or keep(labels, value)


def exposure(detail: str = DEFAULT_DETAIL) -> Exposure:
    """The families and series served at ``detail`` (one of DETAIL_LEVELS)."""
    rank = DETAIL_LEVELS.index(detail)
    names = [*EXPORTED, *(f"{FAMILIES[c].base}_{kind}" for c in RATED_COUNTERS
                          for kind in ("peak_per_second", "per_second"))]
    hidden = frozenset(n for n in names if n not in PARTIAL
                       and DETAIL_LEVELS.index(family_tier(n)) > rank)
    partial = {} if detail == FULL else {n: keep for n, (keep, _) in PARTIAL.items()}
    unpeaked = frozenset(c for c in RATED_COUNTERS if peak_name(c) in hidden)
    return Exposure(detail, hidden, partial, unpeaked)
