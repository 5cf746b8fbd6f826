"""Hostile clients on loopback: connection floods, wrong-password floods, malformed
requests and concurrent history downloads. Under each, a scraper keeps getting answers
quickly, and the daemon's log gets one line per event, never a traceback.

Linux routes all of 127.0.0.0/8 to the loopback interface, so binding a client socket to
127.0.0.2, 127.0.0.3, ... gives the server distinct client addresses without a namespace.
Every flood here is bounded in count and time.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time

import bcrypt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nicwatch.consumers.history import HISTORY_MAX_CONCURRENT
from nicwatch.daemon import Daemon
from nicwatch.exporter.http import Exposition

from faults import Process
from httpd import client_context
from waiting import wait_until

BODY = b"x 1\n" * 1000


def connect_from(source: str, port: int) -> socket.socket:
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def scrape(port: int, source: str = "127.0.0.1", ctx: ssl.SSLContext | None = None,
           headers: dict | None = None, timeout: float = 5) -> tuple[int, float, bytes]:
    """(status, seconds, body) of one GET /metrics on a new connection from ``source``."""
    start = time.monotonic()
    if ctx is None:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                       source_address=(source, 0))
    else:
        c = http.client.HTTPSConnection("localhost", port, timeout=timeout, context=ctx,
                                        source_address=(source, 0))
    try:
        c.request("GET", "/metrics", headers=headers or {})
        r = c.getresponse()
        body = r.read()
        return r.status, time.monotonic() - start, body
    finally:
        c.close()


def basic(user: str, password: bytes | str) -> dict:
    raw = user.encode() + b":" + (password if isinstance(password, bytes) else password.encode())
    return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


def flood(port: int, sources: list[str], n: int) -> list[socket.socket]:
    """``n`` idle connections, spread over ``sources`` round-robin, all from this process."""
    return [connect_from(sources[i % len(sources)], port) for i in range(n)]


# -- connection floods ----------------------------------------------------------------------

def test_600_idle_connections_from_one_address_do_not_lock_scrapers_out(server):
    s = server()
    s.publish(Exposition(lambda om: BODY))
    idle = flood(s.port, ["127.0.0.2"], 600)
    try:
        wait_until(lambda: s.open_connections + s.evicted >= 600)
        # The flooder's newest connections hold its cap; older silent ones are moved over
        # it (a request on one would get 429) and count in the total cap, which closes the
        # oldest beyond 512.
        assert s.open_connections <= s.max_connections == 512
        assert s.moved_over_cap >= 600 - s.max_connections_per_client - s.evicted
        assert s.evicted >= 600 - 512
        for source in ("127.0.0.1", "127.0.0.2"):  # another client, and the flooder's address
            status, seconds, body = scrape(s.port, source, timeout=2)
            assert (status, body) == (200, BODY) and seconds < 1
    finally:
        for c in idle:
            c.close()


def test_600_idle_connections_from_many_addresses_do_not_lock_scrapers_out(server):
    s = server(pressure_idle_timeout=1.0)
    s.publish(Exposition(lambda om: BODY))
    sources = [f"127.0.0.{i}" for i in range(2, 12)]  # 60 each: under the per-client cap
    idle = flood(s.port, sources, 600)
    try:
        wait_until(lambda: s.open_connections + s.evicted >= 600)
        assert s.open_connections <= s.max_connections == 512
        assert s.evicted >= 600 - 512
        for source in ("127.0.0.1", "127.0.0.5"):
            status, seconds, body = scrape(s.port, source, timeout=2)
            assert (status, body) == (200, BODY) and seconds < 1
        # Over half the cap, a keep-alive connection waits pressure_idle_timeout, not 120 s.
        with connect_from("127.0.0.1", s.port) as keep:
            keep.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert keep.recv(65536).startswith(b"HTTP/1.1 200 ")
            start = time.monotonic()
            keep.settimeout(10)
            assert keep.recv(1) == b""  # closed by the server
            assert time.monotonic() - start < 5
    finally:
        for c in idle:
            c.close()


def test_idle_flood_with_tls_and_auth_still_lets_the_scraper_in(server, pki, tmp_path):
    cfg = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode()
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
                   f"  key_file: {pki}/server.key\nbasic_auth_users:\n  prom: {hashed}\n")
    s = server(web_config_file=str(cfg), handshake_timeout=30)
    s.publish(Exposition(lambda om: BODY))
    # TCP connections that never send a ClientHello: they sit in the TLS handshake.
    idle = flood(s.port, [f"127.0.0.{i}" for i in range(2, 12)] + ["127.0.0.1"] * 2, 660)
    try:
        wait_until(lambda: s.open_connections + s.evicted >= 660)
        assert s.open_connections <= 512
        ctx = client_context(pki, None)
        for source in ("127.0.0.1", "127.0.0.20"):
            status, seconds, body = scrape(s.port, source, ctx, basic("prom", "s3cret"),
                                           timeout=3)
            assert (status, body) == (200, BODY) and seconds < 2
        assert scrape(s.port, "127.0.0.20", ctx, basic("prom", "nope"), timeout=3)[0] == 401
    finally:
        for c in idle:
            c.close()


SCRAPERS = r"""
import http.client, json, sys, threading
port, path, n, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
counts, lock, go = {}, threading.Lock(), threading.Barrier(n)
def scrape():
    go.wait()
    for _ in range(rounds):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        try:
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            key = f"{r.status}{'+retry-after' if r.getheader('Retry-After') else ''}"
        except OSError as e:
            key = type(e).__name__
        finally:
            c.close()
        with lock:
            counts[key] = counts.get(key, 0) + 1
