"""Evaluate the signature table over windows: the one evaluation every view reads.

Each signature's conditions are held to their thresholds on the quantities
(quantities.py) of a :class:`~nicwatch.consumers.diagnosis.measures.Window`, per priority or
lane where the signature applies; the verdicts that hold, or with ``all_verdicts`` every one,
and the signatures that could not be evaluated (:func:`unknowns`) are what the views show.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nicwatch import metrics
from nicwatch.consumers.diagnosis.measures import Evidence, Measure, _num
from nicwatch.consumers.diagnosis.measures import Window as Window
from nicwatch.consumers.diagnosis.quantities import QUANTITIES as QUANTITIES
from nicwatch.consumers.diagnosis.quantities import lane_codes
from nicwatch.consumers.diagnosis.signatures import (
    DEVICE,
    FLOW,
    LANE,
    SIGNATURES,
    Condition,
    Signature,
)
from nicwatch.model import SeriesKey


@dataclass(frozen=True, slots=True)
class ConditionResult:
    condition: Condition
    value: float | None
    held: bool | None  # None: unknown (a series it needs is absent, or a range across it)
    upper: float | None = None  # the most the value can be, where it is a range (Measure)

    def describe(self) -> str:
        c = self.condition
        state = {True: "held", False: "not held", None: "unknown"}[self.held]
        most = f" to {_num(self.upper)}" if self.upper is not None else ""
        return (f"{c.text}: {c.quantity} = {_num(self.value)}{most} ({c.op} "
                f"{_num(c.threshold)}), {state}")


@dataclass(frozen=True, slots=True)
class Verdict:
    device: str
    signature: str
    klass: str
    title: str
    scope: str  # DEVICE, PRIORITY or LANE
    scope_value: str  # the priority or lane ("" for DEVICE)
    holds: bool
    confidence: float  # share of the known conditions that held (0-1)
    conditions: tuple[ConditionResult, ...]
    evidence: tuple[Evidence, ...]
    next_check: str
    reasons: tuple[str, ...] = ()  # supporting conditions that held: the likely reason
    seconds: float = 0.0
    since: float | None = None  # wall-clock time it has held since (set by the consumer)
    context: tuple[str, ...] = field(default=())  # configuration drift on the same device

    @property
    def label(self) -> str:
        return f"{self.signature}{{{self.scope}={self.scope_value}}}" if self.scope_value \
            else self.signature

    def as_dict(self) -> dict[str, object]:
        return {
            "device": self.device, "signature": self.signature, "class": self.klass,
            "title": self.title,
            **({self.scope: self.scope_value} if self.scope_value else {}),
            "holds": self.holds, "confidence": round(self.confidence, 3),
            "window_seconds": round(self.seconds, 3), "since": self.since,
            "conditions": [{"text": r.condition.text, "quantity": r.condition.quantity,
                            "op": r.condition.op, "threshold": r.condition.threshold,
                            "value": _finite(r.value), "upper": _finite(r.upper),
                            "held": r.held,
                            "required": r.condition.required} for r in self.conditions],
            "evidence": [{"series": e.series, "delta": _finite(e.delta), "rate": _finite(e.rate),
                          "value": _finite(e.value)} for e in self.evidence],
            "reasons": list(self.reasons), "context": list(self.context),
            "next_check": self.next_check,
        }


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None



# --------------------------------------------------------------------------- evaluation

def scopes(w: Window, kind: str) -> list[str | None]:
    """The priorities this window has series for; [None] per device; for a per-lane
    signature the interface itself (None) and each lane with a pre-FEC BER and a FEC code."""
    if kind == DEVICE:
        return [None]
    if kind == LANE:
        return [None, *sorted(lane_codes(w), key=lambda s: (not s.isdigit(),
                                                             int(s) if s.isdigit() else 0, s))]
    found = {v for m in _PRIORITY_SERIES for k in w.index.get(m, ()) for n, v in k.labels
             if n == "priority"}
    # ixgbe counts PFC per traffic class (packet buffer), not per priority: scope "tcN"
    found |= {f"tc{v}" for m in _TC_SERIES for k in w.index.get(m, ()) for n, v in k.labels
              if n == "tc"}
    if any(m in w.index for m in _GLOBAL_PAUSE):
        found.add("global")
    found.discard("total")
    ordered = sorted(found, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    return list(ordered)


_GLOBAL_PAUSE = (metrics.RX_PAUSE_FRAMES.name, metrics.TX_PAUSE_FRAMES.name,
                 metrics.RX_PAUSE_CTRL_FRAMES.name, metrics.TX_PAUSE_CTRL_FRAMES.name)
_TC_SERIES = (metrics.RX_PFC_TC_FRAMES.name, metrics.TX_PFC_TC_FRAMES.name)
_PRIORITY_SERIES = frozenset({metrics.RX_PFC_FRAMES.name, metrics.TX_PFC_FRAMES.name,
                              metrics.RX_PAUSE_DURATION_SECONDS.name,
                              metrics.TX_PAUSE_DURATION_SECONDS.name})


def _holds(c: Condition, value: float | None, upper: float | None = None) -> bool | None:
    """Whether ``value`` is on the condition's side of its threshold; with ``upper`` (a
    range from ``value`` to ``upper``) only where the whole range is, else None."""
    if value is None or math.isnan(value):
        return None
    held = value >= c.threshold if c.op == ">=" else value < c.threshold
    if upper is None or math.isnan(upper):
        return held
    if held == (upper >= c.threshold if c.op == ">=" else upper < c.threshold):
        return held
    return None


def _held(c: Condition, m: Measure) -> bool | None:
    return _holds(c, m.value, m.upper)


def _applies(c: Condition, scope: str | None) -> bool:
    return not c.scope or c.scope == (DEVICE if scope is None else LANE)


def _measure(w: Window, quantity: str, scope: str | None) -> Measure:
    """QUANTITIES[quantity] on the window, computed once per window and scope."""
    m = w.memo.get((quantity, scope))
    if not isinstance(m, Measure):
        m = w.memo[(quantity, scope)] = QUANTITIES[quantity](w, scope)
    return m


def _decides(sig: Signature, w: Window, scope: str | None) -> bool:
    """Whether ``sig`` holds on its required conditions alone, stopping at the first that
    decides (all: the first not held; any: the first held): most signatures on most
    interfaces fail at their first condition, and need no verdict built."""
    required = (c for c in sig.conditions if c.required and _applies(c, scope))
    if sig.match == "any":
        return any(_held(c, _measure(w, c.quantity, scope)) for c in required)
    found = False
    for c in required:
        if not _held(c, _measure(w, c.quantity, scope)):
            return False
        found = True
    return found


def evaluate_one(sig: Signature, w: Window, scope: str | None) -> Verdict:
    results: list[ConditionResult] = []
    evidence: list[Evidence] = []
    for c in sig.conditions:
        if not _applies(c, scope):
            continue
        m = _measure(w, c.quantity, scope)
        held = _held(c, m)
        results.append(ConditionResult(c, m.value, held, m.upper))
        if held or (c.required and m.value is not None):
            evidence.extend(m.evidence)
    required = [r for r in results if r.condition.required]
    if sig.match == "any":
        holds = any(r.held for r in required)
    else:
        holds = bool(required) and all(r.held for r in required)
    known = [r for r in results if r.held is not None]
    confidence = sum(bool(r.held) for r in known) / len(results) if results else 0.0
    reasons = tuple(r.condition.text for r in results if r.held and not r.condition.required)
    return Verdict(
        device=w.device, signature=sig.name, klass=sig.klass, title=sig.title,
        scope=sig.scope, scope_value=scope or "", holds=holds, confidence=confidence,
        conditions=tuple(results), evidence=tuple(dict.fromkeys(evidence)),
        next_check=fill_next_check(sig.next_check, w, scope)
        + (peer_pfc_note(w) if sig.klass == FLOW else ""),
        reasons=reasons, seconds=w.seconds)


def evaluate(windows: Iterable[Window], signatures: Sequence[Signature] = SIGNATURES,
             all_verdicts: bool = False) -> list[Verdict]:
    """The verdicts that hold (every one evaluated with ``all_verdicts``), by device, then
    in table order. A signature another one on the same device and scope supersedes (a
    pause storm explains pausing the peer) is dropped, and so is one on any scope that the
    interface's own verdict supersedes (a host receive bottleneck explains pausing the peer
    on every priority); configuration drift is attached to
    the device's other verdicts as context."""
    out: list[Verdict] = []
    for w in sorted(windows, key=lambda w: w.device):
        verdicts = [evaluate_one(sig, w, scope) for sig in signatures
                    for scope in scopes(w, sig.scope)
                    if all_verdicts or _decides(sig, w, scope)]
        held = {(v.signature, v.scope_value) for v in verdicts if v.holds}
        # on the same scope, and a lane's verdict on the interface's own (scope ""); the
        # interface's own verdict on every scope (a host receive bottleneck explains its
        # pausing the peer on each priority)
        superseded = {(name, scope) for v in verdicts if v.holds
                      for name in _supersedes(v.signature, signatures)
                      for scope in ({s for n, s in held if n == name} | {""}
                                    if v.scope_value == "" else {v.scope_value, ""})}
        drift = tuple(e.series for v in verdicts if v.holds and v.signature == "config_drift"
                      for e in v.evidence)
        for v in verdicts:
            if v.holds and (v.signature, v.scope_value) in superseded & held:
                v = _replace(v, holds=False)
            if v.holds and drift and v.signature != "config_drift":
                v = _replace(v, context=drift)
            if v.holds or all_verdicts:
                out.append(v)
    return out


