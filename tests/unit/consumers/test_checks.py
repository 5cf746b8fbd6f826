"""Expectations: parsing with precise errors, evaluation of every kind of check on Samples
built from the fixture sysfs trees (plus the ethtool records sysfs does not hold), "max",
consistency groups, and the metric series the daemon exports."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.config import ConfigError
from nicwatch.consumers.checks import (
    CHECK_COUNT,
    CHECKS,
    FAMILIES,
    VIOLATION,
    CheckReport,
    CheckResult,
    Expectations,
    evaluate,
    parse_expectations,
    violation_series,
)
from nicwatch.exporter.render import Renderer, _Writer
from nicwatch.model import (
    Channels,
    DevlinkHealthReporter,
    DriverInfo,
    EthtoolNetlinkInfo,
    FecParams,
    PauseParams,
    Reading,
    Rings,
    Sample,
    SeriesKey,
    SriovState,
)
from nicwatch.normalize import normalize
from nicwatch.normalize import pcie_verdict as pcie
from nicwatch.sources import sysfs_net
from nicwatch.sources.dcbnl import IeeePfc
from nicwatch.sources.sysfs_pci import read_pcie_path

from expectations import DOCUMENT, LAB_PORTS, dump_toml
from paths import REPO, SYSFS
from promtext import parse_exposition, promtool_check, series

CX7_RINGS = {"ens1np0": 8192, "ens2np0": 8192, "ens3np0": 1024, "ens4np0": 8192}


# --------------------------------------------------------------------------- building Samples


def with_pfc(sample: Sample, pfc: IeeePfc) -> Sample:
    """The gauge dcbnl's record becomes (nic_pfc_enabled{priority}); Readings do not carry
    the record yet, so it is added to the Sample the way normalize will."""
    gauges = dict(sample.gauges)
    for p in range(8):
        gauges[SeriesKey("nic_pfc_enabled", (("priority", str(p)),))] = float(p in pfc.enabled)
    return dataclasses.replace(sample, gauges=MappingProxyType(gauges))


def pfc_on(*priorities: int) -> IeeePfc:
    return IeeePfc(enabled=priorities, capability=8, mbc=False, delay=0, requests=None,
                   indications=None)


def fixture_samples(scenario: str | Path, driver: str = "mlx5_core", **records: dict
                    ) -> list[Sample]:
    """Every netdev of a fixture tree as a Sample, read as the daemon reads sysfs (netclass,
    PCIe path, verdict across shared links), with ethtool records (``rings``,
    ``channels``, ``pause``, ``fec``, ``pfc``) given per netdev in ``records``."""
    root = SYSFS / scenario
    netclasses = {n: sysfs_net.read_netclass(root, n) for n in sysfs_net.list_interfaces(root)}
    paths = {n: read_pcie_path(root, nc.pci_address) for n, nc in netclasses.items()
             if nc.pci_address}
    verdicts = pcie.assess_all({n: (paths[n], pcie.line_rate_from_mbps(netclasses[n].speed_mbps))
                                for n in paths})
    samples = []
    for name, nc in netclasses.items():
        extra = dict(records.get(name, {}))
        pfc = extra.pop("pfc", None)
        pause, fec = extra.pop("pause", None), extra.pop("fec", None)
        reading = Reading(
            device=name, time=1.0, monotonic=1.0, netclass=nc,
            driver_info=DriverInfo(driver, "6.18", "28.46.3048", nc.pci_address or "", 0),
            netlink=EthtoolNetlinkInfo(pause=pause, fec=fec) if pause or fec else None,
            pcie=paths.get(name), **extra)
        sample = normalize(reading, pcie_verdict=verdicts.get(name))
        samples.append(with_pfc(sample, pfc) if pfc else sample)
    return samples


def lab_samples(**overrides: dict) -> list[Sample]:
    """The lab report's host: four ConnectX-7 ports, rings 8192 except ens3np0 at 1024."""
    records = {port: {"rings": Rings(rx=n, tx=n, rx_max=8192, tx_max=8192)}
               for port, n in CX7_RINGS.items()}
    for port, extra in overrides.items():
        records[port] = {**records[port], **extra}
    return fixture_samples("lab-report-host", **records)


def expectations(text: str, path: str = "host.toml") -> Expectations:
    return parse_expectations(tomllib.loads(text), path)


def check(text: str, samples: list[Sample]) -> CheckReport:
    return evaluate(expectations(text), samples)


def results(report: CheckReport, check_name: str | None = None) -> dict[str, CheckResult]:
    return {r.device: r for r in report.results if check_name in (None, r.check)}


# --------------------------------------------------------------------------- the lab report


def test_lab_report_host_fails_with_the_odd_port_named():
    report = check("[[expect]]\ndriver = 'mlx5_core'\nrx_ring = 8192\ntx_ring = 8192\n"
                   "mtu = 9000\n", lab_samples())
    assert [(r.device, r.check, r.expected, r.actual) for r in report.violations] == [
        ("ens3np0", "rx_ring", "8192", "1024"), ("ens3np0", "tx_ring", "8192", "1024")]
    odd = results(report, "rx_ring")["ens3np0"]
    assert odd.fix == "ethtool -G ens3np0 rx 8192" and odd.rule == "expect[1]"
    assert (report.passed, report.failed, report.warnings) == (10, 2, ())


