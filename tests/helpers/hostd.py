"""`nicwatch serve` on this host's own network namespace, on a free loopback port; running it as
the unprivileged user; checking its JSON log lines."""

import json
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HostDaemon:
    def __init__(self, *flags: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([NICWATCH, "serve", f"--web.listen-address=127.0.0.1:{self.port}",
                                      *flags], stderr=subprocess.PIPE, text=True)
        self.stderr = ""

    def metrics(self) -> str:
        return subprocess.run(["curl", "-sf", f"http://127.0.0.1:{self.port}/metrics"],
                              capture_output=True, text=True).stdout

    def wait_for(self, text: str, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while True:
            body = self.metrics()
            if text in body:
                return body
            assert self.proc.poll() is None, "daemon exited"
            assert time.monotonic() < deadline, f"{text!r} never appeared on /metrics"
            time.sleep(0.1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, self.stderr = self.proc.communicate(timeout=5)
        return self.proc.returncode


@contextmanager
def host_daemon(*flags: str):
    daemon = HostDaemon(*flags)
    try:
        yield daemon
    finally:
        daemon.stop()


NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def check_lines(lines: list[str]) -> list[dict]:
    """Every line is one JSON event with a level and a UTC ISO timestamp."""
    events = [json.loads(line) for line in lines]
    for e in events:
        assert e["level"] in ("debug", "info", "warning", "error") and e["event"], e
        assert datetime.fromisoformat(e["timestamp"]).utcoffset() is not None, e
    return events
