"""What module values mean (issue 25, items 6-10): real dumps decode to the values published
with them; checksums, the rx power measurement type, SFF-8472's address-change and compliance
bytes, CMIS module and data path states, DSFP/SFP-DD lanes, and values outside physical bounds.

Variants of real dumps change only the bytes the spec names (and reseal the checksums, as a
module holding those bytes would, unless the point is a checksum that fails).
"""

from __future__ import annotations

import math
import re
import struct

import pytest

from nicwatch.model import ModuleEeprom, ModulePowerMode, ModuleReadStatus, NetClass, Reading
from nicwatch.normalize import normalize
from nicwatch.normalize.module import checksums, decode, pages_to_read, series
from nicwatch.normalize.module.hexdump import parse, parse_raw

from fixture_module import resealed
from paths import FIXTURES

MODULE = FIXTURES / "module"
OEM_2G5 = MODULE / "sfp-oem-2g5t-netdev.hexdump.txt"
FINISAR = MODULE / "sfp28-finisar-ftlf8536p4bcl-netdev.bin"
HISENSE = MODULE / "qsfp-cmis-hisense-aoc-sonic.sfputil.txt"
DR8 = MODULE / "osfp-800g-dr8-juniper.txt"
QSFP28 = MODULE / "qsfp28-fs-ir4-go-ethtool.txt"
SFP_LR = MODULE / "sfp-oem-10g-lr-go-ethtool.txt"
REAL = sorted(p for p in MODULE.iterdir() if p.suffix in (".txt", ".bin")
              and not p.name.endswith((".source.txt", ".ethtool-m.txt")))


def load(path) -> ModuleEeprom:
    dump = parse_raw(path.read_bytes()) if path.suffix == ".bin" else parse(path.read_text())
    return dump.eeprom


def table(e: ModuleEeprom) -> dict[tuple, float]:
    return {(v.metric, tuple(sorted(v.labels.items()))): v.value for v in decode(e)}


def key(metric: str, **labels: str) -> tuple:
    return metric, tuple(sorted(labels.items()))


def changed(e: ModuleEeprom, half, changes: dict[int, int], seal: bool = True) -> ModuleEeprom:
    store = dict(e.lower if isinstance(half, int) else e.upper)
    data = bytearray(store[half])
    for offset, value in changes.items():
        data[offset] = value
    store[half] = bytes(data)
    out = (ModuleEeprom(store, e.upper, e.read_at) if isinstance(half, int)
           else ModuleEeprom(e.lower, store, e.read_at))
    return resealed(out) if seal else out


# --- real dumps against the decoded output published with them -----------------------------

ETHTOOL_NAMES = {  # `ethtool -m` (sfpdiag.c) line -> (family, labels, unit factor)
    "Laser bias current": ("nic_module_tx_bias_amperes", {"lane": "1"}, 1e-3),
    "Laser output power": ("nic_module_tx_power_watts", {"lane": "1"}, 1e-3),
    "Receiver signal average optical power": ("nic_module_rx_power_watts",
                                              {"lane": "1", "type": "average"}, 1e-3),
}
THRESHOLD_NAMES = {"Laser bias current": ("nic_module_tx_bias_threshold_amperes", 1e-3, {}),
                   "Laser output power": ("nic_module_tx_power_threshold_watts", 1e-3, {}),
                   "Module temperature": ("nic_module_temperature_threshold_celsius", 1, {}),
                   "Module voltage": ("nic_module_supply_voltage_threshold_volts", 1, {}),
                   "Laser rx power": ("nic_module_rx_power_threshold_watts", 1e-3,
                                      {"type": "average"})}
FLAG_NAMES = {"Laser bias current": "tx_bias", "Laser output power": "tx_power",
              "Module temperature": "temperature", "Module voltage": "supply_voltage",
              "Laser rx power": "rx_power"}


