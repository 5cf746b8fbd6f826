"""sysfs_pci: locating a netdev's PCI function, reading its PCIe path, and never raising."""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nicwatch.normalize.pcie_verdict import NO_OWN_LINK, assess
from nicwatch.sources import Poll, errno_name, sysfs, sysfs_pci
from nicwatch.sources.sysfs_net import read_netclass
from nicwatch.sources.sysfs_pci import (
    AerCounters,
    PciDevice,
    PcieLink,
    PciePath,
    parse_aer_counts,
    parse_cpulist,
    parse_link_speed,
    parse_link_width,
    parse_max_link_width,
    pci_function_for_device_path,
    pci_function_for_netdev,
    read_pcie_path,
)

from paths import SYSFS

CX7_PORT = "devices/pci0000:40/0000:40:01.1"
CX7_EP = f"{CX7_PORT}/0000:41:00.0"

COR_NAMES = (
    "Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover", "Replay Timer Timeout",
    "Advisory Non-Fatal", "Corrected Internal Error", "Header Log Overflow",
)
UNCOR_NAMES = (
    "Undefined", "Data Link Protocol", "Surprise Down Error", "Poisoned TLP",
    "Flow Control Protocol", "Completion Timeout", "Completer Abort", "Unexpected Completion",
    "Receiver Overflow", "Malformed TLP", "ECRC", "Unsupported Request", "ACS Violation",
    "Uncorrectable Internal Error", "MC Blocked TLP", "AtomicOp Egress Blocked",
    "TLP Prefix Blocked Error",
)


def counts(names: tuple[str, ...], **nonzero: int) -> dict[str, int]:
    """Every AER name at 0 except ``nonzero`` (keys with underscores for spaces)."""
    given_counts = {key.replace("_", " "): value for key, value in nonzero.items()}
    return {name: given_counts.get(name, 0) for name in names}


def zero_aer(rootport: bool = False) -> AerCounters:
    return AerCounters(
        correctable=counts(COR_NAMES),
        nonfatal=counts(UNCOR_NAMES),
        fatal=counts(UNCOR_NAMES),
        total_correctable=0,
        total_nonfatal=0,
        total_fatal=0,
        rootport_total_correctable=0 if rootport else None,
        rootport_total_nonfatal=0 if rootport else None,
        rootport_total_fatal=0 if rootport else None,
    )