def test_deploy_example_passes_a_tuned_host_and_names_the_odd_ring():
    text = (REPO / "deploy" / "roce-fabric.toml").read_text()
    tuned = {"pause": PauseParams(autoneg=False, rx=False, tx=False),
             "fec": FecParams(configured=("rs",), active="rs", auto=False), "pfc": pfc_on(3),
             "channels": Channels(None, None, None, 64, None, None, None, 64)}
    report = check(text, lab_samples(**dict.fromkeys(LAB_PORTS, tuned)))
    assert not report.warnings
    assert {(r.device, r.check) for r in report.violations} == {
        ("ens3np0", "rx_ring"), ("ens3np0", "tx_ring"),
        ("ens3np0", "consistent_rx_ring"), ("ens3np0", "consistent_tx_ring")}
    assert {r.check for r in report.results if r.device == "ens1np0"} == {
        "rx_ring", "tx_ring", "mtu", "pcie_speed", "pcie_width", "fec_mode", "pause_rx",
        "pause_tx", "pfc", "consistent_rx_ring", "consistent_tx_ring", "consistent_mtu",
        "consistent_link_speed", "consistent_channels", "consistent_pcie_width"}


# --------------------------------------------------------------------------- each property


@pytest.mark.parametrize(("value", "passes", "expected", "note"), [
    (8192, ("ens1np0", "ens2np0", "ens4np0"), "8192", None),
    (1024, ("ens3np0",), "1024", None),
    ("'max'", ("ens1np0", "ens2np0", "ens4np0"), "8192", "max"),
])
def test_rx_ring(value, passes, expected, note):
    report = check(f"[[expect]]\nall = true\nrx_ring = {value}\n", lab_samples())
    got = results(report)
    assert {d for d, r in got.items() if r.passed} == set(passes)
    assert {r.expected for r in got.values()} == {expected}
    assert {r.note for r in got.values()} == {note}


def test_max_the_driver_does_not_report_fails_unresolved():
    samples = lab_samples(ens1np0={"rings": Rings(rx=8192, tx=8192, rx_max=None, tx_max=None)})
    r = results(check("[[expect]]\nall = true\ntx_ring = 'max'\n", samples))["ens1np0"]
    assert (r.passed, r.expected, r.actual, r.note, r.fix) == (
        False, "max", "8192", "max: not reported", None)


def test_absent_property_fails_without_a_fix():
    report = check("[[expect]]\nall = true\nrx_ring = 8192\npause_rx = false\n",
                   fixture_samples("cx7-gen5-healthy"))
    assert [(r.check, r.actual, r.passed, r.fix) for r in report.results] == [
        ("rx_ring", "absent", False, None), ("pause_rx", "absent", False, None)]


def test_mtu_and_link_speed():
    report = check("[[expect]]\ninterfaces = 'ens[12]np0'\nmtu = 9000\nlink_speed = '400G'\n"
                   "[[expect]]\ninterfaces = 'ens[34]np0'\nmtu = 1500\nlink_speed = '200G'\n",
                   lab_samples())
    assert [(r.device, r.check, r.passed, r.expected, r.actual, r.fix)
            for r in report.results if not r.passed] == [
        ("ens3np0", "mtu", False, "1500", "9000", "ip link set dev ens3np0 mtu 1500"),
        ("ens3np0", "link_speed", False, "200G", "400G",
         "ethtool -s ens3np0 speed 200000 duplex full"),
        ("ens4np0", "mtu", False, "1500", "9000", "ip link set dev ens4np0 mtu 1500"),
        ("ens4np0", "link_speed", False, "200G", "400G",
         "ethtool -s ens4np0 speed 200000 duplex full")]
    assert report.passed == 4


def test_pcie_lane_split_fails_max_width_with_the_bios_hint():
    """The lab report's 200G card: trained x8 on an x16 card because the slot was split."""
    report = check("[[expect]]\nall = true\npcie_width = 'max'\npcie_speed = 'max'\n"
                   "[[expect]]\nall = true\npcie_speed = 'gen4'\n",
                   fixture_samples("lab-report-cx6-200g"))
    speed, width = report.results
    assert (width.check, width.passed, width.expected, width.actual, width.note) == (
        "pcie_width", False, "x16", "x8", "max")
    assert "BIOS lane split" in width.fix and "lspci -vv -s 0000:81:00.0" in width.fix
    assert (speed.check, speed.passed, speed.expected, speed.actual, speed.rule) == (
        "pcie_speed", True, "16GT/s", "16GT/s", "expect[2]")


def test_pcie_trained_narrow_in_a_wide_slot_gets_the_reseat_hint():
    report = check("[[expect]]\nall = true\npcie_width = 16\n",
                   fixture_samples("cx6-dual-gen4x8-width"))
    assert [(r.device, r.passed, r.actual) for r in report.results] == [
        ("ens1f0np0", False, "x8"), ("ens1f1np1", False, "x8")]
    assert all("reseat" in r.fix for r in report.results)


@pytest.mark.parametrize(("text", "passed", "expected"), [
    ("pcie_speed = 32", True, "32GT/s"),
    ("pcie_speed = 'Gen5'", True, "32GT/s"),
    ("pcie_speed = 16.0", False, "16GT/s"),
    ("pcie_width = 16", True, "x16"),
    ("pcie_width = 'max'", True, "x16"),
])
def test_pcie_values(text, passed, expected):
    (r,) = check(f"[[expect]]\nall = true\n{text}\n", fixture_samples("cx7-gen5-healthy")).results
    assert (r.passed, r.expected) == (passed, expected)


