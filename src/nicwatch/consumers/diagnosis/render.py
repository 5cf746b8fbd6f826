"""Verdicts as text and JSON: `nicwatch diagnose`, the "Verdict" section of the record and
incident reports, and the DIAGNOSIS column of `show` all print them from here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from nicwatch.consumers.diagnosis.engine import Unknown, Verdict, Window, evaluate, unknowns
from nicwatch.consumers.diagnosis.signatures import CONTEXT, SIGNATURES
from nicwatch.printable import printable


def summary(verdicts: Sequence[Verdict], device: str) -> str:
    """The signatures that hold on ``device``, comma-separated ("-" none)."""
    return ",".join(v.label for v in verdicts if v.device == device) or "-"


def _when(t: float | None) -> str:
    if t is None or not math.isfinite(t):
        return ""
    return datetime.fromtimestamp(t, UTC).strftime(" since %Y-%m-%d %H:%M:%SZ")


def verdict_lines(v: Verdict, evidence: bool = True) -> list[str]:
    kind = "context" if v.klass == CONTEXT else "holds"
    scope = f" {v.scope} {v.scope_value}" if v.scope_value else ""
    lines = [printable(f"{v.device}{scope}: {v.title} ({v.signature}) {kind}, confidence "
                       f"{v.confidence:.2f}, over {v.seconds:.0f} s{_when(v.since)}")]
    if not evidence:
        return lines
    for r in v.conditions:
        if r.held:
            lines.append("    - " + printable(r.describe()))
    if v.context:
        lines.append("    context (configuration unlike the port's peers): "
                     + printable(", ".join(v.context)))
    for e in v.evidence:
        lines.append("      " + printable(e.describe()))
    lines.append("    next: " + printable(v.next_check))
    return lines


def not_evaluated_lines(windows: Sequence[Window], unknown: Sequence[Unknown]) -> list[str]:
    """What a window could not take in, and the signatures that could not be evaluated and
    why: without these a quiet window reads as a healthy one."""
    lines: list[str] = []
    for w in windows:
        for note in w.notes:
            lines.append(printable(f"  {w.device}: {note}"))
    if unknown:
        lines.append(f"not evaluated ({len(unknown)}): neither held nor ruled out, the "
                     "window lacks what they read")
        for u in unknown:
            scope = f" {u.scope} {u.scope_value}" if u.scope_value else ""
            lines.append(printable(f"  {u.device}{scope}: {u.title} ({u.signature}): "
                                   f"{u.why()}"))
    return lines


def text(verdicts: Sequence[Verdict], windows: Sequence[Window], what: str) -> str:
    """Verdicts first (one line each), then each with its evidence, then what could not be
    evaluated and why."""
    causes = [v for v in verdicts if v.klass != CONTEXT]
    span = max((w.seconds for w in windows), default=0.0)
    head = (f"{len(causes)} diagnosis signature(s) hold on {len({v.device for v in causes})} "
            f"of {len(windows)} interface(s) over {span:.0f} s ({what})")
    if not windows:
        return f"no interface has two readings to diagnose ({what})\n"
    unknown = unknowns(windows)
    lines = [printable(head)]
    if not verdicts:
        open_ = {u.signature for u in unknown}
        if open_:
            lines.append(f"  none of the {len(SIGNATURES) - len(open_)} signatures that could "
                         f"be evaluated holds; {len(open_)} of {len(SIGNATURES)} could not be "
                         "(below): nothing is claimed healthy there (docs/diagnosis.md)")
        else:
            lines.append(f"  none of the {len(SIGNATURES)} signatures holds (docs/diagnosis.md)")
    for v in verdicts:
        lines += ["  " + line for line in verdict_lines(v, evidence=False)]
    for v in verdicts:
        lines += ["", *verdict_lines(v)]
    more = not_evaluated_lines(windows, unknown)
    if more:
        lines += ["", *more]
    return "\n".join(lines) + "\n"


def as_json(verdicts: Sequence[Verdict], windows: Sequence[Window], what: str) -> dict[str, Any]:
    return {
        "source": what,
        "interfaces": [{"device": w.device, "window_seconds": round(w.seconds, 3),
                        "readings": w.polls, "pci_address": w.pci_address,
                        "notes": list(w.notes)} for w in windows],
        "holds": any(v.klass != CONTEXT for v in verdicts),
        "verdicts": [v.as_dict() for v in verdicts],
        "not_evaluated": [u.as_dict() for u in unknowns(windows)],
    }


def verdict_section(windows: Sequence[Window]) -> list[str]:
    """The "Verdict" section a report opens with: what holds over the run, with evidence."""
    verdicts = evaluate(windows)
    lines = ["Verdict", "-------"]
    if not windows:
        return [*lines, "not diagnosed: no interface has two readings", ""]
    if not verdicts:
        span = max(w.seconds for w in windows)
        open_ = {(u.device, u.signature) for u in unknowns(windows)}
        unknown = (f"; {len(open_)} signature(s) could not be evaluated, the evidence lacks "
                   "what they read (nicwatch diagnose names them)" if open_ else "")
        return [*lines, f"no diagnosis signature holds on {len(windows)} interface(s) over "
                f"{span:.0f} s{unknown} (docs/diagnosis.md)", ""]
    for v in verdicts:
        lines += verdict_lines(v)
    return [*lines, ""]


def report_windows(before: Any, after: Any) -> list[Window]:
    """The windows of a record or incident report: its first and last readings (snapshot
    documents), so the verdict rests on the run's mean rates."""
    from nicwatch.consumers.diagnosis.windows import from_snapshots
    return from_snapshots([before, after])


