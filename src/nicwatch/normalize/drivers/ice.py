"""ice (Intel E800 series): ice_ethtool.c in-tree names (port counters end in `.nic`) and the
out-of-tree driver's unified names (ice_ethtool.h built with UNIFIED_STATS: `port-rx-...`).
Both families are accepted; a driver build shows one of them."""

from nicwatch.normalize.rules import (
    DriverTable,
    IrqName,
    NetlinkFill,
    QueueStat,
    Rule,
    VfDrop,
    VfStats,
)

_PF = "ice_ethtool.c ice_gstrings_pf_stats"
_PFC = "ice_ethtool.c ice_get_strings (PFC stats: stats.priority_{xon,xoff}_{rx,tx}[i])"
_OOT = "out-of-tree ice ice_ethtool.h UNIFIED_STATS names"
_NETLINK = ("ice_ethtool.c {} (\"ice: add standard stats\", netdev Oct 2025, ~6.19)")

TABLE = DriverTable(
    driver="ice",
    source="drivers/net/ethernet/intel/ice/ice_ethtool.c",
    rules=(
        # XOFF (the pause) and XON (its release) apart: one pause episode is one of each
        # (ice_get_pause_stats reports their sum to the kernel as the IEEE PAUSE count).
        Rule(r"link_xoff_rx\.nic|port-rx-xoff_events", "nic_rx_pause_frames_total",
             evidence=f"{_PF}: link_xoff_rx (GLPRT_LXOFFRXC), XOFF; {_OOT}"),
        Rule(r"link_xon_rx\.nic|port-rx-xon_events", "nic_rx_pause_xon_frames_total",
             evidence=f"{_PF}: link_xon_rx (GLPRT_LXONRXC), XON; {_OOT}"),
        Rule(r"link_xoff_tx\.nic|port-tx-xoff_events", "nic_tx_pause_frames_total",
             evidence=f"{_PF}: link_xoff_tx (GLPRT_LXOFFTXC), XOFF; {_OOT}"),
        Rule(r"link_xon_tx\.nic|port-tx-xon_events", "nic_tx_pause_xon_frames_total",
             evidence=f"{_PF}: link_xon_tx (GLPRT_LXONTXC), XON; {_OOT}"),
        Rule(r"rx_priority_(?P<priority>[0-7])_xoff\.nic", "nic_rx_pfc_frames_total",
             evidence=f"{_PFC}: XOFF per priority (GLPRT_PXOFFRXC)"),
        Rule(r"port-rx-xoff_prio-(?P<priority>[0-7])_events", "nic_rx_pfc_frames_total",
             evidence=_OOT),
        Rule(r"rx_priority_(?P<priority>[0-7])_xon\.nic", "nic_rx_pfc_xon_frames_total",
             evidence=f"{_PFC}: XON per priority (GLPRT_PXONRXC)"),
        Rule(r"port-rx-xon_prio-(?P<priority>[0-7])_events", "nic_rx_pfc_xon_frames_total",
             evidence=_OOT),
        Rule(r"tx_priority_(?P<priority>[0-7])_xoff\.nic", "nic_tx_pfc_frames_total",
             evidence=f"{_PFC}: XOFF per priority (GLPRT_PXOFFTXC)"),
        Rule(r"port-tx-xoff_prio-(?P<priority>[0-7])_events", "nic_tx_pfc_frames_total",
             evidence=_OOT),
        Rule(r"tx_priority_(?P<priority>[0-7])_xon\.nic", "nic_tx_pfc_xon_frames_total",
             evidence=f"{_PFC}: XON per priority (GLPRT_PXONTXC)"),
        Rule(r"port-tx-xon_prio-(?P<priority>[0-7])_events", "nic_tx_pfc_xon_frames_total",
             evidence=_OOT),
        # Good frames by destination: their sum is every good frame the port received.
        Rule(r"rx_(?:unicast|multicast|broadcast)\.nic|port-rx-(?:unicast|multicast|broadcast)_pkts",
             "nic_phy_rx_packets_total",
             evidence=f"{_PF}: rx_unicast.nic + rx_multicast.nic + rx_broadcast.nic "
             f"(GLPRT_UPRCL, GLPRT_MPRCL, GLPRT_BPRCL), summed; {_OOT}"),
        Rule(r"tx_(?:unicast|multicast|broadcast)\.nic|port-tx-(?:unicast|multicast|broadcast)_pkts",
             "nic_phy_tx_packets_total",
             evidence=f"{_PF}: tx_unicast.nic + tx_multicast.nic + tx_broadcast.nic "
             f"(GLPRT_UPTCL, GLPRT_MPTCL, GLPRT_BPTCL), summed; {_OOT}"),
        # VSI GLV_RDPC: packets dropped because the VSI's receive queue had no free descriptor.
        Rule(r"rx_dropped|rx-dropped_pkts", "nic_rx_out_of_buffer_drops_total",
             evidence="ice_ethtool.c ice_gstrings_vsi_stats rx_dropped = eth_stats.rx_discards "
             "(GLV_RDPC)"),
        # Port PRTRPB_RDPC: the port's packet buffer was full.
        Rule(r"rx_dropped\.nic|port-rx-dropped_pkts", "nic_rx_discards_total",
             evidence=f"{_PF}: rx_dropped.nic = stats.eth.rx_discards (PRTRPB_RDPC)"),
        Rule(r"rx_crc_errors\.nic|port-rx-crc_errors", "nic_rx_crc_errors_total",
             evidence=f"{_PF}: rx_crc_errors.nic = stats.crc_errors (GLPRT_CRCERRS)"),
        Rule(r"rx_bytes\.nic|port-rx_bytes", "nic_phy_rx_bytes_total",
             evidence=f"{_PF}: rx_bytes.nic = stats.eth.rx_bytes (GLPRT_GORCL), bytes"),
        Rule(r"tx_bytes\.nic|port-tx_bytes", "nic_phy_tx_bytes_total",
             evidence=f"{_PF}: tx_bytes.nic = stats.eth.tx_bytes (GLPRT_GOTCL), bytes"),
    ),
    netlink=(
        NetlinkFill("pause.rx_frames", ("link_xon_rx.nic", "link_xoff_rx.nic"),
                    None, _NETLINK.format("ice_get_pause_stats: link_xon_rx + link_xoff_rx "
                                          "(XON and XOFF summed: not exported)")),
        NetlinkFill("pause.tx_frames", ("link_xon_tx.nic", "link_xoff_tx.nic"),
                    None, _NETLINK.format("ice_get_pause_stats: link_xon_tx + link_xoff_tx "
                                          "(XON and XOFF summed: not exported)")),
        NetlinkFill("eth-mac.FrameCheckSequenceErrors", ("rx_crc_errors.nic",),
                    "nic_rx_crc_errors_total",
                    _NETLINK.format("ice_get_eth_mac_stats: crc_errors")),
        NetlinkFill("eth-mac.OctetsReceivedOK", ("rx_bytes.nic",), "nic_phy_rx_bytes_total",
                    _NETLINK.format("ice_get_eth_mac_stats: eth.rx_bytes")),
        NetlinkFill("eth-mac.OctetsTransmittedOK", ("tx_bytes.nic",), "nic_phy_tx_bytes_total",
                    _NETLINK.format("ice_get_eth_mac_stats: eth.tx_bytes")),
    ),
    gauges=(r"fdir_sb_status\.nic|port-rx-fdir-sideband-status",),
    vf=VfStats(
        evidence="ice_sriov.c ice_get_vf_stats: the VF VSI's ice_eth_stats after "
        "ice_update_eth_stats (ice_lib.c); -EBUSY (zero-filled by the kernel) while "
        "ice_check_vf_ready_for_cfg fails, i.e. during a VF reset",
        drops=(
            ("rx_dropped", VfDrop(
                "packets for the VF that its VSI had no receive descriptor for (GLV_RDPC: "
                "the VF's receive queues were full or not yet posted)",
                "ice_get_vf_stats: rx_dropped = eth_stats.rx_discards, which "
                "ice_update_eth_stats reads from GLV_RDPC")),
            ("tx_dropped", VfDrop(
                "never counted: ice_get_vf_stats copies eth_stats.tx_discards, which "
                "ice_update_eth_stats does not update (it reads GLV_TEPC into tx_errors)",
                "ice_lib.c ice_update_eth_stats: no tx_discards register", updated=False)),
        )),
    queues=(
        QueueStat(r"(?P<dir>tx|rx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_queue_N_{name}"),
        QueueStat(r"(?P<dir>tx|rx)_q-(?P<queue>\d+)_(?P<name>.+)", "{dir}_q-N_{name}"),
        QueueStat(r"(?P<dir>tx|rx)_(?P<queue>\d+)\.(?P<name>.+)", "{dir}_N.{name}"),
    ),
    notes="Port counters (`*.nic`, or `port-*` in the out-of-tree unified names) appear only "
    "on the PF netdev. PAUSE and PFC families count XOFF (the pause) and the `*_xon_*` "
    "families XON (its release), kept apart so one pause episode counts once; "
    "`ice_get_pause_stats` reports their sum to the kernel as the IEEE PAUSE "
    "count, which nicwatch therefore does not export (it would count each episode twice). "
    "In ice's QoS, all priorities of one traffic class are paused together, so their PFC "
    "counters rise in unison. The VSI "
    "`rx_dropped` counts packets the queues had no descriptor for (out of buffer); the port "
    "`rx_dropped.nic` counts packet-buffer discards before the queues. Port registers are "
    "32 to 48 bits wide but the driver accumulates them into 64 bits. FEC blocks (RS "
    "totals) come from ethtool netlink (`ice_get_fec_stats`, ~6.10).",
    irqs=(
        IrqName(r"ice-.+-TxRx-(?P<queue>\d+)", "rxtx",
                "ice_lib.c/ice_main.c ice_vsi_req_irq_msix(): \"%s-%s-%d\" of basename "
                "\"ice-<netdev>\", \"TxRx\" and the vector's rx index"),
        IrqName(r"ice-.+-rx-(?P<queue>\d+)", "rx", "ice_vsi_req_irq_msix(), rx-only vector"),
        IrqName(r"ice-.+-tx-(?P<queue>\d+)", "tx", "ice_vsi_req_irq_msix(), tx-only vector"),
        IrqName(r"ice-.+:(?:misc|ll_ts)", "other",
                "ice_main.c ice_req_irq_msix_misc(): \"%s-%s:misc\" (driver, PCI name)"),
    ),
    rx_queue_packets=(r"rx_queue_(?P<queue>\d+)_packets",),
    hwmon_one_per_chip="ice_hwmon.c ice_is_internal_reading_supported(): pf->hw.pf_id 0 only",
)
