"""The HTTP endpoint: cached bytes equal a fresh render, negotiation, gzip, routes, idle and
slow clients, TLS with client certificates, basic auth and the web config file."""

import base64
import gzip
import http.client
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import bcrypt
import pytest

from nicwatch.config import ConfigError
from nicwatch.exporter.http import (
    Exposition,
    MetricsServer,
    wants_gzip,
    wants_openmetrics,
)
from nicwatch.exporter.render import SelfStats, render
from nicwatch.exporter.webconfig import WebConfigError, load
from nicwatch.model import DriverInfo, NetClass, Reading, StatSet
from nicwatch.normalize import NormalizeOptions, RawOptions, normalize
from nicwatch.pasted import ethtool_text
from nicwatch.tracker import Tracker

from faults import Process
from hostd import check_lines
from httpd import client_context, get
from paths import FIXTURES
from promtext import parse_exposition

PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def mlx5_tracked():
    """Two polls of one mlx5 port (the fixture dump, then every value + 5), tracked."""
    text = ethtool_text.parse((FIXTURES / "ethtool/mlx5_core.txt").read_text())
    nc = NetClass("eth0", 2, "0c:42:a1:00:00:01", "up", 9000, 400000, "full", True, 1, 1, 0,
                  "devices/pci0000:00/0000:3b:00.0", "0000:3b:00.0", "mlx5_core",
                  {"rx_bytes": 10, "tx_bytes": 20})
    info = DriverInfo("mlx5_core", "6.18", "28.39.1002 (MT_0000000838)", "0000:3b:00.0",
                      len(text.names))
    tracker = Tracker()
    options = NormalizeOptions(RawOptions(enabled=True))
    for step, t in ((0, 100.0), (5, 105.0)):
        stats = StatSet(text.names, tuple(v + step for v in text.values), 1)
        tracked = tracker.update([normalize(Reading("eth0", t, t, nc, driver_info=info,
                                                    stats=stats), options)])
    return tracked, SelfStats(polls=2, last_poll_time=105.0, durations={"read": 0.001})


@pytest.fixture(scope="module")
def exposition_parts():
    return mlx5_tracked()


# -- exposition and negotiation -------------------------------------------------------------

def test_served_bytes_are_the_fresh_render(server, exposition_parts):
    tracked, stats = exposition_parts
    s = server()
    s.publish(Exposition(lambda om: render(tracked, stats, om)))
    text, om = render(tracked, stats, False), render(tracked, stats, True)
    assert len(parse_exposition(text.decode())) > 300  # a real exposition, raw families on
    cases = [({}, text, "text/plain; version=0.0.4", None),
             ({"Accept-Encoding": "gzip"}, text, "text/plain; version=0.0.4", "gzip"),
             ({"Accept": PROMETHEUS_ACCEPT}, om, "application/openmetrics-text; version=1.0.0",
              None),
             ({"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"}, om,
              "application/openmetrics-text; version=1.0.0", "gzip")]
    for headers, expected, ctype, encoding in cases:
        for _ in range(2):  # built on the first request, served from the cache on the second
            status, h, body = get(s.port, headers=headers)
            assert status == 200 and h["content-type"].startswith(ctype)
            assert h.get("content-encoding") == encoding
            assert h["vary"] == "Accept, Accept-Encoding"
            assert (gzip.decompress(body) if encoding else body) == expected
    assert s.last_variant == (True, True)  # what the daemon should build ahead next poll


def test_head_has_length_but_no_body(server):
    s = server()
    s.publish(Exposition(lambda om: b"x 1\n"))
    status, h, body = get(s.port, method="HEAD")
    assert status == 200 and h["content-length"] == "4" and body == b""


@pytest.mark.parametrize("accept, om", [
    (PROMETHEUS_ACCEPT, True),
    (None, False),
    ("*/*", False),
    ("text/plain;version=0.0.4", False),
    ("application/openmetrics-text", True),
    ("application/openmetrics-text;version=1.0.0;q=0.4,text/plain;q=0.5", False),
    ("application/openmetrics-text;q=0", False),
    ("application/openmetrics-text;version=2.0.0", False),
    ("text/plain;q=0.2, application/openmetrics-text; version=0.0.1; q=0.9", True),
])
def test_openmetrics_negotiation(accept, om):
    assert wants_openmetrics(accept) is om


