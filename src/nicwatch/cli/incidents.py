"""`nicwatch incidents [show ID]`: the incidents the daemon captured (docs/incidents.md).

    $ nicwatch incidents
    ID                                             TIME                  HOST  DEVICE     TRIGGER
    20261130T190501.250Z-enp2s0np0-nic_rx_pfc_...  2026-11-30 19:05:01Z  lab1  enp2s0np0  nic_...
    $ nicwatch incidents show 20261130T190501.250Z-enp2s0np0-nic_rx_pfc_...

Incidents are read from the capture directory (``--dir``, else ``[capture] directory`` of
``--config``, else "incidents" beside the state file) or from a running daemon
(``--web.url``, GET /api/v1/incidents). ``show`` takes an id or a prefix of exactly one (as
git takes a commit's). A missing incident or an unreachable daemon exits with status 1; a
bad flag, a ``--dir`` that does not exist and a prefix of several incidents with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from nicwatch.cli import common
from nicwatch.cli.common import EXIT_FAILURE, EXIT_USAGE
from nicwatch.consumers import incidents
from nicwatch.consumers.identity import default_state_file
from nicwatch.printable import printable
from nicwatch.snapshot import report
from nicwatch.snapshot.atomicfile import describe
from nicwatch.snapshot.decode import count_values
from nicwatch.snapshot.files import when
from nicwatch.values import ConfigError, show_bytes


class _Failed(Exception):
    """The command ran and could not do it (exit 1)."""


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    p = common.add_command(
        subparsers, "incidents",
        description="List the incidents the daemon captured when a [[capture.trigger]] fired "
        "(time, host, device, trigger, peak, duration), or print one's report.")
    p.add_argument("--config", metavar="FILE", help="TOML configuration file; its [capture] "
                   "directory is read")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dir", metavar="DIR", help="the capture directory (default: [capture] "
                       "directory, else \"incidents\" beside the state file)")
    where.add_argument("--web.url", dest="web_url", metavar="URL",
                       help="ask a running daemon instead (http://HOST:PORT; user:password@ "
                       "for basic auth)")
    p.add_argument("--json", action="store_true", help="the list as JSON")
    p.add_argument("action", nargs="?", choices=("show",), help="show: print one report")
    p.add_argument("id", nargs="?", metavar="ID", help="the incident to show: its id or a "
                   "prefix of one id (the onset, say)")
    return p


def _directory(args: argparse.Namespace) -> Path:
    if args.dir:
        if not os.path.lexists(args.dir):  # a typo, not an empty capture directory
            raise ConfigError(f"--dir {args.dir}: no such directory")
        return Path(args.dir)
    if args.config:
        import nicwatch.consumers.registry  # noqa: F401  (registers every section)
        from nicwatch.config import build
        config = build(args.config, {})
        capture = incidents.capture_of(config)
        if capture.directory:
            return Path(capture.directory)
        if config.state_file:
            return Path(config.state_file).parent / "incidents"
    path, _ = default_state_file()
    if path is None:
        raise _Failed("no state directory to find incidents in; give --dir or --web.url")
    return Path(path).parent / "incidents"


# What `--web.url` reads of the daemon's answers: a listing holds at most MAX_LISTED
# summaries of a few hundred bytes (about 40 JSON values each), a report is at most
# MAX_REPORT_FILE. A larger answer, or one of more values, is refused before it is parsed
# (a 256 MiB answer of empty lists would take gigabytes as Python objects).
MAX_LISTING_BYTES = 32 << 20
MAX_LISTING_VALUES = 2_000_000


def resolve(prefix: str, ids: list[str]) -> str:
    """The id ``prefix`` names: itself when it is one of ``ids``, else the one id that
    starts with it (as git takes a commit's prefix); unchanged when none does (the caller
    says there is no such incident). ConfigError when several do."""
    if prefix in ids:
        return prefix
    matches = sorted(i for i in ids if i.startswith(prefix))
    if len(matches) > 1:
        shown = ", ".join(matches[:3]) + (f" and {len(matches) - 3} more" if len(matches) > 3
                                          else "")
        raise ConfigError(f"incidents show: {len(matches)} incidents start with "
                          f"{incidents.shown_id(prefix)} ({shown}); give more of the id")
    return matches[0] if matches else prefix


def _ids_in(directory: Path) -> list[str]:
    try:
        return [n for n in os.listdir(directory) if incidents.ID.fullmatch(n)]
    except OSError:
        return []  # _show says what is wrong with the directory


def _ids_served(base: str) -> list[str]:
    try:
        data = _get(base, {}, MAX_LISTING_BYTES)
        if count_values(data) > MAX_LISTING_VALUES:
            return []
        items = json.loads(data)["incidents"]
        return [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]
    except (ValueError, KeyError, TypeError, RecursionError):
        return []  # the daemon answers the id itself


def _get(base: str, query: dict[str, str], limit: int) -> bytes:
    from nicwatch.cli.snapshot import _redacted, _request
    url = base.rstrip("/") + "/api/v1/incidents" + (
        "?" + urllib.parse.urlencode(query) if query else "")
    shown = _redacted(base)
    try:
        with urllib.request.urlopen(_request(url), timeout=30) as response:
            data: bytes = response.read(limit + 1)
            if len(data) > limit:
                raise _Failed(f"{shown}: the answer is larger than {show_bytes(limit)}, "
                              "more than the daemon sends")
            return data
    except urllib.error.HTTPError as e:
        raise _Failed(f"{shown}: HTTP {e.code}: {common.http_error_detail(e)}") from None
    except (urllib.error.URLError, OSError) as e:
        raise _Failed(f"{shown}: cannot reach the daemon: {getattr(e, 'reason', e)} (is "
                      "`nicwatch serve` running there?)") from None


def _duration(item: dict[str, Any]) -> str:
    """Onset to close (the close comes `after` past the last firing), or to the last firing
    while open; the report's own duration is its history window, which starts `before`
    the onset."""
    end = item.get("end") or item.get("last_fired")
    onset = item.get("onset")
    if not (isinstance(end, (int, float)) and isinstance(onset, (int, float))) or \
            isinstance(end, bool) or isinstance(onset, bool):
        return "-"
    return report.duration(max(0.0, end - onset)) + (" (open)" if item.get("open") else "")


def _table(item: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested table of a listed item, {} when it is not one (a list from a daemon is
    JSON from the network: any shape)."""
    value = item.get(key)
    return value if isinstance(value, dict) else {}


