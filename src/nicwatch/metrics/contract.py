"""Every declared family by name (FAMILIES, EXPORTED), the counters that get rates, and the
constants code names canonical families by."""

from __future__ import annotations

from nicwatch.metrics.counters import (
    COUNTERS,
    PLATFORM_COUNTERS,
    QSTATS_COUNTERS,
    QUEUE_COUNTER,
    RAW_COUNTER,
    RAW_GAUGE,
    RXPATH_COUNTERS,
)
from nicwatch.metrics.family import Family
from nicwatch.metrics.gauges import FABRIC_FAMILIES, GAUGES
from nicwatch.metrics.own import CONSUMER_FAMILIES, SELF, TRACKER_FAMILIES
from nicwatch.metrics.rdma import RDMA_COUNTERS, RDMA_GAUGES, RDMA_RAW_COUNTER
from nicwatch.model import ExtraFamily, Labels

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
# read by the diagnosis quantities and windows (consumers/diagnosis/)
FEC_CORRECTED_BIT_ERRORS = FAMILIES["nic_fec_corrected_bit_errors_total"]
FEC_CORRECTED_BLOCKS = FAMILIES["nic_fec_corrected_blocks_total"]
FEC_LANE_BIT_ERRORS = FAMILIES["nic_fec_lane_bit_errors_total"]
PHY_RX_PACKETS = FAMILIES["nic_phy_rx_packets_total"]
PHY_TX_PACKETS = FAMILIES["nic_phy_tx_packets_total"]
RDMA_CNP_HANDLED = FAMILIES["nic_rdma_cnp_handled_total"]
RDMA_CNP_IGNORED = FAMILIES["nic_rdma_cnp_ignored_total"]
RDMA_CNP_SENT = FAMILIES["nic_rdma_cnp_sent_total"]
RDMA_DEFAULT_ROCE_TOS = FAMILIES["nic_rdma_default_roce_tos"]
RDMA_DUPLICATE_REQUESTS = FAMILIES["nic_rdma_duplicate_requests_total"]
RDMA_ECN_MARKED_PACKETS = FAMILIES["nic_rdma_ecn_marked_packets_total"]
RDMA_IMPLIED_NAK_SEQ_ERRORS = FAMILIES["nic_rdma_implied_nak_seq_errors_total"]
RDMA_LOCAL_ACK_TIMEOUT_ERRORS = FAMILIES["nic_rdma_local_ack_timeout_errors_total"]
RDMA_OUT_OF_BUFFER_DROPS = FAMILIES["nic_rdma_out_of_buffer_drops_total"]
RDMA_OUT_OF_SEQUENCE = FAMILIES["nic_rdma_out_of_sequence_total"]
RDMA_PACKET_SEQ_ERRORS = FAMILIES["nic_rdma_packet_seq_errors_total"]
RDMA_REQ_RNR_RETRIES_EXCEEDED = FAMILIES["nic_rdma_req_rnr_retries_exceeded_total"]
RDMA_REQ_TRANSPORT_RETRIES_EXCEEDED = FAMILIES["nic_rdma_req_transport_retries_exceeded_total"]
RDMA_RNR_NAK_RETRY_ERRORS = FAMILIES["nic_rdma_rnr_nak_retry_errors_total"]
RDMA_RX_CE_PACKETS = FAMILIES["nic_rdma_rx_ce_packets_total"]
RDMA_RX_PACKETS = FAMILIES["nic_rdma_rx_packets_total"]
RDMA_TX_PACKETS = FAMILIES["nic_rdma_tx_packets_total"]
RDMA_TRAFFIC_CLASS = FAMILIES["nic_rdma_traffic_class"]
RX_HW_DROP_OVERRUNS = FAMILIES["nic_rx_hw_drop_overruns_total"]
RX_PAUSE_XON_FRAMES = FAMILIES["nic_rx_pause_xon_frames_total"]
TX_PAUSE_XON_FRAMES = FAMILIES["nic_tx_pause_xon_frames_total"]
RX_PCS_SYMBOL_ERRORS = FAMILIES["nic_rx_pcs_symbol_errors_total"]
RX_PFC_XON_FRAMES = FAMILIES["nic_rx_pfc_xon_frames_total"]
TX_PFC_XON_FRAMES = FAMILIES["nic_tx_pfc_xon_frames_total"]
RX_PFC_TC_XON_FRAMES = FAMILIES["nic_rx_pfc_tc_xon_frames_total"]
TX_PFC_TC_XON_FRAMES = FAMILIES["nic_tx_pfc_tc_xon_frames_total"]


# Every family on /metrics by name, except the derived *_per_second / *_peak_per_second gauges.
EXPORTED: dict[str, Family] = {f.name: f for f in (*FAMILIES.values(), *TRACKER_FAMILIES,
                                                   *CONSUMER_FAMILIES, *SELF)}


def extra(family: Family, series: tuple[tuple[Labels, float], ...]) -> ExtraFamily:
    """A consumer's family for the exporter: the declared name, type and HELP, and ``series``
    ((labels, value) pairs)."""
    return ExtraFamily(family.name, family.type, family.help, series)


