"""Bonding and VLAN over real e1000e: nicwatch polls the physical members, exports which bond
each belongs to and which member is active (before and after a failover) as `ip -j -d link`
and /proc/net/bonding say, and does not count the bond or the VLAN as interfaces of their
own (tests/lab/guest/scenarios/bonding.py). /metrics here is the one the host scraped
through QEMU's forwarded port."""

from __future__ import annotations

import pytest
from evidence import devices, link, samples, value

MEMBERS = ("bond1", "bond2")


@pytest.fixture(scope="module")
def ev(lab):
    value_ = lab.scenario("bonding")
    value_["scrapes"] = lab.scrapes
    return value_


@pytest.mark.parametrize("step", ["first", "failover"])
def test_membership_and_active_member_equal_the_kernel(ev, step):
    observed = ev[step]
    kernel = observed["kernel"]
    assert kernel["active_slave"] == observed["kernel_after"]["active_slave"]
    m = samples(ev["scrapes"][f"bonding_{step}"])
    mode = link(kernel["links"], "bond0")["linkinfo"]["info_data"]["mode"]
    assert mode == kernel["mode"].split()[0] == "active-backup"
    for member in MEMBERS:
        entry = link(kernel["links"], member)
        assert entry["master"] == "bond0"
        slave = entry["linkinfo"]["info_slave_data"]
        assert value(m, "nic_bond_info", device=member, bond="bond0", mode=mode) == 1
        assert value(m, "nic_bond_member_active", device=member, bond="bond0") == \
            (slave["state"] == "ACTIVE")
    assert value(m, "nic_bond_member_active", device=kernel["active_slave"], bond="bond0") == 1
    # Only bond members carry the family.
    assert devices(m, "nic_bond_info") == set(MEMBERS)


def test_failover_moved_the_active_member(ev):
    assert ev["first"]["kernel"]["active_slave"] != ev["failover"]["kernel"]["active_slave"]


@pytest.mark.parametrize("step", ["first", "failover"])
def test_bond_and_vlan_are_not_counted_a_second_time(ev, step):
    observed = ev[step]
    m = samples(ev["scrapes"][f"bonding_{step}"])
    polled = devices(m)
    assert set(MEMBERS) <= polled
    assert not {"bond0", "bond0.100"} & polled
    assert not {"bond0", "bond0.100"} & {e["device"] for e in observed["show"]}
    links = observed["kernel"]["links"]
    later = observed["kernel_after"]["links"]
    for direction in ("rx", "tx"):
        for field in ("bytes", "packets"):
            members = {n: link(links, n)["stats64"][direction][field] for n in MEMBERS}
            for member, kernel_value in members.items():
                # The kernel read just before nicwatch's poll and just after its scrape: equal
                # when nothing arrived between them; a frame that did (a lab run saw one of
                # 60 bytes after 1.5 s of quiet) puts nicwatch's value between the two.
                after = link(later, member)["stats64"][direction][field]
                got = value(m, f"nic_{direction}_{field}_total", device=member)
                assert kernel_value <= got <= after, (member, direction, field)
            # The bond's own counters are the sum of what its members counted since they
            # were enslaved: a sum over nicwatch's interfaces needs nothing subtracted.
            since = sum(members[n] - ev["enslaved_at"][n][direction][field] for n in MEMBERS)
            assert link(links, "bond0")["stats64"][direction][field] == since


def test_active_member_carried_the_traffic(ev):
    links = ev["first"]["kernel"]["links"]
    active = ev["first"]["kernel"]["active_slave"]
    backup = next(n for n in MEMBERS if n != active)
    m = samples(ev["scrapes"]["bonding_first"])
    assert value(m, "nic_tx_packets_total", device=active) >= 1000  # the UDP burst
    assert value(m, "nic_tx_packets_total", device=backup) == \
        link(links, backup)["stats64"]["tx"]["packets"] == 0
