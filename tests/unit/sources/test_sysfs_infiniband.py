"""sysfs_infiniband: RDMA ports, their counters, netdev and PCI function, on fixture trees
shaped as mlx5's. The lab (tests/lab/test_lab_rxe.py) reads a real RDMA device's tree (soft-
RoCE under QEMU) and compares it with `rdma -j statistic show`."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.model import RdmaGid
from nicwatch.sources.sysfs_infiniband import (
    RdmaPort,
    parse_netdev_name,
    parse_numbered_name,
    parse_rate,
    rdma_devices,
    read_rdma_device,
    read_rdma_port,
    read_rdma_ports,
)

from paths import SYSFS

PORT = "devices/pci0000:20/0000:20:03.1/0000:21:00.0/infiniband/mlx5_0/ports/1"
CLASS_PORT = "class/infiniband/mlx5_0/ports/1"  # how problems name the port's files

HW_COUNTERS = {
    "duplicate_request": 12,
    "implied_nak_seq_err": 0,
    "local_ack_timeout_err": 37,
    "np_cnp_sent": 184467,
    "np_ecn_marked_roce_packets": 192113,
    "out_of_buffer": 22_817,
    "out_of_sequence": 8,
    "packet_seq_err": 3,
    "req_cqe_error": 0,
    "req_cqe_flush_error": 0,
    "req_remote_access_errors": 0,
    "req_remote_invalid_request": 0,
    "resp_cqe_error": 0,
    "resp_cqe_flush_error": 0,
    "resp_local_length_error": 0,
    "resp_remote_access_errors": 0,
    "rnr_nak_retry_err": 2,
    "roce_adp_retrans": 5,
    "roce_adp_retrans_to": 1,
    "roce_slow_restart": 0,
    "roce_slow_restart_cnps": 0,
    "roce_slow_restart_trans": 0,
    "rp_cnp_handled": 210554,
    "rp_cnp_ignored": 41,
    "rx_atomic_requests": 0,
    "rx_dct_connect": 0,
    "rx_icrc_encapsulated": 0,
    "rx_read_requests": 48211,
    "rx_write_requests": 9912733,
}
COUNTERS = {
    "VL15_dropped": 0,
    "excessive_buffer_overrun_errors": 0,
    "link_downed": 0,
    "link_error_recovery": 0,
    "local_link_integrity_errors": 0,
    "multicast_rcv_packets": 0,
    "multicast_xmit_packets": 0,
    "port_rcv_constraint_errors": 0,
    "port_rcv_data": 91_847_726_561,
    "port_rcv_errors": 0,
    "port_rcv_packets": 376_155_201,
    "port_rcv_remote_physical_errors": 0,
    "port_rcv_switch_relay_errors": 0,
    "port_xmit_constraint_errors": 0,
    "port_xmit_data": 104_857_600_000,
    "port_xmit_discards": 0,
    "port_xmit_packets": 411_042_003,
    "port_xmit_wait": 0,
    "symbol_error": 0,
    "unicast_rcv_packets": 376_155_201,
    "unicast_xmit_packets": 411_042_003,
}
MLX5_0_PORT_1 = RdmaPort(
    device="mlx5_0",
    port=1,
    link_layer="Ethernet",
    state="ACTIVE",
    phys_state="LinkUp",
    rate_bytes_per_second=12_500_000_000,
    netdev="enp33s0f0np0",
    node_guid="b83f:d203:00a1:5c2e",
    pci_function="0000:21:00.0",
    hw_counters=HW_COUNTERS,
    counters=COUNTERS,
    problems=(),
    driver="mlx5",  # device/driver -> mlx5_core
    gids=(RdmaGid(0, "fe80:0000:0000:0000:ba3f:d2ff:fea1:5c2e", "IB/RoCE v1", "enp33s0f0np0"),
          RdmaGid(1, "fe80:0000:0000:0000:ba3f:d2ff:fea1:5c2e", "RoCE v2", "enp33s0f0np0")),
    netdev_mtu=4200,
    board_id="MT_0000000359",  # the device's board_id, fw_ver and hca_type files
    firmware_version="22.39.1002",
    hca_type="MT4125",
)


def copy_scenario(tmp_path: Path, name: str = "mlx5-rdma") -> Path:
    root = tmp_path / name
    shutil.copytree(SYSFS / name, root, symlinks=True)
    return root


def replace_with_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def test_mlx5_rdma_port_exact() -> None:
    root = SYSFS / "mlx5-rdma"
    assert rdma_devices(root) == ("mlx5_0",)
    assert read_rdma_ports(root) == (MLX5_0_PORT_1,)
    assert read_rdma_device(root, "mlx5_0") == (MLX5_0_PORT_1,)
    assert read_rdma_port(root, "mlx5_0", 1) == MLX5_0_PORT_1


def test_data_counters_stay_in_4_byte_words_and_lifespan_is_not_a_counter() -> None:
    port = read_rdma_port(SYSFS / "mlx5-rdma", "mlx5_0", 1)
    assert port.counters["port_xmit_data"] == 104_857_600_000  # words, not bytes
    assert "lifespan" not in port.hw_counters
    assert (SYSFS / "mlx5-rdma" / PORT / "hw_counters/lifespan").exists()


@pytest.mark.parametrize(
    "scenario",
    ["cx7-gen5-healthy", "cx6-dual-gen4x8-width", "gen3-old-kernel", "virtio-no-pcie"],
)
def test_no_rdma_devices(scenario: str) -> None:
    assert rdma_devices(SYSFS / scenario) == ()
    assert read_rdma_ports(SYSFS / scenario) == ()


def test_netdev_falls_back_to_the_pci_functions_netdev(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path)
    (root / PORT / "gid_attrs/ndevs/0").unlink()
    port = read_rdma_port(root, "mlx5_0", 1)
    assert port.gids is not None and port.gids[0].netdev is None  # the entry names none now
    assert replace(port, gids=MLX5_0_PORT_1.gids) == MLX5_0_PORT_1


def test_unreadable_gid_netdev_falls_back_quietly(tmp_path: Path) -> None:
    # On InfiniBand ports reading gid_attrs/ndevs/0 fails (EINVAL): expected, not a problem.
    root = copy_scenario(tmp_path)
    replace_with_directory(root / PORT / "gid_attrs/ndevs/0")
    port = read_rdma_port(root, "mlx5_0", 1)
    assert port.netdev == "enp33s0f0np0"
    assert port.problems == ()


def test_netdev_chosen_by_dev_port_when_the_function_has_several(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path)
    ep = root / "devices/pci0000:20/0000:20:03.1/0000:21:00.0"
    (ep / "net/enp33s0f0np0/dev_port").write_text("0\n")
    (ep / "net/ib1/").mkdir(parents=True)
    (ep / "net/ib1/dev_port").write_text("1\n")
    ib = ep / "infiniband/mlx5_0"
    shutil.copytree(ib / "ports/1", ib / "ports/2", symlinks=True)
    for port_dir in ("ports/1", "ports/2"):
        shutil.rmtree(ib / port_dir / "gid_attrs")
    assert [(p.port, p.netdev) for p in read_rdma_ports(root)] == [
        (1, "enp33s0f0np0"),
        (2, "ib1"),
    ]


def test_unreadable_and_garbage_counters_are_left_out_with_problems(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path)
    replace_with_directory(root / PORT / "hw_counters/np_cnp_sent")
    (root / PORT / "counters/symbol_error").write_bytes(b"\xff\xfe\n")
    (root / PORT / "counters/port_rcv_errors").write_text("lots\n")
    port = read_rdma_port(root, "mlx5_0", 1)
    assert port.hw_counters == {k: v for k, v in HW_COUNTERS.items() if k != "np_cnp_sent"}
    assert port.counters == {
        k: v for k, v in COUNTERS.items() if k not in ("symbol_error", "port_rcv_errors")
    }
    assert sorted(port.problems) == [
        f"{CLASS_PORT}/counters/port_rcv_errors: unparsable 'lots' (not an unsigned decimal)",
        f"{CLASS_PORT}/counters/symbol_error: not UTF-8",
        f"{CLASS_PORT}/hw_counters/np_cnp_sent: EISDIR (Is a directory)",
    ]


def test_absent_counter_directories_are_empty_without_problems(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path)
    shutil.rmtree(root / PORT / "hw_counters")
    port = read_rdma_port(root, "mlx5_0", 1)
    assert port.hw_counters == {}
    assert port.counters == COUNTERS
    assert port.problems == ()


def test_infiniband_link_layer_port(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path)
    (root / PORT / "link_layer").write_text("InfiniBand\n")
    (root / PORT / "rate").write_text("200 Gb/sec (4X HDR)\n")
    (root / PORT / "state").write_text("1: DOWN\n")
    (root / PORT / "phys_state").write_text("3: Disabled\n")
    port = read_rdma_port(root, "mlx5_0", 1)
    assert (port.link_layer, port.state, port.phys_state) == ("InfiniBand", "DOWN", "Disabled")
    assert port.rate_bytes_per_second == 25 * 10**9


def test_device_without_pci_parent(tmp_path: Path) -> None:
    root = copy_scenario(tmp_path)
    ib = root / "devices/pci0000:20/0000:20:03.1/0000:21:00.0/infiniband/mlx5_0"
    (ib / "device").unlink()
    (ib / "node_guid").write_text("not-a-guid\n")
    port = read_rdma_port(root, "mlx5_0", 1)
    assert port.pci_function is None
    assert port.netdev == "enp33s0f0np0"  # GID 0 still names it
    assert port.node_guid is None
    assert port.problems == (
        "class/infiniband/mlx5_0/node_guid: unparsable 'not-a-guid' (not a node GUID)",
    )


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("2.5 Gb/sec (1X SDR)", 312_500_000),
        ("10 Gb/sec (4X)", 1_250_000_000),
        ("56 Gb/sec (4X FDR)", 7_000_000_000),
        ("100 Gb/sec (4X EDR)", 12_500_000_000),
        ("400 Gb/sec (4X NDR)", 50_000_000_000),
        ("800 Gb/sec (4X XDR)", 100_000_000_000),
        ("0 Gb/sec", None),
    ],
)
def test_parse_rate(text: str, rate: int | None) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["fast", "100 Gbps", "100 Gb/sec (4X", "1.25 Gb/sec (1X)"])
def test_parse_rate_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rate(text)


@pytest.mark.parametrize(
    ("text", "name"),
    [("4: ACTIVE", "ACTIVE"), ("5: LinkUp", "LinkUp"), ("7: Phy Test", "Phy Test")],
)
def test_parse_numbered_name(text: str, name: str) -> None:
    assert parse_numbered_name(text) == name


@pytest.mark.parametrize("text", ["", ".", "..", "a/b", "a b", "a:1", "eth\x000", "x" * 16])
def test_parse_netdev_name_rejects_what_dev_valid_name_refuses(text: str) -> None:
    # A NUL read from gid_attrs/ndevs once reached os.open() as part of class/net/<name>/mtu
    with pytest.raises(ValueError):
        parse_netdev_name(text)


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_scenario(tmp_path_factory.mktemp("fuzz"))


FUZZED_FILES = [
    "hw_counters/np_cnp_sent",
    "counters/port_xmit_data",
    "rate",
    "state",
    "gid_attrs/ndevs/0",
    "../../node_guid",
]


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(FUZZED_FILES),
    content=st.one_of(
        st.binary(max_size=64),
        st.text(max_size=32).map(str.encode),
        st.sampled_from([b"", b"\xff", b"-1\n", b"18446744073709551616\n", b"7" * 70000]),
    ),
)
def test_fuzzed_port_files_never_raise(fuzz_root: Path, name: str, content: bytes) -> None:
    target = fuzz_root / PORT / name
    original = target.read_bytes()
    target.write_bytes(content)
    try:
        port = read_rdma_port(fuzz_root, "mlx5_0", 1)
    finally:
        target.write_bytes(original)
    assert all(isinstance(v, int) and 0 <= v < 2**64 for v in port.hw_counters.values())
    assert all(isinstance(v, int) and 0 <= v < 2**64 for v in port.counters.values())
    assert port.netdev is None or ("/" not in port.netdev and port.netdev.strip() == port.netdev)
    rel = os.path.normpath(f"{CLASS_PORT}/{name}")
    assert all(p.startswith(f"{rel}: ") for p in port.problems)
    if name.startswith(("hw_counters/", "counters/")):
        mapping = port.hw_counters if name.startswith("hw_") else port.counters
        counter = name.rsplit("/", 1)[1]
        assert (counter in mapping) != bool(port.problems)


# rdma_rxe's hw_counters as the lab's 6.12 guest lists them (after ibv_rc_pingpong -n 200
# over rxe loopback; `rdma -j statistic show` gave the same values): no counters/ directory.
RXE_HW_COUNTERS = {
    "ack_deferred": 402, "completer_retry_err": 2, "duplicate_request": 2, "link_downed": 0,
    "out_of_seq_request": 0, "rcvd_pkts": 2004, "rcvd_rnr_err": 0, "rcvd_seq_err": 0,
    "rdma_recvs": 400, "rdma_sends": 400, "retry_exceeded_err": 0, "retry_rnr_exceeded_err": 0,
    "send_err": 0, "send_rnr_err": 0, "sent_pkts": 2004, "lifespan": 10,
}


def test_rxe_counters_feed_the_families_their_meaning_has(tmp_path: Path) -> None:
    """Soft-RoCE (tests/lab/test_lab_rxe.py runs the real driver): sent_pkts and rcvd_pkts
    are the port's RoCE packets, the error counters feed the families of their meaning
    (normalize/rdma.py RXE), the others stay reachable raw."""
    from nicwatch.normalize.rdma import RAW_COUNTER, rdma_counters

    port_dir = tmp_path / "class/infiniband/rxe0/ports/1"
    (port_dir / "hw_counters").mkdir(parents=True)
    for name, number in RXE_HW_COUNTERS.items():
        (port_dir / "hw_counters" / name).write_text(f"{number}\n")
    (port_dir / "link_layer").write_text("Ethernet\n")
    (port_dir / "gid_attrs/ndevs").mkdir(parents=True)
    (port_dir / "gid_attrs/ndevs/0").write_text("nsim14p1\n")
    (port,) = read_rdma_ports(tmp_path)
    assert port.netdev == "nsim14p1" and dict(port.counters) == {} and port.driver == "rxe"
    got = {(k.metric, dict(k.labels).get("counter")): v.value
           for k, v in rdma_counters(port).items()}
    assert got == {
        ("nic_rdma_tx_packets_total", None): 2004, ("nic_rdma_rx_packets_total", None): 2004,
        ("nic_rdma_duplicate_requests_total", None): 2,
        ("nic_rdma_out_of_sequence_total", None): 0,
        ("nic_rdma_rnr_nak_retry_errors_total", None): 0,
        ("nic_rdma_packet_seq_errors_total", None): 0,
        ("nic_rdma_req_transport_retries_exceeded_total", None): 0,
        ("nic_rdma_req_rnr_retries_exceeded_total", None): 0,
        ("nic_rdma_link_downed_total", None): 0,
        **{(RAW_COUNTER, name): RXE_HW_COUNTERS[name] for name in (
            "ack_deferred", "completer_retry_err", "rdma_recvs", "rdma_sends", "send_err",
            "send_rnr_err")},
    }