def test_pcie_on_a_virtio_nic_is_absent():
    (r,) = check("[[expect]]\nall = true\npcie_width = 'max'\n",
                 fixture_samples("virtio-no-pcie", driver="virtio_net")).results
    assert (r.passed, r.expected, r.actual) == (False, "max", "absent")


def test_fec_mode():
    fec = {"ens1np0": {"fec": FecParams(("rs",), "rs", False)},
           "ens2np0": {"fec": FecParams(("baser", "rs"), "baser", True)},
           "ens3np0": {"fec": FecParams((), None, None)}}
    got = results(check("[[expect]]\nall = true\nfec_mode = 'RS'\n", fixture_samples(
        "lab-report-host", **fec)))
    assert {d: (r.passed, r.actual) for d, r in got.items()} == {
        "ens1np0": (True, "rs"), "ens2np0": (False, "baser"), "ens3np0": (False, "absent"),
        "ens4np0": (False, "absent")}
    assert got["ens2np0"].fix == "ethtool --set-fec ens2np0 encoding rs"


def test_pause():
    pause = {p: {"pause": PauseParams(autoneg=False, rx=True, tx=False)} for p in LAB_PORTS}
    report = check("[[expect]]\ninterfaces = 'ens1np0'\npause_autoneg = false\npause_rx = false\n"
                   "pause_tx = false\n", fixture_samples("lab-report-host", **pause))
    assert [(r.check, r.passed, r.expected, r.actual, r.fix) for r in report.results] == [
        ("pause_autoneg", True, "off", "off", None),
        ("pause_rx", False, "off", "on", "ethtool -A ens1np0 rx off"),
        ("pause_tx", True, "off", "off", None)]


def test_pfc_must_match_the_priority_set_exactly():
    samples = lab_samples(ens1np0={"pfc": pfc_on(3)}, ens2np0={"pfc": pfc_on(3, 4)},
                          ens3np0={"pfc": pfc_on()})
    got = results(check("[[expect]]\nall = true\npfc = [3]\n", samples))
    assert {d: (r.passed, r.actual) for d, r in got.items()} == {
        "ens1np0": (True, "3"), "ens2np0": (False, "3,4"), "ens3np0": (False, "none"),
        "ens4np0": (False, "absent")}
    assert got["ens2np0"].fix == ("dcb pfc set dev ens2np0 prio-pfc 0:off 1:off 2:off 3:on "
                                  "4:off 5:off 6:off 7:off")
    (off,) = check("[[expect]]\ninterfaces = 'ens3np0'\npfc = []\n", samples).results
    assert (off.passed, off.expected) == (True, "none")


def test_channels_combined_and_rx_only():
    samples = lab_samples(
        ens1np0={"channels": Channels(None, None, None, 16, None, None, None, 63)},
        ens2np0={"channels": Channels(1, 1, None, None, 2, 2, None, None)})  # veth style
    got = results(check("[[expect]]\ninterfaces = 'ens[12]np0'\nchannels = 'max'\n", samples))
    assert {d: (r.passed, r.expected, r.actual, r.fix) for d, r in got.items()} == {
        "ens1np0": (False, "63", "16", "ethtool -L ens1np0 combined 63"),
        "ens2np0": (False, "2", "1", "ethtool -L ens2np0 rx 2")}
    (r,) = check("[[expect]]\ninterfaces = 'ens1np0'\nchannels = 16\n", samples).results
    assert r.passed


def test_fix_commands_quote_odd_interface_names():
    sample = lab_samples()[2]
    odd = dataclasses.replace(sample, identity=dataclasses.replace(sample.identity,
                                                                   device="p;reboot"))
    (r,) = check("[[expect]]\nall = true\nrx_ring = 8192\n", [odd]).results
    assert r.fix == "ethtool -G 'p;reboot' rx 8192"


# --------------------------------------------------------------------------- selection


def test_selectors_combine_and_match_whole_values():
    samples = lab_samples()
    for selector, selected in [
        ("driver = 'mlx5'", []),  # whole value: not a prefix match
        ("driver = 'mlx5_.*'", list(LAB_PORTS)),
        ("pci_address = '0000:[24]1:00\\.0'", ["ens2np0", "ens3np0"]),
        ("interfaces = 'ens.*'\npci_address = '0000:41:00.0'", ["ens3np0"]),
        ("all = true\ninterfaces = 'ens4np0'", ["ens4np0"]),
    ]:
        report = check(f"[[expect]]\n{selector}\nmtu = 9000\n", samples)
        assert [r.device for r in report.results] == selected, selector


def test_all_selects_only_device_backed_interfaces():
    sample = lab_samples()[0]
    virtual = dataclasses.replace(sample, reading=dataclasses.replace(
        sample.reading, netclass=dataclasses.replace(sample.reading.netclass, device_path=None)))
    report = check("[[expect]]\nall = true\nmtu = 9000\n", [virtual])
    assert report.results == () and len(report.warnings) == 1


def test_later_sections_override_earlier_ones_per_property():
    report = check("[[expect]]\nall = true\nmtu = 9000\nrx_ring = 8192\n"
                   "[[expect]]\ninterfaces = 'ens3np0'\nrx_ring = 1024\n", lab_samples())
    assert all(r.passed for r in report.results) and len(report.results) == 8
    assert {(r.device, r.rule) for r in report.results if r.check == "rx_ring"} == {
        ("ens3np0", "expect[2]"), *((p, "expect[1]") for p in LAB_PORTS if p != "ens3np0")}
    assert {r.rule for r in report.results if r.check == "mtu"} == {"expect[1]"}


