"""One poll's exposition as served: each (format, compression) variant built once on
demand, and the content negotiation that picks one."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable

from nicwatch.exporter.render import render_age

GZIP_LEVEL = 1


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
