"""RSS after an hour at defaults, for real: `nicwatch serve` with no tuning flags (5 s
interval, 1 h history) on the benchmark's 32 veth x 64 queues for 3,600 s, scraped like
Prometheus every 15 s (OpenMetrics, gzip). RSS and CPU are sampled every minute and
written to benchmarks/results/hour.json after every sample, so the file is usable while
the hour runs; run.py reads it into the report.

    sudo .venv/bin/python benchmarks/hour.py [--seconds 3600]   # runs in the foreground

It takes its own namespace and does not interfere with run.py's (other names). Run it in
the background while run.py measures the rest; both load the machine a little, which the
report says.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (
    PROMETHEUS_ACCEPT,
    RESULTS,
    Namespace,
    Served,
    cpu_seconds,
    stop,
)

from nicwatch.snapshot.atomicfile import write_atomic

SCRAPE_EVERY = 15.0
SAMPLE_EVERY = 60.0


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--out", type=Path, default=RESULTS / "hour.json")
    args = ap.parse_args()
    data: dict = {"started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "commit": commit(), "seconds": args.seconds, "flags": "defaults",
                  "samples": []}
    with Namespace(tag="nwhour") as ns, tempfile.TemporaryDirectory() as logs:
        d = Served(ns, Path(logs), "hour")
        try:
            d.wait_polls(1)
            t0, c0 = time.monotonic(), cpu_seconds(d.proc)
            next_sample = 0.0
            while (elapsed := time.monotonic() - t0) < args.seconds:
                ns.run("curl", "-sf", "--compressed", "-o", "/dev/null", "-H",
                       f"Accept: {PROMETHEUS_ACCEPT}", f"http://127.0.0.1:{d.port}/metrics")
                if elapsed >= next_sample:
                    polls = ns.json("scrape.py", "polls", d.port, 0)["polls"]
                    data["samples"].append({"t": round(elapsed, 1), "polls": polls,
                                            "rss_mb": round(d.rss_mb(), 2),
                                            "cpu_s": round(cpu_seconds(d.proc) - c0, 3)})
                    write_atomic(args.out, (json.dumps(data, indent=1) + "\n").encode())
                    next_sample += SAMPLE_EVERY
                time.sleep(max(0.0, min(SCRAPE_EVERY, args.seconds - elapsed)))
            polls = ns.json("scrape.py", "polls", d.port, 0)["polls"]
            elapsed = time.monotonic() - t0
            data["samples"].append({"t": round(elapsed, 1), "polls": polls,
                                    "rss_mb": round(d.rss_mb(), 2),
                                    "cpu_s": round(cpu_seconds(d.proc) - c0, 3)})
            data["done"] = True
            data["rss_mb"] = data["samples"][-1]["rss_mb"]
            data["cpu_percent"] = 100 * data["samples"][-1]["cpu_s"] / elapsed
            write_atomic(args.out, (json.dumps(data, indent=1) + "\n").encode())
        finally:
            stop(d.proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
