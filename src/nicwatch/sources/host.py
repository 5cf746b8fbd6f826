"""Provenance of a reading: which host, which boot, which kernel.

Everything is read under a procfs root (default ``/proc``), so tests use fixture trees:

* ``sys/kernel/random/boot_id``: a random UUID the kernel draws at every boot. It is what
  tells two boots apart; counters restart at boot, so readings of different boots must
  never be subtracted.
* ``stat`` line ``btime``: the boot time in whole seconds since the epoch. It is derived
  from the wall clock, so it moves when the clock is stepped (NTP early in boot): good for
  people, not as an identity. psutil's ``boot_time()`` reads the same line, but through the
  process-wide ``psutil.PROCFS_PATH``, which cannot be rooted per call.
* ``sys/kernel/hostname`` (the UTS hostname), ``sys/kernel/osrelease`` (``uname -r``) and
  ``sys/kernel/version`` (``uname -v``, the build).

A file that is missing or unreadable gives ``None``: absent, never a made-up value.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import psutil

from nicwatch.model import HostReading
from nicwatch.sources import Poll, SourceOptions


@dataclass(frozen=True, slots=True)
class HostInfo:
    hostname: str | None
    boot_id: str | None
    boot_time: float | None  # seconds since the epoch (btime, whole seconds)
    kernel_release: str | None
    kernel_version: str | None


def _text(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None


def _btime(stat: str | None) -> float | None:
    for line in (stat or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "btime":
            try:
                return float(int(value.strip()))
            except ValueError:
                return None
    return None


def read_host(procfs: str | os.PathLike[str] = "/proc") -> HostInfo:
    root = Path(procfs)
    kernel = root / "sys" / "kernel"
    return HostInfo(
        hostname=_text(kernel / "hostname"),
        boot_id=_text(kernel / "random" / "boot_id"),
        boot_time=_btime(_text(root / "stat")),
        kernel_release=_text(kernel / "osrelease"),
        kernel_version=_text(kernel / "version"),
    )


def read_softirq_seconds() -> tuple[float, ...]:
    """Cumulative softirq seconds per CPU, indexed by CPU number (psutil, /proc/stat)."""
    return tuple(t.softirq for t in psutil.cpu_times(percpu=True))


def stat_softirq_seconds(stat: str, ticks_per_second: float) -> tuple[float, ...]:
    """The softirq column (the 7th value: user nice system idle iowait irq softirq) of each
    ``cpuN`` line of a /proc/stat text, in seconds, indexed by CPU number (a CPU without a
    line, offline, reads 0.0); ``ticks_per_second``: USER_HZ, the unit of the file."""
    found: dict[int, float] = {}
    for line in stat.splitlines():
        words = line.split()
        if len(words) > 7 and words[0].startswith("cpu") and words[0][3:].isdigit():
            found[int(words[0][3:])] = int(words[7]) / ticks_per_second
    return tuple(found.get(cpu, 0.0) for cpu in range(max(found) + 1)) if found else ()


def read_tree_softirq_seconds(procfs: str | os.PathLike[str]) -> tuple[float, ...]:
    """:func:`stat_softirq_seconds` of ``<procfs>/stat`` (a procfs tree given with
    --path.procfs, or the demo's simulated one); a tree without the file reads this host's
    (psutil), as before the tree's file was read."""
    text = _text(Path(procfs) / "stat")
    if text is None:
        return read_softirq_seconds()
    return stat_softirq_seconds(text, os.sysconf("SC_CLK_TCK"))


class SoftirqSource:
    """The per-CPU softirq read as a :class:`~nicwatch.sources.Source`: host-wide, so it goes
    to the host part ``softirq_seconds`` for the softirq-load consumer."""

    name = "host"
    fills: ClassVar[frozenset[str]] = frozenset({"softirq_seconds"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, read: Callable[[], tuple[float, ...]] = read_softirq_seconds) -> None:
        self._read = read

    @classmethod
    def open(cls, options: SourceOptions) -> SoftirqSource:
        if os.path.realpath(options.procfs) == "/proc":
            return cls()
        return cls(lambda: read_tree_softirq_seconds(options.procfs))

    def read(self, poll: Poll) -> None:
        poll.put_host(HostReading.softirq_seconds, self._read())

    def close(self) -> None:
        pass
