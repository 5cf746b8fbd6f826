"""VF series from a Reading's SR-IOV state (built from the published listings), and how the
tracker treats a VF whose counters restart."""

from __future__ import annotations

from pathlib import Path

from nicwatch.metrics import EXPORTED
from nicwatch.model import CounterValue, NetClass, Reading, SeriesKey, SriovState
from nicwatch.normalize import normalize
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.sriov import SOURCE
from nicwatch.sources.sriov import SriovSource, parse_vf_link
from nicwatch.tracker import COUNTER_DECREASE, VF_COUNTER_DECREASE, Tracker

from fixture_sriov import (
    ZERO_FILL,
    Replies,
    Vf,
    fixture_text,
    ip_link_vfs,
    newlink,
    prom_vf_stats,
)


def reading(t: float, sriov: SriovState | None, driver="mlx5_core", rx=1000,
            vf_ports: int | None = None) -> Reading:
    nc = NetClass("eth2", 5, "ac:1f:6b:cf:32:c8", "up", 1500, 100000, "full", True, None,
                  None, None, None, "0000:41:00.0", driver, stats={"rx_packets": rx})
    return Reading("eth2", t, t, nc, sriov=sriov, devlink_vf_ports=vf_ports)


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
    # Described, but without counters (an `ip link` listing has no IFLA_VF_STATS nest):
    # reported, and counted as no_counters (shown, not alerted on: NicSriovVfsUnreported
    # is about VFs the driver did not describe).
    assert sample.gauge("nic_sriov_vfs", state="reported") == 11
    assert sample.gauge("nic_sriov_vfs", state="no_counters") == 11
    assert sample.gauge("nic_sriov_vfs", state="unreadable") == 0
    # A listing without counters: no VF counter series at all (absent, not zero).
    assert not any(k.metric.startswith("nic_vf_") for k in sample.counters)


def test_zero_filled_stats_of_a_driver_without_vf_stats_are_not_exported():
    """The kernel sends zeros for a driver without ndo_get_vf_stats: for a driver not known
    to fill them, all-zero VF counters are dropped; one nonzero value proves they are real."""
    zeros = [Vf(i, stats={"rx_packets": 0, "tx_packets": 0}) for i in range(3)]
    sample = normalize(reading(0, state_of(zeros), driver="ixgbe"))
    assert not any(k.metric.startswith("nic_vf_") for k in sample.counters)
    assert sum(k.metric == "nic_vf_info" for k in sample.gauges) == 3
    # described, but their counters are the kernel's zeros: reported, without counters
    assert sample.gauge("nic_sriov_vfs", state="reported") == 3
    assert sample.gauge("nic_sriov_vfs", state="no_counters") == 3
    sample = normalize(reading(0, state_of(zeros), driver="mlx5_core"))
    assert sum(k.metric == "nic_vf_rx_packets_total" for k in sample.counters) == 3
    assert sample.gauge("nic_sriov_vfs", state="no_counters") == 0
    zeros[1].stats = {"rx_packets": 4, "tx_packets": 0}
    sample = normalize(reading(0, state_of(zeros), driver="ixgbe"))
    assert sum(k.metric == "nic_vf_rx_packets_total" for k in sample.counters) == 3
    assert sample.gauge("nic_sriov_vfs", state="reported") == 3
    assert sample.gauge("nic_sriov_vfs", state="no_counters") == 0


def test_netdevsim_vfs_are_reported_without_counters():
    """The lab's finding (tests/lab/test_lab_nsim_sriov.py): `ip -d link` listed netdevsim's
    3 VFs and nicwatch reported 0. netdevsim has ndo_get_vf_config but no ndo_get_vf_stats
    (nsim_netdev_ops, drivers/net/netdevsim/netdev.c), so rtnl_fill_vfinfo()
    (net/core/rtnetlink.c) sends every VF's IFLA_VF_STATS as the zeros it memset. The VFs
    and their settings (the lab's: VF 0 MAC and VLAN 100, VF 2 trust on and link state
    disable) are reported; their zeros are no counters, not exported."""
    vfs = [Vf(0, mac="52:54:00:00:00:a0", vlan=100, qos=2, spoofchk=1, trust=0,
              stats=dict(ZERO_FILL)),
           Vf(1, spoofchk=0, trust=0, max_rate=100, min_rate=10, stats=dict(ZERO_FILL)),
           Vf(2, spoofchk=1, trust=1, link_state="disable", stats=dict(ZERO_FILL))]
    sample = normalize(reading(0, state_of(vfs, total=3), driver="netdevsim"))
    counts = {st: sample.gauge("nic_sriov_vfs", state=st)
              for st in ("enabled", "total", "reported", "no_counters", "unreadable")}
    assert counts == {"enabled": 3, "total": 3, "reported": 3, "no_counters": 3,
                      "unreadable": 0}
    info = {dict(k.labels)["vf"]: dict(k.labels) for k in sample.gauges
            if k.metric == "nic_vf_info"}
    assert info["0"]["vlan"] == "100" and info["2"]["trust"] == "on"
    assert info["2"]["link_state"] == "disable"
    assert not any(k.metric.startswith("nic_vf_") for k in sample.counters)


def test_reported_counts_the_vfs_described_with_counters_not_ifla_num_vf():
    """IFLA_NUM_VF is dev_num_vf(), put before the driver is asked: it equals the VFs
    enabled whatever the driver could describe. reported counts the VF entries with counters
    this poll, so the difference shows (before, reported was IFLA_NUM_VF: never below
    enabled, and NicSriovVfsUnreported could not fire)."""
    vfs = e810_vfs()
    _n, _i, num, parsed = parse_vf_link(newlink("eth2", [vfs[0], vfs[2]], num_vf=3))
    sample = normalize(reading(0, SriovState(3, 16, num, parsed, (1,)), driver="ice"))
    assert num == 3
    assert sample.gauge("nic_sriov_vfs", state="enabled") == 3
    assert sample.gauge("nic_sriov_vfs", state="reported") == 2
    assert sample.gauge("nic_sriov_vfs", state="unreadable") == 1
    assert {dict(k.labels)["vf"] for k in sample.counters if k.metric.startswith("nic_vf_")} \
        == {"0", "2"}


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