threads = [threading.Thread(target=scrape) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(counts))
"""


def test_parallel_scrapers_beyond_the_per_client_cap_get_429_never_a_reset(server):
    """#43 item 6: 200 parallel scrapers from one address (a proxy, a NAT) against the cap
    of 64 connections per address. Before, a connection beyond the cap closed another
    that had not sent its request yet, or was closed itself when all were answering: the
    report lost up to 59 % of requests to resets. Now each request gets an answer: 200, or
    429 with Retry-After."""
    s = server()
    s.add_route("GET", "/work", lambda q, b: (time.sleep(0.02), (200, "text/plain", b"ok\n"))[1])
    out = subprocess.run([sys.executable, "-c", SCRAPERS, str(s.port), "/work", "200", "3"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    counts = json.loads(out)
    assert sum(counts.values()) == 600
    assert set(counts) <= {"200", "429+retry-after"}, counts
    assert counts.get("429+retry-after", 0) > 0 and s.refused_over_cap > 0, counts  # the cap
    assert counts["200"] >= 64, counts


def test_a_request_that_arrived_unread_is_not_evicted_while_an_idle_one_can_go(server):
    """The total cap's eviction skips a connection whose request is in its socket but not read
    yet: a fresh-clone run lost the slow request above when the flood came between its send
    and the server's read. Here the request and the flood are sent back to back, so the server
    accepts all of them before it reads any."""
    release = threading.Event()
    s = server(max_connections=2)
    s.add_route("GET", "/slow", lambda q, b: release.wait(10) and (200, "text/plain", b"done\n"))
    for _ in range(5):
        c = connect_from("127.0.0.1", s.port)
        c.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        idle = flood(s.port, ["127.0.0.1"], 3)
        try:
            wait_until(lambda: s.evicted >= 2)
            release.set()
            answer = b""
            while chunk := c.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"done\n"), answer
        finally:
            release.clear()
            c.close()
            for i in idle:
                i.close()
        wait_until(lambda: s.open_connections == 0)
        s.evicted = 0


def test_a_request_in_progress_is_never_evicted(server):
    release = threading.Event()
    s = server(max_connections=2)
    s.add_route("GET", "/slow", lambda q, b: release.wait(10) and (200, "text/plain", b"done\n"))
    results = []

    def slow():
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        c.request("GET", "/slow")
        r = c.getresponse()
        results.append((r.status, r.read()))
        c.close()
    t = threading.Thread(target=slow)
    t.start()
    try:
        wait_until(lambda: s.open_connections == 1)
        idle = flood(s.port, ["127.0.0.1"], 3)  # each evicts the previous idle one
        wait_until(lambda: s.evicted >= 2)
        assert s.open_connections == 2
        release.set()
        t.join(timeout=10)
        assert results == [(200, b"done\n")]
        for c in idle:
            c.close()
    finally:
        release.set()
        t.join()


# -- wrong-password floods ------------------------------------------------------------------

ATTACKER = r"""
import base64, http.client, json, os, sys, threading, time
port, seconds, spread = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "spread"
attackers = int(sys.argv[4]) if len(sys.argv) > 4 else 64
counts, lock = {}, threading.Lock()
def attack(i):
    source = f"127.0.0.{2 + i}" if spread else "127.0.0.1"
    deadline = time.monotonic() + seconds
    c = None
    while time.monotonic() < deadline:
        try:
            if c is None:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                               source_address=(source, 0))
            token = base64.b64encode(b"prom:" + os.urandom(12).hex().encode()).decode()
            c.request("GET", "/metrics", headers={"Authorization": "Basic " + token})
            r = c.getresponse()
            r.read()
            key = f"{r.status}{'+retry-after' if r.getheader('Retry-After') else ''}"
            if r.getheader("Connection") == "close":
                c.close(); c = None
        except OSError as e:
            key = type(e).__name__
            c = None
        with lock:
            counts[key] = counts.get(key, 0) + 1
