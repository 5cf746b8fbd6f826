"""netdevsim under ethtool: nicwatch's rings, channels, PAUSE, FEC and their statistics equal
what `ethtool` prints in the same guest (tests/lab/guest/scenarios/nsim_ethtool.py).

The ethtool netlink replies that tests/unit/sources/test_ethtool_netlink.py builds from the
kernel's layouts are here answered by a real driver."""

from __future__ import annotations

import json

import pytest
from evidence import (
    check_results,
    ethtool_fields,
    ethtool_sections,
    ethtool_stats,
    samples,
    series,
    show_entry,
    show_values,
    snapshot_counter,
    snapshot_interface,
    value,
)


@pytest.fixture(scope="module")
def ev(lab):
    return lab.scenario("nsim_ethtool")


def _ports(ev):
    return ev["ports"]


def test_rings_and_channels_equal_ethtool(ev):
    m = samples(ev["metrics"])
    for port in _ports(ev):
        rings = ethtool_sections(ev["kernel_before"][port]["rings"])
        channels = ethtool_sections(ev["kernel_before"][port]["channels"])
        for ring, key in (("rx", "RX"), ("tx", "TX")):
            assert value(m, "nic_ring_descriptors", device=port, ring=ring) == \
                int(rings["Current hardware settings"][key])
            assert value(m, "nic_ring_max_descriptors", device=port, ring=ring) == \
                int(rings["Pre-set maximums"][key])
        assert value(m, "nic_channels", device=port, type="combined") == \
            int(channels["Current hardware settings"]["Combined"])
        assert value(m, "nic_channels_max", device=port, type="combined") == \
            int(channels["Pre-set maximums"]["Combined"])
        # ethtool prints n/a for the channel types netdevsim lacks: nicwatch has no series.
        assert value(m, "nic_channels", device=port, type="rx") is None
    # What the scenario set on the first port is what both report.
    first = _ports(ev)[0]
    assert value(m, "nic_ring_descriptors", device=first, ring="rx") == 1024
    assert value(m, "nic_channels", device=first, type="combined") == 2


def test_pause_settings_and_statistics_equal_ethtool(ev):
    m = samples(ev["metrics"])
    first, second = _ports(ev)
    for port in (first, second):
        text = ev["kernel_before"][port]["pause_stats"]
        fields = ethtool_fields(text)
        assert value(m, "nic_pause_autoneg", device=port) == (fields["Autonegotiate"] == "on")
        for direction in ("rx", "tx"):
            assert value(m, "nic_pause_enabled", device=port, direction=direction) == \
                (fields[direction.upper()] == "on")
    stats = ethtool_stats(ev["kernel_before"][first]["pause_stats"])
    assert stats == {"tx_pause_frames": 2, "rx_pause_frames": 1}  # netdevsim's fixed values
    assert value(m, "nic_rx_pause_frames_total", device=first) == stats["rx_pause_frames"]
    assert value(m, "nic_tx_pause_frames_total", device=first) == stats["tx_pause_frames"]
    # report_stats_{rx,tx} = 0: ethtool prints no statistics, and nicwatch has no series
    # (absent is not zero) and says the family is unsupported.
    assert "Statistics" not in ev["kernel_before"][second]["pause_stats"]
    assert value(m, "nic_rx_pause_frames_total", device=second) is None
    assert value(m, "nic_stat_supported", device=second, counter="nic_rx_pause_frames_total") == 0
    # At the default detail tier (port) nic_stat_supported keeps only the families an interface
    # lacks (value 0); a family it provides is supported where its series are served.
    assert value(m, "nic_stat_supported", device=first, counter="nic_rx_pause_frames_total") \
        is None


