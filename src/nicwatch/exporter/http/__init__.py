"""The HTTP endpoint: serves the exposition rendered by the last poll, never polls itself.

One asyncio loop on its own thread owns every connection, so an idle or slow client costs
a little memory, never a thread: 100 idle connections and a client trickling its headers one
byte at a time do not delay anybody else's scrape. Each connection has deadlines (the whole
request head within ``header_timeout``, the next keep-alive request within
``idle_timeout``, a response drained within ``write_timeout``), and open connections are
capped in total and per client address. A connection beyond either cap takes the place
of the longest-idle connection (none whose answer is being worked out, none whose request
has arrived unread) of the client holding the most, so a flood of idle connections costs the
flooder its own oldest ones, never a scraper its turn. Under the per-client cap a silent
connection is not closed but moved over the cap (its request, if it was on its way, gets 429
with Retry-After; still silent a second later, it is closed); when its own client has none to
give, the new connection's request gets the 429, never a reset. Over
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

from nicwatch.exporter.http.connections import client_key
from nicwatch.exporter.http.exposition import (
    GZIP_LEVEL,
    Exposition,
    wants_gzip,
    wants_openmetrics,
)
from nicwatch.exporter.http.request import Handler, Request, Route, _BadRequest, parse_head
from nicwatch.exporter.http.server import MetricsServer, release_freed_memory, systemd_sockets

__all__ = [
    "GZIP_LEVEL", "Exposition", "Handler", "MetricsServer", "Request", "Route", "_BadRequest",
    "client_key", "parse_head", "release_freed_memory", "systemd_sockets", "wants_gzip",
    "wants_openmetrics",
]
