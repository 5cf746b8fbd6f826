"""Field truth: each canonical family means one thing on every driver and from every source.

* Where the kernel's standard ethtool-netlink statistic and a driver's own `ethtool -S` name
  can feed one family, the driver table says what the driver fills the netlink statistic
  with (read from the kernel source); the two must be the same counters, so the value does
  not change meaning with the kernel version.
* No raw hardware counter lands in two canonical families, including through a netlink
  statistic the driver fills from it, or through another name for the same register.

Inputs are the real published dumps in tests/fixtures/published, the drivers' names in
tests/fixtures/ethtool, and netlink replies built byte for byte in the kernel's layout
(include/uapi/linux/ethtool_netlink.h) and decoded by the real source module.
"""

import re
import struct

import pytest
from test_ethtool_netlink import nest, nlattr, u64

from nicwatch.metrics import FAMILIES
from nicwatch.model import DriverInfo, NetClass, Reading, StatSet
from nicwatch.normalize import normalize
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.engine import compile_plan
from nicwatch.normalize.standard import ETHTOOL_NETLINK
from nicwatch.pasted.ethtool_text import parse
from nicwatch.sources import ethtool_netlink as en

from paths import FIXTURES

# Name lists of each driver: the project's fixtures and the real published dumps.
NAME_LISTS = {
    "mlx5_core": ["ethtool/mlx5_core.txt", "ethtool/mlx5_core-global-pause.txt",
                  "published/ethtool-S/mlx5_core-cx4lx-ethq-issue8.txt"],
    "ice": ["ethtool/ice.txt", "ethtool/ice-unified.txt",
            "published/ethtool-S/ice-e810-ethq-tests.txt"],
    "i40e": ["ethtool/i40e.txt", "published/ethtool-S/i40e-ethq-tests-v2.3.2k.txt"],
    "ixgbe": ["ethtool/ixgbe.txt"],
    "bnxt_en": ["ethtool/bnxt_en.txt", "published/ethtool-S/bnxt_en-ethq-tests-cloudflare.txt"],
    "ena": ["ethtool/ena.txt", "published/ethtool-S/ena-ethq-issue15.txt"],
    "be2net": ["ethtool/be2net.txt", "published/ethtool-S/be2net-emulex-ethq-issue7.txt"],
    "veth": ["ethtool/veth.txt"],
    "virtio_net": ["ethtool/virtio_net.txt"],
    "e1000e": ["ethtool/e1000e.txt"],  # from the lab (tests/fixtures/ethtool/README.md)
}
CASES = [(d, f) for d, files in NAME_LISTS.items() for f in files]


def stats_of(path: str) -> StatSet:
    parsed = parse((FIXTURES / path).read_text())
    assert parsed.problems == ()
    return parsed


def families_by_raw(driver: str, names: tuple[str, ...]) -> dict[str, set[tuple]]:
    """Raw name -> the canonical series it feeds, through the table and through netlink."""
    table = TABLES[driver]
    plan = compile_plan("ethtool_ioctl", table.rules, names, table)
    out: dict[str, set[tuple]] = {}
    for e in plan.counters:
        out.setdefault(names[e.index].strip(), set()).add(e.key.metric)
    for fill in table.netlink:
        family = fill.metric  # the driver's own fill of this key
        for raw in fill.raw:
            if raw in names and family is not None:
                out.setdefault(raw, set()).add(family)
    return out


def test_every_table_covers_the_drivers_listed():
    assert set(NAME_LISTS) == set(TABLES)


@pytest.mark.parametrize("driver,path", CASES)
def test_no_raw_counter_feeds_two_families(driver, path):
    names = tuple(n.strip() for n in stats_of(path).names)
    fed = families_by_raw(driver, names)
    assert {raw: f for raw, f in fed.items() if len(f) > 1} == {}
    # Names reading one register: together they feed at most one family.
    for group in TABLES[driver].same_register:
        families = set().union(*(fed.get(n, set()) for n in group.names))
        assert len(families) <= 1, (group.names, families)


