"""The whole daemon against the real kernel: `nicwatch serve` inside a test namespace with a
veth pair, traffic between the two ends, and a stat-set change under a running poller."""

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hostd import host_daemon
from netns import ns_sh
from promtext import parse_exposition, promtool_check, series
from waiting import wait_until

pytestmark = pytest.mark.netns
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
PORT = 10847  # each namespace has its own loopback, so the default port is free


class Served:
    def __init__(self, ns: str, state: Path, *flags: str) -> None:
        self.ns = ns
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{PORT}",
             "--interval=0.2s", f"--state.file={state}", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: self.get("/readyz", check=False).returncode == 0, 10,
                   "the daemon becoming ready", 0.05, self.proc)

    def get(self, path: str, check: bool = True, *curl_flags: str) -> subprocess.CompletedProcess:
        return ns_sh(self.ns, "curl", "-sf", *curl_flags, f"http://127.0.0.1:{PORT}{path}",
                     check=check)

    def metrics(self) -> str:
        return self.get("/metrics").stdout

    def polls(self) -> int:
        return int(parse_exposition(self.metrics())[("nicwatch_polls_total", ())])

    def wait_polls(self, n: int) -> None:
        target = self.polls() + n
        wait_until(lambda: self.polls() >= target, 10, f"{n} polls", 0.05)

    def stop(self) -> tuple[int, float, str]:
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=5)
        return self.proc.returncode, time.monotonic() - start, err


@pytest.fixture
def served_veth(veth_pair_mq, tmp_path):
    s = Served(veth_pair_mq.ns_a, tmp_path / "state.json", f"--interfaces.include={veth_pair_mq.a}",
               "--collector.raw", "--collector.rates", "--collector.detail=full")
    yield s, veth_pair_mq
    if s.proc.poll() is None:
        s.stop()


def sysfs_stat(ns: str, dev: str, name: str) -> int:
    return int(ns_sh(ns, "cat", f"/sys/class/net/{dev}/statistics/{name}").stdout)


def test_counters_move_with_traffic_and_equal_the_kernel(served_veth):
    s, p = served_veth
    dev = (("device", p.a),)
    before = parse_exposition(s.metrics())
    p.send_udp(count=200, size=1000)
    s.wait_polls(2)
    after = parse_exposition(s.metrics())
    sent = after[("nic_tx_packets_total", dev)] - before[("nic_tx_packets_total", dev)]
    sent_bytes = after[("nic_tx_bytes_total", dev)] - before[("nic_tx_bytes_total", dev)]
    assert sent >= 200 and sent_bytes >= 200 * (1000 + 8 + 20 + 14)
    for metric, stat in (("nic_tx_packets_total", "tx_packets"),
                         ("nic_tx_bytes_total", "tx_bytes"),
                         ("nic_rx_packets_total", "rx_packets"),
                         ("nic_rx_bytes_total", "rx_bytes")):
        assert after[(metric, dev)] == sysfs_stat(p.ns_a, p.a, stat), metric
    # The raw driver families equal `ethtool -S`.
    ethtool = {k.strip(): int(v) for k, v in re.findall(r"^\s+(\S+): (\d+)$",
               ns_sh(p.ns_a, "ethtool", "-S", p.a).stdout, re.M)}
    peer = after[("nic_driver_stat_value", dev + (("stat", "peer_ifindex"),))]
    assert peer == ethtool["peer_ifindex"]
    drops = sum(v for k, v in ethtool.items() if re.fullmatch(r"rx_queue_\d+_drops", k))
    assert after[("nic_driver_stat_total", dev + (("stat", "rx_queue_N_drops"),))] == drops
    assert ("nic_ring_descriptors", dev + (("ring", "rx"),)) not in after  # veth: no rings
    assert after[series("nic_stat_supported", device=p.a, counter="nic_rx_pause_frames_total")] == 0
    assert after[("nic_channels", dev + (("type", "rx"),))] == 8
    promtool_check(s.metrics())


