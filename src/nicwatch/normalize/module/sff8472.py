"""SFF-8472 (SFP, SFP+, SFP28): identity at i2c 0xA0 (0x50), diagnostics at 0xA2 (0x51).

A0h (lower half at 0x50):
  20-35 vendor name, 40-55 part number, 56-59 revision, 63 CC_BASE (sum of bytes 0-62)
  68-83 serial number
  92  diagnostic monitoring type: bit 6 DDM implemented, bit 5 internally calibrated,
      bit 4 externally calibrated, bit 3 rx power is average (else OMA), bit 2 address
      change required
  93  enhanced options: bit 7 alarm/warning flags implemented, bit 5 soft TX_FAULT,
      bit 4 soft RX_LOS
  94  SFF-8472 compliance (0: diagnostics not included, the module is SFF-8079)
  95  CC_EXT (sum of bytes 64-94)
A2h (lower half at 0x51):
  0-39   thresholds (temperature, Vcc, bias, tx power, rx power; four each, LEVELS order)
  56-91  external calibration: rx power polynomial Rx_PWR(4..0) (IEEE-754 big-endian),
         then slope (unsigned 8.8 fixed point) and offset (signed) for bias, tx power,
         temperature and Vcc
  95     CC_DMI (sum of bytes 0-94)
  96-105 monitors: temperature, Vcc, bias, tx power, rx power
  110    status: bit 2 TX_FAULT, bit 1 RX_LOS (real time)
  112-113 alarm flags, 116-117 warning flags (high, low bit pairs)

A2h holds diagnostics only when A0h says so: DDM implemented, compliance (byte 94) not 0 and
no address change required. Otherwise the kernel reports the module as SFF-8079 (sfp.c
``sfp_module_info()``), and a read of i2c 0x51 through its fallback returns A0h
(net/ethtool/eeprom.c ``fallback_set_params()`` adds the A2h offset for SFF-8472 only), so
A2h is then neither read nor decoded. A failed A0h checksum leaves the whole module
undecoded (byte 92 says how to read A2h); a failed CC_DMI leaves A2h undecoded.

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
    Checksum,
    Values,
    byte,
    checksum,
    checksum_values,
    flag,
    info,
    measured,
    rx_type,
    s16,
    text,
    u16,
)

A0, A2 = 0x50, 0x51
DDM, EXTERNAL, RX_AVERAGE_BIT, ADDRESS_CHANGE = 0x40, 0x10, 0x08, 0x04
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
Calibration = Callable[[float], float]


def diagnostics(lower_a0: bytes) -> bool:
    """Whether A2h holds diagnostics: DDM implemented (byte 92 bit 6), SFF-8472 compliance
    given (byte 94 not 0) and no address change required (byte 92 bit 2)."""
    dmt, compliance = byte(lower_a0, 92), byte(lower_a0, 94)
    return bool(dmt is not None and dmt & DDM and not dmt & ADDRESS_CHANGE and compliance)


def a0_checksums(lower_a0: bytes | None) -> list[Checksum]:
    sums = (checksum("cc_base", "CC_BASE (A0h byte 63, over bytes 0-62)", lower_a0, 0, 62, 63),
            checksum("cc_ext", "CC_EXT (A0h byte 95, over bytes 64-94)", lower_a0, 64, 94, 95))
    return [c for c in sums if c is not None]


def checksums(eeprom: ModuleEeprom) -> list[Checksum]:
    """CC_BASE and CC_EXT of A0h; CC_DMI of A2h when A0h says A2h holds diagnostics."""
    a0 = eeprom.lower.get(A0)
    out = a0_checksums(a0)
    a2 = eeprom.lower.get(A2)
    if a0 and a2 is not None and diagnostics(a0):
        dmi = checksum("cc_dmi", "CC_DMI (A2h byte 95, over bytes 0-94)", a2, 0, 94, 95)
        out += [dmi] if dmi is not None else []
    return out


def pages_to_read(lower_a0: bytes) -> list[tuple[int, int, int]]:
    """A0h's upper half; A2h, lower and upper half, when it holds diagnostics and A0h's
    checksums hold."""
    pages = [(A0, 0, 0)]
    if diagnostics(lower_a0) and all(c.valid for c in a0_checksums(lower_a0)):
        pages.append((A2, 0, 0))
    return pages


def _calibration(a2: bytes, quantity: str) -> Calibration | None:
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


def _identity(raw: float) -> float:
    return raw


def decode(eeprom: ModuleEeprom) -> Values:
    a0 = eeprom.lower.get(A0)
    if not a0:
        return []
    sums = checksums(eeprom)
    out = checksum_values(sums)
    if not all(c.valid for c in sums if c.name != "cc_dmi"):
        return out  # A0h is corrupt: neither its identity nor how to read A2h is known
    out.append(info(a0[0], "SFF-8472", text(a0, 20, 36), text(a0, 40, 56), text(a0, 68, 84),
                    text(a0, 56, 60)))
    dmt, options = byte(a0, 92), byte(a0, 93)
    a2 = eeprom.lower.get(A2)
    if a2 is None or dmt is None or not diagnostics(a0) or not all(c.valid for c in sums):
        return out
    rx_labels = rx_type(dmt, RX_AVERAGE_BIT)
    for quantity, (monitor_at, limits_at, _, _, _, _) in LAYOUT.items():
        metric, threshold, unit, signed = MONITORS[quantity]
        calibrate = _calibration(a2, quantity) if dmt & EXTERNAL else _identity
        if calibrate is None:
            continue
        read = s16 if signed else u16
        extra = rx_labels if quantity == "rx_power" else {}
        raw = read(a2, monitor_at)
        labels = ({} if quantity in MODULE_WIDE else {"lane": "1"}) | extra
        measured(out, quantity, metric, labels, None if raw is None else unit(calibrate(raw)))
        for i, level in enumerate(LEVELS):
            raw = read(a2, limits_at + 2 * i)
            measured(out, quantity, threshold, {"level": level} | extra,
                     None if raw is None else unit(calibrate(raw)))
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
