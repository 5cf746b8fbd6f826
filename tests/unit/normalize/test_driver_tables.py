"""Driver tables: exact canonical values on fixtures with each driver's real names, table
validation against the metric contract, and engine properties on random stat sets."""

import dataclasses
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.metrics import CANONICAL_COUNTERS, FAMILIES
from nicwatch.model import (
    Channels,
    DriverInfo,
    EthtoolNetlinkInfo,
    NetClass,
    PauseParams,
    Reading,
    Rings,
    SeriesKey,
    StatSet,
)
from nicwatch.normalize import (
    NormalizeOptions,
    RawOptions,
    normalize,
    normalize_driver_stats,
)
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.engine import compile_plan
from nicwatch.normalize.rules import gauge_by_name
from nicwatch.normalize.standard import SYSFS_NET
from nicwatch.pasted.ethtool_text import parse

from paths import ETHTOOL

FIXTURES = ETHTOOL
RAW = RawOptions(enabled=True)
# Families that only the kernel's netdev counters (sysfs) may feed.
KERNEL_OWNED = {r.metric for r in SYSFS_NET}

# fixture -> driver
FIXTURE_DRIVER = {
    "mlx5_core.txt": "mlx5_core",
    "mlx5_core-global-pause.txt": "mlx5_core",
    "ice.txt": "ice",
    "ice-unified.txt": "ice",
    "i40e.txt": "i40e",
    "ixgbe.txt": "ixgbe",
    "bnxt_en.txt": "bnxt_en",
    "ena.txt": "ena",
    "be2net.txt": "be2net",
    "e1000e.txt": "e1000e",
    "veth.txt": "veth",
    "virtio_net.txt": "virtio_net",
}


def P(priority):
    return (("priority", str(priority)),)


ICE = {
    ("nic_phy_rx_bytes_total", ()): 9876543210,
    ("nic_phy_tx_bytes_total", ()): 8765432109,
    # XOFF (the pause) and XON (its release) apart: link_xoff, link_xon
    # (ice_get_pause_stats reports their sum, which nicwatch does not export).
    ("nic_rx_pause_frames_total", ()): 310,
    ("nic_rx_pause_xon_frames_total", ()): 300,
    ("nic_tx_pause_frames_total", ()): 4411,
    ("nic_tx_pause_xon_frames_total", ()): 400,
    **{("nic_rx_pfc_frames_total", P(p)): 127 if p == 3 else 0 for p in range(8)},
    **{("nic_tx_pfc_frames_total", P(p)): 4567 if p == 3 else 0 for p in range(8)},
    **{(f"nic_{d}_pfc_xon_frames_total", P(p)): 0 for p in range(8) for d in ("rx", "tx")},
    ("nic_rx_out_of_buffer_drops_total", ()): 1719,
    ("nic_rx_discards_total", ()): 812,
    ("nic_rx_crc_errors_total", ()): 2,
}