FULL = {"rx_packets": 1000, "tx_packets": 900, "rx_bytes": 10**6, "tx_bytes": 9 * 10**5,
        "broadcast": 3, "multicast": 4, "rx_dropped": 12, "tx_dropped": 5}


def drops(sample) -> dict[str, float]:
    return {k.metric: v.raw for k, v in sample.counters.items()
            if k.metric in ("nic_vf_rx_dropped_total", "nic_vf_tx_dropped_total")}


def test_mlx5_vf_drops_only_in_legacy_mode_known_from_devlink():
    """mlx5_esw_query_vport_drop_stats returns 0 unless the e-switch is in legacy mode: in
    switchdev (the PF's devlink instance has pci_vf representor ports) the drops are
    absent, not a measured 0; without devlink nothing says which, so absent too."""
    state = state_of([Vf(0, stats=dict(FULL))])
    legacy = normalize(reading(0, state, driver="mlx5_core", vf_ports=0))
    assert drops(legacy) == {"nic_vf_rx_dropped_total": 12, "nic_vf_tx_dropped_total": 5}
    for vf_ports in (2, None):
        sample = normalize(reading(0, state, driver="mlx5_core", vf_ports=vf_ports))
        assert drops(sample) == {}
        assert sample.counters[SeriesKey("nic_vf_rx_packets_total", (("vf", "0"),))].raw == 1000


def test_ice_never_updates_vf_tx_dropped_so_it_is_absent():
    sample = normalize(reading(0, state_of([Vf(0, stats=dict(FULL))]), driver="ice"))
    assert drops(sample) == {"nic_vf_rx_dropped_total": 12}


def test_i40e_vf_tx_dropped_once_a_kernel_counts_it():
    """i40e_get_vf_stats copied the never-updated tx_discards until the 2025 fix: all-zero
    tx_dropped is no measurement; a non-zero one on any VF of the PF is."""
    zero_tx = dict(FULL, tx_dropped=0)
    sample = normalize(reading(0, state_of([Vf(0, stats=zero_tx), Vf(1, stats=zero_tx)]),
                               driver="i40e"))
    assert drops(sample) == {"nic_vf_rx_dropped_total": 12}
    sample = normalize(reading(0, state_of([Vf(0, stats=zero_tx), Vf(1, stats=dict(FULL))]),
                               driver="i40e"))
    got = {(k.metric, dict(k.labels)["vf"]): v.raw for k, v in sample.counters.items()
           if k.metric == "nic_vf_tx_dropped_total"}
    assert got == {("nic_vf_tx_dropped_total", "0"): 0, ("nic_vf_tx_dropped_total", "1"): 5}


def test_the_drop_meanings_are_driver_data():
    """Each table that fills VF counters says what each drop counter is, with evidence."""
    for driver in ("mlx5_core", "ice", "i40e"):
        vf = TABLES[driver].vf
        assert vf is not None and vf.evidence
        for stat in ("rx_dropped", "tx_dropped"):
            drop = vf.drop(stat)
            assert drop is not None and drop.meaning and drop.evidence, (driver, stat)
    assert TABLES["mlx5_core"].vf.drop("rx_dropped").legacy_only
    assert not TABLES["ice"].vf.drop("tx_dropped").updated


def test_a_zero_filled_read_is_not_a_vf_reset_and_keeps_the_true_rate():
    """i40e answers -EBUSY while a VF is in reset and the kernel sends its zeros: read as
    counters, a true 1 drop/s became a VF reset and then 1,002/s (the whole count again),
    and Prometheus' increase() counted the lifetime twice. Now the zero-fill is skipped:
    no reset, and the rate across it is the true 1/s."""
    from nicwatch.sources import Poll

    mac = "02:00:00:00:00:07"

    def vf(n: int) -> Vf:
        return Vf(0, mac=mac, stats=dict(FULL, rx_packets=10**6 + 1000 * n,
                                         tx_packets=5000 + 10 * n, rx_dropped=1000 + n))

    payloads = [newlink("eth2", [vf(0)], ifindex=5), newlink("eth2", [vf(1)], ifindex=5),
                newlink("eth2", [Vf(0, mac=mac, stats=dict(ZERO_FILL))], ifindex=5),
                newlink("eth2", [vf(3)], ifindex=5)]
    tree = Path(__file__).resolve().parents[2] / "fixtures" / "sysfs" / "cx7-sriov"
    source = SriovSource(tree, Replies(*payloads))  # eth2: 4 VFs enabled, 16 total
    tracker = Tracker()
    rates, resets = [], []
    key = SeriesKey("nic_vf_rx_dropped_total", (("vf", "0"),))
    for t in range(4):
        poll = Poll([NetClass("eth2", 5, None, None, None, None, None, None, None, None, None,
                              None, None, None)])
        source.read(poll)
        sample = normalize(reading(float(t), poll.parts["eth2"]["sriov"], driver="i40e",
                                   rx=1000 + t))
        tracked = tracker.update([sample])[0]
        rates.append(tracked.counters[key].rate if key in tracked.counters else "absent")
        resets.append(tracked.resets.get(VF_COUNTER_DECREASE, 0))
    assert rates == [None, 1.0, "absent", 1.0]
    assert resets == [0, 0, 0, 0]
