"""The module EEPROM decoders on real dumps (tests/fixtures/module, provenance in each file),
on variants of them built from the specs' layouts (external calibration, bias multiplier,
flags: bytes the real modules happen not to set), and on truncated and random pages.

The expected values were worked out by hand from the raw bytes quoted next to them and the
unit of each field in the spec; where the dump's publisher asserted values of their own
(go-ethtool's tests, the switch's own printout), those are the ones checked.
"""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.exporter.render import SelfStats, render
from nicwatch.model import ModuleEeprom, NetClass, Reading, SeriesKey
from nicwatch.normalize import normalize
from nicwatch.normalize.module import DecodedModules, decode, gauges, identify, pages_to_read
from nicwatch.normalize.module.hexdump import parse, parse_raw
from nicwatch.snapshot.files import interface_snapshot
from nicwatch.tracker import Tracker

from fixture_module import resealed
from paths import FIXTURES
from promtext import parse_exposition, promtool_check

MODULE = FIXTURES / "module"


# The warning a fixture gives when parsed (the sfputil dump holds two reads of the lower page).
EXPECTED_PROBLEMS = {"qsfp-cmis-hisense-aoc-sonic.sfputil.txt": (
    "the lower half of i2c 0x50 is given twice with different bytes (read at different "
    "times?): the last one is decoded",)}


def eeprom(name: str) -> ModuleEeprom:
    path = MODULE / name
    dump = parse_raw(path.read_bytes()) if path.suffix == ".bin" else parse(path.read_text())
    assert dump.problems == EXPECTED_PROBLEMS.get(name, ())
    return dump.eeprom


def values(e: ModuleEeprom) -> dict[tuple, float]:
    out = {(v.metric, tuple(sorted(v.labels.items()))): v.value for v in decode(e)}
    assert len(out) == len(decode(e)), "a series decoded twice"
    return out


def key(metric: str, **labels: str) -> tuple:
    return metric, tuple(sorted(labels.items()))


def info(e: ModuleEeprom) -> dict[str, str]:
    (v,) = [v for v in decode(e) if v.metric == "nic_module_info"]
    return v.labels


def flags(e: ModuleEeprom, value: float = 1.0) -> set[tuple]:
    return {(v.labels["quantity"], v.labels["level"], v.labels["lane"]) for v in decode(e)
            if v.metric == "nic_module_flag" and v.value == value}


def with_bytes(e: ModuleEeprom, half, changes: dict[int, int], seal: bool = True) -> ModuleEeprom:
    """``e`` with bytes of one half page (an i2c address: its lower half; else an upper
    page key) replaced, and (``seal``) its checksum bytes recomputed as a module holding those
    bytes would have them."""
    store = dict(e.lower if isinstance(half, int) else e.upper)
    data = bytearray(store[half])
    for offset, value in changes.items():
        data[offset] = value
    store[half] = bytes(data)
    if isinstance(half, int):
        out = ModuleEeprom(store, e.upper, e.read_at)
    else:
        out = ModuleEeprom(e.lower, store, e.read_at)
    return resealed(out) if seal else out


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


# -- SFF-8472 ----------------------------------------------------------------------------

