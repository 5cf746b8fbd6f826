"""The incident directory on disk: what is nicwatch's (the marker), pruning to
``max_bytes``, leftovers of killed writes, incidents left open; and reading it back (the
bounded listing and reports that `nicwatch incidents` and the API serve)."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from nicwatch.snapshot.atomicfile import AtomicFile, describe
from nicwatch.sources.host import HostInfo
from nicwatch.values import show_bytes

log = structlog.get_logger("nicwatch.incidents")

INCIDENT_FILE = "incident.json"
MARKER = ".nicwatch-incident"  # in every directory nicwatch writes; nothing else is pruned
MARKER_TEXT = b"written by nicwatch: an incident directory (docs/incidents.md)\n"
MAX_INCIDENT_FILE = 1 << 20  # incident.json: a few kB (1,024 merged interfaces: ~150 kB)
MAX_REPORT_FILE = 16 << 20  # report.txt of one interface: kilobytes
MAX_LISTED = 10_000  # incidents a listing returns at most, the newest
FILES = ("incident.json", "onset.json.gz", "history.json.gz", "report.txt", "report.json",
         "report.html")
ID = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[A-Za-z0-9_.-]{1,100}-[0-9a-f]{8}(?:-[0-9]{1,4})?")


def _is_ours(directory: Path, name: str) -> bool:
    """An incident directory nicwatch wrote: its name has the id pattern, it is a real
    directory (not a symlink) and it holds the marker file nicwatch writes first."""
    if not ID.fullmatch(name):
        return False
    try:
        return (stat.S_ISDIR(os.lstat(directory / name).st_mode)
                and stat.S_ISREG(os.lstat(directory / name / MARKER).st_mode))
    except OSError:
        return False


def _file_bytes(st: os.stat_result) -> int:
    """Bytes a file holds on its own (a hard link shares them: its part)."""
    return st.st_size // max(1, st.st_nlink)


def _dir_bytes(path: Path, limit: int = 10_000) -> int:
    """Bytes under ``path`` (without following symlinks), walking at most ``limit``
    entries: a foreign tree can be large, and this only has to say it is."""
    total, seen = 0, 0
    stack = [path]
    while stack and seen < limit:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(entry.path))
                    else:
                        total += _file_bytes(st)
        except OSError:
            continue
    return total


def _entry_bytes(directory: Path, name: str) -> int:
    try:
        st = os.lstat(directory / name)
    except OSError:
        return 0
    return _dir_bytes(directory / name) if stat.S_ISDIR(st.st_mode) else _file_bytes(st)


def prune(directory: Path, max_bytes: int, keep: str | None = None
          ) -> tuple[list[str], list[tuple[str, int]]]:
    """Remove the oldest incidents nicwatch wrote until the directory holds at most
    ``max_bytes``; the incident ``keep`` (just written) goes last. Entries nicwatch did not
    write are never removed. Returns the removed ids and, when the budget could not be met,
    the foreign entries that kept it from being met (name, bytes)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return [], []
    ours = [n for n in names if _is_ours(directory, n)]
    foreign = [n for n in names if n not in set(ours) and not n.startswith(".")]
    sizes = {n: _entry_bytes(directory, n) for n in (*ours, *foreign)}
    total = sum(sizes.values())
    order = [n for n in ours if n != keep] + [n for n in ours if n == keep]
    removed = []
    for name in order:
        if total <= max_bytes:
            break
        if name == keep:
            break  # the newest stays, even alone over the budget
        shutil.rmtree(directory / name, ignore_errors=True)
        total -= sizes[name]
        removed.append(name)
    blocking = [(n, sizes[n]) for n in foreign] if total > max_bytes else []
    return removed, blocking


def clean_leftovers(directory: Path) -> None:
    """What a crash mid-write leaves of nicwatch's own writes: temporary directories
    (removed) and an old version swapped out but not yet replaced (put back). Only names
    of nicwatch's pattern holding its marker, never a symlink."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"\.(.+)\.(?:[A-Za-z0-9_]+\.tmp|old)", name)
        if not m or not ID.fullmatch(m.group(1)):
            continue
        path = directory / name
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            if not stat.S_ISREG(os.lstat(path / MARKER).st_mode) and any(os.scandir(path)):
                continue
        except OSError:
            continue
        final = directory / m.group(1)
        if name.endswith(".old") and not os.path.lexists(final):
            os.rename(path, final)
        else:
            shutil.rmtree(path, ignore_errors=True)


def close_interrupted(directory: Path, host: HostInfo) -> list[str]:
    """Incidents a previous daemon left open (it was killed, or stopped before it could
    write the close): closed now as ``interrupted`` at their last firing, with what was
    saved. Returns their ids."""
    listing = listed(directory)
    closed = []
    for item in listing.items:
        if not item.get("open"):
            continue
        path = directory / item["id"] / INCIDENT_FILE
        try:
            meta = _read_meta(directory, item["id"])
            if meta is None:
                continue
            meta.update(open=False, end=meta.get("last_fired") or meta.get("onset"),
                        end_reason="interrupted")
            with AtomicFile(path) as f:
                f.write(json.dumps(meta, indent=1).encode())
        except Exception as e:  # OSError, AtomicWriteError: logged, left open
            log.warning("incident_close_failed", id=item["id"], error=str(e))
            continue
        closed.append(item["id"])
    if closed:
        log.info("incidents_interrupted_closed", ids=closed[:20], count=len(closed),
                 detail="open when the last daemon stopped: closed at their last firing")
    return closed


_Types = type | tuple[type, ...]
_SUMMARY: dict[str, _Types] = {"id": str, "device": str, "onset": (int, float), "trigger": dict}
_OPTIONAL: dict[str, _Types] = {
    "value": (int, float), "labels": dict, "unit": str, "peak": (int, float),
    "peak_labels": dict, "last_fired": (int, float), "end": (int, float, type(None)),
    "open": bool, "end_reason": (str, type(None)), "firings": int, "events": int,
    "merged_more": int, "host": dict, "before": (int, float), "after": (int, float),
    "history_from": (int, float, type(None))}


_NUMBERS = {k for k, t in (*_SUMMARY.items(), *_OPTIONAL.items())
            if isinstance(t, tuple) and float in t}
_TIMES = {"onset", "last_fired", "end", "history_from"}
_MAX_TIME = 253402300799.0  # the end of year 9999, what a date can show


def _finite(value: Any, time_: bool) -> bool:
    """A number every reader can take as a float (an int of 309 digits or more is none:
    float() and math.isfinite raise OverflowError on it); a time also from 1970 to 9999."""
    if isinstance(value, int) and not -(2 ** 1024) < value < 2 ** 1024:
        return False
    return math.isfinite(value) and (not time_ or 0 <= value <= _MAX_TIME)


@dataclass(frozen=True, slots=True)
class Listing:
    items: list[dict[str, Any]]  # oldest first
    skipped: list[tuple[str, str]]  # (entry, why)
    left_off: int = 0  # older incidents not listed (MAX_LISTED)


def _open_entry(directory: Path, name: str) -> int:
    """A descriptor of the incident directory ``name``: never through a symlink."""
    return os.open(directory / name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _read_file(dir_fd: int, name: str, limit: int) -> bytes:
    """A regular file in ``dir_fd``, not through a symlink, of at most ``limit`` bytes
    (ValueError naming the problem)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                     dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError(f"{name} is a symlink") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{name} is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {show_bytes(limit)}")
    return data