def published(path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        name, sep, text = line.partition(" : ")
        if sep and not line.startswith("#"):
            out[name.strip()] = text.strip()
    return out


def test_oem_2g5_sfp_decodes_to_the_ethtool_printout_published_with_it():
    """netdev 2023-03: a `hexdump -C` of `ethtool -m raw on` and the `ethtool -m` printout of
    the same module. Every value ethtool printed is the decoder's, to the digits printed, but
    temperature and voltage (the printout was taken at another moment: 28.21 C / 3.3067 V; the
    bytes hold 0x291a = 41.10 C and 0x8241 = 3.3345 V)."""
    v = table(load(OEM_2G5))
    printed = published(MODULE / "sfp-oem-2g5t-netdev.ethtool-m.txt")
    info = next(dict(k[1]) for k in v if k[0] == "nic_module_info")
    assert (info["vendor"], info["part"], info["revision"], info["serial"]) == (
        printed["Vendor name"], printed["Vendor PN"], printed["Vendor rev"], printed["Vendor SN"])
    for name, (metric, labels, unit) in ETHTOOL_NAMES.items():
        number = float(printed[name].split()[0])
        assert round(v[key(metric, **labels)] / unit, 4) == number, name
    checked = 0
    for name, (metric, unit, extra) in THRESHOLD_NAMES.items():
        for level, word in (("high_alarm", "high alarm"), ("low_alarm", "low alarm"),
                            ("high_warning", "high warning"), ("low_warning", "low warning")):
            number = float(printed[f"{name} {word} threshold"].split()[0])
            assert round(v[key(metric, level=level, **extra)] / unit, 4) == number, (name, word)
            checked += 1
        for level, word in (("high_alarm", "high alarm"), ("low_alarm", "low alarm"),
                            ("high_warning", "high warning"), ("low_warning", "low warning")):
            lane = "" if FLAG_NAMES[name] in ("temperature", "supply_voltage") else "1"
            flag = v[key("nic_module_flag", quantity=FLAG_NAMES[name], level=level, lane=lane)]
            assert flag == (printed[f"{name} {word}"] == "On")
    assert checked == 20
    assert v[key("nic_module_temperature_celsius")] == 0x291A / 256
    assert v[key("nic_module_supply_voltage_volts")] == 0x8241 / 10_000
    assert printed["Optical diagnostics support"] == "Yes"


def test_hisense_cmis_aoc_decodes_to_the_identity_sfputil_printed():
    """SONiC `sfputil show eeprom` of the same module printed Vendor Name Hisense, PN
    DEF8504-2C02-MB3, Rev 02, SN VEMDBT0200A-A; the test beside the dump expects data path
    state 4 (DPActivated) on the port's lanes; the one application has 4 media lanes."""
    e = load(HISENSE)
    v = table(e)
    info = next(dict(k[1]) for k in v if k[0] == "nic_module_info")
    assert (info["identifier"], info["vendor"], info["part"], info["revision"],
            info["serial"], info["spec"]) == ("QSFP (CMIS)", "Hisense", "DEF8504-2C02-MB3", "02",
                                              "VEMDBT0200A-A", "CMIS 5.2")
    assert {dict(k[1])["lane"]: dict(k[1])["state"] for k in v
            if k[0] == "nic_module_data_path_state"} == {str(n): "activated" for n in (1, 2, 3, 4)}
    assert v[key("nic_module_state", state="ready")] == 1  # lower byte 3 = 06: bits 3-1 = 3
    assert v[key("nic_module_checksum_valid", checksum="page_00h")] == 1
    # The second run's lower page (1a 3e) is decoded: 26.24 C.
    assert v[key("nic_module_temperature_celsius")] == 0x1A3E / 256


def test_finisar_raw_bytes_hexdump_and_xxd_are_one_eeprom():
    """The attachment (`ethtool -m raw on`), the hexdump the poster added and an xxd of the
    bytes give the same halves and values; by hand: A2h 96-105 = 26 f1 | 83 b6 | 00 51 | 00 00
    | 0a c6 (38.94 C, 3.3718 V, 0.162 mA, 0 W with the laser off, 0.2758 mW received)."""
    raw = load(FINISAR)
    for name in ("sfp28-finisar-ftlf8536p4bcl-netdev.hexdump.txt",
                 "sfp28-finisar-ftlf8536p4bcl.xxd.txt"):
        text = load(MODULE / name)
        assert (dict(text.lower), dict(text.upper)) == (dict(raw.lower), dict(raw.upper)), name
    v = table(raw)
    assert v[key("nic_module_temperature_celsius")] == 0x26F1 / 256
    assert v[key("nic_module_supply_voltage_volts")] == 0x83B6 / 10_000
    assert math.isclose(v[key("nic_module_tx_bias_amperes", lane="1")], 0x51 * 2e-6)
    assert v[key("nic_module_tx_power_watts", lane="1")] == 0.0
    rx = v[key("nic_module_rx_power_watts", lane="1", type="average")]
    assert math.isclose(rx, 0x0AC6 * 1e-7)
    # A2h 112 = 05: bias low alarm and tx power low alarm, as a laser that is off raises.
    assert v[key("nic_module_flag", quantity="tx_power", level="low_alarm", lane="1")] == 1


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_real_dump_passes_its_checksums(path):
    """Published modules hold valid checksums (CMIS page checksums too), so a failing one
    points at the read, not at a fussy check."""
    sums = checksums(load(path))
    assert sums and all(c.valid for c in sums), [c for c in sums if not c.valid]


# --- item 6: checksums ------------------------------------------------------------------------


def _corrupt_state(e: ModuleEeprom) -> str:
    nc = NetClass("eth0", 2, *[None] * 12)
    sample = normalize(Reading("eth0", 1.0, 1.0, nc, module=e,
                               module_read=ModuleReadStatus("ok", 1.0, {})))
    (state,) = [dict(k.labels)["state"] for k, on in sample.gauges.items()
                if k.metric == "nic_module_read_state" and on]
    return state


def test_a2h_shifted_into_a0h_is_corrupt_and_decodes_no_identity():
    """The failure the netdev report describes (bnxt_en, 2025-04): A2h's bytes returned where
    A0h was asked for. Built from the Finisar dump: its A2h lower half in A0h's place, the
    identifier byte kept so the map is still SFF-8472. Before: a garbage vendor name, exit 0."""
    real = load(FINISAR)
    shifted = bytes([0x03]) + real.lower[0x51][1:]
    e = ModuleEeprom(dict(real.lower) | {0x50: shifted}, real.upper, 0.0)
    v = table(e)
    assert v[key("nic_module_checksum_valid", checksum="cc_base")] == 0
    assert not any(k[0] in ("nic_module_info", "nic_module_temperature_celsius",
                            "nic_module_rx_power_watts") for k in v)
    assert _corrupt_state(e) == "corrupt"
    assert _corrupt_state(real) == "ok"
    assert pages_to_read(shifted) == [(0x50, 0, 0)]  # A2h is not read behind a corrupt A0h


@pytest.mark.parametrize("path, half, offset, gone", [
    (SFP_LR, 0x50, 40, {"nic_module_info", "nic_module_rx_power_watts"}),  # part number, base
    (SFP_LR, 0x50, 70, {"nic_module_info", "nic_module_rx_power_watts"}),  # serial, extended
    (SFP_LR, 0x51, 20, {"nic_module_rx_power_watts", "nic_module_flag"}),  # A2h thresholds
    (QSFP28, (0x50, 0, 0), 20, {"nic_module_info", "nic_module_rx_power_watts"}),  # vendor
    (QSFP28, (0x50, 0, 0), 68, {"nic_module_info", "nic_module_tx_bias_amperes"}),  # serial
    (DR8, (0x50, 0, 0), 1, {"nic_module_info"}),  # vendor name
    (DR8, (0x50, 0, 1), 32, {"nic_module_rx_power_watts", "nic_module_tx_bias_amperes"}),
    (DR8, (0x50, 0, 2), 0, {"nic_module_temperature_threshold_celsius",
                            "nic_module_rx_power_threshold_watts"}),
])
def test_one_wrong_byte_fails_its_checksum_and_drops_that_page(path, half, offset, gone):
    e = load(path)
    whole = {k[0] for k in table(e)}
    assert gone <= whole
    data = (e.lower if isinstance(half, int) else e.upper)[half]
    bad = changed(e, half, {offset: data[offset] ^ 0x01}, seal=False)
    v = table(bad)
    assert not gone & {k[0] for k in v}, gone & {k[0] for k in v}
    assert [k for k, x in v.items() if k[0] == "nic_module_checksum_valid" and not x]
    assert _corrupt_state(bad) == "corrupt"
    if half != 0x50 and path is not SFP_LR:  # the lower page has no checksum: its values stay
        assert "nic_module_temperature_celsius" in {k[0] for k in v}


# --- item 7: rx power measurement type ---------------------------------------------------------


@pytest.mark.parametrize("path, half, offset, bit", [
    (SFP_LR, 0x50, 92, 0x08), (QSFP28, (0x50, 0, 0), 220 - 128, 0x08),
    (DR8, (0x50, 0, 1), 151 - 128, 0x10)])
def test_rx_power_carries_its_measurement_type(path, half, offset, bit):
    """SFF-8472 A0h 92 bit 3, SFF-8636 page 00h 220 bit 3, CMIS page 01h 151 bit 4: all three
    real modules measure average power; with the bit clear, OMA."""
    e = load(path)
    assert {dict(k[1])["type"] for k in table(e) if k[0].startswith("nic_module_rx_power")} == {
        "average"}
    data = (e.lower if isinstance(half, int) else e.upper)[half]
    oma = changed(e, half, {offset: data[offset] & ~bit})
    types = {dict(k[1])["type"] for k in table(oma) if k[0].startswith("nic_module_rx_power")}
    assert types == {"oma"}


# --- item 8: SFF-8472 address change and compliance ---------------------------------------------


def test_sff8079_modules_a2h_is_not_read_nor_decoded():
    """Byte 94 = 0 (SFF-8079, no diagnostics) or byte 92 bit 2 (address change): the kernel
    reports the module as SFF-8079 and a read of i2c 0x51 through its fallback returns A0h
    (eeprom.c fallback_set_params). That A0h copy as A2h gave thresholds decoded from the vendor
    name and a 0 W link; now A2h is neither read nor decoded."""
    real = load(SFP_LR)
    assert (0x51, 0, 0) in pages_to_read(real.lower[0x50])
    for changes in ({94: 0x00}, {92: real.lower[0x50][92] | 0x04}):
        a0 = changed(real, 0x50, changes).lower[0x50]
        assert pages_to_read(a0) == [(0x50, 0, 0)]
        page = real.upper[(0x50, 0, 0)]
        as_fallback = ModuleEeprom({0x50: a0, 0x51: a0}, {(0x50, 0, 0): page, (0x51, 0, 0): page},
                                   0)
        metrics = {k[0] for k in table(as_fallback)}
        assert "nic_module_info" in metrics
        assert not {m for m in metrics if "threshold" in m or m.endswith(("_watts", "_amperes"))}
        assert "nic_module_checksum_valid" in metrics  # A0h's, valid: the module is not corrupt


# --- item 9: CMIS module state and data path state ---------------------------------------------


def test_a_deactivated_data_path_is_that_state_not_a_dark_lane():
    """CMIS page 11h 128-131 (a nibble per lane, lane 1 low nibble): lanes 7 and 8 of the DR8
    set to 1 (DPDeactivated) with their rx power bytes 0 (a receiver that is off): no 0 W
    series for them, their state instead; lanes 1-6 unchanged."""
    e = load(DR8)
    dark = changed(e, (0x50, 0, 0x11), {131 - 128: 0x11, 198 - 128: 0, 199 - 128: 0,
                                        200 - 128: 0, 201 - 128: 0})
    v = table(dark)
    lanes = {dict(k[1])["lane"] for k in v if k[0] == "nic_module_rx_power_watts"}
    assert lanes == {"1", "2", "3", "4", "5", "6"}
    assert v[key("nic_module_data_path_state", lane="8", state="deactivated")] == 1
    assert v[key("nic_module_data_path_state", lane="1", state="activated")] == 1
    assert not [k for k in v if k[0] == "nic_module_flag" and dict(k[1])["lane"] in ("7", "8")]
    assert table(e)[key("nic_module_rx_power_watts", lane="8", type="average")] > 0


def test_module_in_low_power():
    """Lower byte 3 bits 3-1 = 1 (ModuleLowPwr) and every data path deactivated, as a module
    reads after `sfputil lpmode on`: module state low_power, no lane monitors, temperature kept."""
    e = load(DR8)
    low = changed(changed(e, 0x50, {3: 0x01 << 1 | 1}), (0x50, 0, 0x11),
                  dict.fromkeys(range(4), 17))
    v = table(low)
    assert v[key("nic_module_state", state="low_power")] == 1
    assert v[key("nic_module_state", state="ready")] == 0
    assert not [k for k in v if k[0] in ("nic_module_rx_power_watts", "nic_module_tx_power_watts")]
    assert key("nic_module_temperature_celsius") in v
    states = {dict(k[1])["state"] for k in v if k[0] == "nic_module_data_path_state"}
    assert states == {"deactivated"}


def test_reserved_codes_read_unknown():
    e = load(DR8)
    odd = changed(changed(e, 0x50, {3: 0x07 << 1}), (0x50, 0, 0x11), {0: 0x49})
    v = table(odd)
    assert v[key("nic_module_state", state="unknown")] == 1
    assert v[key("nic_module_data_path_state", lane="1", state="unknown")] == 1
    # An unknown state hides nothing: lane 1's monitors stay.
    assert key("nic_module_rx_power_watts", lane="1", type="average") in v


def test_power_mode_from_module_get_is_exported_beside_the_eeprom():
    e = load(DR8)
    out = series(ModuleEeprom(e.lower, e.upper, 1.0, ModulePowerMode("auto", "low")))
    assert {k.metric: dict(k.labels) for k, x in out.items() if "power_mode" in k.metric} == {
        "nic_module_power_mode_policy": {"policy": "auto"},
        "nic_module_power_mode": {"mode": "low"}}
    assert not [k for k in series(e) if "power_mode" in k.metric]  # not reported: absent


# --- item 10: DSFP, SFP-DD -------------------------------------------------------------------


@pytest.mark.parametrize("identifier, name", [(0x1A, "SFP-DD"), (0x1B, "DSFP")])
def test_sfp_dd_and_dsfp_are_cmis_with_two_lanes(identifier, name):
    """SFF-8024: 0x1A SFP-DD, 0x1B DSFP (both CMIS-managed). Built from the DR8 dump with the
    identifier replaced and no application advertised (byte 86 = ff): 2 lanes, not 8."""
    e = changed(load(DR8), 0x50, {0: identifier, 86: 0xFF})
    v = table(e)
    assert next(dict(k[1]) for k in v if k[0] == "nic_module_info")["identifier"] == name
    assert {dict(k[1])["lane"] for k in v if k[0] == "nic_module_rx_power_watts"} == {"1", "2"}


# --- issue 24 item 10: values outside physical bounds ------------------------------------------


def test_extreme_external_calibration_is_implausible_not_a_measurement():
    """SFF-8472 9.3 external calibration with extreme constants: temperature slope 0x8000
    (128.0), offset 0x8000 (-32768) on 0x228a gives 1,146,880 C; Vcc slope 0xffff gives 8,421 V;
    tx power offset -32768 gives negative watts; rx polynomial Rx_PWR(0) = -1e6 likewise. None is
    exported; each is named."""
    e = changed(load(SFP_LR), 0x50, {92: 0x58})
    cal = {56 + i: b for i, b in enumerate(struct.pack(">5f", 0, 0, 0, 0, -1e6))}
    cal.update({76: 0x01, 77: 0x00, 78: 0x00, 79: 0x00,  # bias: neutral
                80: 0x01, 81: 0x00, 82: 0x80, 83: 0x00,  # tx power offset -32768
                84: 0x80, 85: 0x00, 86: 0x80, 87: 0x00,  # temperature
                88: 0xFF, 89: 0xFF, 90: 0x00, 91: 0x00})  # Vcc
    v = table(changed(e, 0x51, cal))
    implausible = {(dict(k[1])["quantity"], dict(k[1])["level"]) for k in v
                   if k[0] == "nic_module_value_implausible"}
    assert {("temperature", ""), ("supply_voltage", ""), ("tx_power", ""),
            ("rx_power", "")} <= implausible
    for metric in ("nic_module_temperature_celsius", "nic_module_supply_voltage_volts",
                   "nic_module_tx_power_watts", "nic_module_rx_power_watts"):
        assert not [k for k in v if k[0] == metric], metric
    assert key("nic_module_tx_bias_amperes", lane="1") in v  # neutral constants: still there
    for k, x in v.items():
        low_high = {"nic_module_temperature_celsius": (-128, 128)}.get(k[0])
        if low_high:
            assert low_high[0] <= x < low_high[1]


def test_a_healthy_module_has_nothing_implausible_or_corrupt():
    for path in REAL:
        v = table(load(path))
        assert not [k for k in v if k[0] == "nic_module_value_implausible"], path.name
        assert all(x == 1 for k, x in v.items() if k[0] == "nic_module_checksum_valid")


def test_the_netdev_printout_rounding_matches_the_dbm_ethtool_prints():
    """ethtool prints 10*log10(mW) to 2 decimals; the same numbers from the decoded watts."""
    v = table(load(OEM_2G5))
    printed = published(MODULE / "sfp-oem-2g5t-netdev.ethtool-m.txt")
    dbm = float(re.search(r"/ (-?[\d.]+) dBm", printed["Laser rx power low warning threshold"])[1])
    watts = v[key("nic_module_rx_power_threshold_watts", level="low_warning", type="average")]
    assert round(10 * math.log10(watts * 1000), 2) == dbm


def test_new_families_render_and_pass_promtool():
    """A corrupt SFP, a CMIS module in low power with a reported power mode, and an SFP with
    implausible calibration in one exposition: every family declared, promtool clean."""
    from nicwatch.exporter.render import SelfStats, render
    from nicwatch.tracker import Tracker

    from promtext import parse_exposition, promtool_check

    def sample(name: str, e: ModuleEeprom):
        nc = NetClass(name, 2, *[None] * 12)
        return normalize(Reading(name, 10.0, 10.0, nc, module=e,
                                 module_read=ModuleReadStatus("ok", 10.0, {})))

    real = load(FINISAR)
    corrupt = ModuleEeprom(dict(real.lower) | {0x50: b"\x03" + real.lower[0x51][1:]},
                           real.upper, 9.0)
    dr8 = load(DR8)
    low = changed(changed(dr8, 0x50, {3: 0x03}), (0x50, 0, 0x11), dict.fromkeys(range(4), 17))
    low = ModuleEeprom(low.lower, low.upper, 9.0, ModulePowerMode("auto", "low"))
    weird = changed(changed(load(SFP_LR), 0x50, {92: 0x58}), 0x51, {84: 0x80, 86: 0x80})
    samples = [sample("eth0", corrupt), sample("eth1", low), sample("eth2", weird)]
    tracked = Tracker().update(samples)
    stats = SelfStats(polls=1, last_poll_time=10.0, durations={})
    text = render(tracked, stats, detail="full").decode()  # every series, 0 states included
    promtool_check(text)
    served = parse_exposition(text)
    default = render(tracked, stats).decode()  # --collector.detail=port: current states only
    promtool_check(default)
    assert ('nic_module_read_state{device="eth0",state="corrupt"} 1' in default
            and 'nic_module_read_state{device="eth0",state="ok"}' not in default)
    assert served[("nic_module_read_state", (("device", "eth0"), ("state", "corrupt")))] == 1
    assert served[("nic_module_read_state", (("device", "eth0"), ("state", "ok")))] == 0
    assert served[("nic_module_checksum_valid", (("checksum", "cc_base"), ("device", "eth0")))] == 0
    assert served[("nic_module_state", (("device", "eth1"), ("state", "low_power")))] == 1
    assert served[("nic_module_power_mode", (("device", "eth1"), ("mode", "low")))] == 1
    assert served[("nic_module_data_path_state", (("device", "eth1"), ("lane", "1"),
                                                  ("state", "deactivated")))] == 1
    implausible = (("device", "eth2"), ("lane", ""), ("level", ""), ("quantity", "temperature"))
    assert served[("nic_module_value_implausible", implausible)] == 1
    assert not [k for k in served if k[0] == "nic_module_temperature_celsius"
                and ("device", "eth2") in k[1]]
    assert served[("nic_module_read_state", (("device", "eth2"), ("state", "ok")))] == 1
