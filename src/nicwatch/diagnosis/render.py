"""Verdicts as text and JSON: `nicwatch diagnose`, the "Verdict" section of the record and
incident reports, and the DIAGNOSIS column of `show` all print them from here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from nicwatch.diagnosis.engine import Verdict, Window, evaluate
from nicwatch.diagnosis.signatures import CONTEXT, SIGNATURES
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


def text(verdicts: Sequence[Verdict], windows: Sequence[Window], what: str) -> str:
    """Verdicts first (one line each), then each with its evidence."""
    causes = [v for v in verdicts if v.klass != CONTEXT]
    span = max((w.seconds for w in windows), default=0.0)
    head = (f"{len(causes)} diagnosis signature(s) hold on {len({v.device for v in causes})} "
            f"of {len(windows)} interface(s) over {span:.0f} s ({what})")
    if not windows:
        return f"no interface has two readings to diagnose ({what})\n"
    lines = [printable(head)]
    if not verdicts:
        lines.append(f"  none of the {len(SIGNATURES)} signatures holds (docs/diagnosis.md)")
    for v in verdicts:
        lines += ["  " + line for line in verdict_lines(v, evidence=False)]
    for v in verdicts:
        lines += ["", *verdict_lines(v)]
    return "\n".join(lines) + "\n"


def as_json(verdicts: Sequence[Verdict], windows: Sequence[Window], what: str) -> dict[str, Any]:
    return {
        "source": what,
        "interfaces": [{"device": w.device, "window_seconds": round(w.seconds, 3),
                        "readings": w.polls} for w in windows],
        "holds": any(v.klass != CONTEXT for v in verdicts),
        "verdicts": [v.as_dict() for v in verdicts],
    }


def verdict_section(windows: Sequence[Window]) -> list[str]:
    """The "Verdict" section a report opens with: what holds over the run, with evidence."""
    verdicts = evaluate(windows)
    lines = ["Verdict", "-------"]
    if not windows:
        return [*lines, "not diagnosed: no interface has two readings", ""]
    if not verdicts:
        span = max(w.seconds for w in windows)
        return [*lines, f"no diagnosis signature holds on {len(windows)} interface(s) over "
                f"{span:.0f} s (docs/diagnosis.md)", ""]
    for v in verdicts:
        lines += verdict_lines(v)
    return [*lines, ""]


def report_windows(before: Any, after: Any) -> list[Window]:
    """The windows of a record or incident report: its first and last readings (snapshot
    documents), so the verdict rests on the run's mean rates."""
    from nicwatch.diagnosis.windows import from_snapshots
    return from_snapshots([before, after])


def report_section(before: Any, after: Any) -> list[str]:
    """The hook of snapshot/report.py: the "Verdict" section its text report opens with."""
    return verdict_section(report_windows(before, after))


def report_json(before: Any, after: Any) -> list[dict[str, Any]]:
    """The verdicts of a report, for its JSON ("verdict")."""
    return [v.as_dict() for v in evaluate(report_windows(before, after))]


# `show` polls once: with one reading only the signatures that rest on configuration alone
# (the RoCE QoS profile) can be evaluated; rates need a window (`nicwatch diagnose`).
ONE_POLL = "configuration only (one poll); rates need a window: nicwatch diagnose"


def one_poll(sample: Any) -> list[Verdict]:
    """The verdicts one reading of ``sample`` (a Sample) supports."""
    from nicwatch.diagnosis.windows import gauges_of
    return evaluate([Window(sample.identity.device, 0.0, {}, {}, gauges_of(sample.gauges),
                            1, sample.time)])


def show_cell(sample: Any) -> str:
    """The DIAGNOSIS column of `show`: what holds, else "-" (configuration only)."""
    return summary(one_poll(sample), sample.identity.device)


def show_json(sample: Any) -> dict[str, Any]:
    return {"evaluated": ONE_POLL, "holds": [v.as_dict() for v in one_poll(sample)]}