def copy_scenario(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(SYSFS / name, root, symlinks=True)
    return root


def add_link(root: Path, rel: str, target_rel: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(root / target_rel, path.parent), path)


def add_file(root: Path, rel: str, content: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


# --------------------------------------------------------------------------- locating


@pytest.mark.parametrize(
    ("scenario", "ifname", "bdf"),
    [
        ("cx7-gen5-healthy", "eth2", "0000:41:00.0"),
        ("cx6-dual-gen4x8-width", "ens1f0np0", "0000:01:00.0"),
        ("cx6-dual-gen4x8-width", "ens1f1np1", "0000:01:00.1"),
        ("cx6-dual-slot-x8", "ens1f1np1", "0000:01:00.1"),
        ("gen3-old-kernel", "enp25s0", "0000:19:00.0"),
        ("virtio-no-pcie", "eth0", "0000:00:03.0"),
        ("mlx5-rdma", "enp33s0f0np0", "0000:21:00.0"),
        ("lab-report-cx6-200g", "enp129s0np0", "0000:81:00.0"),
    ],
)
def test_pci_function_for_netdev(scenario: str, ifname: str, bdf: str) -> None:
    assert pci_function_for_netdev(SYSFS / scenario, ifname) == bdf
    assert pci_function_for_netdev(str(SYSFS / scenario), ifname) == bdf


def test_pci_function_for_device_path_walks_up_from_virtio_child() -> None:
    root = SYSFS / "virtio-no-pcie"
    device_path = "devices/pci0000:00/0000:00:03.0/virtio2"
    assert pci_function_for_device_path(root, device_path) == "0000:00:03.0"
    assert pci_function_for_device_path(root, "/" + device_path) == "0000:00:03.0"


@pytest.mark.parametrize("ifname", ["nosuch0", "", ".", "..", "../net/eth2", "eth2/device"])
def test_pci_function_for_unknown_or_bad_names_is_none(ifname: str) -> None:
    assert pci_function_for_netdev(SYSFS / "cx7-gen5-healthy", ifname) is None


def test_netdev_without_device_is_none(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    add_file(root, "devices/virtual/net/veth0/ifindex", "9\n")
    add_link(root, "class/net/veth0", "devices/virtual/net/veth0")
    assert pci_function_for_netdev(root, "veth0") is None


def test_auxiliary_subfunction_resolves_to_its_pf(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    sf = f"{CX7_EP}/mlx5_core.sf.2"
    add_file(root, f"{sf}/sfnum", "88\n")
    add_link(root, f"{sf}/subsystem", "bus/auxiliary")
    add_link(root, f"{sf}/net/enp65s0f0s88/device", sf)
    add_link(root, "class/net/enp65s0f0s88", f"{sf}/net/enp65s0f0s88")
    assert pci_function_for_netdev(root, "enp65s0f0s88") == "0000:41:00.0"


def test_usb_nic_is_not_the_host_controller(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    intf = "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0"
    add_file(root, "devices/pci0000:00/0000:00:14.0/class", "0x0c0330\n")
    add_link(root, f"{intf}/subsystem", "bus/usb")
    add_link(root, f"{intf}/net/enx001122334455/device", intf)
    add_link(root, "class/net/enx001122334455", f"{intf}/net/enx001122334455")
    assert pci_function_for_netdev(root, "enx001122334455") is None


def test_link_leading_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    outside = tmp_path / "elsewhere" / "0000:99:00.0"
    outside.mkdir(parents=True)
    os.symlink(outside, root / "bus/pci/devices/0000:99:00.0")
    path = read_pcie_path(root, "0000:99:00.0")
    assert path.hops == ()
    assert any("outside the sysfs root" in p for p in path.problems)


# --------------------------------------------------------------------------- scenarios


def test_cx7_gen5_healthy_path() -> None:
    path = read_pcie_path(SYSFS / "cx7-gen5-healthy", "0000:41:00.0")
    gen5_x16 = PcieLink(32.0, 16, 32.0, 16)
    numa0 = tuple(range(32)) + tuple(range(64, 96))
    assert path == PciePath(
        function="0000:41:00.0",
        physfn=None,
        hops=(
            PciDevice(
                bdf="0000:41:00.0",
                power_state="D0",
                vendor_id=0x15B3,
                device_id=0x1021,
                class_code=0x020000,
                numa_node=0,
                local_cpus=numa0,
                link=gen5_x16,
                aer=AerCounters(
                    correctable=counts(COR_NAMES, Receiver_Error=2, Bad_DLLP=1),
                    nonfatal=counts(UNCOR_NAMES, Unsupported_Request=1),
                    fatal=counts(UNCOR_NAMES),
                    total_correctable=3,
                    total_nonfatal=1,
                    total_fatal=0,
                    rootport_total_correctable=None,
                    rootport_total_nonfatal=None,
                    rootport_total_fatal=None,
                ),
            ),
            PciDevice(
                bdf="0000:40:01.1",
                power_state="D0",
                vendor_id=0x1022,
                device_id=0x14AB,
                class_code=0x060400,
                numa_node=0,
                local_cpus=numa0,
                link=gen5_x16,
                aer=AerCounters(
                    correctable=counts(COR_NAMES),
                    nonfatal=counts(UNCOR_NAMES),
                    fatal=counts(UNCOR_NAMES),
                    total_correctable=0,
                    total_nonfatal=0,
                    total_fatal=0,
                    rootport_total_correctable=3,
                    rootport_total_nonfatal=1,
                    rootport_total_fatal=0,
                ),
            ),
        ),
        problems=(),
    )
    assert path.is_pcie


@pytest.mark.parametrize(
    ("scenario", "port_max_width"), [("cx6-dual-gen4x8-width", 16), ("cx6-dual-slot-x8", 8)]
)
@pytest.mark.parametrize("function", ["0000:01:00.0", "0000:01:00.1"])
def test_cx6_dual_port_paths(scenario: str, port_max_width: int, function: str) -> None:
    path = read_pcie_path(SYSFS / scenario, function)
    cpus = tuple(range(64))
    assert path == PciePath(
        function=function,
        physfn=None,
        hops=(
            PciDevice(function, 0x15B3, 0x101D, 0x020000, 0, cpus,
                      PcieLink(16.0, 8, 16.0, 16), zero_aer(), "D0"),
            PciDevice("0000:00:03.1", 0x1022, 0x1483, 0x060400, 0, cpus,
                      PcieLink(16.0, 8, 16.0, port_max_width), zero_aer(rootport=True), "D0"),
        ),
        problems=(),
    )


def test_gen3_old_kernel_three_hops_behind_a_switch() -> None:
    path = read_pcie_path(SYSFS / "gen3-old-kernel", "0000:19:00.0")
    cpus = tuple(range(16))
    assert path == PciePath(
        function="0000:19:00.0",
        physfn=None,
        hops=(
            PciDevice("0000:19:00.0", 0x8086, 0x1584, 0x020000, None, cpus,
                      PcieLink(8.0, 8, 8.0, 8), None, "D0"),
            PciDevice("0000:18:08.0", 0x1000, 0xC010, 0x060400, None, cpus,
                      PcieLink(8.0, 8, None, 8), None, "D0"),
            PciDevice("0000:17:00.0", 0x1000, 0xC010, 0x060400, None, cpus,
                      PcieLink(8.0, 16, None, 16), None, "D0"),
            PciDevice("0000:16:00.0", 0x8086, 0x2030, 0x060400, None, cpus,
                      PcieLink(8.0, 16, 8.0, 16), None, "D0"),
        ),
        problems=(),
    )


def test_virtio_function_is_not_pcie_and_not_an_error() -> None:
    path = read_pcie_path(SYSFS / "virtio-no-pcie", "0000:00:03.0")
    assert path == PciePath(
        function="0000:00:03.0",
        physfn=None,
        hops=(PciDevice("0000:00:03.0", 0x1AF4, 0x1041, 0x020000, None, (0, 1), None, None, "D0"),),
        problems=(),
    )
    assert not path.is_pcie


def test_lab_report_cx6_200g_path() -> None:
    path = read_pcie_path(SYSFS / "lab-report-cx6-200g", "0000:81:00.0")
    assert [hop.bdf for hop in path.hops] == ["0000:81:00.0", "0000:80:03.1"]
    assert [(hop.vendor_id, hop.device_id) for hop in path.hops] == [
        (0x15B3, 0x101B),
        (0x1022, 0x1483),
    ]
    assert [hop.link for hop in path.hops] == [
        PcieLink(16.0, 8, 16.0, 16),
        PcieLink(16.0, 8, 16.0, 8),
    ]
    assert path.problems == ()


def test_empty_root_port_has_width_zero_as_unknown() -> None:
    path = read_pcie_path(SYSFS / "lab-report-cx6-200g", "0000:80:03.2")
    assert path.hops[0].link == PcieLink(2.5, None, 16.0, 8)
    assert path.problems == ()


def test_integrated_endpoint_without_link_registers_is_unknown_not_a_problem(
        tmp_path: Path) -> None:
    """A root complex integrated endpoint (QEMU q35's e1000e on pcie.0, as the lab boots
    it) has no link registers: pcie_cap_has_lnkctl() is false for its PCIe type, so
    pcie_capability_read_*() give 0 for LNKCAP and LNKSTA (drivers/pci/access.c). sysfs
    then prints the speeds "Unknown", current_link_width 0 and max_link_width 255, the
    PCIE_LNK_WIDTH_UNKNOWN that pcie_get_width_cap() returns for LNKCAP 0 (drivers/pci/
    pci.c; the lab read these four values in the guest). All four are unknown, none a
    problem, and the verdict is no_own_link (before: max_link_width was a problem every
    poll)."""
    root = copy_scenario(tmp_path, "virtio-no-pcie")
    fn = "devices/pci0000:00/0000:00:02.0"
    for name, text in (("vendor", "0x8086"), ("device", "0x10d3"), ("class", "0x020000"),
                       ("power_state", "D0"), ("numa_node", "-1"),
                       ("current_link_speed", "Unknown"), ("current_link_width", "0"),
                       ("max_link_speed", "Unknown"), ("max_link_width", "255")):
        add_file(root, f"{fn}/{name}", text + "\n")
    add_link(root, "bus/pci/devices/0000:00:02.0", fn)
    path = read_pcie_path(root, "0000:00:02.0")
    assert [hop.bdf for hop in path.hops] == ["0000:00:02.0"]
    assert path.hops[0].link == PcieLink(None, None, None, None)
    assert path.problems == ()
    verdict = assess(path, [None])
    assert verdict.unknown == (NO_OWN_LINK,) and verdict.reasons == ()


@pytest.mark.parametrize(("text", "lanes"), [("16", 16), ("8", 8), ("0", None),
                                             ("255", None), ("63", None)])
def test_parse_max_link_width(text: str, lanes: int | None) -> None:
    assert parse_max_link_width(text) == lanes


@pytest.mark.parametrize("text", ["254", "256", "64", "x16", ""])
def test_parse_max_link_width_rejects_other_values(text: str) -> None:
    with pytest.raises(ValueError):
        parse_max_link_width(text)


def test_virtual_function_reads_its_pf_link(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    vf = f"{CX7_PORT}/0000:41:00.2"
    add_file(root, f"{vf}/vendor", "0x15b3\n")
    add_file(root, f"{vf}/device", "0x101e\n")
    add_link(root, f"{vf}/physfn", CX7_EP)
    add_link(root, "bus/pci/devices/0000:41:00.2", vf)
    add_link(root, f"{vf}/net/eth2v0/device", vf)
    add_link(root, "class/net/eth2v0", f"{vf}/net/eth2v0")
    assert pci_function_for_netdev(root, "eth2v0") == "0000:41:00.2"
    path = read_pcie_path(root, "0000:41:00.2")
    assert path.function == "0000:41:00.2"
    assert path.physfn == "0000:41:00.0"
    assert [hop.bdf for hop in path.hops] == ["0000:41:00.0", "0000:40:01.1"]
    assert path.problems == ()


def test_unknown_function_is_a_problem_not_an_exception() -> None:
    path = read_pcie_path(SYSFS / "cx7-gen5-healthy", "0000:99:00.0")
    assert path.hops == ()
    assert path.problems == ("bus/pci/devices/0000:99:00.0: no such PCI function",)
    bad = read_pcie_path(SYSFS / "cx7-gen5-healthy", "../../etc")
    assert bad.hops == ()
    assert len(bad.problems) == 1 and "not a PCI address" in bad.problems[0]


# --------------------------------------------------------------------------- real machine


@pytest.mark.skipif(not os.path.exists("/sys/class/net/eth0/device"), reason="no eth0 device")
def test_real_sys_eth0_virtio_is_not_pcie() -> None:
    bdf = pci_function_for_netdev("/sys", "eth0")
    assert bdf is not None and sysfs_pci.BDF.fullmatch(bdf)
    path = read_pcie_path("/sys", bdf)
    assert path.hops and path.hops[0].bdf == bdf
    assert not path.is_pcie
    assert path.problems == ()


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("text", "gts"),
    [
        ("2.5 GT/s PCIe", 2.5),
        ("5.0 GT/s PCIe", 5.0),
        ("8.0 GT/s PCIe", 8.0),
        ("16.0 GT/s PCIe", 16.0),
        ("32.0 GT/s PCIe", 32.0),
        ("64.0 GT/s PCIe", 64.0),
        ("128.0 GT/s PCIe", 128.0),
        ("2.5 GT/s", 2.5),
        ("5 GT/s", 5.0),
        ("8 GT/s", 8.0),
        ("16 GT/s", 16.0),
        ("32 GT/s", 32.0),
        ("Unknown", None),
        ("Unknown speed", None),
        ("0 GT/s", None),
    ],
)
def test_parse_link_speed_every_kernel_format(text: str, gts: float | None) -> None:
    assert parse_link_speed(text) == gts


@pytest.mark.parametrize(
    "text", ["", "16", "16.0", "16.0 GT/s PCIe x", "16.0 gt/s", "GT/s", "unknown", "-8 GT/s",
             "1e3 GT/s", "99999 GT/s", "١٦ GT/s"]
)
def test_parse_link_speed_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_link_speed(text)


@pytest.mark.parametrize(("text", "lanes"), [("16", 16), ("8", 8), ("1", 1), ("0", None)])
def test_parse_link_width(text: str, lanes: int | None) -> None:
    assert parse_link_width(text) == lanes


@pytest.mark.parametrize("text", ["x16", "-1", "64", "16.0", "0x10", ""])
def test_parse_link_width_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_link_width(text)


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0-1", (0, 1)), ("3", (3,)), ("0-3,8-9", (0, 1, 2, 3, 8, 9)), ("8,0-1,1", (0, 1, 8))],
)
def test_parse_cpulist(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", ["", "3-1", "0-99999", "a", "0-", ",", "0 - 3"])
def test_parse_cpulist_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


def test_parse_aer_lines_with_spaces_totals_and_new_names() -> None:
    text = (
        "Receiver Error 7\n"
        "RELAY_NUM Rollover 0\n"
        "Corrected Internal Error 18446744073709551615\n"
        "Some Future Error Name 2\n"
        "TOTAL_ERR_COR 9\n"
    )
    assert parse_aer_counts(text) == (
        {
            "Receiver Error": 7,
            "RELAY_NUM Rollover": 0,
            "Corrected Internal Error": 2**64 - 1,
            "Some Future Error Name": 2,
        },
        9,
        [],
    )


def test_parse_aer_keeps_good_lines_and_returns_bad_ones() -> None:
    text = (
        "Bad TLP 1\nBad DLLP\n42\nPoisoned TLP -3\n\n"
        "ECRC 18446744073709551616\nTOTAL_ERR_FATAL 1"
    )
    assert parse_aer_counts(text) == (
        {"Bad TLP": 1},
        1,
        ["Bad DLLP", "42", "Poisoned TLP -3", "ECRC 18446744073709551616"],
    )


# --------------------------------------------------------------------------- damaged trees

LINK_FIELDS = {
    "current_link_speed": "current_speed_gts",
    "current_link_width": "current_width",
    "max_link_speed": "max_speed_gts",
    "max_link_width": "max_width",
}
DEVICE_FIELDS = {
    "vendor": "vendor_id",
    "device": "device_id",
    "class": "class_code",
    "numa_node": "numa_node",
    "local_cpulist": "local_cpus",
}
AER_FILES = {
    "aer_dev_correctable": ("correctable", "total_correctable"),
    "aer_dev_nonfatal": ("nonfatal", "total_nonfatal"),
    "aer_dev_fatal": ("fatal", "total_fatal"),
}
ROOTPORT_FILES = {
    "aer_rootport_total_err_cor": "rootport_total_correctable",
    "aer_rootport_total_err_nonfatal": "rootport_total_nonfatal",
    "aer_rootport_total_err_fatal": "rootport_total_fatal",
}
ENDPOINT_FILES = sorted([*LINK_FIELDS, *DEVICE_FIELDS, *AER_FILES])


def endpoint_value(path: PciePath, name: str) -> object:
    hop = path.hops[0]
    if name in LINK_FIELDS:
        return getattr(hop.link, LINK_FIELDS[name])
    if name in DEVICE_FIELDS:
        return getattr(hop, DEVICE_FIELDS[name])
    mapping, total = AER_FILES[name]
    return getattr(hop.aer, mapping), getattr(hop.aer, total)


def problems_about(path: PciePath, name: str) -> list[str]:
    return [p for p in path.problems if p.startswith(f"{CX7_EP}/{name}: ")]


@pytest.mark.parametrize("name", ENDPOINT_FILES)
def test_directory_in_place_of_a_file_is_a_problem(tmp_path: Path, name: str) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    (root / CX7_EP / name).unlink()
    (root / CX7_EP / name).mkdir()
    path = read_pcie_path(root, "0000:41:00.0")
    assert endpoint_value(path, name) in (None, ({}, None))
    assert [p.split(": ", 1)[1] for p in problems_about(path, name)] == [
        "EISDIR (Is a directory)"
    ]
    assert len(path.problems) == 1


@pytest.mark.parametrize(
    "code", [errno.EACCES, errno.EINVAL, errno.EOPNOTSUPP, errno.ENODEV, errno.EIO]
)
def test_errors_on_read_become_problems(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def failing_read(fd: int, n: int) -> bytes:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(sysfs_pci.os, "read", failing_read)
    path = read_pcie_path(SYSFS / "cx7-gen5-healthy", "0000:41:00.0")
    monkeypatch.undo()
    endpoint, port = path.hops
    assert endpoint.vendor_id is None and port.numa_node is None
    assert endpoint.link == PcieLink(None, None, None, None)
    assert endpoint.aer == AerCounters({}, {}, {}, None, None, None, None, None, None)
    assert port.aer.rootport_total_correctable is None
    name = errno_name(code)
    assert path.problems and all(f": {name} (" in p for p in path.problems)
    # 10 attributes on each device, 3 AER files each, 3 root-port totals.
    assert len(path.problems) == 2 * (6 + 4 + 3) + 3


def test_real_eopnotsupp_attribute(tmp_path: Path) -> None:
    real = Path("/sys/class/net/eth0/phys_port_name")
    try:
        real.read_bytes()
    except OSError as exc:
        if exc.errno != errno.EOPNOTSUPP:
            pytest.skip(f"{real} fails with {exc.errno}")
    else:
        pytest.skip(f"{real} is readable here")
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    (root / CX7_EP / "aer_dev_fatal").unlink()
    os.symlink(real, root / CX7_EP / "aer_dev_fatal")
    path = read_pcie_path(root, "0000:41:00.0")
    assert path.hops[0].aer.fatal == {} and path.hops[0].aer.total_fatal is None
    assert path.hops[0].aer.total_correctable == 3
    assert problems_about(path, "aer_dev_fatal") == [
        f"{CX7_EP}/aer_dev_fatal: EOPNOTSUPP (Operation not supported)"
    ]


def test_some_link_files_missing_is_a_problem_never_zero(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    (root / CX7_EP / "max_link_width").unlink()
    (root / CX7_EP / "current_link_speed").unlink()
    path = read_pcie_path(root, "0000:41:00.0")
    assert path.hops[0].link == PcieLink(None, 16, 32.0, None)
    assert sorted(path.problems) == [
        f"{CX7_EP}/current_link_speed: missing while other link attributes exist",
        f"{CX7_EP}/max_link_width: missing while other link attributes exist",
    ]


def test_all_link_and_aer_files_missing_means_not_pcie(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    for name in [*LINK_FIELDS, *AER_FILES]:
        (root / CX7_EP / name).unlink()
    path = read_pcie_path(root, "0000:41:00.0")
    assert path.hops[0].link is None and path.hops[0].aer is None
    assert not path.is_pcie
    assert path.problems == ()


UNKNOWN_SPELLINGS = {
    "current_link_speed": re.compile(r"Unknown( speed)?|0{1,4}(\.0{1,4})? GT/s( PCIe)?"),
    "max_link_speed": re.compile(r"Unknown( speed)?|0{1,4}(\.0{1,4})? GT/s( PCIe)?"),
    "current_link_width": re.compile(r"0{1,20}"),
    "max_link_width": re.compile(r"0{1,20}|0{0,17}255"),  # 255: PCIE_LNK_WIDTH_UNKNOWN
    "numa_node": re.compile(r"-0{0,19}1"),
}

contents = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64).map(str.encode),
    st.sampled_from(
        [
            b"",
            b"\n",
            b"\xff\xfe\xfd",
            b"16.0 GT/s PCIe\n",
            b"8 GT/s\n",
            b"Unknown speed\n",
            b"Unknown\n",
            b"0\n",
            b"-1\n",
            b"16\n",
            b"255\n",
            b"0x15b3\n",
            b"0-3,8\n",
            b"9" * 5000,
            b"Receiver Error 3\nTOTAL_ERR_COR 3\n",
            b"Bad TLP\nTOTAL_ERR_COR x\n",
            b"1" * (sysfs.MAX_ATTRIBUTE_BYTES + 1),
        ]
    ),
)


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_scenario(tmp_path_factory.mktemp("fuzz"), "cx7-gen5-healthy")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(ENDPOINT_FILES + sorted(ROOTPORT_FILES)), content=contents)
def test_fuzzed_attribute_never_raises(fuzz_root: Path, name: str, content: bytes) -> None:
    directory = fuzz_root / (CX7_EP if name not in ROOTPORT_FILES else CX7_PORT)
    original = (directory / name).read_bytes()
    (directory / name).write_bytes(content)
    try:
        path = read_pcie_path(fuzz_root, "0000:41:00.0")
    finally:
        (directory / name).write_bytes(original)
    about = [p for p in path.problems if p.split(": ", 1)[0].endswith("/" + name)]
    assert len(about) == len(path.problems), "a problem about another file"
    try:
        text = content.decode("utf-8").strip()
    except UnicodeDecodeError:
        text = None
    if name in ROOTPORT_FILES:
        value = getattr(path.hops[1].aer, ROOTPORT_FILES[name])
        assert value is None or (isinstance(value, int) and 0 <= value < 2**64)
        assert (value is None) == bool(about)
        return
    value = endpoint_value(path, name)
    if name in AER_FILES:
        mapping, total = value
        assert all(isinstance(v, int) and 0 <= v < 2**64 for v in mapping.values())
        assert all(k == k.strip() and k for k in mapping)
        if text is None or not text or len(content) > sysfs.MAX_ATTRIBUTE_BYTES:
            assert (mapping, total) == ({}, None) and len(about) == 1
        return
    if value is not None:
        assert not about
        return
    unknown = UNKNOWN_SPELLINGS.get(name)
    if text is not None and unknown is not None and unknown.fullmatch(text):
        assert not about
    else:
        assert len(about) == 1


# --------------------------------------------------------------------------- the AER re-read


def test_refreshed_counters_equal_a_whole_read_and_keep_the_other_problems(
        tmp_path: Path) -> None:
    """Between whole reads the source re-reads only AER and the power state: the result is
    what a whole read of the same tree gives, a problem about a counter file comes and goes
    with the file, and a problem about a link file stays until the next whole read."""
    root = copy_scenario(tmp_path, "cx7-gen5-healthy")
    (root / CX7_EP / "max_link_width").write_text("garbage\n")
    path, dirs = sysfs_pci._read_path(root, "0000:41:00.0")
    assert len(path.problems) == 1
    # Three correctable errors more, and the fatal file unreadable.
    text = (root / CX7_EP / "aer_dev_correctable").read_text()
    (root / CX7_EP / "aer_dev_correctable").write_text(
        text.replace(f"TOTAL_ERR_COR {path.hops[0].aer.total_correctable}",
                     f"TOTAL_ERR_COR {path.hops[0].aer.total_correctable + 3}"))
    (root / CX7_EP / "aer_dev_fatal").unlink()
    (root / CX7_EP / "aer_dev_fatal").mkdir()
    refreshed = sysfs_pci.refresh_counters(root, path, dirs)
    whole = read_pcie_path(root, "0000:41:00.0")
    assert refreshed.hops == whole.hops
    assert refreshed.hops[0].aer.total_correctable == path.hops[0].aer.total_correctable + 3
    assert sorted(refreshed.problems) == sorted(whole.problems)
    assert len(refreshed.problems) == 2
    # The fatal file fixed: its problem goes, the link file's stays.
    (root / CX7_EP / "aer_dev_fatal").rmdir()
    (root / CX7_EP / "aer_dev_fatal").write_text("Undefined 0\nTOTAL_ERR_FATAL 0\n")
    again = sysfs_pci.refresh_counters(root, refreshed, dirs)
    assert again.problems == path.problems and again.hops[0].aer.total_fatal == 0


@pytest.mark.parametrize("keep_open", [False, True])
def test_a_root_port_above_two_ports_reads_as_it_is_now_for_both(
        tmp_path: Path, keep_open: bool) -> None:
    """Between whole reads the counters of a hop shared by two interfaces (the root port
    above a dual-port card; read once a poll for both) are the same for both, and a count
    written in place (as the kernel's attribute changes) is the next poll's, with files kept
    open (the live /sys) or not."""
    root = copy_scenario(tmp_path, "cx6-dual-slot-x8")
    names = sorted(os.listdir(root / "class/net"))
    source = sysfs_pci.SysfsPciSource(root, refresh=1e-9, safety=1e9, keep_open=keep_open)
    counter = root / "devices/pci0000:00/0000:00:03.1/aer_rootport_total_err_cor"
    seen = []
    for value in (0, 7, 12):
        with open(counter, "r+") as f:  # in place: the same inode
            f.truncate(0)
            f.write(f"{value}\n")
        poll = Poll([read_netclass(root, n) for n in names])
        source.read(poll)
        seen.append([poll.parts[n]["pcie"].hops[-1].aer.rootport_total_correctable
                     for n in names])
    assert seen == [[0, 0], [7, 7], [12, 12]]
    assert source.full_reads == 2  # the first poll only, one path per interface
    assert (source.files is not None and len(source.files) > 0) == keep_open
    source.close()