def test_rate_gauges_see_traffic_and_are_never_negative(served_veth):
    s, p = served_veth
    dev = (("device", p.a),)
    stop = threading.Event()

    def send():
        while not stop.is_set():
            p.send_udp(count=2000, size=100)

    sender = threading.Thread(target=send)
    sender.start()
    rates = []
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and max((r or 0 for r in rates), default=0) <= 100:
            m = parse_exposition(s.metrics())
            rates.append(m.get(("nic_tx_packets_per_second", dev)))
            time.sleep(0.05)
    finally:
        stop.set()
        sender.join()
    seen = [r for r in rates if r is not None]
    assert seen and min(seen) >= 0 and max(seen) > 100
    assert m[("nic_tx_errors_peak_per_second", dev)] == 0  # health families carry a peak
    # Byte counters carry a peak too (throughput bursts); no frame on a veth is under 42 bytes.
    assert m[("nic_tx_bytes_peak_per_second", dev)] >= 42 * max(seen)


def test_stat_set_change_under_a_running_poller(served_veth):
    s, p = served_veth
    dev = (("device", p.a),)
    s.wait_polls(1)
    for rx, tx in ((2, 3), (8, 8), (1, 1)):
        ns_sh(p.ns_a, "ethtool", "-L", p.a, "rx", str(rx), "tx", str(tx))
        s.wait_polls(2)
        m = parse_exposition(s.metrics())
        assert m[("nic_channels", dev + (("type", "rx"),))] == rx
    resets = m[("nic_stat_resets_total", dev + (("reason", "stat_set_changed"),))]
    assert resets == 3
    assert not any(k[0] == "nicwatch_source_errors_total" for k in m)
    assert s.proc.poll() is None
    promtool_check(s.metrics())


def test_sigterm_stops_within_a_second(served_veth):
    s, _ = served_veth
    code, seconds, err = s.stop()
    assert code == 0 and seconds < 1.0, err
    assert '"event": "stopped"' in err


def test_endpoints_and_negotiation(served_veth):
    s, _ = served_veth
    assert s.get("/healthz").stdout == "ok\n"
    assert "nicwatch" in s.get("/").stdout
    assert s.get("/nope", check=False).returncode != 0
    om = s.get("/metrics", True, "-H", "Accept: application/openmetrics-text; version=1.0.0")
    assert om.stdout.endswith("# EOF\n")
    assert "# TYPE nic_tx_bytes counter" in om.stdout
    gz = s.get("/metrics", True, "--compressed", "-H", "Accept-Encoding: gzip")
    assert "nic_tx_bytes_total" in gz.stdout


def test_default_selection_skips_virtual_interfaces(veth_pair):
    out = ns_sh(veth_pair.ns_a, NICWATCH, "show", "--json").stdout
    assert out.strip() == "[]"


def test_serve_on_this_hosts_eth0_passes_promtool(tmp_path):
    """The README promise: on this host, with no configuration, eth0 is served."""
    with host_daemon("--interval=0.5s", f"--state.file={tmp_path / 'state.json'}") as d:
        body = d.wait_for("nicwatch_polls_total")
        m = parse_exposition(body)
        assert m[("nic_link_up", (("device", "eth0"),))] == 1
        assert any(k[0] == "nic_info" and ("device", "eth0") in k[1] for k in m)
        assert not any(("device", "lo") in k[1] for k in m)
        promtool_check(body)


