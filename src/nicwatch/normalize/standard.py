"""Driver-independent sources: the kernel's ethtool-netlink standard statistics and the
netdev counters in sysfs. They use the same Rule vocabulary as the driver tables.

The ethtool-netlink statistics are defined by the kernel after IEEE 802.3 clause 30, but
each driver decides which of its hardware counters it reports under each name. Where a
driver's table declares what it fills a statistic with (``DriverTable.netlink``), that
declaration decides the family; ``netlink_rules`` builds the per-driver rule list.
"""

from __future__ import annotations

import re
from functools import lru_cache

from nicwatch.normalize.rules import DriverTable, Rule

_NL = "include/uapi/linux/ethtool_netlink(_generated).h, net/ethtool/"

# Keys as built by sources.ethtool_netlink (see EthtoolNetlinkInfo.std_stats).
ETHTOOL_NETLINK: tuple[Rule, ...] = (
    Rule(r"pause\.rx_frames", "nic_rx_pause_frames_total",
         evidence=f"ETHTOOL_A_PAUSE_STAT_RX_FRAMES ({_NL}pause.c, 5.10, commit 9a27a33027f2 "
         "\"ethtool: add standard pause stats\": IEEE 802.3 30.3.4.3 aPAUSEMACCtrlFrames"
         "Received, \"does not include PFC counters\")"),
    Rule(r"pause\.tx_frames", "nic_tx_pause_frames_total",
         evidence=f"ETHTOOL_A_PAUSE_STAT_TX_FRAMES ({_NL}pause.c, 5.10): IEEE 802.3 30.3.4.2 "
         "aPAUSEMACCtrlFramesTransmitted"),
    Rule(r"fec\.corrected_blocks", "nic_fec_corrected_blocks_total", (("lane", "total"),),
         evidence=f"ETHTOOL_A_FEC_STAT_CORRECTED ({_NL}fec.c, 5.13): IEEE 802.3 30.5.1.1.17 "
         "aFECCorrectedBlocks; total recomputed as the sum of lanes (fec_stats_recalc)"),
    Rule(r"fec\.corrected_blocks\.lane(?P<lane>\d+)", "nic_fec_corrected_blocks_total",
         evidence="ETHTOOL_A_FEC_STAT_CORRECTED array entries 1..8 (per lane)"),
    Rule(r"fec\.uncorrectable_blocks", "nic_fec_uncorrectable_blocks_total",
         (("lane", "total"),),
         evidence=f"ETHTOOL_A_FEC_STAT_UNCORR ({_NL}fec.c, 5.13): IEEE 802.3 30.5.1.1.18 "
         "aFECUncorrectableBlocks"),
    Rule(r"fec\.uncorrectable_blocks\.lane(?P<lane>\d+)", "nic_fec_uncorrectable_blocks_total",
         evidence="ETHTOOL_A_FEC_STAT_UNCORR array entries 1..8 (per lane)"),
    Rule(r"fec\.corrected_bits", "nic_fec_corrected_bit_errors_total",
         evidence=f"ETHTOOL_A_FEC_STAT_CORR_BITS ({_NL}fec.c, 5.13): bits corrected by FEC"),
    # Link physics (docs/link-physics.md).
    Rule(r"fec\.corrected_bits\.lane(?P<lane>\d+)", "nic_fec_lane_bit_errors_total",
         evidence="ETHTOOL_A_FEC_STAT_CORR_BITS array entries 1..8 (per lane, 5.13)"),
    Rule(r"fec\.hist\.(?P<bin_low>\d+)_(?P<bin_high>\d+)", "nic_fec_codewords_total",
         (("lane", "total"),),
         evidence=f"ETHTOOL_A_FEC_STAT_HIST bin ({_NL}fec.c fec_put_hist, 6.18, commit "
         "cc2f08129925): ETHTOOL_A_FEC_HIST_BIN_LOW/HIGH, BIN_VAL"),
    Rule(r"fec\.hist\.(?P<bin_low>\d+)_(?P<bin_high>\d+)\.lane(?P<lane>\d+)",
         "nic_fec_codewords_total",
         evidence="ETHTOOL_A_FEC_HIST_BIN_VAL_PER_LANE array entries (6.18)"),
    Rule(r"linkstate\.ext_down_cnt", "nic_link_down_events_total",
         evidence=f"ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT ({_NL}linkstate.c, ~6.2): the driver's "
         "link_down_events (get_link_ext_stats; mlx5: PPCNT phys_layer_cntrs.link_down_events)"),
    Rule(r"eth-mac\.FrameCheckSequenceErrors", "nic_rx_crc_errors_total",
         evidence=f"ETHTOOL_A_STATS_ETH_MAC_6_FCS_ERR ({_NL}stats.c, 5.13): IEEE 802.3 "
         "30.3.1.1.6 aFrameCheckSequenceErrors"),
    Rule(r"eth-mac\.OctetsReceivedOK", "nic_phy_rx_bytes_total",
         evidence="ETHTOOL_A_STATS_ETH_MAC_14_RX_BYTES (5.13): IEEE 802.3 30.3.1.1.14 "
         "aOctetsReceivedOK"),
    Rule(r"eth-mac\.OctetsTransmittedOK", "nic_phy_tx_bytes_total",
         evidence="ETHTOOL_A_STATS_ETH_MAC_8_TX_BYTES (5.13): IEEE 802.3 30.3.1.1.8 "
         "aOctetsTransmittedOK"),
    Rule(r"eth-phy\.SymbolErrorDuringCarrier", "nic_rx_symbol_errors_total",
         evidence="ETHTOOL_A_STATS_ETH_PHY_5_SYM_ERR (5.13): IEEE 802.3 30.3.2.1.5 "
         "aSymbolErrorDuringCarrier"),
)

