"""Netlink framing shared by the netlink sources (ethtool generic netlink, rtnetlink links,
DCB): message and attribute headers, the request/dump exchange over a plain ``AF_NETLINK``
socket, and error replies. Layouts: ``include/uapi/linux/netlink.h`` (``nlmsghdr``,
``nlattr``, ``nlmsgerr``).

Replies are decoded with :mod:`struct` on their raw bytes, attribute payloads addressed as
``(start, end)`` offsets so nests are walked in place without copying: per poll this is a
few hundred microseconds where an object-per-attribute decoder spent milliseconds.

A family module builds its request body (a family header such as ``genlmsghdr``,
``ifinfomsg`` or ``dcbmsg``, then attributes) and reads each reply's payload after the
``nlmsghdr``; :class:`NetlinkSocket` does the rest. :class:`GenericNetlinkSocket` adds what
every generic netlink family (ethtool, devlink) shares: ``genlmsghdr`` and the family id
looked up by name from the controller (``include/uapi/linux/genetlink.h``).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator, Mapping
from typing import Self

from nicwatch.sources import errno_name

NETLINK_ROUTE = 0
NETLINK_GENERIC = 16  # not exported by Python's socket module
NLM_F_REQUEST = 0x1
NLM_F_MULTI = 0x2
NLM_F_DUMP = 0x300  # NLM_F_ROOT | NLM_F_MATCH
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLMSG_MIN_TYPE = 0x10  # types below are control messages (NOOP, ERROR, DONE, OVERRUN)
NLA_F_NESTED = 0x8000
NLA_TYPE_MASK = 0x3FFF  # ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER)

NLMSGHDR = struct.Struct("=IHHII")  # nlmsg_len, nlmsg_type, nlmsg_flags, nlmsg_seq, nlmsg_pid
NLA_HDR = struct.Struct("=HH")  # struct nlattr: nla_len, nla_type (host byte order)
_ERRNO = struct.Struct("=i")  # payload start of NLMSG_ERROR (struct nlmsgerr) and NLMSG_DONE
_UINTS = {size: struct.Struct(code) for size, code in ((1, "=B"), (2, "=H"), (4, "=I"),
                                                       (8, "=Q"))}

Span = tuple[int, int]
"""(start, end) offsets of an attribute's payload in the reply's bytes."""

# generic netlink (uapi genetlink.h)
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
GENLMSGHDR = struct.Struct("=BBH")  # struct genlmsghdr: cmd, version, reserved


class KernelError(Exception):
    """The kernel answered a request with an error (NLMSG_ERROR, or an error code in the
    NLMSG_DONE that ends a dump). ``errno`` is the positive errno number."""

    def __init__(self, errno: int) -> None:
        super().__init__(errno_name(errno))
        self.errno = errno


class ParseError(ValueError):
    """A reply whose bytes do not fit the netlink layout (an attribute or message running
    past its container, an integer of a width netlink does not use)."""


# --- attributes ----------------------------------------------------------------------------


def attributes(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """``(type, payload start, payload end)`` of each attribute in ``data[start:end]``, type
    without the NESTED / NET_BYTEORDER flags."""
    unpack = NLA_HDR.unpack_from
    while start < end:
        if end - start < NLA_HDR.size:
            raise ParseError(f"{end - start} trailing bytes after the last attribute")
        length, attr_type = unpack(data, start)
        if length < NLA_HDR.size or start + length > end:
            raise ParseError(f"attribute {attr_type & NLA_TYPE_MASK} of length {length} "
                             f"does not fit its {end - start} bytes")
        yield attr_type & NLA_TYPE_MASK, start + NLA_HDR.size, start + length
        start += (length + 3) & ~3


def attribute_index(data: bytes, start: int, end: int) -> dict[int, Span]:
    """Attribute type -> payload span, for nests whose attributes occur at most once."""
    return {attr_type: (s, e) for attr_type, s, e in attributes(data, start, end)}


def decode_uint(data: bytes, start: int, end: int) -> int:
    """An unsigned netlink integer in host order, by its width (NLA_U8 .. NLA_U64; NLA_UINT
    is 4 or 8 bytes)."""
    layout = _UINTS.get(end - start)
    if layout is None:
        raise ParseError(f"{end - start}-byte integer attribute")
    value: int = layout.unpack_from(data, start)[0]
    return value


def uint_attr(data: bytes, index: Mapping[int, Span], attr_type: int) -> int | None:
    span = index.get(attr_type)
    return None if span is None else decode_uint(data, *span)


def string_attr(data: bytes, span: Span) -> str:
    return data[span[0]:span[1]].rstrip(b"\0").decode("utf-8", "replace")


def nlattr(attr_type: int, payload: bytes = b"") -> bytes:
    """One attribute, padded to 4 bytes."""
    length = NLA_HDR.size + len(payload)
    return NLA_HDR.pack(length, attr_type) + payload + b"\0" * (-length % 4)


def message(msg_type: int, flags: int, seq: int, body: bytes) -> bytes:
    """nlmsghdr + body; the port id is left for the kernel to fill."""
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), msg_type, flags, seq, 0) + body


# --- replies -------------------------------------------------------------------------------


def split_replies(datagram: bytes, seq: int, family_header: int = 0,
                  strip: bool = False, dump: bool = False) -> tuple[list[bytes], bool]:
    """The payload (after the ``nlmsghdr``) of each reply to request ``seq`` in one received
    datagram, and whether the exchange ended in it. A reply must have room for a
    ``family_header``-byte family header (4 for ``genlmsghdr``, 16 for ``ifinfomsg``);
    with ``strip`` the payload starts after it, at the attributes.

    An exchange ends with NLMSG_DONE (a dump), with NLMSG_ERROR, or with a reply not flagged
    NLM_F_MULTI (a plain request). The replies to a ``dump`` request end only with
    NLMSG_DONE or an error: the kernel always closes a dump with NLMSG_DONE
    (netlink_dump_done), and not every family flags its dump replies NLM_F_MULTI (the netdev
    family's genlmsg_iput() puts no flags: kernel 6.18 sends its queue, NAPI and qstats
    dumps that way). Messages of other sequence numbers are left out: they are
    the rest of an earlier exchange that was abandoned. Raises :class:`KernelError` for an
    error reply or an error code in NLMSG_DONE (a dump that failed partway).
    """
    replies: list[bytes] = []
    hdr = NLMSGHDR.size
    skip = hdr + (family_header if strip else 0)
    for pos, length, msg_type, flags, msg_seq in _messages(datagram):
        if msg_seq == seq:
            if msg_type in (NLMSG_ERROR, NLMSG_DONE):
                code = _error_code(datagram, pos, length)
                if code:
                    raise KernelError(-code)
                return replies, True
            if msg_type >= NLMSG_MIN_TYPE:
                if length < hdr + family_header:
                    _no_family_header(length, family_header)
                replies.append(datagram[pos + skip:pos + length])
                if not flags & NLM_F_MULTI and not dump:
                    return replies, True
    return replies, False


def _messages(datagram: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """``(offset, length, type, flags, seq)`` of each netlink message of a datagram, in
    order; ParseError at the first one that does not fit (read only as far as asked)."""
    pos, size = 0, len(datagram)
    hdr = NLMSGHDR.size
    while pos < size:
        if size - pos < hdr:
            raise ParseError(f"{size - pos} trailing bytes after the last netlink message")
        length, msg_type, flags, seq, _pid = NLMSGHDR.unpack_from(datagram, pos)
        if length < hdr or pos + length > size:
            raise ParseError(f"netlink message of length {length} at offset {pos} does not "
                             f"fit the {size}-byte datagram")
        yield pos, length, msg_type, flags, seq
        pos += (length + 3) & ~3


def _error_code(datagram: bytes, pos: int, length: int) -> int:
    """The error code of an NLMSG_ERROR or NLMSG_DONE message (0: an ACK, or a bare DONE,
    which ends a dump cleanly)."""
    if length >= NLMSGHDR.size + _ERRNO.size:
        return int(_ERRNO.unpack_from(datagram, pos + NLMSGHDR.size)[0])
    return 0


def _no_family_header(length: int, family_header: int) -> None:
    raise ParseError(f"netlink message of length {length} has no room for "
                     f"its {family_header}-byte family header")


def split_batch(datagram: bytes, first: int, count: int, family_header: int, strip: bool,
                partial: dict[int, list[bytes]],
                results: dict[int, list[bytes] | KernelError]) -> None:
    """One received datagram of a batch of requests ``first .. first + count - 1``: each
    message's payload is added to ``partial[seq]``; an exchange that ends (a reply not
    flagged NLM_F_MULTI, NLMSG_DONE, NLMSG_ERROR) moves to ``results[seq]``, a
    :class:`KernelError` for an error code. Messages of other sequence numbers are left out,
    as in :func:`split_replies`."""
    for pos, length, msg_type, flags, seq in _messages(datagram):
        if first <= seq < first + count and seq not in results:
            if msg_type in (NLMSG_ERROR, NLMSG_DONE):
                code = _error_code(datagram, pos, length)
                got = partial.pop(seq, [])
                results[seq] = KernelError(-code) if code else got
            elif msg_type >= NLMSG_MIN_TYPE:
                if length < NLMSGHDR.size + family_header:
                    _no_family_header(length, family_header)
                partial.setdefault(seq, []).append(
                    datagram[pos + NLMSGHDR.size + (family_header if strip else 0):
                             pos + length])
                if not flags & NLM_F_MULTI:
                    results[seq] = partial.pop(seq)


# --- the socket ----------------------------------------------------------------------------


class NetlinkSocket:
    """A plain netlink socket of one protocol, reused across polls. Sees the interfaces of
    the network namespace it was created in. Not thread-safe."""

    family_header = 0  # bytes of the family header every reply carries
    strip_family_header = False  # replies start at their attributes

    def __init__(self, protocol: int) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                                   protocol)
        self._buf = bytearray(1 << 16)
        self._seq = 0
        try:
            self._sock.bind((0, 0))
        except BaseException:
            self._sock.close()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def request(self, msg_type: int, flags: int, body: bytes) -> list[bytes]:
        """Send one request (``NLM_F_REQUEST`` is added) and return the payload of every
        reply; raises :class:`KernelError`, :class:`ParseError` or OSError."""
        self._seq += 1
        return self._exchange(message(msg_type, NLM_F_REQUEST | flags, self._seq, body),
                              self._seq)

    def _exchange(self, data: bytes, seq: int) -> list[bytes]:
        """Send a request and receive until its exchange ends.

        The kernel queues the first reply datagram while handling the send, and the next
        datagram of a dump while handling the recv that consumed the previous one, so a recv
        never waits for a reply still on its way. A datagram is never cut: its size is
        peeked first and the buffer grown to fit (the kernel keeps dump datagrams under
        32 KiB unless a single message needs more).
        """
        self._sock.send(data)
        # A dump (the request's NLM_F_DUMP bits, in the nlmsghdr's flags) ends at NLMSG_DONE.
        dump = NLMSGHDR.unpack_from(data)[2] & NLM_F_DUMP == NLM_F_DUMP
        replies: list[bytes] = []
        done = False
        while not done:
            size = self._sock.recv_into(self._buf, 1, socket.MSG_PEEK | socket.MSG_TRUNC)
            if size > len(self._buf):
                self._buf = bytearray(size)
            size = self._sock.recv_into(self._buf)
            datagram_replies, done = split_replies(bytes(memoryview(self._buf)[:size]), seq,
                                                   self.family_header,
                                                   self.strip_family_header, dump)
            replies.extend(datagram_replies)
        return replies

    def requests(self, requests: list[tuple[int, bytes]]) -> list[list[bytes] | KernelError]:
        """Send several plain (not dump) requests, ``(message type, body)`` each, in one
        datagram (the kernel handles them in order and queues each reply or error) and
        return, per request, the payloads of its replies or the KernelError it was answered
        with: one failing request does not fail the others. Dumps cannot be batched (the
        kernel answers a second dump EBUSY while the first runs). Raises
        :class:`ParseError` or OSError for the exchange as a whole."""
        first = self._seq + 1
        self._seq += len(requests)
        data = b"".join(message(msg_type, NLM_F_REQUEST, first + i, body)
                        for i, (msg_type, body) in enumerate(requests))
        results = self._exchange_batch(data, first, len(requests))
        return [results[first + i] for i in range(len(requests))]

    def _exchange_batch(self, data: bytes, first: int,
                        count: int) -> dict[int, list[bytes] | KernelError]:
        """Send a datagram of ``count`` requests numbered from ``first``; receive until each
        has its answer (see _exchange for the receive loop)."""
        self._sock.send(data)
        results: dict[int, list[bytes] | KernelError] = {}
        partial: dict[int, list[bytes]] = {}
        while len(results) < count:
            size = self._sock.recv_into(self._buf, 1, socket.MSG_PEEK | socket.MSG_TRUNC)
            if size > len(self._buf):
                self._buf = bytearray(size)
            size = self._sock.recv_into(self._buf)
            split_batch(bytes(memoryview(self._buf)[:size]), first, count,
                        self.family_header, self.strip_family_header, partial, results)
        return results


class FamilyUnavailable(RuntimeError):
    """This kernel has no generic netlink family of the name asked for."""


def genl_message(family: int, flags: int, seq: int, cmd: int, attrs: bytes,
                 version: int = 1) -> bytes:
    """nlmsghdr + genlmsghdr + attributes; the port id is left for the kernel to fill."""
    return message(family, flags, seq, GENLMSGHDR.pack(cmd, version, 0) + attrs)


class GenericNetlinkSocket(NetlinkSocket):
    """A generic netlink socket bound to the family ``name`` (by default the class's
    ``family_name``), whose id the controller is asked for once, at open; replies start at
    their attributes. Raises ``unavailable`` (:class:`FamilyUnavailable` or the subclass's
    own kind of it; the socket closed) when the kernel has no such family."""

    family_header = GENLMSGHDR.size
    strip_family_header = True
    family_name = ""  # a subclass for one family names it here
    unavailable: type[FamilyUnavailable] = FamilyUnavailable

    def __init__(self, name: str | None = None) -> None:
        super().__init__(NETLINK_GENERIC)
        try:
            self._family = self._resolve_family(name or self.family_name)
        except FamilyUnavailable as e:
            self._sock.close()
            raise self.unavailable(str(e)) from None
        except BaseException:
            self._sock.close()
            raise

    def genl_request(self, cmd: int, flags: int, attrs: bytes, version: int = 1) -> list[bytes]:
        """One request of this family (``NLM_F_REQUEST`` is added); the attributes of every
        reply. Raises :class:`KernelError`, :class:`ParseError` or OSError."""
        return self.request(self._family, flags, GENLMSGHDR.pack(cmd, version, 0) + attrs)

    def _resolve_family(self, name: str) -> int:
        self._seq += 1
        attrs = nlattr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0")
        try:
            (reply,) = self._exchange(genl_message(GENL_ID_CTRL, NLM_F_REQUEST, self._seq,
                                                   CTRL_CMD_GETFAMILY, attrs), self._seq)
            family = uint_attr(reply, attribute_index(reply, 0, len(reply)), CTRL_ATTR_FAMILY_ID)
        except (KernelError, ValueError) as exc:  # ParseError, or not exactly one reply
            raise FamilyUnavailable(
                f"generic netlink family {name!r} not available: {exc}") from exc
        if family is None:
            raise FamilyUnavailable(f"generic netlink family {name!r}: no family id")
        return family
