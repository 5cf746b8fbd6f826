"""An incident storm: 1,000 links down at once under one `link_down` trigger; prints one JSON
document (docs/failure-behaviour.md, "Incident storms", has the figures).

  python benchmarks/storm.py [--pairs 1000] [--interval 5] [--seconds 60] [--down 1000]
                             [--history-max-bytes 16MiB] [--warmup 90]

Creates a network namespace of its own with PAIRS veth pairs (both ends inside, so 2 x PAIRS
interfaces, all polled), runs `nicwatch serve` in it with one ``[[capture.trigger]] event =
"link_down"`` and the default caps, waits WARMUP seconds (so the flight recorder, capped
at HISTORY_MAX_BYTES, is full: idle is its steady size, not a history still filling), takes
the idle resident size (the highest of five readings), then takes the second
end of DOWN pairs down in one `ip -batch` (each such pair is two links down: one
administratively, its peer losing its carrier). It then samples, every 0.5 s for SECONDS,
the daemon's resident size and its own `nicwatch_last_poll_age_seconds` (how old the served
poll is when the scrape is answered), and the incident families; sends SIGTERM while the
storm's writes are still pending and times the exit; deletes the namespace. Needs root.

Targets (issue #24): peak resident size under twice the idle one, no poll later than two
intervals (the poll age never above 2 x INTERVAL), SIGTERM within 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
PORT = 9861
CONFIG = """
[capture]
directory = "{dir}"