_NETDEV = "include/uapi/linux/if_link.h struct rtnl_link_stats64; net/core/net-sysfs.c"

# /sys/class/net/<if>/statistics/* and the carrier counters next to it.
SYSFS_NET: tuple[Rule, ...] = (
    Rule(r"rx_bytes", "nic_rx_bytes_total", evidence=_NETDEV),
    Rule(r"tx_bytes", "nic_tx_bytes_total", evidence=_NETDEV),
    Rule(r"rx_packets", "nic_rx_packets_total", evidence=_NETDEV),
    Rule(r"tx_packets", "nic_tx_packets_total", evidence=_NETDEV),
    Rule(r"rx_errors", "nic_rx_errors_total", evidence=_NETDEV),
    Rule(r"tx_errors", "nic_tx_errors_total", evidence=_NETDEV),
    Rule(r"rx_dropped", "nic_rx_dropped_total", evidence=_NETDEV),
    Rule(r"tx_dropped", "nic_tx_dropped_total", evidence=_NETDEV),
    Rule(r"carrier_up_count", "nic_carrier_up_events_total",
         evidence="net/core/net-sysfs.c carrier_up_count (5.0)"),
    Rule(r"carrier_down_count", "nic_carrier_down_events_total",
         evidence="net/core/net-sysfs.c carrier_down_count (5.0)"),
)

def _netlink_rule(key: str) -> Rule | None:
    for rule in ETHTOOL_NETLINK:
        if re.fullmatch(rule.pattern, key):
            return rule
    return None


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=64)
def netlink_rules(table: DriverTable | None) -> tuple[tuple[Rule, ...], frozenset[str]]:
    """The netlink rules for one driver and the netlink keys it must not export.

    A driver's ``netlink`` declarations come first (so they win over the generic rule for
    the same key); a declaration with ``metric=None`` drops the key."""
    if table is None or not table.netlink:
        return ETHTOOL_NETLINK, frozenset()
    own = tuple(Rule(re.escape(f.key), f.metric, f.labels, evidence=f.evidence)
                for f in table.netlink if f.metric is not None)
    dropped = frozenset(f.key for f in table.netlink if f.metric is None)
    return own + ETHTOOL_NETLINK, dropped
