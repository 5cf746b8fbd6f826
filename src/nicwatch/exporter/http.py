"""The HTTP endpoint: serves the exposition rendered by the last poll, never polls itself.

One asyncio loop on its own thread owns every connection, so an idle or slow client costs
a little memory, never a thread: 100 idle connections and a client trickling its headers one
byte at a time do not delay anybody else's scrape. Each connection has deadlines (the whole
request head within ``header_timeout``, the next keep-alive request within
``idle_timeout``, a response drained within ``write_timeout``), and open connections are
capped in total and per client address. A connection beyond either cap evicts the
longest-idle connection (none whose answer is being worked out, none whose request has
arrived unread) of the client holding the most, so a flood of idle connections costs the
flooder its own oldest ones, never a scraper its turn; when its own client has none to
give, the new connection is answered 429 with Retry-After instead of being reset. Over
half the cap, keep-alive connections wait ``pressure_idle_timeout`` at most. TLS is
negotiated per accepted connection, non-blocking on the loop under ``handshake_timeout``,
never in accept: prometheus_client wraps the listening socket, and one client that never
sends a ClientHello wedges every scrape. No TLS state exists before the client's first
byte, handshakes in progress are capped (in total and per client), and a TLS connection
reads through one record's buffer, not asyncio's 256 KiB: connection state stays under
64 MB whatever clients do (docs/failure-behaviour.md, "Memory per connection").

Work that can take CPU time (building a not-yet-cached format, API handlers) runs on a
small bounded thread pool. bcrypt checks run on their own single thread (as the
exporter-toolkit runs one at a time), at most one queued per client address and
``max_bcrypt_pending`` in all, ranked: addresses that authenticated before first, then
those with fewer failed checks, then arrival; a newcomer that outranks the last in line
takes its place when the queue is full, else it gets 429 with Retry-After. An outcome is
cached even if its client gave up waiting. Credentials seen before, good or bad, are
answered from a cache on the loop, waiting for neither. A route can cap its concurrent
requests (``/api/v1/history``: 2), answering 503 with Retry-After beyond, and can stream
its body (chunked, one piece produced per piece sent).

A request nicwatch cannot parse gets a 400 (431, 411, 413 or 417 where those fit) and one
``bad_request`` log line (at most ``BAD_REQUEST_LOG_PER_SECOND`` a second, the rest counted
in the next line's ``suppressed``); nothing a client sends produces a traceback.

Authentication, TLS, headers and the rate limit come from an exporter-toolkit web config
file (see webconfig.py), re-read when it or its certificates change. ``/healthz`` and
``/readyz`` answer without credentials: they reveal nothing, and probes rarely carry any.

gzip level 1, chosen by measurement (docs/performance.md, "gzip levels"): on a 1 MB
exposition level 6 costs 8x the CPU of level 1 for a body 28% smaller, level 9 24x for 39%.
Each format is compressed at most once per poll, but that is poll-rate CPU all the same.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import base64
import binascii
import hashlib
import heapq
import html
import ipaddress
import os
import re
import socket
import ssl
import threading
import time
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import formatdate
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import bcrypt
import structlog

from nicwatch import __version__
from nicwatch.exporter.render import OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, render_age
from nicwatch.exporter.webconfig import RateLimit, WebConfig, WebConfigWatcher, allowed_san
from nicwatch.sources import threads
from nicwatch.values import ConfigError

log = structlog.get_logger("nicwatch.http")

GZIP_LEVEL = 1
LANDING = """<!doctype html><html><head><title>nicwatch</title></head><body>
<h1>nicwatch {version}</h1><p>NIC telemetry: PAUSE/PFC, drops, FEC, rings, PCIe.</p>
<ul><li><a href="{telemetry}">{telemetry}</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>
"""
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           411: "Length Required", 413: "Content Too Large", 417: "Expectation Failed",
           429: "Too Many Requests",
           431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}
BUILTIN = ("/metrics", "/healthz", "/readyz", "/")  # /metrics: the default telemetry path
UNAUTHENTICATED = frozenset({"/healthz", "/readyz"})
TEXT = "text/plain; charset=utf-8"
# bcrypt uses the first 72 bytes of a password. Go's CompareHashAndPassword (and so the
# exporter-toolkit) ignores the rest; Python's bcrypt raises instead, so cut it first.
BCRYPT_MAX_PASSWORD = 72
CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
METHOD = re.compile(r"[A-Z]{1,16}")
BAD_REQUEST_LOG_PER_SECOND = 10
BARE_CR_OR_LF = re.compile(rb"\r(?!\n)|(?<!\r)\n")
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 5.6.2
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # all but HTAB (Go's httpguts)
# One TLS record (16 KiB of plaintext) plus its header and the largest AEAD overhead.
TLS_READ_BUFFER = 16 * 1024 + 256
# After a burst of connections, freed memory is returned to the system (malloc_trim).
TRIM_INTERVAL = 5.0
TRIM_AFTER_CONNECTIONS = 64
# Client addresses remembered as having completed a TLS handshake (their handshakes are the
# last evicted when too many are under way).
TLS_KNOWN_CLIENTS = 1024
# Client addresses remembered for the bcrypt queue's order (authenticated, failures).
AUTH_PEERS_REMEMBERED = 4096

# handler(query, body) -> (status, content type, body); query holds the last value of each
# parameter. A body that is an iterator of bytes is streamed (chunked), each piece produced
# on the worker pool as the client takes it.
_Headers = list[tuple[str, str]]
# a queued bcrypt check: (rank, arrival, client, check, its outcome: None when displaced)
_Queued = tuple[tuple[int, int], int, str, Callable[[], bool], "asyncio.Future[bool | None]"]
Handler = Callable[[dict[str, str], bytes], tuple[int, str, bytes | Iterator[bytes]]]


class Exposition:
    """One poll's exposition; each (format, compression) variant is built once on demand.

    With ``finished`` (the monotonic time the poll completed) every body ends in
    ``nicwatch_last_poll_age_seconds``, computed when it is served: a poller that hangs
    renders nothing, yet its age keeps rising on /metrics. The cached part is never
    re-rendered or recompressed: a gzip variant keeps its compressor's state after the
    cached part and finishes a copy of it with the age line (microseconds).
    """

    EOF = b"# EOF\n"

    def __init__(self, render: Callable[[bool], bytes], gzip_level: int = GZIP_LEVEL,
                 finished: float | None = None) -> None:
        self._render = render
        self._level = gzip_level
        self.finished = finished
        self._plain: dict[bool, bytes] = {}
        # compressed part, compressor
        self._gzip: dict[bool, tuple[bytes, zlib._Compress]] = {}
        self._lock = threading.Lock()

    def age(self, now: float | None = None) -> float:
        """Seconds since the poll completed (0 without ``finished``)."""
        if self.finished is None:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - self.finished)

    def _tail(self, openmetrics: bool) -> bytes:
        if self.finished is None:
            return self.EOF if openmetrics else b""
        return render_age(self.age(), openmetrics)

    def _body(self, openmetrics: bool, gzipped: bool) -> bytes:
        tail = self._tail(openmetrics)
        if not gzipped:
            return self._plain[openmetrics] + tail
        head, compressor = self._gzip[openmetrics]
        c = compressor.copy()
        return head + c.compress(tail) + c.flush()

    def cached(self, openmetrics: bool, gzipped: bool) -> bytes | None:
        if openmetrics not in (self._gzip if gzipped else self._plain):
            return None
        return self._body(openmetrics, gzipped)

    def get(self, openmetrics: bool, gzipped: bool) -> bytes:
        with self._lock:
            plain = self._plain.get(openmetrics)
            if plain is None:
                plain = self._render(openmetrics)
                if openmetrics:
                    plain = plain.removesuffix(self.EOF)
                self._plain[openmetrics] = plain
            if gzipped and openmetrics not in self._gzip:
                compressor = zlib.compressobj(self._level, zlib.DEFLATED, 31)  # gzip framing
                self._gzip[openmetrics] = (compressor.compress(plain), compressor)
        return self._body(openmetrics, gzipped)


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
    max_concurrent: int | None = None


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
    """The request line and headers of one HTTP/1.x request (``head`` ends with CRLF CRLF).

    As strict as Go's net/http, so that nicwatch and a proxy in front of it never disagree
    on where a request ends (request smuggling): a line ends only at CRLF (a bare LF or a
    bare CR anywhere is a 400; nicwatch used to take ``X-A: a\\nContent-Length: 34`` as two
    headers), a header name is an RFC 9110 token, a value holds no control character but
    HTAB (NUL, CR), and there is no obs-fold."""
    if BARE_CR_OR_LF.search(head):
        raise _BadRequest(400, "bare CR or LF in the request head")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not METHOD.fullmatch(parts[0]) or not parts[1] \
            or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise _BadRequest(400, "malformed request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not TOKEN.fullmatch(name):
            raise _BadRequest(400, "malformed header line")
        if CONTROL.search(value):
            raise _BadRequest(400, "control character in a header value")
        name = name.lower()
        value = value.strip(" \t")
        if name == "host" and name in headers:
            raise _BadRequest(400, "more than one Host header")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    try:
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, max_num_fields=100))
    except ValueError:  # "http://[::1", too many fields
        raise _BadRequest(400, "malformed request target") from None
    return Request(method, url.path or "/", query, version, headers)


class _BasicAuth:
    """bcrypt checks with caches of outcomes: a cost-10 hash takes ~70 ms of CPU, far too
    much for every scrape. Like the exporter-toolkit, failures are remembered too (in their
    own cache, so a flood of wrong passwords cannot push good credentials out). Keys are
    digests, so no password stays in memory."""

    def __init__(self, good: int = 64, bad: int = 1024) -> None:
        self._caches: dict[bool, OrderedDict[bytes, None]] = {True: OrderedDict(),
                                                              False: OrderedDict()}
        self._sizes = {True: good, False: bad}
        self._lock = threading.Lock()

    def lookup(self, users: Mapping[str, bytes],
               authorization: str | None) -> bool | Callable[[], bool]:
        """The answer when it needs no bcrypt (malformed, cached), else a function that
        runs the bcrypt check, remembers and returns its outcome."""
        if not users or not authorization or authorization[:6].lower() != "basic ":
            return False
        try:
            decoded = base64.b64decode(authorization[6:].strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, colon, password = decoded.partition(b":")
        if not colon:
            return False
        hashed = users.get(user.decode("utf-8", "replace"))
        key = hashlib.sha256(b"\0".join((user, password, hashed or b""))).digest()
        with self._lock:
            for outcome, cache in self._caches.items():
                if key in cache:
                    cache.move_to_end(key)
                    return outcome and hashed is not None

        def verify() -> bool:
            # An unknown user costs a bcrypt check against some user's hash too, so timing
            # does not reveal who exists.
            try:
                ok = bcrypt.checkpw(password[:BCRYPT_MAX_PASSWORD],
                                    hashed or next(iter(users.values()))) and hashed is not None
            except ValueError:  # a hash bcrypt cannot use (as Go's Compare fails: no match)
                ok = False
            with self._lock:
                cache = self._caches[ok]
                cache[key] = None
                while len(cache) > self._sizes[ok]:
                    cache.popitem(last=False)
            return ok
        return verify

    def check(self, users: Mapping[str, bytes], authorization: str | None) -> bool:
        answer = self.lookup(users, authorization)
        return answer if isinstance(answer, bool) else answer()


def client_key(addr: object) -> str:
    """Whom a connection counts against: its IPv4 address, or the /64 of its IPv6 address
    (one host routinely holds a whole /64); "" for a Unix socket."""
    if not isinstance(addr, tuple):
        return ""
    try:
        ip = ipaddress.ip_address(addr[0].partition("%")[0])
    except ValueError:
        return str(addr[0])
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _Conn:
    """One accepted connection, as the admission policy sees it."""

    __slots__ = ("busy", "handshaking", "over_cap", "peer", "since", "sock", "task")

    def __init__(self, peer: str, sock: socket.socket) -> None:
        self.peer = peer
        self.sock = sock
        self.task: asyncio.Task[None] | None = None
        self.busy = False  # an answer is being worked out: never evicted
        self.handshaking = False  # holds one of the TLS handshake slots
        # beyond its client's cap: its request is answered 429 (not counted in that cap)
        self.over_cap = False
        self.since = time.monotonic()  # accepted, or its last request or response


class _SSLProtocol(asyncio.sslproto.SSLProtocol):
    """asyncio's TLS protocol with a read buffer of one TLS record instead of 256 KiB.

    asyncio allocates (and zero-fills) ``max_size`` bytes per TLS connection when it is
    created; with OpenSSL's own state that made an idle TLS connection cost 312 KiB, and 500
    of them 156 MB. The buffer only receives what one recv() returns before it is fed to
    OpenSSL, so a record's worth is plenty (a larger recv is split over several reads)."""

    max_size = TLS_READ_BUFFER


