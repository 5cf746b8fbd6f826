"""CMIS VDM pages built from the layout, on top of a real module's EEPROM.

Provenance: no published dump here has VDM pages (tests/fixtures/module/ has none; nor has
/work/shared/data/published/). The module underneath is the real Juniper 740-174932 800G DR8
OSFP of tests/fixtures/module/osfp-800g-dr8-juniper.txt, whose page 01h byte 142 reads 0x64:
bit 6, VdmSupported, is the module's own. Its pages 2Fh, 20h, 24h, 28h and 2Ch are made up
here, SPEC-BUILT, from the layout sonic-net/sonic-platform-common reads at 8607c9f3f3d2
(sonic_platform_base/sonic_xcvr/api/public/cmisVDM.py, mem_maps/public/cmis/pages/page2f.py
and page01.py, codes/public/cmis.py VDM_TYPE; OIF CMIS 5.x 8.22): every number below is
written out from that layout, never taken from nicwatch's decoder.

The built module: one VDM group; media lane 5 is the bad one (pre-FEC BER 3.2e-4 against a
high alarm of 2.4e-4, eSNR 15.25 dB under its 16.5 dB low warning), the seven others clean.
"""

from __future__ import annotations

import struct
from types import MappingProxyType

from nicwatch.model import ModuleEeprom

from fixture_module import fixture_eeprom

DR8 = "osfp-800g-dr8-juniper.txt"
A0 = 0x50

# Observable type IDs (codes/public/cmis.py VDM_TYPE).
LASER_AGE, LASER_TEMPERATURE, ESNR_MEDIA, ESNR_HOST = 1, 4, 5, 6
BER_MAX_MEDIA, BER_CURRENT_MEDIA, BER_CURRENT_HOST = 11, 15, 16
FRAMES_CURRENT_MEDIA = 23


def f16(mantissa: int, exponent: int) -> int:
    """F16 bits for mantissa x 10^exponent: exponent + 24 in bits 15-11, mantissa in 10-0."""
    assert 0 <= mantissa < 0x800 and 0 <= exponent + 24 < 32
    return (exponent + 24) << 11 | mantissa


def u16(value: int) -> bytes:
    return struct.pack(">H", value & 0xFFFF)


# (type ID, threshold set, 8 raw samples for lanes 1-8); descriptor slots in this order.
BER_CLEAN, BER_BAD = f16(210, -8), f16(320, -6)  # 2.1e-6, 3.2e-4
HOST_BER = f16(100, -10)  # 1.0e-8
ESNR_CLEAN, ESNR_BAD = int(19.5 * 256), int(15.25 * 256)
ROWS = (
    (BER_CURRENT_MEDIA, 1, [BER_BAD if lane == 5 else BER_CLEAN for lane in range(1, 9)]),
    (BER_CURRENT_HOST, 2, [HOST_BER] * 8),
    (ESNR_MEDIA, 3, [ESNR_BAD if lane == 5 else ESNR_CLEAN for lane in range(1, 9)]),
    (LASER_TEMPERATURE, 4, [int(45.5 * 256)] * 8),
    (BER_MAX_MEDIA, 1, [f16(400, -6) if lane == 5 else f16(300, -8) for lane in range(1, 9)]),
    (FRAMES_CURRENT_MEDIA, 5, [f16(150, -11) if lane == 5 else 0 for lane in range(1, 9)]),
)
# Threshold sets (8 bytes: high alarm, low alarm, high warning, low warning).
SETS = {
    1: (f16(240, -6), 0, f16(100, -6), 0),  # pre-FEC BER media: 2.4e-4, 0, 1e-4, 0
    2: (f16(100, -7), 0, f16(100, -8), 0),  # host: 1e-5, 0, 1e-6, 0
    3: (40 * 256, 15 * 256, 35 * 256, int(16.5 * 256)),  # eSNR dB
    4: (75 * 256, -5 * 256, 70 * 256, 0),  # laser temperature C (S16)
    5: (f16(100, -8), 0, f16(100, -9), 0),  # errored frames: 1e-6, 0, 1e-7, 0
}
# Extra slots after the rows: laser age (a type nicwatch does not decode) on lane 1, and a
# second descriptor of the current media BER of lane 1 (a module listing it twice).
EXTRA = ((LASER_AGE, 0, 0, 37), (BER_CURRENT_MEDIA, 1, 0, f16(999, -3)))


def vdm_pages(flags: bool = True) -> dict[int, bytes]:
    """Pages 2Fh, 20h, 24h, 28h and (with ``flags``) 2Ch, upper halves (bytes 128-255)."""
    descriptors, samples = bytearray(128), bytearray(128)
    slot = 0
    for type_id, threshold_set, raws in ROWS:
        for lane in range(8):
            descriptors[2 * slot] = threshold_set << 4 | lane
            descriptors[2 * slot + 1] = type_id
            samples[2 * slot:2 * slot + 2] = u16(raws[lane])
            slot += 1
    for type_id, threshold_set, lane, raw in EXTRA:
        descriptors[2 * slot] = threshold_set << 4 | lane
        descriptors[2 * slot + 1] = type_id
        samples[2 * slot:2 * slot + 2] = u16(raw)
        slot += 1
    limits = bytearray(128)
    for number, levels in SETS.items():
        limits[8 * number:8 * number + 8] = b"".join(u16(v) for v in levels)
    flag_page = bytearray(128)
    # Lane 5 is slot 4 of row 0 (current media BER: high alarm and high warning, bits 0 and
    # 2 of byte 2's low nibble), slot 20 of row 2 (eSNR: low warning, bit 3 of byte 10's low
    # nibble) and slot 36 of row 4 (max media BER: byte 18 low nibble, bits 0 and 2).
    flag_page[2] = 0x05
    flag_page[10] = 0x08
    flag_page[18] = 0x05
    control = bytearray(128)
    control[0] = 0x00  # byte 128 bits 1-0: one group
    pages = {0x2F: bytes(control), 0x20: bytes(descriptors), 0x24: bytes(samples),
             0x28: bytes(limits)}
    if flags:
        pages[0x2C] = bytes(flag_page)
    return pages


def vdm_eeprom(flags: bool = True) -> ModuleEeprom:
    """The real DR8 module's EEPROM with the spec-built VDM pages added."""
    real = fixture_eeprom(DR8)
    upper = dict(real.upper)
    upper.update({(A0, 0, page): data for page, data in vdm_pages(flags).items()})
    return ModuleEeprom(real.lower, MappingProxyType(upper), real.read_at, real.power)
