"""Gauges from a NIC's hwmon device (sources/sysfs_hwmon.py): the chip's temperature
sensors and their thresholds, labelled by sensor."""

from __future__ import annotations

from collections import Counter

from nicwatch.metrics import ASIC_TEMPERATURE, ASIC_TEMPERATURE_THRESHOLD
from nicwatch.model import HwmonTemperature, NicHwmon, SeriesKey

LEVELS = ("warning", "critical", "emergency", "shutdown")


def sensor_names(temperatures: tuple[HwmonTemperature, ...]) -> list[str]:
    """The sensor label of each channel: its label, or ``tempN`` where two channels share
    one (so no two series collide)."""
    counts = Counter(t.label for t in temperatures)
    return [t.label if counts[t.label] == 1 else f"temp{t.channel}" for t in temperatures]


def hwmon_gauges(hwmon: NicHwmon | None) -> dict[SeriesKey, float]:
    out: dict[SeriesKey, float] = {}
    if hwmon is None:
        return out
    out[SeriesKey("nic_asic_hwmon_info", (("hwmon", hwmon.hwmon), ("name", hwmon.name),
                                           ("pci_address", hwmon.pci_address)))] = 1.0
    for sensor, t in zip(sensor_names(hwmon.temperatures), hwmon.temperatures, strict=True):
        labels = (("sensor", sensor),)
        if t.celsius is not None:
            out[SeriesKey(ASIC_TEMPERATURE.name, labels)] = t.celsius
        if t.highest is not None:
            out[SeriesKey("nic_asic_temperature_highest_celsius", labels)] = t.highest
        for level in LEVELS:
            value = getattr(t, level)
            if value is not None:
                out[SeriesKey(ASIC_TEMPERATURE_THRESHOLD.name,
                              (("level", level), ("sensor", sensor)))] = value
    return out
