"""The HTTP endpoint: serves the exposition rendered by the last poll, never polls itself.

One asyncio loop on its own thread owns every connection, so an idle or slow client costs
a little memory, never a thread: 100 idle connections and a client trickling its headers one
byte at a time do not delay anybody else's scrape. Each connection has deadlines (the whole
request head within ``header_timeout``, the next keep-alive request within
``idle_timeout``, a response drained within ``write_timeout``) and the number of open
connections is capped. TLS is negotiated per accepted connection, non-blocking on the loop
under ``handshake_timeout``, never in accept: prometheus_client wraps the listening socket,
and one client that never sends a ClientHello wedges every scrape. Work that can take
CPU time (bcrypt checks, building a not-yet-cached format, API handlers) runs on a small
bounded thread pool.

Authentication, TLS, headers and the rate limit come from an exporter-toolkit web config
file (see webconfig.py), re-read when it or its certificates change. ``/healthz`` and
``/readyz`` answer without credentials: they reveal nothing, and probes rarely carry any.

gzip level 1, chosen by measurement (docs/performance.md, "gzip levels"): on a 1 MB
exposition level 6 costs 8x the CPU of level 1 for a body 28% smaller, level 9 24x for 39%.
Each format is compressed at most once per poll, but that is poll-rate CPU all the same.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import gzip
import hashlib
import os
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import formatdate
from urllib.parse import parse_qsl, urlsplit

import bcrypt
import structlog

from nicwatch import __version__
from nicwatch.config import ConfigError
from nicwatch.exporter.render import OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE
from nicwatch.exporter.webconfig import WebConfig, WebConfigWatcher, allowed_san

log = structlog.get_logger("nicwatch.http")

GZIP_LEVEL = 1
LANDING = """<!doctype html><html><head><title>nicwatch</title></head><body>
<h1>nicwatch {version}</h1><p>NIC telemetry: PAUSE/PFC, drops, FEC, rings, PCIe.</p>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>
"""
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           411: "Length Required", 413: "Content Too Large", 429: "Too Many Requests",
           431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}
BUILTIN = ("/metrics", "/healthz", "/readyz", "/")
UNAUTHENTICATED = frozenset({"/healthz", "/readyz"})
TEXT = "text/plain; charset=utf-8"

# handler(query, body) -> (status, content type, body); query holds the last value of each
# parameter.
Handler = Callable[[dict[str, str], bytes], tuple[int, str, bytes]]


class Exposition:
    """One poll's exposition; each (format, compression) variant is built once on demand."""

    def __init__(self, render: Callable[[bool], bytes], gzip_level: int = GZIP_LEVEL) -> None:
        self._render = render
        self._level = gzip_level
        self._cache: dict[tuple[bool, bool], bytes] = {}
        self._lock = threading.Lock()

    def cached(self, openmetrics: bool, gzipped: bool) -> bytes | None:
        return self._cache.get((openmetrics, gzipped))

    def get(self, openmetrics: bool, gzipped: bool) -> bytes:
        key = (openmetrics, gzipped)
        with self._lock:
            body = self._cache.get(key)
            if body is None:
                if gzipped:
                    plain = self._cache.get((openmetrics, False)) or self._render(openmetrics)
                    self._cache[(openmetrics, False)] = plain
                    body = gzip.compress(plain, compresslevel=self._level, mtime=0)
                else:
                    body = self._render(openmetrics)
                self._cache[key] = body
            return body


def _qualities(header: str | None) -> list[tuple[str, dict[str, str], float]]:
    """(lower-cased token, parameters, q) of each element of an Accept-style header."""
    out = []
    for element in (header or "").split(","):
        token, *params = (p.strip() for p in element.split(";"))
        if not token:
            continue
        parsed = {}
        for p in params:
            k, _, v = p.partition("=")
            parsed[k.strip().lower()] = v.strip().strip('"')
        try:
            q = float(parsed.pop("q", "1"))
        except ValueError:
            q = 0.0
        out.append((token.lower(), parsed, q))
    return out


