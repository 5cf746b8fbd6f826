"""HTTP clients for the benchmarks, run inside the benchmark namespace by run.py; each mode
prints one JSON document.

  latency PORT CONCURRENCY REQUESTS   p50/p99 per format x compression, keep-alive clients
  burst PORT REQUESTS ACCEPT GZIP [METRIC]  sequential scrapes; latencies and, if given,
                                      the values of METRIC (a full sample name) per scrape
  polls PORT N                        wait until nicwatch_polls_total >= N
"""

from __future__ import annotations

import http.client
import json
import re
import statistics
import sys
import threading
import time

PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
TEXT_ACCEPT = "text/plain;version=0.0.4"
VARIANTS = {"text": (TEXT_ACCEPT, False), "text+gzip": (TEXT_ACCEPT, True),
            "openmetrics": (PROMETHEUS_ACCEPT, False),
            "openmetrics+gzip": (PROMETHEUS_ACCEPT, True)}


def headers(accept: str, gz: bool) -> dict:
    return {"Accept": accept, "Accept-Encoding": "gzip" if gz else "identity"}


def scrape(conn: http.client.HTTPConnection, hdrs: dict) -> bytes:
    conn.request("GET", "/metrics", headers=hdrs)
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"status {r.status}")
    return body


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def latency(port: int, concurrency: int, requests: int) -> dict:
    out = {}
    for name, (accept, gz) in VARIANTS.items():
        hdrs = headers(accept, gz)
        size = len(scrape(http.client.HTTPConnection("127.0.0.1", port, timeout=30), hdrs))
        times: list[float] = []
        lock = threading.Lock()

        def client(hdrs=hdrs, times=times, lock=lock):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            mine = []
            for _ in range(requests // concurrency):
                t0 = time.perf_counter()
                scrape(conn, hdrs)
                mine.append(time.perf_counter() - t0)
            conn.close()
            with lock:
                times.extend(mine)

        threads = [threading.Thread(target=client) for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out[name] = {"bytes": size, "requests": len(times), "p50": percentile(times, 50),
                     "p99": percentile(times, 99), "max": max(times)}
    return out


def burst(port: int, requests: int, accept: str, gz: bool, metric: str | None) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    hdrs = headers(accept, gz)
    times, values = [], []
    body = b""
    pattern = (re.compile(rb"^" + re.escape(metric.encode()) + rb" (\S+)$", re.MULTILINE)
               if metric else None)
    for _ in range(requests):
        t0 = time.perf_counter()
        body = scrape(conn, hdrs)
        times.append(time.perf_counter() - t0)
        if pattern:
            m = pattern.search(body)
            values.append(float(m.group(1)) if m else None)
    series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#")) \
        if not gz else None
    return {"p50": statistics.median(times), "p99": percentile(times, 99), "bytes": len(body),
            "series": series, "values": values}


def polls(port: int, n: int) -> dict:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            m = re.search(rb"^nicwatch_polls_total (\d+)", scrape(conn, {}), re.MULTILINE)
            conn.close()
            if m and int(m.group(1)) >= n:
                return {"polls": int(m.group(1))}
        except (OSError, RuntimeError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    raise SystemExit(f"port {port}: fewer than {n} polls after 600 s")


def main() -> None:
    mode, port, *rest = sys.argv[1:]
    if mode == "latency":
        result = latency(int(port), int(rest[0]), int(rest[1]))
    elif mode == "burst":
        result = burst(int(port), int(rest[0]), rest[1], rest[2] == "gzip",
                       rest[3] if len(rest) > 3 else None)
    elif mode == "polls":
        result = polls(int(port), int(rest[0]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