@pytest.mark.parametrize("header, gz", [
    ("gzip", True), ("gzip, deflate, br", True), ("identity", False), (None, False),
    ("gzip;q=0", False), ("*", True), ("*;q=0.5, gzip;q=0", False), ("br;q=1.0, gzip;q=0.8", True),
])
def test_gzip_negotiation(header, gz):
    assert wants_gzip(header) is gz


# -- endpoints and routes -------------------------------------------------------------------

def test_builtin_endpoints(server):
    s = server()
    assert get(s.port, "/healthz")[0] == 200
    assert get(s.port, "/readyz")[:3:2] == (503, b"starting\n")
    assert get(s.port, "/metrics")[0] == 503
    s.publish(Exposition(lambda om: b"x 1\n"))
    assert get(s.port, "/readyz")[:3:2] == (200, b"ready\n")
    status, h, body = get(s.port, "/")
    assert status == 200 and h["content-type"].startswith("text/html") and b"/metrics" in body
    assert get(s.port, "/nope")[0] == 404
    status, h, _ = get(s.port, "/metrics", method="POST", body=b"")
    assert status == 405 and h["allow"] == "GET, HEAD"


def test_routes_and_write_gate(server):
    seen = []

    def echo(query, body):
        seen.append((query, body))
        return 201, "application/json", b'{"ok": true}'

    def broken(query, body):
        raise RuntimeError("bug")

    for allow in (False, True):
        s = server(allow_writes=allow)
        s.add_route("GET", "/api/v1/read", echo)
        s.add_route("POST", "/api/v1/write", echo, write=True)
        s.add_route("GET", "/api/v1/broken", broken)
        assert get(s.port, "/api/v1/read?device=eth0&x=1&x=2")[:3:2] == (201, b'{"ok": true}')
        status = get(s.port, "/api/v1/write", method="POST", body=b"payload")[0]
        assert status == (201 if allow else 403)
        assert get(s.port, "/api/v1/write")[0] == 405
        assert get(s.port, "/api/v1/broken")[0] == 500
    assert seen == [({"device": "eth0", "x": "2"}, b""), ({"device": "eth0", "x": "2"}, b""),
                    ({}, b"payload")]
    with pytest.raises(ValueError):
        s.add_route("GET", "/metrics", echo)


def test_keep_alive_serves_several_requests_on_one_connection(server):
    s = server()
    s.publish(Exposition(lambda om: b"x 1\n"))
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
    for _ in range(3):
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        assert r.status == 200 and r.read() == b"x 1\n"
    assert s.open_connections == 1
    conn.close()


@pytest.mark.parametrize("raw, status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
    (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
    (b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", 431),
])
def test_bad_requests_get_an_error_and_are_closed(server, raw, status):
    s = server()
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(raw)
        reply = b""
        while chunk := c.recv(65536):
            reply += chunk
    assert reply.startswith(f"HTTP/1.1 {status} ".encode())


# -- idle and slow clients ------------------------------------------------------------------

def closed_by_server(c: socket.socket) -> bool:
    try:
        return c.recv(1) == b""
    except ConnectionResetError:
        return True


def _idle(port: int, n: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)]


def test_idle_connections_and_slowloris_do_not_block_scrapes(server):
    s = server(header_timeout=1.5, max_connections=512)
    s.publish(Exposition(lambda om: b"x 1\n" * 1000))
    idle = _idle(s.port, 100)
    slow = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    stop = threading.Event()
    closed_after = []

    def trickle():
        start = time.monotonic()
        try:
            for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 1000:
                if stop.is_set():
                    return
                slow.send(bytes([byte]))
                time.sleep(0.05)
        except OSError:
            closed_after.append(time.monotonic() - start)

    t = threading.Thread(target=trickle)
    t.start()
    try:
        start = time.monotonic()
        for _ in range(20):
            status, _, body = get(s.port, timeout=3)
            assert status == 200 and len(body) == 4000
        # 20 loopback scrapes take milliseconds; blocked ones would take seconds each.
        assert time.monotonic() - start < 3
        # The server cuts the trickling client at its header deadline, and the idle ones too.
        t.join(timeout=10)
        assert closed_after and closed_after[0] < 6
        assert all(closed_by_server(c) for c in idle)
    finally:
        stop.set()
        t.join()
        for c in [*idle, slow]:
            c.close()


def test_connection_cap_evicts_the_longest_idle_connection(server):
    s = server(max_connections=5)
    idle = _idle(s.port, 5)
    try:
        deadline = time.monotonic() + 5
        while s.open_connections < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert s.open_connections == 5
        # A sixth client gets in; the connection idle the longest is the one closed.
        assert get(s.port, "/healthz")[0] == 200
        assert closed_by_server(idle[0])
        assert s.open_connections <= 5 and s.evicted == 1
    finally:
        for c in idle:
            c.close()
    deadline = time.monotonic() + 5
    while s.open_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert s.open_connections == 0