@pytest.mark.parametrize("driver", sorted(d for d, t in TABLES.items() if t.netlink))
def test_netlink_fill_is_the_same_counters_as_the_table(driver):
    """The netlink statistic lands in the family the table gives its raw counters, and that
    family's series is made of exactly those counters: both sources agree in value."""
    table = TABLES[driver]
    for fill in table.netlink:
        assert any(re.fullmatch(r.pattern, fill.key) for r in ETHTOOL_NETLINK), fill.key
        assert fill.evidence, fill
        names = tuple(fill.raw)
        plan = compile_plan("ethtool_ioctl", table.rules, names, table)
        mapped = {(e.key.metric, e.key.labels) for e in plan.counters}
        if fill.metric is None:
            # a sum of counters the table keeps apart (ice: XON + XOFF, issue #38): each
            # feeds a family of its own, and the sum is not exported
            assert len(mapped) == len(fill.raw) > 1, (fill.key, mapped)
            continue
        assert mapped == {(fill.metric, fill.labels)}, (fill.key, mapped)
        assert len(plan.counters) == len(fill.raw)
        # In every real name list of the driver that has these counters, nothing else feeds
        # the same series.
        for path in NAME_LISTS[driver]:
            all_names = tuple(n.strip() for n in stats_of(path).names)
            if not set(fill.raw) <= set(all_names):
                continue
            plan = compile_plan("ethtool_ioctl", table.rules, all_names, table)
            feeding = {all_names[e.index] for e in plan.counters
                       if (e.key.metric, e.key.labels) == (fill.metric, fill.labels)}
            assert feeding == set(fill.raw), (path, fill.key, feeding)


def test_every_rule_names_its_evidence():
    for driver, table in TABLES.items():
        for rule in table.rules:
            assert rule.evidence, (driver, rule.pattern)
            assert rule.metric in FAMILIES
    for rule in ETHTOOL_NETLINK:
        assert rule.evidence


# --- the real pipeline with kernel-layout netlink replies ----------------------------------


def pause_reply(tx_frames: int, rx_frames: int) -> bytes:
    """ETHTOOL_MSG_PAUSE_GET_REPLY attributes with ETHTOOL_FLAG_STATS: AUTONEG, RX, TX (u8)
    and the STATS nest (TX_FRAMES = 2, RX_FRAMES = 3, u64)."""
    return (nlattr(en.ETHTOOL_A_PAUSE_AUTONEG, b"\0") + nlattr(en.ETHTOOL_A_PAUSE_RX, b"\1")
            + nlattr(en.ETHTOOL_A_PAUSE_TX, b"\1")
            + nest(en.ETHTOOL_A_PAUSE_STATS, u64(en.ETHTOOL_A_PAUSE_STAT_TX_FRAMES, tx_frames),
                   u64(en.ETHTOOL_A_PAUSE_STAT_RX_FRAMES, rx_frames)))


def phy_stats_reply(symbol_errors: int) -> bytes:
    """ETHTOOL_MSG_STATS_GET_REPLY with group ETHTOOL_STATS_ETH_PHY (id 0) and its one stat,
    ETHTOOL_A_STATS_ETH_PHY_5_SYM_ERR (index 0), in a GRP_STAT nest."""
    group = (nlattr(en.ETHTOOL_A_STATS_GRP_ID, struct.pack("=I", 0))
             + nest(en.ETHTOOL_A_STATS_GRP_STAT, u64(0, symbol_errors)))
    return nest(en.ETHTOOL_A_STATS_GRP, group)


def reading(driver: str, stats: StatSet, netlink_parts=()) -> Reading:
    info = None
    if netlink_parts:
        draft = en._Draft()
        for part in netlink_parts:
            draft.add(dict(part))
        info = draft.build()
    nc = NetClass("p0", 4, "02:00:00:00:00:01", "up", 1500, 100000, "full", True, 1, 1, 0,
                  "devices/pci0000:00/0000:00:01.0/0000:01:00.0", "0000:01:00.0", driver, {})
    return Reading("p0", 0.0, 0.0, nc,
                   DriverInfo(driver, "k", "fw", "0000:01:00.0", len(stats.names)),
                   None, StatSet(stats.names, stats.values, 1), None, None, info)


def value(sample, metric, **labels):
    v = sample.counters.get(next((k for k in sample.counters if k.metric == metric
                                  and dict(k.labels) == labels), None))
    return None if v is None else (v.raw * v.scale, v.source)


def raw_value(stats: StatSet, name: str) -> int:
    return stats.values[[n.strip() for n in stats.names].index(name)]


