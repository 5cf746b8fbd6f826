"""Series from the platform around a NIC: its PCIe path (link state, AER, the derived
ceiling verdict) and its RDMA ports."""

from __future__ import annotations

from nicwatch.model import CounterValue, PcieVerdict, Reading, SeriesKey
from nicwatch.normalize import standard
from nicwatch.normalize.engine import map_named
from nicwatch.normalize.pcie import REASONS, SPEED, UNKNOWN_REASONS, WIDTH

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
                out[SeriesKey("nic_pcie_link_speed_gts", labels)] = speed
            if width is not None:
                out[SeriesKey("nic_pcie_link_width", labels)] = float(width)
    if path.hops[0].numa_node is not None:
        out[SeriesKey("nic_numa_node")] = float(path.hops[0].numa_node)
    if verdict is None:
        return out
    if verdict.ceiling is not None:
        out[SeriesKey("nic_pcie_bandwidth_ceiling_bytes_per_second")] = float(
            verdict.ceiling.bytes_per_second)
    if verdict.line_rate_bytes_per_second:
        out[SeriesKey("nic_pcie_shared_line_rate_bytes_per_second")] = float(
            verdict.line_rate_bytes_per_second)
    for reason in REASONS:
        key = SeriesKey("nic_pcie_degraded", (("reason", reason),))
        out[key] = float(reason in verdict.reasons)
    for reason in UNKNOWN_REASONS:
        out[SeriesKey("nic_pcie_verdict_unknown", (("reason", reason),))] = float(
            reason in verdict.unknown)
    out[SeriesKey("nic_pcie_emulated_ports")] = float(len(verdict.emulated_hops))
    for limit in (WIDTH, SPEED):
        out[SeriesKey("nic_pcie_slot_limited", (("limit", limit),))] = float(
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
                key = SeriesKey("nic_pcie_aer_errors_total", labels)
                out[key] = CounterValue(value, "sysfs_pci")
    return out


def rdma_counters(reading: Reading) -> dict[SeriesKey, CounterValue]:
    out: dict[SeriesKey, CounterValue] = {}
    for port in reading.rdma:
        extra = (("port", str(port.port)), ("rdma_device", port.device))
        mapped = map_named("sysfs_infiniband", standard.INFINIBAND,
                           {**port.counters, **port.hw_counters})
        for key, value in mapped.items():
            out[SeriesKey(key.metric, tuple(sorted(key.labels + extra)))] = value
    return out


def module_read_counters(reading: Reading) -> dict[SeriesKey, CounterValue]:
    """Failed module EEPROM reads by kind (nic_module_read_errors_total)."""
    status = reading.module_read
    if status is None:
        return {}
    return {SeriesKey("nic_module_read_errors_total", (("kind", kind),)): CounterValue(n, "module")
            for kind, n in status.errors.items()}
