"""MetricsServer: the layers (connections, routes, authentication) with their state, the
loop on its own thread, and the listening sockets (bound, or from systemd)."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from nicwatch.exporter.http.auth import _BasicAuth, _TokenBucket
from nicwatch.exporter.http.connections import BAD_REQUEST_LOG_PER_SECOND, Connections, _LogBudget
from nicwatch.exporter.webconfig import WebConfigWatcher
from nicwatch.sources import threads
from nicwatch.values import ConfigError

log = structlog.get_logger("nicwatch.http")
# After a burst of connections, freed memory is returned to the system (malloc_trim).
TRIM_INTERVAL = 5.0
TRIM_AFTER_CONNECTIONS = 64


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


class MetricsServer(Connections):
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
        self._handshakes = {}  # TLS handshakes under way, by id()
        self._handshakes_per_peer = Counter()
        self.handshakes_evicted = 0
        self._tls_known = OrderedDict()  # completed a handshake
        self._ended = 0  # connections ended since the freed memory was last released
        self.max_body = max_body
        self.max_bcrypt_pending = max_bcrypt_pending
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="http-worker")
        # The exporter-toolkit runs one bcrypt check at a time too.
        self._bcrypt_pool = ThreadPoolExecutor(1, thread_name_prefix="http-bcrypt")
        self._bcrypt_peers = set()  # clients with a check queued or running
        self._bcrypt_queue = []  # a heap, best rank first
        self._bcrypt_running = False
        self._bcrypt_seq = 0
        self.bcrypt_displaced = 0  # queued checks dropped (429) for a better-ranked one
        # Client addresses whose last check succeeded, and how many failed (both LRU).
        self._auth_good = OrderedDict()
        self._auth_failures = OrderedDict()
        self._routes = {}
        self._exposition = None
        self._auth = _BasicAuth()
        self._bucket = _TokenBucket()
        self._conns = {}  # by id(), on the loop thread only
        self._per_peer = Counter()
        self._over_cap = Counter()  # connections beyond the per-client cap
        self.refused_over_cap = 0  # requests answered 429 for the per-client cap
        self._inflight = Counter()  # requests per limited route path
        self.evicted = 0  # connections closed to make room for newer ones
        # silent connections moved over their client's cap for a newer one (429 if they speak)
        self.moved_over_cap = 0
        self._bad_log = _LogBudget(BAD_REQUEST_LOG_PER_SECOND)
        self._thread: threading.Thread | None = None
        self._loop = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._date = (0, "")
        # (openmetrics, gzipped) of the last /metrics request: the variant worth building
        # on the poll thread, so scrapers are not the ones who wait for it.
        self.last_variant = (False, False)
        # /readyz fails once the published poll is older than this (the daemon sets it
        # from the interval); None: never stale.
        self.stale_after = None

    @property
    def port(self) -> int:
        port: int = self._sockets[0].getsockname()[1]
        return port

    def reload_web_config(self) -> None:
        """SIGHUP: re-read the web config now; a valid file may also turn protections off
        (a change noticed on disk alone never does; see WebConfigWatcher)."""
        if self._web:
            self._web.reload(explicit=True)

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
        ended since the last time, return the memory they freed to the system; and at the
        next interval in which any ended after such a trim, once more: a burst's tail. (A trim
        that came while a flood's connections were closing left the rest, fewer than
        ``TRIM_AFTER_CONNECTIONS``, untrimmed until the next burst. Most of what a TLS flood
        held was not this but reference cycles: connections._drop_frames.)"""
        tail = False  # the last trim was a burst's: what ends after it is trimmed too
        while True:
            await asyncio.sleep(TRIM_INTERVAL)
            if self._ended >= TRIM_AFTER_CONNECTIONS or (tail and self._ended):
                tail = self._ended >= TRIM_AFTER_CONNECTIONS
                self._ended = 0
                release_freed_memory()


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


def _quiet_exceptions(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Client-side failures (resets, failed handshakes) are routine on a network endpoint."""
    exc = context.get("exception")
    if isinstance(exc, (OSError, ssl.SSLError, TimeoutError)):
        return
    log.error("loop_error", message=context.get("message"),
              error=f"{type(exc).__name__}: {exc}" if exc else None)
