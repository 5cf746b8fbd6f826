"""VF series from a Reading's SR-IOV state (built from the published listings), and how the
tracker treats a VF whose counters restart."""

from __future__ import annotations

from nicwatch.metrics import EXPORTED
from nicwatch.model import CounterValue, NetClass, Reading, SeriesKey, SriovState
from nicwatch.normalize import normalize
from nicwatch.normalize.sriov import SOURCE
from nicwatch.sources.sriov import parse_vf_link
from nicwatch.tracker import COUNTER_DECREASE, VF_COUNTER_DECREASE, Tracker

from fixture_sriov import Vf, fixture_text, ip_link_vfs, newlink, prom_vf_stats


def reading(t: float, sriov: SriovState | None, driver="mlx5_core", rx=1000) -> Reading:
    nc = NetClass("eth2", 5, "ac:1f:6b:cf:32:c8", "up", 1500, 100000, "full", True, None,
                  None, None, None, "0000:41:00.0", driver, stats={"rx_packets": rx})
    return Reading("eth2", t, t, nc, sriov=sriov)


def state_of(vfs: list[Vf], enabled=None, total=16) -> SriovState:
    _n, _i, num, parsed = parse_vf_link(newlink("eth2", vfs))
    return SriovState(len(vfs) if enabled is None else enabled, total, num, parsed)


def e810_vfs(**stats_extra) -> list[Vf]:
    stats = prom_vf_stats(fixture_text("ice-e810-node-exporter-3544.prom"))["eno12399np0"]
    return [Vf(n, spoofchk=1, trust=0, stats={**s, **stats_extra})
            for n, s in sorted(stats.items())]


def test_vf_counters_labelled_by_vf_and_declared():
    sample = normalize(reading(0, state_of(e810_vfs()), driver="ice"))
    got = {(k.metric, k.labels): v.raw for k, v in sample.counters.items()
           if k.metric.startswith("nic_vf_")}
    assert got == {
        ("nic_vf_rx_packets_total", (("vf", "0"),)): 2854,
        ("nic_vf_rx_packets_total", (("vf", "1"),)): 5787,
        ("nic_vf_rx_dropped_total", (("vf", "1"),)): 5787,
        ("nic_vf_rx_packets_total", (("vf", "2"),)): 5787,
        ("nic_vf_rx_dropped_total", (("vf", "2"),)): 5787,
    }
    for key in sample.counters:
        assert key.metric in EXPORTED
        assert set(dict(key.labels)) <= set(EXPORTED[key.metric].labels)
    assert all(v.source == SOURCE and v.width == 64 for k, v in sample.counters.items()
               if k.metric.startswith("nic_vf_"))
    # VF families are not the PF's own: they do not enter nic_stat_supported.
    assert not any(m.startswith("nic_vf_") for m in sample.supported)


def test_info_and_counts_from_the_mlx5_listing():
    vfs = ip_link_vfs(fixture_text("mlx5-danm-246.txt"))
    sample = normalize(reading(0, state_of(vfs, enabled=11, total=16)))
    info = {dict(k.labels)["vf"]: dict(k.labels) for k in sample.gauges
            if k.metric == "nic_vf_info"}
    assert len(info) == 11
    assert info["9"] == {"vf": "9", "mac": "", "vlan": "10", "link_state": "auto",
                         "spoofchk": "on", "trust": "off"}
    assert info["1"]["vlan"] == "0" and info["1"]["spoofchk"] == "off"
    assert sample.gauge("nic_sriov_vfs", state="enabled") == 11
    assert sample.gauge("nic_sriov_vfs", state="total") == 16
    assert sample.gauge("nic_sriov_vfs", state="reported") == 11
    # A listing without counters: no VF counter series at all (absent, not zero).
    assert not any(k.metric.startswith("nic_vf_") for k in sample.counters)


def test_zero_filled_stats_of_a_driver_without_vf_stats_are_not_exported():
    """The kernel sends zeros for a driver without ndo_get_vf_stats: for a driver not known
    to fill them, all-zero VF counters are dropped; one nonzero value proves they are real."""
    zeros = [Vf(i, stats={"rx_packets": 0, "tx_packets": 0}) for i in range(3)]
    sample = normalize(reading(0, state_of(zeros), driver="ixgbe"))
    assert not any(k.metric.startswith("nic_vf_") for k in sample.counters)
    assert sum(k.metric == "nic_vf_info" for k in sample.gauges) == 3
    sample = normalize(reading(0, state_of(zeros), driver="mlx5_core"))
    assert sum(k.metric == "nic_vf_rx_packets_total" for k in sample.counters) == 3
    zeros[1].stats = {"rx_packets": 4, "tx_packets": 0}
    sample = normalize(reading(0, state_of(zeros), driver="ixgbe"))
    assert sum(k.metric == "nic_vf_rx_packets_total" for k in sample.counters) == 3


def test_vfs_enabled_without_vf_info_are_visible_in_the_counts():
    sample = normalize(reading(0, SriovState(8, 16, 0, ())))
    assert sample.gauge("nic_sriov_vfs", state="enabled") == 8
    assert sample.gauge("nic_sriov_vfs", state="reported") == 0
    assert not any(k.metric == "nic_vf_info" for k in sample.gauges)
    sample = normalize(reading(0, None))
    assert not any(k.metric.startswith(("nic_vf", "nic_sriov")) for k in sample.gauges)


def test_a_recreated_vf_is_its_own_reset_with_no_rate_and_not_the_pfs():
    tracker = Tracker()
    first = e810_vfs()
    tracker.update([normalize(reading(0, state_of(first), driver="ice", rx=1000))])
    grown = [Vf(v.vf, stats={k: n + 500 for k, n in v.stats.items()}) for v in first]
    t1 = tracker.update([normalize(reading(5, state_of(grown), driver="ice", rx=2000))])[0]
    key = SeriesKey("nic_vf_rx_packets_total", (("vf", "0"),))
    assert t1.counters[key].rate == 100.0
    # sriov_numvfs 3 -> 0 -> 3 between polls: the VFs' counters start again from zero.
    fresh = [Vf(v.vf, stats=dict.fromkeys(v.stats, 7)) for v in first]
    t2 = tracker.update([normalize(reading(10, state_of(fresh), driver="ice", rx=3000))])[0]
    assert t2.counters[key].rate is None and t2.counters[key].value == 7
    assert t2.resets.get(VF_COUNTER_DECREASE) == 1
    assert COUNTER_DECREASE not in t2.resets  # the PF's counters did not reset
    rx = SeriesKey("nic_rx_packets_total")
    assert t2.counters[rx].rate == 200.0
    assert isinstance(normalize(reading(0, None)).counters.get(rx), CounterValue)
