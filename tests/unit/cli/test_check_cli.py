"""`nicwatch check` end to end: for real on veth pairs in a test namespace and on this host's
virtio_net eth0, on the lab report's host (fixture sysfs plus a stand-in for the ConnectX-7
ethtool ioctls this machine cannot reach), and its exit statuses and one-line errors."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.cli.check import check_once, format_report, main, report_json
from nicwatch.collect import Collector
from nicwatch.consumers.checks import parse_expectations, violation_series

from expectations import EXPECT, LAB, dump_toml
from fixture_ethtool import ConnectX7Ioctl
from netns import make_veth_pair, ns_sh, sh

CHECK = [sys.executable, "-m", "nicwatch.cli.check"]


def run_check(config: str, *flags: str, ns: str | None = None) -> subprocess.CompletedProcess:
    argv = [*CHECK, "--config", config, *flags]
    return ns_sh(ns, *argv, check=False) if ns else sh(*argv, check=False)


def checks_of(out: str) -> dict[tuple[str, str], dict]:
    return {(r["device"], r["check"]): r for r in json.loads(out)["results"]}


# --------------------------------------------------------------------------- real kernel


@pytest.fixture
def veths():
    """A veth pair (a in ns_a, b in ns_b) with 2 queues, a at MTU 9000, and a second pair
    c/d inside ns_a at MTU 9000 and 1500: three interfaces in one namespace, one odd."""
    pair = make_veth_pair(queues=2, subnet=30)
    c, d = pair.a.replace("nwa", "nwc"), pair.a.replace("nwa", "nwd")
    try:
        sh("ip", "-n", pair.ns_a, "link", "add", c, "type", "veth", "peer", "name", d)
        for dev, mtu in ((pair.a, 9000), (c, 9000), (d, 1500)):
            sh("ip", "-n", pair.ns_a, "link", "set", dev, "mtu", str(mtu), "up")
        yield pair, c, d
    finally:
        pair.delete()


@pytest.mark.netns
def test_veths_for_real(veths, tmp_path):
    p, c, d = veths
    config = tmp_path / "veth.toml"
    config.write_text(
        f"[[expect]]\ninterfaces = '{p.a}'\nmtu = 9000\nlink_speed = '10G'\nchannels = 'max'\n"
        f"[[consistent]]\ngroup = 'veths'\ninterfaces = '{p.a}|{c}|{d}'\n"
        "checks = ['mtu', 'link_speed']\n")
    include = f"--interfaces.include={p.a}|{c}|{d}"

    r = run_check(str(config), include, "--json", ns=p.ns_a)
    assert r.returncode == 1, r.stderr
    got = checks_of(r.stdout)
    assert {k: v["result"] for k, v in got.items()} == {
        (p.a, "mtu"): "pass", (p.a, "link_speed"): "pass", (p.a, "channels"): "pass",
        **{(dev, "consistent_link_speed"): "pass" for dev in (p.a, c, d)},
        (p.a, "consistent_mtu"): "pass", (c, "consistent_mtu"): "pass",
        (d, "consistent_mtu"): "fail"}
    assert (got[(p.a, "channels")]["expected"], got[(p.a, "channels")]["note"]) == ("2", "max")
    odd = got[(d, "consistent_mtu")]
    assert (odd["expected"], odd["actual"], odd["fix"]) == (
        "9000", "1500", f"ip link set dev {d} mtu 9000")

    ns_sh(p.ns_a, "ip", "link", "set", d, "mtu", "9000")
    r = run_check(str(config), include, ns=p.ns_a)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "9 checks: 9 passed, 0 failed"

    ns_sh(p.ns_a, "ethtool", "-L", p.a, "rx", "1")
    ns_sh(p.ns_a, "ip", "link", "set", p.a, "mtu", "1500")
    r = run_check(str(config), include, "--json", ns=p.ns_a)
    assert r.returncode == 1
    failed = {k: (v["expected"], v["actual"], v["fix"]) for k, v in checks_of(r.stdout).items()
              if v["result"] == "fail"}
    assert failed == {
        (p.a, "mtu"): ("9000", "1500", f"ip link set dev {p.a} mtu 9000"),
        (p.a, "channels"): ("2", "1", f"ethtool -L {p.a} rx 2"),
        (p.a, "consistent_mtu"): ("9000", "1500", f"ip link set dev {p.a} mtu 9000")}


def test_virtio_eth0_rings_for_real(tmp_path):
    """This host's eth0 (virtio_net) has 256/256 rings of at most 256/256."""
    config = tmp_path / "eth0.toml"
    config.write_text("[[expect]]\nall = true\nrx_ring = 'max'\n")
    r = run_check(str(config))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[1].split() == ["pass", "eth0", "rx_ring", "256", "(max)", "256",
                                                "expect[1]"]

    config.write_text("[[expect]]\ninterfaces = 'eth0'\nrx_ring = 'max'\ntx_ring = 8192\n"
                      "pcie_width = 'max'\n[[expect]]\ninterfaces = 'ens9.*'\nmtu = 9000\n")
    r = run_check(str(config), "--json")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert [(x["check"], x["result"], x["expected"], x["actual"], x["fix"])
            for x in report["results"]] == [
        ("rx_ring", "pass", "256", "256", None),
        # 8192 is above the driver's maximum of 256: no command would work.
        ("tx_ring", "fail", "8192", "256", "# not settable: 8192 is above the maximum 256 the "
                                           "driver reports, and it is already there"),
        ("pcie_width", "fail", "max", "absent", None)]  # virtio-PCI has no PCIe link
    assert report["warnings"] == [
        f"{config}: key 'expect[2]': selects no interface (interfaces = 'ens9.*')"]
    assert report["checks"] == {"pass": 1, "fail": 2} and report["passed"] is False
    assert parse_expectations(report["expectations"], str(config)) == parse_expectations(
        tomllib.loads(config.read_text()), str(config))


