"""NIC identity across restarts and reboots: which PCI address and interface name each NIC
(by permanent MAC) had when last seen.

A BIOS setting, a reseated card or a firmware update can renumber the PCI topology, and the
interface and RDMA device names follow the bus address. The lab report could not tell
whether the card at a new address after a reboot was the same card. The state file can:
when a known permanent MAC shows up at another PCI address or under another name, the
change is logged and counted, and the count survives restarts because it lives in the file.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.model import ExtraFamily, Sample
from nicwatch.snapshot.atomicfile import AtomicFile, make_dirs, remove_stale_temps, write_atomic

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample

log = structlog.get_logger("nicwatch.identity")
daemon_log = structlog.get_logger("nicwatch")  # state file failures, as the daemon logged them
VERSION = 1
KINDS = ("pci_address", "name")


_MAC = re.compile(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5,31}")  # Ethernet 6, InfiniBand 20
_PCI = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
LOGGED_BAD_ENTRIES = 10  # one warning each for the first ones, then one summary


def entry_problem(key: object, entry: object) -> str | None:
    """Why a state file entry cannot be used (None: it can). Fields beyond these are kept."""
    if not isinstance(key, str) or not _MAC.fullmatch(key):
        return "key is not a permanent MAC address"
    if not isinstance(entry, dict):
        return "not an object"
    pci, name = entry.get("pci_address"), entry.get("name")
    if not isinstance(pci, str) or not _PCI.fullmatch(pci):
        return "pci_address is not a PCI function address"
    if not isinstance(name, str) or not 0 < len(name.encode(errors="replace")) < 16:
        return "name is not an interface name"
    seen = entry.get("first_seen")
    if isinstance(seen, bool) or not isinstance(seen, (int, float)) or not math.isfinite(seen):
        return "first_seen is not a time"
    changes = entry.get("changes")
    if not isinstance(changes, dict) or not all(
            k in KINDS and type(v) is int and 0 <= v < 2**53 for k, v in changes.items()):
        return f"changes is not a count per kind ({', '.join(KINDS)})"
    return None


class StateFileError(Exception):
    """The state file cannot be read or written; the message names the path."""


SYSTEM_STATE_DIRECTORY = Path("/var/lib/nicwatch")
STATE_FILE_NAME = "identity.json"


def state_directories(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Where the state file may go when ``state.file`` is not set, best first: the directory
    systemd passes with ``StateDirectory=`` ($STATE_DIRECTORY), /var/lib/nicwatch, then the
    user's own state directory ($XDG_STATE_HOME/nicwatch, else ~/.local/state/nicwatch)."""
    dirs = []
    if environ.get("STATE_DIRECTORY"):
        dirs.append(Path(environ["STATE_DIRECTORY"].split(":")[0]))
    dirs.append(SYSTEM_STATE_DIRECTORY)
    xdg = environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative value is ignored
        dirs.append(Path(xdg) / "nicwatch")
    elif os.path.isabs(home := environ.get("HOME", "")):
        dirs.append(Path(home) / ".local" / "state" / "nicwatch")
    return dirs


def _unusable(directory: Path) -> str | None:
    """Why ``directory`` cannot hold the state file (created if missing), or None."""
    try:
        make_dirs(directory)
    except OSError as e:
        return e.strerror or str(e)
    if not directory.is_dir():
        return "not a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return "not writable"
    return None


def default_state_file(environ: Mapping[str, str] = os.environ) -> tuple[Path | None, list[str]]:
    """The state file to use by default, and why each better directory was passed over;
    None when no candidate is usable."""
    passed_over: list[str] = []
    for directory in state_directories(environ):
        problem = _unusable(directory)
        if problem is None:
            return directory / STATE_FILE_NAME, passed_over
        passed_over.append(f"{directory}: {problem}")
    return None, passed_over


@dataclass(frozen=True, slots=True)
class IdentityChange:
    perm_address: str
    kind: str  # "pci_address" or "name"
    old: str
    new: str


