"""Apply rule tables to raw statistics.

Matching thousands of names against dozens of patterns is the expensive part, and names
change rarely, so a table is compiled once per distinct name list into a ``Plan``: a list
of (index, series) pairs. Each poll then only walks the plan over the new values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nicwatch.metrics import FAMILIES, QUEUE_COUNTER, RAW_COUNTER, RAW_GAUGE
from nicwatch.model import CounterValue, SeriesKey
from nicwatch.normalize.rules import DriverTable, QueueStat, Rule, gauge_by_name
from nicwatch.values.regex import compile_regex


@dataclass(frozen=True, slots=True)
class RawOptions:
    """Opt-in raw families. ``include``/``exclude`` are regexes on the queue-less stat name;
    ``per_queue`` lists queue-less stat names exported per queue."""

    enabled: bool = False
    include: str = ".*"
    exclude: str = ""
    per_queue: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entry:
    index: int
    key: SeriesKey
    width: int
    scale: float


@dataclass(frozen=True, slots=True)
class Plan:
    """``counters``/``gauges``: one entry per raw value mapped. ``groups`` is what a poll
    walks: one (key, indices, zero) per counter series, in the order the series first
    appear in ``counters``; the series' value is the sum of the values at ``indices``, and
    ``zero`` is its CounterValue of 0, shared by every poll (most error counters stay 0,
    and a value object costs more than the lookup)."""

    counters: tuple[Entry, ...]
    gauges: tuple[Entry, ...]
    source: str = ""
    groups: tuple[tuple[SeriesKey, tuple[int, ...], CounterValue], ...] = ()
    gauge_index: tuple[tuple[SeriesKey, int], ...] = ()


def _plan(counters: list[Entry], gauges: list[Entry], source: str) -> Plan:
    groups: dict[SeriesKey, tuple[list[int], Entry]] = {}
    for e in counters:
        groups.setdefault(e.key, ([], e))[0].append(e.index)
    return Plan(tuple(counters), tuple(gauges), source,
                tuple((key, tuple(indices), CounterValue(0, source, first.width, first.scale))
                      for key, (indices, first) in groups.items()),
                tuple((e.key, e.index) for e in gauges))


def sum_plan(source: str, members: Sequence[tuple[SeriesKey, int]]) -> Plan:
    """A plan whose series each sum the values at their indices (``members``: (series,
    index) pairs; a series' indices in the order given, the series in the order they first
    appear): per-queue sums taken from a raw name list once, applied every poll in one
    pass by :func:`apply_counters`."""
    return _plan([Entry(index, key, 64, 1.0) for key, index in members], [], source)


def _compile(patterns: Sequence[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=256)
def _compiled_rules(rules: tuple[Rule, ...]) -> tuple[tuple[re.Pattern[str], Rule], ...]:
    return tuple((re.compile(r.pattern), r) for r in rules)


def _match_rule(compiled: tuple[tuple[re.Pattern[str], Rule], ...],
                name: str) -> tuple[Rule, dict[str, str]] | None:
    for regex, rule in compiled:
        m = regex.fullmatch(name)
        if m:
            return rule, {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def _queue_name(queues: tuple[tuple[re.Pattern[str], QueueStat], ...],
                name: str) -> tuple[str, str] | None:
    for regex, q in queues:
        m = regex.fullmatch(name)
        if m:
            groups = m.groupdict()
            return groups.pop("queue"), q.template.format(**groups)
    return None


# A pure memo of a bounded key (docs/architecture.md, Caches).
@lru_cache(maxsize=256)
def compile_plan(source: str, rules: tuple[Rule, ...], names: tuple[str, ...],
                 table: DriverTable | None = None, raw: RawOptions = RawOptions()) -> Plan:
    """Compile the plan for one list of raw ``names`` coming from ``source``."""
    compiled = _compiled_rules(rules)
    gauges = _compile(table.gauges) if table else None
    counters_named = _compile(table.counters) if table else None
    width32 = _compile(table.width32) if table else None
    queues = tuple((re.compile(q.pattern), q) for q in table.queues) if table else ()
    # The user's regexes (RE2, values.regex); the driver tables' own patterns stay in re.
    include = compile_regex(raw.include)
    exclude = compile_regex(raw.exclude) if raw.exclude else None
    counters: list[Entry] = []
    gauge_entries: list[Entry] = []
    shadowed = _shadowed(table, names) if table else frozenset()
    for index, raw_name in enumerate(names):
        name = raw_name.strip()
        is_gauge = bool(gauges and gauges.fullmatch(name)) or (
            table is not None and gauge_by_name(name)
            and not (counters_named and counters_named.fullmatch(name)))
        width = 32 if width32 and width32.fullmatch(name) else 64
        hit = None if is_gauge or name in shadowed else _match_rule(compiled, name)
        if hit:
            rule, groups = hit
            groups.pop("queue", None)
            labels = tuple(sorted({**dict(rule.labels), **groups}.items()))
            counters.append(Entry(index, SeriesKey(rule.metric, labels), rule.width, rule.scale))
        if table is None:
            continue
        # A gauge is a level per queue: never summed, so it keeps its queue number.
        queued = None if is_gauge else _queue_name(queues, name)
        stat = queued[1] if queued else name
        if queued and stat in raw.per_queue and not is_gauge:
            key = SeriesKey(QUEUE_COUNTER.name, (("queue", queued[0]), ("stat", stat)))
            counters.append(Entry(index, key, width, 1.0))
        if raw.enabled and include.fullmatch(stat) and not (exclude and exclude.fullmatch(stat)):
            family = RAW_GAUGE if is_gauge else RAW_COUNTER
            entry = Entry(index, SeriesKey(family.name, (("stat", stat),)), width, 1.0)
            (gauge_entries if is_gauge else counters).append(entry)
    return _plan(counters, gauge_entries, source)


def _shadowed(table: DriverTable, names: Sequence[str]) -> frozenset[str]:
    """Names that read the same register as an earlier-listed name present in ``names``:
    they are not mapped to a canonical family, so one register never feeds two."""
    present = {n.strip() for n in names}
    out: set[str] = set()
    for group in table.same_register:
        found = [n for n in group.names if n in present]
        out.update(found[1:])
    return frozenset(out)


def apply_counters(plan: Plan, values: Sequence[int], source: str) -> dict[SeriesKey, CounterValue]:
    """Values of the plan's counter series; entries sharing a series are summed."""
    out: dict[SeriesKey, CounterValue] = {}
    if source != plan.source:  # a plan asked for another source's values than its own
        for key, indices, zero in plan.groups:
            out[key] = CounterValue(sum([values[i] for i in indices]), source, zero.width,
                                    zero.scale)
        return out
    for key, indices, zero in plan.groups:
        v = values[indices[0]] if len(indices) == 1 else sum([values[i] for i in indices])
        out[key] = zero if v == 0 else CounterValue(v, source, zero.width, zero.scale)
    return out