# -- web config: TLS, client certificates, basic auth ---------------------------------------

def refused(port: int, ctx: ssl.SSLContext) -> bool:
    """True when the server ends the TLS connection without answering the request."""
    try:
        get(port, "/healthz", context=ctx)
    except (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected):
        return True
    return False


@pytest.mark.parametrize("tls", [False, True])
def test_a_connection_close_response_reaches_a_slow_reader_whole(server, pki, tmp_path, tls):
    """The connection ends with abort(), which dropped what the transport still buffered: a
    client asking for ``Connection: close`` (urllib: the lab's scrape through QEMU's user
    network lost 29 KB of 140 KB once) read a truncated body whenever the socket's send
    buffer was full. A small send buffer and a slow reader make it so on loopback."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)  # accepted sockets inherit
    kwargs = {}
    if tls:
        cfg = tmp_path / "web.yml"
        cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
                       f"  key_file: {pki}/server.key\n")
        kwargs["web_config_file"] = str(cfg)
    s = server(sockets=[listener], **kwargs)
    body = b"".join(b'nic_x{device="eth%d"} %d\n' % (i, i) for i in range(5_000))  # 140 KB
    s.publish(Exposition(lambda om: body))
    for attempt in range(2):
        raw = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c = client_context(pki, None).wrap_socket(raw, server_hostname="localhost") \
            if tls else raw
        with c:
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = bytearray()
            while chunk := c.recv(4096):  # the small windows keep the send buffer full
                got += chunk
        head, _, received = bytes(got).partition(b"\r\n\r\n")
        assert b"Content-Length: %d" % len(body) in head
        assert len(received) == len(body), (attempt, len(received), len(body))
        assert received == body


def test_mtls_refuses_wrong_and_missing_client_certificates(server, pki, tmp_path):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
                   f"  key_file: {pki}/server.key\n  client_auth_type: RequireAndVerifyClientCert\n"
                   f"  client_ca_file: {pki}/ca.crt\n")
    s = server(web_config_file=str(cfg))
    s.publish(Exposition(lambda om: b"x 1\n"))
    assert get(s.port, context=client_context(pki, "scraper"))[:3:2] == (200, b"x 1\n")
    assert refused(s.port, client_context(pki, "rogue"))  # signed by another CA
    assert refused(s.port, client_context(pki, None))
    with pytest.raises((ConnectionError, http.client.BadStatusLine)):
        get(s.port)  # plain HTTP to a TLS port


def test_client_allowed_sans(server, pki, tmp_path):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
                   f"  key_file: {pki}/server.key\n  client_auth_type: RequireAndVerifyClientCert\n"
                   f"  client_ca_file: {pki}/ca.crt\n  client_allowed_sans: [scraper.example]\n")
    s = server(web_config_file=str(cfg))
    assert get(s.port, "/healthz", context=client_context(pki, "scraper"))[0] == 200
    assert refused(s.port, client_context(pki, "other"))


def test_tls_handshake_is_not_in_accept(server, pki, tmp_path):
    """prometheus_client's wedge: TCP clients that never send a ClientHello."""
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
                   f"  key_file: {pki}/server.key\n")
    s = server(web_config_file=str(cfg), handshake_timeout=30)
    s.publish(Exposition(lambda om: b"x 1\n"))
    idle = _idle(s.port, 100)
    try:
        start = time.monotonic()
        for _ in range(5):
            assert get(s.port, context=client_context(pki, None), timeout=3)[0] == 200
        assert time.monotonic() - start < 3
    finally:
        for c in idle:
            c.close()


