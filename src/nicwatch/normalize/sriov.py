"""Series of an SR-IOV PF's VFs (Reading.sriov, --collector.vfs): per-VF counters labelled
``vf``, one ``nic_vf_info`` per VF, and the PF's VF counts.

What a driver puts in the kernel's VF counters is driver knowledge: the ``vf`` field of its
table (normalize/drivers/) says whether its ``ndo_get_vf_stats`` fills them and what each
drop counter counts; a drop counter the driver never updates is absent, one it counts only
in legacy e-switch mode is absent unless the PF's devlink instance shows legacy mode (no VF
representor ports, ``Reading.devlink_vf_ports`` 0)."""

from __future__ import annotations

from collections.abc import Mapping

from nicwatch.model import CounterValue, Reading, SeriesKey
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.rules import VfStats

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

# Drivers with VF counters but no `ethtool -S` table here: ionic_get_vf_stats
# (ionic_lif.c). What their drop counters count is not documented here: exported as read.
OTHER_VF_STATS: Mapping[str, VfStats] = {
    "ionic": VfStats(evidence="ionic_lif.c ionic_get_vf_stats"),
}


def vf_stats_of(driver: str | None) -> VfStats | None:
    """The driver's VF counters; None for a driver without ``ndo_get_vf_stats`` known here
    (the kernel zero-fills its VF counters)."""
    table = TABLES.get(driver or "")
    if table is not None and table.vf is not None:
        return table.vf
    return OTHER_VF_STATS.get(driver or "")


def _flag(value: bool | None) -> str:
    return "" if value is None else ("on" if value else "off")


def _exported(stat: str, known: VfStats | None, reading: Reading) -> bool:
    """Whether the VF statistic ``stat`` of this PF is a measurement (see the module
    docstring); the values are checked by the caller for ``zero_unset``."""
    drop = known.drop(stat) if known is not None else None
    if drop is None:
        return True
    if not drop.updated:
        return False
    return not drop.legacy_only or reading.devlink_vf_ports == 0


def _measured(reading: Reading, known: VfStats | None) -> bool:
    """Whether the VF counters of this PF are measurements at all: the driver fills them,
    or one of them is above zero (a zero-filling kernel never sends that)."""
    sriov = reading.sriov
    return sriov is not None and (known is not None or any(
        v for vf in sriov.vfs for v in vf.stats.values()))


def vf_counts(reading: Reading, driver: str | None) -> dict[str, int]:
    """The PF's VF counts from its link reply this poll; empty when the reply was not read.
    ``reported``: the VFs it described (``IFLA_VFINFO_LIST`` entries, as ``ip -d link``
    lists them), less the ``unreadable`` ones (left out of the list, or counters the kernel
    zero-filled after real values). ``no_counters``: the reported VFs exported without
    counters, whose settings are real but whose counters are not measurements: a driver
    without ``ndo_get_vf_stats`` (netdevsim, and any driver not known to fill them whose
    VF counters all read 0: rtnl_fill_vfinfo() sends the zeros it memset), or a reply that
    carried no ``IFLA_VF_STATS``."""
    sriov = reading.sriov
    if sriov is None or sriov.announced is None:
        return {}
    unreadable = set(sriov.unreadable)
    described = [vf for vf in sriov.vfs if vf.vf not in unreadable]
    measured = _measured(reading, vf_stats_of(driver))
    return {"reported": len(described),
            "no_counters": sum(1 for vf in described if not (measured and vf.stats)),
            "unreadable": len(sriov.unreadable)}


def vf_counters(reading: Reading, driver: str | None) -> dict[SeriesKey, CounterValue]:
    out: dict[SeriesKey, CounterValue] = {}
    sriov = reading.sriov
    if sriov is None or not sriov.vfs:
        return out
    known = vf_stats_of(driver)
    if not _measured(reading, known):
        return out
    families = []
    for stat, family in VF_FAMILIES:
        if not _exported(stat, known, reading):
            continue
        drop = known.drop(stat) if known is not None else None
        if drop is not None and drop.zero_unset and not any(
                vf.stats.get(stat) for vf in sriov.vfs):
            continue
        families.append((stat, family))
    for vf in sriov.vfs:
        labels = (("vf", str(vf.vf)),)
        stats = vf.stats
        for stat, family in families:
            value = stats.get(stat)
            if value is not None:
                out[SeriesKey(family, labels)] = CounterValue(value, SOURCE)
    return out


def vf_gauges(reading: Reading, driver: str | None) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    sriov = reading.sriov
    if sriov is None:
        return out
    counts: list[tuple[str, int | None]] = [("enabled", sriov.enabled), ("total", sriov.total)]
    counts += vf_counts(reading, driver).items()  # when the link reply was read
    for state, value in counts:
        if value is not None:
            out[SeriesKey("nic_sriov_vfs", (("state", state),))] = float(value)
    for vf in sriov.vfs:
        labels = (("link_state", vf.link_state or ""), ("mac", vf.mac or ""),
                  ("spoofchk", _flag(vf.spoofchk)), ("trust", _flag(vf.trust)),
                  ("vf", str(vf.vf)), ("vlan", "" if vf.vlan is None else str(vf.vlan)))
        out[SeriesKey("nic_vf_info", labels)] = 1.0
    return out
