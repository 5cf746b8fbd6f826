"""What the three module memory maps share: field readers that never raise on a short page,
the SFF-8024 identifier names, the units of the monitors and their physical bounds, the order
of threshold blocks, and the page checksums.

Every reader takes a half page (``bytes``, 0..128 long, offset 0 being byte 0 or byte 128 of
the map) and returns None when the field lies past the end of what was read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
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

# Rx power measurement type (SFF-8472 A0h byte 92 bit 3, SFF-8636 byte 220 bit 3, CMIS page
# 01h byte 151 bit 4): set is average power, clear is OMA; unknown when that byte was not
# read. The `type` label of rx power and its thresholds.
RX_AVERAGE, RX_OMA, RX_UNKNOWN = "average", "oma", "unknown"


def rx_type(bits: int | None, mask: int) -> dict[str, str]:
    """The `type` label of rx power from the byte that says it (None: not read)."""
    return {"type": RX_UNKNOWN if bits is None else RX_AVERAGE if bits & mask else RX_OMA}


class ModuleValue(NamedTuple):
    """One decoded value: family name (nicwatch.metrics), labels (no ``device``), value in
    the family's base unit."""

    metric: str
    labels: dict[str, str]
    value: float


Values = list[ModuleValue]


class Checksum(NamedTuple):
    """One checksum byte of the map: the low 8 bits of the sum of the bytes it covers."""

    name: str  # the `checksum` label: cc_base, cc_ext, cc_dmi, page_00h, page_01h, page_02h
    where: str  # for people: "CC_BASE (A0h byte 63, over bytes 0-62)"
    stored: int
    computed: int

    @property
    def valid(self) -> bool:
        return self.stored == self.computed


def checksum(name: str, where: str, page: bytes | None, first: int, last: int,
             at: int) -> Checksum | None:
    """The checksum at ``at`` over ``first``..``last`` of a half page; None unless every one
    of those bytes was read."""
    if page is None or at >= len(page) or last >= len(page):
        return None
    return Checksum(name, where, page[at], sum(page[first:last + 1]) & 0xFF)


def checksum_values(sums: Iterable[Checksum]) -> Values:
    return [ModuleValue("nic_module_checksum_valid", {"checksum": c.name},
                        1.0 if c.valid else 0.0) for c in sums]


def identifier_name(code: int) -> str:
    return IDENTIFIERS.get(code, f"0x{code:02x}")


def byte(page: bytes | None, offset: int) -> int | None:
    return page[offset] if page is not None and 0 <= offset < len(page) else None


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


# Physical bounds: the range the maps' own encoding can express (16 bits in the units
# above; bias up to the CMIS x4 multiplier). An internally calibrated module cannot report
# anything outside it, so a value beyond it (only SFF-8472 external calibration can compute
# one: -32,895 C, 1,681 V, negative watts) is no measurement: it is flagged as
# nic_module_value_implausible and not exported.
BOUNDS: Mapping[str, tuple[float, float]] = {
    "temperature": (celsius(-0x8000), celsius(0x7FFF)),
    "supply_voltage": (0.0, volts(0xFFFF)),
    "tx_bias": (0.0, amperes(0xFFFF * 4)),
    "tx_power": (0.0, watts(0xFFFF)),
    "rx_power": (0.0, watts(0xFFFF)),
}

# quantity: (monitor family, threshold family, raw -> base unit, signed raw)
MONITORS: Mapping[str, tuple[str, str, Callable[[float], float], bool]] = {
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


def value(out: Values, metric: str, labels: dict[str, str], number: float | None) -> None:
    """Append one value unless it is unknown."""
    if number is not None:
        out.append(ModuleValue(metric, labels, float(number)))


def measured(out: Values, quantity: str, metric: str, labels: dict[str, str],
             number: float | None) -> None:
    """Append a measurement or threshold of ``quantity``, or, when it is not finite or
    outside the physical bounds, nic_module_value_implausible naming it instead."""
    if number is None:
        return
    low, high = BOUNDS[quantity]
    if math.isfinite(number) and low <= number <= high:
        out.append(ModuleValue(metric, labels, float(number)))
    else:
        out.append(ModuleValue("nic_module_value_implausible", {
            "quantity": quantity, "lane": labels.get("lane", ""),
            "level": labels.get("level", "")}, 1.0))


def monitor(out: Values, quantity: str, page: bytes | None, offset: int, lane: str = "",
            scale: float = 1.0, labels: Mapping[str, str] | None = None) -> None:
    """The monitor of ``quantity`` at ``offset`` (lane "" for module-wide quantities)."""
    metric, _, unit, signed = MONITORS[quantity]
    raw = (s16 if signed else u16)(page, offset)
    measured(out, quantity, metric, ({"lane": lane} if lane else {}) | dict(labels or {}),
             None if raw is None else unit(raw * scale))


def thresholds(out: Values, quantity: str, page: bytes | None, offset: int,
               scale: float = 1.0, labels: Mapping[str, str] | None = None) -> None:
    """The four thresholds of ``quantity`` at ``offset`` (LEVELS order)."""
    _, metric, unit, signed = MONITORS[quantity]
    read = s16 if signed else u16
    for i, level in enumerate(LEVELS):
        raw = read(page, offset + 2 * i)
        measured(out, quantity, metric, {"level": level} | dict(labels or {}),
                 None if raw is None else unit(raw * scale))


def flag(out: Values, quantity: str, level: str, lane: str, bits: int | None,
         mask: int) -> None:
    """nic_module_flag: 1 when ``mask`` is set in ``bits``; nothing when ``bits`` was not read."""
    if bits is not None:
        out.append(ModuleValue("nic_module_flag",
                               {"quantity": quantity, "level": level, "lane": lane},
                               1.0 if bits & mask else 0.0))


def level_flags(out: Values, quantity: str, bits: int | None, masks: Iterable[int],
                lane: str = "") -> None:
    """Four alarm/warning flags of one quantity, ``masks`` in LEVELS order."""
    for level, mask in zip(LEVELS, masks, strict=True):
        flag(out, quantity, level, lane, bits, mask)


def info(identifier: int, spec: str, vendor: str, part: str, serial: str, revision: str,
         firmware: str = "") -> ModuleValue:
    return ModuleValue("nic_module_info", {
        "identifier": identifier_name(identifier), "spec": spec, "vendor": vendor,
        "part": part, "serial": serial, "revision": revision, "firmware": firmware}, 1.0)