def test_certificate_and_users_reload_when_files_change(server, pki, tmp_path):
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes((pki / "server.crt").read_bytes())
    key.write_bytes((pki / "server.key").read_bytes())
    cfg = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"old", bcrypt.gensalt(4)).decode()
    cfg.write_text(f"tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
                   f"basic_auth_users:\n  prom: {hashed}\n")
    s = server(web_config_file=str(cfg), web_config_check=0)
    ctx = client_context(pki, None)

    def served_cert() -> bytes:
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            return tls.getpeercert(binary_form=True)

    def auth(password: bytes) -> int:
        import base64
        token = base64.b64encode(b"prom:" + password).decode()
        return get(s.port, "/", {"Authorization": f"Basic {token}"}, context=ctx)[0]

    first = served_cert()
    assert auth(b"old") == 200
    cert.write_bytes((pki / "server2.crt").read_bytes())
    key.write_bytes((pki / "server2.key").read_bytes())
    new_hash = bcrypt.hashpw(b"new", bcrypt.gensalt(4)).decode()
    cfg.write_text(cfg.read_text().replace(hashed, new_hash))
    second = served_cert()
    assert second != first
    assert ssl.DER_cert_to_PEM_cert(second).strip() == (pki / "server2.crt").read_text().strip()
    assert (auth(b"old"), auth(b"new")) == (401, 200)
    # A broken new version keeps the previous configuration in force.
    cfg.write_text("tls_server_config: [")
    assert served_cert() == second and auth(b"new") == 200


def test_basic_auth(server, tmp_path):
    import base64
    cfg = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode().replace("$2b$", "$2y$")
    cfg.write_text(f"basic_auth_users:\n  prometheus: {hashed}\n"
                   "http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    s = server(web_config_file=str(cfg))
    s.publish(Exposition(lambda om: b"x 1\n"))

    def basic(user: str, password: str) -> dict:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"Authorization": "Basic " + token}

    status, h, _ = get(s.port)
    assert status == 401 and h["www-authenticate"] == 'Basic realm="nicwatch"'
    assert get(s.port, headers=basic("prometheus", "wrong"))[0] == 401
    assert get(s.port, headers=basic("nobody", "s3cret"))[0] == 401
    assert get(s.port, headers={"Authorization": "Basic !!notbase64"})[0] == 401
    for _ in range(2):  # the second check is answered from the cache of successes
        status, h, body = get(s.port, headers=basic("prometheus", "s3cret"))
        assert (status, body) == (200, b"x 1\n") and h["x-frame-options"] == "deny"
    assert get(s.port, "/healthz")[0] == 200  # probes need no credentials


def test_rate_limit(server, tmp_path):
    cfg = tmp_path / "web.yml"
    cfg.write_text("rate_limit:\n  interval: 1h\n  burst: 2\n")
    s = server(web_config_file=str(cfg))
    s.publish(Exposition(lambda om: b"x 1\n"))
    assert [get(s.port, "/metrics")[0] for _ in range(3)] == [200, 200, 429]


def test_the_probes_are_outside_the_rate_limit(server, tmp_path):
    """The issue: 29 of 30 liveness probes answered 429 under a flood, so a pod would be
    restarted for being popular. /healthz and /readyz are never limited (a deliberate
    difference from exporter-toolkit) and do not spend the budget of the scrapes."""
    cfg = tmp_path / "web.yml"
    cfg.write_text("rate_limit:\n  interval: 1h\n  burst: 1\n")
    s = server(web_config_file=str(cfg))
    s.publish(Exposition(lambda om: b"x 1\n"))
    assert get(s.port, "/metrics")[0] == 200
    assert [get(s.port, "/metrics")[0] for _ in range(5)] == [429] * 5  # the flood
    assert [get(s.port, "/healthz")[0] for _ in range(30)] == [200] * 30
    assert get(s.port, "/readyz")[0] in (200, 503)  # ready or not, never 429


