"""Apply rule tables to raw statistics.

Matching thousands of names against dozens of patterns is the expensive part, and names
change rarely, so a table is compiled once per distinct name list into a ``Plan``: a list
of (index, series) pairs. Each poll then only walks the plan over the new values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from nicwatch.model import CounterValue, SeriesKey
from nicwatch.normalize.rules import DriverTable, QueueStat, Rule
from nicwatch.metrics import FAMILIES, QUEUE_COUNTER, RAW_COUNTER, RAW_GAUGE


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
    counters: tuple[Entry, ...]
    gauges: tuple[Entry, ...]


def _compile(patterns: Sequence[str]) -> re.Pattern | None:
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


@lru_cache(maxsize=256)
def _compiled_rules(rules: tuple[Rule, ...]) -> tuple[tuple[re.Pattern, Rule], ...]:
    return tuple((re.compile(r.pattern), r) for r in rules)


def _match_rule(compiled, name: str) -> tuple[Rule, dict[str, str]] | None:
    for regex, rule in compiled:
        m = regex.fullmatch(name)
        if m:
            return rule, {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def _queue_name(queues: tuple[tuple[re.Pattern, QueueStat], ...], name: str):
    for regex, q in queues:
        m = regex.fullmatch(name)
        if m:
            groups = m.groupdict()
            return groups.pop("queue"), q.template.format(**groups)
    return None


@lru_cache(maxsize=256)
def compile_plan(source: str, rules: tuple[Rule, ...], names: tuple[str, ...],
                 table: DriverTable | None = None, raw: RawOptions = RawOptions()) -> Plan:
    """Compile the plan for one list of raw ``names`` coming from ``source``."""
    compiled = _compiled_rules(rules)
    gauges = _compile(table.gauges) if table else None
    width32 = _compile(table.width32) if table else None
    queues = tuple((re.compile(q.pattern), q) for q in table.queues) if table else ()
    include, exclude = re.compile(raw.include), re.compile(raw.exclude) if raw.exclude else None
    counters: list[Entry] = []
    gauge_entries: list[Entry] = []
    shadowed = _shadowed(table, names) if table else frozenset()
    for index, raw_name in enumerate(names):
        name = raw_name.strip()
        is_gauge = bool(gauges and gauges.fullmatch(name))
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
    return Plan(tuple(counters), tuple(gauge_entries))


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
    sums: dict[SeriesKey, list] = {}
    for e in plan.counters:
        slot = sums.get(e.key)
        if slot is None:
            sums[e.key] = [values[e.index], e.width, e.scale]
        else:
            slot[0] += values[e.index]
    return {k: CounterValue(v, source, w, s) for k, (v, w, s) in sums.items()}


def apply_gauges(plan: Plan, values: Sequence[int]) -> dict[SeriesKey, float]:
    return {e.key: float(values[e.index]) for e in plan.gauges}


def map_named(source: str, rules: tuple[Rule, ...], stats: Mapping[str, int]) -> dict[SeriesKey, CounterValue]:
    """Apply ``rules`` to a small name -> value mapping (the standard sources)."""
    names = tuple(sorted(stats))
    plan = compile_plan(source, rules, names)
    return apply_counters(plan, [stats[n] for n in names], source)


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


def _drop_redundant_totals(series: dict[SeriesKey, CounterValue]) -> dict[SeriesKey, CounterValue]:
    with_parts = {
        k.metric for k in series
        if (fam := FAMILIES.get(k.metric)) and fam.total_label and fam.total_label not in k.labels
    }
    return {
        k: v for k, v in series.items()
        if not (k.metric in with_parts and FAMILIES[k.metric].total_label in k.labels)
    }