def wants_openmetrics(accept: str | None) -> bool:
    """OpenMetrics when the client ranks it at least as high as the text format."""
    om = text = 0.0
    for token, params, q in _qualities(accept):
        if token == "application/openmetrics-text" and params.get("version", "1.0.0") in (
                "1.0.0", "0.0.1"):
            om = max(om, q)
        elif token in ("text/plain", "text/*", "*/*"):
            text = max(text, q)
    return om > 0 and om >= text


def wants_gzip(accept_encoding: str | None) -> bool:
    q = {token: q for token, _, q in _qualities(accept_encoding)}
    return q.get("gzip", q.get("*", 0.0)) > 0


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    handler: Handler
    write: bool


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    version: str
    headers: dict[str, str]  # lower-case names


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_head(head: bytes) -> Request:
    """The request line and headers of one HTTP/1.x request (``head`` ends with CRLF CRLF)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(400, "malformed request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise _BadRequest(400, "malformed header line")
        name = name.lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    url = urlsplit(target)
    return Request(method, url.path or "/", dict(parse_qsl(url.query)), version, headers)


class _BasicAuth:
    """bcrypt checks with a small cache of successes: a cost-10 hash takes ~70 ms of CPU,
    far too much for every scrape. Keys are digests, so no password stays in memory."""

    def __init__(self, size: int = 64) -> None:
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def check(self, users, authorization: str | None) -> bool:
        if not authorization or authorization[:6].lower() != "basic ":
            return False
        try:
            decoded = base64.b64decode(authorization[6:].strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, colon, password = decoded.partition(b":")
        if not colon:
            return False
        hashed = users.get(user.decode("utf-8", "replace"))
        if not users:
            return False
        key = hashlib.sha256(b"\0".join((user, password, hashed or b""))).digest()
        with self._lock:
            if hashed is not None and key in self._ok:
                self._ok.move_to_end(key)
                return True
        # An unknown user costs a bcrypt check against some user's hash too, so timing does
        # not reveal who exists.
        ok = bcrypt.checkpw(password, hashed or next(iter(users.values()))) \
            and hashed is not None
        if ok:
            with self._lock:
                self._ok[key] = None
                while len(self._ok) > self._size:
                    self._ok.popitem(last=False)
        return ok


class _TokenBucket:
    def __init__(self) -> None:
        self._tokens = 0.0
        self._last = time.monotonic()
        self._limit = None

    def allow(self, limit) -> bool:
        now = time.monotonic()
        if limit != self._limit:
            self._limit, self._tokens = limit, float(limit.burst)
        else:
            self._tokens = min(limit.burst, self._tokens + (now - self._last) / limit.interval)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False


def systemd_sockets() -> list[socket.socket]:
    """The listening sockets systemd passed (socket activation, LISTEN_FDS)."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        raise ConfigError("--web.systemd-socket: no sockets from systemd (LISTEN_PID is not "
                          "this process)")
    count = os.environ.get("LISTEN_FDS", "0")
    if not count.isdigit() or int(count) < 1:
        raise ConfigError(f"--web.systemd-socket: LISTEN_FDS is {count!r}, not a number of "
                          "sockets")
    count = int(count)
    return [socket.socket(fileno=3 + i) for i in range(count)]


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128)