# Every canonical series each fixture must produce, with its value in the base unit.
EXPECTED = {
    "mlx5_core.txt": {
        ("nic_phy_rx_bytes_total", ()): 81234567890123,
        ("nic_phy_tx_bytes_total", ()): 79876543210987,
        ("nic_phy_rx_packets_total", ()): 0,  # rx_packets_phy
        ("nic_phy_tx_packets_total", ()): 1979,
        # The 802.3 group's PAUSE counters rise with PFC on a PFC-only port: not 802.3x PAUSE.
        ("nic_rx_pause_ctrl_frames_total", ()): 1204,
        ("nic_tx_pause_ctrl_frames_total", ()): 8330117,
        ("nic_rx_pfc_frames_total", P(3)): 52113,
        ("nic_tx_pfc_frames_total", P(3)): 8330117,
        ("nic_rx_pause_duration_seconds_total", P(3)): 1.834567,
        ("nic_tx_pause_duration_seconds_total", P(3)): 93251.780123,
        ("nic_pause_storm_events_total", (("kind", "warning"),)): 7,
        ("nic_pause_storm_events_total", (("kind", "error"),)): 1,
        ("nic_rx_out_of_buffer_drops_total", ()): 22817,
        ("nic_rx_discards_total", ()): 3141,
        ("nic_tx_discards_total", ()): 27,
        ("nic_rx_buffer_almost_full_events_total", ()): 96,
        ("nic_rx_crc_errors_total", ()): 5,
        ("nic_rx_symbol_errors_total", ()): 11,
        ("nic_rx_pcs_symbol_errors_total", ()): 13,
        ("nic_fec_corrected_bit_errors_total", ()): 987654321,
        # rx_err_lane_N_phy: mlx5's pre-FEC raw errors of lanes 0-3 (docs/link-physics.md).
        **{("nic_fec_lane_bit_errors_total", (("lane", str(lane)),)): value
           for lane, value in enumerate((0, 8413, 6359, 0))},
        ("nic_link_down_events_total", ()): 3,
    },
    "mlx5_core-global-pause.txt": {
        ("nic_phy_rx_bytes_total", ()): 2000,
        ("nic_phy_tx_bytes_total", ()): 1000,
        ("nic_rx_pause_ctrl_frames_total", ()): 640,
        ("nic_tx_pause_ctrl_frames_total", ()): 650,
        # *_global_pause: 802.3x PAUSE, listed only in global pause mode.
        ("nic_rx_pause_frames_total", ()): 640,
        ("nic_tx_pause_frames_total", ()): 650,
        ("nic_rx_pause_duration_seconds_total", (("priority", "global"),)): 2.0,
        ("nic_tx_pause_duration_seconds_total", (("priority", "global"),)): 0.0035,
        # "tx_pause_storm_warning_events " had a trailing space in old drivers.
        ("nic_pause_storm_events_total", (("kind", "warning"),)): 2,
        ("nic_pause_storm_events_total", (("kind", "error"),)): 0,
        ("nic_rx_out_of_buffer_drops_total", ()): 4294967295,
        ("nic_rx_discards_total", ()): 66,
        ("nic_rx_crc_errors_total", ()): 1,
        ("nic_link_down_events_total", ()): 4294967294,
    },
    # port frames: rx_unicast.nic + rx_multicast.nic + rx_broadcast.nic (0 + 2248 + 8113)
    "ice.txt": {**ICE, ("nic_phy_rx_packets_total", ()): 10361,
                ("nic_phy_tx_packets_total", ()): 4302 + 0 + 6059},
    "ice-unified.txt": {**ICE, ("nic_phy_rx_packets_total", ()): 4846 + 738 + 0,
                        ("nic_phy_tx_packets_total", ()): 0 + 8657 + 4549},
    "i40e.txt": {
        ("nic_phy_rx_bytes_total", ()): 35954341339678,
        ("nic_phy_tx_bytes_total", ()): 53144569624786,
        ("nic_rx_pause_frames_total", ()): 61,  # port.link_xoff_rx
        ("nic_rx_pause_xon_frames_total", ()): 50,  # port.link_xon_rx
        ("nic_tx_pause_frames_total", ()): 62,
        ("nic_tx_pause_xon_frames_total", ()): 52,
        **{("nic_rx_pfc_frames_total", P(p)): 1300 if p == 3 else 0 for p in range(8)},
        **{("nic_tx_pfc_frames_total", P(p)): 1400 if p == 3 else 0 for p in range(8)},
        **{(f"nic_{d}_pfc_xon_frames_total", P(p)): 0 for p in range(8) for d in ("rx", "tx")},
        # port.rx_unicast + rx_multicast + rx_broadcast
        ("nic_phy_rx_packets_total", ()): 0 + 6231 + 2123,
        ("nic_phy_tx_packets_total", ()): 8285 + 0 + 69,
        ("nic_rx_out_of_buffer_drops_total", ()): 5150,
        ("nic_rx_discards_total", ()): 777,
        ("nic_rx_crc_errors_total", ()): 4,
    },
    "ixgbe.txt": {
        ("nic_phy_rx_bytes_total", ()): 123456789012,
        ("nic_phy_tx_bytes_total", ()): 234567890123,
        ("nic_rx_pause_frames_total", ()): 41,  # rx_flow_control_xoff
        ("nic_rx_pause_xon_frames_total", ()): 40,  # rx_flow_control_xon
        ("nic_tx_pause_frames_total", ()): 4242,
        ("nic_tx_pause_xon_frames_total", ()): 4100,
        ("nic_phy_rx_packets_total", ()): 8829,  # rx_pkts_nic (GPRC)
        ("nic_phy_tx_packets_total", ()): 0,
        **{(f"nic_{d}_pfc_tc_xon_frames_total", (("tc", str(t)),)): 0
           for t in range(8) for d in ("rx", "tx")},
        # Per packet buffer (traffic class), not per priority: rx/tx_pb_N_pxoff.
        **{("nic_rx_pfc_tc_frames_total", (("tc", str(t)),)): 90 if t == 3 else 0
           for t in range(8)},
        **{("nic_tx_pfc_tc_frames_total", (("tc", str(t)),)): 90 if t == 3 else 0
           for t in range(8)},
        ("nic_rx_out_of_buffer_drops_total", ()): 606,
        ("nic_rx_discards_total", ()): 707,
        ("nic_rx_crc_errors_total", ()): 3,
    },
    "bnxt_en.txt": {
        ("nic_phy_rx_bytes_total", ()): 5776871859620,
        ("nic_phy_tx_bytes_total", ()): 7703944337895,
        ("nic_phy_rx_packets_total", ()): 0,  # rx_total_frames
        ("nic_phy_tx_packets_total", ()): 9570,
        ("nic_rx_pause_frames_total", ()): 17,
        ("nic_tx_pause_frames_total", ()): 18,
        **{("nic_rx_pfc_frames_total", P(p)): 3003 if p == 3 else 0 for p in range(8)},
        **{("nic_tx_pfc_frames_total", P(p)): 3004 if p == 3 else 0 for p in range(8)},
        **{("nic_rx_pause_duration_seconds_total", P(p)): 2.5 if p == 3 else 0
           for p in range(8)},
        **{("nic_tx_pause_duration_seconds_total", P(p)): 0.000125 if p == 3 else 0
           for p in range(8)},
        ("nic_pause_storm_events_total", (("kind", "continuous"),)): 2,
        ("nic_pause_storm_events_total", (("kind", "resume"),)): 2,
        ("nic_pause_storm_events_total", (("kind", "roce_continuous"),)): 1,
        ("nic_pause_storm_events_total", (("kind", "roce_resume"),)): 1,
        ("nic_rx_out_of_buffer_drops_total", ()): 90210,
        ("nic_rx_discards_total", ()): 4933,
        ("nic_tx_discards_total", ()): 12,
        ("nic_rx_buffer_almost_full_events_total", ()): 417,
        ("nic_rx_crc_errors_total", ()): 9,
        ("nic_rx_pcs_symbol_errors_total", ()): 21,
        ("nic_fec_corrected_bit_errors_total", ()): 31337,
        ("nic_fec_corrected_blocks_total", (("lane", "total"),)): 1500,
        ("nic_fec_uncorrectable_blocks_total", (("lane", "total"),)): 6,
        ("nic_link_down_events_total", ()): 2,
    },
    "ena.txt": {
        ("nic_cloud_allowance_exceeded_packets_total", (("limit", "bw_in"),)): 1001,
        ("nic_cloud_allowance_exceeded_packets_total", (("limit", "bw_out"),)): 1002,
        ("nic_cloud_allowance_exceeded_packets_total", (("limit", "pps"),)): 1003,
        ("nic_cloud_allowance_exceeded_packets_total", (("limit", "conntrack"),)): 1004,
        ("nic_cloud_allowance_exceeded_packets_total", (("limit", "linklocal"),)): 1005,
    },
    "be2net.txt": {
        ("nic_rx_pause_frames_total", ()): 12,
        ("nic_tx_pause_frames_total", ()): 13,
        ("nic_rx_crc_errors_total", ()): 4294967290,
        ("nic_rx_discards_total", ()): 14,
        ("nic_rx_out_of_buffer_drops_total", ()): 5 + 10 + 15 + 20,  # rxqN: rx_drops_no_frags
        # no port frame counter: rxqN: rx_pkts, txqN: tx_pkts summed
        ("nic_phy_rx_packets_total", ()): 8851 + 2392 + 0 + 9420,
        ("nic_phy_tx_packets_total", ()): 8529 + 0 + 4990 + 8207,
        # PFC only in total
        ("nic_rx_pfc_frames_total", (("priority", "all"),)): 0,
        ("nic_tx_pfc_frames_total", (("priority", "all"),)): 0,
    },
    "veth.txt": {},
    "virtio_net.txt": {},
    # Real output of QEMU's emulated 82574L (the lab, Linux 6.12): a hub neither sends PAUSE
    # nor corrupts frames, so the mapped counters are there and 0.
    "e1000e.txt": {
        ("nic_rx_pause_frames_total", ()): 0,  # rx_flow_control_xoff
        ("nic_rx_pause_xon_frames_total", ()): 0,  # rx_flow_control_xon
        ("nic_tx_pause_frames_total", ()): 0,
        ("nic_tx_pause_xon_frames_total", ()): 0,
        ("nic_rx_discards_total", ()): 0,  # rx_missed_errors (MPC)
        ("nic_phy_rx_packets_total", ()): 32,  # rx_packets = stats.gprc
        ("nic_phy_tx_packets_total", ()): 3022,
        ("nic_rx_crc_errors_total", ()): 0,
    },
}

