"""The vocabulary of driver tables: how a raw statistic name becomes a canonical series.

A table is data. Patterns are Python regular expressions matched in full against the
stripped raw name. Named groups become labels, except ``queue``, which is summed over.
"""

from __future__ import annotations

from dataclasses import dataclass

from nicwatch.model import Labels


@dataclass(frozen=True, slots=True)
class Rule:
    """Map raw names matching ``pattern`` to the canonical family ``metric``.

    ``labels`` are constant labels; ``width`` is the hardware counter width (32-bit
    counters are extended across wraps); ``scale`` converts the raw unit to the family's
    base unit (1e-6 for microseconds, 0.125 for bits -> bytes).
    """

    pattern: str
    metric: str
    labels: Labels = ()
    width: int = 64
    scale: float = 1.0


@dataclass(frozen=True, slots=True)
class QueueStat:
    """A per-queue raw name: ``pattern`` has a ``queue`` group; ``template`` formats the
    queue-less statistic name from the other named groups (``"rx_{name}"``)."""

    pattern: str
    template: str


@dataclass(frozen=True, slots=True)
class DriverTable:
    """Everything nicwatch knows about one driver's `ethtool -S` names.

    ``gauges``: raw names (patterns) that are not counters; ``width32``: raw counters that
    are 32 bits wide in hardware; ``queues``: how per-queue names are recognised;
    ``notes``: a sentence for docs/metrics.md.
    """

    driver: str
    rules: tuple[Rule, ...]
    gauges: tuple[str, ...] = ()
    width32: tuple[str, ...] = ()
    queues: tuple[QueueStat, ...] = ()
    notes: str = ""
