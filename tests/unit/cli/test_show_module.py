"""`nicwatch show`'s module section: a real module's values through normalize, the states a port
without a readable module shows, and the whole command on a veth pair in a namespace."""

from __future__ import annotations

import dataclasses

from nicwatch.cli.show import format_table
from nicwatch.model import ModuleReadStatus, NetClass, Reading
from nicwatch.normalize import normalize

from fixture_module import fixture_eeprom
from fixture_vdm import vdm_eeprom
from netns import PYTHON, ns_sh


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


def test_snapshots_keep_module_values_and_the_diff_names_what_changed():
    from nicwatch.snapshot.files import diff_interfaces, interface_snapshot
    real = fixture_eeprom("sfp-oem-10g-lr-go-ethtool.txt")
    before = interface_snapshot(sample(dataclasses.replace(real, read_at=900.0),
                                       ModuleReadStatus("ok", 900.0, {})))
    # Later the module stops answering (the last good values stay, with their read time).
    after = interface_snapshot(sample(dataclasses.replace(real, read_at=900.0),
                                      ModuleReadStatus("failed", 960.0, {"ETIMEDOUT": 1}),
                                      time=1000.0))
    assert before.gauges[next(k for k in before.gauges
                              if k.metric == "nic_module_temperature_celsius")] > 30
    changes = {(c.name, c.labels): (c.before, c.after)
               for c in diff_interfaces(before, after).changes}
    assert changes[("nic_module_read_state", (("state", "ok"),))] == (1.0, 0.0)
    assert changes[("nic_module_read_state", (("state", "failed"),))] == (0.0, 1.0)
    assert not any(name == "nic_module_temperature_celsius" for name, _ in changes)
    assert after.counters[next(k for k in after.counters
                               if k.metric == "nic_module_read_errors_total")].value == 1


def test_snapshot_command_with_the_module_collector_on_a_veth_pair(veth_pair, tmp_path):
    import json
    out = tmp_path / "s.json"
    ns_sh(veth_pair.ns_a, PYTHON, "-m", "nicwatch", "snapshot", "--collector.module",
          f"--interfaces.include={veth_pair.a}", "-o", str(out))
    (iface,) = json.loads(out.read_text())["polls"][0]["interfaces"]
    states = {g["labels"]["state"]: g["value"] for g in iface["gauges"]
              if g["metric"] == "nic_module_read_state"}
    assert states["unsupported"] == 1 and states["ok"] == 0


def test_a_module_in_low_power_reads_as_that_state_not_a_dark_receiver():
    """The DR8 OSFP in ModuleLowPwr (lower byte 3 = 0x03) with every data path deactivated
    (page 11h 128-131 = 11): no worst-rx value, and the READ column says why."""
    from nicwatch.model import ModuleEeprom

    from fixture_module import resealed
    real = fixture_eeprom("osfp-800g-dr8-juniper.txt")
    lower = bytearray(real.lower[0x50])
    lower[3] = 0x03
    page11 = bytearray(real.upper[(0x50, 0, 0x11)])
    page11[0:4] = b"\x11\x11\x11\x11"
    low = resealed(ModuleEeprom({0x50: bytes(lower)}, dict(real.upper) | {
        (0x50, 0, 0x11): bytes(page11)}, 930.0))
    row = format_table([sample(low, ModuleReadStatus("ok", 990.0, {}))]).splitlines()[-1]
    assert " - " in row and "dBm" not in row
    assert row.endswith("ok, 70s ago, module low_power, data path off on lane 1,2,3,4,5,6,7,8")


def test_module_row_names_the_lane_over_its_vdm_pre_fec_ber_warning():
    # The real DR8 with spec-built VDM pages (tests/helpers/fixture_vdm.py): media lane 5 at
    # 3.2e-4 against the module's 1e-4 high warning; the others at 2.1e-6, the host side 1e-8.
    eeprom = dataclasses.replace(vdm_eeprom(), read_at=990.0)
    row = format_table([sample(eeprom, ModuleReadStatus("ok", 990.0, {}))]).splitlines()[-1]
    assert row.endswith("ok, 10s ago, VDM pre-FEC BER lane 5 media 3.2e-04 (warn 1e-04)")
    # The same module without VDM pages says nothing of VDM.
    plain = dataclasses.replace(fixture_eeprom("osfp-800g-dr8-juniper.txt"), read_at=990.0)
    row = format_table([sample(plain, ModuleReadStatus("ok", 990.0, {}))]).splitlines()[-1]
    assert row.endswith("ok, 10s ago")
