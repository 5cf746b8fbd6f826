"""i40e (Intel X710/XL710/XXV710): i40e_ethtool.c. Port counters start with `port.`; the
names without a prefix at the top are copies of the netdev counters, which sysfs owns."""

from nicwatch.normalize.rules import DriverTable, IrqName, QueueStat, Rule, VfDrop, VfStats

_PF = "i40e_ethtool.c i40e_gstrings_pf_stats"
_PFC = "i40e_ethtool.c i40e_gstrings_pfc_stats (stats.priority_{xon,xoff}_{rx,tx}[i])"

TABLE = DriverTable(
    driver="i40e",
    source="drivers/net/ethernet/intel/i40e/i40e_ethtool.c",
    rules=(
        # XOFF (the pause) and XON (its release) apart: one pause episode is one of each.
        Rule(r"port\.link_xoff_rx", "nic_rx_pause_frames_total",
             evidence=f"{_PF}: port.link_xoff_rx (GLPRT_LXOFFRXC), XOFF"),
        Rule(r"port\.link_xon_rx", "nic_rx_pause_xon_frames_total",
             evidence=f"{_PF}: port.link_xon_rx (GLPRT_LXONRXC), XON"),
        Rule(r"port\.link_xoff_tx", "nic_tx_pause_frames_total",
             evidence=f"{_PF}: port.link_xoff_tx (GLPRT_LXOFFTXC), XOFF"),
        Rule(r"port\.link_xon_tx", "nic_tx_pause_xon_frames_total",
             evidence=f"{_PF}: port.link_xon_tx (GLPRT_LXONTXC), XON"),
        Rule(r"port\.rx_priority_(?P<priority>[0-7])_xoff_rx", "nic_rx_pfc_frames_total",
             evidence=f"{_PFC}: XOFF per priority"),
        Rule(r"port\.rx_priority_(?P<priority>[0-7])_xon_rx", "nic_rx_pfc_xon_frames_total",
             evidence=f"{_PFC}: XON per priority"),
        Rule(r"port\.tx_priority_(?P<priority>[0-7])_xoff_tx", "nic_tx_pfc_frames_total",
             evidence=f"{_PFC}: XOFF per priority"),
        Rule(r"port\.tx_priority_(?P<priority>[0-7])_xon_tx", "nic_tx_pfc_xon_frames_total",
             evidence=f"{_PFC}: XON per priority"),
        # Good frames by destination: their sum is every good frame the port received.
        Rule(r"port\.rx_(?:unicast|multicast|broadcast)", "nic_phy_rx_packets_total",
             evidence=f"{_PF}: stats.eth.rx_unicast + rx_multicast + rx_broadcast (GLPRT_UPRCL, "
             "GLPRT_MPRCL, GLPRT_BPRCL), summed"),
        Rule(r"port\.tx_(?:unicast|multicast|broadcast)", "nic_phy_tx_packets_total",
             evidence=f"{_PF}: stats.eth.tx_unicast + tx_multicast + tx_broadcast (GLPRT_UPTCL, "
             "GLPRT_MPTCL, GLPRT_BPTCL), summed"),
        # Netdev rx_missed_errors = VSI GLV_RDPC (no descriptor), added with the rename below.
        Rule(r"rx_missed_errors", "nic_rx_out_of_buffer_drops_total",
             evidence="i40e_main.c i40e_update_vsi_stats: rx_missed_errors = "
             "eth_stats.rx_discards (\"i40e: Add rx_missed_errors for buffer exhaustion\", "
             "2023)"),
        # Port GLPRT_RDPC; renamed from port.rx_dropped to port.rx_discards (2023, backported).
        Rule(r"port\.rx_(?:dropped|discards)", "nic_rx_discards_total",
             evidence=f"{_PF}: stats.eth.rx_discards (GLPRT_RDPC), renamed in the same fix"),
        Rule(r"port\.rx_crc_errors", "nic_rx_crc_errors_total",
             evidence=f"{_PF}: stats.crc_errors (GLPRT_CRCERRS)"),
        Rule(r"port\.rx_bytes", "nic_phy_rx_bytes_total",
             evidence=f"{_PF}: stats.eth.rx_bytes (GLPRT_GORCL), bytes"),
        Rule(r"port\.tx_bytes", "nic_phy_tx_bytes_total",
             evidence=f"{_PF}: stats.eth.tx_bytes (GLPRT_GOTCL), bytes"),
    ),
    gauges=(r"port\.(?:tx|rx)_lpi_status", r"port\.fdir_(?:atr|sb)_status"),
    vf=VfStats(
        evidence="i40e_virtchnl_pf.c i40e_get_vf_stats: the VF VSI's i40e_eth_stats after "
        "i40e_update_eth_stats; -EBUSY (\"VF %d in reset. Try again.\", zero-filled by the "
        "kernel) while I40E_VF_STATE_INIT is clear",
        drops=(
            ("rx_dropped", VfDrop(
                "packets for the VF its VSI discarded: for want of receive descriptors "
                "(GLV_RDPC, buffer exhaustion) plus the VSI's other receive discards "
                "(GL_RXERR1)",
                "i40e_get_vf_stats: rx_dropped = rx_discards + rx_discards_other "
                "(i40e_stats_update_rx_discards: GLV_RDPC, GL_RXERR1)")),
            ("tx_dropped", VfDrop(
                "0 on kernels where i40e_get_vf_stats copies tx_discards, which "
                "i40e_update_eth_stats never updates (GLV_TDPC is not implemented); from "
                "the 2025 fix \"i40e: report VF tx_dropped with tx_errors instead of "
                "tx_discards\" (stable Linux 6.15.9, August 2025) the VF's packets that failed the "
                "VSI's transmit checks (GLV_TEPC, e.g. a VLAN the VF may not use)",
                "i40e_get_vf_stats tx_dropped; fix Fixes: dc645daef9af",
                zero_unset=True)),
        )),
    queues=(
        # `tx-0.packets`; drivers before ~2.8 repeated the direction: `tx-0.tx_packets`.
        QueueStat(r"(?P<dir>tx|rx)-(?P<queue>\d+)\.(?P<name>.+)", "{dir}-N.{name}"),
    ),
    notes="Until the 2023 fix \"i40e: Add rx_missed_errors for buffer exhaustion\" the netdev "
    "`rx_dropped` included the VSI no-descriptor drops; since then those are "
    "`rx_missed_errors` and `rx_dropped` counts other discards. Because the same name changed "
    "meaning, `rx_dropped` is never mapped, and older drivers have no out-of-buffer counter. "
    "`port.rx_dropped` was renamed `port.rx_discards` in the same fix. PAUSE and PFC "
    "families count XOFF (the pause) and the `*_xon_*` families XON (its release), kept "
    "apart so one pause episode counts once; the transmitted pause time is "
    "I40E_DEFAULT_PAUSE_TIME (0xFFFF quanta, refreshed every half of it); the "
    "XON-to-XOFF transitions and the `veb.*` statistics stay raw. i40e does not implement "
    "the kernel's standard pause statistics. Registers are accumulated into 64 bits by the "
    "driver; `port.*_lpi_status` and `port.fdir_*_status` are states (gauges).",
    irqs=(
        IrqName(r"i40e-.+-TxRx-(?P<queue>\d+)", "rxtx",
                "i40e_main.c i40e_vsi_request_irq_msix(): \"%s-%s-%d\" of basename "
                "\"i40e-<netdev>\""),
        IrqName(r"i40e-.+-rx-(?P<queue>\d+)", "rx", "i40e_vsi_request_irq_msix()"),
        IrqName(r"i40e-.+-tx-(?P<queue>\d+)", "tx", "i40e_vsi_request_irq_msix()"),
        IrqName(r"i40e-.+:misc", "other", "i40e_setup_misc_vector()"),
    ),
    rx_queue_packets=(r"rx-(?P<queue>\d+)\.packets",),
)