def test_ice_pause_means_the_same_with_and_without_the_kernels_statistic():
    """ice_get_pause_stats (~6.19) reports link_xon + link_xoff: one pause episode counted
    twice. nicwatch keeps XOFF (the pause) and XON (its release) apart from `ethtool -S`
    (issue #38), on an old kernel and a new one alike: the kernel's sum is not exported."""
    stats = stats_of("ethtool/ice.txt")
    rx = raw_value(stats, "link_xon_rx.nic") + raw_value(stats, "link_xoff_rx.nic")
    tx = raw_value(stats, "link_xon_tx.nic") + raw_value(stats, "link_xoff_tx.nic")
    old_kernel = normalize(reading("ice", stats))
    new_kernel = normalize(reading("ice", stats, [en.pause_part(pause_reply(tx, rx))]))
    for sample in (old_kernel, new_kernel):
        assert value(sample, "nic_rx_pause_frames_total") == (
            raw_value(stats, "link_xoff_rx.nic"), "ethtool_ioctl")
        assert value(sample, "nic_rx_pause_xon_frames_total") == (
            raw_value(stats, "link_xon_rx.nic"), "ethtool_ioctl")
        assert value(sample, "nic_tx_pause_frames_total")[0] == 4411
        assert value(sample, "nic_tx_pause_xon_frames_total")[0] == 400


def test_mlx5_netlink_pause_is_not_802_3x_pause_on_a_pfc_port():
    """On a PFC-only ConnectX port the 802.3 group's PAUSE counter (= the kernel's pause
    statistic, mlx5e_stats_pause_get) equals the PFC frames: it must not show as global
    PAUSE, and must not be added to PFC."""
    stats = stats_of("ethtool/mlx5_core.txt")
    tx = raw_value(stats, "tx_pause_ctrl_phy")
    assert tx == raw_value(stats, "tx_prio3_pause")  # the same frames, counted twice
    for parts in ([], [en.pause_part(pause_reply(tx, raw_value(stats, "rx_pause_ctrl_phy")))]):
        sample = normalize(reading("mlx5_core", stats, parts))
        assert value(sample, "nic_tx_pause_frames_total") is None
        assert value(sample, "nic_tx_pause_ctrl_frames_total")[0] == tx
        assert value(sample, "nic_tx_pfc_frames_total", priority="3")[0] == tx
        assert "nic_tx_pause_frames_total" not in sample.supported


def test_mlx5_global_pause_is_802_3x_pause():
    stats = stats_of("published/ethtool-S/mlx5_core-cx4lx-ethq-issue8.txt")
    sample = normalize(reading("mlx5_core", stats))
    assert value(sample, "nic_rx_pause_frames_total") == (
        raw_value(stats, "rx_global_pause"), "ethtool_ioctl")


def test_mlx5_register_shared_by_global_and_priority_0_feeds_one_family():
    """en_stats.c reads *_global_pause from per_prio_counters[0]: if both names are listed,
    only the priority-0 PFC series carries the register."""
    names = ("rx_prio0_pause", "rx_global_pause", "rx_prio0_pause_duration",
             "rx_global_pause_duration")
    sample = normalize(reading("mlx5_core", StatSet(names, (5, 5, 7, 7), 1)))
    metrics = {(k.metric, k.labels) for k, v in sample.counters.items()
               if v.source == "ethtool_ioctl"}
    assert metrics == {("nic_rx_pfc_frames_total", (("priority", "0"),)),
                       ("nic_rx_pause_duration_seconds_total", (("priority", "0"),))}


def test_bnxt_symbol_errors_reported_as_ieee_stay_in_the_pcs_family():
    """bnxt_get_eth_phy_stats fills SymbolErrorDuringCarrier from rx_pcs_symbol_err, which
    the table maps to the PCS family: the netlink value goes there too, and the IEEE
    symbol-error family stays absent (it would be the same counter twice)."""
    stats = stats_of("published/ethtool-S/bnxt_en-ethq-tests-cloudflare.txt")
    pcs = raw_value(stats, "rx_pcs_symbol_err")
    reply = phy_stats_reply(pcs)
    sample = normalize(reading("bnxt_en", stats, [en.stats_part(reply)]))
    assert value(sample, "nic_rx_pcs_symbol_errors_total") == (pcs, "ethtool_netlink")
    assert value(sample, "nic_rx_symbol_errors_total") is None
    # mlx5 fills it from the IEEE counter: there it is the IEEE family.
    mlx5 = stats_of("ethtool/mlx5_core.txt")
    sample = normalize(reading("mlx5_core", mlx5,
                               [en.stats_part(phy_stats_reply(raw_value(mlx5,
                                                                        "rx_symbol_err_phy")))]))
    assert value(sample, "nic_rx_symbol_errors_total") == (11, "ethtool_netlink")
    assert value(sample, "nic_rx_pcs_symbol_errors_total") == (13, "ethtool_ioctl")


