"""RDMA ports in snapshots, diff and record: the series of an RDMA port with a netdev join
its netdev's record (labelled rdma_device, port) and round-trip through the file; the IB
PortCounters saturate in the diff as in the tracker (at the maximum no delta, a fall is a
reset, never a wrap). The host is the mlx5-rdma fixture tree (ConnectX, RoCE port 1 of
mlx5_0 on enp33s0f0np0), copied so that the counter files can move between polls; an
InfiniBand port without a netdev has a record of its own, named by its rdma_device/port."""

from __future__ import annotations

import shutil
from pathlib import Path

from ttar import unpack

from nicwatch.collect import Collector, PollResult, Selection
from nicwatch.model import Channels, Rings
from nicwatch.snapshot import files as S
from nicwatch.snapshot import report
from nicwatch.snapshot.rows import SATURATED
from nicwatch.tracker import COUNTER_DECREASE, Tracker

from fixture_ethtool import RecordedEthtool
from paths import ETHTOOL, FIXTURES, SYSFS
from snapshot_helpers import HOST

NETDEV = "enp33s0f0np0"
RDMA = {"rdma_device": "mlx5_0", "port": "1"}
PORT = "devices/pci0000:20/0000:20:03.1/0000:21:00.0/infiniband/mlx5_0/ports/1"


def collector(root: Path) -> Collector:
    ports = {NETDEV: {"stats": ETHTOOL / "mlx5_core.txt", "driver": "mlx5_core",
                      "perm_address": "b8:3f:d2:a1:5c:2e", "rings": Rings(8192, 8192, 8192, 8192),
                      "channels": Channels(None, None, None, 63, None, None, None, 63)}}
    wall, mono = iter(range(1_790_000_000, 1_790_001_000, 5)), iter(range(1000, 2000, 5))
    return Collector(root, Selection(), ioctl=RecordedEthtool(ports),
                     clock=lambda: float(next(wall)), monotonic=lambda: float(next(mono)))


def snapshot(result: PollResult, label: str) -> S.Snapshot:
    s = result.samples[0]
    snap = S.build(HOST, [S.poll_of(result.samples, s.time, s.monotonic, rdma=result.rdma)],
                   label)
    return S.decode(S.encode(snap), label)  # what a file holds, read back


def counter(root: Path, group: str, name: str) -> int:
    return int((root / PORT / group / name).read_text())


def write(root: Path, group: str, name: str, value: int) -> None:
    (root / PORT / group / name).write_text(f"{value}\n")


def rows(d: S.Diff) -> dict[tuple[str, frozenset[tuple[str, str]]], S.Row]:
    (idiff,) = d.interfaces
    return {(r.name, frozenset(r.labels)): r for r in idiff.rows if r.kind == "counter"}


def test_an_rdma_ports_series_are_in_its_netdevs_snapshot_and_diff(tmp_path: Path) -> None:
    root = tmp_path / "mlx5-rdma"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    c = collector(root)
    a = snapshot(c.poll(), "a")
    words, oos = counter(root, "counters", "port_xmit_data"), counter(
        root, "hw_counters", "out_of_sequence")
    write(root, "counters", "port_xmit_data", words + 1000)
    write(root, "hw_counters", "out_of_sequence", oos + 3)
    write(root, "counters", "symbol_error", 65535)  # 16 bits: saturated
    b = snapshot(c.poll(), "b")
    (iface,) = b.polls[0].interfaces
    assert iface.identity.device == NETDEV
    key = next(k for k in iface.counters if k.metric == "nic_rdma_symbol_errors_total")
    assert dict(key.labels) == RDMA
    assert iface.counters[key].saturates and iface.counters[key].width == 16
    got = rows(S.diff(a, b))
    labels = frozenset(RDMA.items())
    assert got[("nic_rdma_tx_bytes_total", labels)].delta == 4000  # 4-byte words
    assert got[("nic_rdma_out_of_sequence_total", labels)].delta == 3
    saturated = got[("nic_rdma_symbol_errors_total", labels)]
    assert (saturated.status, saturated.delta) == (SATURATED, None)
    # the raw hw_counters stay whole as the port's stat set, not as raw series too
    assert not [k for k in iface.counters if k.metric == "nic_rdma_hw_stat_total"]
    assert "infiniband/mlx5_0/1/hw_counters" in iface.raw


def test_a_saturating_counter_that_fell_was_cleared_not_wrapped(tmp_path: Path) -> None:
    root = tmp_path / "mlx5-rdma"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    c = collector(root)
    # 32 bits, in the upper half of the range: a wrapping counter's fall would be a wrap
    write(root, "counters", "port_xmit_wait", 3_000_000_000)
    write(root, "counters", "port_rcv_errors", 60000)  # 16 bits
    a = snapshot(c.poll(), "a")
    write(root, "counters", "port_xmit_wait", 5)  # perfquery -R, then five ticks
    write(root, "counters", "port_rcv_errors", 5)
    b = snapshot(c.poll(), "b")
    got = rows(S.diff(a, b))
    for family in ("nic_rdma_tx_wait_ticks_total", "nic_rdma_rx_errors_total"):
        row = got[(family, frozenset(RDMA.items()))]
        assert (row.status, row.delta) == (COUNTER_DECREASE, None), family