def test_fec_mode_and_statistics_equal_ethtool(ev):
    m = samples(ev["metrics"])
    for port in _ports(ev):
        kernel = json.loads(ev["kernel_before"][port]["json_fec_stats"])[0]
        fields = ethtool_fields(ev["kernel_before"][port]["fec_stats"])
        modes = series(m, "nic_fec_mode_info", device=port)
        assert len(modes) == 1
        labels = dict(next(iter(modes)))
        # ethtool prints "None" where the kernel reported no mode; nicwatch leaves it empty.
        active = fields["Active FEC encoding"]
        assert labels["active"] == ("" if active == "None" else active.lower())
        assert labels["configured"] == ",".join(
            c.lower() for c in kernel["config"] if c != "None")
        stats = kernel.get("statistics") or None  # 6.1 prints {}
        if stats is None:  # a kernel whose netdevsim has no FEC statistics (6.1): none here
            assert not series(m, "nic_fec_corrected_blocks_total", device=port)
            continue
        assert value(m, "nic_fec_corrected_blocks_total", device=port, lane="total") == \
            stats["corrected_blocks"]["total"]
        assert value(m, "nic_fec_uncorrectable_blocks_total", device=port, lane="total") == \
            stats["uncorrectable_blocks"]["total"]
    assert ethtool_fields(ev["kernel_before"][_ports(ev)[0]]["fec_stats"])[
        "Active FEC encoding"] == "RS"


def test_no_link_modes_where_ethtool_has_none(ev):
    """netdevsim has no get_link_ksettings: `ethtool DEV` fails (ENODATA) and nicwatch
    exports no speed or duplex, rather than a 0."""
    m = samples(ev["metrics"])
    for port in _ports(ev):
        assert "failed" in ev["kernel_before"][port]["settings"]
        assert value(m, "nic_link_speed_bytes_per_second", device=port) is None
        assert value(m, "nic_link_full_duplex", device=port) is None


def test_no_driver_statistics_where_ethtool_has_none(ev):
    for port in _ports(ev):
        assert "no stats available" in ev["kernel_before"][port]["stats"]["failed"]
        assert show_entry(ev["show"], port)["raw"] in (None, {})


def test_show_json_and_snapshot_agree_with_ethtool(ev):
    first = _ports(ev)[0]
    entry = show_entry(ev["show"], first)
    rings = ethtool_sections(ev["kernel_after"][first]["rings"])["Current hardware settings"]
    assert show_values(entry, "gauges", "nic_ring_descriptors") == {
        frozenset({("ring", "rx")}): int(rings["RX"]),
        frozenset({("ring", "tx")}): int(rings["TX"])}
    pause = ethtool_stats(ev["kernel_after"][first]["pause_stats"])
    assert show_values(entry, "counters", "nic_rx_pause_frames_total") == {
        frozenset(): pause["rx_pause_frames"]}
    interface = snapshot_interface(ev["snapshot"], first)
    assert snapshot_counter(interface, "nic_tx_pause_frames_total") == pause["tx_pause_frames"]
    fec = json.loads(ev["kernel_after"][first]["json_fec_stats"])[0].get("statistics") or None
    assert snapshot_counter(interface, "nic_fec_corrected_blocks_total", lane="total") == \
        (None if fec is None else fec["corrected_blocks"]["total"])


def test_check_passes_what_ethtool_shows_and_fails_what_it_does_not(ev):
    first, second = _ports(ev)
    status, report = check_results(ev["check"])
    results = {(r["device"], r["check"]): r for r in report["results"]}
    for check in ("rx_ring", "tx_ring", "channels", "fec_mode", "pause_autoneg", "pause_rx",
                  "pause_tx"):
        assert results[(first, check)]["result"] == "pass", results[(first, check)]
    # The second port's rx ring is what ethtool says (0, never set), not the 1024 expected.
    rx = ethtool_sections(ev["kernel_before"][second]["rings"])["Current hardware settings"]["RX"]
    failed = results[(second, "rx_ring")]
    assert failed["result"] == "fail" and failed["actual"] == rx
    assert failed["fix"] == f"ethtool -G {second} rx 1024"
    assert status == 1 and not report["passed"]
