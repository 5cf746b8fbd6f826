"""CMIS Versatile Diagnostics Monitoring (VDM, pages 20h-2Fh of bank 0): what the module
itself measures per lane beyond power and bias: eSNR, pre-FEC BER, errored frames, laser
temperature, with the module's own thresholds and flags. Pure decoding, no I/O.

Layout (OIF CMIS 5.x section 8.22, as sonic-net/sonic-platform-common reads it at
8607c9f3f3d2: mem_maps/public/cmis/pages/page01.py, page2f.py, api/public/cmisVDM.py,
codes/public/cmis.py VDM_TYPE):

  page 01h byte 142 bit 6   VdmSupported: the module has VDM pages (the advertisement)
  page 2Fh byte 128 bits 1-0 the VDM groups the module has, minus one (1 to 4 groups)
  page 20h+g (g = 0..3)     group g's 64 descriptors, 2 bytes each: the even byte holds the
                            threshold set (bits 7-4) and the lane minus one (bits 3-0), the
                            odd byte the observable type ID (0: unused)
  page 24h+g                the samples: descriptor i's value at bytes 2i, 2i+1 (big endian)
  page 28h+g                16 threshold sets of 8 bytes: high alarm, low alarm, high
                            warning, low warning (16 bits each, encoded as the observable)
  page 2Ch                  flags, latched: group g's descriptor i at byte 32g + i/2, the low
                            nibble for even i, the high one for odd i (bit 0 high alarm,
                            1 low alarm, 2 high warning, 3 low warning)

Encodings: U16 and S16 times the type's scale; F16 is a 5-bit exponent (bits 15-11) and an
11-bit mantissa (bits 10-0), mantissa x 10^(exponent - 24) (0x9200 = 5.12e-4).

Statistic observables (minimum, maximum, average) cover the interval between two freezes of
the VDM statistics (page 2Fh byte 144, a write); nicwatch never writes to a module, so they
are exported as the module shows them, with ``stat`` naming each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from nicwatch.metrics import (
    VDM_ERRORED_FRAMES,
    VDM_ERRORED_FRAMES_THRESHOLD,
    VDM_ESNR,
    VDM_ESNR_THRESHOLD,
    VDM_LASER_TEMPERATURE,
    VDM_LASER_TEMPERATURE_THRESHOLD,
    VDM_PRE_FEC_BER,
    VDM_PRE_FEC_BER_THRESHOLD,
)
from nicwatch.normalize.module.common import LEVELS, ModuleValue, Values, byte, s16, u16

I2C = 0x50
SUPPORTED_BYTE, SUPPORTED_BIT = 142, 0x40  # page 01h
CONTROL_PAGE = 0x2F
DESCRIPTORS, SAMPLES, THRESHOLDS, FLAGS = 0x20, 0x24, 0x28, 0x2C
MAX_GROUPS = 4
PER_GROUP = 64  # descriptors in one page
FLAG_BYTES_PER_GROUP = 32
THRESHOLD_SET = 8  # bytes

ESNR, PRE_FEC_BER = VDM_ESNR.name, VDM_PRE_FEC_BER.name
ERRORED_FRAMES, LASER_TEMPERATURE = VDM_ERRORED_FRAMES.name, VDM_LASER_TEMPERATURE.name
THRESHOLD = {ESNR: VDM_ESNR_THRESHOLD.name, PRE_FEC_BER: VDM_PRE_FEC_BER_THRESHOLD.name,
             ERRORED_FRAMES: VDM_ERRORED_FRAMES_THRESHOLD.name,
             LASER_TEMPERATURE: VDM_LASER_TEMPERATURE_THRESHOLD.name}
MEDIA, HOST = "media", "host"
CURRENT, MINIMUM, MAXIMUM, AVERAGE = "current", "min", "max", "average"


def f16(raw: int) -> float:
    """CMIS F16: mantissa (bits 10-0) x 10^(exponent (bits 15-11) - 24)."""
    mantissa, exponent = raw & 0x7FF, (raw >> 11 & 0x1F) - 24
    # Divide by the power of ten rather than multiply by its inverse: 240 / 1e6 is the double
    # nearest 2.4e-4, 240 * 1e-6 is not.
    return mantissa * 10.0 ** exponent if exponent >= 0 else mantissa / 10.0 ** -exponent


def _per_256(raw: int) -> float:
    return raw / 256


Decode = Callable[[int], float]


class Observable(NamedTuple):
    family: str
    side: str  # "media", "host", "" (laser temperature)
    stat: str  # "current", "min", "max", "average"; "" where the type has no statistic
    signed: bool
    decode: Decode
    quantity: str  # nic_module_flag's quantity


def _ber(family: str, short: str, first: int) -> dict[int, Observable]:
    """Types first..first+7: min, max, average, current, each media then host."""
    out = {}
    for k, stat in enumerate((MINIMUM, MAXIMUM, AVERAGE, CURRENT)):
        for j, side in enumerate((MEDIA, HOST)):
            out[first + 2 * k + j] = Observable(family, side, stat, False, f16,
                                                f"vdm_{short}_{side}_{stat}")
    return out


# Observable type ID -> what it is (sonic-platform-common codes/public/cmis.py VDM_TYPE, CMIS
# 5.x Table 8-172). Other types (laser age, TEC current, PAM4 level transition, SEWmax, the
# coherent C-CMIS ones, vendor types) are not decoded.
OBSERVABLES: Mapping[int, Observable] = {
    4: Observable(LASER_TEMPERATURE, "", "", True, _per_256, "vdm_laser_temperature"),
    5: Observable(ESNR, MEDIA, "", False, _per_256, "vdm_esnr_media"),
    6: Observable(ESNR, HOST, "", False, _per_256, "vdm_esnr_host"),
    **_ber(PRE_FEC_BER, "pre_fec_ber", 9),
    **_ber(ERRORED_FRAMES, "errored_frames", 17),
}


def supported(page1: bytes | None) -> bool:
    """Page 01h advertises VDM (byte 142 bit 6)."""
    return bool((byte(page1, SUPPORTED_BYTE - 128) or 0) & SUPPORTED_BIT)


def groups(page2f: bytes | None) -> int:
    """The VDM groups page 2Fh byte 128 advertises (1-4); 0 when page 2Fh was not read."""
    value = byte(page2f, 0)
    return 0 if value is None else (value & 0x03) + 1


def pages_to_read(page1: bytes | None, page2f: bytes | None) -> list[tuple[int, int, int]]:
    """Nothing unless page 01h advertises VDM; then page 2Fh, and once it is read the
    descriptor, sample and threshold pages of each group it advertises and the flag page."""
    if not supported(page1):
        return []
    pages = [(I2C, 0, CONTROL_PAGE)]
    count = groups(page2f)
    for g in range(count):
        pages += [(I2C, 0, DESCRIPTORS + g), (I2C, 0, SAMPLES + g), (I2C, 0, THRESHOLDS + g)]
    if count:
        pages.append((I2C, 0, FLAGS))
    return pages


def _raw(page: bytes | None, offset: int, signed: bool) -> int | None:
    return (s16 if signed else u16)(page, offset)


def decode(upper: Mapping[tuple[int, int, int], bytes], page1: bytes | None,
           lane_active: Callable[[int], bool]) -> Values:
    """Every decoded VDM observable of a module that advertises VDM, with its thresholds and
    flags. ``lane_active(lane)`` (lane from 1) is False for a lane whose data path is known
    not to be activated: its observables are left out, as its other lane monitors are. A
    descriptor whose sample page was not read gives nothing; a lane and type given twice
    keeps the first. Statistic observables (min, max, average) give their value only, no
    thresholds or flags; a threshold set of four zeros gives no thresholds."""
    out: Values = []
    if not supported(page1):
        return out
    flags = upper.get((I2C, 0, FLAGS))
    seen: set[tuple[int, int]] = set()
    for g in range(groups(upper.get((I2C, 0, CONTROL_PAGE)))):
        descriptors = upper.get((I2C, 0, DESCRIPTORS + g))
        samples = upper.get((I2C, 0, SAMPLES + g))
        limits = upper.get((I2C, 0, THRESHOLDS + g))
        if descriptors is None or samples is None:
            continue
        for i in range(min(PER_GROUP, len(descriptors) // 2)):
            where, type_id = descriptors[2 * i], descriptors[2 * i + 1]
            kind = OBSERVABLES.get(type_id)
            lane = (where & 0x0F) + 1
            if kind is None or (type_id, lane) in seen or not lane_active(lane):
                continue
            seen.add((type_id, lane))
            raw = _raw(samples, 2 * i, kind.signed)
            if raw is None:
                continue
            labels = {"lane": str(lane)}
            if kind.side:
                labels["side"] = kind.side
            if kind.family in (PRE_FEC_BER, ERRORED_FRAMES):
                labels["stat"] = kind.stat
            out.append(ModuleValue(kind.family, labels, kind.decode(raw)))
            if kind.stat in (MINIMUM, MAXIMUM, AVERAGE):
                continue  # statistics: the value only, to bound the series per module
            start = THRESHOLD_SET * (where >> 4)
            raws = [_raw(limits, start + 2 * n, kind.signed) for n in range(len(LEVELS))]
            if any(raws):  # a set of four zeros is no threshold
                for level, limit in zip(LEVELS, raws, strict=True):
                    if limit is not None:
                        out.append(ModuleValue(THRESHOLD[kind.family],
                                               labels | {"level": level}, kind.decode(limit)))
            bits = byte(flags, FLAG_BYTES_PER_GROUP * g + i // 2)
            if bits is not None:
                nibble = bits >> 4 * (i % 2)
                for n, level in enumerate(LEVELS):
                    out.append(ModuleValue("nic_module_flag", {
                        "quantity": kind.quantity, "level": level, "lane": str(lane)},
                        1.0 if nibble >> n & 1 else 0.0))
    return out
