"""Faults real hosts have: interfaces that vanish mid-poll, move to another namespace or are
replaced under the same name (a driver reload), ioctls that fail or hang, names that are not
UTF-8. The poll carries on for every other interface, the fault shows in the self-metrics,
nothing crashes and no exported counter goes backwards without nic_stat_resets_total moving.

Kernel objects are real: veth pairs in a namespace each test creates. Scenarios that need
the poll in-process (a veth deleted between GSTRINGS and GSTATS, injected errnos and a hang)
run as a script inside the namespace (see tests/helpers/faults.py).
"""

from __future__ import annotations

import secrets
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.model import (
    CounterValue,
    NetClass,
    NicIdentity,
    Reading,
    Sample,
    SeriesKey,
)
from nicwatch.tracker import COUNTER_DECREASE, INTERFACE_REPLACED, Tracker

from faults import (
    FAULTS,
    PAIRS,
    Process,
    counters_never_fall_without_reset,
    devices,
    errors_of,
    in_ns,
)
from netns import sh
from promtext import parse_exposition, promtool_check, series

# --------------------------------------------------------------------------- tests: kernel

netns = pytest.mark.netns


@netns
def test_interface_deleted_between_gstrings_and_gstats(fault_ns):
    got = in_ns(fault_ns, "vanish_mid_poll")
    assert got["fired"]
    first, second = (parse_exposition(p) for p in got["polls"])
    # The poll that met the deleted interface counted it and carried on with every other.
    assert errors_of(first, "nf0a") == 1
    for dev in ("nf1a", "nf1b", "nf2a", "nf2b"):
        assert series("nic_driver_stat_value", device=dev, stat="peer_ifindex") in first, dev
        assert errors_of(first, dev) is None
    # The next poll: nothing of the pair is left, not even its error count.
    assert not devices(got["polls"][1]) & {"nf0a", "nf0b"}
    assert {"nf1a", "nf1b", "nf2a", "nf2b", "nf9b"} <= devices(got["polls"][1])
    assert second[("nicwatch_interfaces", ())] == first[("nicwatch_interfaces", ())] - 2
    failed = [e for e in got["log"] if e["event"] == "source_failed"]
    assert {(e["device"], e["error"]) for e in failed} >= {("nf0a", "ENODEV")}
    for text in got["polls"]:
        promtool_check(text)


@netns
def test_failing_ioctls_are_counted_and_spare_everything_else(fault_ns):
    faults = [f[:3] for f in FAULTS]
    got = in_ns(fault_ns, "faults", schedule=[[2, []], [3, faults], [2, []]])
    polls = [parse_exposition(p) for p in got["polls"]]
    for i, m in enumerate(polls):
        faulty = 2 <= i < 5
        # Kernel netdev counters of every interface, the faulty ones included, every poll.
        for n in range(PAIRS):
            for dev in (f"nf{n}a", f"nf{n}b"):
                assert series("nic_tx_packets_total", device=dev) in m, (i, dev)
            assert series("nic_driver_stat_value", device=f"nf{n}b", stat="peer_ifindex") in m
        for dev, _, _, counted in FAULTS:
            # The failed part is absent, never 0, and comes back.
            peer = series("nic_driver_stat_value", device=dev, stat="peer_ifindex")
            assert (peer in m) is not faulty
            expected = (min(max(i - 1, 0), 3) or None) if counted else None
            assert errors_of(m, dev) == expected, (i, dev, errors_of(m, dev))
        # A failure is not a counter reset, nor a replaced interface.
        assert not any(k[0] == "nic_stat_resets_total" for k in m), i
    assert counters_never_fall_without_reset(got["polls"]) > 100
    assert polls[-1][series("nic_tx_packets_total", device="nf0a")] >= 70
    promtool_check(got["polls"][3])


@netns
def test_hung_ioctl_delays_the_poll_but_not_the_scrapes(fault_ns):
    got = in_ns(fault_ns, "hang", seconds=1.0)
    (start, end), = got["hung"]
    assert got["scraped_during_hang"]  # /metrics answered while the kernel call hung
    before, during, after = (parse_exposition(got[k]) for k in ("before", "during", "after"))
    stamp = ("nicwatch_last_poll_timestamp_seconds", ())
    polls = ("nicwatch_polls_total", ())
    # During the hang the endpoint serves the last completed poll: its timestamp predates
    # the hang, which is how staleness shows (alert on time() - that timestamp).
    assert before[stamp] <= during[stamp] <= start
    # Afterwards the slots the poll overran are counted, not made up for.
    assert after[stamp] > end and after[polls] > during[polls]
    assert after[("nicwatch_skipped_polls_total", ())] >= 5
    for dev in ("nf0a", "nf0b", "nf1a", "nf2b"):
        assert series("nic_driver_stat_value", device=dev, stat="peer_ifindex") in after
    assert counters_never_fall_without_reset([got["before"], got["during"], got["after"]]) > 0


