"""Readings -> Samples: map every source's raw names onto the canonical contract.

Families come from the first source that has them, in this order: the kernel's
driver-independent ethtool-netlink statistics, the driver's own `ethtool -S` names (through
its table in ``drivers/``), then the netdev counters in sysfs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nicwatch.metrics import CANONICAL_COUNTERS
from nicwatch.model import CounterValue, PcieVerdict, Reading, Sample, SeriesKey
from nicwatch.normalize import standard
from nicwatch.normalize.devlink import devlink_counters, devlink_gauges, firmware_gauges
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.engine import (
    Plan,
    RawOptions,
    apply_counters,
    apply_gauges,
    compile_plan,
    map_named,
    merge_by_family,
)
from nicwatch.normalize.gauges import identity_of, reading_gauges
from nicwatch.normalize.hwmon import hwmon_gauges
from nicwatch.normalize.module import gauges as module_gauges
from nicwatch.normalize.module import status_gauges as module_status_gauges
from nicwatch.normalize.platform import (
    module_read_counters,
    pcie_counters,
    pcie_gauges,
)
from nicwatch.normalize.rxpath import rxpath_counters, rxpath_gauges
from nicwatch.normalize.sriov import vf_counters, vf_gauges

__all__ = ["NormalizeOptions", "RawOptions", "normalize", "normalize_driver_stats"]


@dataclass(frozen=True, slots=True)
class NormalizeOptions:
    raw: RawOptions = RawOptions()


def driver_of(reading: Reading) -> str | None:
    if reading.driver_info and reading.driver_info.driver:
        return reading.driver_info.driver
    return reading.netclass.driver


def normalize_driver_stats(
        driver: str | None, names: tuple[str, ...], values: Sequence[int],
        raw: RawOptions = RawOptions()) -> tuple[dict[SeriesKey, CounterValue],
                                                dict[SeriesKey, float]]:
    """Canonical (and opt-in raw) series from one driver's `ethtool -S` names and values."""
    # A reader hands over the same names tuple every poll until the set changes (one tuple
    # for all interfaces with that set): the plan is found by that object and the driver
    # (the entry holds the object, so its id stays its own) before the compile cache is
    # asked, which would hash and compare every name.
    hit = _PLANS.get((id(names), driver))
    if hit is not None and hit[0] is names and hit[1] is raw:
        plan = hit[2]
    else:
        table = TABLES.get(driver or "")
        rules = table.rules if table else ()
        plan = compile_plan("ethtool_ioctl", rules, names, table, raw)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[(id(names), driver)] = (names, raw, plan)
    return apply_counters(plan, values, "ethtool_ioctl"), apply_gauges(plan, values)


# (id(names), driver) -> (names, raw, plan)
_PLANS: dict[tuple[int, str | None], tuple[tuple[str, ...], RawOptions, Plan]] = {}
_PLANS_MAX = 1024


def _netlink_counters(driver: str | None,
                      stats: Mapping[str, int]) -> dict[SeriesKey, CounterValue]:
    """The kernel's standard statistics, each into the family its driver fills it with."""
    rules, dropped = standard.netlink_rules(TABLES.get(driver or ""))
    kept = {k: v for k, v in stats.items() if k not in dropped} if dropped else stats
    return map_named("ethtool_netlink", rules, kept)


def _netclass_stats(reading: Reading) -> dict[str, int]:
    nc = reading.netclass
    stats = dict(nc.stats)
    for name in ("carrier_up_count", "carrier_down_count"):
        value = getattr(nc, name)
        if value is not None:
            stats[name] = value
    return stats


def normalize(reading: Reading, options: NormalizeOptions = NormalizeOptions(),
              pcie_verdict: PcieVerdict | None = None) -> Sample:
    """One interface's Sample; ``pcie_verdict`` (derived across interfaces after reading,
    see normalize.pcie.assess_all) adds the PCIe verdict gauges."""
    driver = driver_of(reading)
    driver_counters: dict[SeriesKey, CounterValue] = {}
    raw_gauges: dict[SeriesKey, float] = {}
    if reading.stats is not None:
        driver_counters, raw_gauges = normalize_driver_stats(
            driver, reading.stats.names, reading.stats.values, options.raw)
    netlink = _netlink_counters(driver, reading.netlink.std_stats) if reading.netlink else {}
    sysfs = map_named("sysfs", standard.SYSFS_NET, _netclass_stats(reading))
    counters = merge_by_family(netlink, driver_counters, sysfs)
    supported = frozenset(k.metric for k in counters if k.metric in CANONICAL_COUNTERS)
    counters.update(pcie_counters(reading))
    counters.update(devlink_counters(reading))
    counters.update(module_read_counters(reading))
    if reading.sriov is not None:
        counters.update(vf_counters(reading, driver))
    table = TABLES.get(driver or "")
    if reading.queues is not None or reading.rxpath is not None or (
            table is not None and table.rx_queue_packets and reading.stats is not None):
        counters.update(rxpath_counters(reading, table, options.raw.per_queue))
    gauges = reading_gauges(reading, driver, supported)
    gauges.update(pcie_gauges(reading, pcie_verdict))
    gauges.update(raw_gauges)
    gauges.update(devlink_gauges(reading))
    gauges.update(module_gauges(reading.module, reading.device))
    gauges.update(module_status_gauges(reading.module, reading.module_read, reading.device))
    if reading.sriov is not None:
        gauges.update(vf_gauges(reading, driver))
    if reading.rxpath is not None:
        gauges.update(rxpath_gauges(reading, table))
    gauges.update(hwmon_gauges(reading.hwmon))
    gauges.update(firmware_gauges(reading.devlink_info))
    return Sample(
        identity=identity_of(reading, driver),
        time=reading.time,
        monotonic=reading.monotonic,
        counters=counters,
        gauges=gauges,
        supported=supported,
        stats_generation=reading.stats.generation if reading.stats else None,
        reading=reading,
        pcie_verdict=pcie_verdict,
    )