def test_an_rdma_port_without_its_netdev_selected_is_in_no_record(tmp_path: Path) -> None:
    c = Collector(SYSFS / "mlx5-rdma", Selection(include="^nothing$"),
                  ioctl=RecordedEthtool({}))
    result = c.poll()
    assert result.rdma  # read, and on /metrics and in show
    assert S.poll_of(result.samples, 0.0, 0.0, rdma=result.rdma).interfaces == ()


# An InfiniBand ConnectX port without a netdev: prometheus/procfs' published mlx5_0 tree
# (link_layer InfiniBand, counters/ with the extended unicast files, hw_counters/), added
# to the host as mlx5_ib0.
IB = {"rdma_device": "mlx5_ib0", "port": "1"}
IB_KEY = "mlx5_ib0/1"
PROCFS_FIXTURE = FIXTURES / "published/rdma/mlx5_0-hw_counters-procfs-fixture.txt"


def with_infiniband(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "mlx5-rdma"
    shutil.copytree(SYSFS / "mlx5-rdma", root, symlinks=True)
    ib_root = unpack(PROCFS_FIXTURE.read_text(), tmp_path / "ib")
    ib_port = root / "class/infiniband/mlx5_ib0"
    shutil.copytree(ib_root / "class/infiniband/mlx5_0", ib_port)
    return root, ib_port / "ports/1"


def bump(port: Path, group: str, name: str, by: int) -> None:
    path = port / group / name
    path.write_text(f"{int(path.read_text()) + by}\n")


def test_an_infiniband_port_without_a_netdev_has_a_record_of_its_own(tmp_path: Path) -> None:
    root, port = with_infiniband(tmp_path)
    c = collector(root)
    (port / "counters/port_rcv_errors").write_text("300\n")
    a = snapshot(c.poll(), "a")
    bump(port, "counters", "port_xmit_data", 250)  # 4-byte words
    bump(port, "counters", "unicast_xmit_packets", 2)
    bump(port, "hw_counters", "local_ack_timeout_err", 7)
    (port / "counters/symbol_error").write_text("65535\n")  # 16 bits: saturated
    (port / "counters/port_rcv_errors").write_text("2\n")  # fell: cleared, never a wrap
    b = snapshot(c.poll(), "b")
    records = {i.device: i for i in b.polls[0].interfaces}
    assert list(records) == [NETDEV, IB_KEY]  # after the interfaces
    ib = records[IB_KEY]
    assert (ib.identity.driver, ib.identity.ifindex) == ("mlx5", None)
    assert {dict(k.labels)["rdma_device"] for k in ib.counters} == {"mlx5_ib0"}
    assert not [k for k in records[NETDEV].counters if dict(k.labels).get("rdma_device")
                == "mlx5_ib0"]
    assert ib.raw["infiniband/mlx5_ib0/1/counters"].as_dict()["port_xmit_data"] == \
        int((port / "counters/port_xmit_data").read_text())
    assert "infiniband/mlx5_ib0/1/hw_counters" in ib.raw
    (state,) = ib.state["rdma"]
    assert (state["link_layer"], state["netdev"]) == ("InfiniBand", None)
    assert "counters" not in state and "hw_counters" not in state
    d = S.diff(a, b)
    assert [i.device for i in d.interfaces] == [NETDEV, IB_KEY]
    got = {(r.name, frozenset(r.labels)): r for r in d.interfaces[1].rows
           if r.kind == "counter"}
    labels = frozenset(IB.items())
    assert got[("nic_rdma_tx_bytes_total", labels)].delta == 1000
    assert got[("nic_rdma_tx_unicast_packets_total", labels)].delta == 2
    assert got[("nic_rdma_local_ack_timeout_errors_total", labels)].delta == 7
    symbol = got[("nic_rdma_symbol_errors_total", labels)]
    assert (symbol.status, symbol.delta) == (SATURATED, None)
    cleared = got[("nic_rdma_rx_errors_total", labels)]
    assert (cleared.status, cleared.delta) == (COUNTER_DECREASE, None)


def test_record_charts_and_summarizes_an_infiniband_port_by_its_key(tmp_path: Path) -> None:
    root, port = with_infiniband(tmp_path)
    c = collector(root)
    tracker, timeline = Tracker(), report.Timeline()
    snaps, times = [], []
    for _ in range(3):
        result = c.poll()
        timeline.add(result.samples[0].monotonic, tracker.update(list(result.samples)),
                     tracker.update_rdma(result.rdma))
        snaps.append(snapshot(result, "p"))
        times.append(next(p.monotonic for p in result.rdma if p.key == IB_KEY))
        bump(port, "counters", "port_rcv_data", 1250)  # 5000 bytes per poll
    series = timeline.devices[IB_KEY]
    assert len(series.seconds) == 3
    per_second = 5000 / (times[1] - times[0])
    assert times[2] - times[1] == times[1] - times[0]
    assert series.peaks["nic_rdma_rx_bytes_total"] == per_second
    assert "nic_rdma_rx_bytes_total" in series.rates  # charted (report.CHARTS "RDMA rx")
    summary = {s.device: s for s in report.summarize(S.diff(snaps[0], snaps[-1]), timeline)}
    row = next(r for r in summary[IB_KEY].rows if r.family == "nic_rdma_rx_bytes_total")
    assert (row.delta, row.peak) == (10000, per_second)