class _TransportCatcher(asyncio.StreamReaderProtocol):
    """A StreamReaderProtocol that remembers the transport it was given."""

    transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        super().connection_made(transport)


class _LogBudget:
    """At most ``per_second`` lines a second; the rest are counted into the next line."""

    def __init__(self, per_second: int) -> None:
        self._per_second = per_second
        self._second = 0
        self._used = 0
        self.suppressed = 0

    def take(self) -> int | None:
        """None to stay quiet, else how many lines were suppressed before this one."""
        now = int(time.monotonic())
        if now != self._second:
            self._second, self._used = now, 0
        if self._used >= self._per_second:
            self.suppressed += 1
            return None
        self._used += 1
        suppressed, self.suppressed = self.suppressed, 0
        return suppressed


class _TokenBucket:
    def __init__(self) -> None:
        self._tokens = 0.0
        self._last = time.monotonic()
        self._limit: RateLimit | None = None

    def allow(self, limit: RateLimit) -> bool:
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
    raw = os.environ.get("LISTEN_FDS", "0")
    count = int(raw) if raw.isdigit() and len(raw) < 6 else -1
    if count < 1:
        raise ConfigError(f"--web.systemd-socket: LISTEN_FDS is {raw[:20]!r}, not a number of "
                          "sockets")
    sockets = []
    for fd in range(3, 3 + count):
        try:
            sockets.append(socket.socket(fileno=fd))
        except OSError as e:
            raise ConfigError(f"--web.systemd-socket: file descriptor {fd} (LISTEN_FDS="
                              f"{count}) is not a socket: {e.strerror or e}") from None
    return sockets


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
                 max_connections: int = 512, max_connections_per_client: int = 64,
                 header_timeout: float = 10.0, idle_timeout: float = 120.0,
                 pressure_idle_timeout: float = 5.0, write_timeout: float = 30.0,
                 handshake_timeout: float = 10.0, max_handshakes: int = 128,
                 max_handshakes_per_client: int = 8, max_body: int = 1 << 20,
                 max_bcrypt_pending: int = 256, web_config_check: float = 1.0,
                 telemetry_path: str = "/metrics") -> None:
        self._web = WebConfigWatcher(web_config_file, web_config_check) \
            if web_config_file else None
        self._sockets = sockets or [_bind(host, port)]
        self.allow_writes = allow_writes
        # Where the exposition is served (--web.telemetry-path); /metrics is then a 404.
        self.telemetry_path = telemetry_path
        self._builtin_paths = (telemetry_path, "/healthz", "/readyz", "/")
        self.max_connections = max_connections
        self.max_connections_per_client = max_connections_per_client
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self.pressure_idle_timeout = pressure_idle_timeout
        self.write_timeout = write_timeout
        self.handshake_timeout = handshake_timeout
        self.max_handshakes = max_handshakes
        self.max_handshakes_per_client = max_handshakes_per_client
        self._handshakes: dict[int, _Conn] = {}  # TLS handshakes under way, by id()
        self._handshakes_per_peer: Counter[str] = Counter()
        self.handshakes_evicted = 0
        self._tls_known: OrderedDict[str, None] = OrderedDict()  # completed a handshake
        self._ended = 0  # connections ended since the freed memory was last released
        self.max_body = max_body
        self.max_bcrypt_pending = max_bcrypt_pending
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="http-worker")
        # The exporter-toolkit runs one bcrypt check at a time too.
        self._bcrypt_pool = ThreadPoolExecutor(1, thread_name_prefix="http-bcrypt")
        self._bcrypt_peers: set[str] = set()  # clients with a check queued or running
        self._bcrypt_queue: list[_Queued] = []  # a heap, best rank first
        self._bcrypt_running = False
        self._bcrypt_seq = 0
        self.bcrypt_displaced = 0  # queued checks dropped (429) for a better-ranked one
        # Client addresses whose last check succeeded, and how many failed (both LRU).
        self._auth_good: OrderedDict[str, None] = OrderedDict()
        self._auth_failures: OrderedDict[str, int] = OrderedDict()
        self._routes: dict[str, dict[str, Route]] = {}
        self._exposition: Exposition | None = None
        self._auth = _BasicAuth()
        self._bucket = _TokenBucket()
        self._conns: dict[int, _Conn] = {}  # by id(), on the loop thread only
        self._per_peer: Counter[str] = Counter()
        self._over_cap: Counter[str] = Counter()  # connections beyond the per-client cap
        self.refused_over_cap = 0  # requests answered 429 for the per-client cap
        self._inflight: Counter[str] = Counter()  # requests per limited route path
        self.evicted = 0  # connections closed to make room for newer ones
        self._bad_log = _LogBudget(BAD_REQUEST_LOG_PER_SECOND)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._date = (0, "")
        # (openmetrics, gzipped) of the last /metrics request: the variant worth building
        # on the poll thread, so scrapers are not the ones who wait for it.
        self.last_variant: tuple[bool, bool] = (False, False)
        # /readyz fails once the published poll is older than this (the daemon sets it
        # from the interval); None: never stale.
        self.stale_after: float | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop, once it runs (the loop's own code asks for it)."""
        if self._loop is None:
            raise RuntimeError("the server is not running")
        return self._loop

    @property
    def port(self) -> int:
        port: int = self._sockets[0].getsockname()[1]
        return port

    @property
    def failing_clients(self) -> int:
        """Client addresses whose last password check failed (as remembered)."""
        return len(self._auth_failures)

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def publish(self, exposition: Exposition) -> None:
        self._exposition = exposition

    def reload_web_config(self) -> None:
        """SIGHUP: re-read the web config now; a valid file may also turn protections off
        (a change noticed on disk alone never does; see WebConfigWatcher)."""
        if self._web:
            self._web.reload(explicit=True)

    def fresh(self) -> bool:
        """A poll is published and it is not older than ``stale_after``."""
        exposition = self._exposition
        return exposition is not None and (
            self.stale_after is None or exposition.age() <= self.stale_after)

    def add_route(self, method: str, path: str, handler: Handler, write: bool = False,
                  max_concurrent: int | None = None) -> None:
        """Serve ``handler`` for ``method path``. Write routes answer 403 unless the server
        was created with ``allow_writes``; every route is behind the same authentication.
        With ``max_concurrent``, requests beyond that many in progress on this path answer
        503 with Retry-After at once."""
        if path in self._builtin_paths:
            raise ValueError(f"{path} is built in")
        self._routes.setdefault(path, {})[method.upper()] = Route(
            method.upper(), path, handler, write, max_concurrent)

    def route(self, method: str, path: str) -> Route | None:
        return self._routes.get(path, {}).get(method.upper())

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        threads.start(self._thread)  # with the daemon's signals blocked
        self._ready.wait()

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._bcrypt_pool.shutdown(wait=False, cancel_futures=True)
        for s in self._sockets:
            s.close()

    # -- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_quiet_exceptions)
        self._stopping = asyncio.Event()
        connections: set[asyncio.Task[None]] = set()
        acceptors: list[asyncio.Task[None]] = []
        for sock in self._sockets:
            sock.setblocking(False)
            acceptors.append(asyncio.create_task(self._accept(sock, connections)))
        trimmer = asyncio.create_task(self._trim())
        self._ready.set()
        await self._stopping.wait()
        for task in (trimmer, *acceptors, *connections):
            task.cancel()
        await asyncio.gather(trimmer, *acceptors, *connections, return_exceptions=True)

    async def _trim(self) -> None:
        """Every ``TRIM_INTERVAL`` seconds, once ``TRIM_AFTER_CONNECTIONS`` connections have
        ended since the last time, return the memory they freed to the system."""
        while True:
            await asyncio.sleep(TRIM_INTERVAL)
            if self._ended >= TRIM_AFTER_CONNECTIONS:
                self._ended = 0
                release_freed_memory()

    async def _accept(self, sock: socket.socket, connections: set[asyncio.Task[None]]) -> None:
        failed_at = None  # monotonic time of the last failed accept, while failing
        while True:
            try:
                conn, addr = await self.loop.sock_accept(sock)
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
            state = _Conn(client_key(addr), conn)
            if not self._admit(state):
                conn.close()
                continue
            self._conns[id(state)] = state
            (self._over_cap if state.over_cap else self._per_peer)[state.peer] += 1
            state.task = asyncio.create_task(self._connection(state))
            connections.add(state.task)
            state.task.add_done_callback(connections.discard)
            state.task.add_done_callback(partial(_close_socket, conn))

    def _admit(self, new: _Conn) -> bool:
        """Make room for ``new`` under both caps; False when every connection that would
        have to go is answering a request.

        Beyond its client's cap, the longest-idle connection of that client with nothing on
        its way (silent since accepted, or between keep-alive requests, and no byte waiting
        in its socket) is closed for it; without one, ``new`` is marked ``over_cap``: its
        request is answered 429 with Retry-After. Closing connections whose request had
        arrived but was not read yet, or closing ``new`` when every other was answering,
        reset 200 parallel scrapers behind one address (a proxy, a NAT): up to 59 % of
        their requests were lost so."""
        if self._per_peer[new.peer] >= self.max_connections_per_client:
            quiet = [c for c in self._conns.values() if c.peer == new.peer
                     and not c.over_cap and not c.busy and not _bytes_waiting(c.sock)]
            if not self._evict(quiet):
                new.over_cap = True
        if len(self._conns) >= self.max_connections:
            # The longest-idle connection of the client that holds the most.
            return self._evict(list(self._conns.values()), key=lambda c: (
                -self._per_peer[c.peer] - self._over_cap[c.peer], c.since))
        return True

    def _evict(self, candidates: list[_Conn],
               key: Callable[[_Conn], Any] = lambda c: c.since) -> bool:
        idle = [c for c in candidates if not c.busy]
        if not idle:
            return False
        victim = min(idle, key=key)
        self._forget(victim)
        self.evicted += 1
        if victim.task is not None:  # its socket is closed when the task ends, started or not
            victim.task.cancel()
        return True

    def _forget(self, state: _Conn) -> None:
        if self._conns.pop(id(state), None) is not None:
            counts = self._over_cap if state.over_cap else self._per_peer
            counts[state.peer] -= 1
            if not counts[state.peer]:
                del counts[state.peer]

    async def _connection(self, state: _Conn) -> None:
        conn = state.sock
        writer = None
        closed = False
        raw: asyncio.BaseTransport | None = None
        try:
            web = self._web.current() if self._web else None
            ctx = web.ssl_context if web else None
            reader = asyncio.StreamReader(limit=16384)
            protocol = _TransportCatcher(reader)
            if ctx is None:
                raw, _ = await self.loop.connect_accepted_socket(lambda: protocol, conn)
            else:
                raw = await self._handshake(state, ctx, protocol)
            assert isinstance(protocol.transport, asyncio.WriteTransport)
            writer = asyncio.StreamWriter(protocol.transport, protocol, reader, self.loop)
            tls = web.tls if web else None
            if ctx and tls and not allowed_san(writer.get_extra_info("peercert"),
                                               tls.client_allowed_sans):
                return
            await self._requests(reader, writer, state)
            await self._close(writer)
            closed = True  # an abort() now would fail (CPython: the transport has no loop)
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError):
            pass
        except Exception as e:  # a bug; one line, the client is only disconnected
            log.error("connection_failed", client=state.peer, error=f"{type(e).__name__}: {e}")
        finally:
            self._forget(state)
            self._ended += 1
            if writer is not None and not closed:
                writer.transport.abort()
            elif writer is None and isinstance(raw, asyncio.Transport):
                raw.abort()
            elif writer is None:
                conn.close()
            # The task keeps the exception that ended it, whose traceback holds this frame,
            # which holds ``state``, which holds the task: a reference cycle that kept every
            # evicted connection's TLS state (buffers, OpenSSL's objects) until the next
            # full collection. Hundreds of megabytes of it, under a handshake flood.
            state.task = None

    async def _handshake(self, state: _Conn, ctx: ssl.SSLContext,
                         protocol: asyncio.StreamReaderProtocol) -> asyncio.BaseTransport:
        """The TLS handshake on ``state``'s socket, within ``handshake_timeout`` from accept;
        the raw (TCP) transport under the TLS one is returned, the TLS one is given to
        ``protocol``. No TLS state exists before the client sends its first byte, so a
        client that connects and stays silent costs what it costs on plain HTTP; and at most
        ``max_handshakes`` handshakes (``max_handshakes_per_client`` per client) are under
        way at once, a new one evicting the oldest of the client holding the most."""
        deadline = state.since + self.handshake_timeout
        await self._readable(state.sock, deadline - time.monotonic())
        self._take_handshake_slot(state)
        try:
            waiter = self.loop.create_future()
            # typeshed says int; asyncio takes any number of seconds
            timeout: Any = max(0.001, deadline - time.monotonic())
            tls = _SSLProtocol(self.loop, protocol, ctx, waiter, server_side=True,
                               ssl_handshake_timeout=timeout)
            raw, _ = await self.loop.connect_accepted_socket(lambda: tls, state.sock)
            try:
                await waiter
            except BaseException:
                raw.abort()
                raise
            self._tls_known[state.peer] = None
            self._tls_known.move_to_end(state.peer)
            if len(self._tls_known) > TLS_KNOWN_CLIENTS:
                self._tls_known.popitem(last=False)
            return raw
        finally:
            self._release_handshake_slot(state)

    async def _readable(self, sock: socket.socket, timeout: float) -> None:
        """Until ``sock`` has something to read (or its peer closed it); TimeoutError after
        ``timeout`` seconds."""
        ready = self.loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)
        self.loop.add_reader(sock, wake)
        try:
            await asyncio.wait_for(ready, max(0.0, timeout))
        finally:
            self.loop.remove_reader(sock)

    def _take_handshake_slot(self, state: _Conn) -> None:
        """Count ``state`` as handshaking, evicting a handshake to stay within the caps."""
        mine = [c for c in self._handshakes.values() if c.peer == state.peer]
        if len(mine) >= self.max_handshakes_per_client:
            victim = min(mine, key=lambda c: c.since)
        elif len(self._handshakes) >= self.max_handshakes:
            # Clients that completed a handshake before go last (a scraper, when a flood
            # starts, has been scraping), then the longest-waiting of whoever holds most.
            victim = min(self._handshakes.values(),
                         key=lambda c: (c.peer in self._tls_known,
                                        -self._handshakes_per_peer[c.peer], c.since))
        else:
            victim = None
        if victim is not None:
            self._release_handshake_slot(victim)
            self._forget(victim)
            self.handshakes_evicted += 1
            if victim.task is not None:
                victim.task.cancel()
        state.handshaking = True
        state.since = time.monotonic()
        self._handshakes[id(state)] = state
        self._handshakes_per_peer[state.peer] += 1

    def _release_handshake_slot(self, state: _Conn) -> None:
        if self._handshakes.pop(id(state), None) is not None:
            state.handshaking = False
            self._handshakes_per_peer[state.peer] -= 1
            if not self._handshakes_per_peer[state.peer]:
                del self._handshakes_per_peer[state.peer]

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        """End a connection whose last response was sent: what the transport (and, with TLS,
        the TCP transport under it) still buffers is written first, ``write_timeout`` at
        most, then the connection closes. abort() alone dropped it: a response to
        ``Connection: close`` (urllib, HTTP/1.0 clients) lost its last 16 KiB whenever the
        socket's send buffer was full, as on a slow link (the lab's scrape through QEMU's
        user network lost 29 KB of 140 KB)."""
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), self.write_timeout)

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        state: _Conn) -> None:
        timeout = self.header_timeout
        while True:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
            except asyncio.LimitOverrunError:
                await self._bad_request(writer, state, 431, "request head too large")
                return
            state.since = time.monotonic()
            try:
                request = parse_head(head)
                body = await self._body(reader, writer, request)
            except _BadRequest as e:
                await self._bad_request(writer, state, e.status, str(e))
                return
            if state.over_cap:
                self.refused_over_cap += 1
                await self._respond(writer, 429, TEXT, (
                    f"more than {self.max_connections_per_client} connections from "
                    f"{state.peer or 'this client'}; retry later\n").encode(),
                    [("Retry-After", "1")], close=True, head_only=request.method == "HEAD")
                return
            keep = request.version == "HTTP/1.1" and "close" not in \
                request.headers.get("connection", "").lower()
            state.busy = True  # only while the answer is worked out: a slow reader is evictable
            try:
                status, ctype, payload, extra = await self._dispatch(request, body, state.peer)
            finally:
                state.busy = False
            if isinstance(payload, _Stream):
                await self._stream(writer, status, ctype, payload, close=not keep,
                                   head_only=request.method == "HEAD")
            else:
                await self._respond(writer, status, ctype, payload, extra, close=not keep,
                                    head_only=request.method == "HEAD")
            if not keep:
                return
            state.since = time.monotonic()
            timeout = self.idle_timeout if len(self._conns) <= self.max_connections // 2 \
                else min(self.idle_timeout, self.pressure_idle_timeout)

    async def _bad_request(self, writer: asyncio.StreamWriter, state: _Conn, status: int,
                           reason: str) -> None:
        suppressed = self._bad_log.take()
        if suppressed is not None:
            log.info("bad_request", client=state.peer, status=status, reason=reason,
                     suppressed=suppressed)
        await self._respond(writer, status, TEXT, f"{reason}\n".encode(), close=True)

    async def _body(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    request: Request) -> bytes:
        """The request's body, after its framing is checked (then, as Go does, its Host).
        ``Expect: 100-continue`` gets its 100 before the body is read; another expectation
        is a 417."""
        if "transfer-encoding" in request.headers:
            raise _BadRequest(411, "send a Content-Length, chunked bodies are not accepted")
        length = request.headers.get("content-length")
        if length is not None and not CONTENT_LENGTH.fullmatch(length):
            if length.isascii() and length.isdigit():
                raise _BadRequest(413, f"body larger than {self.max_body} bytes")
            raise _BadRequest(400, "bad Content-Length")
        if length is not None and int(length) > self.max_body:
            raise _BadRequest(413, f"body larger than {self.max_body} bytes")
        if request.version == "HTTP/1.1" and "host" not in request.headers:
            raise _BadRequest(400, "missing required Host header")
        expect = request.headers.get("expect")
        if expect is not None and request.version == "HTTP/1.1":
            if expect.lower() != "100-continue":
                raise _BadRequest(417, f"unsupported Expect: {expect[:40]}")
            if length is not None and int(length) > 0:
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if length is None:
            return b""
        return await asyncio.wait_for(reader.readexactly(int(length)), self.header_timeout)

    def _call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """``callback(*args)`` on the loop, from any thread; nothing once it is closed."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the server stopped
            pass

    async def _authenticate(self, users: Mapping[str, bytes], authorization: str | None,
                            peer: str) -> bool | None:
        """Whether the credentials are good; None (a 429) when this client already has a
        check queued, or when ``max_bcrypt_pending`` are queued and none ranks below it."""
        answer = self._auth.lookup(users, authorization)
        if isinstance(answer, bool):
            return answer
        if peer in self._bcrypt_peers:
            return None
        self._bcrypt_seq += 1
        entry: _Queued = (self._bcrypt_rank(peer), self._bcrypt_seq, peer, answer,
                          self.loop.create_future())
        if len(self._bcrypt_queue) >= self.max_bcrypt_pending:
            worst = max(self._bcrypt_queue)
            if worst[:2] < entry[:2]:
                return None
            # The newcomer ranks above the last in line, who is told to retry instead.
            self._bcrypt_queue.remove(worst)
            heapq.heapify(self._bcrypt_queue)
            self._bcrypt_peers.discard(worst[2])
            worst[4].set_result(None)
            self.bcrypt_displaced += 1
        heapq.heappush(self._bcrypt_queue, entry)
        self._bcrypt_peers.add(peer)
        self._bcrypt_next()
        return await asyncio.shield(entry[4])  # decided even if this client goes away

    def _bcrypt_rank(self, peer: str) -> tuple[int, int]:
        """Where a check from ``peer`` queues: addresses that authenticated before first,
        then by how many of their checks failed (a flooding address soon has many, a new
        scraper none), then first come first served."""
        return (0 if peer in self._auth_good else 1,
                min(self._auth_failures.get(peer, 0), 1 << 20))

    def _bcrypt_next(self) -> None:
        """Start the best-ranked queued check when the bcrypt thread is free."""
        if self._bcrypt_running or not self._bcrypt_queue:
            return
        _, _, peer, verify, decided = heapq.heappop(self._bcrypt_queue)
        self._bcrypt_running = True
        check = self._bcrypt_pool.submit(verify)
        check.add_done_callback(
            lambda _: self._call_soon(self._bcrypt_done, peer, check, decided))

    def _bcrypt_done(self, peer: str, check: Future[bool],
                     decided: asyncio.Future[bool | None]) -> None:
        self._bcrypt_running = False
        self._bcrypt_peers.discard(peer)
        ok = not check.cancelled() and check.exception() is None and check.result()
        if ok:
            self._auth_failures.pop(peer, None)
            self._auth_good[peer] = None
            self._auth_good.move_to_end(peer)
            if len(self._auth_good) > AUTH_PEERS_REMEMBERED:
                self._auth_good.popitem(last=False)
        else:
            self._auth_failures[peer] = self._auth_failures.get(peer, 0) + 1
            self._auth_failures.move_to_end(peer)
            if len(self._auth_failures) > AUTH_PEERS_REMEMBERED:
                self._auth_failures.popitem(last=False)
        if not decided.done():
            decided.set_result(ok)
        self._bcrypt_next()

    async def _dispatch(self, request: Request, body: bytes,
                        peer: str = "") -> tuple[int, str, bytes | _Stream, _Headers]:
        web = self._web.current() if self._web else None
        # The probes are outside the limit, unlike exporter-toolkit's (which limits every
        # path): a liveness probe answered 429 during a flood would restart the daemon.
        if web and web.rate_limit and request.path not in UNAUTHENTICATED \
                and not self._bucket.allow(web.rate_limit):
            return 429, TEXT, b"rate limit exceeded\n", []
        if web and web.users and request.path not in UNAUTHENTICATED:
            ok = await self._authenticate(web.users, request.headers.get("authorization"), peer)
            if ok is None:
                return 429, TEXT, b"too many password checks in progress\n", [
                    ("Retry-After", "1")]
            if not ok:
                return 401, TEXT, b"unauthorized\n", [("WWW-Authenticate",
                                                       'Basic realm="nicwatch"')]
        if request.path in self._builtin_paths:
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
        limit = route.max_concurrent
        if limit is not None and self._inflight[route.path] >= limit:
            return 503, TEXT, f"at most {limit} requests to {route.path} at a time; " \
                "retry later\n".encode(), [("Retry-After", "1")]
        self._inflight[route.path] += 1
        streaming = False
        try:
            status, ctype, answer = await self.loop.run_in_executor(
                self._pool, route.handler, request.query, body)
            payload: bytes | _Stream
            if isinstance(answer, bytes):
                payload = answer
            else:  # counted in flight until it is sent
                payload, streaming = _Stream(answer, route.path, self._inflight), True
        except Exception as e:  # a bug: one line; the traceback only at debug level
            _handler_failed(request.path, e)
            return 500, TEXT, b"internal error\n", []
        finally:
            if not streaming:
                self._inflight[route.path] -= 1
        return status, ctype, payload, []

    async def _builtin(self, request: Request) -> tuple[int, str, bytes, _Headers]:
        exposition = self._exposition
        if request.path == self.telemetry_path:
            if exposition is None:
                return 503, TEXT, b"no poll completed yet\n", []
            om = wants_openmetrics(request.headers.get("accept"))
            gz = wants_gzip(request.headers.get("accept-encoding"))
            self.last_variant = (om, gz)
            cached = exposition.cached(om, gz)
            body = cached if cached is not None else await self.loop.run_in_executor(
                self._pool, exposition.get, om, gz)
            extra = [("Vary", "Accept, Accept-Encoding")]
            if gz:
                extra.append(("Content-Encoding", "gzip"))
            return 200, OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE, body, extra
        if request.path == "/healthz":
            return 200, TEXT, b"ok\n", []
        if request.path == "/readyz":
            if exposition is None:
                return 503, TEXT, b"starting\n", []
            if not self.fresh():
                return 503, TEXT, (f"stale: last poll completed {exposition.age():.1f} s ago "
                                   f"(limit {self.stale_after:g} s)\n").encode(), []
            return 200, TEXT, b"ready\n", []
        return 200, "text/html; charset=utf-8", LANDING.format(
            version=__version__, telemetry=html.escape(self.telemetry_path)).encode(), []

    def _http_date(self) -> str:
        now = int(time.time())
        if self._date[0] != now:
            self._date = (now, formatdate(now, usegmt=True))
        return self._date[1]

    def _head(self, status: int, headers: _Headers, close: bool) -> bytes:
        web: WebConfig | None = self._web.current() if self._web else None
        headers = [*headers, ("Date", self._http_date()), *(web.headers if web else ())]
        if close:
            headers.append(("Connection", "close"))
        return (f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")

    async def _respond(self, writer: asyncio.StreamWriter, status: int, ctype: str,
                       body: bytes, extra: _Headers | None = None, close: bool = False,
                       head_only: bool = False) -> None:
        head = self._head(status, [("Content-Type", ctype), ("Content-Length", str(len(body))),
                                   *(extra or ())], close)
        writer.write(head if head_only else head + body)
        await asyncio.wait_for(writer.drain(), self.write_timeout)

    async def _stream(self, writer: asyncio.StreamWriter, status: int, ctype: str,
                      stream: _Stream, close: bool, head_only: bool) -> None:
        """A chunked response, one piece at a time: the next is produced (on the pool)
        only once the client has taken the last. A failure halfway aborts the connection,
        so the client sees a truncated response, never a complete-looking one."""
        try:
            writer.write(self._head(status, [("Content-Type", ctype),
                                             ("Transfer-Encoding", "chunked")], close))
            if not head_only:
                while (piece := await self.loop.run_in_executor(self._pool, stream.next)):
                    writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    await asyncio.wait_for(writer.drain(), self.write_timeout)
                writer.write(b"0\r\n\r\n")
            await asyncio.wait_for(writer.drain(), self.write_timeout)
        except _StreamFailed:
            raise ConnectionAbortedError("response stream failed") from None
        finally:
            stream.close()


class _StreamFailed(Exception):
    pass


class _Stream:
    """A handler's streamed body; counts as a request in flight on ``path`` until closed."""

    def __init__(self, pieces: Iterator[bytes], path: str, inflight: Counter[str]) -> None:
        self._pieces = iter(pieces)
        self._path = path
        self._inflight = inflight
        self._open = True

    def next(self) -> bytes | None:
        """The next non-empty piece, None at the end (runs on the worker pool)."""
        try:
            for piece in self._pieces:
                if piece:
                    return piece
            return None
        except Exception as e:
            _handler_failed(self._path, e)
            raise _StreamFailed from None

    def close(self) -> None:
        if self._open:
            self._open = False
            self._inflight[self._path] -= 1
            try:
                getattr(self._pieces, "close", lambda: None)()
            except ValueError:  # still running on the pool (the connection was cancelled)
                pass