WIDTH32 = {
    "mlx5_core.txt": {("nic_rx_out_of_buffer_drops_total", ()), ("nic_link_down_events_total", ())},
    "mlx5_core-global-pause.txt": {("nic_rx_out_of_buffer_drops_total", ()),
                                   ("nic_link_down_events_total", ())},
    "be2net.txt": {("nic_rx_pause_frames_total", ()), ("nic_tx_pause_frames_total", ()),
                   ("nic_rx_pfc_frames_total", (("priority", "all"),)),
                   ("nic_tx_pfc_frames_total", (("priority", "all"),)),
                   ("nic_rx_crc_errors_total", ()), ("nic_rx_discards_total", ())},
}

GAUGES = {
    "mlx5_core.txt": {"outbound_pci_stalled_rd": 12, "outbound_pci_stalled_wr": 0},
    "ice.txt": {"fdir_sb_status.nic": 1},
    "ice-unified.txt": {"port-rx-fdir-sideband-status": 1},
    "i40e.txt": {"port.fdir_atr_status": 1, "port.fdir_sb_status": 1, "port.tx_lpi_status": 0,
                 "port.rx_lpi_status": 1},
    "ena.txt": {"conntrack_allowance_available": 76957, "ena_srd_mode": 1,
                "ena_srd_resource_utilization": 3},
    "veth.txt": {"peer_ifindex": 7},
}

