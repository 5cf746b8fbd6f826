"""The issue's done-when, end to end: `nicwatch demo` (the real daemon over the simulated
ports) turns the seed scenario's PAUSE burst on priority 3 into an incident whose report
names the port, the priority, the onset time and the boot, with the raw statistics saved;
listed by `nicwatch incidents --web.url`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from nicwatch.snapshot.files import load, when

from hostd import NICWATCH, free_port
from promtext import parse_exposition, series


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read()


def test_demo_pause_burst_becomes_an_incident() -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([NICWATCH, "demo", "--interval=0.5s",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no incident within 30 s"
            try:
                m = parse_exposition(get(f"{base}/metrics").decode())
            except OSError:
                m = {}
            if m.get(series("nic_incidents_total", trigger="nic_rx_pfc_frames_total")):
                break
            time.sleep(0.2)
        assert m[series("nicwatch_incident_open", device="enp2s0np0")] == 1
        assert m[series("nicwatch_incident_open", device="enp3s0np0")] == 0
        deadline = time.monotonic() + 10
        while not (listing := json.loads(get(f"{base}/api/v1/incidents")))["incidents"]:
            assert time.monotonic() < deadline, "the incident was counted but not written"
            time.sleep(0.1)
        (item,) = listing["incidents"]
        assert item["device"] == "enp2s0np0" and item["labels"] == {"priority": "3"}
        text = subprocess.run([NICWATCH, "incidents", "--web.url", base],
                              capture_output=True, text=True, check=True).stdout
        assert item["id"] in text and "enp2s0np0" in text and "{priority=3}" in text
        report = subprocess.run([NICWATCH, "incidents", "--web.url", base, "show", item["id"]],
                                capture_output=True, text=True, check=True).stdout
        assert re.search(r"^interface +enp2s0np0$", report, re.M)
        # a unique prefix (the onset and the interface) names it too, from the daemon
        prefix = item["id"].split("-nic_")[0]
        by_prefix = subprocess.run([NICWATCH, "incidents", "--web.url", base, "show", prefix],
                                   capture_output=True, text=True, check=True).stdout
        assert re.search(r"^interface +enp2s0np0$", by_prefix, re.M)  # (it may have closed
        assert re.search(rf"^onset +{re.escape(when(item['onset']))}$", by_prefix, re.M)  # since)
        assert re.search(r"^crossed +[\d.]+k/s on \{priority=3\}$", report, re.M)
        assert re.search(rf"^onset +{re.escape(when(item['onset']))}$", report, re.M)
        assert re.search(rf"^boot id +{item['host']['boot_id']}$", report, re.M)
        onset = load(Path(listing["directory"]) / item["id"] / "onset.json.gz")
        nic = next(i for i in onset.polls[0].interfaces if i.device == "enp2s0np0")
        names = nic.raw["ethtool"].names
        assert "rx_prio3_pause" in names and len(names) > 100  # every raw statistic
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    assert proc.returncode == 0
