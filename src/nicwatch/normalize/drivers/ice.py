"""ice (Intel E800 series): ice_ethtool.c in-tree names (port counters end in `.nic`) and the
out-of-tree driver's unified names (ice_ethtool.h built with UNIFIED_STATS: `port-rx-...`).
Both families are accepted; a driver build shows one of them."""

from nicwatch.normalize.rules import DriverTable, QueueStat, Rule

TABLE = DriverTable(
    driver="ice",
    rules=(
        Rule(r"link_xoff_rx\.nic|port-rx-xoff_events", "nic_rx_pause_frames_total"),
        Rule(r"link_xoff_tx\.nic|port-tx-xoff_events", "nic_tx_pause_frames_total"),
        Rule(r"rx_priority_(?P<priority>[0-7])_xoff\.nic", "nic_rx_pfc_frames_total"),
        Rule(r"tx_priority_(?P<priority>[0-7])_xoff\.nic", "nic_tx_pfc_frames_total"),
        Rule(r"port-rx-xoff_prio-(?P<priority>[0-7])_events", "nic_rx_pfc_frames_total"),
        Rule(r"port-tx-xoff_prio-(?P<priority>[0-7])_events", "nic_tx_pfc_frames_total"),
        # VSI GLV_RDPC: packets dropped because the VSI's receive queue had no free descriptor.
        Rule(r"rx_dropped|rx-dropped_pkts", "nic_rx_out_of_buffer_drops_total"),
        # Port PRTRPB_RDPC: the port's packet buffer was full.
        Rule(r"rx_dropped\.nic|port-rx-dropped_pkts", "nic_rx_discards_total"),
        Rule(r"rx_crc_errors\.nic|port-rx-crc_errors", "nic_rx_crc_errors_total"),
        Rule(r"rx_bytes\.nic|port-rx_bytes", "nic_phy_rx_bytes_total"),
        Rule(r"tx_bytes\.nic|port-tx_bytes", "nic_phy_tx_bytes_total"),
    ),
    gauges=(r"fdir_sb_status\.nic|port-rx-fdir-sideband-status",),
    queues=(
        QueueStat(r"(?P<dir>tx|rx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_queue_N_{name}"),
        QueueStat(r"(?P<dir>tx|rx)_q-(?P<queue>\d+)_(?P<name>.+)", "{dir}_q-N_{name}"),
        QueueStat(r"(?P<dir>tx|rx)_(?P<queue>\d+)\.(?P<name>.+)", "{dir}_N.{name}"),
    ),
    notes="Port counters (`*.nic`, or `port-*` in the out-of-tree unified names) appear only "
    "on the PF netdev. The VSI `rx_dropped` counts packets the queues had no descriptor for "
    "(out of buffer); the port `rx_dropped.nic` counts packet-buffer discards before the "
    "queues. XON frames (`link_xon_*`, `*_xon.nic`) have no canonical family and stay raw. "
    "Port registers are 32 to 48 bits wide but the driver accumulates them into 64 bits. "
    "FEC blocks (RS totals) come from ethtool netlink.",
)