# Raw per-queue sums under their queue-less name, next to the driver's own totals.
QUEUE_SUMS = {
    "mlx5_core.txt": {"rxN_buff_alloc_err": 10, "rx_buff_alloc_err": 10},
    "bnxt_en.txt": {"[N]: rx_discards": 100},
    "be2net.txt": {"rxqN: rx_drops_no_frags": 50},
    "ena.txt": {"queue_N_rx_page_alloc_fail": 13},
    "virtio_net.txt": {"rxN_drops": 7, "rx_drops": 7, "rxN_kicks": 300, "rx_kicks": 300},
}


def load(fixture):
    stats = parse((FIXTURES / fixture).read_text())
    assert stats.problems == ()
    return stats


def run(fixture, raw=None):
    stats = load(fixture)
    return normalize_driver_stats(FIXTURE_DRIVER[fixture], stats.names, stats.values,
                                  raw or RawOptions())


def plan_sources(driver, names, raw=RAW):
    table = TABLES[driver]
    plan = compile_plan("ethtool_ioctl", table.rules, names, table, raw)
    sources = {}
    for e in (*plan.counters, *plan.gauges):
        sources.setdefault(e.key, []).append(e.index)
    return sources


def test_every_driver_has_a_fixture():
    assert set(FIXTURE_DRIVER.values()) == set(TABLES)
    assert set(FIXTURE_DRIVER) == {p.name for p in FIXTURES.glob("*.txt")} == set(EXPECTED)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_canonical_values(fixture):
    counters, _ = run(fixture)
    got = {(k.metric, k.labels): cv.raw * cv.scale for k, cv in counters.items()}
    assert got == pytest.approx(EXPECTED[fixture], rel=1e-12, abs=0)
    for k, cv in counters.items():
        assert isinstance(cv.raw, int)
        if cv.scale == 1:
            assert got[(k.metric, k.labels)] == EXPECTED[fixture][(k.metric, k.labels)]


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_32_bit_counters(fixture):
    counters, _ = run(fixture)
    wide32 = {(k.metric, k.labels) for k, cv in counters.items() if cv.width == 32}
    assert wide32 == WIDTH32.get(fixture, set())
    # A 32-bit series is never a sum: its wrap could not be told from a reset.
    sources = plan_sources(FIXTURE_DRIVER[fixture], load(fixture).names)
    assert all(len(sources[k]) == 1 for k, cv in counters.items() if cv.width == 32)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_gauges_are_not_counters(fixture):
    counters, gauges = run(fixture, RAW)
    expected = GAUGES.get(fixture, {})
    assert gauges == {SeriesKey("nic_driver_stat_value", (("stat", n),)): float(v)
                      for n, v in expected.items()}
    raw_counter_stats = {dict(k.labels).get("stat") for k in counters}
    assert not raw_counter_stats & set(expected)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_every_series_is_the_sum_of_its_sources(fixture):
    stats = load(fixture)
    counters, gauges = run(fixture, RAW)
    for key, indices in plan_sources(FIXTURE_DRIVER[fixture], stats.names).items():
        total = sum(stats.values[i] for i in indices)
        assert (counters[key].raw if key in counters else gauges[key]) == total, key