def test_sfp_without_light():
    """OEM SFP-10GB-LR: A2h 96-105 = 22 8a | 80 7d | 46 4d | 14 33 | 00 00; status 110 = 02
    (RX_LOS); 113 = 40, 117 = 40 (rx power low alarm and warning). go-ethtool's own test:
    34.54 C, 3.29 V, 35.994 mA, rx 0, rx thresholds 1.0 / 0.0158 / 0.0316 mW."""
    e = eeprom("sfp-oem-10g-lr-go-ethtool.txt")
    assert identify(e) == "sff8472"
    v = values(e)
    assert info(e) == {"identifier": "SFP", "spec": "SFF-8472", "vendor": "OEM",
                       "part": "SFP-10GB-LR", "serial": "YAOY1060", "revision": "B4",
                       "firmware": ""}
    assert v[key("nic_module_temperature_celsius")] == 0x228A / 256  # 34.54 C
    assert v[key("nic_module_supply_voltage_volts")] == 3.2893  # 0x807d = 32893 x 100 uV
    assert close(v[key("nic_module_tx_bias_amperes", lane="1")], 0.035994)  # 0x464d x 2 uA
    assert close(v[key("nic_module_tx_power_watts", lane="1")], 0.0005171)  # 0x1433 x 0.1 uW
    assert v[key("nic_module_rx_power_watts", lane="1", type="average")] == 0.0
    # A2h 32-39 = 4e 20 | 00 9e | 27 10 | 01 3c (high alarm, low alarm, high warn, low warn)
    def rx_threshold(level: str) -> float:
        return v[key("nic_module_rx_power_threshold_watts", level=level, type="average")]
    assert close(rx_threshold("high_alarm"), 0.002)
    assert close(rx_threshold("low_alarm"), 0.0000158)
    assert close(rx_threshold("high_warning"), 0.001)
    assert close(rx_threshold("low_warning"), 0.0000316)
    # A2h 0-7 = 5a 00 | f6 00 | 55 00 | fb 00: 90, -10, 85, -5 C (signed)
    assert [v[key("nic_module_temperature_threshold_celsius", level=lvl)] for lvl in
            ("high_alarm", "low_alarm", "high_warning", "low_warning")] == [90, -10, 85, -5]
    assert flags(e) == {("rx_power", "low_alarm", "1"), ("rx_power", "low_warning", "1"),
                        ("rx_los", "state", "1")}
    # every flag A0h byte 93 (f0) says is implemented, set or clear: 5 quantities x 4 + 2
    assert len(flags(e)) + len(flags(e, 0.0)) == 22


def test_sfp_with_light_and_go_ethtool_threshold():
    e = eeprom("sfp-flexoptix-10g-go-ethtool.txt")
    v = values(e)
    assert info(e)["vendor"] == "FLEXOPTIX" and info(e)["part"] == "P.B1696.10.DA"
    # go-ethtool asserts the tx power high alarm: 1.7783 mW
    assert close(v[key("nic_module_tx_power_threshold_watts", level="high_alarm")], 0.0017783)
    assert v[key("nic_module_rx_power_watts", lane="1", type="average")] > 0
    assert flags(e) == set()


def test_sfp_without_diagnostics_is_identity_only():
    """A0h byte 92 = 00 (ODI GPON stick, from a real `ethtool -m` on OpenWrt) and a BROCADE
    copper cable: no A2h, so nothing but nic_module_info."""
    for name, vendor, part in (("sfp-odi-gpon-openwrt.txt", "ODI", "DFP-34X-2C2"),
                               ("sfp-brocade-dac-go-ethtool.txt", "BROCADE", "57-1000042-02")):
        e = eeprom(name)
        assert [v.metric for v in decode(e) if v.metric != "nic_module_checksum_valid"] == [
            "nic_module_info"]
        assert (info(e)["vendor"], info(e)["part"]) == (vendor, part)
        assert pages_to_read(e.lower[0x50]) == [(0x50, 0, 0)]


