"""CMIS VDM pages for the demo's module: SPEC-BUILT, not a module's.

The demo's module (demo/module_eeprom.py, a real Juniper 800G DR8) advertises VDM (page 01h
byte 142 bit 6) but its published dump has no VDM pages. These are written from the layout
in docs/link-physics.md ("CMIS VDM": sonic-platform-common 8607c9f3f3d2, OIF CMIS 5.x 8.22):
one group; per media lane the current pre-FEC BER (type 15), the host side's (16), the media
eSNR (5) and the laser temperature (4), each with a threshold set, every lane healthy and the
flag page clear, so the demo's dashboards have VDM to show and no VDM alert fires.
"""

from __future__ import annotations

import struct
from types import MappingProxyType

from nicwatch.model import ModuleEeprom

A0 = 0x50
LANES = 8


def _f16(mantissa: int, exponent: int) -> int:
    """mantissa x 10^exponent as F16: exponent + 24 in bits 15-11, the mantissa in 10-0."""
    return (exponent + 24) << 11 | mantissa


# (observable type ID, threshold set, raw sample per lane 1-8)
ROWS = (
    (15, 1, [_f16(180 + 10 * lane, -8) for lane in range(LANES)]),  # 1.8e-6 .. 2.5e-6
    (16, 2, [_f16(100, -10)] * LANES),  # 1e-8
    (5, 3, [int((19.0 + 0.25 * lane) * 256) for lane in range(LANES)]),  # 19-20.75 dB
    (4, 4, [int(47.5 * 256)] * LANES),  # 47.5 C
)
# Threshold sets: high alarm, low alarm, high warning, low warning.
SETS = {1: (_f16(240, -6), 0, _f16(100, -6), 0), 2: (_f16(100, -7), 0, _f16(100, -8), 0),
        3: (40 * 256, 15 * 256, 35 * 256, int(16.5 * 256)), 4: (75 * 256, 0, 70 * 256, 0)}


def pages() -> dict[int, bytes]:
    """Upper halves of pages 2Fh (one group), 20h, 24h, 28h and 2Ch (no flag set)."""
    descriptors, samples, limits = bytearray(128), bytearray(128), bytearray(128)
    slot = 0
    for type_id, threshold_set, raws in ROWS:
        for lane, raw in enumerate(raws):
            descriptors[2 * slot:2 * slot + 2] = bytes((threshold_set << 4 | lane, type_id))
            samples[2 * slot:2 * slot + 2] = struct.pack(">H", raw)
            slot += 1
    for number, levels in SETS.items():
        limits[8 * number:8 * number + 8] = struct.pack(">4H", *(v & 0xFFFF for v in levels))
    return {0x2F: bytes(128), 0x20: bytes(descriptors), 0x24: bytes(samples),
            0x28: bytes(limits), 0x2C: bytes(128)}


def with_vdm(eeprom: ModuleEeprom) -> ModuleEeprom:
    """The module with the VDM pages above added."""
    upper = dict(eeprom.upper) | {(A0, 0, page): data for page, data in pages().items()}
    return ModuleEeprom(eeprom.lower, MappingProxyType(upper), eeprom.read_at, eeprom.power)
