"""Issue #43 item 7 (part): inputs that gave tracebacks instead of one line naming the
problem. Each test runs the real command, as the report did."""

import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))


def nicwatch(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([NICWATCH, *argv], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", ["check", "serve"])
@pytest.mark.parametrize("toml", ["interval = {n}\n", "[expectations]\nx = {n}\n",
                                  "[web]\nlisten_address = [{n}]\n"])
def test_a_config_with_a_5000_digit_integer_is_one_line_and_exit_2(tmp_path, command, toml):
    """Before: tomllib's int() raised ValueError (Exceeds the limit (4300 digits)) out of
    read_file: a traceback."""
    config = tmp_path / "nicwatch.toml"
    config.write_text(toml.format(n="9" * 5000))
    r = nicwatch(command, "--config", str(config))
    assert r.returncode == 2, r.stderr[-1500:]
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-1500:]
    assert f"{config}: holds an integer of more than 4300 digits" in r.stderr


@pytest.mark.parametrize("key, value, why", [
    ("onset", "1" + "0" * 400, "'onset' is not a time from 1970 to 9999"),
    ("onset", "-5", "'onset' is not a time from 1970 to 9999"),
    ("value", "1" + "0" * 400, "'value' is not a finite number"),
    ("end", "1" + "0" * 400, "'end' is not a time from 1970 to 9999"),
])
def test_incidents_dir_with_a_huge_onset_skips_the_entry_in_one_line(tmp_path, key, value, why):
    """Before: `nicwatch incidents --dir` with a 401-digit onset: OverflowError (int too
    large to convert to float) from the time formatting, a traceback, exit 1. A crafted
    incident.json is skipped and named, as the others are (docs/failure-behaviour.md)."""
    name = "20200101T000000.000Z-eth0-x-0123abcd"
    (tmp_path / name).mkdir()
    meta = {"id": name, "device": "eth0", "onset": 1.6e9, "trigger": {"name": "t"}}
    text = json.dumps(meta)[:-1] + f', "{key}": {value}}}'
    (tmp_path / name / "incident.json").write_text(text)
    r = nicwatch("incidents", "--dir", str(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr[-1500:]
    assert r.returncode == 0 and r.stderr.count("\n") == 1
    assert name in r.stderr and why in r.stderr, r.stderr


BIG_BODY = 300 << 20


class _Flood(http.server.BaseHTTPRequestHandler):
    """Answers every GET 400 with BIG_BODY bytes of body, streamed (costs the test nothing)."""

    def do_GET(self) -> None:
        self.send_response(400)
        self.send_header("Content-Length", str(BIG_BODY))
        self.end_headers()
        line = b"bad request: " + b"x" * 65_522 + b"\n"
        try:
            for _ in range(BIG_BODY // len(line)):
                self.wfile.write(line)
        except OSError:
            pass  # the client stopped reading: what it should do

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flood():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flood)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


PEAK = """import re, sys
from nicwatch.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read())[1])
sys.exit(code)
"""


@pytest.mark.parametrize("argv", [("history", "-o", "{tmp}/h.json"), ("incidents",)])
def test_an_http_error_body_is_read_to_4_kib_at_most(flood, tmp_path, argv):
    """Issue #43 item 8: `nicwatch history` read an error body whole (400 MB: 1.69 GB
    resident); incidents --web.url capped it at 4 KiB. One rule (common.MAX_ERROR_BODY)."""
    argv = tuple(a.format(tmp=tmp_path) for a in argv)
    r = subprocess.run([sys.executable, "-c", PEAK, *argv, "--web.url", flood],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr[-1500:]
    (line,) = r.stderr.splitlines()
    assert ": HTTP 400: bad request: xxx" in line and len(line) < 4096 + 200, line[:200]
    peak_kib = int(r.stdout.split()[-1])
    assert peak_kib < 100 << 10, peak_kib  # not the body: before, 4-6 times its 300 MB


class _Listing(http.server.BaseHTTPRequestHandler):
    """Answers 200 with BIG_BODY bytes of JSON empty lists: what a hostile --web.url sends."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(BIG_BODY))
        self.end_headers()
        chunk = b"[]," * (1 << 16)
        try:
            self.wfile.write(b"[")
            for _ in range((BIG_BODY - 2) // len(chunk)):
                self.wfile.write(chunk)
            self.wfile.write(b"[]" + b" " * ((BIG_BODY - 2) % len(chunk) - 2) + b"]")
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("body_mb", [300, 20])
def test_an_incident_listing_is_bounded_before_it_is_parsed(tmp_path, body_mb, monkeypatch):
    """`incidents --web.url` read up to 256 MiB of an answer and json.loads'ed it: 256 MiB
    of empty lists are 5 GB of Python lists. Now an answer larger than a listing can be
    (32 MiB), or holding more values than one (2 M), is one line, exit 1, before parsing."""
    monkeypatch.setattr(sys.modules[__name__], "BIG_BODY", body_mb << 20)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Listing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = subprocess.run([sys.executable, "-c", PEAK, "incidents", "--web.url",
                            f"http://127.0.0.1:{server.server_port}"],
                           capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
        server.server_close()
    peak_kib = int(r.stdout.split()[-1])
    assert peak_kib < 200 << 10, peak_kib  # before: 574 MB (20 MB answer), 6.6 GB (300 MB)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-1500:]
    (line,) = r.stderr.splitlines()
    assert "larger than 32MiB" in line or "more than 2,000,000 JSON values" in line, line