class IdentityState:
    """The state file and what it says; ``observe`` is called once per poll. Without a
    path, identity is remembered only while the process runs."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._unsaved = False  # a change the last save() could not write: retried
        self.nics: dict[str, dict[str, Any]] = {}
        if self.path is not None:
            self.nics = self._load(self.path)
            self._check_writable(self.path)

    def _check_writable(self, path: Path) -> None:
        """Refuse a state file that cannot be written at start, not at the first change.
        Temporary files a killed daemon left behind go first (the daemon is the file's
        only writer, so at start any of them is stale)."""
        self._make_directory(path)
        removed = remove_stale_temps(path, older_than=0)
        if removed:
            log.info("stale_temp_files_removed", path=str(path), count=removed)
        AtomicFile(path, error=StateFileError).abort()

    @staticmethod
    def _make_directory(path: Path) -> None:
        try:
            make_dirs(path.parent)
        except OSError as e:
            raise StateFileError(
                f"{path}: cannot create its directory: {e.strerror}") from None

    def _load(self, path: Path) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise StateFileError(f"{self.path}: cannot read state file: {e.strerror}") from None
        except ValueError as e:
            raise StateFileError(f"{self.path}: state file is not valid JSON: {e}") from None
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(
                data.get("nics"), dict):
            raise StateFileError(f"{self.path}: not a nicwatch state file of version {VERSION}")
        nics: dict[str, dict[str, Any]] = {}
        bad = 0
        for key, entry in data["nics"].items():
            problem = entry_problem(key, entry)
            if problem is None:
                nics[key] = entry
                continue
            bad += 1
            if bad <= LOGGED_BAD_ENTRIES:
                log.warning("state_file_entry_dropped", path=str(self.path), key=str(key)[:64],
                            problem=problem)
        if bad:
            if bad > LOGGED_BAD_ENTRIES:
                log.warning("state_file_entries_dropped", path=str(self.path), count=bad)
            self._unsaved = True  # rewritten without them at the next poll
        return nics

    def save(self) -> None:
        if self.path is None:
            return
        body = json.dumps({"version": VERSION, "nics": self.nics}, indent=1, sort_keys=True)
        self._make_directory(self.path)
        write_atomic(self.path, body.encode(), error=StateFileError)

    def observe(self, samples: Sequence[Sample], now: float) -> list[IdentityChange]:
        changes: list[IdentityChange] = []
        dirty = False
        for s in samples:
            key = s.identity.perm_address
            if not key or not s.identity.pci_address:
                continue  # only NICs with a permanent MAC on a PCI function have an identity
            current = {"pci_address": s.identity.pci_address, "name": s.identity.device}
            known = self.nics.get(key)
            if known is None:
                self.nics[key] = {**current, "first_seen": now, "changes": {}}
                dirty = True
                continue
            for kind in KINDS:
                if known[kind] != current[kind]:
                    change = IdentityChange(key, kind, known[kind], current[kind])
                    changes.append(change)
                    log.warning("nic_identity_changed", perm_mac=key, kind=kind, old=change.old,
                                new=change.new)
                    known["changes"][kind] = known["changes"].get(kind, 0) + 1
                    known[kind] = current[kind]
                    dirty = True
        if dirty or self._unsaved:
            self._unsaved = True
            self.save()
            self._unsaved = False
        return changes

    def family(self, samples: Sequence[Sample]) -> ExtraFamily:
        series = []
        for s in sorted(samples, key=lambda s: s.identity.device):
            known = self.nics.get(s.identity.perm_address or "")
            if known is None or known["pci_address"] != s.identity.pci_address:
                continue
            for kind in KINDS:
                labels = (("device", s.identity.device), ("kind", kind))
                series.append((labels, float(known["changes"].get(kind, 0))))
        return metrics.extra(metrics.IDENTITY_CHANGES, tuple(series))


def state_file(config: Config) -> str | Path | None:
    """``state.file`` when given (an error if unusable, reported by IdentityState); else the
    first usable default directory; else None, said once: identity then lasts one run."""
    if config.state_file is not None:
        return config.state_file
    path, passed_over = default_state_file()
    if path is None:
        daemon_log.warning("state_file_disabled", tried=passed_over,
                           detail="no writable state directory: NIC identity changes are "
                           "counted only while this process runs; set --state.file or "
                           "STATE_DIRECTORY")
    else:
        daemon_log.info("state_file", path=str(path), passed_over=passed_over or None)
    return path


class IdentityConsumer(BaseConsumer):
    """The state file as a :class:`~nicwatch.consumers.Consumer`. A state file that cannot be
    written does not stop the daemon: the failure is logged when it starts and when it ends."""

    def __init__(self, state: IdentityState) -> None:
        self.state = state
        self._error: str | None = None
        self._samples: Sequence[Sample] = ()

    @classmethod
    def open(cls, config: Config, host: object = None,
             services: Services | None = None) -> IdentityConsumer:
        """Raises StateFileError when the state file is unusable (exit 2 at start).
        Provides the state directory (the state file's) to the consumers after it."""
        consumer = cls(IdentityState(state_file(config)))
        if services is not None:
            path = consumer.state.path
            services.state_directory = Path(path).parent if path is not None else None
        return consumer

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self._samples = result.samples
        try:
            self.state.observe(result.samples, time.time())
        except StateFileError as e:
            if self._error != str(e):
                daemon_log.error("state_file_failed", error=str(e))
            self._error = str(e)
        else:
            if self._error:
                daemon_log.info("state_file_recovered", path=str(self.state.path))
            self._error = None

    def families(self) -> list[ExtraFamily]:
        return [self.state.family(self._samples)]