[[capture.trigger]]
event = "link_down"
"""


def sh(*argv: str, input: str | None = None) -> str:
    return subprocess.run(argv, input=input, text=True, check=True, capture_output=True).stdout


def scrape(ns: str) -> dict[str, float]:
    """The series of the families this benchmark reads, by their sample line's name+labels."""
    out = subprocess.run(["ip", "netns", "exec", ns, "curl", "-s", "-m", "10",
                          f"http://127.0.0.1:{PORT}/metrics"], capture_output=True, text=True)
    wanted = ("nicwatch_last_poll_age_seconds", "nicwatch_polls_total", "nic_incidents_total",
              "nicwatch_incidents_merged_total", "nicwatch_incident_writes_pending",
              "nicwatch_incident_write_failures_total", "nicwatch_skipped_polls_total",
              "nicwatch_interfaces ", "nicwatch_poll_duration_seconds")
    values = {}
    for line in out.stdout.splitlines():
        if line.startswith(wanted):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def main() -> dict:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=1000)
    p.add_argument("--down", type=int, default=1000)
    p.add_argument("--interval", type=float, default=5.0)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--history-max-bytes", default="16MiB")
    p.add_argument("--warmup", type=float, default=90.0)
    p.add_argument("--no-trigger", action="store_true",
                   help="the same storm without [capture]: what the storm costs by itself")
    p.add_argument("--samples", help="also write every sample (JSON) to this file")
    p.add_argument("--log-level", default="warning")
    args = p.parse_args()
    ns = f"nwbench-{secrets.token_hex(3)}"
    tmp = Path(tempfile.mkdtemp(prefix="nicwatch-storm-"))
    (tmp / "nicwatch.toml").write_text("" if args.no_trigger
                                       else CONFIG.format(dir=tmp / "incidents"))
    sh("ip", "netns", "add", ns)
    proc = None
    try:
        batch = "link set lo up\n" + "".join(
            f"link add sa{i} type veth peer name sb{i}\nlink set sa{i} up\nlink set sb{i} up\n"
            for i in range(args.pairs))
        sh("ip", "-n", ns, "-batch", "-", input=batch)
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, NICWATCH, "serve", f"--config={tmp / 'nicwatch.toml'}",
             f"--web.listen-address=127.0.0.1:{PORT}", f"--interval={args.interval}s",
             f"--state.file={tmp / 'state.json'}", "--interfaces.include=s[ab][0-9]+",
             f"--history.max-bytes={args.history_max_bytes}",
             f"--log.level={args.log_level}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        daemon = psutil.Process(proc.pid)
        deadline = time.monotonic() + 300
        while scrape(ns).get("nicwatch_polls_total", 0) < 1:
            assert proc.poll() is None and time.monotonic() < deadline, "no polls"
            time.sleep(0.5)
        idle_ages, idle_polls = [], []
        end = time.monotonic() + args.warmup
        while time.monotonic() < end:  # the same samples without a storm: the baseline
            m = scrape(ns)
            idle_ages.append(m.get("nicwatch_last_poll_age_seconds"))
            idle_polls.append(sum(v for k, v in m.items() if k.startswith("nicwatch_poll_dur")))
            time.sleep(0.5)
        idle_ages = [a for a in idle_ages[len(idle_ages) // 3:] if a is not None]
        idle = max(daemon.memory_info().rss for _ in range(5) if time.sleep(0.2) is None)
        before = scrape(ns)
        down = "".join(f"link set sb{i} down\n" for i in range(args.down))
        storm = time.monotonic()
        sh("ip", "-n", ns, "-batch", "-", input=down)
        samples, peak, drained = [], idle, None
        sigterm = None
        while time.monotonic() - storm < args.seconds:
            m = scrape(ns)
            rss = daemon.memory_info().rss
            peak = max(peak, rss)
            samples.append({"t": round(time.monotonic() - storm, 2), "rss": rss,
                            "age": m.get("nicwatch_last_poll_age_seconds"),
                            "pending": m.get("nicwatch_incident_writes_pending"),
                            "poll": sum(v for k, v in m.items()
                                        if k.startswith("nicwatch_poll_dur"))})
            opened = m.get('nic_incidents_total{trigger="link_down"}', 0)
            if drained is None and opened and m.get("nicwatch_incident_writes_pending") == 0:
                drained = round(time.monotonic() - storm, 2)
            last = m
            time.sleep(0.5)
        # SIGTERM while the storm's incidents are open (and, until they drain, written)
        t0 = time.monotonic()
        sent_at = time.time()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        sigterm = round(time.monotonic() - t0, 3)
        err = proc.stderr.read() if proc.stderr else ""
        proc = None
        ages = [s["age"] for s in samples if s["age"] is not None]
        if args.samples:
            Path(args.samples).write_text(json.dumps(samples))
        incidents_dir = tmp / "incidents"
        written = [d for d in incidents_dir.iterdir() if not d.name.startswith(".")] \
            if incidents_dir.exists() else []
        disk = sum(f.stat().st_size // max(1, f.stat().st_nlink)
                   for d in written for f in d.iterdir())
        return {
            "interfaces": int(before.get("nicwatch_interfaces", 0)),
            "links_down": 2 * args.down, "interval_s": args.interval,
            "trigger": not args.no_trigger,
            "history_max_bytes": args.history_max_bytes, "warmup_s": args.warmup,
            "load_average_at_start": os.getloadavg(),
            "rss_idle_mib": round(idle / 2 ** 20, 1), "rss_peak_mib": round(peak / 2 ** 20, 1),
            "rss_peak_over_idle": round(peak / idle, 2),
            "idle_poll_age_max_s": max(idle_ages) if idle_ages else None,
            "idle_poll_seconds_max": round(max(idle_polls[len(idle_polls) // 3:]), 2),
            "storm_poll_seconds_max": round(max(s["poll"] for s in samples), 2),
            "poll_age_max_s": max(ages) if ages else None,
            "poll_age_max_over_interval": round(max(ages) / args.interval, 2) if ages else None,
            "skipped_polls": last.get("nicwatch_skipped_polls_total", 0)
            - before.get("nicwatch_skipped_polls_total", 0),
            "incidents_opened": last.get('nic_incidents_total{trigger="link_down"}'),
            "incidents_merged": last.get('nicwatch_incidents_merged_total{trigger="link_down"}'),
            "write_failures": {k: v for k, v in last.items() if "write_failures" in k},
            "writes_drained_after_s": drained,
            "incident_directories": len(written), "incident_bytes_on_disk": disk,
            "sigterm_exit_s": sigterm, "exit_code": code,
            "stderr_errors": [line for line in err.splitlines() if '"error"' in line][:5],
            "sigterm_sent": sent_at,
            "stderr_after_sigterm": [line[:200] for line in err.splitlines()][-6:]
            if args.log_level != "warning" else [],
        }
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        subprocess.run(["ip", "netns", "del", ns], check=False)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