def report_section(before: Any, after: Any) -> list[str]:
    """The hook of snapshot/report/: the "Verdict" section its text report opens with."""
    return verdict_section(report_windows(before, after))


def report_json(before: Any, after: Any) -> list[dict[str, Any]]:
    """The verdicts of a report, for its JSON ("verdict")."""
    return [v.as_dict() for v in evaluate(report_windows(before, after))]


# `show` polls once: with one reading only the signatures that rest on configuration alone
# (the RoCE QoS profile) can be evaluated; rates need a window (`nicwatch diagnose`).
ONE_POLL = "configuration only (one poll); rates need a window: nicwatch diagnose"


def one_poll(sample: Any) -> list[Verdict]:
    """The verdicts one reading of ``sample`` (a Sample) supports."""
    from nicwatch.consumers.diagnosis.windows import gauges_of
    return evaluate([Window(sample.identity.device, 0.0, {}, {}, gauges_of(sample.gauges),
                            1, sample.time)])


def show_cell(sample: Any) -> str:
    """The DIAGNOSIS column of `show`: what holds, else "-" (configuration only)."""
    return summary(one_poll(sample), sample.identity.device)


def show_json(sample: Any) -> dict[str, Any]:
    return {"evaluated": ONE_POLL, "holds": [v.as_dict() for v in one_poll(sample)]}


# --------------------------------------------------------------------------- one reading

def lifetime_text(life: Any) -> str:
    """One pasted reading (windows.Lifetime): totals since the counters started, ratios,
    and why no rate can be claimed."""
    lines = [printable(f"one reading of {life.device} ({life.driver}, {life.source}): totals "
                       "since its counters started; no rate and no diagnosis"),
             printable(f"  why no rate: {life.why}"),
             f"  for rates: a second reading some seconds later, then nicwatch diagnose "
             f"--ethtool BEFORE AFTER --driver {life.driver} --interval SECONDS", ""]
    if life.ratios:
        lines.append("ratios since the counters started (time cancels out of them):")
        for r in life.ratios:
            bound = f"{r.bound} " if r.bound else ""
            lines.append(printable(f"  {r.name}: {bound}{r.value:.3g} ({r.numerator} / "
                                   f"({r.denominator}))"))
        lines.append("")
    else:
        lines += [f"no ratio: the statistics the {life.driver} table maps have no frame or byte "
                  "count to divide by", ""]
    nonzero = [t for t in life.totals if t.value]
    lines.append(f"totals since the counters started ({len(nonzero)} of {len(life.totals)} "
                 "series the signatures read are non-zero):")
    for t in nonzero:
        lines.append(printable(f"  {t.series} {_total(t.value)}  ({', '.join(t.stats[:3])}"
                               f"{' ...' if len(t.stats) > 3 else ''})"))
    zero = [t.series for t in life.totals if not t.value]
    if zero:
        lines.append(printable(f"  zero: {', '.join(zero)}"))
    if life.unmapped:
        lines.append(f"  {life.unmapped} statistic(s) the {life.driver} table does not map "
                     "(nicwatch normalize shows them)")
    return "\n".join(lines) + "\n"


def _total(v: float) -> str:
    return f"{int(v):,}" if v == int(v) else f"{v:,.3f}"


def lifetime_json(life: Any) -> dict[str, Any]:
    return {
        "source": life.source, "device": life.device, "driver": life.driver, "readings": 1,
        "rates": None, "why_no_rate": life.why, "holds": None,
        "ratios": [{"name": r.name, "value": r.value, "numerator": r.numerator,
                    "denominator": r.denominator, "bound": r.bound or None}
                   for r in life.ratios],
        "totals": [{"series": t.series, "stats": list(t.stats), "value": t.value}
                   for t in life.totals],
        "unmapped_statistics": life.unmapped,
    }
