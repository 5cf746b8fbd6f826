"""Bond membership from the bonding driver's sysfs files.

This machine's kernel has no bonding driver, so these tests read trees shaped as a 6.12
kernel lays them out (drivers/net/bonding/bond_sysfs_slave.c, bond_sysfs.c; the ``master``
link from net/core/dev.c). The real driver is covered by the lab's bonding scenario
(tests/lab/test_lab_bonding.py), which compares nicwatch with `ip -d -j link` and
/proc/net/bonding under QEMU.
"""

from __future__ import annotations

import os
from pathlib import Path

from nicwatch.model import BondMember, NetClass, Reading
from nicwatch.normalize.gauges import reading_gauges
from nicwatch.sources import Poll
from nicwatch.sources.sysfs_bonding import SysfsBondingSource, read_bond_member


def _interface(root: Path, name: str, pci: str) -> Path:
    device = root / "devices/pci0000:00" / pci
    (device / "net" / name).mkdir(parents=True)
    (root / "class/net").mkdir(parents=True, exist_ok=True)
    os.symlink(f"../../devices/pci0000:00/{pci}/net/{name}", root / "class/net" / name)
    return device / "net" / name


def _bond(root: Path, name: str, mode: str) -> Path:
    path = root / "devices/virtual/net" / name
    (path / "bonding").mkdir(parents=True)
    (path / "bonding/mode").write_text(mode + "\n")
    (root / "class/net").mkdir(parents=True, exist_ok=True)
    os.symlink(f"../../devices/virtual/net/{name}", root / "class/net" / name)
    return path


def _enslave(root: Path, member: Path, bond: str, state: str, mii: str = "up") -> None:
    os.symlink(f"../../../../virtual/net/{bond}", member / "master")
    (member / "bonding_slave").mkdir()
    (member / "bonding_slave/state").write_text(state + "\n")
    (member / "bonding_slave/mii_status").write_text(mii + "\n")


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    _bond(root, "bond0", "active-backup 1")
    a = _interface(root, "ens1", "0000:01:00.0")
    b = _interface(root, "ens2", "0000:02:00.0")
    _enslave(root, a, "bond0", "active")
    _enslave(root, b, "bond0", "backup", "going down")
    _interface(root, "ens3", "0000:03:00.0")  # not a member
    br = _interface(root, "ens4", "0000:04:00.0")
    os.symlink("../../../../virtual/net/br0", br / "master")  # a bridge port: no bonding_slave/
    return root


def test_members_name_their_bond_mode_and_state(tmp_path):
    root = _tree(tmp_path)
    assert read_bond_member(root, "ens1") == (
        BondMember("bond0", "active-backup", "active", "up"), [])
    assert read_bond_member(root, "ens2") == (
        BondMember("bond0", "active-backup", "backup", "going down"), [])


def test_non_members_and_bridge_ports_are_not_bond_members(tmp_path):
    root = _tree(tmp_path)
    assert read_bond_member(root, "ens3") == (None, [])
    assert read_bond_member(root, "ens4") == (None, [])


def test_garbage_state_is_a_problem_not_a_state(tmp_path):
    root = _tree(tmp_path)
    (root / "class/net/ens1/bonding_slave/state").write_text("\n")
    member, problems = read_bond_member(root, "ens1")
    assert member is not None and member.state is None
    assert problems and "bonding_slave/state" in problems[0]


def _nc(name: str) -> NetClass:
    return NetClass(name=name, ifindex=1, address=None, operstate="up", mtu=1500, speed_mbps=None,
                    duplex=None, carrier=True, carrier_changes=None, carrier_up_count=None,
                    carrier_down_count=None, device_path=None, pci_address=None, driver="e1000e")


def test_source_puts_membership_and_gauges_follow(tmp_path):
    root = _tree(tmp_path)
    poll = Poll([_nc("ens1"), _nc("ens2"), _nc("ens3")])
    SysfsBondingSource(root).read(poll)
    assert "bond" not in poll.parts["ens3"] and not poll.errors
    gauges = {}
    for name in ("ens1", "ens2"):
        reading = Reading(device=name, time=0.0, monotonic=0.0, netclass=_nc(name),
                          bond=poll.parts[name]["bond"])
        gauges[name] = {(k.metric, k.labels): v for k, v in
                        reading_gauges(reading, "e1000e", frozenset()).items()
                        if k.metric.startswith("nic_bond")}
    info = (("bond", "bond0"), ("mode", "active-backup"))
    assert gauges["ens1"] == {("nic_bond_info", info): 1.0,
                              ("nic_bond_member_active", (("bond", "bond0"),)): 1.0}
    assert gauges["ens2"] == {("nic_bond_info", info): 1.0,
                              ("nic_bond_member_active", (("bond", "bond0"),)): 0.0}
