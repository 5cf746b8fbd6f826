"""The HTTP endpoint: serves the exposition rendered by the last poll, never polls itself.

A bounded number of worker threads and a per-connection socket timeout keep one idle or
slow client from holding up scrapes. gzip uses level 1: on a 3 MB exposition level 9 costs
~200 ms of CPU for ~30% smaller output, level 1 ~7 ms.
"""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from nicwatch import __version__
from nicwatch.exporter.render import OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE

LANDING = """<!doctype html><html><head><title>nicwatch</title></head><body>
<h1>nicwatch {version}</h1><p>NIC telemetry: PAUSE/PFC, drops, FEC, rings, PCIe.</p>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>
"""


class Exposition:
    """One poll's exposition; each (format, compression) variant is built once on demand."""

    def __init__(self, render: Callable[[bool], bytes]) -> None:
        self._render = render
        self._cache: dict[tuple[bool, bool], bytes] = {}
        self._lock = threading.Lock()

    def get(self, openmetrics: bool, gzipped: bool) -> bytes:
        key = (openmetrics, gzipped)
        with self._lock:
            body = self._cache.get(key)
            if body is None:
                body = self._render(openmetrics)
                if gzipped:
                    body = gzip.compress(body, compresslevel=1, mtime=0)
                self._cache[key] = body
            return body


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, handler, max_workers: int) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(max_workers)
        self.exposition: Exposition | None = None

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            try:
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
            finally:
                self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10  # seconds a client may take to send its request
    server_version = f"nicwatch/{__version__}"

    def log_message(self, format, *args):  # access logs would drown the state-change log
        pass

    def _send(self, code: int, body: bytes, content_type: str, encoding: str | None = None):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        exposition = self.server.exposition
        if path == "/metrics":
            if exposition is None:
                return self._send(503, b"no poll completed yet\n", "text/plain")
            om = "application/openmetrics-text" in self.headers.get("Accept", "")
            gz = "gzip" in self.headers.get("Accept-Encoding", "")
            body = exposition.get(om, gz)
            ctype = OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE
            return self._send(200, body, ctype, "gzip" if gz else None)
        if path == "/healthz":
            return self._send(200, b"ok\n", "text/plain")
        if path == "/readyz":
            ready = exposition is not None
            return self._send(200 if ready else 503, b"ready\n" if ready else b"starting\n",
                              "text/plain")
        if path == "/":
            return self._send(200, LANDING.format(version=__version__).encode(), "text/html")
        return self._send(404, b"not found\n", "text/plain")


class MetricsServer:
    def __init__(self, host: str, port: int, max_workers: int = 16) -> None:
        self._server = _Server((host, port), _Handler, max_workers)
        self._thread = threading.Thread(target=self._server.serve_forever, name="http",
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def publish(self, exposition: Exposition) -> None:
        self._server.exposition = exposition

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
