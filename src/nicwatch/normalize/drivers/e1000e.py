"""e1000e (Intel 82571-82574, 82583, ICH8-ICH10, PCH: also QEMU's emulated 82574L): the
driver's e1000_gstrings_stats (drivers/net/ethernet/intel/e1000e/ethtool.c). Hardware
registers are read and accumulated into the u64 fields of struct e1000_hw_stats by
e1000e_update_stats() (netdev.c); the netdev counters (rx_bytes, rx_crc_errors,
rx_missed_errors, ...) are filled from the same fields by e1000e_get_stats64(). The real
dump is tests/fixtures/ethtool/e1000e.txt, from the lab (QEMU 7.2, Linux 6.12)."""

from nicwatch.normalize.rules import DriverTable, Rule, SameRegister

_G = "e1000e ethtool.c e1000_gstrings_stats"

TABLE = DriverTable(
    driver="e1000e",
    source="drivers/net/ethernet/intel/e1000e/ethtool.c",
    rules=(
        # XOFF (the pause) and XON (its release) apart: one pause episode is one of each.
        Rule(r"rx_flow_control_xoff", "nic_rx_pause_frames_total",
             evidence=f"{_G}: stats.xoffrxc (XOFFRXC), u64"),
        Rule(r"rx_flow_control_xon", "nic_rx_pause_xon_frames_total",
             evidence=f"{_G}: stats.xonrxc (XONRXC), u64"),
        Rule(r"tx_flow_control_xoff", "nic_tx_pause_frames_total",
             evidence=f"{_G}: stats.xofftxc (XOFFTXC), u64"),
        Rule(r"tx_flow_control_xon", "nic_tx_pause_xon_frames_total",
             evidence=f"{_G}: stats.xontxc (XONTXC), u64"),
        # GPRC/GPTC: the MAC's good packets (e1000_gstrings_stats "rx_packets" is stats.gprc,
        # not the netdev's count): the port's frames, the drop ratio's denominator.
        Rule(r"rx_packets", "nic_phy_rx_packets_total",
             evidence=f"{_G}: \"rx_packets\" = stats.gprc (GPRC), good packets received"),
        Rule(r"tx_packets", "nic_phy_tx_packets_total",
             evidence=f"{_G}: \"tx_packets\" = stats.gptc (GPTC), good packets sent"),
        # MPC: packets missed because the receive FIFO had no room (dropped by the MAC).
        Rule(r"rx_missed_errors", "nic_rx_discards_total",
             evidence=f"{_G}: stats.mpc (MPC); e1000e_get_stats64 gives the netdev "
             "rx_missed_errors the same count"),
        Rule(r"rx_crc_errors", "nic_rx_crc_errors_total",
             evidence=f"{_G}: stats.crcerrs (CRCERRS)"),
    ),
    same_register=(
        SameRegister(("tx_window_errors", "tx_abort_late_coll"), f"{_G}: both stats.latecol"),
        SameRegister(("rx_multicast", "multicast"), f"{_G}: both stats.mprc"),
    ),
    notes="No per-queue statistics (one queue pair). `rx_no_buffer_count` (RNBC) counts "
    "times the ring had no free descriptor while the packet waited in the FIFO, not drops, "
    "and stays raw, as on ixgbe. `rx_bytes`/`tx_bytes` (GORC/GOTC) are the same hardware "
    "counters as the netdev byte counters, so they are not mapped a second time. e1000e "
    "does not implement the kernel's standard pause statistics.",
)