def test_sfp_external_calibration():
    """SFF-8472 9.3: A0h byte 92 bit 4 set, values are A/D counts. Built from the OEM dump
    (its constants are the neutral ones, Rx_PWR(1) = 1.0, slopes 1.0): here slopes and
    offsets of our own, the values computed by hand with the spec's formulas."""
    e = eeprom("sfp-oem-10g-lr-go-ethtool.txt")
    e = with_bytes(e, 0x50, {92: 0x58})  # DDM, externally calibrated, average power
    rx = struct.pack(">5f", 0.0, 0.0, 0.5, 2.0, 10.0)  # Rx_PWR(4) .. Rx_PWR(0)
    cal = {56 + i: b for i, b in enumerate(rx)}
    cal.update({76: 0x02, 77: 0x00, 78: 0x00, 79: 0x64,  # bias: slope 2.0, offset +100
                80: 0x00, 81: 0x80, 82: 0xFF, 83: 0xF6,  # tx power: slope 0.5, offset -10
                84: 0x01, 85: 0x00, 86: 0x01, 87: 0x00,  # temperature: slope 1, offset +1 C
                88: 0x01, 89: 0x00, 90: 0x00, 91: 0x00,  # Vcc: slope 1, offset 0
                104: 0x00, 105: 0x64})  # rx power A/D = 100
    v = values(with_bytes(e, 0x51, cal))
    assert close(v[key("nic_module_tx_bias_amperes", lane="1")], (2 * 0x464D + 100) * 2e-6)
    assert close(v[key("nic_module_tx_power_watts", lane="1")], (0.5 * 0x1433 - 10) * 1e-7)
    assert v[key("nic_module_temperature_celsius")] == (0x228A + 256) / 256
    assert v[key("nic_module_supply_voltage_volts")] == 3.2893
    # Rx power = 10 + 2 * 100 + 0.5 * 100^2 = 5210 x 0.1 uW
    assert close(v[key("nic_module_rx_power_watts", lane="1", type="average")], 5210e-7)
    # thresholds are A/D counts too: bias high alarm c3 50 -> 2 * 50000 + 100
    assert close(v[key("nic_module_tx_bias_threshold_amperes", level="high_alarm")],
                 (2 * 0xC350 + 100) * 2e-6)


def test_sfp_external_calibration_without_constants_gives_no_values():
    e = eeprom("sfp-oem-10g-lr-go-ethtool.txt")
    e = with_bytes(e, 0x50, {92: 0x58})
    short = ModuleEeprom(e.lower | {0x51: e.lower[0x51][:50]}, e.upper, 0.0)
    assert [v.metric for v in decode(short) if v.metric not in (
        "nic_module_flag", "nic_module_checksum_valid")] == ["nic_module_info"]


# -- SFF-8636 ----------------------------------------------------------------------------

def test_qsfp28_four_lanes():
    """FS QSFP28-IR4-100G. Lower 22-23 = 1c 97 (28.59 C), 26-27 = 81 b9 (3.3209 V);
    lane 1: rx 34-35 = 43 6a, bias 42-43 = 43 40 (34.432 mA, as go-ethtool asserts), tx 50-51
    = 2c cc. Page 03h bias thresholds 75 / 10 / 70 / 15 mA (go-ethtool's test)."""
    e = eeprom("qsfp28-fs-ir4-go-ethtool.txt")
    assert identify(e) == "sff8636"
    v = values(e)
    assert info(e) == {"identifier": "QSFP28", "spec": "SFF-8636", "vendor": "FS",
                       "part": "QSFP28-IR4-100G", "serial": "C1812155461", "revision": "A1",
                       "firmware": ""}
    assert v[key("nic_module_temperature_celsius")] == 0x1C97 / 256
    assert v[key("nic_module_supply_voltage_volts")] == 3.3209
    assert close(v[key("nic_module_rx_power_watts", lane="1", type="average")], 0x436A * 1e-7)
    assert close(v[key("nic_module_tx_bias_amperes", lane="1")], 0.034432)
    assert close(v[key("nic_module_tx_power_watts", lane="1")], 0x2CCC * 1e-7)
    assert close(v[key("nic_module_tx_bias_amperes", lane="4")], 0x4540 * 2e-6)
    assert [round(v[key("nic_module_tx_bias_threshold_amperes", level=lvl)] * 1000, 6)
            for lvl in ("high_alarm", "low_alarm", "high_warning", "low_warning")] == [
        75, 10, 70, 15]
    lanes = {dict(k[1]).get("lane") for k in v if k[0] == "nic_module_rx_power_watts"}
    assert lanes == {"1", "2", "3", "4"}
    assert flags(e) == set()
    # options 194-195 = ff de: LOS, fault and both CDR LOL flags exist, per lane
    assert {(q, lane) for q, lvl, lane in flags(e, 0.0) if lvl == "state"} == {
        (q, str(n)) for q in ("rx_los", "tx_los", "tx_fault", "rx_cdr_lol", "tx_cdr_lol")
        for n in range(1, 5)}
    assert pages_to_read(e.lower[0x50]) == [(0x50, 0, 0), (0x50, 0, 3)]


