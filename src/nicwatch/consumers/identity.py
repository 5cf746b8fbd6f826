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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from nicwatch.snapshot.atomicfile import AtomicFile, write_atomic
from nicwatch import metrics
from nicwatch.model import ExtraFamily, Sample

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config

log = structlog.get_logger("nicwatch.identity")
daemon_log = structlog.get_logger("nicwatch")  # state file failures, as the daemon logged them
VERSION = 1
KINDS = ("pci_address", "name")


class StateFileError(Exception):
    """The state file cannot be read or written; the message names the path."""


@dataclass(frozen=True, slots=True)
class IdentityChange:
    perm_address: str
    kind: str  # "pci_address" or "name"
    old: str
    new: str


class IdentityState:
    """The state file and what it says; ``observe`` is called once per poll."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.nics: dict[str, dict] = self._load()
        self._unsaved = False  # a change the last save() could not write: retried
        self._check_writable()

    def _check_writable(self) -> None:
        """Refuse a state file that cannot be written at start, not at the first change."""
        self._make_directory()
        AtomicFile(self.path, error=StateFileError).abort()

    def _make_directory(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StateFileError(f"{self.path}: cannot create its directory: {e.strerror}") from None

    def _load(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise StateFileError(f"{self.path}: cannot read state file: {e.strerror}") from None
        except ValueError as e:
            raise StateFileError(f"{self.path}: state file is not valid JSON: {e}") from None
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(
                data.get("nics"), dict):
            raise StateFileError(f"{self.path}: not a nicwatch state file of version {VERSION}")
        return data["nics"]

    def save(self) -> None:
        body = json.dumps({"version": VERSION, "nics": self.nics}, indent=1, sort_keys=True)
        self._make_directory()
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


class IdentityConsumer:
    """The state file as a :class:`~nicwatch.consumers.Consumer`. A state file that cannot be
    written does not stop the daemon: the failure is logged when it starts and when it ends."""

    def __init__(self, state: IdentityState) -> None:
        self.state = state
        self._error: str | None = None
        self._samples: Sequence[Sample] = ()

    @classmethod
    def open(cls, config: Config, host: object = None) -> IdentityConsumer:
        """Raises StateFileError when the state file is unusable (exit 2 at start)."""
        return cls(IdentityState(config.state_file))

    def observe(self, result: PollResult) -> None:
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

    def reconfigure(self, config: Config) -> None:
        pass