PCI_PLACEHOLDER = "<pci address>"
RING_MAX_PLACEHOLDER = "rx <max>"


def fill_next_check(text: str, w: Window, scope: str | None) -> str:
    """A signature's next check with what the window knows filled in: {device}, {scope},
    the PCI address where the sample's identity has one and the rx ring's maximum where
    the window has it (a placeholder stays only where the value is unknown)."""
    text = text.replace("{device}", w.device).replace("{scope}", scope or "")
    if w.pci_address:
        text = text.replace(PCI_PLACEHOLDER, w.pci_address)
    ring_max = w.gauges.get(SeriesKey(metrics.RING_MAX_DESCRIPTORS.name, (("ring", "rx"),)))
    if ring_max:
        text = text.replace(RING_MAX_PLACEHOLDER, f"rx {int(ring_max)}")
    return text


def peer_pfc_note(w: Window) -> str:
    """What the link peer announces of PFC beside the port's own (docs/fabric.md), for the
    next check of a pause verdict: lossless priorities that differ make one end pause
    traffic the other treats as lossy. "" where the window has no peer PFC (no LLDP)."""
    def enabled(family: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for key, value in w.gauges.items():
            if key.metric == family:
                labels = dict(key.labels)
                on = out.setdefault(labels.get("source", ""), set())
                if value:
                    on.add(labels.get("priority", ""))
        return out
    peer, own = enabled(metrics.LLDP_PEER_PFC_ENABLED.name), enabled(metrics.PFC_ENABLED.name)
    if not peer:
        return ""
    source = "lldp" if "lldp" in peer else min(peer)
    note = f"; the link peer announces PFC on {','.join(sorted(peer[source])) or 'none'} " \
           f"({source})"
    if not own:
        return note
    here = set().union(*own.values())
    if here == peer[source]:
        return note + ", as this port has"
    return note + f", this port has {','.join(sorted(here)) or 'none'}: they disagree, align " \
        "them first (dcb pfc)"


# --------------------------------------------------------------------------- not evaluated

@dataclass(frozen=True, slots=True)
class Unknown:
    """A signature that could neither hold nor be ruled out on a window: a required
    condition has no value (a series it reads is absent) and none of the known ones rules
    it out. ``missing``: the families the window lacked when its quantities looked."""

    device: str
    signature: str
    title: str
    scope: str
    scope_value: str
    conditions: tuple[str, ...]  # "text (quantity)" of each unknown required condition
    missing: tuple[str, ...]
    reason: str = ""  # where no condition was evaluated at all (no scope to evaluate on)

    @property
    def label(self) -> str:
        return f"{self.signature}{{{self.scope}={self.scope_value}}}" if self.scope_value \
            else self.signature

    def why(self) -> str:
        if self.reason:
            return self.reason
        needs = "; ".join(self.conditions)
        lacks = (", ".join(self.missing[:6]) + (" ..." if len(self.missing) > 6 else "")
                 if self.missing else "a value it can divide by")
        return f"unknown: {needs}; the window lacks {lacks}"

    def as_dict(self) -> dict[str, object]:
        return {"device": self.device, "signature": self.signature, "title": self.title,
                **({self.scope: self.scope_value} if self.scope_value else {}),
                "unknown_conditions": list(self.conditions), "missing": list(self.missing),
                "why": self.why()}


class _Misses(dict[str, tuple[SeriesKey, ...]]):
    """A window's index that records the families a quantity looked for and did not find
    (only on the copy :func:`unknowns` builds: the evaluation's own index is a plain
    dict)."""

    def __init__(self, index: Mapping[str, tuple[SeriesKey, ...]]) -> None:
        super().__init__(index)
        self.misses: dict[str, None] = {}

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        if key not in self:
            self.misses[key] = None
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        if not found and isinstance(key, str):
            self.misses[key] = None
        return found


class _MissedGauges(dict[SeriesKey, float]):
    def __init__(self, gauges: Mapping[SeriesKey, float], misses: dict[str, None]) -> None:
        super().__init__(gauges)
        self.misses = misses

    def get(self, key: SeriesKey, default: object = None) -> object:  # type: ignore[override]
        if key not in self:
            self.misses[key.metric] = None
        return super().get(key, default)


def _missing(w: Window, quantity: str, scope: str | None) -> tuple[str, ...]:
    """The families ``quantity`` looked for on ``w`` and did not find."""
    index = _Misses(w.index)
    traced = Window(w.device, w.seconds, w.deltas, w.peaks,
                    _MissedGauges(w.gauges, index.misses), w.polls, w.end)
    object.__setattr__(traced, "index", index)
    QUANTITIES[quantity](traced, scope)
    return tuple(m for m in index.misses if m not in w.index)


def unknowns(windows: Iterable[Window], signatures: Sequence[Signature] = SIGNATURES
             ) -> list[Unknown]:
    """The signatures that could not be evaluated on each window, and why: every one that
    neither holds nor is ruled out by a known condition, and every per-priority one on a
    window without any priority's series."""
    out: list[Unknown] = []
    for w in sorted(windows, key=lambda w: w.device):
        for sig in signatures:
            found = scopes(w, sig.scope)
            if not found:
                out.append(Unknown(w.device, sig.name, sig.title, sig.scope, "", (), (),
                                   f"not evaluated: the window has no per-{sig.scope} "
                                   "series (PFC or PAUSE counters) to evaluate it on"))
                continue
            for scope in found:
                results = []
                ranges: list[str] = []
                for c in sig.conditions:
                    if c.required and _applies(c, scope):
                        m = _measure(w, c.quantity, scope)
                        results.append((c, _held(c, m)))
                        if m.value is not None and results[-1][1] is None:
                            ranges.append(f"{c.quantity} lies between {_num(m.value)} and "
                                          f"{_num(m.upper)}, across {c.op} "
                                          f"{_num(c.threshold)} ({m.note})")
                if not results:
                    continue
                held = [h for _, h in results]
                if None not in held:
                    continue
                if sig.match == "any" and any(held):
                    continue
                if sig.match != "any" and False in held:
                    continue
                open_ = [c for c, h in results if h is None]
                if ranges:
                    # a range across the threshold: inputs present, the counters cannot tell
                    out.append(Unknown(
                        w.device, sig.name, sig.title, sig.scope, scope or "",
                        tuple(f"{c.text} ({c.quantity})" for c in open_), (),
                        "unknown from frames (released by XON, no duration counter): "
                        + "; ".join(ranges)))
                    continue
                lacks = [_missing(w, c.quantity, scope) for c in open_]
                if not all(lacks):
                    # a quantity with no value that lacked nothing does not apply here (ECN
                    # pairs with PFC on a priority, not with 802.3x PAUSE): not an unknown
                    continue
                missing = tuple(dict.fromkeys(m for ms in lacks for m in ms))
                out.append(Unknown(w.device, sig.name, sig.title, sig.scope, scope or "",
                                   tuple(f"{c.text} ({c.quantity})" for c in open_), missing))
    return out


def _supersedes(name: str, signatures: Sequence[Signature]) -> tuple[str, ...]:
    return next((s.supersedes for s in signatures if s.name == name), ())


def _replace(v: Verdict, **changes: object) -> Verdict:
    from dataclasses import replace
    return replace(v, **changes)  # type: ignore[arg-type]