def test_intel_pfc_per_packet_buffer_is_a_traffic_class_not_a_priority():
    stats = stats_of("ethtool/ixgbe.txt")
    sample = normalize(reading("ixgbe", stats))
    assert value(sample, "nic_tx_pfc_tc_frames_total", tc="3")[0] == (
        raw_value(stats, "tx_pb_3_pxon") + raw_value(stats, "tx_pb_3_pxoff"))
    assert not any(k.metric.endswith("pfc_frames_total") for k in sample.counters)


# --- gauges are not counters ---------------------------------------------------------------

# Names that look like levels or states by their wording. Each such name in a real name list
# must be a gauge in its driver's table, or be listed here as a counter with the source
# that says so.
GAUGE_WORDING = re.compile(r"status|state|mode|util|avail|ifindex|temp|level|percent|_pct"
                           r"|reason|stalled|watermark", re.I)
COUNTERS_DESPITE_WORDING = {
    # en_stats.c mlx5e_pme_error_desc: module events of MLX5_MODULE_EVENT_ERROR_HIGH_TEMPERATURE
    ("mlx5_core", "module_high_temp"),
    # en_stats.c pcie_perf_stall_stats_desc: outbound_stalled_{reads,writes}_events
    ("mlx5_core", "outbound_pci_stalled_rd_events"),
    ("mlx5_core", "outbound_pci_stalled_wr_events"),
}


@pytest.mark.parametrize("driver,path", CASES)
def test_level_and_state_names_are_gauges(driver, path):
    table = TABLES[driver]
    gauges = [re.compile(g) for g in table.gauges]
    for name in (n.strip() for n in stats_of(path).names):
        if not GAUGE_WORDING.search(name) or (driver, name) in COUNTERS_DESPITE_WORDING:
            continue
        assert any(g.fullmatch(name) for g in gauges), f"{driver}: {name} is a gauge"


def test_a_per_queue_gauge_is_never_summed():
    """A level per queue keeps its queue number; summing levels means nothing."""
    from dataclasses import replace as dc_replace

    table = dc_replace(TABLES["ena"], gauges=(*TABLES["ena"].gauges, r"queue_\d+_rx_fill_level"))
    names = ("queue_0_rx_fill_level", "queue_1_rx_fill_level", "queue_0_rx_cnt",
             "queue_1_rx_cnt")
    from nicwatch.normalize.engine import RawOptions, apply_counters, apply_gauges
    plan = compile_plan("ethtool_ioctl", table.rules, names, table, RawOptions(enabled=True))
    gauges = apply_gauges(plan, (40, 60, 5, 7))
    counters = apply_counters(plan, (40, 60, 5, 7), "ethtool_ioctl")
    assert {dict(k.labels)["stat"]: v for k, v in gauges.items()} == {
        "queue_0_rx_fill_level": 40.0, "queue_1_rx_fill_level": 60.0}
    assert {dict(k.labels)["stat"]: v.raw for k, v in counters.items()} == {
        "queue_N_rx_cnt": 12}


def test_show_and_metrics_agree_on_a_pfc_only_connectx_port():
    """`nicwatch show` and /metrics say the same on the PFC-only ConnectX port: no 802.3x
    PAUSE, the PFC frames once."""
    from nicwatch.cli.show import format_table
    from nicwatch.collect import Collector, Selection
    from nicwatch.exporter.render import SelfStats, render
    from nicwatch.tracker import Tracker

    from fixture_ethtool import RecordedEthtool
    from promtext import parse_exposition, series

    dev = "enp33s0f0np0"
    ports = {dev: {"stats": FIXTURES / "ethtool" / "mlx5_core.txt", "driver": "mlx5_core",
                   "perm_address": "b8:3f:d2:a1:5c:2e"}}
    collector = Collector(FIXTURES / "sysfs" / "mlx5-rdma", Selection(),
                          ioctl=RecordedEthtool(ports), clock=lambda: 1.79e9,
                          monotonic=iter(range(0, 100, 5)).__next__)
    samples = collector.poll().samples
    header, row = format_table(samples).splitlines()[:2]
    columns = dict(zip(re.split(r"\s{2,}", header), re.split(r"\s{2,}", row), strict=False))
    assert columns["PAUSE RX/TX"] == "-/-"
    assert columns["PFC RX/TX"] == "52.1k/8.3M"  # rx_prio3_pause / tx_prio3_pause
    m = parse_exposition(render(Tracker().update(samples), SelfStats()).decode())
    assert series("nic_tx_pause_frames_total", device=dev) not in m
    assert m[series("nic_tx_pfc_frames_total", device=dev, priority="3")] == 8330117
    assert m[series("nic_stat_supported", device=dev, counter="nic_tx_pause_frames_total")] == 0
