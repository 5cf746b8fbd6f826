"""NIC ASIC temperature from the hwmon device under the PCI function.

No NIC here registers a hwmon device, so these tests read fixture trees shaped as the three
drivers register theirs (tests/fixtures/sysfs/README.md: hwmon-mlx5-dual, hwmon-bnxt,
hwmon-ice-dual; file sets from mlx5/core/hwmon.c, bnxt/bnxt_hwmon.c, ice/ice_hwmon.c)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from nicwatch.model import HwmonTemperature, SeriesKey
from nicwatch.normalize.drivers import HWMON_ONE_PER_CHIP
from nicwatch.normalize.hwmon import hwmon_gauges, sensor_names
from nicwatch.sources import Poll
from nicwatch.sources.sysfs_hwmon import STATIC_SECONDS, SysfsHwmonSource
from nicwatch.sources.sysfs_net import read_netclass

from paths import FIXTURES

TREES = FIXTURES / "sysfs"


def _poll(root: Path, source: SysfsHwmonSource | None = None) -> Poll:
    names = sorted(os.listdir(root / "class/net"))
    poll = Poll([read_netclass(root, n) for n in names])
    source = source or SysfsHwmonSource(root, one_per_chip=HWMON_ONE_PER_CHIP)
    source.read(poll)
    return poll


def _copy(tmp_path: Path, tree: str) -> Path:
    root = tmp_path / tree
    shutil.copytree(TREES / tree, root, symlinks=True)
    return root


def _hwmon_file(root: Path, hwmon: str, name: str) -> Path:
    return Path(os.path.realpath(root / "class/hwmon" / hwmon)) / name


def test_mlx5_each_function_has_its_own_device_with_named_sensors():
    poll = _poll(TREES / "hwmon-mlx5-dual")
    first, second = poll.parts["ens1f0np0"]["hwmon"], poll.parts["ens1f1np1"]["hwmon"]
    assert (first.name, first.hwmon, first.pci_address) == ("mlx5", "hwmon2", "0000:03:00.0")
    assert (second.hwmon, second.pci_address) == ("hwmon3", "0000:03:00.1")
    asic, module = first.temperatures
    assert (asic.label, asic.celsius, asic.highest, asic.critical) == ("asic", 69.0, 70.0, 105.0)
    assert (asic.warning, asic.emergency, asic.shutdown) == (None, None, None)  # mlx5 has none
    assert (module.label, module.celsius, module.critical) == ("Module0", 51.0, 85.0)
    assert second.temperatures[1].celsius == 54.25  # 0.125 C steps (MTMP)
    assert not poll.errors
    gauges = hwmon_gauges(first)
    assert gauges[SeriesKey("nic_asic_temperature_celsius", (("sensor", "asic"),))] == 69.0
    assert gauges[SeriesKey("nic_asic_temperature_threshold_celsius",
                            (("level", "critical"), ("sensor", "Module0")))] == 85.0
    assert gauges[SeriesKey("nic_asic_temperature_highest_celsius", (("sensor", "asic"),))] == 70.0
    assert not any(k.metric == "nic_asic_temperature_threshold_celsius"
                   and ("level", "warning") in k.labels for k in gauges)


def test_bnxt_thresholds_warning_to_shutdown_and_unnamed_sensor():
    poll = _poll(TREES / "hwmon-bnxt")
    hwmon = poll.parts["ens2f0np0"]["hwmon"]
    (t,) = hwmon.temperatures
    assert (hwmon.name, t.label, t.celsius, t.highest) == ("bnxt_en", "temp1", 58.0, None)
    assert (t.warning, t.critical, t.emergency, t.shutdown) == (95.0, 105.0, 110.0, 115.0)
    assert poll.parts["ens2f1np1"]["hwmon"].pci_address == "0000:61:00.1"  # one per PF


def test_ice_second_pf_reads_the_chip_through_pf0():
    poll = _poll(TREES / "hwmon-ice-dual")
    pf0, pf1 = poll.parts["ens3f0"]["hwmon"], poll.parts["ens3f1"]["hwmon"]
    assert pf0 == pf1
    assert (pf1.name, pf1.pci_address, pf1.temperatures[0].celsius) == ("ice", "0000:17:00.0",
                                                                       62.0)


def test_a_vf_never_borrows_its_pfs_sensor(tmp_path):
    root = _copy(tmp_path, "hwmon-ice-dual")
    fn = Path(os.path.realpath(root / "bus/pci/devices/0000:17:00.1"))
    os.symlink("../0000:17:00.0", fn / "physfn")
    poll = _poll(root)
    assert "hwmon" in poll.parts["ens3f0"]
    assert "hwmon" not in poll.parts["ens3f1"]


def test_another_drivers_function_in_the_slot_is_not_the_same_chip(tmp_path):
    root = _copy(tmp_path, "hwmon-ice-dual")
    fn = Path(os.path.realpath(root / "bus/pci/devices/0000:17:00.1"))
    os.unlink(fn / "driver")
    os.symlink("../../../../bus/pci/drivers/vfio-pci", fn / "driver")
    assert "hwmon" not in _poll(root).parts["ens3f1"]


def test_a_failed_read_is_absent_and_named_not_zero(tmp_path):
    root = _copy(tmp_path, "hwmon-mlx5-dual")
    _hwmon_file(root, "hwmon2", "temp1_input").write_text("garbage\n")
    poll = _poll(root)
    asic = poll.parts["ens1f0np0"]["hwmon"].temperatures[0]
    assert (asic.celsius, asic.critical) == (None, 105.0)
    assert [(d, e.source, e.kind) for d, e in poll.errors] == [
        ("ens1f0np0", "sysfs_hwmon", "invalid")]
    assert "temp1_input" in poll.errors[0][1].message
    assert not any(k.metric == "nic_asic_temperature_celsius" and ("sensor", "asic") in k.labels
                   for k in hwmon_gauges(poll.parts["ens1f0np0"]["hwmon"]))


def test_no_hwmon_device_no_part(tmp_path):
    root = _copy(tmp_path, "hwmon-mlx5-dual")
    shutil.rmtree(Path(os.path.realpath(root / "class/hwmon/hwmon2")))
    poll = _poll(root)
    # mlx5 registers on every function, with the module of its own port: .0 borrows nothing
    assert "hwmon" not in poll.parts["ens1f0np0"]
    assert poll.parts["ens1f1np1"]["hwmon"].pci_address == "0000:03:00.1"


def test_thresholds_are_reread_only_every_static_period(tmp_path):
    root = _copy(tmp_path, "hwmon-bnxt")
    now = [1000.0]
    source = SysfsHwmonSource(root, clock=lambda: now[0])
    _poll(root, source)
    _hwmon_file(root, "hwmon4", "temp1_crit").write_text("100000\n")
    _hwmon_file(root, "hwmon4", "temp1_input").write_text("61000\n")
    t = _poll(root, source).parts["ens2f0np0"]["hwmon"].temperatures[0]
    assert (t.celsius, t.critical) == (61.0, 105.0)  # the input every poll, thresholds cached
    now[0] += STATIC_SECONDS
    t = _poll(root, source).parts["ens2f0np0"]["hwmon"].temperatures[0]
    assert t.critical == 100.0


@pytest.mark.parametrize("labels, expected", [
    (("asic", "Module0"), ["asic", "Module0"]),
    (("sensor0", "sensor0"), ["temp1", "temp2"]),
])
def test_duplicate_labels_fall_back_to_the_channel(labels, expected):
    temps = tuple(HwmonTemperature(i + 1, label, 50.0) for i, label in enumerate(labels))
    assert sensor_names(temps) == expected


def test_a_device_outside_the_root_is_never_read():
    """sysfs_net keeps a device path that resolved outside the root absolute: the host's
    /sys must not be read for a fixture tree."""
    root = TREES / "hwmon-mlx5-dual"
    nc = read_netclass(root, "ens1f0np0")
    outside = dataclasses.replace(nc, device_path=str(Path(os.path.realpath(root)) / (
        nc.device_path or "")))
    poll = Poll([outside])
    SysfsHwmonSource(root).read(poll)
    assert "hwmon" not in poll.parts["ens1f0np0"] and not poll.errors


def test_a_device_unregistered_between_polls_is_gone_at_once_and_found_again_at_once(
        tmp_path):
    """Which hwmon device an interface maps to is kept between polls: one unregistered
    (driver unbound) is absent from the next poll, and registered again, it is found by the
    next (an interface without one keeps nothing)."""
    root = _copy(tmp_path, "hwmon-mlx5-dual")
    now = [1000.0]
    source = SysfsHwmonSource(root, clock=lambda: now[0])
    assert "hwmon" in _poll(root, source).parts["ens1f0np0"]
    hwmon2 = Path(os.path.realpath(root / "class/hwmon/hwmon2"))
    moved = tmp_path / "hwmon2-away"
    shutil.move(hwmon2, moved)
    assert "hwmon" not in _poll(root, source).parts["ens1f0np0"]
    shutil.move(moved, hwmon2)  # registered again
    now[0] += 5
    assert "hwmon" in _poll(root, source).parts["ens1f0np0"]


@pytest.mark.parametrize("keep_open", [False, True])
def test_every_poll_reads_the_temperature_of_now(tmp_path, keep_open):
    """Files kept open (the live /sys) are re-read at offset 0, so a value written in place
    between polls is the next poll's, as with a fresh open."""
    root = _copy(tmp_path, "hwmon-bnxt")
    source = SysfsHwmonSource(root, keep_open=keep_open)
    path = _hwmon_file(root, "hwmon4", "temp1_input")
    seen = []
    for value in ("58000", "61500", "73000"):
        with open(path, "r+") as f:  # in place: the same inode, as a sysfs attribute
            f.truncate(0)
            f.write(value + "\n")
        seen.append(_poll(root, source).parts["ens2f0np0"]["hwmon"].temperatures[0].celsius)
    assert seen == [58.0, 61.5, 73.0]
    assert (source.files is not None and len(source.files) > 0) == keep_open
    source.close()
