"""Series of an SR-IOV PF's VFs (Reading.sriov, --collector.vfs): per-VF counters labelled
``vf``, one ``nic_vf_info`` per VF, and the PF's VF counts."""

from __future__ import annotations

from nicwatch.model import CounterValue, Reading, SeriesKey

SOURCE = "rtnetlink_vf"  # CounterValue.source of every VF counter (the tracker keys on it)

# Kernel VF statistic (IFLA_VF_STATS_*) -> family.
VF_FAMILIES = (
    ("rx_packets", "nic_vf_rx_packets_total"),
    ("tx_packets", "nic_vf_tx_packets_total"),
    ("rx_bytes", "nic_vf_rx_bytes_total"),
    ("tx_bytes", "nic_vf_tx_bytes_total"),
    ("broadcast", "nic_vf_rx_broadcast_total"),
    ("multicast", "nic_vf_rx_multicast_total"),
    ("rx_dropped", "nic_vf_rx_dropped_total"),
    ("tx_dropped", "nic_vf_tx_dropped_total"),
)

# Drivers whose ndo_get_vf_stats fills the VF counters (the kernel zero-fills them for a
# driver without one, so zeros alone prove nothing): mlx5e_get_vf_stats (mlx5 en_main.c),
# i40e_get_vf_stats (i40e_virtchnl_pf.c), ice_get_vf_stats (ice_sriov.c), ionic_get_vf_stats
# (ionic_lif.c). For any other driver the counters are exported once a VF counter of the PF
# is above zero, which a zero-filling kernel never sends.
VF_STATS_DRIVERS = frozenset({"mlx5_core", "i40e", "ice", "ionic"})


def _flag(value: bool | None) -> str:
    return "" if value is None else ("on" if value else "off")


def vf_counters(reading: Reading, driver: str | None) -> dict[SeriesKey, CounterValue]:
    out: dict[SeriesKey, CounterValue] = {}
    sriov = reading.sriov
    if sriov is None or not sriov.vfs:
        return out
    if driver not in VF_STATS_DRIVERS and not any(
            v for vf in sriov.vfs for v in vf.stats.values()):
        return out
    for vf in sriov.vfs:
        labels = (("vf", str(vf.vf)),)
        stats = vf.stats
        for stat, family in VF_FAMILIES:
            value = stats.get(stat)
            if value is not None:
                out[SeriesKey(family, labels)] = CounterValue(value, SOURCE)
    return out


def vf_gauges(reading: Reading) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    sriov = reading.sriov
    if sriov is None:
        return out
    for state, value in (("enabled", sriov.enabled), ("total", sriov.total),
                         ("reported", sriov.reported)):
        if value is not None:
            out[SeriesKey("nic_sriov_vfs", (("state", state),))] = float(value)
    for vf in sriov.vfs:
        labels = (("link_state", vf.link_state or ""), ("mac", vf.mac or ""),
                  ("spoofchk", _flag(vf.spoofchk)), ("trust", _flag(vf.trust)),
                  ("vf", str(vf.vf)), ("vlan", "" if vf.vlan is None else str(vf.vlan)))
        out[SeriesKey("nic_vf_info", labels)] = 1.0
    return out