def _handler_failed(path: str, e: Exception) -> None:
    """A bug in an API handler: one line; the traceback only at debug level."""
    log.error("handler_failed", path=path, error=f"{type(e).__name__}: {e}")
    log.debug("handler_failed", path=path, exc_info=e)


def _libc_malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


_MALLOC_TRIM = _libc_malloc_trim()


def release_freed_memory() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim; no-op without).

    A TLS connection's OpenSSL state is many small allocations; once a flood of them is
    freed, glibc keeps the pages for reuse and RSS stays at the flood's peak (62 MB after
    one that peaked there, 42 MB once trimmed; trimming took 1.4 ms)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _bytes_waiting(sock: socket.socket) -> bool:
    """Whether the client sent something the server has not read yet (an end of stream or
    a closed socket is nothing)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # EAGAIN: nothing; EBADF, ECONNRESET: gone
        return False


def _close_socket(sock: socket.socket, _task: object) -> None:
    sock.close()


def _quiet_exceptions(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Client-side failures (resets, failed handshakes) are routine on a network endpoint."""
    exc = context.get("exception")
    if isinstance(exc, (OSError, ssl.SSLError, TimeoutError)):
        return
    log.error("loop_error", message=context.get("message"),
              error=f"{type(exc).__name__}: {exc}" if exc else None)

