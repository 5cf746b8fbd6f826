"""Soak: `nicwatch serve` in a namespace while 1,000 veth pairs are created and deleted under
it (after 200 warm-up cycles), polled every 0.1 s and on every uevent, and scraped every 10
cycles. Resident memory stays within a bound, file descriptors and threads do not grow, the
series of deleted interfaces disappear (no label set grows with the churn) and no counter
goes backwards without a recorded reset.

The churn runs inside the namespace (this file run as a script, as in test_faults.py) over
rtnetlink: interfaces are added one pair per cycle and deleted a group of eight at a time,
because the kernel waits for an RCU grace period per deletion request."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
import urllib.request

import pytest

from faults import (
    counters_never_fall_without_reset,
    in_ns,
    run_scenario,
    terminate,
)
from hostd import NICWATCH
from netns import sh
from promtext import parse_exposition

WARMUP = 200
CYCLES = 1000
GROUP = 8  # pairs per deletion request
PORT = 10847
# The flight recorder keeps polls up to --history.max-bytes (64 MiB by default): by design
# memory grows to that bound. A small bound is filled during the warm-up, so what is left
# to measure is everything else.
HISTORY = "1MiB"
RSS_GROWTH_BOUND_KB = 4 * 1024  # after warm-up; measured growth is in docs/failure-behaviour.md
SCRAPE_EVERY = 10


def usage(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f)
    return {"rss_kb": int(status["VmRSS"].split()[0]), "threads": int(status["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def scrape() -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=10) as r:
        return r.read().decode()


def fresh_scrape() -> dict:
    """A scrape served from a poll that started after this call: the interfaces just added are
    in it, so consecutive scrapes overlap in the interfaces they show whatever the timing (a
    scrape served from an older poll would make the counters' comparisons depend on luck)."""
    m = parse_exposition(scrape())
    done = m[("nicwatch_polls_total", ())] + 2  # the poll under way may predate the change
    deadline = time.monotonic() + 5
    while m[("nicwatch_polls_total", ())] < done:
        assert time.monotonic() < deadline, "the daemon stopped polling"
        time.sleep(0.005)
        m = parse_exposition(scrape())
    return m


def soak_devices(m: dict) -> set[str]:
    return {dict(labels)["device"] for _, labels in m if dict(labels).get("device", "")[:2] == "sk"}


def scenario_churn(pid: int, warmup: int, cycles: int) -> dict:
    """Create and delete veth pairs inside this namespace while scraping the daemon ``pid``."""
    from pyroute2 import IPRoute

    ipr = IPRoute()
    scrapes, peak_devices = [], 0
    empty = set(parse_exposition(scrape()))
    baseline = start = None
    for cycle in range(warmup + cycles):
        if cycle == warmup:
            time.sleep(0.3)  # let the last scrape's connection close
            baseline, start = usage(pid), time.monotonic()
        group = cycle // GROUP + 1  # group 0 is every other interface's (lo)
        ipr.link("add", ifname=f"sk{cycle}a", kind="veth", peer={"ifname": f"sk{cycle}b"},
                 group=group)
        if cycle % GROUP == GROUP - 1 and group > 1:
            ipr.link("del", group=group - 1)
        if cycle % SCRAPE_EVERY == 0:
            scrapes.append(fresh_scrape())
            peak_devices = max(peak_devices, len(soak_devices(scrapes[-1])))
    elapsed = time.monotonic() - start
    time.sleep(0.3)
    final = usage(pid)
    ipr.link("del", group=(warmup + cycles - 1) // GROUP + 1)
    deadline = time.monotonic() + 10
    while left := soak_devices(m := parse_exposition(scrape())):
        assert time.monotonic() < deadline, f"{len(left)} deleted interfaces still have " \
            f"series, e.g. {sorted(left)[:4]}: {[k for k in m if ('device', min(left)) in k[1]]}"
        time.sleep(0.1)
    polls = m[("nicwatch_polls_total", ())]
    return {"baseline": baseline, "final": final, "elapsed": elapsed, "polls": polls,
            "skipped": m[("nicwatch_skipped_polls_total", ())], "peak_devices": peak_devices,
            "scrapes": len(scrapes), "compared": counters_never_fall_without_reset(scrapes),
            "left_over": sorted(map(str, set(m) - empty))}


@pytest.mark.netns
def test_churn_of_1000_interfaces_leaks_nothing(tmp_path):
    ns = f"nws-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", ns)
    proc = None
    try:
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        with open(tmp_path / "daemon.log", "w") as log:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", ns, NICWATCH, "serve",
                 f"--web.listen-address=127.0.0.1:{PORT}", "--interval=0.1s",
                 "--interfaces.include=sk.*", "--collector.raw", f"--history.max-bytes={HISTORY}",
                 f"--state.file={tmp_path / 'state.json'}"], stderr=log)
        deadline = time.monotonic() + 10
        while sh("ip", "netns", "exec", ns, "curl", "-sf", f"http://127.0.0.1:{PORT}/readyz",
                 check=False).returncode:
            assert proc.poll() is None and time.monotonic() < deadline, "daemon did not start"
            time.sleep(0.05)
        got = in_ns(ns, "churn", script=__file__, pid=proc.pid, warmup=WARMUP, cycles=CYCLES)
    finally:
        code = terminate(proc) if proc is not None else None
        sh("ip", "netns", "del", ns, check=False)
    assert code == 0
    base, final = got["baseline"], got["final"]
    print(f"\nsoak: {CYCLES} cycles (+{WARMUP} warm-up) in {got['elapsed']:.1f} s, "
          f"{got['polls']:.0f} polls, {got['skipped']:.0f} skipped, {got['scrapes']} scrapes; "
          f"RSS {base['rss_kb'] / 1024:.1f} -> {final['rss_kb'] / 1024:.1f} MiB, "
          f"fds {base['fds']} -> {final['fds']}, threads {base['threads']} -> {final['threads']}, "
          f"at most {got['peak_devices']} interfaces on one scrape, {got['compared']} comparisons")
    assert final["rss_kb"] - base["rss_kb"] < RSS_GROWTH_BOUND_KB
    assert final["fds"] <= base["fds"] and final["threads"] <= base["threads"]
    # Only the live window of interfaces is ever exported, and once they are all gone no
    # series of theirs (error counts included) is left.
    assert got["peak_devices"] <= 4 * GROUP * 2
    assert got["left_over"] == []
    assert got["compared"] > 1000
    assert got["polls"] > CYCLES / 10
    logged = [json.loads(line) for line in (tmp_path / "daemon.log").read_text().splitlines()]
    assert not [e for e in logged if e["level"] not in ("info", "warning")]


if __name__ == "__main__":
    run_scenario(globals())
