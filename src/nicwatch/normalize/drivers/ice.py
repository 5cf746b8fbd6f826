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
        # IEEE PAUSE frames = XOFF + XON, as ice_get_pause_stats reports them to the kernel.
        Rule(r"link_xo(?:n|ff)_rx\.nic|port-rx-xo(?:n|ff)_events", "nic_rx_pause_frames_total",
             evidence=f"{_PF}: link_xon_rx/link_xoff_rx (GLPRT_LXONRXC, GLPRT_LXOFFRXC), "
             f"summed; {_OOT}"),
        Rule(r"link_xo(?:n|ff)_tx\.nic|port-tx-xo(?:n|ff)_events", "nic_tx_pause_frames_total",
             evidence=f"{_PF}: link_xon_tx/link_xoff_tx (GLPRT_LXONTXC, GLPRT_LXOFFTXC), "
             f"summed; {_OOT}"),
        Rule(r"rx_priority_(?P<priority>[0-7])_xo(?:n|ff)\.nic", "nic_rx_pfc_frames_total",
             evidence=f"{_PFC}: XON + XOFF per priority (GLPRT_PXONRXC, GLPRT_PXOFFRXC)"),
        Rule(r"tx_priority_(?P<priority>[0-7])_xo(?:n|ff)\.nic", "nic_tx_pfc_frames_total",
             evidence=f"{_PFC}: XON + XOFF per priority (GLPRT_PXONTXC, GLPRT_PXOFFTXC)"),
        Rule(r"port-rx-xo(?:n|ff)_prio-(?P<priority>[0-7])_events", "nic_rx_pfc_frames_total",
             evidence=_OOT),
        Rule(r"port-tx-xo(?:n|ff)_prio-(?P<priority>[0-7])_events", "nic_tx_pfc_frames_total",
             evidence=_OOT),
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
                    "nic_rx_pause_frames_total",
                    _NETLINK.format("ice_get_pause_stats: link_xon_rx + link_xoff_rx")),
        NetlinkFill("pause.tx_frames", ("link_xon_tx.nic", "link_xoff_tx.nic"),
                    "nic_tx_pause_frames_total",
                    _NETLINK.format("ice_get_pause_stats: link_xon_tx + link_xoff_tx")),
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
    "on the PF netdev. PAUSE and PFC families add the XON and XOFF counters, which is what "
    "IEEE 802.3 counts as PAUSE frames and what `ice_get_pause_stats` reports to the kernel, "
    "so the netlink and the `ethtool -S` value agree. In ice's QoS, all priorities of one "
    "traffic class are paused together, so their PFC counters rise in unison. The VSI "
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
)