@pytest.mark.parametrize("fixture", sorted(QUEUE_SUMS))
def test_per_queue_sums(fixture):
    counters, _ = run(fixture, RAW)
    raw = {dict(k.labels)["stat"]: cv.raw for k, cv in counters.items()
           if k.metric == "nic_driver_stat_total"}
    assert {s: raw[s] for s in QUEUE_SUMS[fixture]} == QUEUE_SUMS[fixture]


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_queue_less_names_never_collide_with_driver_totals(fixture):
    driver, names = FIXTURE_DRIVER[fixture], load(fixture).names
    queues = [re.compile(q.pattern) for q in TABLES[driver].queues]
    per_queue = {n for n in names if any(q.fullmatch(n) for q in queues)}
    sources = plan_sources(driver, names)
    for key, indices in sources.items():
        if key.metric == "nic_driver_stat_total":
            fed = {names[i] for i in indices}
            assert fed <= per_queue or not fed & per_queue, key


def test_per_queue_opt_in():
    raw = RawOptions(per_queue=("[N]: rx_discards",))
    counters, _ = run("bnxt_en.txt", raw)
    per_queue = {dict(k.labels)["queue"]: cv.raw for k, cv in counters.items()
                 if k.metric == "nic_queue_stat_total"}
    assert per_queue == {"0": 10, "1": 20, "2": 30, "3": 40}


def test_old_and_new_names_give_the_same_series():
    for old, new, driver in (("rx_total_discard_pkts", "rx_total_ring_discards", "bnxt_en"),
                             ("port.rx_dropped", "port.rx_discards", "i40e")):
        a, _ = normalize_driver_stats(driver, (old,), (5,))
        b, _ = normalize_driver_stats(driver, (new,), (5,))
        assert a == b and len(a) == 1


def test_i40e_netdev_rx_dropped_is_not_out_of_buffer():
    counters, _ = normalize_driver_stats("i40e", ("rx_dropped", "rx_crc_errors"), (9, 9))
    assert counters == {}


# ---- table validation ----------------------------------------------------------------------

def _groups(pattern):
    return set(re.compile(pattern).groupindex)


@pytest.mark.parametrize("driver", sorted(TABLES))
def test_rules_match_the_contract(driver):
    for rule in TABLES[driver].rules:
        assert rule.metric in FAMILIES and rule.metric in CANONICAL_COUNTERS, rule
        assert rule.metric not in KERNEL_OWNED, rule
        family = FAMILIES[rule.metric]
        labels = (_groups(rule.pattern) - {"queue"}) | {k for k, _ in rule.labels}
        assert labels == set(family.labels), rule
        assert rule.width in (32, 64) and rule.scale > 0
        if rule.width == 32:
            assert "queue" not in _groups(rule.pattern), rule


@pytest.mark.parametrize("driver", sorted(TABLES))
def test_patterns_are_well_formed(driver):
    table = TABLES[driver]
    assert table.notes
    for p in (*table.gauges, *table.width32):
        assert not _groups(p), p  # the engine joins these into one alternation
    re.compile("|".join(f"(?:{p})" for p in (*table.gauges, *table.width32)))
    for q in table.queues:
        groups = _groups(q.pattern)
        assert "queue" in groups, q
        fields = {f for _, f, _, _ in string.Formatter().parse(q.template) if f}
        assert fields == groups - {"queue"}, q
        assert "N" in q.template.format(**dict.fromkeys(fields, "")), q


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_no_raw_name_matches_two_rules(fixture):
    table = TABLES[FIXTURE_DRIVER[fixture]]
    rules = [re.compile(r.pattern) for r in table.rules]
    gauges = [re.compile(p) for p in table.gauges]
    for name in load(fixture).names:
        hits = sum(bool(r.fullmatch(name.strip())) for r in rules)
        assert hits <= 1, name
        if any(g.fullmatch(name) for g in gauges):
            assert hits == 0, name


