"""Incident capture: when a health counter jumps or the link, PCIe or identity of a NIC
changes, the daemon saves the evidence itself (docs/incidents.md).

Triggers come from the ``[capture]`` section of the config file and are evaluated every
poll on what the tracker computed (its own poll-to-poll rates, exported or not). A trigger
that fires on an interface opens an incident; firing again extends it; it closes ``after``
seconds after it last fired, and the same trigger on the same interface opens no new one
for ``cooldown`` seconds after that.

Storms are bounded: at most ``max_open`` incidents are open at once and each trigger opens
at most ``max_per_trigger`` per ``per_trigger_window``; a firing over either cap is merged
into an open incident (the trigger's newest, else the newest of any; the trigger's newest is
reopened when none is open), listed in its ``incident.json`` and counted in
``nicwatch_incidents_merged_total``, never dropped. The poll thread only decides: the
incidents opened in one poll share one onset (the poll's samples, which are immutable), and
everything heavy (the onset snapshot, the history, the reports, the disk) happens on the
writer thread, which writes each incident when it opens, when a firing is merged into it
(coalesced: the newest state replaces one not yet written) and when it closes.

Each incident is one directory, written complete each time (built beside it and renamed into
place), recognisable by its name (``<onset UTC>-<interface>-<trigger>-<hash>``) and the
marker file nicwatch puts in it::

    incident.json      what fired: trigger, interface, value that crossed, onset, peak, end
    onset.json.gz      the snapshot at onset: every interface's raw statistics, rings, link,
                       PCIe, identity, host provenance (one file per onset poll, hard-linked
                       into each incident opened in that poll)
    history.json.gz    the flight recorder's polls of the incident's interfaces, from
                       ``before`` the onset to the end
    report.txt/.html/.json   the report `nicwatch record` writes, for this interface

The history is the flight recorder's (one history, one memory cap): ``before`` reaches as
far back as it holds. A failed write (a full disk) is logged once until a write succeeds,
counted, and retried. The directory holds at most ``max_bytes``: the oldest incidents are
removed first, and only directories nicwatch wrote; anything else is left alone.
"""

from __future__ import annotations

from nicwatch.consumers.incidents.api import incidents_response
from nicwatch.consumers.incidents.consumer import RETRY_SECONDS, STOP_SECONDS, Incidents
from nicwatch.consumers.incidents.parsing import (
    _SETTINGS,
    _TRIGGER_KEYS,
    EVENTS,
    SECTION,
    Capture,
    Trigger,
    capture_of,
    parse_capture,
)
from nicwatch.consumers.incidents.records import Incident, incident_id
from nicwatch.consumers.incidents.store import (
    FILES,
    ID,
    INCIDENT_FILE,
    MARKER,
    MAX_INCIDENT_FILE,
    MAX_LISTED,
    MAX_REPORT_FILE,
    Listing,
    listed,
    report_text,
    shown_id,
)
from nicwatch.consumers.incidents.writer import write_incident

__all__ = [
    "EVENTS", "FILES", "ID", "INCIDENT_FILE", "MARKER", "MAX_INCIDENT_FILE", "MAX_LISTED",
    "MAX_REPORT_FILE", "RETRY_SECONDS", "SECTION", "STOP_SECONDS", "_SETTINGS",
    "_TRIGGER_KEYS", "Capture", "Incident", "Incidents", "Listing", "Trigger", "capture_of",
    "incident_id", "incidents_response", "listed", "parse_capture", "report_text", "shown_id",
    "write_incident",
]
