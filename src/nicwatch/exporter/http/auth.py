"""Authentication: the bcrypt checks with their caches and their ranked queue, and the
rate limit's token bucket."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import heapq
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

import bcrypt

from nicwatch.exporter.http.core import ServerCore
from nicwatch.exporter.webconfig import RateLimit

# bcrypt uses the first 72 bytes of a password. Go's CompareHashAndPassword (and so the
# exporter-toolkit) ignores the rest; Python's bcrypt raises instead, so cut it first.
BCRYPT_MAX_PASSWORD = 72
# Client addresses remembered for the bcrypt queue's order (authenticated, failures).
AUTH_PEERS_REMEMBERED = 4096
# a queued bcrypt check: (rank, arrival, client, check, its outcome: None when displaced)
_Queued = tuple[tuple[int, int], int, str, Callable[[], bool], "asyncio.Future[bool | None]"]


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


class Authentication(ServerCore):
    """Who may ask: Basic credentials checked against the web config's bcrypt hashes, one
    check at a time on their own thread, queued by rank (see the package docstring)."""

    max_bcrypt_pending: int
    _bcrypt_pool: ThreadPoolExecutor
    _bcrypt_peers: set[str]
    _bcrypt_queue: list[_Queued]
    _bcrypt_running: bool
    _bcrypt_seq: int
    bcrypt_displaced: int
    _auth_good: OrderedDict[str, None]
    _auth_failures: OrderedDict[str, int]
    _auth: _BasicAuth

    @property
    def failing_clients(self) -> int:
        """Client addresses whose last password check failed (as remembered)."""
        return len(self._auth_failures)

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