def _peak(item: dict[str, Any]) -> str:
    trigger = _table(item, "trigger")
    if trigger.get("event"):  # an event has no rate: how often it happened
        events = item.get("events")
        counted = events if isinstance(events, int) and not isinstance(events, bool) else 0
        return f"{max(counted, 1)} {trigger['event']}"
    labels = _table(item, "peak_labels")
    where = "{" + ",".join(f"{k}={v}" for k, v in labels.items()) + "} " if labels else ""
    try:
        return where + report.rate(float(item["peak"]), str(item.get("unit", "")))
    except (TypeError, ValueError, KeyError, OverflowError):
        return "-"


def format_list(items: list[dict[str, Any]], where: str = "") -> str:
    """The incident table; ``where`` (the directory or URL read) names what was empty."""
    if not items:
        return f"no incidents in {where}\n" if where else "no incidents\n"
    rows = [["ID", "TIME", "HOST", "DEVICE", "TRIGGER", "PEAK", "ONSET TO CLOSE"]]
    for item in items:
        onset = item.get("onset")
        rows.append([str(item.get("id"))[:200],
                     when(onset if isinstance(onset, (int, float)) else None),
                     str(_table(item, "host").get("hostname") or "-")[:200],
                     str(item.get("device"))[:200], str(_table(item, "trigger").get("name"))[:200],
                     _peak(item), _duration(item)])
    return "\n".join(report.table(rows)) + "\n"


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "show" and not args.id:
            raise ConfigError("incidents show: which incident? (give its ID from "
                                     "`nicwatch incidents`)")
        if args.action is None and args.id:
            raise ConfigError(f"incidents: unknown action {incidents.shown_id(args.id)} "
                              "(known: show)")
        if args.web_url and not re.match(r"https?://", args.web_url):
            raise ConfigError(f"--web.url: expected http://HOST:PORT or "
                                     f"https://HOST:PORT, got {args.web_url!r}")
        if args.action == "show":
            if args.web_url:
                inc_id = resolve(args.id, _ids_served(args.web_url))
                text = _get(args.web_url, {"id": inc_id}, incidents.MAX_REPORT_FILE).decode(
                    "utf-8", "replace")
            else:
                where = _directory(args)
                text = _show(where, resolve(args.id, _ids_in(where)))
            sys.stdout.write(printable(text, keep="\n", backslash=False))
            return 0
        if args.web_url:
            try:
                data = _get(args.web_url, {}, MAX_LISTING_BYTES)
                if count_values(data) > MAX_LISTING_VALUES:
                    raise _Failed(f"{args.web_url}: the answer holds more than "
                                  f"{MAX_LISTING_VALUES:,} JSON values, not an incident list "
                                  "the daemon sends")
                answer = json.loads(data)
                items = answer["incidents"]
                skipped = [(s["entry"], s["reason"]) for s in answer.get("skipped", ())]
                if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                    raise TypeError
            except (ValueError, KeyError, TypeError, RecursionError):
                raise _Failed(f"{args.web_url}: not an incident list") from None
        else:
            where = _directory(args)
            try:
                listing = incidents.listed(where)
            except NotADirectoryError:
                raise ConfigError(f"--dir {where}: not a directory") from None
            except OSError as e:
                raise _Failed(f"{where}: cannot list incidents: {describe(e)}") from None
            items, skipped = listing.items, listing.skipped
        for entry, reason in skipped[:20]:
            print(printable(f"nicwatch: warning: skipped {str(entry)[:100]!r}: {reason}"),
                  file=sys.stderr)
        if len(skipped) > 20:
            print(f"nicwatch: warning: skipped {len(skipped) - 20} more entries", file=sys.stderr)
        if args.json:
            print(json.dumps(items, indent=1))
        else:
            from nicwatch.cli.snapshot import _redacted
            read = _redacted(args.web_url) if args.web_url else str(_directory(args))
            sys.stdout.write(printable(format_list(items, read), keep="\n", backslash=False))
        return 0
    except ConfigError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except _Failed as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_FAILURE


def _show(directory: Path, inc_id: str) -> str:
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"--dir {directory}: not a directory")
    try:
        text = incidents.report_text(directory, inc_id)
    except ValueError as e:
        raise _Failed(f"{directory}: incident {incidents.shown_id(inc_id)}: {e}") from None
    if text is None:
        raise _Failed(f"{directory}: no incident {incidents.shown_id(inc_id)} (`nicwatch "
                      f"incidents --dir {directory}` lists them)")
    return text
