"""One counter's change between two readings of an interface, by the tracker's own rule
(tracker.advance, on the same evidence: line rate, elapsed time, a 64-bit counter falling, a
changed statistic set, a replaced interface): the piece snapshot.diff and the diagnosis
windows share. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from nicwatch.metrics import (
    FAMILIES,
    FEC_UNCORRECTABLE_BLOCKS,
    PAUSE_STORM_EVENTS,
    RX_CRC_ERRORS,
    RX_DISCARDS,
    RX_OUT_OF_BUFFER_DROPS,
    RX_PAUSE_CTRL_FRAMES,
    RX_PAUSE_DURATION_SECONDS,
    RX_PAUSE_FRAMES,
    RX_PFC_FRAMES,
    RX_PFC_TC_FRAMES,
    TX_DISCARDS,
    TX_PAUSE_CTRL_FRAMES,
    TX_PAUSE_DURATION_SECONDS,
    TX_PAUSE_FRAMES,
    TX_PFC_FRAMES,
    TX_PFC_TC_FRAMES,
)
from nicwatch.model import CounterValue, Labels, scaled
from nicwatch.snapshot.records import InterfaceSnapshot
from nicwatch.tracker import (
    COUNTER_DECREASE,
    INTERFACE_REPLACED,
    LINE_RATE,
    STAT_SET_CHANGED,
    advance,
    max_rate,
    wrap_limit,
)

OK = "ok"
NEW = "new"  # only in B
GONE = "gone"  # only in A
SOURCE_CHANGED = "source_changed"  # a canonical family now comes from another source
SATURATED = "saturated"  # an IB PortCounters counter at its maximum: its increase is unknown

# Health families shown first, in this order, then the other health families, then the rest.
HEALTH_FIRST = (
    RX_PAUSE_FRAMES.name, TX_PAUSE_FRAMES.name,
    RX_PFC_FRAMES.name, TX_PFC_FRAMES.name,
    RX_PFC_TC_FRAMES.name, TX_PFC_TC_FRAMES.name,
    RX_PAUSE_CTRL_FRAMES.name, TX_PAUSE_CTRL_FRAMES.name,
    RX_PAUSE_DURATION_SECONDS.name, TX_PAUSE_DURATION_SECONDS.name,
    PAUSE_STORM_EVENTS.name,
    RX_OUT_OF_BUFFER_DROPS.name, RX_DISCARDS.name, TX_DISCARDS.name,
    RX_CRC_ERRORS.name, FEC_UNCORRECTABLE_BLOCKS.name,
)
_COUNTER_FAMILIES = [f for f in FAMILIES.values() if f.type == "counter"]
_RANK = {name: i for i, name in enumerate(dict.fromkeys((
    *HEALTH_FIRST, *(f.name for f in _COUNTER_FAMILIES if f.health),
    *(f.name for f in _COUNTER_FAMILIES))))}


@dataclass(frozen=True, slots=True)
class Row:
    """One counter's change. ``kind`` is ``"counter"`` for a canonical family, else the raw
    source (``ethtool``, ``netdev``, ...). ``delta`` and ``rate`` (per second, base units)
    are set only when ``status`` is ``ok``: never across a reset, a changed statistic set
    or a replaced interface."""

    kind: str
    name: str
    labels: tuple[tuple[str, str], ...]
    unit: str
    health: bool
    before: float | None
    after: float | None
    delta: float | None
    rate: float | None
    status: str


def _exact(raw: int, scale: float) -> float:
    """A counter in base units; an int when unscaled, as floats lose counts above 2**53."""
    return raw if scale == 1 else scaled(raw, scale)


def make_row(kind: str, name: str, labels: Labels, unit: str, health: bool, a: CounterValue | None,
             b: CounterValue | None, seconds: float, blocked: str | None,
             line_rate: float | None = None, reset_evidence: bool = False) -> Row:
    """One counter's row. A 32-bit counter that fell wrapped or was reset by the tracker's
    rule (tracker.advance): reset when ``reset_evidence`` (a 64-bit counter of the interface
    fell too), or when the wrap would need more than ``line_rate`` carries in ``seconds``;
    without a line rate, a fall from the upper half of the range is a wrap. A saturating
    counter (IB PortCounters) never wraps, and one at its maximum has no delta."""
    before = _exact(a.raw, a.scale) if a is not None else None
    after = _exact(b.raw, b.scale) if b is not None else None
    delta = None
    if a is None:
        status = NEW
    elif b is None:
        status = GONE
    elif blocked:
        status = blocked
    elif a.source != b.source:
        status = SOURCE_CHANGED
    elif b.saturates and b.raw >= a.raw and (a.saturated or b.saturated):
        status = SATURATED
    else:
        limit = None
        if b.width == 32 and not b.saturates and line_rate and seconds > 0:
            top = max_rate(unit, line_rate, dict(labels).get("stat"))
            limit = wrap_limit(top, seconds, b.scale)
        # a saturating counter never wraps: a fall is a reset, as for a 64-bit one
        extended = advance(a.raw, a.raw, b.raw, 64 if b.saturates else b.width, limit,
                           reset_evidence)
        status = OK if extended is not None else COUNTER_DECREASE
        if extended is not None:
            delta = _exact(extended - a.raw, b.scale)
    rate = delta / seconds if delta is not None and seconds > 0 else None
    return Row(kind, name, labels, unit, health, before, after, delta, rate, status)


def replaced(x: InterfaceSnapshot, y: InterfaceSnapshot) -> bool:
    """Whether ``y`` is another interface than ``x`` under the same name (a new ifindex or
    driver): no counter of it continues ``x``'s."""
    return (x.identity.ifindex, x.identity.driver) != (y.identity.ifindex, y.identity.driver)


def counter_rows(x: InterfaceSnapshot, y: InterfaceSnapshot,
                 ethtool_changed: bool = False) -> list[Row]:
    """The canonical counters' rows from ``x`` to ``y``, health families first;
    ``ethtool_changed``: the ethtool statistic set changed between them, so no ioctl
    counter has an increase."""
    seconds = y.monotonic - x.monotonic
    was_replaced = replaced(x, y)
    # The tracker's evidence: the line rate (the higher of the two, a renegotiation in
    # between) and whether a 64-bit counter of the interface fell.
    line_rate = max((r for r in (x.gauges.get(LINE_RATE), y.gauges.get(LINE_RATE)) if r),
                    default=None)
    wide_fell = any(a.width == 64 and a.source == b.source and b.raw < a.raw
                    for key, a in x.counters.items() if (b := y.counters.get(key)) is not None)
    rows = []
    for key in dict.fromkeys((*x.counters, *y.counters)):
        a, b = x.counters.get(key), y.counters.get(key)
        family = FAMILIES.get(key.metric)
        blocked = INTERFACE_REPLACED if was_replaced else (
            STAT_SET_CHANGED if ethtool_changed and b is not None and a is not None
            and b.source == "ethtool_ioctl" else None)
        rows.append(make_row("counter", key.metric, key.labels, family.unit if family else "",
                             bool(family and family.health), a, b, seconds, blocked,
                             line_rate, wide_fell))
    rows.sort(key=lambda r: (_RANK.get(r.name, len(_RANK)), r.name, r.labels))
    return rows