def test_qsfp_copper_cable_has_no_optical_values():
    """Page 00h byte 147 = a0 (passive copper): temperature and Vcc, no lanes."""
    e = eeprom("qsfp-fs-dac-go-ethtool.txt")
    metrics = {v.metric for v in decode(e)}
    assert "nic_module_temperature_celsius" in metrics
    assert not metrics & {"nic_module_rx_power_watts", "nic_module_tx_bias_amperes",
                          "nic_module_rx_power_threshold_watts"}
    assert info(e)["identifier"] == "QSFP+"


def test_qsfp_flags_by_spec_layout():
    """SFF-8636 6.2.3: byte 3 bit 1 = rx LOS lane 2; byte 9 high nibble = lane 1 rx power
    (bit 7 high alarm); byte 10 low nibble = lane 4 (bit 0 low warning); byte 6 bit 5 =
    temperature high warning."""
    e = with_bytes(eeprom("qsfp28-fs-ir4-go-ethtool.txt"), 0x50,
                   {3: 0x02, 6: 0x20, 9: 0x80, 10: 0x01})
    assert flags(e) == {("rx_los", "state", "2"), ("temperature", "high_warning", ""),
                        ("rx_power", "high_alarm", "1"), ("rx_power", "low_warning", "4")}


def test_qsfp_flat_memory_reads_page_00h_only():
    e = eeprom("qsfp28-fs-ir4-go-ethtool.txt")
    flat = bytearray(e.lower[0x50])
    flat[2] |= 0x04
    assert pages_to_read(bytes(flat)) == [(0x50, 0, 0)]


# -- CMIS --------------------------------------------------------------------------------

DR8 = "osfp-800g-dr8-juniper.txt"


def test_cmis_800g_dr8_eight_lanes():
    """Juniper 800G DR8 OSFP; the switch printed `Module firmware revision: 0.13` and
    `CMIS version: 0x51`. Lower 14-17 = 39 ee 81 21; page 11h lane 1: tx 154 = 4d 0b,
    bias 170 = 88 af, rx 186 = 42 32; lane 8: tx 168 = 3b c5, rx 200 = 3b 8f."""
    e = eeprom(DR8)
    assert identify(e) == "cmis"
    v = values(e)
    assert info(e) == {"identifier": "OSFP", "spec": "CMIS 5.1", "vendor": "JUNIPER-1G1",
                       "part": "740-174932", "serial": "1G1TK1AA350AZ", "revision": "01",
                       "firmware": "0.13"}
    assert v[key("nic_module_temperature_celsius")] == 0x39EE / 256
    assert v[key("nic_module_supply_voltage_volts")] == 3.3057
    assert close(v[key("nic_module_tx_power_watts", lane="1")], 0x4D0B * 1e-7)
    assert close(v[key("nic_module_tx_bias_amperes", lane="1")], 0x88AF * 2e-6)
    assert close(v[key("nic_module_rx_power_watts", lane="1", type="average")], 0x4232 * 1e-7)
    assert close(v[key("nic_module_rx_power_watts", lane="8", type="average")], 0x3B8F * 1e-7)
    assert close(v[key("nic_module_tx_power_watts", lane="8")], 0x3BC5 * 1e-7)
    # 8 media lanes (application 5: 800G, 8 lanes from lane 1), no lane 9
    lanes = sorted(int(dict(k[1])["lane"]) for k in v if k[0] == "nic_module_rx_power_watts")
    assert lanes == list(range(1, 9))
    # page 02h: temperature 4c 00 | fa 00 | 49 00 | fd 00; rx power 192 = ba f7 | 05 08 ...
    assert [v[key("nic_module_temperature_threshold_celsius", level=lvl)] for lvl in
            ("high_alarm", "low_alarm", "high_warning", "low_warning")] == [76, -6, 73, -3]
    assert close(v[key("nic_module_rx_power_threshold_watts", level="low_warning", type="average")],
                 0x071B * 1e-7)
    assert close(v[key("nic_module_tx_bias_threshold_amperes", level="high_alarm")], 0.13)
    assert flags(e) == set()
    # page 01h 157 = 07 (tx fault, LOS, LOL), 158 = 06 (rx LOS, LOL): 5 state flags per lane
    states = {(q, lane) for q, lvl, lane in flags(e, 0.0) if lvl == "state"}
    assert len(states) == 5 * 8 and ("tx_adaptive_eq_fault", "1") not in states