def apply_gauges(plan: Plan, values: Sequence[int]) -> dict[SeriesKey, float]:
    return {key: float(values[i]) for key, i in plan.gauge_index}


class NamedPlans:
    """The plans of :meth:`map` one normalizer found (a ``Normalizer`` owns one), by
    (source, the rules object), then by the mapping's names in the order given: looking a
    plan up hashes only the names, not the rules (a frozen dataclass hashes every field in
    Python on every call). Each entry keeps its rules object, so the id stays that object's
    while it is held."""

    MAX = 256  # name orders kept per rules object

    __slots__ = ("_slots",)

    def __init__(self) -> None:
        self._slots: dict[tuple[str, int], tuple[
            tuple[Rule, ...], dict[tuple[str, ...], tuple[Plan, tuple[int, ...]]]]] = {}

    def map(self, source: str, rules: tuple[Rule, ...],
            stats: Mapping[str, int]) -> dict[SeriesKey, CounterValue]:
        """Apply ``rules`` to a small name -> value mapping (the standard sources)."""
        slot = self._slots.get((source, id(rules)))
        if slot is None or slot[0] is not rules:
            slot = self._slots[(source, id(rules))] = (rules, {})
        given = tuple(stats)
        hit = slot[1].get(given)
        if hit is None:
            names = tuple(sorted(given))
            if len(slot[1]) >= self.MAX:
                slot[1].clear()
            # The plan is compiled over the sorted names (so its order, and the order of the
            # series it yields, do not depend on the mapping's order); ``order`` reads the
            # values in that order straight from the mapping's own.
            position = {n: i for i, n in enumerate(given)}
            hit = slot[1][given] = (compile_plan(source, rules, names),
                                    tuple(position[n] for n in names))
        plan, order = hit
        values = tuple(stats.values())
        return apply_counters(plan, [values[i] for i in order], source)


class KeptPlans:
    """Plans made from a raw name list and a pattern tuple, kept by the names object (a
    reader hands over the same names tuple every poll until the set changes, so the plan is
    found by that object: hashing ~5,000 names per poll for a cache costs more than applying
    the plan). Each entry keeps its names object, so the id stays that object's."""

    MAX = 1024

    __slots__ = ("_plans",)

    def __init__(self) -> None:
        self._plans: dict[tuple[int, tuple[str, ...]], tuple[tuple[str, ...], Plan]] = {}

    def get(self, names: tuple[str, ...], patterns: tuple[str, ...],
            make: Callable[[tuple[str, ...], tuple[str, ...]], Plan]) -> Plan:
        hit = self._plans.get((id(names), patterns))
        if hit is not None and hit[0] is names:
            return hit[1]
        plan = make(names, patterns)
        if len(self._plans) >= self.MAX:
            self._plans.clear()
        self._plans[(id(names), patterns)] = (names, plan)
        return plan


def merge_by_family(*sources: Mapping[SeriesKey, CounterValue]) -> dict[SeriesKey, CounterValue]:
    """Merge per-source series, earlier sources first: a family comes whole from the first
    source that has any series of it, so values of different sources never mix."""
    taken: dict[str, int] = {}
    merged: dict[SeriesKey, CounterValue] = {}
    for rank, series in enumerate(sources):
        for key, value in series.items():
            if taken.setdefault(key.metric, rank) == rank:
                merged[key] = value
    return _drop_redundant_totals(merged)


# Families with a total label (FEC per lane and "total"), by name.
_TOTALLED = {name: fam.total_label for name, fam in FAMILIES.items() if fam.total_label}


def _drop_redundant_totals(series: dict[SeriesKey, CounterValue]) -> dict[SeriesKey, CounterValue]:
    if _TOTALLED.keys().isdisjoint([k.metric for k in series]):
        return series
    with_parts = {
        k.metric for k in series
        if (label := _TOTALLED.get(k.metric)) and label not in k.labels
    }
    return {
        k: v for k, v in series.items()
        if not (k.metric in with_parts and FAMILIES[k.metric].total_label in k.labels)
    }
