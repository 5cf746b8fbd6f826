"""Next checks carry the values the evidence knows instead of placeholders (issue #42 item
8): the PCI address from the sample's identity (or pasted `ethtool -i` bus-info), the rx
ring's maximum from the window's gauges; a placeholder stays only where it is unknown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nicwatch.consumers.diagnosis.engine import Window, evaluate
from nicwatch.model import SeriesKey

CEILING = SeriesKey("nic_pcie_bandwidth_ceiling_bytes_per_second")
SPEED = SeriesKey("nic_link_speed_bytes_per_second")
RX_BYTES = SeriesKey("nic_rx_bytes_total")
OOB = SeriesKey("nic_rx_out_of_buffer_drops_total")
PKTS = SeriesKey("nic_rx_packets_total")
RING = SeriesKey("nic_ring_descriptors", (("ring", "rx"),))
RING_MAX = SeriesKey("nic_ring_max_descriptors", (("ring", "rx"),))
MLX5 = (Path(__file__).resolve().parents[3] / "fixtures" / "published" / "ethtool-S"
        / "mlx5_core-cx4lx-ethq-issue8.txt")


def _pcie(pci: str | None) -> str:
    """A 200G port (25 GB/s) behind a Gen4 x8 link (about 14 GB/s) running at its ceiling."""
    w = Window("eth0", 10.0, {RX_BYTES: 1.4e11}, {RX_BYTES: 1.4e10},
               {CEILING: 1.4e10, SPEED: 2.5e10}, pci_address=pci)
    [v] = [v for v in evaluate([w]) if v.signature == "pcie_limited"]
    return v.next_check


def test_the_pci_address_is_filled_in_where_known() -> None:
    assert _pcie("0000:3b:00.0").startswith("lspci -vv -s 0000:3b:00.0 | grep LnkSta")
    assert "<pci address>" not in _pcie("0000:3b:00.0")
    assert "<pci address>" in _pcie(None)  # unknown: the placeholder stays


def test_the_rx_ring_maximum_is_filled_in_where_known() -> None:
    w = Window("eth0", 10.0, {OOB: 1e6, PKTS: 1e6}, {}, {RING: 1024.0, RING_MAX: 8192.0})
    [v] = [v for v in evaluate([w]) if v.signature == "host_rx_bottleneck"]
    assert "ethtool -G eth0 rx 8192" in v.next_check and "<max>" not in v.next_check


def test_pasted_bus_info_fills_the_pci_address(tmp_path: Path) -> None:
    """The real mlx5 dump with `ethtool -i` pasted above it (bus-info as the CX4 Lx port's
    driver would print it) and 10 s of receive drops: the next check names the address."""
    info = ("driver: mlx5_core\nversion: 5.0-0\nfirmware-version: 14.23.1020 (MT_2420110034)\n"
            "bus-info: 0000:3b:00.0\n")
    before = tmp_path / "a.txt"
    before.write_text(info + MLX5.read_text())
    text = MLX5.read_text().replace("rx_out_of_buffer: 0", "rx_out_of_buffer: 30000")
    after = tmp_path / "b.txt"
    after.write_text(info + text.replace("rx_bytes_phy: 2202570777997",
                                         "rx_bytes_phy: 2205070777997"))
    nicwatch = str(Path(sys.executable).with_name("nicwatch"))
    r = subprocess.run([nicwatch, "diagnose", "--ethtool", str(before), str(after),
                        "--driver", "mlx5_core", "--interval", "10s", "--device", "p3p1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "host_rx_bottleneck" in r.stdout
    # the ring maximum is not in `ethtool -S`: that placeholder stays
    assert "next: ethtool -g p3p1; raise the rx ring to its maximum: ethtool -G p3p1 rx <max>" \
        in r.stdout
    j = subprocess.run([nicwatch, "diagnose", "--ethtool", str(before), str(after),
                        "--driver", "mlx5_core", "--interval", "10s", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert json.loads(j.stdout)["interfaces"][0]["pci_address"] == "0000:3b:00.0"


PAUSED = {SeriesKey("nic_rx_pause_duration_seconds_total", (("priority", "3"),)): 4.0,
          SeriesKey("nic_rx_pfc_frames_total", (("priority", "3"),)): 80000.0}


def _pfc(family: str, on: set[int], source: str | None = None) -> dict[SeriesKey, float]:
    extra = (("source", source),) if source else ()
    return {SeriesKey(family, (("priority", str(p)), *extra)): float(p in on)
            for p in range(8)}


def _paused_by_peer(gauges: dict[SeriesKey, float]) -> str:
    w = Window("eth0", 10.0, PAUSED, {}, gauges)
    [v] = [v for v in evaluate([w]) if v.signature == "paused_by_peer"]
    return v.next_check


def test_a_pause_verdict_names_the_peer_pfc_setting() -> None:
    """#40 item 2: the diagnosis of a pause problem names what the link peer announces
    (LLDP's PFC TLV, nic_lldp_peer_pfc_enabled) beside the port's own PFC."""
    differ = _paused_by_peer({**_pfc("nic_pfc_enabled", {4}),
                              **_pfc("nic_lldp_peer_pfc_enabled", {3}, "lldp")})
    assert differ.endswith("; the link peer announces PFC on 3 (lldp), this port has 4: they "
                           "disagree, align them first (dcb pfc)"), differ
    same = _paused_by_peer({**_pfc("nic_pfc_enabled", {3}),
                            **_pfc("nic_lldp_peer_pfc_enabled", {3}, "dcbnl")})
    assert same.endswith("; the link peer announces PFC on 3 (dcbnl), as this port has")
    assert "link peer" not in _paused_by_peer(_pfc("nic_pfc_enabled", {3}))  # no LLDP
