"""The netdev generic netlink family: queues, NAPI instances and per-queue statistics.

Layouts from ``Documentation/netlink/specs/netdev.yaml`` (``include/uapi/linux/netdev.h``):

* ``queue-get`` (6.8+) dump: one reply per queue of every interface that is up
  (netdev_nl_queue_dump_one skips the others): ``id`` (1), ``ifindex`` (2), ``type`` (3:
  0 rx, 1 tx), ``napi-id`` (4) where the driver linked the queue to a NAPI instance;
* ``napi-get`` (6.8+) dump: one reply per NAPI instance: ``ifindex`` (1), ``id`` (2),
  ``irq`` (3) where the driver set it, ``pid`` (4) in threaded mode;
* ``qstats-get`` (6.9+) dump: one reply per interface whose driver has stat ops (device
  scope: ``ifindex`` and the statistics), or, with ``scope`` (4) = 1 (queue), one per queue
  with ``queue-type`` (2) and ``queue-id`` (3); statistics from attribute 8 on
  (:data:`nicwatch.model.QSTATS`), each a ``uint`` (4 or 8 bytes).

Kernel 6.18 sends these dump replies without NLM_F_MULTI (genlmsg_iput()), so they are
read up to NLMSG_DONE (netlink.split_replies, ``dump``). A command the kernel does not know
answers EOPNOTSUPP: it is remembered and never asked again.

The socket sees its own network namespace; replies are matched to the polled interfaces by
ifindex, and an ifindex is taken to be the interface's only when that namespace gives it
the same name (a fixture tree's interfaces are not the kernel's).
"""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Protocol

import structlog

from nicwatch.model import QSTATS, Napi, NetdevQueue, NetdevQueues, QueueStats, Reading
from nicwatch.sources import Poll, SourceOptions, errno_name
from nicwatch.sources.netlink import (
    NLM_F_DUMP,
    FamilyUnavailable,
    GenericNetlinkSocket,
    KernelError,
    ParseError,
    attribute_index,
    decode_uint,
    nlattr,
)

log = structlog.get_logger("nicwatch.sources.netdev_genl")

FAMILY = "netdev"
CMD_QUEUE_GET = 10
CMD_NAPI_GET = 11
CMD_QSTATS_GET = 12

A_QUEUE_ID, A_QUEUE_IFINDEX, A_QUEUE_TYPE, A_QUEUE_NAPI_ID = 1, 2, 3, 4
A_NAPI_IFINDEX, A_NAPI_ID, A_NAPI_IRQ, A_NAPI_PID = 1, 2, 3, 4
A_QSTATS_IFINDEX, A_QSTATS_QUEUE_TYPE, A_QSTATS_QUEUE_ID, A_QSTATS_SCOPE = 1, 2, 3, 4
QSTATS_SCOPE_QUEUE = 1
QUEUE_TYPES = {0: "rx", 1: "tx"}  # enum netdev_queue_type

_FIRST_STAT = min(QSTATS)


def _queue(reply: bytes) -> tuple[int, NetdevQueue] | None:
    index = attribute_index(reply, 0, len(reply))
    ifindex, kind, qid = (index.get(a) for a in (A_QUEUE_IFINDEX, A_QUEUE_TYPE, A_QUEUE_ID))
    if ifindex is None or kind is None or qid is None:
        return None
    name = QUEUE_TYPES.get(decode_uint(reply, *kind))
    if name is None:  # a queue type newer than this code
        return None
    napi = index.get(A_QUEUE_NAPI_ID)
    return decode_uint(reply, *ifindex), NetdevQueue(
        name, decode_uint(reply, *qid), None if napi is None else decode_uint(reply, *napi))


def _napi(reply: bytes) -> tuple[int, Napi] | None:
    index = attribute_index(reply, 0, len(reply))
    ifindex, nid = index.get(A_NAPI_IFINDEX), index.get(A_NAPI_ID)
    if ifindex is None or nid is None:
        return None
    irq, pid = index.get(A_NAPI_IRQ), index.get(A_NAPI_PID)
    return decode_uint(reply, *ifindex), Napi(
        decode_uint(reply, *nid), None if irq is None else decode_uint(reply, *irq),
        None if pid is None else decode_uint(reply, *pid))


