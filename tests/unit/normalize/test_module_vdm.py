"""CMIS VDM decoding (normalize/module/vdm.py) on the real 800G DR8 module with spec-built
VDM pages (tests/helpers/fixture_vdm.py says how they were built and from which source).

Expected values are worked out by hand from the raw words in fixture_vdm and the CMIS
encodings (F16: mantissa x 10^(exponent - 24); U16/S16 eSNR and temperature in 1/256)."""

from __future__ import annotations

import math
from types import MappingProxyType

import pytest

from nicwatch.model import ModuleEeprom
from nicwatch.normalize.module import decode, pages_to_read
from nicwatch.normalize.module.vdm import f16, groups

from fixture_module import fixture_eeprom
from fixture_vdm import DR8, vdm_eeprom, vdm_pages


def values(e: ModuleEeprom) -> dict[tuple, float]:
    out = {(v.metric, tuple(sorted(v.labels.items()))): v.value for v in decode(e)}
    assert len(out) == len(decode(e)), "a series decoded twice"
    return out


def key(metric: str, **labels: str) -> tuple:
    return metric, tuple(sorted(labels.items()))


def test_f16_worked_examples() -> None:
    # sonic-platform-common's own test: 0x9200 (exponent 18, mantissa 512) is 5.12e-4.
    assert f16(0x9200) == pytest.approx(5.12e-4)
    assert f16(0x80D2) == pytest.approx(2.1e-6)  # exponent 16, mantissa 210
    assert f16(0x0000) == 0.0
    assert f16(0xFFFF) == pytest.approx(2047 * 10.0 ** 7)  # the largest: 31 - 24 = 7


def test_bad_lane_named_by_lane_with_its_thresholds_and_flags() -> None:
    got = values(vdm_eeprom())
    ber = "nic_module_vdm_pre_fec_ber"
    assert got[key(ber, lane="5", side="media", stat="current")] == pytest.approx(3.2e-4)
    for lane in "1234678":
        assert got[key(ber, lane=lane, side="media", stat="current")] == pytest.approx(2.1e-6)
        assert got[key(ber, lane=lane, side="host", stat="current")] == pytest.approx(1e-8)
    assert got[key(ber, lane="5", side="media", stat="max")] == pytest.approx(4e-4)
    limit = "nic_module_vdm_pre_fec_ber_threshold"
    assert got[key(limit, lane="5", side="media", stat="current", level="high_alarm")] == \
        pytest.approx(2.4e-4)
    assert got[key(limit, lane="5", side="media", stat="current", level="high_warning")] == \
        pytest.approx(1e-4)
    assert got[key(limit, lane="1", side="host", stat="current", level="high_alarm")] == \
        pytest.approx(1e-5)
    esnr = "nic_module_vdm_esnr_db"
    assert got[key(esnr, lane="5", side="media")] == 15.25
    assert got[key(esnr, lane="1", side="media")] == 19.5
    assert got[key("nic_module_vdm_esnr_threshold_db", lane="5", side="media",
                   level="low_warning")] == 16.5
    temp = "nic_module_vdm_laser_temperature_celsius"
    assert got[key(temp, lane="3")] == 45.5
    assert got[key("nic_module_vdm_laser_temperature_threshold_celsius", lane="3",
                   level="low_alarm")] == -5.0  # S16
    frames = "nic_module_vdm_errored_frames"
    assert got[key(frames, lane="5", side="media", stat="current")] == pytest.approx(1.5e-9)
    assert got[key(frames, lane="2", side="media", stat="current")] == 0.0
    flag = "nic_module_flag"
    assert got[key(flag, quantity="vdm_pre_fec_ber_media_current", level="high_alarm",
                   lane="5")] == 1.0
    assert got[key(flag, quantity="vdm_pre_fec_ber_media_current", level="low_alarm",
                   lane="5")] == 0.0
    assert got[key(flag, quantity="vdm_pre_fec_ber_media_current", level="high_warning",
                   lane="5")] == 1.0
    assert got[key(flag, quantity="vdm_esnr_media", level="low_warning", lane="5")] == 1.0
    # Statistics give their value only: the module sets lane 5's max flags, none is exported,
    # nor the max's thresholds.
    assert not [k for k in got if k[0] == flag and "_max" in dict(k[1])["quantity"]]
    assert not [k for k in got if k[0] == limit and ("stat", "max") in k[1]]
    set_flags = {k for k, v in got.items() if k[0] == flag and v and "vdm" in str(k)}
    assert {dict(k[1])["lane"] for k in set_flags} == {"5"}