def test_cmis_active_copper_cable_has_no_lane_monitors():
    """Credo AEC: page 01h byte 160 = 00 (no lane monitors), 159 = 03 (temperature, Vcc);
    the switch printed `Module firmware revision: 1.4`, `CMIS version: 0x50`."""
    e = eeprom("osfp-800g-aec-credo.txt")
    v = values(e)
    assert info(e)["spec"] == "CMIS 5.0" and info(e)["firmware"] == "1.4"
    assert info(e)["vendor"] == "Credo"
    assert v[key("nic_module_temperature_celsius")] == 0x3344 / 256
    assert not {k[0] for k in v} & {"nic_module_rx_power_watts", "nic_module_tx_bias_amperes",
                                    "nic_module_rx_power_threshold_watts"}


def test_cmis_bias_multiplier_and_lane_flags_by_spec_layout():
    """CMIS 5 Table 8-43: page 01h byte 160 bits 4-3 = 01 scales bias x2. Table 8-77: page 11h
    byte 149 (rx power high alarm) bit 2 = lane 3; byte 147 (rx LOS) bit 7 = lane 8;
    lower byte 9 bit 4 = Vcc high alarm."""
    e = eeprom(DR8)
    e = with_bytes(e, (0x50, 0, 1), {160 - 128: 0x07 | 0x08})
    e = with_bytes(e, (0x50, 0, 0x11), {149 - 128: 0x04, 147 - 128: 0x80})
    e = with_bytes(e, 0x50, {9: 0x10})
    v = values(e)
    assert close(v[key("nic_module_tx_bias_amperes", lane="1")], 0x88AF * 2 * 2e-6)
    assert close(v[key("nic_module_tx_bias_threshold_amperes", level="high_alarm")], 0.26)
    assert flags(e) == {("rx_power", "high_alarm", "3"), ("rx_los", "state", "8"),
                        ("supply_voltage", "high_alarm", "")}


def test_cmis_four_lane_application_gives_four_lanes():
    """A 400G FR4-like module: one application, 4 media lanes from lane 1 (media lane
    assignment 01): lanes 5-8 of page 11h are not the module's and are not shown."""
    lanes = {v.labels["lane"] for v in decode(four_lane_cmis())
             if v.metric == "nic_module_rx_power_watts"}
    assert lanes == {"1", "2", "3", "4"}


def test_cmis_pages_to_read():
    e = eeprom(DR8)
    assert pages_to_read(e.lower[0x50]) == [(0x50, 0, 0), (0x50, 0, 1), (0x50, 0, 2),
                                            (0x50, 0, 0x11)]
    flat = bytearray(e.lower[0x50])
    flat[2] |= 0x80
    assert pages_to_read(bytes(flat)) == [(0x50, 0, 0)]
    banks = bytearray(e.upper[(0x50, 0, 1)])
    banks[142 - 128] = (banks[142 - 128] & ~0x03) | 0x01  # banks 0 and 1
    # The real module also advertises VDM (byte 142 bit 6): page 2Fh follows the banks.
    assert pages_to_read(e.lower[0x50], bytes(banks))[-2:] == [(0x50, 1, 0x11), (0x50, 0, 0x2F)]


