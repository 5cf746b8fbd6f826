"""devlink health reporters -> series: a reporter's counts are counters, its state one gauge
per state, its stored dump a timestamp; through the collector, tracker and renderer on a
sysfs fixture of a dual-port ConnectX-6 with the kernel-layout devlink double."""

from nicwatch.collect import Collector, Selection
from nicwatch.exporter.render import SelfStats, render
from nicwatch.model import Reading, SeriesKey
from nicwatch.normalize import normalize
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.devlink import DevlinkSource
from nicwatch.sources.registry import ROOTED
from nicwatch.tracker import Tracker

from fixture_devlink import IFS, MLX5, KernelDouble, netclass
from paths import FIXTURES, SYSFS
from promtext import check_strict

RENAME = {"pci/0000:08:00.0": "pci/0000:01:00.0", "pci/0000:08:00.1": "pci/0000:01:00.1"}


def reading_of(nc) -> Reading:
    poll = Poll([nc])
    DevlinkSource(KernelDouble(MLX5, ifindexes=IFS)).read(poll)
    return Reading(device=nc.name, time=1.0, monotonic=1.0, netclass=nc, **poll.parts[nc.name])


def labels(port, reporter, handle="pci/0000:08:00.1", **extra):
    return tuple(sorted({"devlink": handle, "devlink_port": port, "reporter": reporter,
                         **extra}.items()))


def test_a_fatal_firmware_error_is_an_error_state_and_a_count():
    s = normalize(reading_of(netclass("enp8s0f1np1", 5, "0000:08:00.1")))
    key = labels("", "fw_fatal")
    assert s.counters[SeriesKey("nic_devlink_health_errors_total", key)].raw == 1
    assert s.counters[SeriesKey("nic_devlink_health_recoveries_total", key)].raw == 0
    state = {dict(k.labels)["state"]: v for k, v in s.gauges.items()
             if k.metric == "nic_devlink_health_reporter_state"
             and dict(k.labels)["reporter"] == "fw_fatal"}
    assert state == {"healthy": 0.0, "error": 1.0, "unknown": 0.0}
    assert s.gauges[SeriesKey("nic_devlink_health_last_dump_timestamp_seconds", key)] == (
        1793628542.0)  # 2026-11-02 14:09:02 UTC
    assert s.gauges[SeriesKey("nic_devlink_health_auto_recover", key)] == 1.0
    # fw has no recover operation: no auto_recover series rather than a made-up 0, and
    # whether a reporter can be recovered at all is its own gauge (known either way)
    assert SeriesKey("nic_devlink_health_auto_recover", labels("", "fw")) not in s.gauges
    assert s.gauges[SeriesKey("nic_devlink_health_recoverable", labels("", "fw"))] == 0.0
    assert s.gauges[SeriesKey("nic_devlink_health_recoverable", labels("", "vnic"))] == 0.0
    assert s.gauges[SeriesKey("nic_devlink_health_recoverable", key)] == 1.0
    assert s.gauges[SeriesKey("nic_devlink_health_recoverable", labels("131071", "tx"))] == 1.0
    # no dump stored: no timestamp
    assert SeriesKey("nic_devlink_health_last_dump_timestamp_seconds",
                     labels("131071", "rx")) not in s.gauges
    info = [dict(k.labels) for k in s.gauges if k.metric == "nic_devlink_port_info"]
    assert info == [{"devlink": "pci/0000:08:00.1", "devlink_port": "131071",
                     "flavour": "physical", "number": "1", "split_subport": ""}]


def test_an_interface_without_devlink_has_no_devlink_series():
    s = normalize(reading_of(netclass("veth0", 9, None)))
    assert not any(k.metric.startswith("nic_devlink") for k in (*s.counters, *s.gauges))