# --------------------------------------------------------------------------- the lab report


LAB_CONFIG = """\
# "every fabric port at 8,192", named and checked against the port list
[[expect]]
driver = "mlx5_core"
rx_ring = 8192
mtu = 9000
link_speed = "400G"
pcie_speed = "max"
pcie_width = "max"

[[consistent]]
group = "fabric"
driver = "mlx5_core"
checks = ["rx_ring", "mtu"]
"""


def test_lab_report_host_fails_check_with_the_odd_port_named():
    expectations = parse_expectations(tomllib.loads(LAB_CONFIG), "lab.toml")
    collector = Collector(LAB, ioctl=ConnectX7Ioctl(
        {"ens1np0": 8192, "ens2np0": 8192, "ens3np0": 1024, "ens4np0": 8192}))
    report, errors = check_once(collector, expectations)
    assert errors == ()
    table = format_report(report).splitlines()
    assert [line.split()[:4] for line in table if line.startswith("FAIL")] == [
        ["FAIL", "ens3np0", "rx_ring", "8192"], ["FAIL", "ens3np0", "consistent_rx_ring", "8192"]]
    assert table[0].split() == ["RESULT", "DEVICE", "CHECK", "EXPECTED", "ACTUAL", "RULE", "FIX"]
    assert any(line.endswith("ethtool -G ens3np0 rx 8192") for line in table)
    assert table[-1] == "28 checks: 26 passed, 2 failed on ens3np0"
    assert report_json(report, expectations)["passed"] is False
    assert ("nic_expectation_violation", (("device", "ens3np0"), ("actual", "1024"),
                                          ("check", "rx_ring"), ("expected", "8192")), 1.0
            ) in violation_series(report)


# --------------------------------------------------------------------------- exit statuses