threads = [threading.Thread(target=attack, args=(i,)) for i in range(attackers)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(counts))
"""


@pytest.mark.parametrize("spread, pending", [("same", None), ("spread", 8), ("spread", None)])
def test_a_wrong_password_flood_does_not_starve_a_good_scraper(server, tmp_path, spread,
                                                               pending):
    """64 clients sending random wrong passwords (from 64 addresses, or all from the
    scraper's own), against cost-10 hashes as `htpasswd -nBC 10` makes: the good scraper,
    whose credentials are cached, keeps being answered at once; a new client's first check
    waits its turn behind at most one check per flooding address."""
    cfg = tmp_path / "web.yml"
    hashes = [bcrypt.hashpw(pw, bcrypt.gensalt(10)).decode() for pw in (b"s3cret", b"n3w")]
    cfg.write_text(f"basic_auth_users:\n  prom: {hashes[0]}\n  late: {hashes[1]}\n")
    s = server(web_config_file=str(cfg), **({"max_bcrypt_pending": pending} if pending else {}))
    s.publish(Exposition(lambda om: BODY))
    good = basic("prom", "s3cret")
    assert scrape(s.port, headers=good)[0] == 200  # checked once, then cached
    attacker = subprocess.Popen([sys.executable, "-c", ATTACKER, str(s.port), "6", spread],
                                stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1)  # the flood is under way
        latencies = []
        end = time.monotonic() + 4
        while time.monotonic() < end:
            status, seconds, body = scrape(s.port, headers=good, timeout=15)
            assert (status, body) == (200, BODY)
            latencies.append(seconds)
            time.sleep(0.1)
        if spread == "spread" and pending is None:
            # 64 flooding addresses, each with one check queued at most: ~64 x 70 ms.
            status, seconds, _ = scrape(s.port, "127.0.0.200", headers=basic("late", "n3w"),
                                        timeout=15)
            assert status == 200 and seconds < 12
        out, _ = attacker.communicate(timeout=30)
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait()
    counts = json.loads(out)
    # Before: every check queued behind bcrypt, p50 9 s with 64 attackers.
    assert statistics.median(latencies) < 0.5, latencies
    assert max(latencies) < 3, latencies
    # Queued attackers may give up waiting (their timeout is 10 s), and a keep-alive
    # connection the server closes just as the attacker sends on it is reset (TCP, seen once
    # in 42,000 requests) or ends before any byte of the answer (http.client's
    # RemoteDisconnected, a ConnectionResetError: with 64 attackers and the scraper on one
    # address the per-client cap evicts idle connections, and one attacker in 45,000-62,000
    # requests hit it in 2 of 10 runs on the project's VM with the server of 5a10d9a, and
    # as often since); none got in, none saw a server error.
    assert "200" not in counts and set(counts) <= {
        "401", "429+retry-after", "TimeoutError", "ConnectionResetError", "BrokenPipeError",
        "RemoteDisconnected"}, counts
    if spread == "same" or pending:  # one check per address, `pending` addresses at most
        assert counts.get("429+retry-after", 0) > 0, counts


def test_more_flooding_addresses_than_queue_places_do_not_lock_a_new_login_out(server,
                                                                               tmp_path):
    """#43 item 5: with more flooding addresses than ``max_bcrypt_pending`` (8 for 4 here,
    as 300 for the default 256 in the report) the queue was always full, and a correct
    login not yet cached got 429 until a place happened to be free (first success after
    52.6 s with 300 attackers). Now a queued check from an address that keeps failing
    gives its place to one from an address with fewer failures: the new login is checked
    next."""
    cfg = tmp_path / "web.yml"
    hashes = [bcrypt.hashpw(pw, bcrypt.gensalt(10)).decode() for pw in (b"s3cret", b"n3w")]
    cfg.write_text(f"basic_auth_users:\n  prom: {hashes[0]}\n  late: {hashes[1]}\n")
    s = server(web_config_file=str(cfg), max_bcrypt_pending=4)
    s.publish(Exposition(lambda om: BODY))
    attacker = subprocess.Popen([sys.executable, "-c", ATTACKER, str(s.port), "10", "spread",
                                 "8"], stdout=subprocess.PIPE, text=True)
    try:
        # The flood is under way, and each flooding address has failed once (its first
        # check ranks with a newcomer's: no failure yet).
        wait_until(lambda: s.failing_clients >= 8, timeout=8, alive=attacker)
        start, answers = time.monotonic(), []
        while time.monotonic() - start < 4:
            status, _, body = scrape(s.port, "127.0.0.200", headers=basic("late", "n3w"),
                                     timeout=15)
            answers.append((status, round(time.monotonic() - start, 2)))
            if status == 200:
                break
            time.sleep(1)  # Retry-After: 1
        waited = time.monotonic() - start
        out, _ = attacker.communicate(timeout=30)
    finally:
        if attacker.poll() is None:
            attacker.kill()
            attacker.wait()
    counts = json.loads(out)
    assert answers[-1][0] == 200 and body == BODY, (answers, waited)
    assert waited < 3, (answers, waited)
    assert "200" not in counts and counts.get("429+retry-after", 0) > 0, counts  # still full
    assert s.bcrypt_displaced > 0


def test_passwords_over_72_bytes_behave_as_the_exporter_toolkit(server, tmp_path):
    """Go's bcrypt.CompareHashAndPassword uses the first 72 bytes of the password (only
    GenerateFromPassword refuses longer ones); Python's bcrypt raises instead."""
    cfg = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"a" * 72, bcrypt.gensalt(4)).decode()
    cfg.write_text(f"basic_auth_users:\n  prom: {hashed}\n")
    s = server(web_config_file=str(cfg))
    s.publish(Exposition(lambda om: BODY))
    for _ in range(2):  # checked, then from the cache
        assert scrape(s.port, headers=basic("prom", b"a" * 72))[0] == 200
        assert scrape(s.port, headers=basic("prom", b"a" * 72 + b"anything after"))[0] == 200
        assert scrape(s.port, headers=basic("prom", b"a" * 71 + b"b" + b"c" * 10))[0] == 401
        assert scrape(s.port, headers=basic("prom", b"x" * 5000))[0] == 401
        assert scrape(s.port, headers=basic("nobody", b"a" * 5000))[0] == 401


