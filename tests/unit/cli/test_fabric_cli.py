"""`nicwatch fabric --prometheus URL` against a loopback HTTP server that is not a healthy
Prometheus: closed port, garbage, an answer too large to read, an API error, the wrong
result type. Each is one line on stderr and exit 1 (never 0, never a traceback); bad flags
exit 2. The real Prometheus is in tests/e2e/test_fabric_prometheus.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hostd import free_port

NICWATCH = str(Path(sys.executable).parent / "nicwatch")
Answer = Callable[[BaseHTTPRequestHandler, str, dict], None]


@contextmanager
def server(answer: Answer) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            try:
                answer(self, url.path, dict(urllib.parse.parse_qsl(url.query)))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what a bounded read does

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def send(h: BaseHTTPRequestHandler, body: bytes, status: int = 200,
         kind: str = "application/json") -> None:
    h.send_response(status)
    h.send_header("Content-Type", kind)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def vector(*series: tuple[dict, float]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": m, "value": [1.0, str(v)]} for m, v in series]}}).encode()


def fabric(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NICWATCH, "fabric", *args], capture_output=True, text=True,
                          timeout=60)


def one_line_error(r: subprocess.CompletedProcess, status: int, needle: str) -> None:
    assert r.returncode == status, (r.returncode, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nicwatch: error: "), r.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in r.stderr


def test_unreachable_is_one_line_and_exit_1(tmp_path):
    page = tmp_path / "fabric.html"
    r = fabric("--prometheus", f"http://127.0.0.1:{free_port()}", "--html", str(page))
    one_line_error(r, 1, "cannot reach Prometheus")
    assert not page.exists()  # nothing written from nothing read


@pytest.mark.parametrize("body, needle", [
    (b"<html><body>Grafana</body></html>", "not a Prometheus API answer"),
    (b"\xff\xfe\x00garbage", "not a Prometheus API answer"),
    (b'{"status": "error", "error": "no"}', "not a Prometheus API answer"),
    (b"[" * 100_000 + b"]" * 100_000, "not a Prometheus API answer"),  # nesting
    (json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode(),
     "is not an instant vector"),
    (json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": 5}, "value": [1, "1"]}]}}).encode(), "is not an instant vector"),
])
def test_garbage_is_one_line_and_exit_1(body, needle):
    with server(lambda h, path, q: send(h, body)) as url:
        one_line_error(fabric("--prometheus", url), 1, needle)


def test_an_api_error_names_prometheus_own_message():
    def answer(h, path, q):
        send(h, json.dumps({"status": "error", "errorType": "bad_data",
                            "error": "parse error: unexpected \x1b[31m"}).encode(), 400)
    with server(answer) as url:
        r = fabric("--prometheus", url)
    one_line_error(r, 1, "HTTP 400 for /api/v1/query: parse error: unexpected \\x1b[31m")


MEASURE = ("import resource, subprocess, sys\n"
           "rc = subprocess.run(sys.argv[1:]).returncode\n"
           "print('peak_kib=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
           " end='', file=sys.stderr)\n"
           "sys.exit(rc)\n")


def test_an_answer_too_large_is_refused_unread():
    """A 300 MiB answer streamed without a length: the command reads 16 MiB and one byte,
    says so in one line, and its peak RSS stays far below the answer."""
    chunk = b" " * (1 << 20)

    def answer(h, path, q):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        for _ in range(300):
            h.wfile.write(chunk)

    with server(answer) as url:
        # A small Python runs the command and reports its children's peak RSS: a child's
        # ru_maxrss starts from its parent's RSS at fork, and the test process's is hundreds
        # of MB late in a run (RUSAGE_CHILDREN here would also be every child ever reaped).
        w = subprocess.run([sys.executable, "-c", MEASURE, NICWATCH, "fabric", "--prometheus",
                            url], capture_output=True, text=True, timeout=60)
    err, _, peak = w.stderr.rpartition("peak_kib=")
    r = subprocess.CompletedProcess(w.args, w.returncode, w.stdout, err)
    usage_kib = int(peak)
    one_line_error(r, 1, "is larger than 16MiB; refused unread")
    assert usage_kib < 150 * 1024, usage_kib  # KiB: far below the 300 MiB answer


@pytest.mark.parametrize("args, needle", [
    (["--prometheus", "ftp://127.0.0.1"], "--prometheus: expected http://"),
    (["--prometheus", "http://127.0.0.1:9", "--selector", "job=nicwatch"], "--selector"),
    (["--prometheus", "http://127.0.0.1:9", "--window", "five"], "--window"),
    (["--prometheus", "http://127.0.0.1:9", "--timeout", "soon"], "--timeout"),
])
def test_bad_flags_exit_2(args, needle):
    one_line_error(fabric(*args), 2, needle)


def minimal(up: float, diagnosis: bool = False) -> Answer:
    """One nicwatch target and its LLDP port; the fabric rules loaded, nothing recorded."""
    def answer(h, path, q):
        if path == "/api/v1/rules":
            send(h, json.dumps({"status": "success", "data": {"groups": [
                {"name": "nicwatch-fabric", "rules": []}]}}).encode())
            return
        query = q.get("query", "")
        port = {"job": "nicwatch", "instance": "h0", "device": "ens1f0"}
        if query.startswith("up{"):
            send(h, vector(({"job": "nicwatch", "instance": "h0"}, up)))
        elif query.startswith("nic_lldp_receive_state"):
            send(h, vector(({**port, "state": "ok"}, 1)))
        elif query.startswith("nic_diagnosis") and diagnosis:
            send(h, vector(({**port, "signature": "pause_storm", "priority": "3"}, 1)))
        else:
            send(h, vector())
    return answer


def test_a_healthy_answer_exits_0_and_writes_the_page(tmp_path):
    page = tmp_path / "fabric.html"
    with server(minimal(1)) as url:
        r = fabric("--prometheus", url, "--html", str(page))
        j = fabric("--prometheus", url, "--json")
    assert r.returncode == 0, r.stderr
    assert "PROBLEMS (0)\nnone: healthy" in r.stdout and "h0" in r.stdout
    assert j.returncode == 0 and json.loads(j.stdout)["healthy"] is True
    assert "healthy</span>" in page.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["fabric.html"]  # no temporary left


def test_a_target_down_or_a_verdict_exits_1():
    with server(minimal(0)) as url:
        r = fabric("--prometheus", url)
    assert r.returncode == 1 and "- nicwatch target h0 is down" in r.stdout
    with server(minimal(1, diagnosis=True)) as url:
        r = fabric("--prometheus", url, "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["problems"] == ["h0/ens1f0: diagnosis pause_storm (3)"]


def test_an_answer_dripped_a_byte_at_a_time_is_cut_off_at_the_timeout():
    """A server that never finishes (a byte every 0.2 s, each in a socket timeout's reach):
    the whole view is bounded by --timeout, not by the per-read timeout."""
    import time

    def answer(h, path, q):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        for _ in range(200):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.2)

    with server(answer) as url:
        start = time.monotonic()
        r = fabric("--prometheus", url, "--timeout", "2s")
        took = time.monotonic() - start
    one_line_error(r, 1, "no whole answer to /api/v1/query in time (--timeout)")
    assert took < 10, took


def test_without_the_fabric_rules_the_view_says_so_and_exits_1():
    base = minimal(1)

    def answer(h, path, q):
        if path == "/api/v1/rules":
            send(h, json.dumps({"status": "success", "data": {"groups": [
                {"name": "nicwatch-recording", "rules": []}]}}).encode())
        else:
            base(h, path, q)

    with server(answer) as url:
        r = fabric("--prometheus", url)
    assert r.returncode == 1
    assert "- the nicwatch-fabric rules are not loaded" in r.stdout
