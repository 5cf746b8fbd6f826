"""Snapshot files: provenance, round trip, diff semantics (reboot, reset, changed statistic
set), atomic writes and damaged files. Kernel parts run on veth pairs in test namespaces
(subnets 40-49); hardware this machine lacks comes from the cx7-gen5-healthy fixture tree."""

import dataclasses
import errno
import gzip
import json
import os
import re
import socket
import subprocess
import time
import zlib

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nicwatch.cli.snapshot import diff_json, format_diff
from nicwatch.metrics import FAMILIES
from nicwatch.model import CounterValue, NicIdentity, SeriesKey, StatSet
from nicwatch.snapshot import files as S
from nicwatch.sources.host import HostInfo, read_host
from nicwatch.tracker import COUNTER_DECREASE, INTERFACE_REPLACED, STAT_SET_CHANGED

from hostd import NICWATCH
from netns import PYTHON, make_veth_pair, ns_sh
from snapshot_helpers import (
    HOST,
    SNAPSHOT_CLI,
    UDP_OVERHEAD,
    mlx5_collector,
    mlx5_stats,
    neighbours,
    udp_sender,
    write_stats,
)


def cli(*args: str, ns: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    prefix = ["ip", "netns", "exec", ns] if ns else []
    return subprocess.run([*prefix, *SNAPSHOT_CLI, *args], capture_output=True, text=True,
                          cwd=cwd)


def mlx5_snapshots(tmp_path, polls: int = 2, channels: int = 4, change=None,
                   label: str = "test") -> list[S.Snapshot]:
    """One snapshot per poll of the fixture ConnectX-7 port, 5 s apart; ``change(i, stats)``
    edits the counters before poll i."""
    stats = mlx5_stats(channels)
    path = tmp_path / "eth2.txt"
    collector = mlx5_collector(path)
    out = []
    for i in range(polls):
        if change:
            change(i, stats)
        write_stats(path, stats)
        samples = collector.poll().samples
        out.append(S.build(HOST, [S.poll_of(samples, samples[0].time, samples[0].monotonic)],
                           f"{label} {i}"))
    return out


def only(d: S.Diff) -> S.InterfaceDiff:
    assert len(d.interfaces) == 1
    return d.interfaces[0]


def row(idiff: S.InterfaceDiff, name: str, kind: str = "counter", **labels) -> S.Row:
    want = tuple(sorted(labels.items()))
    return next(r for r in idiff.rows if r.kind == kind and r.name == name and r.labels == want)


# --------------------------------------------------------------------------- provenance


def test_host_info_from_a_procfs_root(tmp_path):
    kernel = tmp_path / "sys" / "kernel"
    (kernel / "random").mkdir(parents=True)
    (kernel / "random" / "boot_id").write_text("6c1a3f2e-0000-4000-8000-123456789abc\n")
    (kernel / "hostname").write_text("gpu-node-17\n")
    (kernel / "osrelease").write_text("6.8.0-45-generic\n")
    (tmp_path / "stat").write_text("cpu  1 2 3 4\nintr 5\nbtime 1767225600\nprocesses 9\n")
    assert read_host(tmp_path) == HostInfo("gpu-node-17", "6c1a3f2e-0000-4000-8000-123456789abc",
                                           1767225600.0, "6.8.0-45-generic", None)
    (tmp_path / "stat").write_text("btime soon\n")
    assert read_host(tmp_path).boot_time is None  # garbage is absent, not 0
    assert read_host(tmp_path / "nowhere") == HostInfo(None, None, None, None, None)


def test_host_info_of_this_machine_matches_proc_and_psutil():
    host = read_host()
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert host.boot_id == f.read().strip()
    assert host.boot_time == psutil.boot_time()
    assert host.kernel_release == os.uname().release


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("name", ["snap.json", "snap.json.gz"])
def test_round_trip_keeps_everything(tmp_path, name):
    snap, _ = mlx5_snapshots(tmp_path, polls=2)
    S.save(snap, tmp_path / name)
    data = (tmp_path / name).read_bytes()
    assert (data[:2] == S.GZIP_MAGIC) == name.endswith(".gz")
    back = S.load(tmp_path / name)
    assert back == snap
    iface = back.polls[0].interfaces[0]
    assert iface.identity.pci_address == "0000:41:00.0"
    assert iface.identity.firmware_version.startswith("28.46.3048")
    assert len(iface.raw[S.ETHTOOL].names) == len(mlx5_stats(4))
    assert iface.counters[SeriesKey("nic_tx_pause_ctrl_frames_total")].raw == 8330117
    assert iface.state["rings"]["rx"] == 8192
    link = iface.state["pcie"]["hops"][0]["link"]
    assert (link["current_speed_gts"], link["current_width"]) == (32.0, 16)
    assert iface.gauges[SeriesKey("nic_pcie_link_width", (("hop", "0"), ("kind", "current"),
                                                          ("pci_address", "0000:41:00.0")))] == 16


def test_a_many_poll_document_stores_each_name_list_once(tmp_path):
    snaps = mlx5_snapshots(tmp_path, polls=3)
    series = S.build(HOST, [p for s in snaps for p in s.polls], "series")
    doc = json.loads(S.encode(series))
    sources = snaps[0].polls[0].interfaces[0].raw
    assert set(sources) == {S.ETHTOOL, S.NETDEV}
    assert len(doc["polls"]) == 3 and len(doc["stat_names"]) == len(sources)
    assert S.decode(S.encode(series), "series.json") == series


def test_the_cli_snapshot_names_its_file_and_writes_it_atomically(tmp_path):
    r = cli("snapshot", "--interfaces.include=lo", "--label", "before run 7", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    name = r.stdout.strip()
    assert name.startswith(f"nicwatch-{read_host().hostname}-") and name.endswith(
        "-before_run_7.json")
    assert sorted(os.listdir(tmp_path)) == [name]  # no temporary file left behind
    snap = S.load(tmp_path / name)
    assert snap.label == "before run 7" and snap.host.boot_id == read_host().boot_id
    (lo,) = snap.polls[0].interfaces
    assert lo.device == "lo" and S.NETDEV in lo.raw
    assert abs(lo.time - time.time()) < 60 and lo.monotonic <= time.monotonic()


# --------------------------------------------------------------------------- diff


@pytest.fixture
def veth40():
    pair = make_veth_pair(subnet=40)
    neighbours(pair)
    yield pair
    pair.delete()


@pytest.mark.netns
def test_diff_of_veth_traffic_equals_what_was_sent(veth40, tmp_path):
    p = veth40
    count, size = 300, 700
    assert cli("snapshot", f"--interfaces.include={p.a}", "-o", str(tmp_path / "a.json"),
               ns=p.ns_a).returncode == 0
    ns_sh(p.ns_a, PYTHON, "-c", udp_sender(p.addr_a, p.addr_b, count, size))
    assert cli("snapshot", f"--interfaces.include={p.a}", "-o", str(tmp_path / "b.json"),
               ns=p.ns_a).returncode == 0
    r = cli("diff", "--json", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stderr
    (iface,) = json.loads(r.stdout)["interfaces"]
    rows = {(x["kind"], x["name"]): x for x in iface["rows"]}
    assert rows[("counter", "nic_tx_packets_total")]["delta"] == count
    assert rows[("counter", "nic_tx_bytes_total")]["delta"] == count * (size + UDP_OVERHEAD)
    assert rows[("netdev", "tx_packets")]["delta"] == count
    rate = rows[("counter", "nic_tx_bytes_total")]["rate"]
    assert rate == pytest.approx(count * (size + UDP_OVERHEAD) / iface["seconds"])
    assert all(x["delta"] is None or x["delta"] >= 0 for x in iface["rows"])
    text = cli("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")).stdout
    assert f"{count * (size + UDP_OVERHEAD):,} B" in text and "hidden; --all" in text


def test_diff_refuses_to_subtract_across_a_reboot(tmp_path):
    a, b = mlx5_snapshots(tmp_path)
    b = dataclasses.replace(b, host=dataclasses.replace(
        HOST, boot_id="99999999-8888-7777-6666-555555555555", boot_time=1_790_050_000.0))
    with pytest.raises(S.DiffError, match=r"different boots.*0f1e2d3c.*99999999"):
        S.diff(a, b)
    S.save(a, tmp_path / "a.json")
    S.save(b, tmp_path / "b.json")
    r = cli("diff", "a.json", "b.json", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("nicwatch: error: a.json -> b.json: taken in different boots")
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_diff_refuses_b_before_a(tmp_path):
    a, b = mlx5_snapshots(tmp_path)
    with pytest.raises(S.DiffError, match="before A"):
        S.diff(b, a)


def test_a_counter_reset_is_flagged_never_negative(tmp_path):
    def reset(i, stats):
        if i == 1:
            stats["tx_pause_ctrl_phy"] = 12  # the NIC was reset: 8330117 -> 12
            stats["rx_out_of_buffer"] += 5
    d = S.diff(*mlx5_snapshots(tmp_path, change=reset))
    idiff = only(d)
    pause = row(idiff, "nic_tx_pause_ctrl_frames_total")
    assert (pause.status, pause.delta, pause.rate) == (COUNTER_DECREASE, None, None)
    assert (pause.before, pause.after) == (8330117, 12)
    assert row(idiff, "tx_pause_ctrl_phy", S.ETHTOOL).status == COUNTER_DECREASE
    assert row(idiff, "nic_rx_out_of_buffer_drops_total").delta == 5
    assert COUNTER_DECREASE in idiff.flags
    assert not any(r.delta is not None and r.delta < 0 for r in idiff.rows)
    text = format_diff(d, "a", "b")
    assert "counter(s) went backwards" in text and "COUNTER DECREASE" in text
    # Health families come first, PAUSE before drops, then traffic.
    names = [r.name for r in idiff.rows if r.kind == "counter"]
    assert names.index("nic_tx_pause_ctrl_frames_total") < names.index(
        "nic_rx_out_of_buffer_drops_total") < names.index("nic_rx_bytes_total")


def test_a_32_bit_counter_wraps_instead_of_resetting():
    key = SeriesKey("nic_rx_crc_errors_total")

    def snap(raw: int, mono: float) -> S.Snapshot:
        iface = S.InterfaceSnapshot(
            NicIdentity("eth0", 2, "ixgbe", None, None, None, None, None), mono, mono,
            {key: CounterValue(raw, "ethtool_ioctl", width=32)}, {}, {}, {})
        return S.build(HOST, [S.Poll(mono, mono, (iface,))])
    r = row(only(S.diff(snap(2**32 - 10, 0.0), snap(5, 5.0))), key.metric)
    assert (r.status, r.delta, r.rate) == (S.OK, 15, 3.0)


@pytest.mark.netns
def test_a_changed_statistic_set_is_flagged_on_a_real_veth(tmp_path):
    pair = make_veth_pair(queues=4, subnet=41)
    try:
        flags = [f"--interfaces.include={pair.a}"]
        assert cli("snapshot", *flags, "-o", str(tmp_path / "a.json"), ns=pair.ns_a).returncode == 0
        ns_sh(pair.ns_a, "ethtool", "-L", pair.a, "rx", "2", "tx", "2")
        assert cli("snapshot", *flags, "-o", str(tmp_path / "b.json"), ns=pair.ns_a).returncode == 0
    finally:
        pair.delete()
    idiff = only(S.diff(S.load(tmp_path / "a.json"), S.load(tmp_path / "b.json")))
    assert STAT_SET_CHANGED in idiff.flags
    ((source, added, removed),) = idiff.stat_set_changes
    assert source == S.ETHTOOL and added == 0 and removed > 0
    gone = [r for r in idiff.rows if r.kind == S.ETHTOOL and r.status == S.GONE]
    assert len(gone) == removed and all("queue_2" in r.name or "queue_3" in r.name for r in gone)
    assert all(r.delta is None for r in gone)
    assert any(c.name == "nic_channels" for c in idiff.changes)


def test_a_changed_statistic_set_blocks_deltas_of_counters_summed_from_it(tmp_path):
    def grow(i, stats):
        if i == 1:
            stats["rx_vport_rdma_unicast_packets_new"] = 1  # a new name: the set changed
            stats["rx_out_of_buffer"] += 5
    idiff = only(S.diff(*mlx5_snapshots(tmp_path, change=grow)))
    assert idiff.stat_set_changes == ((S.ETHTOOL, 1, 0),)
    r = row(idiff, "nic_rx_out_of_buffer_drops_total")
    assert (r.status, r.delta) == (STAT_SET_CHANGED, None)
    assert row(idiff, "rx_out_of_buffer", S.ETHTOOL).delta == 5  # same name, same counter
    assert row(idiff, "rx_vport_rdma_unicast_packets_new", S.ETHTOOL).status == S.NEW


def test_a_replaced_interface_has_no_deltas_and_a_renamed_one_is_followed(tmp_path):
    a, b = mlx5_snapshots(tmp_path)

    def retag(snap, **identity):
        (iface,) = snap.polls[0].interfaces
        iface = dataclasses.replace(iface, identity=dataclasses.replace(iface.identity,
                                                                        **identity))
        return dataclasses.replace(snap, polls=(dataclasses.replace(snap.polls[0],
                                                                    interfaces=(iface,)),))
    idiff = only(S.diff(a, retag(b, ifindex=99)))
    assert INTERFACE_REPLACED in idiff.flags
    assert {r.status for r in idiff.rows} == {INTERFACE_REPLACED}
    d = S.diff(a, retag(b, device="ens2f0np0", firmware_version="28.47.1000"))
    idiff = only(d)
    assert (idiff.device, d.only_a, d.only_b) == ("ens2f0np0", (), ())
    changed = {c.name: (c.before, c.after) for c in idiff.changes}
    assert changed["identity.device"] == ("eth2", "ens2f0np0")
    assert changed["identity.firmware_version"][1] == "28.47.1000"


# --------------------------------------------------------------------------- atomic writes


@pytest.fixture
def small_fs(tmp_path):
    """A 64 KiB tmpfs: a full disk on demand."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_leaves_no_partial_file_and_says_so(tmp_path, small_fs):
    small, big = mlx5_snapshots(tmp_path, polls=1, channels=1)[0], \
        mlx5_snapshots(tmp_path, polls=1, channels=63)[0]
    target = small_fs / "snap.json"
    S.save(small, target)
    with pytest.raises(S.SnapshotError) as e:
        S.save(big, target)
    message = str(e.value)
    assert message.startswith(f"{target}: cannot write: No space left on device (ENOSPC)")
    assert "the existing file is unchanged" in message
    assert os.listdir(small_fs) == ["snap.json"]
    assert S.load(target) == small
    r = cli("snapshot", "--interfaces.include=lo", "-o", str(small_fs / "x" / "s.json"))
    # A missing directory is a usage error, found before polling: exit 2, one line.
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"{small_fs / 'x' / 's.json'}: no directory {small_fs / 'x'}" in r.stderr


def test_an_error_at_fsync_removes_the_temporary_file(tmp_path, monkeypatch):
    (snap,) = mlx5_snapshots(tmp_path, polls=1)
    out = tmp_path / "out"
    out.mkdir()

    def failing_fsync(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(S.SnapshotError, match=r"out/s.json.gz: cannot write: .* \(EIO\); "
                                              r"nothing was written$"):
        S.save(snap, out / "s.json.gz")
    assert os.listdir(out) == []


# --------------------------------------------------------------------------- damaged files


@pytest.fixture(scope="module")
def good_bytes(tmp_path_factory):
    return S.encode(mlx5_snapshots(tmp_path_factory.mktemp("good"), polls=1, channels=1)[0])


@pytest.mark.parametrize("mangle, message", [
    (lambda b: b"", re.escape("empty file")),
    (lambda b: b"hello", re.escape("not valid JSON")),
    (lambda b: b[:len(b) // 2], re.escape("not valid JSON (line")),
    (lambda b: gzip.compress(b)[:-20], re.escape("truncated or corrupt gzip data")),
    (lambda b: b"\xff\xfe\x00garbage", re.escape("not ")),
    (lambda b: b'{"format": "prometheus"}', re.escape("format: expected 'nicwatch-snapshot'")),
    (lambda b: b.replace(b'"version":1', b'"version":7'), re.escape("format version 7 is newer")),
    (lambda b: b.replace(b'"raw":8330117', b'"raw":-1'),
     r"polls\[0\]\.interfaces\[0\]\.counters\[\d+\]\.raw: expected an integer from 0 to "
     r"2\^64-1, got -1$"),
    (lambda b: b.replace(b'"raw":8330117', f'"raw":{2 ** 200}'.encode()),
     r"counters\[\d+\]\.raw: expected an integer from 0 to 2\^64-1, got 16069"),
    (lambda b: b.replace(b'"raw":8330117', f'"raw":{2 ** 64}'.encode()),
     r"counters\[\d+\]\.raw: expected an integer from 0 to 2\^64-1, got 18446744073709551616$"),
    (lambda b: re.sub(rb'("values":\[)\d+', rb"\g<1>18446744073709551616", b, count=1),
     r"raw\.\w+\.values: expected a list of integers from 0 to 2\^64-1"),
    (lambda b: re.sub(rb'"value":[-0-9.e]+', b'"value":NaN', b, count=1),
     r"gauges\[\d+\]\.value: expected a finite number, got NaN$"),
    (lambda b: re.sub(rb'"value":[-0-9.e]+', b'"value":1e400', b, count=1),
     r"gauges\[\d+\]\.value: expected a finite number, got Infinity$"),
    (lambda b: re.sub(rb'"raw":\{"(\w+)":\{"names":\d+', rb'"raw":{"\\u001b[2J":{"names":-1', b,
                      count=1),
     r"interfaces\[0\]\.raw\.\\x1b\[2J\.names: expected an index into stat_names"),
    (lambda b: b.replace(b'"monotonic":1000.0', b'"monotonic":1e300'),
     r"polls\[0\]\.monotonic: expected a time from 1970 to 9999, got 1e\+300$"),
    (lambda b: b.replace(b'"polls":[', b'"polls_":['), re.escape("top level: missing key 'polls'")),
    (lambda b: b.replace(b'"monotonic":1000.0', b'"monotonic":"soon"'),
     r"polls\[0\]\.monotonic: expected a time from 1970 to 9999, got \"soon\""),
])
def test_a_damaged_file_gives_one_clear_line_naming_it(tmp_path, good_bytes, mangle, message):
    path = tmp_path / "damaged.json"
    path.write_bytes(mangle(good_bytes))
    with pytest.raises(S.SnapshotError) as e:
        S.load(path)
    assert str(e.value).startswith(f"{path}: ")
    assert re.search(message, str(e.value))


def _bomb(path, megabytes: int) -> None:
    """A gzip file of ``megabytes`` MiB of zeros: about 1/1000 of that on disk."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with open(path, "wb") as f:
        for _ in range(megabytes):
            f.write(z.compress(bytes(1 << 20)))
        f.write(z.flush())


def test_a_gzip_bomb_is_refused_at_the_size_limit_with_bounded_memory(tmp_path, good_bytes):
    (tmp_path / "a.json").write_bytes(good_bytes)
    _bomb(tmp_path / "bomb.json.gz", (S.MAX_SNAPSHOT_BYTES >> 20) + 64)
    assert (tmp_path / "bomb.json.gz").stat().st_size < 1 << 20
    # VmHWM is this image's own peak; ru_maxrss would carry pytest's across the exec
    r = subprocess.run([PYTHON, "-c", "import re, sys\n"
                        "from nicwatch.cli.main import main\n"
                        "try:\n    code = main(sys.argv[1:])\n"
                        "except SystemExit as e:\n    code = e.code\n"
                        "status = open('/proc/self/status').read()\n"
                        "print(re.search(r'VmHWM:\\s+(\\d+) kB', status)[1])\n"
                        "sys.exit(code)\n", "diff", "a.json", "bomb.json.gz"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"nicwatch: error: bomb.json.gz: larger than "
                        f"{S.MAX_SNAPSHOT_BYTES >> 20} MiB uncompressed, the limit for a "
                        "snapshot document\n")
    peak_kib = int(r.stdout.split()[-1])
    assert peak_kib < (S.MAX_SNAPSHOT_BYTES >> 10) + (200 << 10)  # the limit + 200 MiB


def test_an_oversized_plain_file_is_refused_without_reading_it_all(tmp_path, good_bytes):
    (tmp_path / "a.json").write_bytes(good_bytes)
    with open(tmp_path / "huge.json", "wb") as f:  # sparse: no disk space
        f.truncate(8 << 30)
    start = time.monotonic()
    r = cli("diff", "a.json", "huge.json", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"nicwatch: error: huge.json: larger than {S.MAX_SNAPSHOT_BYTES >> 20} "
                        "MiB uncompressed, the limit for a snapshot document\n")
    assert time.monotonic() - start < 30  # 8 GiB would take far longer (and the memory)


def test_gzip_members_and_padding_still_decode(good_bytes):
    half = len(good_bytes) // 2
    two = gzip.compress(good_bytes[:half]) + gzip.compress(good_bytes[half:]) + bytes(16)
    assert S.decode(two, "two.json.gz") == S.decode(good_bytes, "one.json")


def test_diff_escapes_control_characters_in_names(tmp_path, good_bytes):
    """A file (or the kernel: any byte but '/', ':' and whitespace) can name an interface
    with escape sequences; the text output shows them escaped, never raw."""
    hostile = good_bytes.replace(b'"device":"eth2"', b'"device":"eth2\\u001b]0;owned\\u0007'
                                 b'\\u001b[2J\\u202e"')
    assert hostile != good_bytes
    (tmp_path / "a.json").write_bytes(hostile)
    (tmp_path / "b.json").write_bytes(hostile)
    r = cli("diff", "a.json", "b.json", "--all", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\u202e" not in r.stdout
    assert "eth2\\x1b]0;owned\\x07\\x1b[2J\\u202e (" in r.stdout


def test_the_cli_reports_a_damaged_file_in_one_line(tmp_path, good_bytes):
    (tmp_path / "a.json").write_bytes(good_bytes)
    (tmp_path / "b.json").write_bytes(good_bytes[:-100])
    r = cli("diff", "a.json", "b.json", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("nicwatch: error: b.json: not valid JSON")
    assert r.stderr.count("\n") == 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), compress=st.booleans())
def test_any_truncation_or_corruption_is_a_clear_error(good_bytes, data, compress):
    raw = gzip.compress(good_bytes, mtime=0) if compress else good_bytes
    if data.draw(st.booleans(), label="truncate"):
        damaged = raw[:data.draw(st.integers(0, len(raw) - 1), label="at")]
    else:
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        damaged = raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1:]
    try:
        snap = S.decode(damaged, "damaged.json")
    except S.SnapshotError as e:
        assert str(e).startswith("damaged.json: ")
    else:
        assert isinstance(snap, S.Snapshot)


# --------------------------------------------------------------------------- any pair diffs

_TEXT = st.one_of(st.none(), st.text(max_size=6))
_KEYS = st.builds(
    SeriesKey, st.sampled_from([*(f.name for f in FAMILIES.values() if f.type == "counter")][:8]
                               + ["nic_from_a_newer_nicwatch_total"]),
    st.sampled_from([(), (("priority", "3"),), (("lane", "0"),)]))
_COUNTERS = st.dictionaries(_KEYS, st.builds(
    CounterValue, st.integers(0, 2**64 - 1), st.sampled_from(["sysfs", "ethtool_ioctl"]),
    st.sampled_from([32, 64]), st.sampled_from([1.0, 1e-6, 4.0])), max_size=5)
_STATSETS = st.lists(st.sampled_from(["rx_a", "rx_b", "tx_a", "rx_a"]), max_size=4).flatmap(
    lambda names: st.builds(StatSet, st.just(tuple(names)),
                            st.tuples(*[st.integers(0, 2**64 - 1)] * len(names)),
                            st.integers(0, 3)))
_INTERFACES = st.builds(
    S.InterfaceSnapshot,
    st.builds(NicIdentity, st.sampled_from(["eth0", "eth1", "eth2"]),
              st.sampled_from([None, 2, 3]), st.sampled_from([None, "mlx5_core", "ice"]),
              _TEXT, _TEXT, st.sampled_from([None, "0000:41:00.0"]),
              st.sampled_from([None, "b8:3f:d2:41:00:00"]), _TEXT),
    st.floats(0, 2e9), st.floats(0, 1e6), _COUNTERS,
    st.dictionaries(_KEYS, st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    st.dictionaries(st.sampled_from([S.ETHTOOL, S.NETDEV]), _STATSETS, max_size=2),
    st.dictionaries(st.text(max_size=4), st.one_of(st.none(), st.integers(), _TEXT),
                    max_size=2))
_SNAPSHOTS = st.builds(
    S.Snapshot,
    st.builds(HostInfo, st.sampled_from(["a", None]), st.sampled_from(["boot-1", "boot-2", None]),
              st.one_of(st.none(), st.floats(0, 2e9)), _TEXT, _TEXT),
    st.just("0.1.0"), _TEXT,
    st.lists(st.builds(S.Poll, st.floats(0, 2e9), st.floats(0, 1e6),
                       st.lists(_INTERFACES, max_size=3).map(tuple)),
             min_size=1, max_size=2).map(tuple),
    st.booleans())


@settings(max_examples=100, deadline=None)
@given(a=_SNAPSHOTS, b=_SNAPSHOTS)
def test_any_pair_of_valid_snapshots_round_trips_and_diffs(a, b):
    assert S.decode(S.encode(a), "a.json") == a
    try:
        d = S.diff(a, b)
    except S.DiffError as e:
        # refused: another boot, B before A, or B closer to A than MIN_DIFF_SECONDS
        assert "boots" in str(e) or "before A" in str(e) or "that close" in str(e)
        return
    json.dumps(diff_json(d, True))
    format_diff(d, "a.json", "b.json", True)
    for idiff in d.interfaces:
        for r in idiff.rows:
            assert (r.delta is None) == (r.status != S.OK)
            assert r.delta is None or r.delta >= 0


KILLED_WRITER = """
import os, signal, sys
from nicwatch.snapshot.atomicfile import AtomicFile
f = AtomicFile(sys.argv[1])
f.write(b"half of a file")
f._file.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_writer(path) -> str:
    """A process killed in the middle of an atomic write of ``path``; the name of the
    temporary file it left."""
    before = set(os.listdir(path.parent))
    subprocess.run([PYTHON, "-c", KILLED_WRITER, str(path)], check=False)
    (left,) = set(os.listdir(path.parent)) - before
    return left


def test_temporary_files_of_killed_writers_are_cleaned_up(tmp_path):
    """A kill during an atomic write leaves `.NAME.XXXXXXXX.tmp` behind. The daemon removes
    its state file's at start (it is the only writer); a snapshot write removes those of its
    target older than 10 minutes (a younger one may be another writer's, still running).
    Nothing else in the directory is touched."""
    state = tmp_path / "identity.json"
    stale_state = killed_writer(state)
    decoys = [".identity.json.short.tmp", "identity.json.abcd1234.tmp",
              ".identity.json.abcd1234.tmp.bak", ".other.json.abcd1234.tmp"]
    for name in decoys:
        (tmp_path / name).write_text("not ours")
    (tmp_path / ".identity.json.zzzz9999.tmp").symlink_to(tmp_path / decoys[0])
    with socket.socket() as busy:  # the daemon starts, then cannot bind: exit 2
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        r = subprocess.run([NICWATCH, "serve", f"--state.file={state}", "--log.format=json",
                            f"--web.listen-address=127.0.0.1:{busy.getsockname()[1]}"],
                           capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert '"event": "stale_temp_files_removed"' in r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted([*decoys, ".identity.json.zzzz9999.tmp"])
    assert stale_state not in os.listdir(tmp_path)

    out = tmp_path / "snap.json"
    old, fresh = killed_writer(out), killed_writer(out)
    hour_ago = time.time() - 3600
    os.utime(tmp_path / old, (hour_ago, hour_ago))
    assert cli("snapshot", "--interfaces.include=lo", "-o", str(out)).returncode == 0
    left = set(os.listdir(tmp_path))
    assert old not in left and fresh in left and "snap.json" in left
