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
    base unit (1e-6 for microseconds, 0.125 for bits -> bytes). ``evidence`` names the
    kernel source (file, function or table, kernel version) or documentation that says what
    the raw counter counts and in which unit; docs/metrics.md prints it next to the row.
    """

    pattern: str
    metric: str
    labels: Labels = ()
    width: int = 64
    scale: float = 1.0
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class QueueStat:
    """A per-queue raw name: ``pattern`` has a ``queue`` group; ``template`` formats the
    queue-less statistic name from the other named groups (``"rx_{name}"``)."""

    pattern: str
    template: str


@dataclass(frozen=True, slots=True)
class NetlinkFill:
    """What a driver puts into one of the kernel's standard ethtool-netlink statistics.

    ``key`` is the netlink statistic as nicwatch names it (``pause.rx_frames``,
    ``eth-phy.SymbolErrorDuringCarrier``); ``raw`` the driver's own `ethtool -S` names the
    driver fills it from (their sum); ``metric`` the canonical family the value belongs to,
    which must be the family the driver table maps those raw names to (a test checks it),
    or ``None`` when no canonical family has that meaning (the value is then not exported).
    ``evidence``: the kernel function and version that shows it.
    """

    key: str
    raw: tuple[str, ...]
    metric: str | None
    evidence: str
    labels: Labels = ()


@dataclass(frozen=True, slots=True)
class SameRegister:
    """Raw names of one driver that read the same hardware register. At most one of them may
    feed a canonical family at a time: when several are present in one statistic set, only
    the first listed that is present is mapped (the others stay raw)."""

    names: tuple[str, ...]
    evidence: str


@dataclass(frozen=True, slots=True)
class DriverTable:
    """Everything nicwatch knows about one driver's `ethtool -S` names.

    ``gauges``: raw names (patterns) that are not counters (levels, states, percentages:
    values that go down by nature), exported as the raw gauge family and never summed over
    queues; ``width32``: raw counters that are 32 bits wide in hardware; ``queues``: how
    per-queue names are recognised; ``netlink``: how the driver fills the kernel's standard
    statistics (overrides of the driver-independent mapping in ``standard.py``);
    ``same_register``: raw names reading one hardware register; ``notes``: a sentence for
    docs/metrics.md; ``source``: the driver file(s) the table was read from.
    """

    driver: str
    rules: tuple[Rule, ...]
    gauges: tuple[str, ...] = ()
    width32: tuple[str, ...] = ()
    queues: tuple[QueueStat, ...] = ()
    notes: str = ""
    netlink: tuple[NetlinkFill, ...] = ()
    same_register: tuple[SameRegister, ...] = ()
    source: str = ""
