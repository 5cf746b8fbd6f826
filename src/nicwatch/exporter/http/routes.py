"""What the server answers: the built-in paths and the consumers' API routes (streamed
bodies included), and the response heads."""

from __future__ import annotations

import asyncio
import html
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate

import structlog

from nicwatch import __version__
from nicwatch.exporter.http.auth import Authentication, _TokenBucket
from nicwatch.exporter.http.exposition import Exposition, wants_gzip, wants_openmetrics
from nicwatch.exporter.http.request import REASONS, TEXT, Handler, Request, Route, _Headers
from nicwatch.exporter.render import OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE
from nicwatch.exporter.webconfig import WebConfig, WebConfigWatcher

log = structlog.get_logger("nicwatch.http")

LANDING = """<!doctype html><html><head><title>nicwatch</title></head><body>
<h1>nicwatch {version}</h1><p>NIC telemetry: PAUSE/PFC, drops, FEC, rings, PCIe.</p>
<ul><li><a href="{telemetry}">{telemetry}</a></li><li><a href="/healthz">/healthz</a></li>
<li><a href="/readyz">/readyz</a></li></ul></body></html>
"""
BUILTIN = ("/metrics", "/healthz", "/readyz", "/")  # /metrics: the default telemetry path
UNAUTHENTICATED = frozenset({"/healthz", "/readyz"})


class Routes(Authentication):
    """What is answered: the built-in paths (the exposition, /healthz, /readyz, the landing
    page) and the consumers' API routes, behind the rate limit and authentication."""

    _web: WebConfigWatcher | None
    allow_writes: bool
    telemetry_path: str
    _builtin_paths: tuple[str, ...]
    write_timeout: float
    _pool: ThreadPoolExecutor
    _routes: dict[str, dict[str, Route]]
    _exposition: Exposition | None
    _bucket: _TokenBucket
    _inflight: Counter[str]
    _date: tuple[int, str]
    last_variant: tuple[bool, bool]
    stale_after: float | None

    def publish(self, exposition: Exposition) -> None:
        self._exposition = exposition

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
