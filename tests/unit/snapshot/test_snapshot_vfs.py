"""Snapshots of an SR-IOV PF: VF counters are saved and diffed like the others; a VF
re-created between the snapshots is flagged as such, not as a reset of the PF."""

from __future__ import annotations

from nicwatch.cli.snapshot import diff_json, format_diff
from nicwatch.model import NetClass, Reading, SriovState
from nicwatch.normalize import normalize
from nicwatch.snapshot import files as S
from nicwatch.sources.sriov import parse_vf_link
from nicwatch.tracker import COUNTER_DECREASE, VF_COUNTER_DECREASE

from fixture_module import fixture_eeprom
from fixture_sriov import Vf, fixture_text, newlink, prom_vf_stats
from snapshot_helpers import HOST


def snapshot(t: float, vfs: list[Vf]) -> S.Snapshot:
    _n, _i, num, parsed = parse_vf_link(newlink("eno12399np0", vfs))
    nc = NetClass("eno12399np0", 5, None, "up", 1500, 25000, "full", True, None, None, None,
                  None, "0000:8a:00.0", "ice", stats={"rx_packets": int(1000 + t)})
    sample = normalize(Reading("eno12399np0", 1.7e9 + t, t, nc,
                               sriov=SriovState(len(vfs), 64, num, parsed)))
    snap = S.build(HOST, [S.poll_of([sample], 1.7e9 + t, t)])
    return S.decode(S.encode(snap), "test")  # what is saved is what is diffed


def published() -> list[Vf]:
    stats = prom_vf_stats(fixture_text("ice-e810-node-exporter-3544.prom"))["eno12399np0"]
    return [Vf(n, spoofchk=1, trust=0, stats=s) for n, s in sorted(stats.items())]


def rows(d: S.Diff) -> dict:
    return {(r.name, dict(r.labels).get("vf")): r for r in d.interfaces[0].rows}


def test_vf_counters_round_trip_and_diff():
    a = published()
    b = published()
    b[1].stats = {"rx_packets": 5787 + 600, "rx_dropped": 5787 + 60}
    d = S.diff(snapshot(0, a), snapshot(60, b))
    got = rows(d)
    assert got[("nic_vf_rx_dropped_total", "1")].delta == 60
    assert got[("nic_vf_rx_dropped_total", "1")].rate == 1.0
    assert got[("nic_vf_rx_packets_total", "0")].delta == 0
    assert d.interfaces[0].flags == ()


def test_a_recreated_vf_is_flagged_apart_from_the_pf_and_settings_changes_listed():
    a = published()
    b = published()
    b[2].stats = {"rx_packets": 10, "rx_dropped": 0}  # VF 2 re-created: counters restart
    b[0].spoofchk = 0
    d = S.diff(snapshot(0, a), snapshot(60, b))
    idiff = d.interfaces[0]
    assert VF_COUNTER_DECREASE in idiff.flags and COUNTER_DECREASE not in idiff.flags
    r = rows(d)[("nic_vf_rx_packets_total", "2")]
    assert (r.status, r.delta, r.before, r.after) == (COUNTER_DECREASE, None, 5787, 10)
    assert rows(d)[("nic_rx_packets_total", None)].delta == 60
    changes = {(c.name, dict(c.labels).get("spoofchk"), c.before, c.after)
               for c in idiff.changes}
    assert ("nic_vf_info", "on", 1.0, None) in changes
    assert ("nic_vf_info", "off", None, 1.0) in changes
    text = format_diff(d, "a", "b")
    assert "SR-IOV VF(s) 2: counters restarted" in text
    assert "counter(s) went backwards" not in text


def test_a_module_first_read_in_b_is_one_line_not_a_change_per_value():
    """A daemon history's first poll came before the module thread's first read: its diff
    printed 788 of 912 lines as module values going from absent to a value. A family none of
    whose series A held is first read in B: one line naming it, its values with --all; a
    value of a family A held (the VF's spoofchk turned off) stays a change."""
    def with_module(t: float, vfs: list[Vf], module: bool) -> S.Snapshot:
        _n, _i, num, parsed = parse_vf_link(newlink("eno12399np0", vfs))
        nc = NetClass("eno12399np0", 5, None, "up", 1500, 25000, "full", True, None, None,
                      None, None, "0000:8a:00.0", "ice", stats={"rx_packets": int(1000 + t)})
        eeprom = fixture_eeprom("sfp-oem-10g-lr-go-ethtool.txt") if module else None
        sample = normalize(Reading("eno12399np0", 1.7e9 + t, t, nc, module=eeprom,
                                   sriov=SriovState(len(vfs), 64, num, parsed)))
        return S.decode(S.encode(S.build(HOST, [S.poll_of([sample], 1.7e9 + t, t)])), "t")

    a, b = published(), published()
    b[0].spoofchk = 0
    d = S.diff(with_module(0, a, False), with_module(60, b, True))
    first = [c for c in d.interfaces[0].changes if c.first_read]
    assert len(first) > 20 and all(c.before is None for c in first)
    assert {c.name for c in first} >= {"nic_module_temperature_celsius", "nic_module_info"}
    text = format_diff(d, "a", "b")
    assert "changed: nic_module" not in text
    line, = [x for x in text.splitlines() if "first read in B" in x]
    families = len({c.name for c in first})
    assert line.startswith(f"  first read in B (none in A): {len(first)} value(s) of "
                           f"{families} families (") and line.endswith("; --all lists them")
    assert "changed: nic_vf_info{" in text  # a family A held: still a change
    full = format_diff(d, "a", "b", show_all=True)
    assert full.count("changed: nic_module") == len(first) and "first read in B" not in full
    js = diff_json(d)["interfaces"][0]
    assert not any(c["first_read"] for c in js["changes"])
    assert set(js["first_read"]) == {c.name for c in first}