@netns
def test_stat_set_generation_is_per_interface(fault_ns):
    got = in_ns(fault_ns, "generations")
    assert got["other_changed"] != got["other"]
    # Another interface's channel change is not a change of nf0a's set, and nf0a keeps its
    # generation when it comes back with the same names (moved away and back).
    assert got["unchanged"] == got["first"] == got["returned"]


@pytest.fixture
def served_faults(fault_ns, tmp_path):
    s = Process(f"--state.file={tmp_path / 'state.json'}", "--interfaces.include=nf.*",
                "--collector.raw", ns=fault_ns)
    try:
        s.metrics(1)
        yield s, fault_ns
    finally:
        s.stop()


def wait_until(s, predicate, what: str, scrapes: list, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        text = s.text()
        scrapes.append(text)
        m = parse_exposition(text)
        if predicate(m):
            return m
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@netns
def test_daemon_follows_moves_and_replacements_and_skips_odd_names(served_faults):
    s, ns = served_faults
    other = f"nwf-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", other)
    scrapes: list[str] = []
    try:
        # The interface whose name is not UTF-8 is skipped; its peer and the rest are served.
        names = devices(s.text())
        assert names == {f"nf{n}{end}" for n in range(PAIRS) for end in "ab"} | {"nf9b"}

        in_ns(ns, "send", ifname="nf1a", count=50)
        in_ns(ns, "send", ifname="nf2a", count=50)
        m = wait_until(s, lambda m: m.get(series("nic_tx_packets_total", device="nf2a"), 0) >= 50,
                       "traffic not seen", scrapes)
        moved_tx = m[series("nic_tx_packets_total", device="nf1a")]
        old_tx = m[series("nic_tx_packets_total", device="nf2a")]

        # Moved to another namespace: its series go; moved back: they continue, no reset.
        sh("ip", "-n", ns, "link", "set", "nf1a", "netns", other)
        wait_until(s, lambda m: series("nic_tx_packets_total", device="nf1a") not in m,
                   "series of a moved interface stayed", scrapes)
        sh("ip", "-n", other, "link", "set", "nf1a", "netns", ns)
        m = wait_until(s, lambda m: series("nic_tx_packets_total", device="nf1a") in m,
                       "moved interface not picked up again", scrapes)
        assert m[series("nic_tx_packets_total", device="nf1a")] >= moved_tx
        assert not any(k[0] == "nic_stat_resets_total" and ("device", "nf1a") in k[1] for k in m)

        # A driver reload: the netdev is unregistered and a new one registered under the
        # same name, with a new ifindex and counters from zero.
        sh("ip", "-n", ns, "link", "del", "nf2a")
        wait_until(s, lambda m: series("nic_tx_packets_total", device="nf2a") not in m,
                   "series of a deleted interface stayed", scrapes)
        sh("ip", "-n", ns, "link", "add", "nf2a", "type", "veth", "peer", "name", "nf2b")
        replaced = series("nic_stat_resets_total", device="nf2a", reason=INTERFACE_REPLACED)
        m = wait_until(s, lambda m: replaced in m, "replacement not recorded", scrapes)
        assert m[replaced] == 1
        assert m[series("nic_tx_packets_total", device="nf2a")] < old_tx
        assert s.proc.poll() is None
    finally:
        sh("ip", "netns", "del", other, check=False)
    assert counters_never_fall_without_reset(scrapes) > 100
    promtool_check(scrapes[-1])


# --------------------------------------------------------------------------- tests: tracker

KEY = SeriesKey("nic_rx_bytes_total")
DRV = SeriesKey("nic_driver_stat_total", (("stat", "rx_queue_N_drops"),))


def sample(t: float, counters: dict, ifindex: int | None = 7, generation: int | None = 1,
           device: str = "eth0", driver: str | None = "veth") -> Sample:
    nc = NetClass(device, ifindex, None, "up", 1500, None, None, True, None, None, None, None,
                  None, None)
    return Sample(NicIdentity(device, ifindex, driver, None, None, None, None, None), t, t,
                  counters, {}, frozenset(), generation, Reading(device, t, t, nc))


