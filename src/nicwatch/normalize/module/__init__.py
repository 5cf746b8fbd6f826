"""Pluggable module EEPROM -> canonical nic_module_* values: pure decoders, no I/O.

``identify`` names the memory map by the identifier byte, ``pages_to_read`` tells a reader
which upper pages to fetch after the lower half of i2c address 0x50, and ``decode`` turns a
:class:`~nicwatch.model.ModuleEeprom` (whatever halves were read) into
:class:`ModuleValue` records. Maps: SFF-8472 (SFP), SFF-8636/8436 (QSFP+/QSFP28) and CMIS
(QSFP-DD, OSFP, ...). Decoders never raise on short or garbage pages: a field that was not
read is left out, never given as 0.
"""

from __future__ import annotations

from collections.abc import Mapping

from nicwatch.model import ModuleEeprom, SeriesKey
from nicwatch.normalize.module import cmis, sff8472, sff8636
from nicwatch.normalize.module.common import ModuleValue

__all__ = ["ModuleValue", "decode", "gauges", "identify", "pages_to_read", "series"]

SFF8472, SFF8636, CMIS = "sff8472", "sff8636", "cmis"
# SFF-8024 identifier byte -> memory map
MAPS = {0x02: SFF8472, 0x03: SFF8472, 0x0B: SFF8472,
        0x0C: SFF8636, 0x0D: SFF8636, 0x11: SFF8636,
        0x18: CMIS, 0x19: CMIS, 0x1A: CMIS, 0x1E: CMIS, 0x1F: CMIS, 0x20: CMIS}
DECODERS = {SFF8472: sff8472.decode, SFF8636: sff8636.decode, CMIS: cmis.decode}


def identify_byte(identifier: int | None) -> str | None:
    return MAPS.get(identifier) if identifier is not None else None


def identify(eeprom: ModuleEeprom) -> str | None:
    """"sff8472", "sff8636", "cmis", or None (no lower half of 0x50, or an identifier
    nicwatch does not decode)."""
    lower = eeprom.lower.get(0x50)
    return identify_byte(lower[0]) if lower else None


def pages_to_read(lower_0x50: bytes, page_01h: bytes | None = None) -> list[tuple[int, int, int]]:
    """(i2c address, bank, page) of every upper page the decoder uses for this module, after
    the lower half of 0x50 was read; [] for a module it cannot decode. For SFF-8472,
    (0x51, 0, 0) stands for all of address 0x51 (A2h): its diagnostics are in the lower half.
    CMIS: pass page 01h once read to learn about banks 1-3 (lanes 9-32)."""
    kind = identify_byte(lower_0x50[0]) if lower_0x50 else None
    if kind == SFF8472:
        return sff8472.pages_to_read(lower_0x50)
    if kind == SFF8636:
        return sff8636.pages_to_read(lower_0x50)
    if kind == CMIS:
        return cmis.pages_to_read(lower_0x50, page_01h)
    return []


def decode(eeprom: ModuleEeprom) -> list[ModuleValue]:
    """Every value the halves in ``eeprom`` hold; [] when the map is unknown."""
    decoder = DECODERS.get(identify(eeprom))  # type: ignore[arg-type]
    return decoder(eeprom) if decoder else []


# A Reading carries the same ModuleEeprom object poll after poll until the next module read
# (a slower cadence), and decoding an 8-lane CMIS module costs about half a millisecond, so
# the series of the last EEPROM per interface are kept.
_LAST: dict[str, tuple[ModuleEeprom, Mapping[SeriesKey, float]]] = {}
_LAST_MAX = 4096


def series(eeprom: ModuleEeprom) -> dict[SeriesKey, float]:
    """The decoded values as a Sample's gauge series."""
    return {SeriesKey(v.metric, tuple(sorted(v.labels.items()))): v.value for v in decode(eeprom)}


def gauges(eeprom: ModuleEeprom | None, device: str | None = None) -> Mapping[SeriesKey, float]:
    """The Sample's series of a Reading's module EEPROM (none without one); with ``device``,
    decoded once per EEPROM read rather than every poll."""
    if eeprom is None:
        if device is not None:
            _LAST.pop(device, None)
        return {}
    if device is None:
        return series(eeprom)
    last = _LAST.get(device)
    if last is not None and last[0] is eeprom:
        return last[1]
    out = series(eeprom)
    if len(_LAST) >= _LAST_MAX:
        _LAST.clear()
    _LAST[device] = (eeprom, out)
    return out
