"""e1000e, a real Intel driver on QEMU's emulated 82574: nicwatch's counters agree with `ethtool
-S` and `ip -s -j link` after traffic between two ports on one QEMU hub, one of them in a
namespace (tests/lab/guest/scenarios/e1000e.py); its driver table
(normalize/drivers/e1000e.py) maps the names this driver really prints."""

from __future__ import annotations

import pytest
from evidence import (
    ethtool_fields,
    ethtool_sections,
    ethtool_stats,
    samples,
    show_entry,
    show_values,
    snapshot_counter,
    snapshot_interface,
    value,
)

A, B = "hub0a", "hub0b"
NETDEV = {"rx_bytes": ("rx", "bytes"), "tx_bytes": ("tx", "bytes"),
          "rx_packets": ("rx", "packets"), "tx_packets": ("tx", "packets"),
          "rx_errors": ("rx", "errors"), "tx_errors": ("tx", "errors"),
          "rx_dropped": ("rx", "dropped"), "tx_dropped": ("tx", "dropped")}


@pytest.fixture(scope="module")
def ev(lab):
    return lab.scenario("e1000e")


def _kernel(ev, port, when="kernel_before"):
    return ev[when][port]


def _between(ev, port, got, read):
    """``got`` (what nicwatch reported between the kernel's two readings) lies between
    ``read(before)`` and ``read(after)``: counters only grow. The links were left to settle,
    so the two readings are nearly always equal; a late ICMP reply may still move one."""
    low, high = read(_kernel(ev, port)), read(_kernel(ev, port, "kernel_after"))
    assert low <= got <= high, (port, low, got, high)


def test_traffic_crossed_the_hub(ev):
    a, b = _kernel(ev, A)["ip"]["stats64"], _kernel(ev, B)["ip"]["stats64"]
    assert a["tx"]["packets"] >= ev["datagrams"] and b["rx"]["packets"] >= ev["datagrams"]
    assert a["tx"]["bytes"] >= ev["datagrams"] * ev["size"]
    assert "0% packet loss" in ev["ping"]


@pytest.mark.parametrize("port", [A, B])
def test_netdev_counters_equal_ip_link_and_ethtool(ev, port):
    entry = show_entry(ev["show"] if port == A else ev["peer_show"], port)
    for name, (direction, field) in NETDEV.items():
        (got,) = show_values(entry, "counters", f"nic_{name}_total").values()
        _between(ev, port, got,
                 lambda k, d=direction, f=field: k["ip"]["stats64"][d][f])
    # e1000e fills the netdev counters from the same registers ethtool -S prints.
    for when in ("kernel_before", "kernel_after"):
        kernel = _kernel(ev, port, when)
        driver = ethtool_stats(kernel["stats"])
        for name in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
            direction, field = NETDEV[name]
            assert driver[name] == kernel["ip"]["stats64"][direction][field]


def test_metrics_and_snapshot_equal_the_kernel(ev):
    m = samples(ev["metrics"])
    interface = snapshot_interface(ev["snapshot"], A)
    for name, (direction, field) in NETDEV.items():
        def read(k, d=direction, f=field):
            return k["ip"]["stats64"][d][f]
        _between(ev, A, value(m, f"nic_{name}_total", device=A), read)
        _between(ev, A, snapshot_counter(interface, f"nic_{name}_total"), read)


def test_driver_table_maps_what_ethtool_prints(ev):
    entry = show_entry(ev["show"], A)
    before = ethtool_stats(_kernel(ev, A)["stats"])
    assert set(entry["raw"]) == set(before)  # every statistic ethtool prints, by its name
    for name, got in entry["raw"].items():
        _between(ev, A, got, lambda k, n=name: ethtool_stats(k["stats"])[n])
    expected = {
        "nic_rx_pause_frames_total": ("rx_flow_control_xon", "rx_flow_control_xoff"),
        "nic_tx_pause_frames_total": ("tx_flow_control_xon", "tx_flow_control_xoff"),
        "nic_rx_discards_total": ("rx_missed_errors",),
        "nic_rx_crc_errors_total": ("rx_crc_errors",),
    }
    for metric, names in expected.items():
        (got,) = [c for c in entry["counters"] if c["metric"] == metric]
        assert got["source"] == "ethtool_ioctl", metric  # the driver table, not netlink
        _between(ev, A, got["value"],
                 lambda k, ns=names: sum(ethtool_stats(k["stats"])[n] for n in ns))


def test_link_rings_and_pause_equal_ethtool(ev):
    kernel = _kernel(ev, A)
    m = samples(ev["metrics"])
    settings = ethtool_fields(kernel["settings"])
    assert settings["Speed"] == "1000Mb/s" and settings["Duplex"] == "Full"
    assert value(m, "nic_link_speed_bytes_per_second", device=A) == 1000 * 125_000
    assert value(m, "nic_link_full_duplex", device=A) == 1
    assert value(m, "nic_link_up", device=A) == 1 and value(m, "nic_carrier", device=A) == 1
    rings = ethtool_sections(kernel["rings"])
    for ring, key in (("rx", "RX"), ("tx", "TX")):
        assert value(m, "nic_ring_descriptors", device=A, ring=ring) == \
            int(rings["Current hardware settings"][key])
        assert value(m, "nic_ring_max_descriptors", device=A, ring=ring) == \
            int(rings["Pre-set maximums"][key])
    pause = ethtool_fields(kernel["pause"])
    assert value(m, "nic_pause_autoneg", device=A) == (pause["Autonegotiate"] == "on")
    for direction in ("rx", "tx"):
        assert value(m, "nic_pause_enabled", device=A, direction=direction) == \
            (pause[direction.upper()] == "on")
    info = ethtool_fields(kernel["info"])
    assert value(m, "nic_info", device=A, driver="e1000e", driver_version=info["version"],
                 firmware_version=info["firmware-version"], mac="52:54:00:6c:61:01",
                 pci_address=info["bus-info"], perm_mac="52:54:00:6c:61:01",
                 rdma_device="") == 1


def test_no_source_errors_on_the_emulated_intel_nic(ev):
    m = samples(ev["metrics"])
    assert value(m, "nicwatch_source_errors_total", device=A, source="sysfs_pci") is None
    assert show_entry(ev["show"], A)["errors"] == []


def test_an_integrated_endpoint_has_no_own_link_and_no_parse_error(ev):
    """rootbus0 sits on q35's root bus (pcie.0) without a root port: a root complex
    integrated endpoint, which has no link registers, so the kernel prints its speeds
    `Unknown`, its width 0 and its max width 255 (PCIE_LNK_WIDTH_UNKNOWN). nicwatch says
    it has no own link to judge, and reads no parse error in it."""
    root = ev["root_bus"]
    assert root["device"].split("/")[-2:][0].startswith("pci0000:")  # on the root bus
    assert root["link"] == {"current_link_speed": "Unknown", "current_link_width": "0",
                            "max_link_speed": "Unknown", "max_link_width": "255"}
    entry = show_entry(root["show"], "rootbus0")
    assert entry["errors"] == []
    unknown = show_values(entry, "gauges", "nic_pcie_verdict_unknown")
    assert unknown[frozenset({("reason", "no_own_link")})] == 1
    assert {dict(k)["reason"] for k, v in unknown.items() if v} == {"no_own_link"}