@pytest.mark.parametrize("text, needle", [
    ("tls_server_config: [", "not valid YAML at line 1"),
    ("tls_config: {}", "unknown key 'tls_config'"),
    ("tls_server_config:\n  key_file: k\n", "key 'tls_server_config.cert_file': missing"),
    ("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n",
     "key 'tls_server_config.cert_file': cannot load"),
    ("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: Sometimes\n",
     "key 'tls_server_config.client_auth_type': expected one of"),
    (("tls_server_config:\n  cert_file: c\n  key_file: k\n"
     "  client_auth_type: RequireAndVerifyClientCert\n"),
     "key 'tls_server_config.client_ca_file': required"),
    ("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: SSL3\n",
     "key 'tls_server_config.min_version'"),
    ("tls_server_config:\n  cert_file: c\n  key_file: k\n  cipher_suites: [TLS_FOO]\n",
     "key 'tls_server_config.cipher_suites': unknown cipher suite 'TLS_FOO'"),
    ("basic_auth_users:\n  prom: plaintext\n", "key 'basic_auth_users.prom': expected a bcrypt"),
    ("http_server_config:\n  headers:\n    Server: x\n",
     "unknown key 'http_server_config.headers.Server'"),
    ("rate_limit:\n  interval: 1s\n  burst: -1\n", "key 'rate_limit.burst'"),
    ("rate_limit:\n  interval: 1d\n  burst: 1\n", "key 'rate_limit.interval': unknown unit 'd'"),
])
def test_bad_web_config_is_one_line_exit_2(tmp_path, text, needle):
    cfg = tmp_path / "web.yml"
    cfg.write_text(text)
    with pytest.raises(WebConfigError, match=needle.replace("[", r"\[")):
        load(str(cfg))
    with pytest.raises(ConfigError):  # what cli.main turns into one line and exit 2
        MetricsServer("127.0.0.1", 0, web_config_file=str(cfg))
    r = subprocess.run([sys.executable, "-m", "nicwatch.exporter.webconfig", str(cfg)],
                       capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(cfg) in r.stderr
    assert "Traceback" not in r.stderr


def test_good_web_config_checks_ok(pki, tmp_path):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
                   f"  key_file: {pki}/server.key\n  min_version: TLS13\n"
                   "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n")
    r = subprocess.run([sys.executable, "-m", "nicwatch.exporter.webconfig", str(cfg)],
                       capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 0 and "tls: yes" in r.stdout


def test_web_config_swaps_never_turn_tls_or_auth_off(pki, tmp_path):
    """A running `nicwatch serve` with TLS and basic auth; its web config file is truncated,
    half written, made invalid and deleted under it. Each time TLS and authentication stay
    on and the reason is logged. Only SIGHUP with a valid file that leaves auth out turns
    auth off (and says so); a half-written one noticed on disk never does."""
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode()
    tls = (f"tls_server_config:\n  cert_file: {pki}/server.crt\n"
           f"  key_file: {pki}/server.key\n")
    full = f"{tls}basic_auth_users:\n  prom: {hashed}\n"
    cfg = tmp_path / "web.yml"
    cfg.write_text(full)
    s = Process(f"--web.config.file={cfg}", f"--state.file={tmp_path / 'state.json'}",
                "--log.level=info")
    ctx = client_context(pki, None)
    good = {"Authorization": "Basic " + base64.b64encode(b"prom:s3cret").decode()}

    def status(headers=None) -> int:
        return get(s.port, "/metrics", headers, context=ctx)[0]

    def protected() -> bool:
        with pytest.raises((ConnectionError, http.client.BadStatusLine, ssl.SSLError)):
            get(s.port, "/healthz")  # plain HTTP is refused: TLS is on
        return status() == 401 and status(good) == 200

    def settle() -> None:
        time.sleep(1.3)  # the file is checked at most once a second

    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if status(good) == 200:
                    break
            except OSError:
                pass
            assert s.proc.poll() is None and time.monotonic() < deadline, s.log()
            time.sleep(0.1)
        assert protected()
        swaps = {
            "truncated": "",
            "blank": "\n# rewritten by config management\n\n",
            "half_written": full[: full.index("basic_auth_users")],  # TLS only, no users
            "cut_in_hash": full[:-20],
            "invalid": full.replace("cert_file", "cert_file: [") + ":\n",
        }
        for name, text in swaps.items():
            cfg.write_text(text)
            settle()
            assert protected(), name
        cfg.unlink()
        settle()
        assert protected(), "deleted"
        # Restored: still on, and the changes are picked up again.
        cfg.write_text(full)
        settle()
        assert protected()
        # On purpose: a valid file without users, applied by SIGHUP. TLS stays.
        cfg.write_text(tls)
        settle()
        assert protected()  # noticed on disk: refused
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while status() != 200:
            assert time.monotonic() < deadline, "SIGHUP did not apply the file"
            time.sleep(0.1)
        with pytest.raises((ConnectionError, http.client.BadStatusLine, ssl.SSLError)):
            get(s.port, "/healthz")
    finally:
        log = s.stop()
    events = [e for e in check_lines(log.splitlines()) if e["event"].startswith("web_config")]
    failed = [e for e in events if e["event"] == "web_config_reload_failed"]
    refused = [e for e in events if e["event"] == "web_config_reload_refused"]
    assert len(failed) >= 5 and all(e["level"] == "error" for e in failed)
    assert any("empty" in e["error"] for e in failed)
    assert any("cannot read" in e["error"] for e in failed)
    assert [e["would_turn_off"] for e in refused] == [["basic authentication"]] * 2
    applied = [e for e in events if e.get("turned_off")]
    assert [e["turned_off"] for e in applied] == [["basic authentication"]]
    assert hashed not in log