def test_cmis_bank_1_holds_lanes_9_to_16():
    e = eeprom(DR8)
    e = with_bytes(e, (0x50, 0, 1), {142 - 128: 0x65})  # banks 0-1
    e = ModuleEeprom(e.lower, dict(e.upper) | {(0x50, 1, 0x11): e.upper[(0x50, 0, 0x11)]}, 0)
    app = {86 + i: b for i, b in enumerate((0x51, 0x56, 0x88, 0x01))} | {90: 0xFF}
    e = with_bytes(with_bytes(e, 0x50, app), (0x50, 0, 1), {176 - 128: 0x81})  # from lane 8
    lanes = sorted(int(v.labels["lane"]) for v in decode(e)
                   if v.metric == "nic_module_rx_power_watts")
    assert lanes == list(range(1, 16))


def test_partial_cmis_dump_decodes_what_it_holds():
    """Only the lower half: identity without page 00h fields, temperature and Vcc, and no
    lane values (page 01h says which exist)."""
    e = eeprom(DR8)
    lower_only = ModuleEeprom({0x50: e.lower[0x50]}, {}, 0)
    v = values(lower_only)
    assert info(lower_only)["vendor"] == "" and info(lower_only)["firmware"] == "0.13"
    assert {k[0] for k in v} == {"nic_module_info", "nic_module_temperature_celsius",
                                    "nic_module_supply_voltage_volts", "nic_module_flag",
                                    "nic_module_state", "nic_module_firmware_info"}
    # the active image is in the lower half; the inactive one needs page 01h
    assert [k[1] for k in v if k[0] == "nic_module_firmware_info"] == [
        (("image", "active"), ("version", "0.13"))]


def test_unknown_identifier_and_empty():
    assert decode(ModuleEeprom({}, {}, 0)) == [] and identify(ModuleEeprom({}, {}, 0)) is None
    xfp = ModuleEeprom({0x50: bytes([0x06]) + bytes(127)}, {}, 0)
    assert identify(xfp) is None and decode(xfp) == [] and pages_to_read(xfp.lower[0x50]) == []


# -- robustness: truncated and random pages --------------------------------------------------

FIXTURE_NAMES = sorted(p.name for p in MODULE.iterdir() if p.suffix in (".txt", ".bin")
                       and not p.name.endswith((".source.txt", ".ethtool-m.txt")))


def four_lane_cmis() -> ModuleEeprom:
    """The DR8 dump as a 4-lane module (one application: 4 media lanes from lane 1)."""
    app = {86 + i: b for i, b in enumerate((0x50, 0x1D, 0x84, 0x01))} | {90: 0xFF}
    return with_bytes(with_bytes(eeprom(DR8), 0x50, app), (0x50, 0, 1), {176 - 128: 0x01})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([*FIXTURE_NAMES, "four-lane CMIS"]), st.data())
def test_truncated_pages_decode_a_subset_of_the_same_values(name, data):
    """Any half page cut short (or dropped) gives no error and only values the full dump
    also gives, with the same value: what is decoded is never made up."""
    full = four_lane_cmis() if name == "four-lane CMIS" else eeprom(name)
    whole = values(full)

    def cut(halves):
        out = {}
        for k, b in halves.items():
            n = data.draw(st.integers(0, len(b)), label=str(k))
            if n:
                out[k] = b[:n]
        return out

    lower = cut(full.lower)
    if 0x50 in full.lower:  # the identifier byte stays: it selects the map
        lower[0x50] = full.lower[0x50][:max(1, len(lower.get(0x50, b"")))]
    part = ModuleEeprom(lower, cut(full.upper), 0)
    got = values(part)
    for k, value in got.items():
        if k[0] == "nic_module_info":
            continue  # its text fields go "" when their page is short
        if ("type", "unknown") in k[1]:  # the byte that says the rx power type was cut off
            k = next(w for w in whole if w[0] == k[0] and set(k[1]) - {("type", "unknown")}
                     <= set(w[1]))
        assert k in whole and whole[k] == value, (k, value, whole.get(k))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from([0x03, 0x0C, 0x0D, 0x11, 0x18, 0x19, 0x1E, 0x06, 0x00]),
       st.dictionaries(st.sampled_from([0x50, 0x51]), st.binary(max_size=128), max_size=2),
       st.dictionaries(st.tuples(st.sampled_from([0x50, 0x51]), st.integers(0, 3),
                                 st.sampled_from([0, 1, 2, 3, 0x10, 0x11])),
                       st.binary(max_size=128), max_size=8))
