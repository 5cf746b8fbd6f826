"""The incidents HTTP API: the listing and one incident's report."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nicwatch.consumers.incidents.store import Listing, listed, report_text, shown_id
from nicwatch.snapshot.atomicfile import describe

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


def incidents_response(directory: Callable[[], Path | None], query: Mapping[str, Any],
                       body: bytes = b"") -> tuple[int, str, bytes]:
    """``GET /api/v1/incidents``: the incident list (a summary of each incident.json), oldest
    first, with the entries skipped and why; ``?id=ID``: that incident's text report (404 if
    there is none, 422 if it cannot be served)."""
    where = directory()
    wanted = query.get("id")
    if isinstance(wanted, (list, tuple)):
        wanted = wanted[-1] if wanted else None
    if wanted:
        try:
            text = report_text(where, wanted) if where is not None else None
        except ValueError as e:
            return 422, TEXT_TYPE, f"incident {shown_id(wanted)}: {e}\n".encode()
        if text is None:
            return 404, TEXT_TYPE, f"no incident {shown_id(wanted)}\n".encode()
        return 200, TEXT_TYPE, text.encode()
    try:
        listing = listed(where) if where is not None else Listing([], [])
    except OSError as e:
        return 500, TEXT_TYPE, f"{where}: cannot list incidents: {describe(e)}\n".encode()
    return 200, JSON_TYPE, json.dumps({
        "directory": str(where) if where else None, "incidents": listing.items,
        "skipped": [{"entry": n, "reason": r} for n, r in listing.skipped],
        "left_off": listing.left_off}).encode()
