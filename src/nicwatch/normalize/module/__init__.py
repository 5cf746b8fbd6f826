"""Pluggable module EEPROM -> canonical nic_module_* values: pure decoders, no I/O.

``identify`` names the memory map by the identifier byte, ``pages_to_read`` tells a reader
which upper pages to fetch after the lower half of i2c address 0x50, ``checksums`` verifies
the map's checksum bytes, and ``decode`` turns a :class:`~nicwatch.model.ModuleEeprom`
(whatever halves were read) into :class:`ModuleValue` records. Maps: SFF-8472 (SFP),
SFF-8636/8436 (QSFP+/QSFP28) and CMIS (QSFP-DD, OSFP, SFP-DD, DSFP, ...). Decoders never
raise on short or garbage pages: a field that was not read is left out, never given as 0; a
page whose checksum fails gives no identity or measurement; a value outside the physical
bounds is flagged, not exported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nicwatch.model import MODULE_STATES, ModuleEeprom, ModuleState, SeriesKey
from nicwatch.normalize.module import cmis, sff8472, sff8636
from nicwatch.normalize.module.common import Checksum, ModuleValue, Values

__all__ = ["Checksum", "DecodedModules", "ModuleValue", "checksums", "decode", "gauges",
           "identify", "pages_to_read", "series", "status_gauges"]

SFF8472, SFF8636, CMIS = "sff8472", "sff8636", "cmis"
CORRUPT = "corrupt"  # the read state of a module read whose checksums fail
# SFF-8024 identifier byte -> memory map
MAPS = {0x02: SFF8472, 0x03: SFF8472, 0x0B: SFF8472,
        0x0C: SFF8636, 0x0D: SFF8636, 0x11: SFF8636,
        0x18: CMIS, 0x19: CMIS, 0x1A: CMIS, 0x1B: CMIS, 0x1E: CMIS, 0x1F: CMIS, 0x20: CMIS}
DECODERS: Mapping[str, Callable[[ModuleEeprom], Values]] = {
    SFF8472: sff8472.decode, SFF8636: sff8636.decode, CMIS: cmis.decode}
CHECKSUMS: Mapping[str, Callable[[ModuleEeprom], list[Checksum]]] = {
    SFF8472: sff8472.checksums, SFF8636: sff8636.checksums, CMIS: cmis.checksums}


def identify_byte(identifier: int | None) -> str | None:
    return MAPS.get(identifier) if identifier is not None else None


def identify(eeprom: ModuleEeprom) -> str | None:
    """"sff8472", "sff8636", "cmis", or None (no lower half of 0x50, or an identifier
    nicwatch does not decode)."""
    lower = eeprom.lower.get(0x50)
    return identify_byte(lower[0]) if lower else None


def pages_to_read(lower_0x50: bytes, page_01h: bytes | None = None,
                  page_2fh: bytes | None = None) -> list[tuple[int, int, int]]:
    """(i2c address, bank, page) of every upper page the decoder uses for this module, after
    the lower half of 0x50 was read; [] for a module it cannot decode. For SFF-8472,
    (0x51, 0, 0) stands for all of address 0x51 (A2h): its diagnostics are in the lower half.
    CMIS: pass page 01h once read to learn about banks 1-3 (lanes 9-32) and VDM, and page 2Fh
    once read to learn the VDM groups (module/vdm.py)."""
    kind = identify_byte(lower_0x50[0]) if lower_0x50 else None
    if kind == SFF8472:
        return sff8472.pages_to_read(lower_0x50)
    if kind == SFF8636:
        return sff8636.pages_to_read(lower_0x50)
    if kind == CMIS:
        return cmis.pages_to_read(lower_0x50, page_01h, page_2fh)
    return []


def checksums(eeprom: ModuleEeprom) -> list[Checksum]:
    """Every checksum of the map whose bytes were all read, valid or not."""
    kind = identify(eeprom)
    return CHECKSUMS[kind](eeprom) if kind else []


def decode(eeprom: ModuleEeprom) -> Values:
    """Every value the halves in ``eeprom`` hold; [] when the map is unknown."""
    kind = identify(eeprom)
    return DECODERS[kind](eeprom) if kind else []


_CHECKSUM = "nic_module_checksum_valid"
_FLAG, _FLAGS_SET = "nic_module_flag", "nic_module_flags_set"


def series(eeprom: ModuleEeprom) -> dict[SeriesKey, float]:
    """The decoded values as a Sample's gauge series, with the module power mode policy and
    state the kernel reported (ethtool MODULE_GET) beside them."""
    values = decode(eeprom)
    out = {SeriesKey(v.metric, tuple(sorted(v.labels.items()))): v.value for v in values}
    flags = [v.value for v in values if v.metric == _FLAG]
    if flags:  # the flags at a glance: below --collector.detail=full, only set ones are served
        out[SeriesKey(_FLAGS_SET, ())] = float(sum(1 for f in flags if f))
    power = eeprom.power
    if power is not None and power.policy is not None:
        out[SeriesKey("nic_module_power_mode_policy", (("policy", power.policy),))] = 1.0
    if power is not None and power.mode is not None:
        out[SeriesKey("nic_module_power_mode", (("mode", power.mode),))] = 1.0
    return out


class DecodedModules:
    """The series of the last EEPROM per interface, with whether a checksum failed (a
    ``Normalizer`` owns one): a Reading carries the same ModuleEeprom object poll after poll
    until the next module read (a slower cadence), and decoding an 8-lane CMIS module costs
    about half a millisecond, so it is decoded once per read rather than every poll."""

    MAX = 4096  # interfaces kept

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[str, tuple[ModuleEeprom, Mapping[SeriesKey, float], bool]] = {}

    def decoded(self, eeprom: ModuleEeprom,
                device: str) -> tuple[Mapping[SeriesKey, float], bool]:
        last = self._last.get(device)
        if last is not None and last[0] is eeprom:
            return last[1], last[2]
        out, corrupt = _decoded(eeprom)
        if len(self._last) >= self.MAX:
            self._last.clear()
        self._last[device] = (eeprom, out, corrupt)
        return out, corrupt

    def kept(self, eeprom: ModuleEeprom | None,
             device: str) -> tuple[Mapping[SeriesKey, float], bool]:
        """The series of ``device``'s module EEPROM (none without one) and whether a
        checksum failed, decoded once per EEPROM read."""
        if eeprom is None:
            self._last.pop(device, None)
            return {}, False
        return self.decoded(eeprom, device)

    def gauges(self, eeprom: ModuleEeprom | None, device: str) -> Mapping[SeriesKey, float]:
        """:func:`gauges`, decoded once per EEPROM read of ``device``."""
        return self.kept(eeprom, device)[0]


def _decoded(eeprom: ModuleEeprom) -> tuple[Mapping[SeriesKey, float], bool]:
    out = series(eeprom)
    return out, any(k.metric == _CHECKSUM and not v for k, v in out.items())


def gauges(eeprom: ModuleEeprom | None) -> Mapping[SeriesKey, float]:
    """The Sample's series of a Reading's module EEPROM (none without one)."""
    return {} if eeprom is None else _decoded(eeprom)[0]


def status_gauges(state: ModuleState | None) -> dict[SeriesKey, float]:
    """nic_module_read_state (the state of the last read, ``corrupt`` when its checksums
    fail; none without the collector) and the read time of the EEPROM shown, from the
    module state normalize resolved (normalize.state.module_state)."""
    out: dict[SeriesKey, float] = {}
    if state is None:
        return out
    if state.read_at is not None:
        out[SeriesKey("nic_module_read_timestamp_seconds", ())] = state.read_at
    if state.read_state is not None:
        for s in MODULE_STATES:
            out[SeriesKey("nic_module_read_state", (("state", s),))] = float(s == state.read_state)
    return out