@pytest.mark.parametrize("driver", sorted(TABLES))
def test_every_rule_is_exercised_by_a_fixture(driver):
    names = {n.strip() for f, d in FIXTURE_DRIVER.items() if d == driver for n in load(f).names}
    for rule in TABLES[driver].rules:
        assert any(re.fullmatch(rule.pattern, n) for n in names), rule


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_32_bit_rules_agree_with_the_width_list(fixture):
    table = TABLES[FIXTURE_DRIVER[fixture]]
    width32 = [re.compile(p) for p in table.width32]
    for name in (n.strip() for n in load(fixture).names):
        listed = any(w.fullmatch(name) for w in width32)
        for rule in table.rules:
            if re.fullmatch(rule.pattern, name) and "queue" not in _groups(rule.pattern):
                assert (rule.width == 32) == listed, (name, rule)


# ---- the series budget of one ConnectX port ------------------------------------------------

SYSFS_STATS = {"rx_bytes": 1, "tx_bytes": 2, "rx_packets": 3, "tx_packets": 4, "rx_errors": 0,
               "tx_errors": 0, "rx_dropped": 5, "tx_dropped": 0}
MLX5_NETLINK = {"pause.rx_frames": 1204, "pause.tx_frames": 8330117,
                "fec.corrected_blocks": 10, "fec.uncorrectable_blocks": 0,
                "fec.corrected_bits": 987654321, "eth-mac.FrameCheckSequenceErrors": 5,
                "eth-mac.OctetsReceivedOK": 81234567890123,
                "eth-mac.OctetsTransmittedOK": 79876543210987,
                "eth-phy.SymbolErrorDuringCarrier": 11}


def mlx5_port_reading():
    stats = load("mlx5_core.txt")
    nc = NetClass("enp1s0f0np0", 4, "b8:3f:d2:00:00:01", "up", 9000, 400000, "full", True, 3,
                  2, 1, "devices/pci0000:00/0000:00:01.0/0000:01:00.0", "0000:01:00.0",
                  "mlx5_core", SYSFS_STATS)
    rings, channels = Rings(8192, 8192, 8192, 8192), Channels(0, 0, 0, 63, 0, 0, 0, 63)
    return Reading("enp1s0f0np0", 0.0, 0.0, nc,
                   DriverInfo("mlx5_core", "6.8.0", "28.39.1002", "0000:01:00.0",
                              len(stats.names)),
                   "b8:3f:d2:00:00:01", StatSet(stats.names, stats.values, 1), rings, channels,
                   EthtoolNetlinkInfo(PauseParams(False, False, False), None, rings, channels,
                                      MLX5_NETLINK))


def port_series(sample):
    """Series one port costs: counters, a rate gauge per counter, a peak gauge per health
    series, and the gauges."""
    counters = len(sample.counters)
    health = sum(FAMILIES[k.metric].health for k in sample.counters)
    return counters, health, len(sample.gauges)


def test_connectx_port_series_budget():
    sample = normalize(mlx5_port_reading(), NormalizeOptions())
    # the receive path's per-queue series grow with the queues (docs/receive-path.md):
    # one per receive queue the driver counts, here the fixture's 4
    per_queue = [k for k in sample.counters if k.metric == "nic_rx_queue_packets_total"]
    assert len(per_queue) == 4 and {k.labels[0][0] for k in per_queue} == {"queue"}
    canonical = dataclasses.replace(sample, counters={
        k: v for k, v in sample.counters.items() if k.metric != "nic_rx_queue_packets_total"})
    counters, health, gauges = port_series(canonical)
    assert all(k.metric in CANONICAL_COUNTERS for k in canonical.counters)
    # 27 from ethtool -S and netlink (PFC on priority 3 only, as on a RoCE host; 4 per-lane
    # pre-FEC error counters; the port's frame counters, the drop ratios' denominator), 10
    # from sysfs.
    assert (counters, health) == (37, 22)
    # 150 before issue #30; its 4 per-lane pre-FEC counters and their rate gauges add 8 (not
    # health families: no peak gauges; nic_pre_fec_ber is their evidence); the port's frame
    # counters (rx/tx_packets_phy, issue #38) and their rates 4 more.
    assert 2 * counters + health + gauges < 162 + 1


# ---- properties ----------------------------------------------------------------------------