def test_random_pages_never_raise(identifier, lower, upper):
    lower = dict(lower)
    lower[0x50] = bytes([identifier]) + lower.get(0x50, b"")[1:]
    e = ModuleEeprom(lower, upper, 0)
    for v in decode(e):
        assert isinstance(v.value, float) and math.isfinite(v.value)
        assert all(isinstance(x, str) and x.isprintable() for x in v.labels.values())
    pages_to_read(lower[0x50])
    pages_to_read(lower[0x50], upper.get((0x50, 0, 1)))


# -- into the Sample and onto /metrics ----------------------------------------------------------

def _reading(module: ModuleEeprom | None, t: float = 100.0) -> Reading:
    nc = NetClass("eth0", 2, "0c:42:a1:00:00:01", "up", 9000, 400000, "full", True, 1, 1, 0,
                  None, None, None)
    return Reading("eth0", t, t, nc, module=module)


def test_module_values_are_sample_gauges_and_render():
    e = eeprom(DR8)
    sample = normalize(_reading(e))
    assert close(sample.gauge("nic_module_rx_power_watts", lane="3", type="average"), 0x521B * 1e-7)
    assert sample.gauge("nic_module_temperature_celsius") == 0x39EE / 256
    assert normalize(_reading(None)).gauge("nic_module_temperature_celsius") is None
    assert not any(k.metric.startswith("nic_module_") for k in normalize(_reading(None)).gauges)
    text = render(Tracker().update([sample]), SelfStats(polls=1, last_poll_time=100.0,
                                                        durations={})).decode()
    promtool_check(text)
    served = parse_exposition(text)
    lane3 = (("device", "eth0"), ("lane", "3"), ("type", "average"))
    assert served[("nic_module_rx_power_watts", lane3)] > 0
    assert served[("nic_module_info", tuple(sorted({"device": "eth0", **info(e)}.items())))] == 1
    assert "# HELP nic_module_rx_power_watts " in text
    saved = interface_snapshot(sample).gauges  # snapshots and history keep them like others
    assert saved[SeriesKey("nic_module_tx_bias_amperes", (("lane", "8"),))] == 0x88AF * 2 / 1e6


def test_series_are_decoded_once_per_eeprom_read():
    e = eeprom(DR8)
    kept = DecodedModules()  # a Normalizer's, what the collector keeps between polls
    first = kept.gauges(e, "eth7")
    assert kept.gauges(e, "eth7") is first  # same EEPROM object: the kept series
    assert DecodedModules().gauges(e, "eth7") is not first  # nothing shared between owners
    assert gauges(e) is not first and gauges(e) == first  # nothing kept without an owner
    again = ModuleEeprom(dict(e.lower), dict(e.upper), 1.0)
    assert kept.gauges(again, "eth7") is not first and kept.gauges(again, "eth7") == first
    assert kept.gauges(None, "eth7") == {}


@pytest.mark.parametrize("dump, images", [
    (DR8, {"active": "0.13", "inactive": "0.0"}),
    ("osfp-800g-aec-credo.txt", {"active": "1.4", "inactive": "1.4"}),
])
def test_cmis_firmware_images_active_from_lower_memory_inactive_from_page_01h(dump, images):
    """Active image: lower memory bytes 39-40 (CMIS 5.2 8.15); inactive: page 01h bytes
    128-129 (8.3.7). The published decoders' own output (the .source.txt files) agrees on
    the active revision and on the hardware revision beside it (page 01h bytes 130-131:
    1.2 and 10.0), which places the inactive image's two bytes."""
    v = values(eeprom(dump))
    got = {dict(k[1])["image"]: dict(k[1])["version"] for k in v
           if k[0] == "nic_module_firmware_info"}
    assert got == images
