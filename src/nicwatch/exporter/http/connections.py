"""Connection handling: admission under the caps, TLS handshakes without the
listening socket wrapped, one TLS record's read buffer, requests read under deadlines."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import ipaddress
import socket
import ssl
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import structlog

from nicwatch.exporter.http.request import CONTENT_LENGTH, TEXT, Request, _BadRequest, parse_head
from nicwatch.exporter.http.routes import Routes, _Stream
from nicwatch.exporter.webconfig import allowed_san

log = structlog.get_logger("nicwatch.http")

BAD_REQUEST_LOG_PER_SECOND = 10
# One TLS record (16 KiB of plaintext) plus its header and the largest AEAD overhead.
TLS_READ_BUFFER = 16 * 1024 + 256
# How long a silent connection moved over its client's cap waits for its request: a client
# sends it right after connecting, so one second covers a busy host's scheduling delays.
OVER_CAP_WAIT = 1.0
# Client addresses remembered as having completed a TLS handshake (their handshakes are the
# last evicted when too many are under way).
TLS_KNOWN_CLIENTS = 1024


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


def _drop_frames(e: BaseException) -> None:
    """Let go of the frames an expected failure's traceback holds (and those of the
    exceptions it was raised from or during). A failed TLS handshake's exception is also
    kept by the handshake's future, which the traceback's frames hold: a reference cycle
    per connection that kept its TLS state (OpenSSL's objects, the transports) until the
    next full collection, about 11 MB after a flood of stalled ClientHellos."""
    seen = 0
    cause: BaseException | None = e
    while cause is not None and seen < 16:
        cause.__traceback__ = None
        cause = cause.__context__ or cause.__cause__
        seen += 1


class _Conn:
    """One accepted connection, as the admission policy sees it."""

    __slots__ = ("answered", "busy", "handshaking", "heard", "over_cap", "peer", "since", "sock",
                 "task")

    def __init__(self, peer: str, sock: socket.socket) -> None:
        self.peer = peer
        self.sock = sock
        self.task: asyncio.Task[None] | None = None
        self.busy = False  # an answer is being worked out: never evicted
        self.handshaking = False  # holds one of the TLS handshake slots
        # beyond its client's cap: its request is answered 429 (not counted in that cap)
        self.over_cap = False
        self.heard = False  # a request head arrived on it
        self.answered = False  # a response was sent on it (it is between keep-alive requests)
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


class Connections(Routes):
    """Connection handling: admission under the caps (evicting the idle), TLS handshakes,
    reading requests with their deadlines, keep-alive."""

    max_connections: int
    max_connections_per_client: int
    header_timeout: float
    idle_timeout: float
    pressure_idle_timeout: float
    handshake_timeout: float
    max_handshakes: int
    max_handshakes_per_client: int
    _handshakes: dict[int, _Conn]
    _handshakes_per_peer: Counter[str]
    handshakes_evicted: int
    _tls_known: OrderedDict[str, None]
    _ended: int
    max_body: int
    _conns: dict[int, _Conn]
    _per_peer: Counter[str]
    _over_cap: Counter[str]
    refused_over_cap: int
    moved_over_cap: int
    evicted: int
    _bad_log: _LogBudget

    @property
    def open_connections(self) -> int:
        return len(self._conns)

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

        Beyond its client's cap, the longest-idle connection of that client with nothing
        waiting (not answering, no byte in its socket) makes room for it. One between
        keep-alive requests is closed, as an idle timeout would (clients retry on a fresh
        connection); one silent since accepted is moved over the cap instead: its request may
        be on its way, and when it comes it is answered 429 with Retry-After. Without either,
        ``new`` itself is over the cap. Over-cap connections count in the total cap only, and
        one moved there is closed if it is still silent ``OVER_CAP_WAIT`` later. Closing
        connections whose request had arrived unread, or had not arrived yet, or closing
        ``new`` when every other was answering, reset 200 parallel scrapers behind one
        address (a proxy, a NAT): up to 59 % of their requests were lost so."""
        if self._per_peer[new.peer] >= self.max_connections_per_client:
            quiet = [c for c in self._conns.values() if c.peer == new.peer
                     and not c.over_cap and not c.busy and not _bytes_waiting(c.sock)]
            if quiet:
                victim = min(quiet, key=lambda c: c.since)
                if victim.answered:
                    self._close_for_room(victim)
                else:
                    self._forget(victim)
                    victim.over_cap = True
                    self._conns[id(victim)] = victim
                    self._over_cap[victim.peer] += 1
                    self.moved_over_cap += 1
                    self.loop.call_later(OVER_CAP_WAIT, self._expire_over_cap, victim)
            else:
                new.over_cap = True
        if len(self._conns) >= self.max_connections:
            # The longest-idle connection of the client that holds the most; one whose request
            # sits unread in its socket only when no connection is plainly idle.
            return self._evict(list(self._conns.values()), key=lambda c: (
                -self._per_peer[c.peer] - self._over_cap[c.peer], c.since))
        return True

    def _evict(self, candidates: list[_Conn],
               key: Callable[[_Conn], Any] = lambda c: c.since) -> bool:
        """Close the first of ``candidates`` by ``key`` that is not answering, preferring one
        with nothing in its socket: a request that arrived between the accept and the server's
        first read was lost so (a scrape reset while three idle connections came in behind
        it). One with unread bytes still goes when nothing else can, so a client trickling a
        request head cannot pin a slot."""
        idle = [c for c in candidates if not c.busy]
        if not idle:
            return False
        idle.sort(key=key)  # peeked in order: usually the first is quiet, one syscall
        self._close_for_room(next((c for c in idle if not _bytes_waiting(c.sock)), idle[0]))
        return True

    def _expire_over_cap(self, state: _Conn) -> None:
        """Close a connection moved over its client's cap that stayed silent for
        ``OVER_CAP_WAIT``: so an address's silent connections are closed as fast as they come,
        and its flood costs what the cap allows."""
        if id(state) in self._conns and not (state.heard or state.busy or state.handshaking) \
                and not _bytes_waiting(state.sock):
            self._close_for_room(state)

    def _close_for_room(self, victim: _Conn) -> None:
        self._forget(victim)
        self.evicted += 1
        if victim.task is not None:  # its socket is closed when the task ends, started or not
            victim.task.cancel()

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
                asyncio.LimitOverrunError) as e:
            _drop_frames(e)
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
            state.heard = True
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
            state.answered = True
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


def _bytes_waiting(sock: socket.socket) -> bool:
    """Whether the client sent something the server has not read yet (an end of stream or
    a closed socket is nothing)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # EAGAIN: nothing; EBADF, ECONNRESET: gone
        return False


def _close_socket(sock: socket.socket, _task: object) -> None:
    sock.close()