def test_selector_matching_nothing_is_a_warning_naming_file_and_key():
    report = check("[[expect]]\ninterfaces = 'ens9.*'\nmtu = 9000\n"
                   "[[expect]]\nall = true\nmtu = 9000\n", lab_samples())
    assert report.warnings == (
        "host.toml: key 'expect[1]': selects no interface (interfaces = 'ens9.*')",)
    assert report.passed == 4 and report.failed == 0


# --------------------------------------------------------------------------- consistency


def test_consistency_group_names_the_one_odd_member():
    report = check("[[consistent]]\ngroup = 'fabric'\ndriver = 'mlx5_core'\n"
                   "checks = ['rx_ring', 'mtu', 'link_speed', 'pcie_width']\n", lab_samples())
    assert [(r.device, r.check, r.expected, r.actual, r.fix) for r in report.violations] == [
        ("ens3np0", "consistent_rx_ring", "8192", "1024", "ethtool -G ens3np0 rx 8192")]
    odd = report.violations[0]
    assert (odd.note, odd.rule) == ("3/4 agree", "consistent[1] (fabric)")
    assert report.passed == 15


def test_consistency_tie_goes_to_the_larger_value_and_absent_members_fail():
    samples = lab_samples(ens3np0={"rings": Rings(1024, 1024, 8192, 8192)},
                          ens4np0={"rings": Rings(1024, 1024, 8192, 8192)})
    got = results(check("[[consistent]]\nall = true\nchecks = ['rx_ring']\n", samples))
    assert {d: (r.passed, r.expected) for d, r in got.items()} == {
        "ens1np0": (True, "8192"), "ens2np0": (True, "8192"), "ens3np0": (False, "8192"),
        "ens4np0": (False, "8192")}
    unknown = check("[[consistent]]\nall = true\nchecks = ['pfc', 'rx_ring']\n",
                    fixture_samples("cx6-dual-gen4x8-width")).results
    assert {(r.check, r.passed, r.expected, r.actual, r.note) for r in unknown} == {
        (c, False, "equal", "absent", "no member reports it")
        for c in ("consistent_pfc", "consistent_rx_ring")}


def test_consistency_group_of_one_passes_with_a_warning():
    report = check("[[consistent]]\ninterfaces = 'ens1np0'\nchecks = ['mtu']\n", lab_samples())
    assert [r.passed for r in report.results] == [True]
    assert report.warnings == (("host.toml: key 'consistent[1]': selects only ens1np0, nothing "
                                "to compare (interfaces = 'ens1np0')"),)


# --------------------------------------------------------------------------- metric series


def render_series(report: CheckReport) -> str:
    """The two families as the exporter writes them (HELP, TYPE, samples)."""
    w = _Writer(False, Renderer().line)
    by_family: dict[str, list] = {}
    for name, labels, value in violation_series(report):
        by_family.setdefault(name, []).append((labels, value))
    for family in FAMILIES:
        w.family(family.name, family.type, family.help, by_family.get(family.name, ()))
    return w.bytes().decode()


def test_violation_series_of_the_lab_report_pass_promtool():
    report = check("[[expect]]\ndriver = 'mlx5_core'\nrx_ring = 8192\n[[consistent]]\n"
                   "driver = 'mlx5_core'\nchecks = ['rx_ring']\n", lab_samples())
    text = render_series(report)
    promtool_check(text)
    assert parse_exposition(text) == {
        series("nic_expectation_violation", device="ens3np0", check="rx_ring", expected="8192",
               actual="1024"): 1.0,
        series("nic_expectation_violation", device="ens3np0", check="consistent_rx_ring",
               expected="8192", actual="1024"): 1.0,
        series("nicwatch_expectation_checks", result="pass"): 6.0,
        series("nicwatch_expectation_checks", result="fail"): 2.0,
    }
    assert VIOLATION.labels == ("check", "expected", "actual") and CHECK_COUNT.labels == ("result",)


def test_nothing_checked_is_distinguishable_from_no_violation():
    nothing = evaluate(expectations("[[expect]]\ninterfaces = 'ens9.*'\nmtu = 9000\n"),
                       lab_samples())
    assert violation_series(nothing) == [
        ("nicwatch_expectation_checks", (("result", "fail"),), 0.0),
        ("nicwatch_expectation_checks", (("result", "pass"),), 0.0)]
    assert violation_series(evaluate(Expectations(), lab_samples())) == []


def test_identical_violations_from_overlapping_groups_are_one_series():
    report = check("[[consistent]]\nall = true\nchecks = ['rx_ring']\n"
                   "[[consistent]]\ndriver = 'mlx5_core'\nchecks = ['rx_ring']\n", lab_samples())
    assert report.failed == 2
    assert [s for s in violation_series(report) if s[0] == VIOLATION.name] == [
        ("nic_expectation_violation", (("device", "ens3np0"), ("actual", "1024"),
                                       ("check", "consistent_rx_ring"), ("expected", "8192")),
         1.0)]


# --------------------------------------------------------------------------- config errors