# -- history downloads ----------------------------------------------------------------------

def test_history_downloads_are_bounded_and_beyond_the_bound_told_when_to_retry(server):
    inside, release = [], threading.Event()

    def slow_history(query, body):
        inside.append(1)
        release.wait(10)
        return 200, "application/json", b"{}"
    s = server(max_workers=8)
    s.add_route("GET", "/api/v1/history", slow_history, max_concurrent=HISTORY_MAX_CONCURRENT)
    s.publish(Exposition(lambda om: BODY))
    results = []

    def download():
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        c.request("GET", "/api/v1/history")
        r = c.getresponse()
        results.append((r.status, r.getheader("Retry-After")))
        r.read()
        c.close()
    threads = [threading.Thread(target=download) for _ in range(6)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(results) == 6 - HISTORY_MAX_CONCURRENT)
        assert len(inside) == HISTORY_MAX_CONCURRENT == 2
        assert results == [(503, "1")] * 4
        assert scrape(s.port)[0] == 200  # scrapes are not part of the bound
    finally:
        release.set()
        for t in threads:
            t.join()
    assert results[4:] == [(200, None)] * 2


def test_the_daemon_bounds_its_history_route(tmp_path):
    from nicwatch.config import build
    config = build(None, {"web.listen_address": "127.0.0.1:0", "interval": "0.2s",
                          "state.file": str(tmp_path / "identity.json")})
    daemon = Daemon(config)
    runner = threading.Thread(target=daemon.run)
    runner.start()
    try:
        wait_until(lambda: daemon.server is not None and daemon.polls >= 1)
        assert daemon.server.route("GET", "/api/v1/history").max_concurrent == 2
    finally:
        daemon.stop_event.set()
        runner.join()