FIXTURE_NAMES = sorted({n for f in FIXTURE_DRIVER for n in load(f).names})
LOOKALIKES = ("rx{}_buff_alloc_err", "tx{}_dropped", "ch{}_poll", "[{}]: rx_discards",
              "rxq{}: rx_drops_no_frags", "txq{}: tx_stops", "queue_{}_rx_cnt",
              "rx_queue_{}_packets", "tx-{}.bytes", "rx_q-{}_pkts", "rx_prio{}_pause",
              "tx_prio{}_pause_duration", "pfc_pri{}_rx_duration_us", "rx_pfc_ena_frames_pri{}",
              "port.rx_priority_{}_xoff_rx", "rx_priority_{}_xoff.nic", "ptp_tx{}_packets",
              "qos_tx{}_bytes", "tx_pb_{}_pxoff", "rx_err_lane_{}_phy")
names = st.one_of(
    st.sampled_from(FIXTURE_NAMES),
    st.builds(str.format, st.sampled_from(LOOKALIKES),
              st.one_of(st.integers(0, 9), st.integers(), st.text(max_size=3))),
    st.text(max_size=40),
    st.text(alphabet=" :[]._-0123456789abcdeglnoprstux", max_size=40),
)
drivers = st.sampled_from([*sorted(TABLES), "", "no_such_driver"])
raw_options = st.builds(RawOptions, enabled=st.booleans(),
                        per_queue=st.lists(st.sampled_from(
                            ["rxN_buff_alloc_err", "[N]: rx_discards", "rxqN: rx_drops_no_frags",
                             "rx_queue_N_packets", "queue_N_rx_cnt"]), max_size=3).map(tuple))


@settings(max_examples=300, deadline=None)
@given(driver=drivers, stat_names=st.lists(names, max_size=60), raw=raw_options, data=st.data())
def test_random_stat_sets_never_crash(driver, stat_names, raw, data):
    values = data.draw(st.lists(st.integers(0, 2**64 - 1), min_size=len(stat_names),
                                max_size=len(stat_names)))
    counters, gauges = normalize_driver_stats(driver, tuple(stat_names), values, raw)
    for key, cv in counters.items():
        family = FAMILIES[key.metric]
        assert {k for k, _ in key.labels} == set(family.labels)
        assert cv.raw >= 0 and cv.width in (32, 64)
    assert all(FAMILIES[k.metric].type == "gauge" for k in gauges)
    if driver in TABLES:
        for key, indices in plan_sources(driver, tuple(stat_names), raw).items():
            if key in counters:
                assert counters[key].raw == sum(values[i] for i in indices)
            else:  # a level is never summed: of a name listed twice, the last reading stands
                assert gauges[key] == values[max(indices)]


PER_QUEUE = (("be2net", "rxq{}: rx_drops_no_frags", "nic_rx_out_of_buffer_drops_total", ()),
             ("bnxt_en", "[{}]: rx_discards", "nic_driver_stat_total",
              (("stat", "[N]: rx_discards"),)),
             ("mlx5_core", "rx{}_buff_alloc_err", "nic_driver_stat_total",
              (("stat", "rxN_buff_alloc_err"),)),
             ("ena", "queue_{}_tx_cnt", "nic_driver_stat_total", (("stat", "queue_N_tx_cnt"),)),
             ("ice", "rx_q-{}_pkts", "nic_driver_stat_total", (("stat", "rx_q-N_pkts"),)),
             ("virtio_net", "tx{}_kicks", "nic_driver_stat_total", (("stat", "txN_kicks"),)))


@settings(max_examples=200, deadline=None)
@given(case=st.sampled_from(PER_QUEUE),
       parts=st.dictionaries(st.integers(0, 4095), st.integers(0, 2**40), min_size=1,
                             max_size=64))
def test_per_queue_sum_is_the_sum_of_parts(case, parts):
    driver, template, metric, labels = case
    names = tuple(template.format(q) for q in parts)
    counters, _ = normalize_driver_stats(driver, names, tuple(parts.values()), RAW)
    assert counters[SeriesKey(metric, labels)].raw == sum(parts.values())


# --- gauges recognised by name, for every driver ---------------------------------------

PUBLISHED = FIXTURES.parent / "published" / "ethtool-S"
KERNEL_NAMES = FIXTURES.parent / "kernel"

