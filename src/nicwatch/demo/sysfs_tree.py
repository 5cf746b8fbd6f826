"""The sysfs tree the simulation writes (see demo/simulate.py): netdevs, PCI functions under
their root ports, RDMA devices, bonding, hwmon and the RoCE QoS files, laid out like the
fixture trees in tests/fixtures/sysfs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nicwatch.demo.ports import CHANNELS, CNP_DSCP, CNP_PRIORITY, PFC_PRIORITY, ROCE_DSCP, PortSpec

# ---------------------------------------------------------------------- tree layout

NETDEV_STATS = (
    "collisions", "multicast", "rx_bytes", "rx_compressed", "rx_crc_errors", "rx_dropped",
    "rx_errors", "rx_fifo_errors", "rx_frame_errors", "rx_length_errors", "rx_missed_errors",
    "rx_nohandler", "rx_over_errors", "rx_packets", "tx_aborted_errors", "tx_bytes",
    "tx_carrier_errors", "tx_compressed", "tx_dropped", "tx_errors", "tx_fifo_errors",
    "tx_heartbeat_errors", "tx_packets", "tx_window_errors",
)
AER_CORRECTABLE = ("Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover",
                   "Replay Timer Timeout", "Advisory Non-Fatal", "Corrected Internal Error",
                   "Header Log Overflow")
AER_NONFATAL = ("Undefined", "Data Link Protocol", "Surprise Down Error", "Poisoned TLP",
                "Flow Control Protocol", "Completion Timeout", "Completer Abort",
                "Unexpected Completion", "Receiver Overflow", "Malformed TLP", "ECRC",
                "Unsupported Request", "ACS Violation", "Uncorrectable Internal Error",
                "MC Blocked TLP", "AtomicOp Egress Blocked", "TLP Prefix Blocked Error")
IB_COUNTERS = (
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
    "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
    "port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets",
    "unicast_xmit_packets",
)


def aer_lines(kinds: tuple[str, ...], total: str, counts: Mapping[str, int]) -> str:
    lines = [f"{name} {counts.get(name, 0)}" for name in kinds]
    lines.append(f"TOTAL_ERR_{total} {sum(counts.values())}")
    return "\n".join(lines)


def write_file(path: Path, value: object) -> None:
    """Replace one attribute file atomically (temp file + rename: a reader never sees a
    half-written value). Not fsynced: the tree is a throwaway simulation, not data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{value}\n")
    os.replace(tmp, path)


def write_link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_symlink():
        path.symlink_to(target)


def function_dir(root: Path, port: PortSpec) -> Path:
    return root / "devices" / "pci0000:00" / port.root_port / port.bdf


def _pci_common(directory: Path, vendor: int, device: int, pci_class: int,
                slot: str) -> None:
    for name, value in (("vendor", f"0x{vendor:04x}"), ("device", f"0x{device:04x}"),
                        ("class", f"0x{pci_class:06x}"), ("subsystem_vendor", f"0x{vendor:04x}"),
                        ("subsystem_device", "0x0020"), ("revision", "0x00"),
                        ("numa_node", "0"), ("local_cpulist", "0-1"), ("enable", "1"),
                        ("power_state", "D0"),
                        ("uevent", (f"PCI_CLASS={pci_class:X}\nPCI_ID={vendor:04X}:{device:04X}"
                                    f"\nPCI_SLOT_NAME={slot}"))):
        write_file(directory / name, value)


def write_roce_qos(root: Path, port: PortSpec) -> None:
    """The vendor mlx5 driver's ecn/ tree (ECN on every priority, CNPs on DSCP 48 /
    priority 6) and qos/trust (dscp), its forced traffic class and the rdma_cm default ToS
    (DSCP 26, ECT(0))."""
    fn = root / "devices" / "pci0000:00" / port.root_port / port.bdf
    ecn = fn / "net" / port.name / "ecn"
    for point in ("roce_rp", "roce_np"):
        for priority in range(8):
            off = port.ecn_off and point == "roce_np" and priority == PFC_PRIORITY
            write_file(ecn / point / "enable" / str(priority), 0 if off else 1)
    write_file(ecn / "roce_np" / "cnp_dscp", CNP_DSCP)
    write_file(ecn / "roce_np" / "cnp_802p_prio", CNP_PRIORITY)
    # the vendor qos/ directory the driver creates beside ecn/: RoCE traffic classified by DSCP
    write_file(fn / "net" / port.name / "qos" / "trust", "dscp")
    write_file(fn / "infiniband" / port.rdma_device / "tc" / "1" / "traffic_class",
               f"Global tclass={ROCE_DSCP << 2 | 2}")
    write_file(root / "kernel/config/rdma_cm" / port.rdma_device / "ports" / "1"
               / "default_roce_tos", ROCE_DSCP << 2 | 2)