def cv(raw: int, source: str = "sysfs") -> CounterValue:
    return CounterValue(raw, source)


def test_replacement_between_polls_with_a_poll_in_between_is_a_reset():
    tr = Tracker()
    tr.update([sample(0, {KEY: cv(1000)})])
    assert tr.update([]) == []  # a uevent-triggered poll while the netdev is gone
    (s,) = tr.update([sample(1, {KEY: cv(10)}, ifindex=8)])
    assert s.resets == {INTERFACE_REPLACED: 1} and s.counters[KEY].value == 10
    (s,) = tr.update([sample(2, {KEY: cv(20)}, ifindex=8)])
    assert s.resets == {INTERFACE_REPLACED: 1} and s.counters[KEY].rate == 10.0


def test_a_failed_identity_read_is_no_replacement():
    tr = Tracker()
    tr.update([sample(0, {KEY: cv(10)})])
    (s,) = tr.update([sample(5, {KEY: cv(20)}, driver=None)])  # GDRVINFO failed
    (s,) = tr.update([sample(10, {KEY: cv(30)}, ifindex=None)])  # ifindex unreadable
    (s,) = tr.update([sample(15, {KEY: cv(40)})])
    assert s.resets == {} and s.counters[KEY].rate == 2.0
    (s,) = tr.update([sample(20, {KEY: cv(0)}, driver="mlx5_core")])
    assert s.resets == {INTERFACE_REPLACED: 1}


def test_failed_driver_stats_are_no_stat_set_change_and_rates_span_the_gap():
    tr = Tracker()
    tr.update([sample(0, {KEY: cv(0), DRV: cv(0, "ethtool_ioctl")})])
    (s,) = tr.update([sample(5, {KEY: cv(50)}, generation=None)])  # GSTATS failed
    assert s.resets == {} and DRV not in s.counters
    (s,) = tr.update([sample(10, {KEY: cv(100), DRV: cv(30, "ethtool_ioctl")})])
    assert s.resets == {}
    assert s.counters[DRV].rate == 3.0  # 30 over the 10 s since it was last read
    (s,) = tr.update([sample(15, {KEY: cv(150), DRV: cv(5, "ethtool_ioctl")})])
    assert s.resets == {COUNTER_DECREASE: 1}


def test_departed_interfaces_are_remembered_within_bounds():
    tr = Tracker(retention=100, max_departed=2)
    for i in range(4):  # four interfaces come and go, one per poll
        tr.update([sample(i, {KEY: cv(100)}, device=f"if{i}")])
    tr.update([])
    # Only the two most recent departures are remembered: if0 comes back as new.
    for i, remembered in ((0, False), (2, True)):
        (s,) = tr.update([sample(10, {KEY: cv(5)}, device=f"if{i}")])
        assert s.resets == ({COUNTER_DECREASE: 1} if remembered else {}), i
    tr.update([])
    # Gone for longer than the retention: forgotten too.
    (s,) = tr.update([sample(200, {KEY: cv(1)}, device="if2")])
    assert s.resets == {}


POLL = st.one_of(
    st.none(),  # the interface is absent from this poll
    st.fixed_dictionaries({
        "ifindex": st.sampled_from([1, 2, None]),
        "driver": st.sampled_from(["veth", "mlx5_core", None]),
        "generation": st.sampled_from([None, 1, 2]),
        "bytes": st.integers(0, 1000),
        "drops": st.one_of(st.none(), st.integers(0, 1000)),
    }))


@settings(max_examples=300, deadline=None)
@given(st.lists(POLL, min_size=1, max_size=40))
def test_exports_only_fall_with_a_recorded_reset_across_gaps_and_replacements(polls):
    tr = Tracker()
    last: dict[SeriesKey, tuple[float, int]] = {}  # series -> (value, resets then)
    for i, p in enumerate(polls):
        if p is None:
            assert tr.update([]) == []
            continue
        counters = {KEY: cv(p["bytes"])}
        if p["drops"] is not None:
            counters[DRV] = cv(p["drops"], "ethtool_ioctl")
        (s,) = tr.update([sample(5.0 * i, counters, p["ifindex"], p["generation"],
                                 driver=p["driver"])])
        resets = sum(s.resets.values())
        for key, t in s.counters.items():
            assert t.rate is None or t.rate >= 0
            if key in last and t.value < last[key][0]:
                assert resets > last[key][1], (key, last[key], t.value)
            last[key] = (t.value, resets)
