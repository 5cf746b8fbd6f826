"""Consumers of each poll: checks (expectations), identity, history, softirq load.

Every consumer implements :class:`Consumer`: after each poll it observes the result, and the
exporter renders the families it contributes. ``registry.CONSUMERS`` is the one list the daemon
opens and calls in order; adding a consumer is one module here and one line there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.model import ExtraFamily


class Consumer(Protocol):
    def observe(self, result: PollResult) -> None:
        """One poll's samples (and host-wide reads), after the tracker saw them."""

    def families(self) -> Sequence[ExtraFamily]:
        """The metric families this consumer exports for the last poll observed."""

    def reconfigure(self, config: Config) -> None:
        """A reloaded configuration (SIGHUP)."""
