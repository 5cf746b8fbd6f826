"""Driver-independent sources: the kernel's ethtool-netlink standard statistics and the
netdev counters in sysfs. They use the same Rule vocabulary as the driver tables."""

from __future__ import annotations

from nicwatch.normalize.rules import Rule

# Keys as built by sources.ethtool_netlink (see EthtoolNetlinkInfo.std_stats).
ETHTOOL_NETLINK: tuple[Rule, ...] = (
    Rule(r"pause\.rx_frames", "nic_rx_pause_frames_total"),
    Rule(r"pause\.tx_frames", "nic_tx_pause_frames_total"),
    Rule(r"fec\.corrected_blocks", "nic_fec_corrected_blocks_total", (("lane", "total"),)),
    Rule(r"fec\.corrected_blocks\.lane(?P<lane>\d+)", "nic_fec_corrected_blocks_total"),
    Rule(r"fec\.uncorrectable_blocks", "nic_fec_uncorrectable_blocks_total",
         (("lane", "total"),)),
    Rule(r"fec\.uncorrectable_blocks\.lane(?P<lane>\d+)", "nic_fec_uncorrectable_blocks_total"),
    Rule(r"fec\.corrected_bits", "nic_fec_corrected_bit_errors_total"),
    Rule(r"eth-mac\.FrameCheckSequenceErrors", "nic_rx_crc_errors_total"),
    Rule(r"eth-mac\.OctetsReceivedOK", "nic_phy_rx_bytes_total"),
    Rule(r"eth-mac\.OctetsTransmittedOK", "nic_phy_tx_bytes_total"),
    Rule(r"eth-phy\.SymbolErrorDuringCarrier", "nic_rx_symbol_errors_total"),
)

# /sys/class/net/<if>/statistics/* and the carrier counters next to it.
SYSFS_NET: tuple[Rule, ...] = (
    Rule(r"rx_bytes", "nic_rx_bytes_total"),
    Rule(r"tx_bytes", "nic_tx_bytes_total"),
    Rule(r"rx_packets", "nic_rx_packets_total"),
    Rule(r"tx_packets", "nic_tx_packets_total"),
    Rule(r"rx_errors", "nic_rx_errors_total"),
    Rule(r"tx_errors", "nic_tx_errors_total"),
    Rule(r"rx_dropped", "nic_rx_dropped_total"),
    Rule(r"tx_dropped", "nic_tx_dropped_total"),
    Rule(r"carrier_up_count", "nic_carrier_up_events_total"),
    Rule(r"carrier_down_count", "nic_carrier_down_events_total"),
)

# /sys/class/infiniband/<dev>/ports/<n>/{hw_counters,counters}/<name> (mlx5 names; the IB
# PortCounters data counters are in 4-byte words).
INFINIBAND: tuple[Rule, ...] = (
    Rule(r"port_rcv_data", "nic_rdma_rx_bytes_total", scale=4.0),
    Rule(r"port_xmit_data", "nic_rdma_tx_bytes_total", scale=4.0),
    Rule(r"port_rcv_packets", "nic_rdma_rx_packets_total"),
    Rule(r"port_xmit_packets", "nic_rdma_tx_packets_total"),
    Rule(r"np_cnp_sent", "nic_rdma_cnp_sent_total"),
    Rule(r"rp_cnp_handled", "nic_rdma_cnp_handled_total"),
    Rule(r"np_ecn_marked_roce_packets", "nic_rdma_ecn_marked_packets_total"),
    Rule(r"out_of_sequence", "nic_rdma_out_of_sequence_total"),
    Rule(r"packet_seq_err", "nic_rdma_packet_seq_errors_total"),
    Rule(r"local_ack_timeout_err", "nic_rdma_local_ack_timeout_errors_total"),
    Rule(r"rx_icrc_encapsulated", "nic_rdma_icrc_errors_total"),
)
