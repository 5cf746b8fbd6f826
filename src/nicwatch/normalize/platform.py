"""Series from the platform around a NIC: its PCIe path (link state, AER, the derived
ceiling verdict) and its module reads."""

from __future__ import annotations

from nicwatch.metrics import (
    MODULE_READ_ERRORS,
    NUMA_NODE,
    PCIE_AER_ERRORS,
    PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND,
    PCIE_DEGRADED,
    PCIE_EMULATED_PORTS,
    PCIE_LINK_SPEED_GTS,
    PCIE_LINK_WIDTH,
    PCIE_SHARED_LINE_RATE_BYTES_PER_SECOND,
    PCIE_SLOT_LIMITED,
    PCIE_VERDICT_UNKNOWN,
)
from nicwatch.model import CounterValue, PcieVerdict, Reading, SeriesKey
from nicwatch.normalize.pcie_verdict import REASONS, SPEED, UNKNOWN_REASONS, WIDTH

_AER_TOTALS = (("correctable", "total_correctable"), ("nonfatal", "total_nonfatal"),
               ("fatal", "total_fatal"))


def pcie_gauges(reading: Reading, verdict: PcieVerdict | None) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    path = reading.pcie
    if path is None or not path.is_pcie:
        return out
    for hop, dev in enumerate(path.hops):
        link = dev.link
        if link is None:
            continue
        for kind, speed, width in (("current", link.current_speed_gts, link.current_width),
                                   ("max", link.max_speed_gts, link.max_width)):
            labels = (("hop", str(hop)), ("kind", kind), ("pci_address", dev.bdf))
            if speed is not None:
                out[SeriesKey(PCIE_LINK_SPEED_GTS.name, labels)] = speed
            if width is not None:
                out[SeriesKey(PCIE_LINK_WIDTH.name, labels)] = float(width)
    if path.hops[0].numa_node is not None:
        out[SeriesKey(NUMA_NODE.name)] = float(path.hops[0].numa_node)
    if verdict is None:
        return out
    if verdict.ceiling is not None:
        out[SeriesKey(PCIE_BANDWIDTH_CEILING_BYTES_PER_SECOND.name)] = float(
            verdict.ceiling.bytes_per_second)
    if verdict.line_rate_bytes_per_second:
        out[SeriesKey(PCIE_SHARED_LINE_RATE_BYTES_PER_SECOND.name)] = float(
            verdict.line_rate_bytes_per_second)
    for reason in REASONS:
        key = SeriesKey(PCIE_DEGRADED.name, (("reason", reason),))
        out[key] = float(reason in verdict.reasons)
    for reason in UNKNOWN_REASONS:
        out[SeriesKey(PCIE_VERDICT_UNKNOWN.name, (("reason", reason),))] = float(
            reason in verdict.unknown)
    out[SeriesKey(PCIE_EMULATED_PORTS.name)] = float(len(verdict.emulated_hops))
    for limit in (WIDTH, SPEED):
        out[SeriesKey(PCIE_SLOT_LIMITED.name, (("limit", limit),))] = float(
            limit in verdict.slot_limits)
    return out


def pcie_counters(reading: Reading) -> dict[SeriesKey, CounterValue]:
    out: dict[SeriesKey, CounterValue] = {}
    if reading.pcie is None:
        return out
    for hop, dev in enumerate(reading.pcie.hops):
        if dev.aer is None:
            continue
        for severity, attr in _AER_TOTALS:
            value = getattr(dev.aer, attr)
            if value is not None:
                labels = (("hop", str(hop)), ("pci_address", dev.bdf), ("severity", severity))
                key = SeriesKey(PCIE_AER_ERRORS.name, labels)
                out[key] = CounterValue(value, "sysfs_pci")
    return out


def module_read_counters(reading: Reading) -> dict[SeriesKey, CounterValue]:
    """Failed module EEPROM reads by kind (nic_module_read_errors_total)."""
    status = reading.module_read
    if status is None:
        return {}
    return {SeriesKey(MODULE_READ_ERRORS.name, (("kind", kind),)): CounterValue(n, "module")
            for kind, n in status.errors.items()}