class MetricsServer:
    """Serves the last published Exposition plus registered API routes.

    ``start`` runs the loop on a daemon thread; ``stop`` closes every connection and joins
    it. The constructor binds (an OSError such as EADDRINUSE surfaces there) and loads the
    web config file (WebConfigError, a ConfigError, on a bad file).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 web_config_file: str | None = None, allow_writes: bool = False,
                 sockets: list[socket.socket] | None = None, max_workers: int = 4,
                 max_connections: int = 512, header_timeout: float = 10.0,
                 idle_timeout: float = 120.0, write_timeout: float = 30.0,
                 handshake_timeout: float = 10.0, max_body: int = 1 << 20,
                 web_config_check: float = 1.0) -> None:
        self._web = WebConfigWatcher(web_config_file, web_config_check) \
            if web_config_file else None
        self._sockets = sockets or [_bind(host, port)]
        self.allow_writes = allow_writes
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self.write_timeout = write_timeout
        self.handshake_timeout = handshake_timeout
        self.max_body = max_body
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="http-worker")
        self._routes: dict[str, dict[str, Route]] = {}
        self._exposition: Exposition | None = None
        self._auth = _BasicAuth()
        self._bucket = _TokenBucket()
        self._open = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._date = (0, "")
        # (openmetrics, gzipped) of the last /metrics request: the variant worth building
        # on the poll thread, so scrapers are not the ones who wait for it.
        self.last_variant: tuple[bool, bool] = (False, False)

    @property
    def port(self) -> int:
        return self._sockets[0].getsockname()[1]

    @property
    def open_connections(self) -> int:
        return self._open

    def publish(self, exposition: Exposition) -> None:
        self._exposition = exposition

    def add_route(self, method: str, path: str, handler: Handler, write: bool = False) -> None:
        """Serve ``handler`` for ``method path``. Write routes answer 403 unless the server
        was created with ``allow_writes``; every route is behind the same authentication."""
        if path in BUILTIN:
            raise ValueError(f"{path} is built in")
        self._routes.setdefault(path, {})[method.upper()] = Route(method.upper(), path,
                                                                  handler, write)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        self._thread.start()
        self._ready.wait()

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for s in self._sockets:
            s.close()

    # -- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_quiet_exceptions)
        self._stopping = asyncio.Event()
        connections: set[asyncio.Task] = set()
        acceptors = []
        for sock in self._sockets:
            sock.setblocking(False)
            acceptors.append(asyncio.create_task(self._accept(sock, connections)))
        self._ready.set()
        await self._stopping.wait()
        for task in (*acceptors, *connections):
            task.cancel()
        await asyncio.gather(*acceptors, *connections, return_exceptions=True)

    async def _accept(self, sock: socket.socket, connections: set) -> None:
        failed_at = None  # monotonic time of the last failed accept, while failing
        while True:
            try:
                conn, _ = await self._loop.sock_accept(sock)
            except OSError as e:  # EMFILE and friends: back off instead of spinning
                if failed_at is None:
                    log.warning("accept_failed", error=str(e))
                failed_at = time.monotonic()
                await asyncio.sleep(0.1)
                continue
            # Recovered once accepts have worked for a second: at the edge of its file
            # descriptor limit a listener alternates, and each alternation is no event.
            if failed_at is not None and time.monotonic() - failed_at > 1.0:
                log.info("accept_recovered")
                failed_at = None
            if self._open >= self.max_connections:
                conn.close()
                continue
            self._open += 1
            task = asyncio.create_task(self._connection(conn))
            connections.add(task)
            task.add_done_callback(connections.discard)

    async def _connection(self, conn: socket.socket) -> None:
        writer = None
        try:
            web = self._web.current() if self._web else None
            ctx = web.ssl_context if web else None
            reader = asyncio.StreamReader(limit=16384)
            protocol = asyncio.StreamReaderProtocol(reader)
            transport, _ = await self._loop.connect_accepted_socket(
                lambda: protocol, conn, ssl=ctx,
                ssl_handshake_timeout=self.handshake_timeout if ctx else None)
            writer = asyncio.StreamWriter(transport, protocol, reader, self._loop)
            if ctx and not allowed_san(writer.get_extra_info("peercert"),
                                       web.tls.client_allowed_sans):
                return
            await self._requests(reader, writer)
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError):
            pass
        finally:
            self._open -= 1
            if writer is not None:
                writer.transport.abort()
            else:
                conn.close()

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        timeout = self.header_timeout
        while True:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
            except asyncio.LimitOverrunError:
                await self._respond(writer, 431, TEXT, b"request head too large\n", close=True)
                return
            try:
                request = parse_head(head)
                body = await self._body(reader, request)
            except _BadRequest as e:
                await self._respond(writer, e.status, TEXT, f"{e}\n".encode(), close=True)
                return
            keep = request.version == "HTTP/1.1" and "close" not in \
                request.headers.get("connection", "").lower()
            status, ctype, payload, extra = await self._dispatch(request, body)
            await self._respond(writer, status, ctype, payload, extra, close=not keep,
                                head_only=request.method == "HEAD")
            if not keep:
                return
            timeout = self.idle_timeout

    async def _body(self, reader: asyncio.StreamReader, request: Request) -> bytes:
        if "transfer-encoding" in request.headers:
            raise _BadRequest(411, "send a Content-Length, chunked bodies are not accepted")
        length = request.headers.get("content-length")
        if length is None:
            return b""
        if not length.isdigit():
            raise _BadRequest(400, "bad Content-Length")
        if int(length) > self.max_body:
            raise _BadRequest(413, f"body larger than {self.max_body} bytes")
        return await asyncio.wait_for(reader.readexactly(int(length)), self.header_timeout)

    async def _dispatch(self, request: Request, body: bytes) -> tuple[int, str, bytes, list]:
        web = self._web.current() if self._web else None
        if web and web.rate_limit and not self._bucket.allow(web.rate_limit):
            return 429, TEXT, b"rate limit exceeded\n", []
        if web and web.users and request.path not in UNAUTHENTICATED:
            ok = await self._loop.run_in_executor(
                self._pool, self._auth.check, web.users, request.headers.get("authorization"))
            if not ok:
                return 401, TEXT, b"unauthorized\n", [("WWW-Authenticate",
                                                       'Basic realm="nicwatch"')]
        if request.path in BUILTIN:
            if request.method not in ("GET", "HEAD"):
                return 405, TEXT, b"method not allowed\n", [("Allow", "GET, HEAD")]
            return await self._builtin(request)
        routes = self._routes.get(request.path)
        if not routes:
            return 404, TEXT, b"not found\n", []
        route = routes.get(request.method)
        if route is None:
            return 405, TEXT, b"method not allowed\n", [("Allow", ", ".join(sorted(routes)))]
        if route.write and not self.allow_writes:
            return 403, TEXT, b"write endpoints are disabled\n", []
        try:
            status, ctype, payload = await self._loop.run_in_executor(
                self._pool, route.handler, request.query, body)
        except Exception as e:
            log.exception("handler_failed", path=request.path, error=str(e))
            return 500, TEXT, b"internal error\n", []
        return status, ctype, payload, []

    async def _builtin(self, request: Request) -> tuple[int, str, bytes, list]:
        exposition = self._exposition
        if request.path == "/metrics":
            if exposition is None:
                return 503, TEXT, b"no poll completed yet\n", []
            om = wants_openmetrics(request.headers.get("accept"))
            gz = wants_gzip(request.headers.get("accept-encoding"))
            self.last_variant = (om, gz)
            body = exposition.cached(om, gz)
            if body is None:
                body = await self._loop.run_in_executor(self._pool, exposition.get, om, gz)
            extra = [("Vary", "Accept, Accept-Encoding")]
            if gz:
                extra.append(("Content-Encoding", "gzip"))
            return 200, OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE, body, extra
        if request.path == "/healthz":
            return 200, TEXT, b"ok\n", []
        if request.path == "/readyz":
            if exposition is None:
                return 503, TEXT, b"starting\n", []
            return 200, TEXT, b"ready\n", []
        return 200, "text/html; charset=utf-8", LANDING.format(version=__version__).encode(), []

    def _http_date(self) -> str:
        now = int(time.time())
        if self._date[0] != now:
            self._date = (now, formatdate(now, usegmt=True))
        return self._date[1]

    async def _respond(self, writer: asyncio.StreamWriter, status: int, ctype: str,
                       body: bytes, extra: list | None = None, close: bool = False,
                       head_only: bool = False) -> None:
        web: WebConfig | None = self._web.current() if self._web else None
        headers = [("Content-Type", ctype), ("Content-Length", str(len(body))),
                   ("Date", self._http_date()), *(extra or ()), *(web.headers if web else ())]
        if close:
            headers.append(("Connection", "close"))
        head = f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        writer.write(head.encode("latin-1") if head_only else head.encode("latin-1") + body)
        await asyncio.wait_for(writer.drain(), self.write_timeout)


def _quiet_exceptions(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """Client-side failures (resets, failed handshakes) are routine on a network endpoint."""
    exc = context.get("exception")
    if isinstance(exc, (OSError, ssl.SSLError, TimeoutError)):
        return
    loop.default_exception_handler(context)

