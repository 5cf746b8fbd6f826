"""`nicwatch show` as a user runs it, inside a namespace of the test's own with a veth pair:
interface names as arguments (exact names, any type), and a selection that matched nothing
said on stderr with exit status 1 (it printed an empty table and exited 0)."""

from __future__ import annotations

import json

import pytest

from hostd import NICWATCH
from netns import PYTHON, have_root_and_tools, make_veth_pair, ns_sh, sh

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


def test_netdev_drops_have_a_column(pair):
    """A veth with tx drops showed only `OUT-OF-BUF -` and `DISCARDS -`. Frames sent while
    the peer is down are dropped by veth_xmit and counted as the netdev's tx_dropped: 40 of
    them show in DROPS RX/TX."""
    code = ("import socket\n"
            f"s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind(('{pair.a}', 0))\n"
            "for _ in range(40): s.send(b'\\xff' * 6 + b'\\x02' * 6 + b'\\x88\\xb5' + bytes(46))\n")
    sh("ip", "-n", pair.ns_b, "link", "set", pair.b, "down")
    try:
        before = json.loads(show(pair, pair.a, "--json").stdout)[0]
        ns_sh(pair.ns_a, PYTHON, "-c", code)
        after = json.loads(show(pair, pair.a, "--json").stdout)[0]
        r = ns_sh(pair.ns_a, "env", "COLUMNS=400", NICWATCH, "show", pair.a, check=False)
    finally:
        sh("ip", "-n", pair.ns_b, "link", "set", pair.b, "up")

    def tx_dropped(s):
        return next(c["value"] for c in s["counters"] if c["metric"] == "nic_tx_dropped_total")
    assert tx_dropped(after) - tx_dropped(before) == 40
    head, row = r.stdout.splitlines()[:2]
    cell = row[head.index("DROPS RX/TX"):].split()[0]
    assert cell == f"0/{tx_dropped(after):g}", r.stdout