@pytest.mark.parametrize(("text", "message"), [
    ("[[expect]]\nall = true\nrx_rings = 8192\n",
     "host.toml: key 'expect[1].rx_rings': unknown key (did you mean 'rx_ring'? known: "),
    ("[[expect]]\nall = true\nrx_ring = '8k'\n",
     ("host.toml: key 'expect[1].rx_ring': expected a positive number of descriptors or "
      "\"max\", got '8k'")),
    ("[[expect]]\nall = true\nmtu = 'max'\n",
     "host.toml: key 'expect[1].mtu': expected a positive number of bytes, got 'max'"),
    ("[[expect]]\nall = true\nmtu = true\n", "key 'expect[1].mtu': expected a positive number"),
    ("[[expect]]\nall = true\nmtu = 0\n", "key 'expect[1].mtu': expected a positive number"),
    ("[[expect]]\nall = true\nlink_speed = 400000\n",
     "key 'expect[1].link_speed': expected a link speed such as \"400G\""),
    ("[[expect]]\nall = true\npcie_speed = 5.5\n", "key 'expect[1].pcie_speed': expected a PCIe"),
    ("[[expect]]\nall = true\npcie_width = 3\n", "key 'expect[1].pcie_width': expected a PCIe"),
    ("[[expect]]\nall = true\nfec_mode = 'auto'\n", "key 'expect[1].fec_mode': expected a FEC"),
    ("[[expect]]\nall = true\npause_rx = 'off'\n",
     "key 'expect[1].pause_rx': expected true or false, got 'off'"),
    ("[[expect]]\nall = true\npfc = 3\n", "key 'expect[1].pfc': expected the list of priorities"),
    ("[[expect]]\nall = true\ntrust = 'l2'\n", "key 'expect[1].trust': expected \"dscp\" or"),
    ("[[expect]]\nall = true\ndscp_map = { 64 = 3 }\n", "key 'expect[1].dscp_map': expected a"),
    ("[[expect]]\nall = true\ndscp_map = { 26 = 8 }\n", "key 'expect[1].dscp_map': expected a"),
    ("[[expect]]\nall = true\necn = [3, 9]\n", "key 'expect[1].ecn': expected the list"),
    ("[[expect]]\nall = true\ncnp_priority = 8\n", "key 'expect[1].cnp_priority': expected"),
    ("[[expect]]\nall = true\nets = { prio_tc = [0, 3] }\n", "key 'expect[1].ets': expected"),
    ("[[expect]]\nall = true\nets = { tsa = ['wfq', 'ets', 'ets', 'ets', 'ets', 'ets', 'ets', "
     "'ets'] }\n", "key 'expect[1].ets': expected"),
    ("[[expect]]\nall = true\npfc = [3, 3]\n", "key 'expect[1].pfc': expected the list"),
    ("[[expect]]\nall = true\npfc = [8]\n", "key 'expect[1].pfc': expected the list"),
    ("[[expect]]\nall = true\nmtu = 9000\n[[expect]]\ninterfaces = 'ens(1'\nmtu = 9000\n",
     "host.toml: key 'expect[2].interfaces': bad regular expression 'ens(1'"),
    ("[[expect]]\ndriver = 5\nmtu = 9000\n", "key 'expect[1].driver': expected a regular"),
    ("[[expect]]\nall = false\nmtu = 9000\n", "key 'expect[1].all': expected true"),
    ("[[expect]]\nmtu = 9000\n", "host.toml: key 'expect[1]': no selector"),
    ("[[expect]]\nall = true\n", "host.toml: key 'expect[1]': no property to check"),
    ("[expect]\nall = true\n", "host.toml: key 'expect': expected an array of tables"),
    ("expect = 3\n", "host.toml: key 'expect': expected an array of tables ([[expect]]), got int"),
    ("[[consistent]]\nall = true\n", "key 'consistent[1].checks': expected a list of properties"),
    ("[[consistent]]\nall = true\nchecks = ['ring']\n", "key 'consistent[1].checks': expected"),
    ("[[consistent]]\nall = true\nchecks = []\n", "key 'consistent[1].checks': expected"),
    ("[[consistent]]\nall = true\nchecks = ['mtu']\ngroup = ''\n",
     "key 'consistent[1].group': expected a non-empty name"),
    ("[[consistent]]\nall = true\nchecks = ['mtu']\nrx_ring = 8192\n",
     ("key 'consistent[1].rx_ring': unknown key (known: group, interfaces, driver, "
      "pci_address, all, checks)")),
])
def test_config_errors_name_the_file_and_key(text, message):
    with pytest.raises(ConfigError) as e:
        expectations(text)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_other_keys_are_left_to_the_daemon_configuration():
    assert not expectations("interval = '5s'\n[web]\nlisten_address = ':10847'\n")


# --------------------------------------------------------------------------- round trips

@settings(max_examples=200, deadline=None)
@given(DOCUMENT)
def test_valid_configs_round_trip(document):
    parsed = parse_expectations(document, "fabric.toml")
    assert parse_expectations(tomllib.loads(dump_toml(document)), "fabric.toml") == parsed
    table = parsed.as_table()
    assert parse_expectations(tomllib.loads(dump_toml(table)), "fabric.toml") == parsed
    assert parse_expectations(table, "fabric.toml").as_table() == table
    assert bool(parsed) == bool(document)


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from([*CHECKS, *"ab", "all", "interfaces", "checks", "group"]), inner,
        max_size=4),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["expect", "consistent", "interval"]), JUNK, max_size=2))
