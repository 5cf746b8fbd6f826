"""The RDMA source: every port with or without a netdev, netlink chosen per port with sysfs
behind it, failing counters backed off (asked once per back-off, logged once), the device
selection applied before anything of a device is read.

Failing files are real kernel failures: a counter file of the fixture tree is a symlink to
``/sys/class/net/lo/speed`` (the loopback has no link speed: its sysfs read is EINVAL, as a
driver's show() answers) or to ``/proc/self/mem`` (read at offset 0: EIO)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
import structlog
from fixture_rdma import Device, KernelRdma, Port
from ttar import unpack

from nicwatch.model import NetClass
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources import sysfs_infiniband as ib
from nicwatch.sources.rdma import (
    BACKOFF_FIRST,
    BACKOFF_LIMIT,
    PMA_PREFIX,
    STAT_GET,
    Backoff,
    DeviceSelection,
    RdmaSource,
)
from nicwatch.sources.rdma_netlink import RDMA_NLDEV_CMD_PORT_GET, RDMA_NLDEV_CMD_STAT_GET
from nicwatch.sources.sysfs import OpenAttributes

from paths import FIXTURES, SYSFS

PORT = "devices/pci0000:20/0000:20:03.1/0000:21:00.0/infiniband/mlx5_0/ports/1"
EINVAL_FILE = "/sys/class/net/lo/speed"
EIO_FILE = "/proc/self/mem"
PROCFS_FIXTURE = FIXTURES / "published/rdma/mlx5_0-hw_counters-procfs-fixture.txt"


def kernel_fails(path: str, code: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.read(fd, 64)
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno == code:
            return
    pytest.fail(f"{path} does not fail with {errno.errorcode[code]} on this kernel")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The mlx5 RoCE port of the mlx5-rdma scenario plus the InfiniBand port of the
    procfs fixture (mlx5_0 there, renamed mlx5_ib0: a device without a netdev)."""
    root = tmp_path / "sys"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    ib_root = unpack(PROCFS_FIXTURE.read_text(), tmp_path / "ib")
    shutil.copytree(ib_root / "class/infiniband/mlx5_0", root / "class/infiniband/mlx5_ib0")
    return root