def in_process(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(argv))
        except SystemExit as e:  # argparse
            status = e.code
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("text", "flags", "message"), [
    ("[[expect]]\nall = true\nrx_ring = 'big'\n", (),
     "nicwatch check: error: {f}: key 'expect[1].rx_ring': expected a positive number"),
    ("[[expect]]\ninterfaces = '('\nmtu = 9000\n", (),
     "nicwatch check: error: {f}: key 'expect[1].interfaces': bad regular expression '('"),
    ("interval = 'soon'\n[[expect]]\nall = true\nmtu = 9000\n", (),
     "nicwatch check: error: {f}: key 'interval': expected a duration"),
    ("bogus = 1\n", (), "nicwatch check: error: {f}: unknown key 'bogus' (known: "),
    ("[[expect]]\nall = true\nmtu = 9000\n", ("--interfaces.include=(",),
     "nicwatch check: error: flag --interfaces.include: bad regular expression"),
    ("interval = '5s'\n", (),
     "nicwatch check: error: {f}: no [[expect]] or [[consistent]] tables to check"),
    ("[[expect]\n", (), "nicwatch check: error: {f}: not valid TOML: "),
    ("[[expect]]\nall = true\nmtu = 9000\n", ("--bogus",),
     "nicwatch: error: unrecognized arguments: --bogus"),
])
def test_usage_and_config_errors_exit_2_with_one_line(tmp_path, text, flags, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    status, out, err = in_process("--config", str(f), *flags)
    assert (status, out) == (2, "")
    assert err.startswith(message.format(f=f)) and err.count("\n") == 1, err


def test_missing_config_exits_2(tmp_path):
    status, _, err = in_process()
    assert (status, err) == (2, ("nicwatch check: error: no --config FILE given: no [[expect]] "
                                 "or [[consistent]] tables to check (see docs/expectations.md)\n"))
    status, _, err = in_process("--config", str(tmp_path / "none.toml"))
    assert (status, err) == (2, (f"nicwatch check: error: {tmp_path / 'none.toml'}: cannot read "
                                 "config: No such file or directory\n"))


def test_nothing_checked_exits_1(tmp_path):
    f = tmp_path / "typo.toml"
    f.write_text("[[expect]]\ninterfaces = 'ethO'\nmtu = 1500\n")
    status, out, _ = in_process("--config", str(f))
    assert status == 1
    assert out.splitlines() == [
        "nothing checked: no expectation selected an interface",
        f"warning: {f}: key 'expect[1]': selects no interface (interfaces = 'ethO')"]


def test_the_real_command_prints_no_traceback(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("[[consistent]]\nall = true\nchecks = ['mtu', 'ring']\n")
    r = run_check(str(f))
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr == (f"nicwatch check: error: {f}: key 'consistent[1].checks': expected a list "
                        "of properties that must be equal across the group (rx_ring, tx_ring, "
                        "mtu, link_speed, pcie_speed, pcie_width, fec_mode, pause_autoneg, "
                        "pause_rx, pause_tx, pfc, channels, trust, dscp_map, ecn, cnp_priority, "
                        "cnp_dscp, ets, sriov_vfs, devlink_health, roce_gid_for_ip, rdma_mtu, "
                        "irq_numa_local, rx_queue_balance, firmware_activated, fec_lane_ber, "
                        "module_vdm), "
                        "each once; got ['mtu', 'ring']\n")


WRONG = {  # a value of the wrong kind for each property
    "rx_ring": "lots", "tx_ring": -1, "mtu": "max", "link_speed": 400000, "pcie_speed": 7,
    "pcie_width": "x16", "fec_mode": "fc", "pause_autoneg": "no", "pause_rx": 0,
    "pause_tx": [], "pfc": [9], "channels": 1.5,
}


@st.composite
def broken_documents(draw):
    """A valid [[expect]] document with one thing broken; returns it and the key to blame."""
    tables = draw(st.lists(EXPECT, min_size=1, max_size=3))
    index = draw(st.integers(0, len(tables) - 1))
    table = dict(tables[index])
    how = draw(st.sampled_from(["unknown", "wrong", "regex"]))
    if how == "unknown":
        name = draw(st.sampled_from(["rx_rings", "speed", "pfc_priority", "interface"]))
        table[name] = 1
    elif how == "wrong":
        name = draw(st.sampled_from(sorted(WRONG)))
        table[name] = WRONG[name]
    else:
        name = draw(st.sampled_from(["interfaces", "driver", "pci_address"]))
        table[name] = draw(st.sampled_from(["(", "[a-", "*x", "a{2,1}"]))
    tables[index] = table
    return {"expect": tables}, f"expect[{index + 1}].{name}"


@settings(max_examples=60, deadline=None)
@given(broken_documents())
def test_invalid_configs_exit_2_naming_the_key(tmp_path_factory, case):
    document, key = case
    f = tmp_path_factory.getbasetemp() / "broken.toml"
    f.write_text(dump_toml(document))
    status, out, err = in_process("--config", str(f))
    assert (status, out) == (2, "")
    assert err.startswith(f"nicwatch check: error: {f}: key '{key}': ") and err.count("\n") == 1


# --------------------------------------------------------------------------- RoCE QoS

ROCE_CONFIG = """\
[[expect]]
interfaces = "enp33s0f0np0"
trust = "dscp"
dscp_map = { 26 = 3, 48 = 6 }
ecn = [3]
cnp_priority = 6
"""


def test_roce_port_without_ecn_on_its_priority_fails_check_with_the_fix(tmp_path):
    """The vendor mlx5 tree with ECN off at the notification point of priority 3, and a DCB
    APP table (dcbnl reply built to the kernel layout) that sends DSCP 26 to priority 0."""
    import shutil

    from fixture_dcb import RecordedDcb, roce_reply
    root = tmp_path / "sys"
    shutil.copytree(LAB.parent / "mlx5-roce-qos", root, symlinks=True)
    (root / "class/net/enp33s0f0np0/ecn/roce_np/enable/3").write_text("0\n")
    dcb = RecordedDcb({"enp33s0f0np0": roce_reply("enp33s0f0np0", dscp_map=((26, 0), (48, 6)))})
    expectations = parse_expectations(tomllib.loads(ROCE_CONFIG), "roce.toml")
    report, errors = check_once(Collector(root, dcb=dcb), expectations)
    assert errors == ()
    table = format_report(report).splitlines()
    fails = {line.split()[2]: line for line in table if line.startswith("FAIL")}
    assert set(fails) == {"dscp_map", "ecn"}
    assert fails["ecn"].endswith("echo 1 > /sys/class/net/enp33s0f0np0/ecn/roce_np/enable/3")
    assert fails["dscp_map"].endswith("dcb app replace dev enp33s0f0np0 dscp-prio 26:3 48:6")
    assert ("nic_expectation_violation", (("device", "enp33s0f0np0"), ("actual", "none"),
                                          ("check", "ecn"), ("expected", "3")), 1.0
            ) in violation_series(report)


def test_sriov_vfs_with_collector_vfs_on_a_fixture_tree(tmp_path):
    """`nicwatch check --collector.vfs` end to end on the cx7-sriov tree (sriov_numvfs 4 of
    sriov_totalvfs 16): the flag reaches the source, "max" is the total, and without the
    flag the count is absent rather than passing."""
    from paths import SYSFS
    config = tmp_path / "vfs.toml"
    config.write_text("[[expect]]\ninterfaces = 'eth2'\nsriov_vfs = 4\n"
                      "[[expect]]\ninterfaces = 'eth2'\nsriov_vfs = 'max'\n")
    flags = (f"--path.sysfs={SYSFS / 'cx7-sriov'}", "--interfaces.include=eth2",
             "--collector.ethtool-netlink=false", "--json")
    r = run_check(str(config), *flags, "--collector.vfs")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    got = [(x["expected"], x["actual"], x["result"], x["note"])
           for x in json.loads(r.stdout)["results"]]
    assert got == [("16", "4", "fail", "max")], got  # the last [[expect]] of a property wins
    config.write_text("[[expect]]\ninterfaces = 'eth2'\nsriov_vfs = 4\n")
    assert run_check(str(config), *flags, "--collector.vfs").returncode == 0
    r = run_check(str(config), *flags)
    assert r.returncode == 1 and json.loads(r.stdout)["results"][0]["actual"] == "absent"
