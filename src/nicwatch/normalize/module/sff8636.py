"""SFF-8636 / SFF-8436 (QSFP+, QSFP28): four lanes, one i2c address (0x50), paged.

Lower page:
  1   revision compliance (1-2: SFF-8436, 3 and up: SFF-8636)
  2   status: bit 2 flat memory (upper page 00h only)
  3   LOS: rx lanes 1-4 bits 0-3, tx lanes bits 4-7;  4: tx fault bits 0-3;
  5   rx CDR LOL bits 0-3, tx CDR LOL bits 4-7 (page 00h bytes 194-195 say which the module
      implements; rx LOS is mandatory)
  6   temperature flags, 7: Vcc flags (bit 7 high alarm, 6 low alarm, 5 high warning,
      4 low warning)
  9-10 rx power flags, 11-12 tx bias flags, 13-14 tx power flags: one nibble per lane,
      lane 1 the high nibble of the first byte (high alarm, low alarm, high warning, low warning)
  22-23 temperature, 26-27 Vcc, 34-41 rx power, 42-49 tx bias, 50-57 tx power (lanes 1-4)
  The flags latch until read, so a set flag may report an event since the last read.
Page 00h: 147 device technology (bits 7-4 >= 0xA: copper, no optical monitors),
  148-163 vendor, 168-183 part, 184-185 revision, 191 CC_BASE (sum of bytes 128-190),
  194-195 options (flags implemented), 196-211 serial, 220 diagnostic monitoring type
  (bit 3: rx power is average, else OMA; bit 2: tx power monitored), 223 CC_EXT (sum of
  bytes 192-222).
Lane values (optical power, bias, their thresholds and flags) need page 00h, which says
whether the module is optical at all; a page 00h whose checksum fails gives neither identity
nor lane values (temperature, Vcc and their thresholds come from other pages and stay).
Page 03h: thresholds, temperature 128, Vcc 144, rx power 176, tx bias 184, tx power 192.
"""

from __future__ import annotations

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module.common import (
    Checksum,
    Values,
    byte,
    checksum,
    checksum_values,
    flag,
    info,
    level_flags,
    monitor,
    rx_type,
    text,
    thresholds,
)

I2C = 0x50
LANES = 4
FLAT = 0x04
COPPER = 0xA  # device technology (page 00h byte 147 bits 7-4) from here on
NIBBLE_MASKS = ((0x80, 0x40, 0x20, 0x10), (0x08, 0x04, 0x02, 0x01))
# quantity: (first monitor of lane 1, threshold block in page 03h, first flag byte)
LANE_LAYOUT = {"rx_power": (34, 176, 9), "tx_bias": (42, 184, 11), "tx_power": (50, 192, 13)}
# quantity: (lane flag byte, bit shift of lane 1, page 00h option byte and bit that says the
# module implements it; None: mandatory)
STATE_FLAGS = {"rx_los": (3, 0, None), "tx_los": (3, 4, (195, 0x02)),
               "tx_fault": (4, 0, (195, 0x08)), "rx_cdr_lol": (5, 0, (194, 0x10)),
               "tx_cdr_lol": (5, 4, (194, 0x20))}


def pages_to_read(lower: bytes) -> list[tuple[int, int, int]]:
    """Page 00h; page 03h (thresholds) unless the memory is flat."""
    if (byte(lower, 2) or 0) & FLAT:
        return [(I2C, 0, 0)]
    return [(I2C, 0, 0), (I2C, 0, 3)]


def _spec(revision: int | None) -> str:
    return "SFF-8436" if revision in (1, 2) else "SFF-8636"


def checksums(eeprom: ModuleEeprom) -> list[Checksum]:
    """CC_BASE and CC_EXT of page 00h (page0[N - 128] is byte N)."""
    page0 = eeprom.upper.get((I2C, 0, 0))
    sums = (checksum("cc_base", "CC_BASE (page 00h byte 191, over bytes 128-190)", page0, 0, 62,
                     63),
            checksum("cc_ext", "CC_EXT (page 00h byte 223, over bytes 192-222)", page0, 64, 94,
                     95))
    return [c for c in sums if c is not None]


def decode(eeprom: ModuleEeprom) -> Values:
    lower = eeprom.lower.get(I2C)
    if not lower:
        return []
    page0, page3 = eeprom.upper.get((I2C, 0, 0)), eeprom.upper.get((I2C, 0, 3))
    sums = checksums(eeprom)
    out = checksum_values(sums)
    if not all(c.valid for c in sums):
        page0 = None  # corrupt: no identity, and no telling an optical module from a cable
    else:
        # Page 00h byte N is page0[N - 128].
        out.append(info(lower[0], _spec(byte(lower, 1)), text(page0, 20, 36),
                        text(page0, 40, 56), text(page0, 68, 84), text(page0, 56, 58)))
    diag, technology = byte(page0, 92), byte(page0, 19)
    # Lane values need page 00h: a copper cable reads 0 there, which is not a dark lane.
    optical = technology is not None and technology >> 4 < COPPER
    # Temperature and Vcc always: modules report them without setting byte 220 bits 5-4.
    monitor(out, "temperature", lower, 22)
    thresholds(out, "temperature", page3, 0)
    level_flags(out, "temperature", byte(lower, 6), NIBBLE_MASKS[0])
    monitor(out, "supply_voltage", lower, 26)
    thresholds(out, "supply_voltage", page3, 16)
    level_flags(out, "supply_voltage", byte(lower, 7), NIBBLE_MASKS[0])
    if not optical:
        return out
    rx_labels = rx_type(diag, 0x08)
    for quantity, (first, limits, flags_at) in LANE_LAYOUT.items():
        if quantity == "tx_power" and diag is not None and not diag & 0x04:
            continue
        extra = rx_labels if quantity == "rx_power" else None
        thresholds(out, quantity, page3, limits - 128, labels=extra)
        for lane in range(LANES):
            name = str(lane + 1)
            monitor(out, quantity, lower, first + 2 * lane, name, labels=extra)
            level_flags(out, quantity, byte(lower, flags_at + lane // 2),
                        NIBBLE_MASKS[lane % 2], name)
    for quantity, (at, shift, option) in STATE_FLAGS.items():
        if option is not None and page0 is not None and not (byte(page0, option[0] - 128)
                                                             or 0) & option[1]:
            continue
        for lane in range(LANES):
            flag(out, quantity, "state", str(lane + 1), byte(lower, at), 1 << (shift + lane))
    return out
