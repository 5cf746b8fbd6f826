"""The difference between two snapshots: counter deltas and rates, with wraps and resets
told apart by the tracker's own rule (tracker.advance, on the same evidence: line rate,
elapsed time, a 64-bit counter falling, a changed statistic set, a replaced interface)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nicwatch.metrics import INFO
from nicwatch.model import CounterValue, NicIdentity, StatSet
from nicwatch.snapshot.decode import MAX_TIME
from nicwatch.snapshot.records import (
    ETHTOOL,
    IDENTITY_FIELDS,
    DiffError,
    InterfaceSnapshot,
    Snapshot,
)
from nicwatch.snapshot.rows import OK, Row, counter_rows, make_row, replaced
from nicwatch.sources.host import HostInfo
from nicwatch.tracker import (
    COUNTER_DECREASE,
    INTERFACE_REPLACED,
    STAT_SET_CHANGED,
    VF_COUNTER_DECREASE,
)

# --------------------------------------------------------------------------- diff

# Two snapshots closer than this are no pair of polls (a poll takes milliseconds): their rates
# would overflow to infinity.
MIN_DIFF_SECONDS = 1e-6


@dataclass(frozen=True, slots=True)
class Change:
    """A configuration or identity value that differs (``None``: absent on that side)."""

    name: str  # "identity.<field>" or a gauge family
    labels: tuple[tuple[str, str], ...]
    before: Any
    after: Any
    # A value of a family none of whose series A held: read for the first time in B (a
    # module the module thread had not read yet at A's poll), not a change of its own.
    first_read: bool = False


@dataclass(frozen=True, slots=True)
class InterfaceDiff:
    device: str  # the name in B
    before: NicIdentity
    after: NicIdentity
    seconds: float
    flags: tuple[str, ...]  # interface_replaced, stat_set_changed, counter_decrease,
    # vf_counter_decrease
    stat_set_changes: tuple[tuple[str, int, int], ...]  # (source, names added, names removed)
    changes: tuple[Change, ...]
    rows: tuple[Row, ...]  # health families first


@dataclass(frozen=True, slots=True)
class Diff:
    label_a: str | None
    label_b: str | None
    host_a: HostInfo
    host_b: HostInfo
    time_a: float
    time_b: float
    seconds: float
    interfaces: tuple[InterfaceDiff, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    warnings: tuple[str, ...]


def when(t: float | None) -> str:
    """An epoch time as UTC text for people (never raises: NaN and far-off times are
    shown as numbers)."""
    if t is None:
        return "unknown"
    if not (math.isfinite(t) and abs(t) <= MAX_TIME):
        return f"{t!r} (not a time)"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def same_boot(a: HostInfo, b: HostInfo) -> tuple[str, ...]:
    """Raise DiffError when ``a`` and ``b`` are different boots; warnings when unknown."""
    if a.boot_id and b.boot_id:
        if a.boot_id != b.boot_id:
            hosts = (f" of host {a.hostname}", f" of host {b.hostname}") \
                if a.hostname != b.hostname else ("", "")
            raise DiffError(
                f"taken in different boots (A: boot {a.boot_id}{hosts[0]}, booted "
                f"{when(a.boot_time)}; B: boot {b.boot_id}{hosts[1]}, booted "
                f"{when(b.boot_time)}): counters restart at boot, so their difference "
                "means nothing; refusing to subtract")
        return ()
    return ("boot id missing: cannot confirm that A and B were taken in the same boot",)


def match_interfaces(xs: Sequence[InterfaceSnapshot], ys: Sequence[InterfaceSnapshot]
           ) -> tuple[list[tuple[InterfaceSnapshot, InterfaceSnapshot]], tuple[str, ...],
                      tuple[str, ...]]:
    """Pairs by name, then by PCI function and permanent MAC (an interface renamed)."""
    by_name = {y.device: y for y in ys}
    pairs, rest_a = [], []
    for x in xs:
        y = by_name.pop(x.device, None)
        (pairs.append((x, y)) if y is not None else rest_a.append(x))

    def nic(i: InterfaceSnapshot) -> tuple[str | None, str | None] | None:
        ident = i.identity
        return (ident.pci_address, ident.perm_address) \
            if ident.pci_address and ident.perm_address else None
    by_nic = {nic(y): y for y in by_name.values() if nic(y)}
    only_a = []
    for x in rest_a:
        y = by_nic.pop(nic(x), None) if nic(x) else None
        if y is None:
            only_a.append(x.device)
        else:
            pairs.append((x, y))
            del by_name[y.device]
    return pairs, tuple(only_a), tuple(by_name)


def _raw_rows(source: str, a: StatSet | None, b: StatSet | None, seconds: float,
              blocked: str | None) -> list[Row]:
    def cv(value: int | None) -> CounterValue | None:
        return None if value is None else CounterValue(value, source)
    triples: Iterable[tuple[str, int | None, int | None]]
    if a is not None and b is not None and a.names == b.names:
        triples = zip(a.names, a.values, b.values, strict=False)  # by position: names may repeat
    else:
        va, vb = (a.as_dict() if a else {}), (b.as_dict() if b else {})
        triples = ((n, va.get(n), vb.get(n)) for n in dict.fromkeys((*vb, *va)))
    return [make_row(source, name, (), "", False, cv(x), cv(y), seconds, blocked)
            for name, x, y in triples]


def _same(x: Any, y: Any) -> bool:
    """Equal, counting NaN as equal to NaN."""
    return x == y or (isinstance(x, float) and isinstance(y, float)
                      and math.isnan(x) and math.isnan(y))


def state_changes(x: InterfaceSnapshot, y: InterfaceSnapshot) -> list[Change]:
    out = [Change(f"identity.{f}", (), getattr(x.identity, f), getattr(y.identity, f))
           for f in ("device", *IDENTITY_FIELDS)
           if getattr(x.identity, f) != getattr(y.identity, f)]
    held = {key.metric for key in x.gauges}
    for key in dict.fromkeys((*x.gauges, *y.gauges)):
        if key.metric == INFO.name:  # the identity, compared above
            continue
        before, after = x.gauges.get(key), y.gauges.get(key)
        if not _same(before, after):
            out.append(Change(key.metric, key.labels, before, after,
                              before is None and key.metric not in held))
    return out


def diff_interfaces(x: InterfaceSnapshot, y: InterfaceSnapshot, raw: bool = True) -> InterfaceDiff:
    seconds = y.monotonic - x.monotonic
    was_replaced = replaced(x, y)
    set_changes = []
    if raw:
        for source in x.raw.keys() & y.raw.keys():
            if x.raw[source].names != y.raw[source].names:
                na, nb = set(x.raw[source].names), set(y.raw[source].names)
                set_changes.append((source, len(nb - na), len(na - nb)))
    ethtool_changed = any(s == ETHTOOL for s, _, _ in set_changes)
    counter_rows_ = counter_rows(x, y, ethtool_changed)
    raw_rows = []
    if raw:
        for source in dict.fromkeys((*x.raw, *y.raw)):
            raw_rows += _raw_rows(source, x.raw.get(source), y.raw.get(source), seconds,
                                  INTERFACE_REPLACED if was_replaced else None)
    rows = (*counter_rows_, *raw_rows)
    flags = [INTERFACE_REPLACED] if was_replaced else []
    if set_changes:
        flags.append(STAT_SET_CHANGED)
    # A VF's counters restart when the VF is re-created: flagged apart from the PF's own.
    fell = {r.name.startswith("nic_vf_") for r in rows if r.status == COUNTER_DECREASE}
    if False in fell:
        flags.append(COUNTER_DECREASE)
    if True in fell:
        flags.append(VF_COUNTER_DECREASE)
    return InterfaceDiff(y.device, x.identity, y.identity, seconds, tuple(flags),
                         tuple(sorted(set_changes)), tuple(state_changes(x, y)), rows)


def diff(a: Snapshot, b: Snapshot) -> Diff:
    """What changed from ``a``'s first poll to ``b``'s last (pure).

    Refuses (DiffError) across a reboot and when B was taken before A. A counter that went
    backwards, a changed statistic set and a replaced interface are flagged on their rows,
    never turned into negative numbers; 32-bit counters may have wrapped once.
    """
    pa, pb = a.polls[0], b.polls[-1]
    warnings = same_boot(a.host, b.host)
    seconds = pb.monotonic - pa.monotonic
    if seconds < 0:
        raise DiffError(f"B was taken {-seconds:.3f} s before A (by the monotonic clock); "
                        "give the earlier snapshot first")
    if 0 < seconds < MIN_DIFF_SECONDS:
        raise DiffError(f"B was taken {seconds!r} s after A (by the monotonic clock): no two "
                        "polls are that close, and rates over it overflow")
    pairs, only_a, only_b = match_interfaces(pa.interfaces, pb.interfaces)
    raw = a.raw_stats and b.raw_stats
    return Diff(
        label_a=a.label, label_b=b.label, host_a=a.host, host_b=b.host,
        time_a=pa.time, time_b=pb.time, seconds=seconds,
        interfaces=tuple(diff_interfaces(x, y, raw) for x, y in pairs),
        only_a=only_a, only_b=only_b, warnings=warnings)


def family_total(rows: Iterable[Row], family: str) -> tuple[float | None, str]:
    """Sum of a canonical family's deltas over its labels, and the status: ``ok``, the
    first non-ok status of any of its rows, or ``absent``."""
    total: float = 0
    status, seen = OK, False
    for row in rows:
        if row.kind == "counter" and row.name == family:
            seen = True
            if row.status != OK or row.delta is None:
                status = status if status != OK else row.status
            else:
                total += row.delta
    if not seen:
        return None, "absent"
    return (total if status == OK else None), status


