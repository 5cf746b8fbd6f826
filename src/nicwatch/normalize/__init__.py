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
    KeptPlans,
    NamedPlans,
    Plan,
    RawOptions,
    apply_counters,
    apply_gauges,
    compile_plan,
    merge_by_family,
)
from nicwatch.normalize.fabric import fabric_counters, fabric_gauges
from nicwatch.normalize.gauges import identity_of, reading_gauges
from nicwatch.normalize.hwmon import hwmon_gauges
from nicwatch.normalize.module import DecodedModules
from nicwatch.normalize.module import status_gauges as module_status_gauges
from nicwatch.normalize.platform import (
    module_read_counters,
    pcie_counters,
    pcie_gauges,
)
from nicwatch.normalize.rxpath import rxpath_counters, rxpath_gauges
from nicwatch.normalize.sriov import vf_counters, vf_gauges
from nicwatch.normalize.state import module_state, nic_state

__all__ = ["NormalizeOptions", "Normalizer", "RawOptions", "normalize", "normalize_driver_stats"]


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
    plan = _driver_plan(driver, names, raw)
    return apply_counters(plan, values, "ethtool_ioctl"), apply_gauges(plan, values)


def _driver_plan(driver: str | None, names: tuple[str, ...], raw: RawOptions) -> Plan:
    table = TABLES.get(driver or "")
    return compile_plan("ethtool_ioctl", table.rules if table else (), names, table, raw)


class Normalizer:
    """Readings -> Samples for one collector, keeping what it found from poll to poll by
    the objects the readers hand over again: the plans of each driver's names and of the
    standard sources' names, and each interface's decoded module EEPROM. :func:`normalize`
    is the same without anything kept."""

    PLANS_MAX = 1024  # name lists kept

    __slots__ = ("_plans", "modules", "named", "queues")

    def __init__(self) -> None:
        # (id(names), driver) -> (names, raw, plan)
        self._plans: dict[tuple[int, str | None], tuple[tuple[str, ...], RawOptions, Plan]] = {}
        self.named = NamedPlans()
        self.queues = KeptPlans()  # per-queue packet sums of the driver's names
        self.modules = DecodedModules()

    def driver_stats(self, driver: str | None, names: tuple[str, ...], values: Sequence[int],
                     raw: RawOptions) -> tuple[dict[SeriesKey, CounterValue],
                                               dict[SeriesKey, float]]:
        """:func:`normalize_driver_stats`, the plan kept by the names object."""
        # A reader hands over the same names tuple every poll until the set changes (one
        # tuple for all interfaces with that set): the plan is found by that object and the
        # driver (the entry holds the object, so its id stays its own) before the compile
        # cache is asked, which would hash and compare every name.
        hit = self._plans.get((id(names), driver))
        if hit is not None and hit[0] is names and hit[1] is raw:
            plan = hit[2]
        else:
            plan = _driver_plan(driver, names, raw)
            if len(self._plans) >= self.PLANS_MAX:
                self._plans.clear()
            self._plans[(id(names), driver)] = (names, raw, plan)
        return apply_counters(plan, values, "ethtool_ioctl"), apply_gauges(plan, values)

    def normalize(self, reading: Reading, options: NormalizeOptions = NormalizeOptions(),
                  pcie_verdict: PcieVerdict | None = None) -> Sample:
        """One interface's Sample; ``pcie_verdict`` (derived across interfaces after
        reading, see normalize.pcie_verdict.assess_all) adds the PCIe verdict gauges."""
        return _normalize(self, reading, options, pcie_verdict)


def _netlink_counters(named: NamedPlans, driver: str | None,
                      stats: Mapping[str, int]) -> dict[SeriesKey, CounterValue]:
    """The kernel's standard statistics, each into the family its driver fills it with."""
    rules, dropped = standard.netlink_rules(TABLES.get(driver or ""))
    kept = {k: v for k, v in stats.items() if k not in dropped} if dropped else stats
    return named.map("ethtool_netlink", rules, kept)


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
    """One interface's Sample, with nothing kept for the next poll (a collector keeps a
    :class:`Normalizer`); ``pcie_verdict`` (derived across interfaces after reading, see
    normalize.pcie_verdict.assess_all) adds the PCIe verdict gauges."""
    return _normalize(Normalizer(), reading, options, pcie_verdict)


def _normalize(kept: Normalizer, reading: Reading, options: NormalizeOptions,
               pcie_verdict: PcieVerdict | None) -> Sample:
    driver = driver_of(reading)
    driver_counters: dict[SeriesKey, CounterValue] = {}
    raw_gauges: dict[SeriesKey, float] = {}
    if reading.stats is not None:
        driver_counters, raw_gauges = kept.driver_stats(
            driver, reading.stats.names, reading.stats.values, options.raw)
    netlink = (_netlink_counters(kept.named, driver, reading.netlink.std_stats)
               if reading.netlink else {})
    sysfs = kept.named.map("sysfs", standard.SYSFS_NET, _netclass_stats(reading))
    counters = merge_by_family(netlink, driver_counters, sysfs)
    supported = frozenset(k.metric for k in counters if k.metric in CANONICAL_COUNTERS)
    counters.update(pcie_counters(reading))
    counters.update(devlink_counters(reading))
    counters.update(module_read_counters(reading))
    counters.update(fabric_counters(reading))
    if reading.sriov is not None:
        counters.update(vf_counters(reading, driver))
    table = TABLES.get(driver or "")
    if reading.queues is not None or reading.rxpath is not None or (
            table is not None and table.rx_queue_packets and reading.stats is not None):
        counters.update(rxpath_counters(reading, table, options.raw.per_queue, kept.queues))
    module_series, corrupt = kept.modules.kept(reading.module, reading.device)
    state = nic_state(reading, module_state(reading, module_series, corrupt))
    gauges = reading_gauges(reading, driver, supported, state)
    gauges.update(pcie_gauges(reading, pcie_verdict))
    gauges.update(raw_gauges)
    gauges.update(devlink_gauges(reading))
    gauges.update(module_series)
    gauges.update(module_status_gauges(state.module))
    if reading.sriov is not None:
        gauges.update(vf_gauges(reading, driver))
    if reading.rxpath is not None:
        gauges.update(rxpath_gauges(reading, table))
    gauges.update(hwmon_gauges(reading.hwmon))
    gauges.update(firmware_gauges(reading.devlink_info))
    gauges.update(fabric_gauges(reading))
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
        state=state,
    )