def write_bond(root: Path, members: list[PortSpec]) -> None:
    """An 802.3ad bond (RoCE LAG) over ``members``, as the bonding driver shows it: the bond
    under devices/virtual/net, each member's ``master`` link and ``bonding_slave/`` files
    (drivers/net/bonding/bond_sysfs.c, bond_sysfs_slave.c)."""
    bond = root / "devices" / "virtual" / "net" / "bond0"
    write_file(bond / "bonding" / "mode", "802.3ad 4")
    for name, value in (("ifindex", 100), ("address", members[0].mac), ("type", 1),
                        ("mtu", 9000), ("operstate", "up"), ("carrier", 1), ("flags", "0x1403"),
                        ("uevent", "DEVTYPE=bond\nINTERFACE=bond0\nIFINDEX=100")):
        write_file(bond / name, value)
    write_link(root / "class/net" / "bond0", "../../devices/virtual/net/bond0")
    for port in members:
        net = root / "devices" / "pci0000:00" / port.root_port / port.bdf / "net" / port.name
        write_link(net / "master", "../../../../../virtual/net/bond0")
        write_file(net / "bonding_slave" / "state", "active")
        write_file(net / "bonding_slave" / "mii_status", "up")


def write_hwmon(root: Path, port: PortSpec, number: int) -> None:
    """The hwmon device mlx5_core registers under each function (mlx5/core/hwmon.c): the
    ASIC sensor and the module in the cage, with the values and thresholds a real
    dual-port ConnectX reported (asic 69.0 C, crit 105; Module0 51.0 C, crit 85: `sensors`
    output in fastfetch-cli/fastfetch#2073), a little cooler per port here."""
    hwmon = function_dir(root, port) / "hwmon" / f"hwmon{number + 2}"
    write_file(hwmon / "name", "mlx5")
    for channel, label, celsius, crit in ((1, "asic", 60.0 + 2 * number, 105.0),
                                          (2, f"Module{number}", 45.0 + number, 85.0)):
        write_file(hwmon / f"temp{channel}_label", label)
        write_file(hwmon / f"temp{channel}_input", int(celsius * 1000))
        write_file(hwmon / f"temp{channel}_highest", int((celsius + 3) * 1000))
        write_file(hwmon / f"temp{channel}_crit", int(crit * 1000))
    write_link(hwmon / "device", "../../../" + port.bdf)
    write_link(hwmon / "subsystem", "../../../../../../class/hwmon")
    function_path = f"devices/pci0000:00/{port.root_port}/{port.bdf}"
    write_link(root / "class/hwmon" / hwmon.name, f"../../{function_path}/hwmon/{hwmon.name}")


