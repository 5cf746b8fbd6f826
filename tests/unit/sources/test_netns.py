"""sources.netns.compare: a sysfs tree's interfaces against a network namespace's, by
ifindex and name; and Poll.only, the view the kernel socket sources read."""

from __future__ import annotations

import socket

import pytest

from nicwatch.model import NetClass, Reading
from nicwatch.sources import Poll
from nicwatch.sources.netns import compare, namespace_interfaces


def test_the_same_interfaces_agree_and_are_all_served() -> None:
    agreement = compare([("lo", 1), ("eth0", 2)], {"lo": 1, "eth0": 2, "veth9": 9}, "/sys")
    assert agreement.problem is None and agreement.served == {"lo", "eth0"}


def test_an_ifindex_held_by_another_name_is_a_disagreement() -> None:
    """The issue's case: a fixture port with ifindex 3, where 3 is this namespace's veth."""
    agreement = compare([("enp129s0np0", 3)], {"lo": 1, "va": 3}, "/tree")
    assert agreement.served == frozenset()
    assert agreement.problem is not None
    assert "(1 of 1 differ: enp129s0np0 (ifindex 3 under /tree; va has ifindex 3 here))" in (
        agreement.problem)


def test_a_name_with_another_ifindex_is_a_disagreement_even_when_others_match() -> None:
    """The host's /sys in a container: lo is 1 in both, eth0 is not the same eth0."""
    agreement = compare([("lo", 1), ("eth0", 2)], {"lo": 1, "eth0": 7}, "/host/sys")
    assert agreement.served == frozenset()
    assert agreement.problem is not None and "eth0 (ifindex 2 under /host/sys; ifindex 7 here)" in (
        agreement.problem)


def test_an_interface_gone_from_the_namespace_is_not_served_nor_a_disagreement() -> None:
    agreement = compare([("eth0", 2), ("veth5", 5)], {"eth0": 2}, "/sys")
    assert agreement.problem is None and agreement.served == {"eth0"}


def test_a_tree_sharing_no_interface_disagrees() -> None:
    agreement = compare([("ens1", 40)], {"lo": 1}, "/tree")
    assert agreement.served == frozenset()
    assert agreement.problem is not None and "none of its interfaces is here" in agreement.problem


def test_no_interfaces_selected_agree() -> None:
    assert compare([], {"lo": 1}, "/tree").problem is None


def test_namespace_interfaces_are_this_namespaces() -> None:
    assert namespace_interfaces() == {name: index for index, name in socket.if_nameindex()}
    assert namespace_interfaces().get("lo") == 1


def _nc(name: str, ifindex: int) -> NetClass:
    return NetClass(name, ifindex, *(None,) * 12)


def test_poll_only_shares_what_it_fills_and_refuses_other_interfaces() -> None:
    poll = Poll([_nc("a", 1), _nc("b", 2)])
    view = poll.only({"b"})
    assert [nc.name for nc in view.interfaces] == ["b"]
    view.put("b", Reading.mlx5_trust, "dscp")
    view.error("b", "dcbnl", "ENODEV", "gone")
    assert poll.parts["b"] == {"mlx5_trust": "dscp"} and poll.parts["a"] == {}
    assert poll.errors == view.errors and len(poll.errors) == 1
    with pytest.raises(KeyError):
        view.put("a", Reading.mlx5_trust, "pcp")
    assert poll.parts["a"] == {}