@pytest.fixture
def asks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each counter file is asked (a spy around the real reads: the one-shot
    read_attribute and the daemon's kept-open files)."""
    counts: dict[str, int] = {}
    real, real_open = ib.read_attribute, OpenAttributes.read

    def spy(path: str | os.PathLike[str]) -> tuple[str | None, str | None]:
        counts[str(path)] = counts.get(str(path), 0) + 1
        return real(path)

    def spy_open(self: OpenAttributes, path: str) -> tuple[str | None, str | None]:
        counts[path] = counts.get(path, 0) + 1
        return real_open(self, path)

    monkeypatch.setattr(ib, "read_attribute", spy)
    monkeypatch.setattr(OpenAttributes, "read", spy_open)
    return counts


def asked(counts: dict[str, int], suffix: str) -> int:
    return sum(n for path, n in counts.items() if path.endswith(suffix))


def test_backoff_grows_from_a_minute_to_an_hour() -> None:
    b = Backoff()
    key = ("mlx5_0", 1, "counters/VL15_dropped")
    assert b.failed(key, "EINVAL", 0.0) is True  # first failure: log it
    holds = [BACKOFF_FIRST]
    now = 0.0
    for _ in range(8):
        now += b.delay(key) or 0
        assert b.held(key, now - 0.001) == "EINVAL" and b.held(key, now) is None
        assert b.failed(key, "EINVAL", now) is False  # not logged again
        holds.append(b.delay(key) or 0)
    assert holds == [60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]
    assert BACKOFF_LIMIT == 3600
    assert b.succeeded(key) is True and b.held(key, now) is None and not b.succeeded(key)


def test_every_port_is_read_infiniband_without_a_netdev_too(tree: Path) -> None:
    ports = {p.key: p for p in RdmaSource(tree).read_ports()}
    assert set(ports) == {"mlx5_0/1", "mlx5_ib0/1"}
    roce, infiniband = ports["mlx5_0/1"], ports["mlx5_ib0/1"]
    assert (roce.netdev, roce.link_layer, roce.source) == ("enp33s0f0np0", "Ethernet", "sysfs")
    assert (infiniband.netdev, infiniband.link_layer) == (None, "InfiniBand")
    assert infiniband.counters["port_rcv_data"] == 18126345378
    assert infiniband.hw_counters["local_ack_timeout_err"] == 131


def test_the_ports_of_a_netdev_are_its_reading_part_and_all_are_host_wide(tree: Path) -> None:
    nc = NetClass("enp33s0f0np0", 4, None, "up", 1500, None, None, True, 0, None, None,
                  None, None, None)
    poll = Poll([nc])
    RdmaSource(tree).read(poll)
    assert [p.key for p in poll.parts["enp33s0f0np0"]["rdma"]] == ["mlx5_0/1"]
    assert [p.key for p in poll.host["rdma_ports"]] == ["mlx5_0/1", "mlx5_ib0/1"]


def test_a_failing_counter_is_asked_once_per_backoff_and_logged_once(
        tree: Path, asks: dict[str, int]) -> None:
    kernel_fails(EINVAL_FILE, errno.EINVAL)
    failing = tree / PORT / "counters/VL15_dropped"
    failing.unlink()
    failing.symlink_to(EINVAL_FILE)
    clock = Clock()
    source = RdmaSource(tree, clock=clock)
    seen = []
    with structlog.testing.capture_logs() as logs:
        for _ in range(12 * 60):  # an hour of 5 s polls
            (port,) = [p for p in source.read_ports() if p.key == "mlx5_0/1"]
            seen.append(port)
            clock.now += 5
    # asked at 0 s, then after back-offs of 60, 120, 240, 480 and 960 s (at 60, 180, 420, 900
    # and 1860 s): 6 times in an hour of 720 polls (the next, after 1920 s, at 3780 s)
    assert asked(asks, "mlx5_0/ports/1/counters/VL15_dropped") == 6
    assert asked(asks, "mlx5_0/ports/1/counters/symbol_error") == 720  # the others every poll
    assert all("VL15_dropped" not in p.counters for p in seen)
    assert all(p.skipped == {"counters/VL15_dropped": "EINVAL"} for p in seen)
    assert all(p.problems == () for p in seen)  # backed off, not an error each poll
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == [
        "rdma_counter_backed_off"]
    warn = next(e for e in logs if e["event"] == "rdma_counter_backed_off")
    assert (warn["device"], warn["port"], warn["counter"], warn["reason"]) == (
        "mlx5_0", 1, "counters/VL15_dropped", "EINVAL")


def test_counters_ext_is_read_and_a_refused_file_of_it_backed_off(
        tmp_path: Path, asks: dict[str, int]) -> None:
    """node_exporter's published mlx4_0 tree: counters_ext/ read beside counters/, by file
    name; "N/A (no PMA)" (i40iw0) is no value and no problem; a counters_ext file the kernel
    refuses is backed off under its own key."""
    kernel_fails(EINVAL_FILE, errno.EINVAL)
    root = unpack((FIXTURES / "published/rdma/node_exporter-infiniband-sys.ttar").read_text(),
                  tmp_path / "sys", strip="sys/")
    failing = root / "class/infiniband/mlx4_0/ports/2/counters_ext/port_rcv_data_64"
    failing.unlink()
    failing.symlink_to(EINVAL_FILE)
    clock = Clock()
    source = RdmaSource(root, clock=clock)
    for _ in range(3):
        ports = {p.key: p for p in source.read_ports()}
        clock.now += 5
    one, two, iwarp = ports["mlx4_0/1"], ports["mlx4_0/2"], ports["i40iw0/1"]
    assert one.counters_ext["port_rcv_data_64"] == 4631917
    assert one.counters_ext["port_unicast_xmit_packets"] == 61239
    assert "port_rcv_data_64" not in two.counters_ext
    assert two.skipped == {"counters_ext/port_rcv_data_64": "EINVAL"}
    assert asked(asks, "mlx4_0/ports/2/counters_ext/port_rcv_data_64") == 1
    assert asked(asks, "mlx4_0/ports/2/counters_ext/port_xmit_data_64") == 3
    assert iwarp.counters == {} and iwarp.problems == ()


def test_a_counter_that_recovers_is_read_again_and_said_once(tree: Path) -> None:
    kernel_fails(EIO_FILE, errno.EIO)
    failing = tree / PORT / "hw_counters/out_of_buffer"
    failing.unlink()
    failing.symlink_to(EIO_FILE)
    clock = Clock()
    source = RdmaSource(tree, clock=clock)
    with structlog.testing.capture_logs() as logs:
        (first, _) = source.read_ports()
        assert first.skipped == {"out_of_buffer": "EIO"}
        failing.unlink()
        failing.write_text("22817\n")
        clock.now += BACKOFF_FIRST - 1
        (held, _) = source.read_ports()
        assert "out_of_buffer" not in held.hw_counters  # still in its back-off
        clock.now += 1
        (back, _) = source.read_ports()
    assert back.hw_counters["out_of_buffer"] == 22817 and back.skipped == {}
    assert [e["event"] for e in logs if e["event"].startswith("rdma_counter")] == [
        "rdma_counter_backed_off", "rdma_counter_recovered"]


def test_garbage_is_a_problem_not_a_backoff(tree: Path) -> None:
    (tree / PORT / "counters/symbol_error").write_text("lots\n")
    (port, _) = RdmaSource(tree).read_ports()
    assert port.skipped == {}
    assert port.problems == ("class/infiniband/mlx5_0/ports/1/counters/symbol_error: "
                             "unparsable 'lots' (not an unsigned decimal)",)


def test_an_excluded_device_is_never_read(tree: Path, asks: dict[str, int],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[str] = []
    real_listdir = os.listdir

    def listdir(path: str | os.PathLike[str]) -> list[str]:
        listed.append(str(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    ports = RdmaSource(tree, selection=DeviceSelection(exclude="mlx5_ib.*")).read_ports()
    assert [p.key for p in ports] == ["mlx5_0/1"]
    assert not [p for p in (*asks, *listed) if "mlx5_ib0" in p]
    include = RdmaSource(tree, selection=DeviceSelection(include="mlx5_ib0")).read_ports()
    assert [p.key for p in include] == ["mlx5_ib0/1"]


def kernel_for(tree: Path) -> KernelRdma:
    """The netlink side of the tree's two devices: mlx5_0 (RoCE) answers its counters (an
    optional counter enabled among them), mlx5_ib0's driver fails get_hw_stats."""
    return KernelRdma(
        Device(1, "mlx5_0", {1: Port(netdev="enp33s0f0np0", ifindex=4, counters={
            **{n: int((tree / PORT / "hw_counters" / n).read_text())
               for n in os.listdir(tree / PORT / "hw_counters") if n != "lifespan"},
            "cc_rx_ce_pkts": 5123})}),
        Device(2, "mlx5_ib0", {1: Port(infiniband=True, counters=None)}, protocol="ib"))


def test_netlink_is_chosen_per_port_and_a_failing_request_is_backed_off(
        tree: Path, asks: dict[str, int]) -> None:
    kernel = kernel_for(tree)
    clock = Clock()
    source = RdmaSource(tree, kernel, clock=clock)
    with structlog.testing.capture_logs() as logs:
        roce, infiniband = source.read_ports()
    assert roce.source == "netlink" and roce.hw_counters["cc_rx_ce_pkts"] == 5123
    assert asked(asks, "mlx5_0/ports/1/hw_counters/out_of_buffer") == 0  # not from sysfs
    assert roce.state == "ACTIVE" and roce.netdev == "enp33s0f0np0"
    assert infiniband.source == "sysfs"  # its STAT_GET failed: the files instead
    assert infiniband.hw_counters["roce_adp_retrans"] == 99
    assert infiniband.skipped == {STAT_GET: "EINVAL"}
    assert source.last_sources == {"mlx5_0": {"netlink": 1}, "mlx5_ib0": {"sysfs": 1}}
    assert [e["counter"] for e in logs if e["event"] == "rdma_counter_backed_off"] == [STAT_GET]
    kernel.requests_seen.clear()
    clock.now += 5
    source.read_ports()
    # within the back-off the failing port's STAT_GET is not sent again; its PORT_GET is
    assert kernel.requests_seen == [(1, None, None), (RDMA_NLDEV_CMD_PORT_GET, 1, 1),
                                    (RDMA_NLDEV_CMD_STAT_GET, 1, 1),
                                    (RDMA_NLDEV_CMD_PORT_GET, 2, 1)]


def test_the_netlink_selection_asks_nothing_of_an_excluded_device(tree: Path) -> None:
    kernel = kernel_for(tree)
    ports = RdmaSource(tree, kernel, DeviceSelection(exclude="mlx5_ib0")).read_ports()
    assert [p.key for p in ports] == ["mlx5_0/1"]
    assert not [r for r in kernel.requests_seen if r[1] == 2]


def test_a_failing_device_dump_reads_sysfs(tree: Path) -> None:
    kernel = kernel_for(tree)
    kernel.dump_fails = errno.EPERM
    with structlog.testing.capture_logs() as logs:
        ports = RdmaSource(tree, kernel).read_ports()
    assert [p.source for p in ports] == ["sysfs", "sysfs"]
    assert [e["event"] for e in logs] == ["rdma_netlink_failed"]


def test_open_on_a_fixture_tree_reads_sysfs_only(tree: Path) -> None:
    source = RdmaSource.open(SourceOptions(sysfs=str(tree)))
    assert source.netlink is None and source.addresses is None
    assert PMA_PREFIX == "counters/"


def test_kept_open_files_read_the_same_ports_as_opening_each_file(tree: Path) -> None:
    """The daemon's kept-open reads (the live /sys) against the one-shot reads, on the same
    tree: values, a failing file backed off, garbage and a value above 64 bits named as
    problems, "N/A (no PMA)" left out."""
    kernel_fails(EINVAL_FILE, errno.EINVAL)
    counters = tree / PORT / "counters"
    (counters / "VL15_dropped").unlink()
    (counters / "VL15_dropped").symlink_to(EINVAL_FILE)
    (counters / "port_rcv_errors").write_text("N/A (no PMA)\n")
    (counters / "symbol_error").write_text("12 errors\n")
    (counters / "port_xmit_wait").write_text(f"{2**64}\n")
    (counters / "link_downed").write_text("00007\n")
    kept = RdmaSource(tree, keep_open=True)
    plain = RdmaSource(tree)
    for _ in range(2):  # the second poll reads through the descriptors the first opened
        assert kept.read_ports() == plain.read_ports()
    assert kept.files is not None and len(kept.files) > 0 and plain.files is None
    (port,) = [p for p in kept.read_ports() if p.key == "mlx5_0/1"]
    assert port.counters["link_downed"] == 7 and "port_rcv_errors" not in port.counters
    assert port.skipped == {"counters/VL15_dropped": "EINVAL"}
    assert sorted(p.split(":")[0].rsplit("/", 1)[1] for p in port.problems) == [
        "port_xmit_wait", "symbol_error"]
    kept.close()
    assert len(kept.files) == 0
