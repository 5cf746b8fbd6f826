"""The link line of a `nicwatch record` report: how often each interface's link went down
during the run, the worst lane's pre-FEC bit error ratio over the run (the counters' deltas
against the lane's serdes rate, normalize/linkphysics.py) and why the link is down at the
end, where the driver says (docs/link-physics.md)."""

from __future__ import annotations

from nicwatch.metrics import CARRIER_DOWN_EVENTS, LINK_DOWN_EVENTS, LINK_DOWN_REASON
from nicwatch.model import SeriesKey
from nicwatch.normalize.linkphysics import FEC_CODES, TOTAL, evaluate
from nicwatch.snapshot.files import OK, Diff, Snapshot

DOWN_FAMILIES = ((CARRIER_DOWN_EVENTS.name, "carrier"),
                 (LINK_DOWN_EVENTS.name, "NIC's count"))


def link_line(after: Snapshot, diff: Diff, device: str) -> str | None:
    """``Link: went down 2 times (carrier) ...; pre-FEC BER worst lane 5 1.0e-04 ...``, or
    None when the interface has none of it."""
    idiff = next((i for i in diff.interfaces if i.device == device), None)
    snap = next((i for i in reversed(after.polls[-1].interfaces) if i.device == device),
                None) if after.polls else None
    if idiff is None or snap is None:
        return None
    parts = []
    downs = []
    for family, what in DOWN_FAMILIES:
        rows = [r for r in idiff.rows if r.kind == "counter" and r.name == family]
        if rows and all(r.status == OK and r.delta is not None for r in rows):
            downs.append(f"{sum(r.delta or 0 for r in rows):g} ({what})")
    if downs:
        parts.append("went down " + ", ".join(downs) + " times")
    rates = {SeriesKey(r.name, r.labels): r.rate for r in idiff.rows
             if r.kind == "counter" and r.status == OK}
    physics = evaluate(snap, rates)
    worst = physics.worst_lane()
    code = FEC_CODES.get(physics.fec or "")
    limit = f", {code.name} limit {code.ber_limit:.1e}" if code else ""
    if worst is not None:
        parts.append(f"pre-FEC BER worst lane {worst[0]} {worst[1]:.1e}"
                     + (f", port {physics.ber[TOTAL]:.1e}" if TOTAL in physics.ber else "")
                     + limit)
    elif TOTAL in physics.ber:
        parts.append(f"pre-FEC BER {physics.ber[TOTAL]:.1e}{limit}")
    reasons = [dict(k.labels) for k in snap.gauges if k.metric == LINK_DOWN_REASON.name]
    if reasons:
        parts.append("down at the end: " + ", ".join(
            r["reason"] + (f"/{r['subreason']}" if r.get("subreason") else "")
            for r in reasons))
    return "Link: " + "; ".join(parts) + "." if parts else None
