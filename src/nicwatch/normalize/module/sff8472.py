"""SFF-8472 (SFP, SFP+, SFP28): identity at i2c 0xA0 (0x50), diagnostics at 0xA2 (0x51).

A0h (lower half at 0x50):
  92  diagnostic monitoring type: bit 6 DDM implemented, bit 5 internally calibrated,
      bit 4 externally calibrated, bit 3 rx power is average (else OMA)
  93  enhanced options: bit 7 alarm/warning flags implemented, bit 5 soft TX_FAULT,
      bit 4 soft RX_LOS
  20-35 vendor name, 40-55 part number, 56-59 revision, 68-83 serial number
A2h (lower half at 0x51):
  0-39   thresholds (temperature, Vcc, bias, tx power, rx power; four each, LEVELS order)
  56-91  external calibration: rx power polynomial Rx_PWR(4..0) (IEEE-754 big-endian),
         then slope (unsigned 8.8 fixed point) and offset (signed) for bias, tx power,
         temperature and Vcc
  96-105 monitors: temperature, Vcc, bias, tx power, rx power
  110    status: bit 2 TX_FAULT, bit 1 RX_LOS (real time)
  112-113 alarm flags, 116-117 warning flags (high, low bit pairs)

An externally calibrated module's values (monitors and thresholds alike) are raw A/D counts
that become units through those constants; without them no value is given.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module.common import (
    LEVELS,
    MONITORS,
    ModuleValue,
    byte,
    flag,
    info,
    s16,
    text,
    u16,
    value,
)

A0, A2 = 0x50, 0x51
DDM, EXTERNAL = 0x40, 0x10
AW_FLAGS, SOFT_TX_FAULT, SOFT_RX_LOS = 0x80, 0x20, 0x10

# quantity: (monitor, thresholds, external calibration slope (None: rx polynomial),
#            flag byte index (112 / 116 + index), high mask, low mask)
LAYOUT = {
    "temperature": (96, 0, 84, 0, 0x80, 0x40),
    "supply_voltage": (98, 8, 88, 0, 0x20, 0x10),
    "tx_bias": (100, 16, 76, 0, 0x08, 0x04),
    "tx_power": (102, 24, 80, 0, 0x02, 0x01),
    "rx_power": (104, 32, None, 1, 0x80, 0x40),
}
MODULE_WIDE = ("temperature", "supply_voltage")


def pages_to_read(lower_a0: bytes) -> list[tuple[int, int, int]]:
    """A0h's upper half; A2h, lower and upper half, when diagnostics are implemented."""
    pages = [(A0, 0, 0)]
    if (byte(lower_a0, 92) or 0) & DDM:
        pages.append((A2, 0, 0))
    return pages


def _identity(raw: float) -> float:
    return raw


def _calibration(a2: bytes, quantity: str) -> Callable[[float], float] | None:
    """External calibration of ``quantity``: raw counts -> calibrated raw, None if unread."""
    slope_at = LAYOUT[quantity][2]
    if slope_at is None:  # rx power: 4th-order polynomial of single-precision floats
        if len(a2) < 76:
            return None
        coefficients = struct.unpack(">5f", a2[56:76])[::-1]  # Rx_PWR(0) .. Rx_PWR(4)
        return lambda raw: sum(c * float(raw) ** k for k, c in enumerate(coefficients))
    slope, offset = u16(a2, slope_at), s16(a2, slope_at + 2)
    if slope is None or offset is None:
        return None
    return lambda raw: slope / 256 * raw + offset


def decode(eeprom: ModuleEeprom) -> list[ModuleValue]:
    a0 = eeprom.lower.get(A0)
    if not a0:
        return []
    out = [info(a0[0], "SFF-8472", text(a0, 20, 36), text(a0, 40, 56), text(a0, 68, 84),
                text(a0, 56, 60))]
    dmt, options = byte(a0, 92), byte(a0, 93)
    a2 = eeprom.lower.get(A2)
    if a2 is None or dmt is None or not dmt & DDM:
        return out
    for quantity, (monitor_at, limits_at, _, _, _, _) in LAYOUT.items():
        metric, threshold, unit, signed = MONITORS[quantity]
        calibrate = _calibration(a2, quantity) if dmt & EXTERNAL else _identity
        if calibrate is None:
            continue
        read = s16 if signed else u16
        raw = read(a2, monitor_at)
        labels = {} if quantity in MODULE_WIDE else {"lane": "1"}
        value(out, metric, labels, None if raw is None else unit(calibrate(raw)))
        for i, level in enumerate(LEVELS):
            raw = read(a2, limits_at + 2 * i)
            value(out, threshold, {"level": level}, None if raw is None else unit(calibrate(raw)))
    if options is not None and options & AW_FLAGS:
        for quantity, (_, _, _, index, high, low) in LAYOUT.items():
            lane = "" if quantity in MODULE_WIDE else "1"
            alarms, warnings = byte(a2, 112 + index), byte(a2, 116 + index)
            flag(out, quantity, "high_alarm", lane, alarms, high)
            flag(out, quantity, "low_alarm", lane, alarms, low)
            flag(out, quantity, "high_warning", lane, warnings, high)
            flag(out, quantity, "low_warning", lane, warnings, low)
    status = byte(a2, 110)
    if options is not None and options & SOFT_RX_LOS:
        flag(out, "rx_los", "state", "1", status, 0x02)
    if options is not None and options & SOFT_TX_FAULT:
        flag(out, "tx_fault", "state", "1", status, 0x04)
    return out
