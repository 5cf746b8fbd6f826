"""`nicwatch show` as a user runs it, inside a namespace of the test's own with a veth pair:
interface names as arguments (exact names, any type), and a selection that matched nothing
said on stderr with exit status 1 (it printed an empty table and exited 0)."""

from __future__ import annotations

import json

import pytest

from hostd import NICWATCH
from netns import have_root_and_tools, make_veth_pair, ns_sh

pytestmark = pytest.mark.skipif(not have_root_and_tools(), reason="needs root, ip and ethtool")


@pytest.fixture(scope="module")
def pair():
    p = make_veth_pair(subnet=61)
    yield p
    p.delete()


def show(pair, *args: str):
    return ns_sh(pair.ns_a, NICWATCH, "show", *args, check=False)


def test_an_interface_named_is_shown_whatever_its_type(pair):
    r = show(pair, pair.a, "--json")
    assert r.returncode == 0, r.stderr
    assert [s["device"] for s in json.loads(r.stdout)] == [pair.a]  # a veth: no device link
    plain = show(pair)  # without names: only device-backed interfaces, none here
    assert plain.returncode == 0 and "(no interfaces selected" in plain.stdout


def test_names_are_exact_not_patterns(pair):
    r = show(pair, pair.a[:-1] + ".", "lo", "--json")
    assert r.returncode == 1
    assert r.stderr == f"nicwatch show: no interface {pair.a[:-1]}.\n"
    assert [s["device"] for s in json.loads(r.stdout)] == ["lo"]


def test_a_name_not_there_is_exit_1_after_the_rest_is_shown(pair):
    r = show(pair, pair.a, "nosuch0", "nosuch1")
    assert r.returncode == 1
    assert r.stderr == "nicwatch show: no interface nosuch0, nosuch1\n"
    assert pair.a in r.stdout


def test_an_include_that_matches_nothing_is_said_and_exit_1(pair):
    r = show(pair, "--interfaces.include", "nosuch0")
    assert r.returncode == 1
    assert r.stderr == "nicwatch show: no interface matched interfaces.include 'nosuch0'\n"
    ok = show(pair, "--interfaces.include", "nwa.*")
    assert ok.returncode == 0 and pair.a in ok.stdout, ok.stderr


def test_names_and_include_together_are_a_usage_error(pair):
    r = show(pair, pair.a, "--interfaces.include", "lo")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("nicwatch: error: show: name interfaces or give --interfaces.include, "
                        "not both\n")