def write_port_tree(root: Path, port: PortSpec) -> None:
    rp = root / "devices" / "pci0000:00" / port.root_port
    fn = rp / port.bdf
    # Root port: AMD Genoa-class, PCIe Gen5 x16 capable; its current_* describe the link below.
    _pci_common(rp, 0x1022, 0x14AB, 0x060400, port.root_port)
    for name, value in (("current_link_speed", port.pcie_speed),
                        ("current_link_width", port.pcie_width),
                        ("max_link_speed", "32.0 GT/s PCIe"), ("max_link_width", 16),
                        ("aer_dev_correctable", aer_lines(AER_CORRECTABLE, "COR", {})),
                        ("aer_dev_nonfatal", aer_lines(AER_NONFATAL, "NONFATAL", {})),
                        ("aer_dev_fatal", aer_lines(AER_NONFATAL, "FATAL", {})),
                        ("aer_rootport_total_err_nonfatal", 0),
                        ("aer_rootport_total_err_fatal", 0)):
        write_file(rp / name, value)
    write_link(rp / "driver", "../../../bus/pci/drivers/pcieport")
    write_link(rp / "subsystem", "../../../bus/pci")
    write_link(root / "bus/pci/devices" / port.root_port,
               f"../../../devices/pci0000:00/{port.root_port}")
    write_link(root / "bus/pci/drivers/pcieport" / port.root_port,
               f"../../../../devices/pci0000:00/{port.root_port}")
    # The NIC function.
    _pci_common(fn, 0x15B3, port.device_id, 0x020000, port.bdf)
    for name, value in (("current_link_speed", port.pcie_speed),
                        ("current_link_width", port.pcie_width),
                        ("max_link_speed", port.pcie_max_speed),
                        ("max_link_width", port.pcie_max_width),
                        ("aer_dev_nonfatal", aer_lines(AER_NONFATAL, "NONFATAL", {})),
                        ("aer_dev_fatal", aer_lines(AER_NONFATAL, "FATAL", {}))):
        write_file(fn / name, value)
    if port.vfs:
        write_file(fn / "sriov_numvfs", port.vfs)
        write_file(fn / "sriov_totalvfs", 16)
    write_link(fn / "driver", "../../../../bus/pci/drivers/mlx5_core")
    write_link(fn / "subsystem", "../../../../bus/pci")
    function_path = f"devices/pci0000:00/{port.root_port}/{port.bdf}"
    write_link(root / "bus/pci/devices" / port.bdf, f"../../../{function_path}")
    write_link(root / "bus/pci/drivers/mlx5_core" / port.bdf, f"../../../../{function_path}")
    # The netdev.
    net = fn / "net" / port.name
    for name, value in (("ifindex", port.ifindex), ("iflink", port.ifindex),
                        ("address", port.mac), ("broadcast", "ff:ff:ff:ff:ff:ff"),
                        ("addr_len", 6), ("addr_assign_type", 0), ("type", 1), ("mtu", 9000),
                        ("speed", port.speed_mbps), ("duplex", "full"), ("operstate", "up"),
                        ("carrier", 1), ("carrier_changes", 2), ("carrier_up_count", 1),
                        ("carrier_down_count", 1), ("dev_port", 0), ("dev_id", "0x0"),
                        ("flags", "0x1003"), ("tx_queue_len", 1000), ("proto_down", 0),
                        ("uevent", f"INTERFACE={port.name}\nIFINDEX={port.ifindex}")):
        write_file(net / name, value)
    for ch in range(CHANNELS):
        write_file(net / "queues" / f"rx-{ch}" / "rps_cpus", "0")
        write_file(net / "queues" / f"tx-{ch}" / "xps_cpus", "0")
    write_link(net / "device", "../..")
    write_link(net / "subsystem", "../../../../../../class/net")
    write_link(root / "class/net" / port.name, f"../../{function_path}/net/{port.name}")
    # The RDMA device (RoCE: Ethernet link layer, GID 0 on the netdev).
    ib = fn / "infiniband" / port.rdma_device
    gbps = port.speed_mbps // 1000
    for name, value in (("node_guid", _guid(port)), ("node_type", "1: CA"),
                        ("fw_ver", "28.39.1002"), ("hca_type", f"MT{port.device_id:04x}"),
                        ("ports/1/link_layer", "Ethernet"), ("ports/1/state", "4: ACTIVE"),
                        ("ports/1/phys_state", "5: LinkUp"),
                        ("ports/1/rate", f"{gbps} Gb/sec (4X {'NDR' if gbps >= 400 else 'HDR'})"),
                        ("ports/1/gid_attrs/ndevs/0", port.name),
                        ("ports/1/gid_attrs/types/0", "IB/RoCE v1")):
        write_file(ib / name, value)
    write_link(ib / "device", "../..")
    write_link(ib / "subsystem", "../../../../../../class/infiniband")
    write_link(root / "class/infiniband" / port.rdma_device,
               f"../../{function_path}/infiniband/{port.rdma_device}")


def _guid(port: PortSpec) -> str:
    mac = port.mac.replace(":", "")
    raw = mac[:6] + "fffe" + mac[6:]
    return ":".join(raw[i:i + 4] for i in range(0, 16, 4))
