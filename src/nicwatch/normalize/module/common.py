"""What the three module memory maps share: field readers that never raise on a short page,
the SFF-8024 identifier names, the units of the monitors and the order of threshold blocks.

Every reader takes a half page (``bytes``, 0..128 long, offset 0 being byte 0 or byte 128 of
the map) and returns None when the field lies past the end of what was read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

# Threshold blocks are four 16-bit values in this order in SFF-8472 A2h, SFF-8636 page 03h
# and CMIS page 02h alike.
LEVELS = ("high_alarm", "low_alarm", "high_warning", "low_warning")

# SFF-8024 Table 4-1, identifier byte (byte 0 of every map): the name nic_module_info shows.
IDENTIFIERS = {
    0x01: "GBIC", 0x02: "SFP (soldered)", 0x03: "SFP", 0x0B: "DWDM-SFP", 0x0C: "QSFP",
    0x0D: "QSFP+", 0x11: "QSFP28", 0x18: "QSFP-DD", 0x19: "OSFP", 0x1A: "SFP-DD",
    0x1B: "DSFP", 0x1E: "QSFP (CMIS)", 0x1F: "SFP-DD (CMIS)", 0x20: "SFP+ (CMIS)",
}


class ModuleValue(NamedTuple):
    """One decoded value: family name (nicwatch.metrics), labels (no ``device``), value in
    the family's base unit."""

    metric: str
    labels: dict[str, str]
    value: float


def identifier_name(code: int) -> str:
    return IDENTIFIERS.get(code, f"0x{code:02x}")


def byte(page: bytes | None, offset: int) -> int | None:
    return page[offset] if page is not None and offset < len(page) else None


def u16(page: bytes | None, offset: int) -> int | None:
    if page is None or offset + 2 > len(page):
        return None
    return page[offset] << 8 | page[offset + 1]


def s16(page: bytes | None, offset: int) -> int | None:
    value = u16(page, offset)
    return value - 0x10000 if value is not None and value & 0x8000 else value


def text(page: bytes | None, start: int, end: int) -> str:
    """An ASCII field (``end`` exclusive), space padded; "" when not read. Bytes outside
    printable ASCII show as "?" so that a label never carries control characters."""
    if page is None or end > len(page):
        return ""
    raw = page[start:end]
    return "".join(chr(b) if 32 <= b < 127 else "?" for b in raw.rstrip(b"\x00 ")).strip()


# Units shared by all three maps (SFF-8472 9.1, SFF-8636 6.2.4, CMIS 8.2.5 / 8.9.4).

def celsius(raw: float) -> float:  # signed, 1/256 degree per bit
    return raw / 256


def volts(raw: float) -> float:  # 100 uV per bit
    return raw / 10_000


def watts(raw: float) -> float:  # 0.1 uW per bit
    return raw / 10_000_000


def amperes(raw: float) -> float:  # 2 uA per bit
    return raw * 2 / 1_000_000


# quantity: (monitor family, threshold family, raw -> base unit, signed raw)
MONITORS = {
    "temperature": ("nic_module_temperature_celsius",
                    "nic_module_temperature_threshold_celsius", celsius, True),
    "supply_voltage": ("nic_module_supply_voltage_volts",
                       "nic_module_supply_voltage_threshold_volts", volts, False),
    "tx_bias": ("nic_module_tx_bias_amperes", "nic_module_tx_bias_threshold_amperes", amperes,
                False),
    "tx_power": ("nic_module_tx_power_watts", "nic_module_tx_power_threshold_watts", watts,
                 False),
    "rx_power": ("nic_module_rx_power_watts", "nic_module_rx_power_threshold_watts", watts,
                 False),
}


def value(out: list[ModuleValue], metric: str, labels: dict[str, str],
          number: float | None) -> None:
    """Append one value unless it is unknown or not finite (garbage calibration constants)."""
    if number is not None and math.isfinite(number):
        out.append(ModuleValue(metric, labels, float(number)))


def monitor(out: list[ModuleValue], quantity: str, page: bytes | None, offset: int, lane: str = "",
            scale: float = 1.0) -> None:
    """The monitor of ``quantity`` at ``offset`` (lane "" for module-wide quantities)."""
    metric, _, unit, signed = MONITORS[quantity]
    raw = (s16 if signed else u16)(page, offset)
    value(out, metric, {"lane": lane} if lane else {}, None if raw is None else unit(raw * scale))


def thresholds(out: list[ModuleValue], quantity: str, page: bytes | None, offset: int,
               scale: float = 1.0) -> None:
    """The four thresholds of ``quantity`` at ``offset`` (LEVELS order)."""
    _, metric, unit, signed = MONITORS[quantity]
    read = s16 if signed else u16
    for i, level in enumerate(LEVELS):
        raw = read(page, offset + 2 * i)
        value(out, metric, {"level": level}, None if raw is None else unit(raw * scale))


def flag(out: list[ModuleValue], quantity: str, level: str, lane: str, bits: int | None,
         mask: int) -> None:
    """nic_module_flag: 1 when ``mask`` is set in ``bits``; nothing when ``bits`` was not read."""
    if bits is not None:
        out.append(ModuleValue("nic_module_flag",
                               {"quantity": quantity, "level": level, "lane": lane},
                               1.0 if bits & mask else 0.0))


def level_flags(out: list[ModuleValue], quantity: str, bits: int | None, masks: Iterable[int],
                lane: str = "") -> None:
    """Four alarm/warning flags of one quantity, ``masks`` in LEVELS order."""
    for level, mask in zip(LEVELS, masks, strict=True):
        flag(out, quantity, level, lane, bits, mask)


def info(identifier: int, spec: str, vendor: str, part: str, serial: str, revision: str,
         firmware: str = "") -> ModuleValue:
    return ModuleValue("nic_module_info", {
        "identifier": identifier_name(identifier), "spec": spec, "vendor": vendor,
        "part": part, "serial": serial, "revision": revision, "firmware": firmware}, 1.0)