def _read_meta(directory: Path, name: str) -> dict[str, Any] | None:
    """incident.json of one incident, checked (ValueError/OSError naming what is wrong)."""
    fd = _open_entry(directory, name)
    try:
        data = _read_file(fd, INCIDENT_FILE, MAX_INCIDENT_FILE)
    finally:
        os.close(fd)
    try:
        meta = json.loads(data)
    except RecursionError:
        raise ValueError(f"{INCIDENT_FILE} is nested too deeply") from None
    except ValueError:
        raise ValueError(f"{INCIDENT_FILE} is not JSON") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{INCIDENT_FILE} is not a JSON object")
    for key, types in (*_SUMMARY.items(), *_OPTIONAL.items()):
        if (key in _SUMMARY or key in meta) and not isinstance(meta.get(key), types):
            raise ValueError(f"{INCIDENT_FILE}: {key!r} is missing or of the wrong type")
    for key, value in meta.items():  # numbers that are no float (a 401-digit onset) or no time
        if key in _NUMBERS and value is not None and not _finite(value, key in _TIMES):
            what = "a time from 1970 to 9999" if key in _TIMES else "a finite number"
            raise ValueError(f"{INCIDENT_FILE}: {key!r} is not {what}")
    if meta["id"] != name:
        raise ValueError(f"{INCIDENT_FILE} names another incident")
    if not isinstance(meta["trigger"].get("name"), str):
        raise ValueError(f"{INCIDENT_FILE}: the trigger has no name")
    return meta


def _summary(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a listing carries of an incident (the merged interfaces only counted)."""
    out = {k: meta[k] for k in (*_SUMMARY, *_OPTIONAL) if k in meta}
    merged = meta.get("merged")
    out["merged"] = (len(merged) if isinstance(merged, dict) else 0) + int(
        meta.get("merged_more") or 0)
    out.pop("merged_more", None)
    return out


def listed(directory: str | os.PathLike[str]) -> Listing:
    """Every complete incident in ``directory`` (incident.json checked), oldest first, at
    most MAX_LISTED (the newest); an entry that is not one is skipped and named. A directory
    that does not exist has none; one that is not a directory raises NotADirectoryError."""
    where = Path(directory)
    try:
        names = sorted(os.listdir(where))
    except FileNotFoundError:
        return Listing([], [])
    candidates = [n for n in names if not n.startswith(".")]
    left_off = max(0, len(candidates) - MAX_LISTED)
    items, skipped = [], []
    for name in candidates[left_off:]:
        if not ID.fullmatch(name):
            skipped.append((name, "not an incident (nicwatch did not write it)"))
            continue
        try:
            meta = _read_meta(where, name)
        except FileNotFoundError:
            skipped.append((name, f"no {INCIDENT_FILE}"))
            continue
        except OSError as e:
            if os.path.islink(where / name):
                why = "a symlink"
            else:
                why = "not a directory" if e.errno == errno.ENOTDIR else describe(e)
            skipped.append((name, why))
            continue
        except ValueError as e:
            skipped.append((name, str(e)))
            continue
        if meta is not None:
            items.append(_summary(meta))
    return Listing(items, skipped, left_off)


def report_text(directory: str | os.PathLike[str], inc_id: object) -> str | None:
    """The text report of incident ``inc_id`` (a name of the id pattern, a real directory
    whose incident.json names it); None when there is no such incident. ValueError when its
    report is unreadable (a symlink, not a file, larger than MAX_REPORT_FILE)."""
    if not isinstance(inc_id, str) or not ID.fullmatch(inc_id):
        return None
    where = Path(directory)
    try:
        _read_meta(where, inc_id)
        fd = _open_entry(where, inc_id)
    except (OSError, ValueError):
        return None
    try:
        return _read_file(fd, "report.txt", MAX_REPORT_FILE).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)


def shown_id(inc_id: str) -> str:
    """An id as an error message shows it: at most 100 characters."""
    if len(inc_id) <= 100:
        return repr(inc_id)
    return repr(inc_id[:100]) + f"... ({len(inc_id)} characters)"
