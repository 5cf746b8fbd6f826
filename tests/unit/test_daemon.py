"""The daemon's signal handling at stop: SIGHUP is ignored from then on without the race
CPython reports as "Signal 1 ignored due to race condition" (an unraisable printed on
stderr: seen in a run of test_lifecycle.py's SIGHUP storm)."""

from __future__ import annotations

import subprocess
import sys

HARNESS = r"""
import os, signal, subprocess, sys, threading, time
from nicwatch.daemon import ignore_signal
from nicwatch.sources import threads

way, seconds, iterations = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
hits = []
sys.unraisablehook = lambda u: hits.append(str(u.exc_value))
stop = threading.Event()

def busy():  # a worker thread, as the daemon's HTTP, module and incident threads are
    while not stop.is_set():
        sum(range(1000))

signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the loop: the storm starts first
worker = threading.Thread(target=busy, daemon=True)
threads.start(worker) if way == "daemon" else worker.start()
storms = [subprocess.Popen([sys.executable, "-c", "import os, signal, sys\n"
                            "while True: os.kill(int(sys.argv[1]), signal.SIGHUP)",
                            str(os.getpid())]) for _ in range(3)]
try:
    time.sleep(0.3)
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end and n < iterations and not hits:
        signal.signal(signal.SIGHUP, lambda s, f: None)  # the daemon's flag-setting handler
        if way == "daemon":
            ignore_signal(signal.SIGHUP)
        else:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        n += 1
finally:
    for s in storms:
        s.kill()
    stop.set()
print(n, len(hits), hits[:1])
"""


def run(way: str, seconds: float, iterations: int) -> tuple[int, int, str]:
    out = subprocess.run([sys.executable, "-c", HARNESS, way, str(seconds), str(iterations)],
                         capture_output=True, text=True, timeout=seconds + 60, check=True)
    n, hits, first = out.stdout.split(" ", 2)
    return int(n), int(hits), first


def test_sighup_is_ignored_at_stop_without_the_race_under_a_storm():
    # The harness reproduces the race with what the daemon did (signal.signal(SIG_IGN) with
    # worker threads taking signals): on the project's VM about one in 10,000 stops under a
    # storm from three processes, so it runs until the first one, 20 s at most.
    n, hits, first = run("plain", 20.0, 10 ** 9)
    assert hits == 1 and "race condition" in first, (n, hits, first)
    # What the daemon does now: workers started with the signals blocked, SIGHUP blocked
    # before it is ignored. At least as many stops as the race took, and several times more.
    tries = max(3 * n, 20_000)
    n_fixed, hits_fixed, first_fixed = run("daemon", 60.0, tries)
    assert hits_fixed == 0, first_fixed
    assert n_fixed >= min(tries, 3 * n) or n_fixed >= 20_000, (n, n_fixed)