def test_arbitrary_input_gives_expectations_or_a_config_error(document):
    try:
        parse_expectations(document, "junk.toml")
    except ConfigError as e:
        assert str(e).startswith("junk.toml: key '") and "\n" not in str(e)


# --------------------------------------------------------------------------- hints (#14)


def test_ring_fix_is_clamped_to_the_reported_maximum():
    """ConnectX-7 allows 8192 descriptors: asking for 16384 must not print a command that
    ethtool rejects."""
    samples = lab_samples(ens3np0={"rings": Rings(rx=1024, tx=1024, rx_max=8192, tx_max=8192)})
    got = results(check("[[expect]]\ninterfaces = 'ens3np0'\nrx_ring = 16384\n", samples))
    assert got["ens3np0"].fix == ("ethtool -G ens3np0 rx 8192  # the driver's maximum; 16384 "
                                  "is above it")
    ok = results(check("[[expect]]\ninterfaces = 'ens1np0'\nrx_ring = 16384\n", samples))
    assert ok["ens1np0"].fix.startswith("# not settable: 16384 is above the maximum 8192")


def _width(sample: Sample, current: int, maximum: int) -> Sample:
    """The NIC function's link trained at ``current`` lanes of ``maximum``: its state and
    the gauges rendered from it."""
    gauges = dict(sample.gauges)
    for key in list(gauges):
        if key.metric == "nic_pcie_link_width" and ("hop", "0") in key.labels:
            kind = dict(key.labels)["kind"]
            gauges[key] = float(current if kind == "current" else maximum)
    link = sample.state.pcie_link
    assert link is not None
    state = dataclasses.replace(sample.state, pcie_link=dataclasses.replace(
        link, current_width=current, max_width=maximum))
    return dataclasses.replace(sample, gauges=MappingProxyType(gauges), state=state)


def test_consistency_outlier_above_the_group_is_not_told_to_reseat():
    """Three x16 cards trained x8 and one healthy x16 card: the majority is x8, so the x16
    card is the outlier, but it is at its own maximum. The hint names the cards below
    theirs."""
    samples = lab_samples()
    samples = [_width(s, 16 if s.identity.device == "ens1np0" else 8, 16) for s in samples]
    report = check("[[consistent]]\nall = true\nchecks = ['pcie_width']\n", samples)
    (odd,) = report.violations
    assert (odd.device, odd.expected, odd.actual) == ("ens1np0", "x8", "x16")
    assert "reseat" not in odd.fix
    assert "above the expected x8" in odd.fix
    assert "below their own maximum: ens2np0, ens3np0, ens4np0" in odd.fix


def test_consistency_outlier_that_is_a_narrower_card_is_a_different_model():
    """Three x16 cards and an x8-only card in the group: the x8 card is at its maximum."""
    samples = [_width(s, 8, 8) if s.identity.device == "ens4np0" else s for s in lab_samples()]
    report = check("[[consistent]]\nall = true\nchecks = ['pcie_width']\n", samples)
    (odd,) = report.violations
    assert odd.device == "ens4np0" and "reseat" not in odd.fix
    assert "card's own maximum is x8, below x16: a different card model" in odd.fix


def test_unknown_link_check_agrees_with_show():
    report = check("[[expect]]\nall = true\npcie_width = 16\n",
                   fixture_samples("cx7-link-unknown"))
    (r,) = report.results
    assert (r.passed, r.actual) == (False, "absent")
    assert "link state of eth2 is unknown" in r.fix


def test_vm_link_below_card_max_points_at_the_host():
    report = check("[[expect]]\nall = true\npcie_width = 'max'\n",
                   fixture_samples("qemu-vm-passthrough"))
    got = results(report)
    assert got["enp1s0np0"].passed
    assert not got["enp2s0np0"].passed and "check on the host" in got["enp2s0np0"].fix


# --------------------------------------------------------------------------- RoCE QoS

from nicwatch.model import RoceEcn  # noqa: E402
from nicwatch.sources.dcbnl import qos_from_reply  # noqa: E402

from fixture_dcb import roce_reply  # noqa: E402

ALL_ON = (True,) * 8
ROCE_PROFILE = """\
[[expect]]
driver = 'mlx5_core'
trust = "dscp"
dscp_map = { 26 = 3, 48 = 6 }
ecn = [3]
cnp_priority = 6
cnp_dscp = 48
ets = { prio_tc = [0, 0, 0, 3, 0, 0, 6, 0], tc_bw = [50, 0, 0, 50, 0, 0, 0, 0] }

[[consistent]]
group = "roce"
driver = 'mlx5_core'
checks = ["trust", "dscp_map", "ecn", "cnp_priority", "ets"]
"""


def roce(dscp_map=((26, 3), (48, 6)), rp=ALL_ON, np=ALL_ON, cnp_prio=6) -> dict:
    """A port's dcbnl reply (built to the kernel layout) and vendor mlx5 ecn/ tree records."""
    return {"dcb_qos": qos_from_reply(roce_reply("x", dscp_map=dscp_map)),
            "roce_ecn": RoceEcn(rp_enabled=rp, np_enabled=np, cnp_dscp=48,
                                cnp_802p_prio=cnp_prio)}


def roce_samples(**odd: dict) -> list[Sample]:
    return lab_samples(**{p: {**roce(), **odd.get(p, {})} for p in LAB_PORTS})


def test_a_well_configured_roce_host_passes_every_qos_check():
    report = check(ROCE_PROFILE, roce_samples())
    assert report.violations == () and report.passed == 4 * (6 + 5)