# -- malformed requests ---------------------------------------------------------------------

def raw_request(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(data)
        reply = b""
        try:
            while chunk := c.recv(65536):
                reply += chunk
        except ConnectionResetError:
            pass
    return reply


MALFORMED = [
    (b"GET /metrics HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n", 400),
    ("GET /metrics HTTP/1.1\r\nContent-Length: ²\r\n\r\n".encode(), 400),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 413),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
    (b"GET http://[::1/metrics HTTP/1.1\r\n\r\n", 400),
    (b"GET /metrics?" + b"a=1&" * 1000 + b" HTTP/1.1\r\n\r\n", 400),
    (b"GET  /metrics HTTP/1.1\r\n\r\n", 400),
    (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400),  # TLS to a plain port
]
HISTORY = ["nan", "NaN", "inf", "-inf", "1e400", "-1e400", "99999999999999999999",
           "9999-12-31T23:59:59-14:00", "99999999999999h", "-5"]


def test_malformed_requests_get_4xx_and_one_log_line_never_a_traceback(tmp_path):
    d = Process("--web.enable-writes", f"--state.file={tmp_path / 'state.json'}")
    try:
        d.metrics(1)
        for data, status in MALFORMED:
            reply = raw_request(d.port, data)
            assert reply.startswith(f"HTTP/1.1 {status} ".encode()), (data[:60], reply[:80])
        for since in HISTORY:
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
            c.request("GET", f"/api/v1/history?since={since}")
            r = c.getresponse()
            assert r.status == 400 and b"since" in r.read(), since
            c.close()
        for body in (b"[" * 100_000, b'{"label": ' * 50_000, b"\xff\xfe"):
            c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=10)
            c.request("POST", "/api/v1/snapshots", body=body)
            r = c.getresponse()
            assert r.status == 400, (body[:20], r.status, r.read())
            c.close()
        assert d.text()  # still serving
        start = time.monotonic()
        for _ in range(50):  # a flood of them is logged at most 10 lines a second
            raw_request(d.port, b"GARBAGE\r\n\r\n")
        seconds = time.monotonic() - start
        time.sleep(1.1)
        raw_request(d.port, b"GARBAGE\r\n\r\n")  # the next second: says how many it skipped
    finally:
        log = d.stop()
    events = [json.loads(line) for line in log.splitlines()]  # every line is one JSON event
    assert "Traceback" not in log
    assert not [e for e in events if "exception" in e or e["level"] == "error"], log
    bad = [e for e in events if e["event"] == "bad_request"]
    assert all(e["client"] == "127.0.0.1" and e["status"] in (400, 413) for e in bad)
    assert len(bad) <= len(MALFORMED) + 10 * (int(seconds) + 2) + 1 < len(MALFORMED) + 51
    # Every skipped line is counted by a later one (which line says so depends on where the
    # flood met the second boundaries), and none is lost.
    assert any(e["suppressed"] > 0 for e in bad) and sum(
        e["suppressed"] for e in bad) + len(bad) == len(MALFORMED) + 51


def test_malformed_requests_before_authentication(server, tmp_path):
    """With authentication on, a request that parses but has bad parameters is 401 until
    the credentials are good: nothing about the endpoint leaks before."""
    cfg = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    cfg.write_text(f"basic_auth_users:\n  prom: {hashed}\n")
    s = server(web_config_file=str(cfg))
    s.add_route("GET", "/api/v1/history", lambda q, b: (400, "text/plain", b"bad since\n"))
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
    c.request("GET", "/api/v1/history?since=nan")
    assert c.getresponse().status == 401
    c.close()
    reply = raw_request(s.port, b"GET /metrics HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ")


