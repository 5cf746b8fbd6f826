"""The daemon's signals (daemon.SignalThread): blocked in every thread and taken by one, so a
SIGHUP storm costs a reload per RELOAD_HOLDOFF and SIGTERM is still taken at once. With
flag-setting handlers a storm interrupted the serve loop so often that a 0.2 s poll completed
once in 2 s and SIGTERM took 1.6 s (a CI failure of test_lifecycle.py's storm test). Each
case runs in its own process: the signals are blocked for the whole process."""

from __future__ import annotations

import subprocess
import sys

HARNESS = r"""
import os, select, signal, subprocess, sys, time
from nicwatch.daemon import RELOAD_HOLDOFF, SignalThread

way, seconds = sys.argv[1], float(sys.argv[2])
taken = {"reload": 0, "stop": None}
if way == "thread":
    st = SignalThread()
    st.start()
    def poll_flags():
        if st.reload:
            st.reload = False
            taken["reload"] += 1
        if st.stop and taken["stop"] is None:
            taken["stop"] = time.monotonic()
        if select.select([st.fileno()], [], [], 0)[0]:
            os.read(st.fileno(), 4096)
else:  # what the daemon did: handlers that set a flag
    def on_hup(s, f): taken["reload"] += 1
    def on_term(s, f): taken["stop"] = taken["stop"] or time.monotonic()
    signal.signal(signal.SIGHUP, on_hup)
    signal.signal(signal.SIGTERM, on_term)
    def poll_flags(): pass

def work(until):  # the serve loop's own work, counted
    n = 0
    while time.monotonic() < until:
        sum(range(200))
        poll_flags()
        n += 1
    return n

if way == "thread" and seconds == 0:  # single SIGHUPs: taken at once, none lost in the holdoff
    os.kill(os.getpid(), signal.SIGHUP)
    t0 = time.monotonic()
    work(t0 + 0.05)
    first = taken["reload"]
    os.kill(os.getpid(), signal.SIGHUP)  # inside the holdoff: pending, taken after it
    work(t0 + 0.05 + RELOAD_HOLDOFF + 0.1)
    print(first, taken["reload"])
    sys.exit(0)
storms = [subprocess.Popen([sys.executable, "-c", "import os, signal, sys\n"
                            "while True: os.kill(int(sys.argv[1]), signal.SIGHUP)",
                            str(os.getpid())]) for _ in range(2)]
try:
    time.sleep(0.3)
    start = time.monotonic()
    n = work(start + seconds)
    os.kill(os.getpid(), signal.SIGTERM)
    sent = time.monotonic()
    work(sent + 0.3)
finally:
    for s in storms:
        s.kill()
stop = taken["stop"] - sent if taken["stop"] else -1.0
print(n, taken["reload"], f"{stop:.4f}")
"""


def run(way: str, seconds: float) -> list[str]:
    out = subprocess.run([sys.executable, "-c", HARNESS, way, str(seconds)],
                         capture_output=True, text=True, timeout=seconds + 60, check=True)
    return out.stdout.split()


def test_a_sighup_is_taken_at_once_and_one_in_the_holdoff_is_not_lost():
    first, total = map(int, run("thread", 0))
    assert (first, total) == (1, 2)


def test_a_sighup_storm_reloads_at_most_once_per_holdoff_and_sigterm_is_taken_at_once():
    from nicwatch.daemon import RELOAD_HOLDOFF
    seconds = 1.5
    n, reloads, stop = run("thread", seconds)
    assert 1 <= int(reloads) <= seconds / RELOAD_HOLDOFF + 2, reloads
    assert 0 <= float(stop) < 0.3, stop  # SIGTERM during the storm (5 ms idle)
    # The harness reproduces the defect: with handlers the storm interrupts the loop so often
    # that it does a fraction of the work (on the project's VM 1,500-16,000 rounds against
    # 360,000-460,000 with the signal thread).
    n_handlers, _, _ = run("handlers", seconds)
    assert int(n) > 5 * int(n_handlers), (n, n_handlers)
