"""`nicwatch show`'s module section: a real module's values through normalize, the states a port
without a readable module shows, and the whole command on a veth pair in a namespace."""

from __future__ import annotations

import dataclasses

from fixture_module import fixture_eeprom
from netns import PYTHON, ns_sh

from nicwatch.cli.show import format_table
from nicwatch.model import ModuleReadStatus, NetClass, Reading
from nicwatch.normalize import normalize


def sample(module=None, status=None, time=1000.0):
    return normalize(Reading(device="eth0", time=time, monotonic=1.0,
                             netclass=NetClass("eth0", 2, *[None] * 12), module=module,
                             module_read=status))


def test_module_row_shows_temperature_and_the_weakest_lane_against_the_module_warnings():
    eeprom = dataclasses.replace(fixture_eeprom("qsfp28-fs-ir4-go-ethtool.txt"), read_at=930.0)
    text = format_table([sample(eeprom, ModuleReadStatus("ok", 990.0, {}))])
    header, row = text.splitlines()[-2:]
    assert header.split()[:2] == ["DEVICE", "MODULE"]
    # FS QSFP28-IR4 dump: 28.6 C against its 75 C high warning; lanes 1.3-2.2 mW except lane
    # 3 at 1.12 mW (0.5 dBm) against a 0.056 mW (-12.5 dBm) low warning.
    assert "QSFP28 FS QSFP28-IR4-100G" in row and "28.6C (75C)" in row
    assert "0.5dBm lane 3 (-12.5dBm)" in row
    assert row.endswith("ok, 70s ago")  # read at 930, shown at 1000: the age, not the attempt
    narrow = format_table([sample(eeprom, ModuleReadStatus("ok", 990.0, {}))], 60)
    assert "module QSFP28 FS QSFP28-IR4-100G" in narrow and "worst rx 0.5dBm" in narrow


def test_a_port_without_a_readable_module_says_why_and_no_section_without_the_collector():
    text = format_table([sample(None, ModuleReadStatus("not_permitted", 990.0, {}))])
    assert text.splitlines()[-1].split() == ["eth0", "-", "-", "-", "not_permitted"]
    assert "MODULE" not in format_table([sample()])


def test_show_with_the_module_collector_on_a_veth_pair(veth_pair):
    out = ns_sh(veth_pair.ns_a, PYTHON, "-m", "nicwatch", "show", "--collector.module",
                f"--interfaces.include={veth_pair.a}").stdout
    # A table, or one block per interface when the terminal is narrow.
    table = [line.split() for line in out.splitlines()]
    assert ([veth_pair.a, "-", "-", "-", "unsupported"] in table
            or "module -  temp -  worst rx -  read unsupported" in out), out
