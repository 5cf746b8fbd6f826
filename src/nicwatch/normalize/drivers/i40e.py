"""i40e (Intel X710/XL710/XXV710): i40e_ethtool.c. Port counters start with `port.`; the
names without a prefix at the top are copies of the netdev counters, which sysfs owns."""

from nicwatch.normalize.rules import DriverTable, QueueStat, Rule

TABLE = DriverTable(
    driver="i40e",
    rules=(
        Rule(r"port\.link_xoff_rx", "nic_rx_pause_frames_total"),
        Rule(r"port\.link_xoff_tx", "nic_tx_pause_frames_total"),
        Rule(r"port\.rx_priority_(?P<priority>[0-7])_xoff_rx", "nic_rx_pfc_frames_total"),
        Rule(r"port\.tx_priority_(?P<priority>[0-7])_xoff_tx", "nic_tx_pfc_frames_total"),
        # Netdev rx_missed_errors = VSI GLV_RDPC (no descriptor), added with the rename below.
        Rule(r"rx_missed_errors", "nic_rx_out_of_buffer_drops_total"),
        # Port GLPRT_RDPC; renamed from port.rx_dropped to port.rx_discards (2023, backported).
        Rule(r"port\.rx_(?:dropped|discards)", "nic_rx_discards_total"),
        Rule(r"port\.rx_crc_errors", "nic_rx_crc_errors_total"),
        Rule(r"port\.rx_bytes", "nic_phy_rx_bytes_total"),
        Rule(r"port\.tx_bytes", "nic_phy_tx_bytes_total"),
    ),
    gauges=(r"port\.(?:tx|rx)_lpi_status", r"port\.fdir_(?:atr|sb)_status"),
    queues=(
        # `tx-0.packets`; drivers before ~2.8 repeated the direction: `tx-0.tx_packets`.
        QueueStat(r"(?P<dir>tx|rx)-(?P<queue>\d+)\.(?P<name>.+)", "{dir}-N.{name}"),
    ),
    notes="Until the 2023 fix \"i40e: Add rx_missed_errors for buffer exhaustion\" the netdev "
    "`rx_dropped` included the VSI no-descriptor drops; since then those are "
    "`rx_missed_errors` and `rx_dropped` counts other discards. Because the same name changed "
    "meaning, `rx_dropped` is never mapped, and older drivers have no out-of-buffer counter. "
    "`port.rx_dropped` was renamed `port.rx_discards` in the same fix. XON and XON-to-XOFF "
    "counters and the `veb.*` statistics stay raw. Registers are accumulated into 64 bits by "
    "the driver.",
)
