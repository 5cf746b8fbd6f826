"""The server gives the memory a burst of connections freed back to the system: once enough
connections ended within an interval, and once more for the burst's tail (the connections
that ended after that trim, fewer than the threshold), which a trim that came while a
flood's connections were still closing left in place. (The 16-20 MB a fresh-clone run kept
after a TLS flood was mostly reference cycles, not this: test_http_cycles.py.)"""

from __future__ import annotations

import time

from nicwatch.exporter.http import server as http_server

from waiting import wait_until


def test_a_burst_and_its_tail_are_trimmed_and_a_quiet_server_is_not(server, monkeypatch):
    trims: list[float] = []
    monkeypatch.setattr(http_server, "TRIM_INTERVAL", 0.1)
    monkeypatch.setattr(http_server, "release_freed_memory", lambda: trims.append(time.time()))
    s = server()
    s._ended = http_server.TRIM_AFTER_CONNECTIONS + 6  # a burst ended
    wait_until(lambda: len(trims) == 1)
    time.sleep(0.35)  # intervals with nothing ended do not lose the tail
    s._ended = 10  # its tail, fewer than the threshold
    wait_until(lambda: len(trims) == 2)
    s._ended = 10  # a few scrapes later: no burst, no trim
    time.sleep(0.6)
    assert len(trims) == 2
    assert s._ended == 10
