"""sysfs_net against sysfs trees shaped like the kernel's (built per test)."""

import os
from pathlib import Path

from nicwatch.sources.sysfs_net import read_netclass
from nicwatch.sources.sysfs_pci import pci_function_for_netdev


def vmd_tree(root: Path) -> Path:
    """A NIC behind an Intel VMD bridge: the kernel gives the VMD a PCI domain above ffff
    (drivers/pci/controller/vmd.c starts at 0x10000), so its address has 5 domain digits."""
    function = root / "devices/pci0000:00/0000:00:0e.0/pci10000:00/10000:00:02.0/10000:01:00.0"
    netdev = function / "net/eth9"
    netdev.mkdir(parents=True)
    (netdev / "ifindex").write_text("9\n")
    (netdev / "device").symlink_to(os.path.relpath(function, netdev))
    (root / "class/net").mkdir(parents=True)
    (root / "class/net/eth9").symlink_to(os.path.relpath(netdev, root / "class/net"))
    return root


def test_five_digit_pci_domains_are_read_alike_by_both_sysfs_sources(tmp_path):
    root = vmd_tree(tmp_path)
    assert read_netclass(root, "eth9").pci_address == "10000:01:00.0"
    assert pci_function_for_netdev(root, "eth9") == "10000:01:00.0"