def test_collector_tracker_and_renderer_serve_the_reporters():
    root = SYSFS / "cx6-dual-slot-x8"
    double = KernelDouble(MLX5, ifindexes=IFS, rename=RENAME)
    sources = [DevlinkSource(double), *(o.open(SourceOptions(sysfs=str(root))) for o in ROOTED)]
    collector = Collector(root, Selection(include=".*"), sources=sources,
                          clock=lambda: 1_790_000_000.0,
                          monotonic=iter(range(0, 1000, 5)).__next__)
    tracker = Tracker()
    try:
        for _ in range(2):
            tracked = tracker.update(collector.poll().samples)
    finally:
        collector.close()
    assert double.closed
    stats = SelfStats(polls=2, last_poll_time=1_790_000_005.0, durations={"read": 0.001},
                      source_errors={})
    text = render(tracked, stats).decode()
    check_strict(text, render(tracked, stats, openmetrics=True).decode())
    assert ('nic_devlink_health_errors_total{device="ens1f0np0",devlink="pci/0000:01:00.0",'
            'devlink_port="65535",reporter="tx"} 3') in text
    assert ('nic_devlink_health_reporter_state{device="ens1f1np1",devlink="pci/0000:01:00.1",'
            'devlink_port="",reporter="fw_fatal",state="error"} 1') in text
    # an error counter's peak rate: at --collector.detail=full (docs/metrics.md, Detail tiers)
    assert 'nic_devlink_health_errors_peak_per_second' not in text
    full = render(tracked, stats, detail="full").decode()
    assert 'nic_devlink_health_errors_peak_per_second{device="ens1f0np0"' in full
    assert FIXTURES.exists()


def test_show_names_the_reporters_that_are_not_fine():
    from nicwatch.cli.show import format_table
    first = normalize(reading_of(netclass("enp8s0f0np0", 4, "0000:08:00.0")))
    second = normalize(reading_of(netclass("enp8s0f1np1", 5, "0000:08:00.1")))
    bare = normalize(reading_of(netclass("veth0", 9, None)))
    lines = format_table([first, second, bare]).splitlines()
    column = lines[0].index("HEALTH")
    after = lines[0][column + len("HEALTH"):]  # the next column (if any) starts after blanks
    end = column + len("HEALTH") + (len(after) - len(after.lstrip()) if after.strip() else 999)
    assert [line[column:end].strip() for line in lines[1:4]] == [
        "tx 3", "fw_fatal:error 1", "-"]


def test_snapshots_keep_the_reporters_and_diff_their_counts(tmp_path):
    from nicwatch.snapshot import files as S

    from snapshot_helpers import HOST
    root = SYSFS / "cx6-dual-slot-x8"
    double = KernelDouble(MLX5, ifindexes=IFS, rename=RENAME)
    wall = iter(range(1_790_000_000, 1_790_001_000, 5))
    collector = Collector(root, Selection(include=".*"), sources=[DevlinkSource(double)],
                          clock=lambda: float(next(wall)),
                          monotonic=iter(range(0, 1000, 5)).__next__)
    snaps = []
    for i in range(2):
        if i == 1:  # two more TX timeouts, both recovered
            tx = next(r for r in double.reporters if r.port == 65535 and r.name == "tx")
            tx.fields.update(error="5", recover="5")
        samples = collector.poll().samples
        snaps.append(S.build(HOST, [S.poll_of(samples, samples[0].time, samples[0].monotonic)],
                             f"devlink {i}"))
    S.save(snaps[1], tmp_path / "b.json")
    back = S.load(tmp_path / "b.json")
    assert back == snaps[1]
    iface = next(i for i in back.polls[0].interfaces if i.identity.device == "ens1f1np1")
    assert [r["name"] for r in iface.state["devlink_health"] if r["state"] == "error"] == [
        "fw_fatal"]
    assert iface.state["devlink_port"]["index"] == 131071
    d = S.diff(snaps[0], back)
    first = next(x for x in d.interfaces if x.device == "ens1f0np0")
    rows = {dict(r.labels)["reporter"]: r for r in first.rows
            if r.kind == "counter" and r.name == "nic_devlink_health_errors_total"
            and dict(r.labels)["devlink_port"] == "65535"}
    assert (rows["tx"].before, rows["tx"].after, rows["tx"].delta) == (3, 5, 2)
    assert rows["rx"].delta == 0
