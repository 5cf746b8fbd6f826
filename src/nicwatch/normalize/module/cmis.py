"""CMIS 4.0/5.x (QSFP-DD, OSFP, QSFP112, SFP-DD, DSFP and other CMIS modules): i2c 0x50,
paged, banked.

Lower memory:
  1   CMIS revision (major nibble . minor nibble);  2: bit 7 flat memory (page 00h only)
  3   module state, bits 3-1: 1 ModuleLowPwr, 2 ModulePwrUp, 3 ModuleReady, 4 ModulePwrDn,
      5 ModuleFault
  9   module flags: temperature bits 0-3, Vcc bits 4-7 (high alarm, low alarm, high warning,
      low warning); latched until read
  14-15 temperature, 16-17 Vcc;  39-40 active firmware major, minor
  86-117 application descriptors (4 bytes each; byte 2: host lanes << 4 | media lanes;
      host interface 0xFF ends the list)
Page 00h: 129-144 vendor, 148-163 part, 164-165 revision, 166-181 serial; 222 page checksum
  (sum of bytes 128-221).
Page 01h: 128-129 inactive firmware major, minor (CMIS 5.2 8.3.7; 130-131 hardware revision);
  142 bits 1-0 banks (0: bank 0, 1: banks 0-1, 2: banks 0-3);
  151 bit 4 rx power measurement type (set: average, clear: OMA);
  157 tx flags implemented (bit 0 fault, 1 LOS, 2 CDR LOL, 3 adaptive EQ fault);
  158 rx flags implemented (bit 1 LOS, 2 CDR LOL);
  159 module monitors (bit 0 temperature, bit 1 Vcc);
  160 lane monitors (bit 0 tx bias, 1 tx power, 2 rx power; bits 4-3 bias multiplier x1/x2/x4);
  176-190 media lane assignment of applications 1-15 (a bit per first lane of an instance);
  255 page checksum (sum of bytes 130-254).
Page 02h: thresholds, temperature 128, Vcc 136, tx power 176, tx bias 184, rx power 192;
  255 page checksum (sum of bytes 128-254).
Page 11h (per bank of 8 lanes): 128-131 data path state, a nibble per lane (lane 1 the low
  nibble of byte 128): 1 DPDeactivated, 2 DPInit, 3 DPDeinit, 4 DPActivated, 5 DPTxTurnOn,
  6 DPTxTurnOff, 7 DPInitialized; flags 135 tx fault, 136 tx LOS, 137 tx CDR LOL,
  138 tx adaptive EQ fault, 139-142 tx power, 143-146 tx bias (high alarm, low alarm,
  high warning, low warning), 147 rx LOS, 148 rx CDR LOL, 149-152 rx power (a bit per lane,
  latched); monitors 154 tx power, 170 tx bias, 186 rx power (8 x 16 bits each).

Lane values need page 01h: it says which monitors and flags exist, where the lanes of each
application start, the bias scale and the banks. Without it only the data path states of
page 11h (bank 0) are decoded. A lane whose data
path is not DPActivated (a module in low power has every data path deactivated) gives its
state and no lane monitors or flags: its 0 W is that state, not a dark fiber. A page whose
checksum fails counts as not read.
"""

