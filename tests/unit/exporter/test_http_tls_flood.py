"""TLS connection floods against `nicwatch serve` (a subprocess, so its RSS is its own):
clients that connect to the TLS port and send nothing, or only the first bytes of a
ClientHello, or a whole handshake, and reconnect as soon as they are closed (#43 item 1).
Before the fix, 300 silent clients from one address took the daemon from 40 MB to 234 MB in
2 s and 424 MB in 4 s (each TLS connection allocated asyncio's 256 KiB read buffer and
OpenSSL's state at accept, and evicted ones stayed in reference cycles); under the shipped
`MemoryMax=256M` it was OOM-killed.

The bound asserted is the one docs/failure-behaviour.md states: connection state costs at
most ``STATE_BOUND_MB`` above the idle daemon whatever clients do (512 connections, 128 of
them handshaking), far under the 256 MiB the unit and the DaemonSet give it. The good
client scrapes from its own address (127.0.0.1): one that shares the flooder's address
competes with it for that address's share. Every flood is bounded in clients (300) and
time (4 s), on 127.0.0.0/8.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from faults import Process
from httpd import PARTIAL_HELLO, client_context, make_cert

pytestmark = pytest.mark.slow

CLIENTS = 300
SECONDS = 4.0
STATE_BOUND_MB = 64  # docs/failure-behaviour.md, "TLS connections"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    d = tmp_path_factory.mktemp("tlsflood")
    make_cert(d, "ca", None, "")
    make_cert(d, "server", "ca", "DNS:localhost,IP:127.0.0.1")
    (d / "web.yml").write_text(f"tls_server_config:\n  cert_file: {d}/server.crt\n"
                               f"  key_file: {d}/server.key\n")
    return d


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def churn(port: int, sources: list[str], first_bytes: bytes | ssl.SSLContext, seconds: float,
          stop: threading.Event, made: list[int]) -> None:
    """``CLIENTS`` connections, each sending ``first_bytes`` (maybe none; with a context,
    a whole handshake) and nothing more, reopened as soon as the server closes one, for
    ``seconds``."""
    socks: dict[socket.socket, int] = {}

    def open_one(i: int) -> None:
        s = socket.socket()
        s.settimeout(5)
        s.bind((sources[i % len(sources)], 0))
        try:
            s.connect(("127.0.0.1", port))
            if isinstance(first_bytes, ssl.SSLContext):
                s = first_bytes.wrap_socket(s, server_hostname="localhost")
            elif first_bytes:
                s.sendall(first_bytes)
        except (OSError, ssl.SSLError):
            s.close()
            return
        s.setblocking(False)
        socks[s] = i
        made[0] += 1

    for i in range(CLIENTS):
        open_one(i)
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end and not stop.is_set():
            readable, _, _ = select.select(list(socks), [], [], 0.1)
            for s in readable:
                try:
                    data = s.recv(4096)
                except ssl.SSLWantReadError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    i = socks.pop(s)
                    s.close()
                    open_one(i)
            for i in set(range(CLIENTS)) - set(socks.values()):  # a failed connect
                open_one(i)
    finally:
        for s in socks:
            s.close()


def scrape(port: int, ctx: ssl.SSLContext) -> int:
    import http.client
    c = http.client.HTTPSConnection("localhost", port, timeout=5, context=ctx)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


@pytest.mark.parametrize("first_bytes, sources", [
    (b"", ["127.0.0.2"]),  # the report's attack: silent, reconnecting
    (b"", [f"127.0.1.{i}" for i in range(1, 101)]),
    (PARTIAL_HELLO, ["127.0.0.2"]),
    (PARTIAL_HELLO, [f"127.0.1.{i}" for i in range(1, 101)]),
    (None, [f"127.0.1.{i}" for i in range(1, 101)]),  # handshakes completed, then idle
], ids=["silent-one-address", "silent-100-addresses", "stalled-hello-one-address",
        "stalled-hello-100-addresses", "established-idle-100-addresses"])
def test_a_tls_connection_flood_keeps_memory_bounded_and_metrics_served(tls, first_bytes,
                                                                       sources):
    d = Process(f"--web.config.file={tls / 'web.yml'}", "--interval=1s")
    ctx = client_context(tls, None)
    if first_bytes is None:
        first_bytes = ctx
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 15
        while True:  # up, and a first poll published
            try:
                if scrape(d.port, ctx) == 200:
                    break
            except OSError:
                pass
            assert d.proc.poll() is None and time.monotonic() < deadline, d.log()
            time.sleep(0.1)
        pid = d.daemon_pid
        idle = rss_mb(pid)
        made = [0]
        attacker = threading.Thread(target=churn,
                                    args=(d.port, sources, first_bytes, SECONDS, stop, made))
        attacker.start()
        peak, statuses = idle, []
        while attacker.is_alive():
            peak = max(peak, rss_mb(pid))
            statuses.append(scrape(d.port, ctx))  # a good client, throughout
            time.sleep(0.2)
        attacker.join()
        # The connections are closed; within one release interval (5 s) the memory they
        # held is given back.
        time.sleep(6)
        after = rss_mb(pid)
        assert d.proc.poll() is None, d.log()
    finally:
        stop.set()
        d.stop()
    if len(sources) == 1 or first_bytes == PARTIAL_HELLO:  # the server kept closing them
        assert made[0] > CLIENTS  # (evicting the oldest), and they kept coming back
    assert statuses and set(statuses) == {200}, statuses
    assert peak - idle < STATE_BOUND_MB, (idle, peak, made[0])
    assert after - idle < 16, (idle, peak, after)
