"""#43 items 4 and 7: the request head is parsed as strictly as Go's net/http (so a proxy
that reuses connections and nicwatch never disagree on where a request ends), ``Expect``
is answered, and a web config file no real one looks like is one line and exit 2."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest

from nicwatch.exporter.http import Exposition

from faults import Process
from hostd import NICWATCH
from httpd import get

BODY = b"x 1\n"


def exchange(port: int, data: bytes, wait: float = 0.5) -> bytes:
    """Everything the server sends back to ``data`` until it closes (or ``wait`` s of
    silence)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(data)
        c.settimeout(wait)
        reply = b""
        try:
            while chunk := c.recv(65536):
                reply += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return reply


def statuses(reply: bytes) -> list[int]:
    return [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)]


SMUGGLED = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize("head, status", [
    # A bare LF inside the header block: Go does not end the header there; nicwatch took
    # "Content-Length: 34" as a header of its own and answered the 34 bytes after as a
    # second request.
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\nContent-Length: 34\r\n\r\n" + SMUGGLED,
     [400]),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", [400]),  # NUL in a value
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", [400]),  # bare CR
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", [400]),  # a control byte
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n", [400]),  # not a token
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n", [400]),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX\x80: b\r\n\r\n", [400]),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n X-A: b\r\n\r\n", [400]),  # obs-fold
    (b"GET /metrics HTTP/1.1\r\n\r\n", [400]),  # HTTP/1.1 without Host
    (b"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", [400]),  # two Hosts
    (b"GET /metrics HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", [417]),
    # what stays accepted
    (b"GET /metrics HTTP/1.0\r\n\r\n", [200]),  # HTTP/1.0 needs no Host
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\tb \x80\xff\r\nConnection: close\r\n\r\n",
     [200]),  # HTAB and obs-text in a value
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" + SMUGGLED, [200, 200]),  # pipelined
])
def test_the_request_head_is_parsed_as_go_parses_it(server, head, status):
    s = server()
    s.publish(Exposition(lambda om: BODY))
    assert statuses(exchange(s.port, head)) == status


def test_expect_100_continue_gets_its_100_before_the_body_is_sent(server):
    s = server(allow_writes=True)
    s.add_route("POST", "/echo", lambda q, body: (200, "text/plain", body), write=True)
    with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
        c.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: 5\r\nConnection: close\r\n\r\n")
        assert c.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"  # before any body byte
        c.sendall(b"hello")
        reply = b""
        while chunk := c.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"\r\n\r\nhello")


HUGE = "an integer with more than 4300 digits"


@pytest.mark.parametrize("text, needle", [
    ("rate_limit:\n  interval: " + "9" * 5000 + "\n  burst: 1\n", HUGE),
    ("basic_auth_users:\n  prom: " + "1" * 5000 + "\n", HUGE),
    ("rate_limit: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("basic_auth_users: " + "{a: " * 30_000 + "1" + "}" * 30_000 + "\n", "nested too deeply"),
])
def test_a_web_config_no_real_one_looks_like_is_one_line_and_exit_2(tmp_path, text, needle):
    cfg = tmp_path / "web.yml"
    cfg.write_text(text)
    start = time.monotonic()
    r = subprocess.run([NICWATCH, "serve", "--web.listen-address=127.0.0.1:0",
                        f"--state.file={tmp_path / 'state.json'}",
                        f"--web.config.file={cfg}"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert errors == [f"nicwatch: error: {cfg}: not a web config: {needle}"]
    assert time.monotonic() - start < 30


# -- --web.telemetry-path (#42 item 11) ------------------------------------------------------

def test_the_telemetry_path_serves_the_exposition_and_the_landing_page_links_it(server):
    s = server(telemetry_path="/prom/nic")
    s.publish(Exposition(lambda om: BODY))
    assert get(s.port, "/prom/nic")[::2] == (200, BODY)
    assert get(s.port, "/metrics")[0] == 404  # as node_exporter: only the configured path
    status, _, page = get(s.port, "/")
    assert status == 200 and b'<a href="/prom/nic">/prom/nic</a>' in page
    assert b'href="/metrics"' not in page
    assert get(s.port, "/healthz")[0] == 200
    with pytest.raises(ValueError, match="built in"):
        s.add_route("GET", "/prom/nic", lambda q, b: (200, "text/plain", b""))


def test_serve_takes_the_telemetry_path_from_the_flag_and_the_file(tmp_path):
    cfg = tmp_path / "nicwatch.toml"
    cfg.write_text('[web]\ntelemetry_path = "/from-file"\n')
    for flags, path in ((["--web.telemetry-path=/from-flag"], "/from-flag"),
                        ([f"--config={cfg}"], "/from-file")):
        d = Process(f"--state.file={tmp_path / 'state.json'}", *flags)
        try:
            deadline = time.monotonic() + 15
            while (r := d.get(path)).stdout.rpartition("\n")[2] != "200":
                assert d.proc.poll() is None and time.monotonic() < deadline, d.log()
                time.sleep(0.1)
            assert "nicwatch_polls_total" in r.stdout
            assert d.get("/metrics").stdout.rpartition("\n")[2] == "404"
        finally:
            d.stop()


@pytest.mark.parametrize("value, needle", [
    ("metrics", "expected a URL path"), ("/a b", "expected a URL path"),
    ("/x?y", "expected a URL path"), ("/" + "a" * 300, "expected a URL path"),
    ("/healthz", "another endpoint's path"), ("/", "another endpoint's path"),
    ("/api/v1/history", "another endpoint's path"),
])
def test_a_bad_telemetry_path_is_one_line_and_exit_2(tmp_path, value, needle):
    r = subprocess.run([NICWATCH, "serve", "--web.listen-address=127.0.0.1:0",
                        f"--state.file={tmp_path / 'state.json'}",
                        f"--web.telemetry-path={value}"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "--web.telemetry-path" in errors[0] and needle in errors[0]