# Every `ethtool -S` dump in the repository -> the names that are gauges in it, read by hand
# from the drivers: states, statuses, modes, percentages, an ifindex. Nothing else in these
# dumps goes down by nature; mlx5's module_high_temp is an event count despite its name.
DUMP_GAUGES = {
    ETHTOOL / "be2net.txt": set(),
    ETHTOOL / "bnxt_en.txt": set(),
    ETHTOOL / "e1000e.txt": set(),
    ETHTOOL / "ena.txt": {"conntrack_allowance_available", "ena_srd_mode",
                          "ena_srd_resource_utilization"},
    ETHTOOL / "i40e.txt": {"port.fdir_atr_status", "port.fdir_sb_status",
                           "port.rx_lpi_status", "port.tx_lpi_status"},
    ETHTOOL / "ice-unified.txt": {"port-rx-fdir-sideband-status"},
    ETHTOOL / "ice.txt": {"fdir_sb_status.nic"},
    ETHTOOL / "ixgbe.txt": set(),
    ETHTOOL / "mlx5_core-global-pause.txt": set(),
    ETHTOOL / "mlx5_core.txt": {"outbound_pci_stalled_rd", "outbound_pci_stalled_wr"},
    ETHTOOL / "veth.txt": {"peer_ifindex"},
    ETHTOOL / "virtio_net.txt": set(),
    PUBLISHED / "be2net-emulex-ethq-issue7.txt": set(),
    PUBLISHED / "bnxt_en-ethq-tests-cloudflare.txt": set(),
    PUBLISHED / "ena-ethq-issue15.txt": set(),
    PUBLISHED / "i40e-ethq-tests-v2.3.2k.txt": {"port.fdir_atr_status", "port.fdir_sb_status",
                                                "port.rx_lpi_status", "port.tx_lpi_status"},
    PUBLISHED / "ice-e810-ethq-tests.txt": {"fdir_sb_status.nic"},
    PUBLISHED / "ixgbe-82599-github-note.txt": set(),
    PUBLISHED / "mlx5_core-cx4lx-ethq-issue8.txt": {"outbound_pci_stalled_rd",
                                                    "outbound_pci_stalled_wr"},
    KERNEL_NAMES / "be2net-et_stats-linux3.txt": {"be_on_die_temperature"},
}


def _driver_of_dump(path) -> str:
    name = path.name.split("-")[0].removesuffix(".txt")
    return name


def test_every_dump_in_the_repository_is_listed():
    dumps = {*ETHTOOL.glob("*.txt"), *PUBLISHED.glob("*.txt"), *KERNEL_NAMES.glob("*.txt")}
    assert dumps == set(DUMP_GAUGES)


@pytest.mark.parametrize("path", sorted(DUMP_GAUGES), ids=lambda p: p.name)
def test_every_dump_through_the_gauge_rule(path):
    """A statistic whose name says temperature, level, state, status, mode or a current
    value is a gauge for any driver, listed in its table or not; the name rule never takes
    a name a canonical family needs. be2net's be_on_die_temperature (Linux 3.x) was summed
    into nic_driver_stat_total as a counter before the rule, its table listing no gauge."""
    stats = parse(path.read_text())
    assert stats.problems == ()
    driver = _driver_of_dump(path)
    counters, gauges = normalize_driver_stats(driver, stats.names, stats.values, RAW)
    got = {dict(k.labels)["stat"] for k in gauges}
    assert got == DUMP_GAUGES[path]
    raw_counters = {dict(k.labels).get("stat") for k in counters
                    if k.metric == "nic_driver_stat_total"}
    assert not raw_counters & got
    # every name the rule calls a gauge is one here, unless the table lists it as a counter
    table = TABLES[driver]
    named = {n.strip() for n in stats.names if gauge_by_name(n.strip())}
    overridden = {n for n in named
                  if any(re.fullmatch(p, n) for p in table.counters)}
    assert named - overridden <= got
    # and the rule takes nothing a canonical family reads
    plain = normalize_driver_stats(driver, stats.names, stats.values, RawOptions())[0]
    assert all(k.metric in CANONICAL_COUNTERS for k in plain)


def test_a_table_can_keep_a_counter_named_like_a_gauge():
    assert gauge_by_name("module_high_temp") and gauge_by_name("be_on_die_temperature")
    assert gauge_by_name("port.rx_lpi_status") and not gauge_by_name("rx_out_of_buffer")
    assert not gauge_by_name("tx_pfc_ena_frames_pri3")  # "ena" is not "enabled"
    names = ("module_high_temp", "module_unplug")
    counters, gauges = normalize_driver_stats("mlx5_core", names, (3, 1), RAW)
    assert gauges == {}
    assert {dict(k.labels)["stat"]: v.raw for k, v in counters.items()} == {
        "module_high_temp": 3, "module_unplug": 1}