from __future__ import annotations

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module import vdm
from nicwatch.normalize.module.common import (
    LEVELS,
    Checksum,
    ModuleValue,
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
FLAT = 0x80
LANES_PER_BANK = 8
# Media lanes by identifier when no application says: QSFP-DD, OSFP 8; QSFP 4; SFP-DD,
# DSFP 2; SFP+ 1.
DEFAULT_LANES = {0x18: 8, 0x19: 8, 0x1A: 2, 0x1B: 2, 0x1E: 4, 0x1F: 2, 0x20: 1}
BANKS = {0: 1, 1: 2, 2: 4}
BIAS_MULTIPLIER = {0: 1, 1: 2, 2: 4}
MODULE_MASKS = (0x01, 0x02, 0x04, 0x08)  # byte 9, temperature; << 4 for Vcc
# CMIS 5 Table 8-6 (lower byte 3 bits 3-1) and Table 8-71 (page 11h bytes 128-131).
MODULE_STATES = {1: "low_power", 2: "power_up", 3: "ready", 4: "power_down", 5: "fault"}
DATA_PATH_STATES = {1: "deactivated", 2: "init", 3: "deinit", 4: "activated",
                    5: "tx_turn_on", 6: "tx_turn_off", 7: "initialized"}
UNKNOWN = "unknown"  # a reserved code
ACTIVATED = 4
# quantity: (page 01h byte 160 bit, page 02h thresholds, page 11h monitors, page 11h flags)
LANE_LAYOUT = {"tx_power": (0x02, 176, 154, 139), "tx_bias": (0x01, 184, 170, 143),
               "rx_power": (0x04, 192, 186, 149)}
# quantity: (page 11h byte, page 01h byte that says it is implemented, bit)
STATE_FLAGS = {"tx_fault": (135, 157, 0x01), "tx_los": (136, 157, 0x02),
               "tx_cdr_lol": (137, 157, 0x04), "tx_adaptive_eq_fault": (138, 157, 0x08),
               "rx_los": (147, 158, 0x02), "rx_cdr_lol": (148, 158, 0x04)}
# page: (label, first byte, last byte, checksum byte), offsets within the upper half
PAGE_CHECKSUMS = {0x00: ("page_00h", 0, 93, 94), 0x01: ("page_01h", 2, 126, 127),
                  0x02: ("page_02h", 0, 126, 127)}


def _banks(page1: bytes | None) -> int:
    return BANKS.get((byte(page1, 142 - 128) or 0) & 0x03, 1)


def pages_to_read(lower: bytes, page_01h: bytes | None = None,
                  page_2fh: bytes | None = None) -> list[tuple[int, int, int]]:
    """Page 00h; unless the memory is flat also 01h (advertising), 02h (thresholds) and 11h
    (lane states, monitors and flags) of bank 0, and of banks 1-3 when ``page_01h`` (if
    already read) advertises them; the VDM pages where page 01h advertises VDM (page 2Fh,
    then with ``page_2fh`` read the pages of each group it names: vdm.pages_to_read)."""
    if (byte(lower, 2) or 0) & FLAT:
        return [(I2C, 0, 0)]
    pages = [(I2C, 0, 0), (I2C, 0, 1), (I2C, 0, 2), (I2C, 0, 0x11)]
    pages += [(I2C, bank, 0x11) for bank in range(1, _banks(page_01h))]
    pages += vdm.pages_to_read(page_01h, page_2fh)
    return pages


def checksums(eeprom: ModuleEeprom) -> list[Checksum]:
    """The page checksums of pages 00h, 01h and 02h (bytes 222, 255, 255)."""
    out = []
    for page, (name, first, last, at) in PAGE_CHECKSUMS.items():
        where = f"page {page:02x}h byte {at + 128}, over bytes {first + 128}-{last + 128}"
        found = checksum(name, f"{name} checksum ({where})", eeprom.upper.get((I2C, 0, page)),
                         first, last, at)
        if found is not None:
            out.append(found)
    return out


def media_lanes(lower: bytes, page1: bytes | None) -> int:
    """The module's media lanes: the last lane any advertised application can use (its
    lane count from the highest first lane page 01h allows it); by identifier when the
    module advertises no application; 0 when the application list was not read."""
    last = 0
    for index in range(8):
        at = 86 + 4 * index
        host, counts = byte(lower, at), byte(lower, at + 2)
        if host == 0xFF:
            break
        if host is None or counts is None:
            return last  # cut short: only lanes known to exist
        if host == 0:
            continue
        count = counts & 0x0F
        assignment = byte(page1, 176 - 128 + index) or 0x01
        last = max(last, assignment.bit_length() - 1 + count)
    return last or DEFAULT_LANES.get(lower[0], LANES_PER_BANK)


def _path(out: Values, lane: str, state: int | None) -> None:
    if state is not None:
        out.append(ModuleValue("nic_module_data_path_state", {
            "lane": lane, "state": DATA_PATH_STATES.get(state, UNKNOWN)}, 1.0))


def _lanes(lower: bytes, page1: bytes | None) -> int:
    return min(media_lanes(lower, page1), _banks(page1) * LANES_PER_BANK)


def _module_state(out: Values, lower: bytes) -> None:
    """nic_module_state: 1 for the module's state (lower byte 3), 0 for the others."""
    code = byte(lower, 3)
    if code is None:
        return
    current = MODULE_STATES.get(code >> 1 & 0x07, UNKNOWN)
    for state in (*MODULE_STATES.values(), UNKNOWN):
        out.append(ModuleValue("nic_module_state", {"state": state},
                               1.0 if state == current else 0.0))


def _data_path_state(page11: bytes, i: int) -> int | None:
    """The data path state code of lane ``i`` (0..7) of a bank; None when not read."""
    bits = byte(page11, i // 2)
    return None if bits is None else bits >> 4 * (i % 2) & 0x0F


def decode(eeprom: ModuleEeprom) -> Values:
    lower = eeprom.lower.get(I2C)
    if not lower:
        return []
    sums = checksums(eeprom)
    out = checksum_values(sums)
    corrupt = {c.name for c in sums if not c.valid}
    page0, page1, page2 = (None if PAGE_CHECKSUMS[page][0] in corrupt
                           else eeprom.upper.get((I2C, 0, page)) for page in (0, 1, 2))
    revision, major, minor = byte(lower, 1), byte(lower, 39), byte(lower, 40)
    spec = "CMIS" if revision is None else f"CMIS {revision >> 4}.{revision & 0x0F}"
    firmware = "" if major is None or minor is None else f"{major}.{minor}"
    if "page_00h" not in corrupt:
        # Page 00h byte N is page0[N - 128].
        out.append(info(lower[0], spec, text(page0, 1, 17), text(page0, 20, 36),
                        text(page0, 38, 54), text(page0, 36, 38), firmware))
    if firmware:
        out.append(ModuleValue("nic_module_firmware_info",
                               {"image": "active", "version": firmware}, 1.0))
    inactive = (byte(page1, 128 - 128), byte(page1, 129 - 128))
    if inactive[0] is not None and inactive[1] is not None:
        out.append(ModuleValue("nic_module_firmware_info",
                               {"image": "inactive", "version": f"{inactive[0]}.{inactive[1]}"},
                               1.0))
    _module_state(out, lower)
    flat = bool((byte(lower, 2) or 0) & FLAT)
    supported = byte(page1, 159 - 128)
    for quantity, bit, monitor_at, limits_at, shift in (
            ("temperature", 0x01, 14, 0, 0), ("supply_voltage", 0x02, 16, 8, 4)):
        if (supported is None and flat) or (supported is not None and not supported & bit):
            continue  # flat memory (passive copper) has no monitors; page 01h says which
        monitor(out, quantity, lower, monitor_at)
        thresholds(out, quantity, page2, limits_at)
        level_flags(out, quantity, byte(lower, 9), (m << shift for m in MODULE_MASKS))
    lanes = _lanes(lower, page1)
    if page1 is None:  # no telling which monitors exist: the lanes' data path states only
        page11 = eeprom.upper.get((I2C, 0, 0x11))
        if page11 is not None:
            for i in range(min(LANES_PER_BANK, lanes)):
                _path(out, str(i + 1), _data_path_state(page11, i))
        return out
    lane_monitors = byte(page1, 160 - 128) or 0
    multiplier = BIAS_MULTIPLIER.get(lane_monitors >> 3 & 0x03, 1)
    rx_labels = rx_type(byte(page1, 151 - 128), 0x10)
    for quantity, (bit, limits_at, _, _) in LANE_LAYOUT.items():
        if lane_monitors & bit:
            thresholds(out, quantity, page2, limits_at - 128,
                       multiplier if quantity == "tx_bias" else 1,
                       rx_labels if quantity == "rx_power" else None)
    for bank in range(_banks(page1)):
        page11 = eeprom.upper.get((I2C, bank, 0x11))
        if page11 is None:
            continue
        for i in range(min(LANES_PER_BANK, lanes - bank * LANES_PER_BANK)):
            lane, mask = str(bank * LANES_PER_BANK + i + 1), 1 << i
            state = _data_path_state(page11, i)
            _path(out, lane, state)
            if state in DATA_PATH_STATES and state != ACTIVATED:
                continue  # monitors and flags of a lane not carrying data mean nothing
            for quantity, (bit, _, monitor_at, flags_at) in LANE_LAYOUT.items():
                if not lane_monitors & bit:
                    continue
                monitor(out, quantity, page11, monitor_at - 128 + 2 * i, lane,
                        multiplier if quantity == "tx_bias" else 1,
                        rx_labels if quantity == "rx_power" else None)
                for offset, level in enumerate(LEVELS):
                    flag(out, quantity, level, lane, byte(page11, flags_at - 128 + offset), mask)
            for quantity, (at, implemented, bit) in STATE_FLAGS.items():
                if (byte(page1, implemented - 128) or 0) & bit:
                    flag(out, quantity, "state", lane, byte(page11, at - 128), mask)
    out += vdm.decode(eeprom.upper, page1, lambda lane: _lane_active(eeprom, lane))
    return out


def _lane_active(eeprom: ModuleEeprom, lane: int) -> bool:
    """False when the data path state of ``lane`` (from 1) was read and is a known state
    other than DPActivated."""
    page11 = eeprom.upper.get((I2C, (lane - 1) // LANES_PER_BANK, 0x11))
    state = None if page11 is None else _data_path_state(page11, (lane - 1) % LANES_PER_BANK)
    return state not in DATA_PATH_STATES or state == ACTIVATED