def test_rename_and_removal_are_followed_without_restart(veth_pair, tmp_path):
    p = veth_pair
    s = Served(p.ns_a, tmp_path / "state.json", "--interfaces.include=nw.*", "--interval=30s")
    try:
        assert series("nic_link_up", device=p.a) in parse_exposition(s.metrics())
        renamed = p.a.replace("nwa", "nwr")
        ns_sh(p.ns_a, "ip", "link", "set", p.a, "name", renamed)
        # The interval is 30 s: only the rename's uevent can make the series move this fast.
        wait_until(lambda: series("nic_link_up", device=renamed) in parse_exposition(s.metrics()),
                   5, "the series following the rename", 0.05)
        m = parse_exposition(s.metrics())
        assert not any(("device", p.a) in k[1] for k in m)  # nothing left under the old name
        ns_sh(p.ns_a, "ip", "link", "del", renamed)
        wait_until(lambda: not any(("device", renamed) in k[1]
                                   for k in parse_exposition(s.metrics())),
                   5, "the removed interface's series going", 0.05)
        assert s.proc.poll() is None
    finally:
        code, _, err = s.stop()
    assert code == 0
    assert '"action": "move"' in err and f'"old_name": "{p.a}"' in err


@pytest.mark.parametrize("flags", [
    (),
    ("--collector.raw",),
    ("--collector.raw", "--collector.per-queue=rx_queue_N_xdp_packets,tx_queue_N_xdp_xmit"),
    ("--collector.per-queue=rx_queue_N_drops", "--collector.ethtool-netlink=false"),
    ("--collector.raw", "--collector.ethtool-netlink=false"),
], ids=["default", "raw", "raw+per-queue", "per-queue,no-netlink", "raw,no-netlink"])
def test_every_served_format_passes_strict_parsers_on_veth(veth_pair_mq, tmp_path, flags):
    """Text 0.0.4 and OpenMetrics as served over HTTP from a real veth, in every collector
    combination: prometheus_client's parsers and promtool (promtext.check_strict)."""
    from promtext import check_strict

    s = Served(veth_pair_mq.ns_a, tmp_path / "state.json",
               f"--interfaces.include={veth_pair_mq.a}", *flags)
    try:
        s.wait_polls(2)
        text = s.metrics()
        openmetrics = s.get("/metrics", True, "-H",
                            "Accept: application/openmetrics-text; version=1.0.0").stdout
        assert openmetrics.endswith("# EOF\n") and not text.endswith("# EOF\n")
        # The two scrapes may come from different polls: no sample-by-sample comparison.
        check_strict(text, openmetrics, same_poll=False)
        assert ("nic_driver_stat_value{" in text) == ("--collector.raw" in flags)
        assert ("nic_queue_stat_total{" in text) == any("per-queue" in f for f in flags)
    finally:
        s.stop()


def test_module_collector_on_veth_reports_unsupported_once_and_stops_promptly(veth_pair, tmp_path):
    """--collector.module on a port without module access: the state is served, no module
    values, one log line for it over many polls, and SIGTERM is not held up by the thread."""
    s = Served(veth_pair.ns_a, tmp_path / "state.json", f"--interfaces.include={veth_pair.a}",
               "--collector.module", "--collector.module.interval=10s")
    try:
        s.wait_polls(3)
        wait_until(lambda: 'state="unsupported"} 1' in s.metrics(), 10,
                   "module read state unsupported", 0.1)
        s.wait_polls(10)
        text = s.metrics()
        assert f'nic_module_read_state{{device="{veth_pair.a}",state="unsupported"}} 1' in text
        # the default tier (--collector.detail=port) serves a state set's current state only
        assert f'nic_module_read_state{{device="{veth_pair.a}",state="ok"}}' not in text
        assert "nic_module_read_timestamp_seconds{" not in text
        assert "nic_module_temperature_celsius{" not in text
        assert "nic_module_read_errors_total{" not in text
        assert not re.search(r'nicwatch_source_errors_total\{[^}]*source="module"', text)
    finally:
        code, seconds, stderr = s.stop()
    assert code == 0 and seconds < 2
    events = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert [e["event"] for e in events if e["event"].startswith("module")] == [
        "module_unreadable"]
    assert not [e for e in events if e["level"] in ("warning", "error")], stderr