def test_roce_priority_without_ecn_is_named_with_the_sysfs_write_that_fixes_it():
    np = tuple(p != 3 for p in range(8))
    report = check(ROCE_PROFILE, roce_samples(ens2np0=roce(np=np)))
    assert [(r.device, r.check, r.expected, r.actual) for r in report.violations] == [
        ("ens2np0", "ecn", "3", "none"), ("ens2np0", "consistent_ecn", "0,1,2,3,4,5,6,7",
                                          "0,1,2,4,5,6,7")]
    assert report.violations[0].fix == "echo 1 > /sys/class/net/ens2np0/ecn/roce_np/enable/3"
    series = {(dict(labels)["device"], dict(labels)["check"]) for fam, labels, _ in
              violation_series(report) if fam == "nic_expectation_violation"}
    assert series == {("ens2np0", "ecn"), ("ens2np0", "consistent_ecn")}


def test_dscp_map_sending_roce_to_another_priority_than_the_peers():
    report = check(ROCE_PROFILE, roce_samples(ens4np0=roce(dscp_map=((26, 0), (48, 6)))))
    got = {r.check: r for r in report.violations}
    assert set(got) == {"dscp_map", "consistent_dscp_map"}
    assert (got["dscp_map"].expected, got["dscp_map"].actual) == ("26:3,48:6", "26:0,48:6")
    assert got["dscp_map"].fix == "dcb app replace dev ens4np0 dscp-prio 26:3 48:6"
    assert got["consistent_dscp_map"].note == "3/4 agree"
    assert {r.device for r in report.violations} == {"ens4np0"}


def test_pcp_trust_missing_dscp_entry_and_absent_qos():
    samples = lab_samples(ens1np0=roce(dscp_map=()), ens2np0=roce(dscp_map=((48, 6),)))
    got = results(check("[[expect]]\nall = true\ntrust = 'dscp'\ndscp_map = { 26 = 3 }\n",
                        samples), "trust")
    assert (got["ens1np0"].actual, got["ens1np0"].fix) == (
        "pcp", "mlnx_qos -i ens1np0 --trust dscp")
    assert got["ens2np0"].passed and got["ens3np0"].actual == "absent"
    maps = results(check("[[expect]]\nall = true\ndscp_map = { 26 = 3 }\n", samples))
    assert [maps[p].actual for p in ("ens1np0", "ens2np0", "ens3np0")] == [
        "26:none", "26:none", "absent"]


def test_ets_and_cnp_fixes_name_the_commands():
    report = check("[[expect]]\ninterfaces = 'ens1np0'\ncnp_priority = 7\n"
                   "ets = { tsa = ['ets', 'ets', 'ets', 'ets', 'ets', 'ets', 'ets', 'ets'] }\n",
                   roce_samples())
    got = {r.check: r for r in report.violations}
    assert got["cnp_priority"].fix == "echo 7 > /sys/class/net/ens1np0/ecn/roce_np/cnp_802p_prio"
    assert got["ets"].actual == "tsa=ets,ets,ets,ets,ets,ets,strict,ets"
    assert got["ets"].fix == "dcb ets set dev ens1np0 tc-tsa " + " ".join(
        f"{t}:ets" for t in range(8))


# --------------------------------------------------------------------------- SR-IOV and devlink


def reporter(handle: str, name: str, state: str = "healthy", port: int | None = None,
             errors: int = 0) -> DevlinkHealthReporter:
    return DevlinkHealthReporter(handle, port, name, state, errors, errors if state == "healthy"
                                 else 0, 60000, True, True, None)


def test_devlink_health_names_the_reporters_in_error_and_their_commands():
    # Shaped as tests/fixtures/devlink/mlx5-cx6dx.txt: the first PF healthy (its tx reporter
    # recovered three errors), the second PF's fw_fatal in error; ens3np0 has no devlink.
    samples = lab_samples(
        ens1np0={"devlink_health": (reporter("pci/0000:08:00.0", "fw_fatal"),
                                    reporter("pci/0000:08:00.0", "tx", port=65535, errors=3))},
        ens2np0={"devlink_health": (reporter("pci/0000:08:00.1", "fw_fatal", "error", errors=1),
                                    reporter("pci/0000:08:00.1", "tx", port=131071))},
        ens4np0={"devlink_health": (reporter("pci/0000:08:00.1", "rx", "unknown", port=7),)})
    got = results(check("[[expect]]\nall = true\ndevlink_health = 'healthy'\n", samples))
    assert got["ens1np0"].passed and got["ens1np0"].actual == "healthy"
    assert got["ens2np0"].actual == "error: pci/0000:08:00.1 fw_fatal"
    assert got["ens2np0"].fix == ("devlink health diagnose pci/0000:08:00.1 reporter fw_fatal; "
                                  "devlink health recover pci/0000:08:00.1 reporter fw_fatal")
    assert got["ens4np0"].actual == "unknown: pci/0000:08:00.1/7 rx"
    assert got["ens3np0"].actual == "absent" and not got["ens3np0"].passed