def test_a_streamed_response_is_chunked_and_a_failure_halfway_truncates_it(server, capfd):
    def pieces(fail: bool):
        yield b"[1"
        for i in range(2, 5):
            if fail and i == 3:
                raise RuntimeError("poll record damaged")
            yield b",%d" % i
        yield b"]"
    s = server()
    s.add_route("GET", "/ok", lambda q, b: (200, "application/json", pieces(False)),
                max_concurrent=1)
    s.add_route("GET", "/bad", lambda q, b: (200, "application/json", pieces(True)),
                max_concurrent=1)
    for _ in range(3):  # the in-flight count is released after each stream, also a failed one
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
        c.request("GET", "/ok")
        r = c.getresponse()
        assert (r.status, r.getheader("Transfer-Encoding"), r.read()) == (200, "chunked",
                                                                        b"[1,2,3,4]")
        c.request("GET", "/ok")  # and the connection stays usable
        assert c.getresponse().read() == b"[1,2,3,4]"
        c.close()
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
        c.request("GET", "/bad")
        r = c.getresponse()
        assert r.status == 200
        with pytest.raises(http.client.IncompleteRead):
            r.read()
        c.close()
    err = capfd.readouterr().err + capfd.readouterr().out
    assert "Traceback" not in err


@settings(max_examples=500, deadline=None)
@given(st.one_of(
    st.binary(max_size=300),
    st.tuples(st.sampled_from([b"GET", b"POST", b"HEAD", b"G\x00T", b""]),
              st.binary(max_size=80), st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2"]),
              st.lists(st.tuples(st.binary(max_size=20), st.binary(max_size=40)), max_size=4)
              ).map(lambda t: t[0] + b" " + t[1] + b" " + t[2] + b"\r\n" + b"".join(
                  k + b": " + v + b"\r\n" for k, v in t[3]))))
def test_any_request_head_parses_or_is_a_bad_request(head):
    """Whatever a client sends as a head, parsing it either succeeds or is a 4xx, never
    another exception (which used to become a dropped connection and a traceback)."""
    from nicwatch.exporter.http import _BadRequest, parse_head
    try:
        request = parse_head(head + b"\r\n\r\n")
    except _BadRequest as e:
        assert 400 <= e.status < 500
    else:
        assert request.method and request.version.startswith("HTTP/1.")


@pytest.mark.parametrize("addr, key", [
    (("127.0.0.2", 5000), "127.0.0.2"),
    (("2001:db8:1:2:aaaa::1", 5000, 0, 0), "2001:db8:1:2::/64"),
    (("2001:db8:1:2:bbbb::9", 6000, 0, 0), "2001:db8:1:2::/64"),  # same host, other address
    (("::ffff:198.18.0.1", 5000, 0, 0), "198.18.0.1"),
    (("fe80::1%eth0", 5000, 0, 2), "fe80::/64"),
    ("", ""),  # a Unix socket
])
def test_connections_count_against_an_address_or_an_ipv6_64(addr, key):
    from nicwatch.exporter.http import client_key
    assert client_key(addr) == key


def test_ipv6_clients_are_capped_per_64(server):
    s = server(host="::1", max_connections_per_client=4)
    idle = [socket.create_connection(("::1", s.port), timeout=10) for _ in range(10)]
    try:
        wait_until(lambda: s.moved_over_cap + s.evicted >= 6)
        # The ::1/64 holds 4 under its cap; the 6 older silent ones were moved over it.
        assert (s.open_connections, s.moved_over_cap, s.evicted) == (10, 6, 0)
        for c, status in ((idle[0], b"429"), (idle[-1], b"200")):
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert c.recv(65536).split(b" ")[1] == status
        # One moved over the cap that stays silent is closed a second later (OVER_CAP_WAIT).
        assert idle[1].recv(1) == b""
        wait_until(lambda: s.evicted == 5)
    finally:
        for c in idle:
            c.close()
