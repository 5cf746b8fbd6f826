"""Consumers of each poll: checks (expectations), identity, history, softirq load, incidents.

Every consumer implements :class:`Consumer`: after each poll it observes the result and the
tracker's view of it (rates, resets), and the exporter renders the families it contributes;
it may serve HTTP API routes and has a close step when the daemon stops.
``registry.CONSUMERS`` is the one list the daemon opens (``open(config, host, services)``)
and calls in order; adding a consumer is one module here and one line there.

What a consumer needs besides the poll comes through :class:`Services`: the flight recorder
(the one history of recent polls, with its one memory cap) and the state directory. A
consumer that provides one sets it in its ``open``; the registry opens providers first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # annotations only (config imports consumers, so not config, not history)
    from nicwatch.collect import PollResult
    from nicwatch.consumers.checks.consumer import ExpectationChecks
    from nicwatch.consumers.queue_spread import QueueSpread
    from nicwatch.consumers.softirq import SoftirqLoad
    from nicwatch.model import ExtraFamily
    from nicwatch.snapshot.files import Poll, Snapshot
    from nicwatch.tracker import TrackedSample

# The API routes that read files or the history: at most this many requests at once each,
# the rest answered 503 with Retry-After (a history download streams a poll at a time).
API_MAX_CONCURRENT = 2

# An API handler: (query, body) -> (status, content type, body or an iterator of pieces)
Handler = Callable[[Mapping[str, Any], bytes], tuple[int, str, Any]]


@dataclass(frozen=True, slots=True)
class ApiRoute:
    """An HTTP route a consumer serves, behind the server's authentication. With
    ``max_concurrent``, requests beyond that many in progress answer 503 at once."""

    method: str
    path: str
    handler: Handler
    max_concurrent: int | None = None


class History(Protocol):
    """The flight recorder as its users see it (consumers.history.Recorder)."""

    def last_time(self) -> tuple[float, float] | None:
        """Wall-clock and monotonic time of the newest poll recorded."""

    def records(self, wall: float | None, raw_stats: bool, until: float | None = None,
                devices: frozenset[str] | None = None
                ) -> tuple[Snapshot, Iterator[Poll]] | None:
        """The polls from ``wall`` to ``until`` of ``devices``, unpacked one at a time."""

    def span(self) -> tuple[float, float] | None:
        """Wall-clock times of the oldest and newest poll held."""


@dataclass(slots=True)
class Services:
    """What consumers share, set by the consumer that provides it when it opens (the
    registry opens providers before their users)."""

    history: History | None = None  # the flight recorder (consumers.history)
    state_directory: Path | None = None  # where state lives; None: nowhere (identity)
    softirq: SoftirqLoad | None = None  # per-CPU softirq shares of the last poll
    receive_path: QueueSpread | None = None  # each interface's last receive-path window
    checks: ExpectationChecks | None = None  # the expectations evaluated on the last poll


class Consumer(Protocol):
    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        """One poll's samples (and host-wide reads), with the tracker's view of them."""

    def families(self) -> Sequence[ExtraFamily]:
        """The metric families this consumer exports for the last poll observed."""

    def reconfigure(self, config: Any) -> None:
        """A reloaded configuration (SIGHUP), already validated whole."""

    def routes(self) -> Sequence[ApiRoute]:
        """HTTP API routes the consumer serves (none by default)."""

    def close(self, timeout: float) -> None:
        """The daemon is stopping: finish what must not be lost within ``timeout`` s."""


class BaseConsumer:
    """Defaults of the contract for a consumer that serves no route, exports nothing
    and has nothing to finish."""

    def families(self) -> Sequence[ExtraFamily]:
        return ()

    def reconfigure(self, config: Any) -> None:
        return None

    def routes(self) -> Sequence[ApiRoute]:
        return ()

    def close(self, timeout: float) -> None:
        return None