def _stats(reply: bytes) -> tuple[int, int | None, int | None, dict[str, int]] | None:
    """(ifindex, queue type, queue id, statistics) of one qstats reply."""
    ifindex = kind = qid = None
    stats: dict[str, int] = {}
    index = attribute_index(reply, 0, len(reply))
    for attr, span in index.items():
        if attr >= _FIRST_STAT:
            name = QSTATS.get(attr)
            if name is not None:  # an attribute newer than this code is left out
                stats[name] = decode_uint(reply, *span)
        elif attr == A_QSTATS_IFINDEX:
            ifindex = decode_uint(reply, *span)
        elif attr == A_QSTATS_QUEUE_TYPE:
            kind = decode_uint(reply, *span)
        elif attr == A_QSTATS_QUEUE_ID:
            qid = decode_uint(reply, *span)
    return None if ifindex is None else (ifindex, kind, qid, stats)


@dataclass
class Dumps:
    """What one read of the family returned, by ifindex. ``queues`` / ``napis`` None: the
    command was not read (unsupported, or not due). ``failed``: command -> errno name of a
    dump that failed this time."""

    queues: dict[int, list[NetdevQueue]] | None = None
    napis: dict[int, list[Napi]] | None = None
    device: dict[int, dict[str, int]] = field(default_factory=dict)
    per_queue: dict[int, list[QueueStats]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


class NetdevGenl(GenericNetlinkSocket):
    """A socket of the ``netdev`` family; FamilyUnavailable on a kernel without it (< 6.3)."""

    family_name = FAMILY

    def __init__(self) -> None:
        super().__init__()
        self.unsupported: set[int] = set()  # commands that answered EOPNOTSUPP

    def interface_name(self, ifindex: int) -> str | None:
        """The name of ``ifindex`` in this socket's network namespace (None: no such)."""
        try:
            return socket.if_indextoname(ifindex)
        except OSError:
            return None

    def dump(self, cmd: int, attrs: bytes = b"") -> list[bytes] | None:
        """The replies of one dump; None when the kernel does not know the command."""
        if cmd in self.unsupported:
            return None
        try:
            return self.genl_request(cmd, NLM_F_DUMP, attrs)
        except KernelError as e:
            if e.errno != errno.EOPNOTSUPP:
                raise
            self.unsupported.add(cmd)
            log.debug("netdev_command_unsupported", command=cmd)
            return None

    def read(self, topology: bool) -> Dumps:
        """The qstats dumps (device and queue scope), and with ``topology`` the queue and
        NAPI dumps. A dump that fails is recorded in ``failed`` and the others still run."""
        out = Dumps()
        steps: list[tuple[str, Callable[[], None]]] = [
            ("qstats-get", lambda: self._read_qstats(out)),
        ]
        if topology:
            steps += [("queue-get", lambda: self._read_queues(out)),
                      ("napi-get", lambda: self._read_napis(out))]
        for what, step in steps:
            try:
                step()
            except (OSError, KernelError, ParseError) as e:
                out.failed[what] = ("parse" if isinstance(e, ParseError)
                                    else errno_name(e.errno))
        return out

    def _read_qstats(self, out: Dumps) -> None:
        for reply in self.dump(CMD_QSTATS_GET) or ():
            parsed = _stats(reply)
            if parsed is not None:
                out.device[parsed[0]] = parsed[3]
        scope = nlattr(A_QSTATS_SCOPE, QSTATS_SCOPE_QUEUE.to_bytes(4, "little"))
        for reply in self.dump(CMD_QSTATS_GET, scope) or ():
            parsed = _stats(reply)
            if parsed is None or parsed[1] is None or parsed[2] is None:
                continue
            kind = QUEUE_TYPES.get(parsed[1])
            if kind is not None:
                out.per_queue.setdefault(parsed[0], []).append(
                    QueueStats(kind, parsed[2], MappingProxyType(parsed[3])))

    def _read_queues(self, out: Dumps) -> None:
        replies = self.dump(CMD_QUEUE_GET)
        if replies is None:
            return
        out.queues = {}
        for reply in replies:
            parsed = _queue(reply)
            if parsed is not None:
                out.queues.setdefault(parsed[0], []).append(parsed[1])

    def _read_napis(self, out: Dumps) -> None:
        replies = self.dump(CMD_NAPI_GET)
        if replies is None:
            return
        out.napis = {}
        for reply in replies:
            parsed = _napi(reply)
            if parsed is not None:
                out.napis.setdefault(parsed[0], []).append(parsed[1])


class NetdevReader(Protocol):
    """What NetdevGenlSource reads through: a NetdevGenl, or a stand-in (the demo's)."""

    def read(self, topology: bool) -> Dumps: ...
    def interface_name(self, ifindex: int) -> str | None: ...
    def close(self) -> None: ...


class NetdevGenlSource:
    """The netdev family as a :class:`~nicwatch.sources.Source` (the ``queues`` part of each
    interface's Reading). qstats every poll; the queue and NAPI lists (which change only when
    a driver reconfigures its channels) every ``refresh`` seconds, or when an interface is new
    or its statistics name a queue the list lacks. A failed dump is one error of the source
    (device ""); a poll keeps the lists it last read."""

    name = "netdev_genl"
    fills: ClassVar[frozenset[str]] = frozenset({"queues"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, reader: NetdevReader, refresh: float = 0.0) -> None:
        self.reader = reader
        self.refresh = refresh
        self._names: dict[int, str | None] = {}  # ifindex -> its name in the socket's namespace
        self._topology_at: float | None = None
        self._queues: dict[int, list[NetdevQueue]] | None = None
        self._napis: dict[int, list[Napi]] | None = None
        self._known: frozenset[int] = frozenset()  # ifindexes of the last topology read

    @classmethod
    def open(cls, options: SourceOptions) -> NetdevGenlSource | None:
        if not options.receive_path:
            return None
        try:
            return cls(NetdevGenl(), options.rxpath_refresh)
        except (FamilyUnavailable, OSError) as e:
            log.debug("netdev_family_unavailable", error=str(e))
            return None

    def _mine(self, ifindex: int | None, name: str) -> bool:
        if ifindex is None:
            return False
        known = self._names.get(ifindex, False)
        if known is False or known != name:
            known = self._names[ifindex] = self.reader.interface_name(ifindex)
        return known == name

    def read(self, poll: Poll) -> None:
        now = time.monotonic()
        ifindexes = frozenset(nc.ifindex for nc in poll.interfaces if nc.ifindex is not None)
        due = (self._topology_at is None or now - self._topology_at >= self.refresh * 0.9
               or not ifindexes <= self._known)
        dumps = self.reader.read(due)
        if due and not {"queue-get", "napi-get"} & dumps.failed.keys():
            self._queues, self._napis = dumps.queues, dumps.napis
            self._topology_at, self._known = now, ifindexes
        elif not due and self._queues is not None and self._stale(dumps):
            dumps = self.reader.read(True)  # a queue the lists lack: reconfigured since
            if not {"queue-get", "napi-get"} & dumps.failed.keys():
                self._queues, self._napis = dumps.queues, dumps.napis
                self._topology_at, self._known = now, ifindexes
        for what, kind in sorted(dumps.failed.items()):
            poll.error("", self.name, kind, f"{what} dump failed")
        for ifindex in [i for i in self._names if i not in ifindexes]:
            del self._names[ifindex]
        for nc in poll.each():
            if not self._mine(nc.ifindex, nc.name):
                continue
            assert nc.ifindex is not None
            queues = None if self._queues is None else tuple(self._queues.get(nc.ifindex, ()))
            napis = None if self._napis is None else tuple(self._napis.get(nc.ifindex, ()))
            per_queue = tuple(dumps.per_queue.get(nc.ifindex, ()))
            device = dumps.device.get(nc.ifindex)
            if not queues and not napis and not per_queue and device is None:
                continue
            poll.put(nc.name, Reading.queues, NetdevQueues(
                queues, napis, per_queue, None if device is None else MappingProxyType(device)))

    def _stale(self, dumps: Dumps) -> bool:
        """Whether this poll's per-queue statistics name a queue the lists do not have."""
        queues = self._queues or {}
        for ifindex, stats in dumps.per_queue.items():
            have = {(q.kind, q.id) for q in queues.get(ifindex, ())}
            if have and any((s.kind, s.id) not in have for s in stats):
                return True
        return False

    def close(self) -> None:
        self.reader.close()
