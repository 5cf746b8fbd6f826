"""Incident capture against the real kernel: `nicwatch serve` in a test namespace with a veth
pair and a trigger on nic_tx_dropped_total. Taking the peer down while sending makes veth
drop on transmit; an incident appears with the drops in its report and the history from
before the onset, and closes `after` the drops stop. A bad trigger on SIGHUP keeps the
running configuration."""

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from netns import ns_sh, sh
from promtext import parse_exposition, series

pytestmark = pytest.mark.netns
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
PORT = 9847
INTERVAL = 0.25
AFTER = 1.0

CONFIG = """
[capture]
directory = "{dir}"
before = "2s"
after = "1s"
max_bytes = "64MiB"

[[capture.trigger]]
family = "nic_tx_dropped_total"
rate_above = {rate}
device = "nwa.*"
"""


class Served:
    def __init__(self, ns: str, config: Path, state: Path, dev: str) -> None:
        self.ns = ns
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, NICWATCH, "serve", f"--config={config}",
             f"--web.listen-address=127.0.0.1:{PORT}", f"--interval={INTERVAL}s",
             f"--state.file={state}", f"--interfaces.include={dev}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while self.get("/readyz", check=False).returncode != 0:
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "daemon did not become ready"
            time.sleep(0.05)

    def get(self, path: str, check: bool = True) -> subprocess.CompletedProcess:
        return ns_sh(self.ns, "curl", "-sf", f"http://127.0.0.1:{PORT}{path}", check=check)

    def metrics(self) -> dict:
        return parse_exposition(self.get("/metrics").stdout)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=10)
        return err


def incidents(directory: Path) -> list[dict]:
    out = subprocess.run([NICWATCH, "incidents", "--dir", str(directory), "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class Sender:
    """UDP from a to b in bounded batches until stopped."""

    def __init__(self, pair) -> None:
        self.pair = pair
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        for _ in range(2000):  # bounded: at most 2000 batches
            if self.stop.is_set():
                return
            self.pair.send_udp(count=200, size=200)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def test_peer_down_while_sending_opens_an_incident_with_the_evidence(veth_pair, tmp_path):
    p = veth_pair
    # A permanent neighbour: with the peer down, ARP cannot resolve b, and the datagrams
    # must reach veth's transmit (which drops them) instead of waiting in the neighbour queue.
    peer_mac = ns_sh(p.ns_b, "cat", f"/sys/class/net/{p.b}/address").stdout.strip()
    sh("ip", "-n", p.ns_a, "neigh", "replace", p.addr_b, "lladdr", peer_mac, "dev", p.a,
       "nud", "permanent")
    directory = tmp_path / "incidents"
    config = tmp_path / "nicwatch.toml"
    config.write_text(CONFIG.format(dir=directory, rate=50))
    s = Served(p.ns_a, config, tmp_path / "state.json", p.a)
    try:
        with Sender(p):
            time.sleep(6 * INTERVAL)  # history before the onset, traffic but no drops
            assert incidents(directory) == []
            down = time.time()
            sh("ip", "-n", p.ns_b, "link", "set", p.b, "down")
            deadline = time.monotonic() + 10
            while not (found := incidents(directory)):
                assert time.monotonic() < deadline, "no incident appeared"
                time.sleep(0.05)
            (item,) = found
            # Within two intervals of the first drop (one poll to see drops, one for a rate).
            assert item["onset"] - down <= 2 * INTERVAL + 0.15, item["onset"] - down
            assert item["device"] == p.a and item["open"] and item["value"] > 50
            m = s.metrics()
            assert m[series("nicwatch_incident_open", device=p.a)] == 1
            time.sleep(4 * INTERVAL)
            sh("ip", "-n", p.ns_b, "link", "set", p.b, "up")
            up = time.time()
        deadline = time.monotonic() + 10
        while (item := incidents(directory)[0])["open"]:
            assert time.monotonic() < deadline, "the incident did not close"
            time.sleep(0.05)
        closed = time.time()
        assert item["last_fired"] <= up + INTERVAL
        assert AFTER <= item["end"] - item["last_fired"] <= AFTER + 2 * INTERVAL
        assert closed - up >= AFTER - INTERVAL
        m = s.metrics()
        assert m[series("nicwatch_incident_open", device=p.a)] == 0
        assert m[series("nic_incidents_total", trigger="nic_tx_dropped_total")] == 1
        # The report names the drops; the history reaches back before the onset.
        show = subprocess.run([NICWATCH, "incidents", "--dir", str(directory), "show",
                               item["id"]], capture_output=True, text=True, check=True).stdout
        moved = re.search(r"^ +(?:! )?nic_tx_dropped_total +([\d,]+) packets", show, re.M)
        assert moved and int(moved.group(1).replace(",", "")) > 50, show
        assert re.search(r"^state +closed$", show, re.M)
        listing = subprocess.run([NICWATCH, "incidents", "--dir", str(directory)],
                                 capture_output=True, text=True, check=True).stdout
        assert item["id"] in listing and "nic_tx_dropped_total" in listing
        history = subprocess.run(
            [sys.executable, "-c", "import sys; from nicwatch.snapshot.files import load; "
             "s = load(sys.argv[1]); print(min(p.time for p in s.polls), "
             "max(p.time for p in s.polls))", str(directory / item["id"] / "history.json.gz")],
            capture_output=True, text=True, check=True).stdout.split()
        assert float(history[0]) <= item["onset"] - 1.5 and float(history[1]) == item["end"]
        # The same list over HTTP, behind the API's authentication like /api/v1/history.
        api = json.loads(s.get("/api/v1/incidents").stdout)
        assert [i["id"] for i in api["incidents"]] == [item["id"]]
        assert s.get(f"/api/v1/incidents?id={item['id']}").stdout == show
        assert s.get("/api/v1/incidents?id=..%2Fstate.json", check=False).returncode != 0
    finally:
        err = s.stop()
    assert '"event": "incident_opened"' in err and '"event": "incident_closed"' in err


def test_a_bad_trigger_on_sighup_keeps_the_running_capture(veth_pair, tmp_path):
    p = veth_pair
    directory = tmp_path / "incidents"
    config = tmp_path / "nicwatch.toml"
    config.write_text(CONFIG.format(dir=directory, rate=50))
    s = Served(p.ns_a, config, tmp_path / "state.json", p.a)
    try:
        for bad in (CONFIG.format(dir=directory, rate=-1),
                    CONFIG.format(dir=directory, rate=50).replace("nic_tx_dropped_total",
                                                                  "nic_tx_droped_total"),
                    CONFIG.format(dir=directory, rate=50).replace('"1s"', '"soon"')):
            config.write_text(bad)
            s.proc.send_signal(signal.SIGHUP)
            time.sleep(3 * INTERVAL)
            assert s.proc.poll() is None
        m = s.metrics()  # the running trigger is still there
        assert m[series("nic_incidents_total", trigger="nic_tx_dropped_total")] == 0
    finally:
        err = s.stop()
    logged = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    failures = [e for e in logged if e["event"] == "reload_failed"]
    assert len(failures) == 3
    assert "rate_above" in failures[0]["error"] and "nic_tx_droped_total" in failures[1]["error"]
    assert "capture.after" in failures[2]["error"]