def test_devlink_health_fix_recovers_only_what_devlink_can_recover():
    """An ice reporter has no recover operation (the kernel sends no grace period or
    auto_recover for it): `devlink health recover` would answer EOPNOTSUPP, so the fix reads
    its stored dump instead; the mlx5 fw_fatal reporter next to it can be recovered."""
    ice_port = DevlinkHealthReporter("pci/0000:b1:00.3", None, "port", "error", 1, 0, None,
                                     None, True, 1710667769.0)
    samples = lab_samples(ens1np0={"devlink_health": (
        ice_port, reporter("pci/0000:08:00.1", "fw_fatal", "error", errors=1))})
    got = results(check("[[expect]]\nall = true\ndevlink_health = 'healthy'\n", samples))
    assert got["ens1np0"].fix == (
        "devlink health diagnose pci/0000:08:00.1 reporter fw_fatal; "
        "devlink health recover pci/0000:08:00.1 reporter fw_fatal; "
        "devlink health diagnose pci/0000:b1:00.3 reporter port; "
        "devlink health dump show pci/0000:b1:00.3 reporter port")


def test_devlink_health_accepts_only_healthy():
    with pytest.raises(ConfigError) as e:
        expectations("[[expect]]\nall = true\ndevlink_health = 'ok'\n")
    assert "expect[1].devlink_health" in str(e.value) and "healthy" in str(e.value)


def test_sriov_vfs_count_max_and_the_two_step_fix():
    samples = lab_samples(ens1np0={"sriov": SriovState(enabled=4, total=8, announced=4)},
                          ens2np0={"sriov": SriovState(enabled=2, total=8, announced=2)},
                          ens4np0={"sriov": SriovState(enabled=0, total=8, announced=0)})
    got = results(check("[[expect]]\nall = true\nsriov_vfs = 4\n", samples))
    assert got["ens1np0"].passed
    path = "/sys/class/net/ens2np0/device/sriov_numvfs"
    assert (got["ens2np0"].actual, got["ens2np0"].fix) == (
        "2", f"echo 0 > {path} && echo 4 > {path}")
    assert got["ens3np0"].actual == "absent"  # SR-IOV not read for it (--collector.vfs off)
    top = results(check("[[expect]]\nall = true\nsriov_vfs = 'max'\n", samples))
    assert not top["ens1np0"].passed and top["ens1np0"].expected == "8"
    none = results(check("[[expect]]\ninterfaces = 'ens1np0'\nsriov_vfs = 0\n", samples))
    assert none["ens1np0"].fix == "echo 0 > /sys/class/net/ens1np0/device/sriov_numvfs"
    above = results(check("[[expect]]\ninterfaces = 'ens4np0'\nsriov_vfs = 16\n", samples))
    assert "the driver's maximum" in above["ens4np0"].fix and "echo 8 >" in above["ens4np0"].fix


# --------------------------------------------------------------------------- RoCE addressing


def roce_sample(mtu: int, addresses: tuple[str, ...] | None,
                v2_for: tuple[str, ...]) -> Sample:
    """The mlx5-rdma fixture's netdev with its RoCE port, at netdev MTU ``mtu``, holding
    ``addresses`` and RoCE v2 GIDs for ``v2_for`` (plus the link-local pair)."""
    from nicwatch.model import RdmaGid
    from nicwatch.normalize.rdma import gid_for_address
    from nicwatch.sources.sysfs_infiniband import read_rdma_ports

    (port,) = read_rdma_ports(SYSFS / "mlx5-rdma")
    gids = (*(port.gids or ()), *(RdmaGid(10 + i, gid_for_address(a), "RoCE v2", port.netdev)
                                  for i, a in enumerate(v2_for)))
    port = dataclasses.replace(port, netdev_mtu=mtu, addresses=addresses, gids=gids)
    (sample,) = fixture_samples("mlx5-rdma", enp33s0f0np0={"rdma": (port,)})
    return sample


ROCE_EXPECT = "[[expect]]\nall = true\nroce_gid_for_ip = true\nrdma_mtu = 4096\n"


def test_roce_addressing_healthy_busy_host_stays_silent():
    ok = roce_sample(9000, ("198.18.0.1", "2001:db8::1"), ("198.18.0.1", "2001:db8::1"))
    report = check(ROCE_EXPECT, [ok])
    assert report.violations == () and report.passed == 2


def test_missing_roce_v2_gid_and_small_mtu_fail_with_their_fixes():
    bad = roce_sample(1500, ("198.18.0.1", "198.18.0.9"), ("198.18.0.1",))
    got = results(check(ROCE_EXPECT, [bad]), "roce_gid_for_ip")["enp33s0f0np0"]
    assert (got.expected, got.actual) == ("true", "false")
    assert got.fix is not None and "no RoCE v2 GID for 198.18.0.9 on mlx5_0/1" in got.fix
    assert "198.18.0.1" not in got.fix.split(" on ")[0]
    mtu = results(check(ROCE_EXPECT, [bad]), "rdma_mtu")["enp33s0f0np0"]
    assert (mtu.expected, mtu.actual) == ("4096", "1024")
    assert mtu.fix is not None and mtu.fix.startswith("ip link set dev enp33s0f0np0 mtu 4192")


def test_unknown_addresses_are_absent_not_passing():
    unknown = roce_sample(9000, None, ())
    got = results(check(ROCE_EXPECT, [unknown]), "roce_gid_for_ip")["enp33s0f0np0"]
    assert (got.passed, got.actual) == (False, "absent")


def test_rdma_mtu_must_be_an_ib_mtu():
    with pytest.raises(ConfigError, match="expected an RDMA MTU"):
        expectations("[[expect]]\nall = true\nrdma_mtu = 9000\n")
