"""HTTP/1.x requests as nicwatch reads them: the head parsed as strictly as Go's net/http
(a request nicwatch cannot parse is a 400 of its own), and a route."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           411: "Length Required", 413: "Content Too Large", 417: "Expectation Failed",
           429: "Too Many Requests",
           431: "Request Header Fields Too Large", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}
TEXT = "text/plain; charset=utf-8"
CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
METHOD = re.compile(r"[A-Z]{1,16}")
BARE_CR_OR_LF = re.compile(rb"\r(?!\n)|(?<!\r)\n")
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 5.6.2
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # all but HTAB (Go's httpguts)

# handler(query, body) -> (status, content type, body); query holds the last value of each
# parameter. A body that is an iterator of bytes is streamed (chunked), each piece produced
# on the worker pool as the client takes it.
_Headers = list[tuple[str, str]]
Handler = Callable[[dict[str, str], bytes], tuple[int, str, bytes | Iterator[bytes]]]


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