def test_first_descriptor_wins_and_unknown_types_are_left_out() -> None:
    got = values(vdm_eeprom())
    # lane 1's current media BER is listed twice: the second (9.99e-1) is ignored.
    assert got[key("nic_module_vdm_pre_fec_ber", lane="1", side="media", stat="current")] == \
        pytest.approx(2.1e-6)
    assert not [k for k in got if "laser_age" in k[0]]
    vdm = [k for k in got if k[0].startswith("nic_module_vdm_")]
    # 6 rows x 8 lanes of observables; 4 thresholds each for the 5 rows that are not a
    # statistic.
    assert len(vdm) == 6 * 8 + 5 * 8 * 4


def test_without_flag_page_no_vdm_flags_but_values() -> None:
    got = values(vdm_eeprom(flags=False))
    assert not [k for k in got if k[0] == "nic_module_flag" and "vdm" in str(k[1])]
    assert key("nic_module_vdm_esnr_db", lane="5", side="media") in got


def test_not_advertised_means_nothing_even_with_pages() -> None:
    e = vdm_eeprom()
    page1 = bytearray(e.upper[(0x50, 0, 1)])
    page1[142 - 128] &= ~0x40
    page1[255 - 128] = sum(page1[2:127]) & 0xFF  # keep the page checksum valid
    upper = dict(e.upper) | {(0x50, 0, 1): bytes(page1)}
    got = values(ModuleEeprom(e.lower, MappingProxyType(upper), e.read_at))
    assert not [k for k in got if k[0].startswith("nic_module_vdm_")]
    assert pages_to_read(e.lower[0x50], bytes(page1)) == [
        (0x50, 0, 0), (0x50, 0, 1), (0x50, 0, 2), (0x50, 0, 0x11)]


def test_inactive_lane_gives_no_vdm() -> None:
    e = vdm_eeprom()
    page11 = bytearray(e.upper[(0x50, 0, 0x11)])
    page11[2] = 0x41  # lane 5 (low nibble of byte 130) DPDeactivated, lane 6 activated
    upper = dict(e.upper) | {(0x50, 0, 0x11): bytes(page11)}
    got = values(ModuleEeprom(e.lower, MappingProxyType(upper), e.read_at))
    assert not [k for k in got if k[0].startswith("nic_module_vdm_") and ("lane", "5") in k[1]]
    assert key("nic_module_vdm_esnr_db", lane="6", side="media") in got


def test_pages_read_follow_the_advertisement() -> None:
    real = fixture_eeprom(DR8)
    lower, page1 = real.lower[0x50], real.upper[(0x50, 0, 1)]
    assert page1[142 - 128] & 0x40  # the real module advertises VDM
    base = [(0x50, 0, 0), (0x50, 0, 1), (0x50, 0, 2), (0x50, 0, 0x11)]
    assert pages_to_read(lower) == base
    assert pages_to_read(lower, page1) == [*base, (0x50, 0, 0x2F)]
    control = bytes([0x03]) + bytes(127)  # four groups
    assert groups(control) == 4
    assert pages_to_read(lower, page1, control) == [
        *base, (0x50, 0, 0x2F),
        (0x50, 0, 0x20), (0x50, 0, 0x24), (0x50, 0, 0x28),
        (0x50, 0, 0x21), (0x50, 0, 0x25), (0x50, 0, 0x29),
        (0x50, 0, 0x22), (0x50, 0, 0x26), (0x50, 0, 0x2A),
        (0x50, 0, 0x23), (0x50, 0, 0x27), (0x50, 0, 0x2B), (0x50, 0, 0x2C)]
    assert pages_to_read(lower, page1, vdm_pages()[0x2F])[-4:] == [
        (0x50, 0, 0x20), (0x50, 0, 0x24), (0x50, 0, 0x28), (0x50, 0, 0x2C)]


def test_short_and_garbage_pages_never_raise() -> None:
    e = vdm_eeprom()
    for cut in (0, 1, 7, 63, 127):
        upper = {k: (v[:cut] if k[2] in (0x20, 0x24, 0x28, 0x2C) else v)
                 for k, v in e.upper.items()}
        got = values(ModuleEeprom(e.lower, MappingProxyType(upper), e.read_at))
        assert all(math.isfinite(v) for v in got.values())


def test_a_threshold_set_of_zeros_is_no_threshold() -> None:
    e = vdm_eeprom()
    limits = bytearray(e.upper[(0x50, 0, 0x28)])
    limits[8 * 3:8 * 4] = bytes(8)  # set 3, the eSNR thresholds
    upper = dict(e.upper) | {(0x50, 0, 0x28): bytes(limits)}
    got = values(ModuleEeprom(e.lower, MappingProxyType(upper), e.read_at))
    assert not [k for k in got if k[0] == "nic_module_vdm_esnr_threshold_db"]
    assert got[key("nic_module_vdm_esnr_db", lane="5", side="media")] == 15.25
