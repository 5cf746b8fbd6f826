"""The receive path in procfs and sysfs: each interface's interrupts, where they go, and how
the CPUs that serve them keep up.

Everything is read under the sysfs and procfs roots (``--path.sysfs``, ``--path.procfs``):

=========================================================  ================================
``<sysfs>/bus/pci/devices/<bdf>/msi_irqs/<n>``              the interrupt numbers of a PCI
                                                            function (MSI/MSI-X), else its
                                                            legacy ``irq`` file
``<sysfs>/kernel/irq/<n>/actions``                          the name(s) an interrupt was
                                                            requested under (4.17+)
``<sysfs>/kernel/irq/<n>/per_cpu_count``                    interrupts per possible CPU,
                                                            ``"0,24361"`` (4.17+)
``<procfs>/interrupts``                                     both, for every interrupt, where
                                                            /sys/kernel/irq is missing
``<procfs>/irq/<n>/smp_affinity_list``                      CPUs it may go to
``<procfs>/irq/<n>/effective_affinity_list``                CPUs it is delivered to (4.13+)
``<sysfs>/class/net/<if>/queues/rx-<q>/rps_cpus``           RPS mask, hex words
``<procfs>/net/softnet_stat``                               per CPU: processed, dropped,
                                                            time_squeeze, ..., received_rps,
                                                            flow_limit_count, ..., CPU (5.10+)
``<sysfs>/devices/system/node/node<k>/cpulist``             CPUs of each NUMA node
``<sysfs>/devices/system/cpu/possible``                     the CPUs per_cpu_count counts
=========================================================  ================================

The counts (per_cpu_count, softnet_stat) are read every poll (on the live /sys each
per_cpu_count kept open and re-read with pread); which interrupts an interface has, its RPS
masks and the NUMA nodes every ``refresh`` seconds; an interrupt's name and affinities when
it is new, when its interface's interrupt set changed, as soon as it was taken on a CPU
outside the effective affinity read last (irqbalance moved it), and otherwise every
``safety`` seconds (AFFINITY_SAFETY). /proc/interrupts lists every interrupt
of the host for every online CPU: on a 256-CPU host it is megabytes, so it is read only
where /sys/kernel/irq is missing (benchmarks/rxpath.py measures both).
"""

from __future__ import annotations

import functools
import os
import re
import resource
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

from nicwatch.model import (
    HostReading,
    Irq,
    NetClass,
    NetdevQueues,
    Reading,
    ReceivePath,
    SoftnetCpu,
)
from nicwatch.sources import Poll, SourceOptions
from nicwatch.sources.sysfs import (
    MAX_ATTRIBUTE_BYTES,
    OpenAttributes,
    descriptor_share,
    read_attribute,
    read_records,
)
from nicwatch.sources.sysfs_pci import parse_cpulist

MAX_INTERRUPTS_BYTES = 64 << 20  # /proc/interrupts: 256 CPUs x 2,000 lines is ~6 MB
# An interrupt's name and affinities are re-read when its interface's interrupt set changes,
# when it is taken outside its effective affinity, and otherwise every AFFINITY_SAFETY
# seconds: they change only when written (irqbalance, an operator, a driver re-requesting
# the vector) or when a CPU goes offline, and a move that carries traffic shows at once in
# the counts; an idle queue's new affinity shows within this period.
AFFINITY_SAFETY = 300.0
MAX_SOFTNET_BYTES = 16 << 20  # softnet_stat: 135 bytes a CPU, 8,192 CPUs is 1.1 MB
PAGE_SIZE = resource.getpagesize()  # the most a sysfs show() prints
_MASK_WORD = re.compile(r"[0-9a-fA-F]{1,8}")
_NODE_DIR = re.compile(r"node(\d+)")


# --------------------------------------------------------------------------- parsers


def parse_cpu_mask(text: str) -> tuple[int, ...]:
    """A CPU bitmap as sysfs prints it (``rps_cpus``: 32-bit hex words, most significant
    first, comma-separated: ``"00000000,00000003"``) as sorted CPU numbers."""
    cpus: list[int] = []
    words = text.strip().split(",")
    for position, word in enumerate(reversed(words)):
        if _MASK_WORD.fullmatch(word) is None:
            raise ValueError("not a CPU mask")
        bits = int(word, 16)
        base = 32 * position
        while bits:
            low = bits & -bits
            cpus.append(base + low.bit_length() - 1)
            bits ^= low
    return tuple(sorted(cpus))


def parse_per_cpu_count(text: str, possible: Sequence[int]) -> tuple[int, ...]:
    """``per_cpu_count`` (one count per possible CPU, comma-separated) as counts indexed by
    CPU number (``possible``: the CPU each position counts; a gap reads 0)."""
    values = tuple(map(int, text.split(",")))  # C-level: a 256-CPU line is 256 ints
    if len(values) != len(possible):
        raise ValueError(f"{len(values)} counts for {len(possible)} possible CPUs")
    if possible and possible[-1] == len(possible) - 1:  # 0..n-1, as on nearly every host
        return values
    out = [0] * (max(possible, default=-1) + 1)
    for cpu, value in zip(possible, values, strict=True):
        out[cpu] = value
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Interrupts:
    """The lines of /proc/interrupts asked for: irq -> (counts by CPU number, name)."""

    cpus: tuple[int, ...]  # the CPU of each count column (online CPUs, from the header)
    lines: Mapping[int, tuple[tuple[int, ...], str | None]]


def parse_interrupts(text: str, wanted: Iterable[int] | None = None) -> Interrupts:
    """/proc/interrupts (kernel/irq/proc.c show_interrupts): a header naming the online
    CPUs (``CPU0 CPU1 ...``), then per interrupt ``<irq>:`` and one count per online CPU,
    the chip name, the hardware irq and flow (``5-edge``) and, after two spaces, the
    action names (``, ``-separated). Lines of named interrupts (NMI:, LOC:, ...) and of
    numbers not in ``wanted`` (None: all) are skipped without being split."""
    head, _, body = text.partition("\n")
    cpus = tuple(int(word[3:]) for word in head.split() if word.startswith("CPU"))
    if not cpus:
        raise ValueError("no CPU header line")
    width = max(cpus) + 1
    columns = len(cpus)
    want = None if wanted is None else frozenset(wanted)
    out: dict[int, tuple[tuple[int, ...], str | None]] = {}
    for line in body.splitlines():
        number, sep, rest = line.partition(":")
        number = number.strip()
        if not sep or not number.isdigit():
            continue
        irq = int(number)
        if want is not None and irq not in want:
            continue
        fields = rest.split()
        counts = [int(v) for v in fields[:columns]]
        if len(counts) < columns:
            raise ValueError(f"interrupt {irq}: {len(counts)} counts for {columns} CPUs")
        # the actions follow the last two spaces ("  %s", then ", %s" each): after the
        # chip, the hardware irq and the flow (and, with GENERIC_IRQ_SHOW_LEVEL, the level)
        before, gap, name = rest.rstrip().rpartition("  ")
        if not gap or len(before.split()) <= columns:
            name = ""
        if cpus == tuple(range(columns)):
            by_cpu = tuple(counts)
        else:
            spread = [0] * width
            for cpu, value in zip(cpus, counts, strict=True):
                spread[cpu] = value
            by_cpu = tuple(spread)
        out[irq] = (by_cpu, name.strip() or None)
    return Interrupts(cpus, MappingProxyType(out))


def parse_softnet(text: str, online: Sequence[int] = ()) -> tuple[SoftnetCpu, ...]:
    """/proc/net/softnet_stat (net/core/net-procfs.c softnet_seq_show): one line per online
    CPU of hex words: processed, dropped, time_squeeze, 5 zeros, 0, received_rps,
    flow_limit_count and (5.10+) backlog length, CPU number, (6.8+) input and process queue
    lengths. Without the CPU column a line is the next CPU of ``online``."""
    fixed = _parse_softnet_fixed(text)
    if fixed is not None:
        return fixed
    out: list[SoftnetCpu] = []
    for position, line in enumerate(text.splitlines()):
        words = line.split()
        n = len(words)
        if not n:
            continue
        if n < 3:
            raise ValueError(f"softnet_stat line {position + 1}: {n} columns")
        # only the columns kept are converted (6 of 13-15 words: a third of the cost)
        if n >= 13:
            cpu = int(words[12], 16)
        elif position < len(online):
            cpu = online[position]
        else:
            raise ValueError(f"softnet_stat line {position + 1}: no CPU column and no "
                             "online CPU list")
        out.append(SoftnetCpu(cpu, (
            int(words[0], 16), int(words[1], 16), int(words[2], 16),
            int(words[9], 16) if n > 9 else None,
            int(words[10], 16) if n > 10 else None)))
    return tuple(out)


# A pure memo of a bounded key (docs/architecture.md, Caches).
@functools.lru_cache(maxsize=16)
def _separators(words: int, lines: int) -> str:
    """What every 9th character of a fixed-width softnet_stat of ``lines`` lines is."""
    return (" " * (words - 1) + "\n") * lines


def _parse_softnet_fixed(text: str) -> tuple[SoftnetCpu, ...] | None:
    """softnet_stat as the kernel prints it since 5.10: every word ``%08x`` of a u32, so
    every line is the same ``9 * words`` characters with the CPU column (13 or 15 words).
    Checked (every 9th character a space, each line's last a newline), then converted in
    C: ``bytes.fromhex`` (which skips whitespace) and one ``struct.iter_unpack`` (about a
    fifth of splitting and converting each line, benchmarks/rxpath.py). None when the text
    is not so (an older kernel, a hand-made file): the caller splits it line by line."""
    first = text.find("\n")
    width = (first if first >= 0 else len(text)) + 1
    words = width // 9
    if width % 9 or words not in (13, 15):
        return None
    body = text if text.endswith("\n") else text + "\n"
    lines, rest = divmod(len(body), width)
    if rest:
        return None
    if body[8::9] != _separators(words, lines):
        return None
    try:
        raw = bytes.fromhex(body)
    except ValueError:
        return None
    return tuple(SoftnetCpu(row[12], (row[0], row[1], row[2], row[9], row[10]))
                 for row in struct.iter_unpack(f">{words}I", raw))


# --------------------------------------------------------------------------- the source


@dataclass(slots=True)
class _IrqState:
    name: str | None
    affinity: tuple[int, ...] | None
    effective: tuple[int, ...] | None
    read_at: float = 0.0  # when the name and the affinities were read
    path: str = ""  # its per_cpu_count
    raw: bytes | None = None  # the last per_cpu_count read, stripped
    counts: tuple[int, ...] | None = None
    outside: int | None = None  # interrupts counted outside ``effective`` at the last poll
    # ``raw`` around the fields of the ``effective`` CPUs (in CPU order): the text before
    # the first, between each two, after the last; None until a whole parse made them
    segments: tuple[bytes, ...] | None = None
    inside_only: bool = False  # since the last read, counts moved on ``effective`` CPUs only

    def set_affinity(self, affinity: tuple[int, ...] | None,
                     effective: tuple[int, ...] | None) -> None:
        if effective != self.effective:
            self.outside = None  # counted against the new affinity from now on
            self.segments = None
        self.affinity, self.effective = affinity, effective


@dataclass(slots=True)
class _Topology:
    """What an interface's receive path looks like, read every ``refresh`` seconds."""

    read_at: float
    msi: tuple[int, ...]
    irqs_from: str
    rps: tuple[tuple[int, tuple[int, ...]], ...]


class InterruptSource:
    """Interrupts, RPS masks and softnet lines of every polled interface as a
    :class:`~nicwatch.sources.Source` (the ``rxpath`` part of each Reading; the whole
    softnet table goes to ``poll.host["softnet"]``). Reads the NAPI interrupts the
    netdev_genl source put before it. Files present but unreadable are one error per
    interface (or one for the source, for host-wide files)."""

    name = "rxpath"
    fills: ClassVar[frozenset[str]] = frozenset({"rxpath", "softnet"})
    needs: ClassVar[frozenset[str]] = frozenset({"queues"})

    def __init__(self, sysfs: str | os.PathLike[str] = "/sys",
                 procfs: str | os.PathLike[str] = "/proc", refresh: float = 0.0,
                 safety: float = AFFINITY_SAFETY, keep_open: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``refresh``: seconds the layout (interrupt lists, RPS masks, NUMA nodes) is
        reused; ``safety``: seconds an interrupt's name and affinities are reused while its
        interface's interrupt set is unchanged and it is not taken outside them;
        ``keep_open``: the per_cpu_count files kept open and re-read with pread (the live
        /sys only: a fixture file replaced by a rename keeps its old text behind an open
        descriptor)."""
        self.sysfs = Path(sysfs)
        self.procfs = Path(procfs)
        self.refresh = refresh
        self.safety = safety
        self._clock = clock
        self._files = OpenAttributes(descriptor_share(4)) if keep_open else None
        self._irq_sets: dict[tuple[str, str | None, int | None], tuple[int, ...]] = {}
        self._topology: dict[tuple[str, str | None], _Topology] = {}
        self._irqs: dict[int, _IrqState] = {}
        self._host_at: float | None = None
        self._cpu_nodes: Mapping[int, int] = MappingProxyType({})
        self._possible: tuple[int, ...] = ()
        self._online: tuple[int, ...] = ()
        self._sys_irq: bool | None = None  # /sys/kernel/irq/<n>/per_cpu_count readable

    @classmethod
    def open(cls, options: SourceOptions) -> InterruptSource | None:
        if not options.receive_path:
            return None
        return cls(options.sysfs, options.procfs, options.rxpath_refresh,
                   keep_open=os.path.realpath(options.sysfs) == "/sys")

    def close(self) -> None:
        if self._files is not None:
            self._files.close_all()

    # ------------------------------------------------------------ host-wide

    def _cpus(self, name: str) -> tuple[int, ...]:
        text, _ = read_attribute(self.sysfs / "devices" / "system" / "cpu" / name)
        try:
            return parse_cpulist(text) if text else ()
        except ValueError:
            return ()

    def _read_host(self, now: float) -> None:
        if self._host_at is not None and now - self._host_at < self.refresh * 0.9:
            return
        self._host_at = now
        self._possible = self._cpus("possible")
        self._online = self._cpus("online")
        nodes: dict[int, int] = {}
        base = self.sysfs / "devices" / "system" / "node"
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            entries = []
        for entry in entries:
            match = _NODE_DIR.fullmatch(entry)
            if match is None:
                continue
            text, _ = read_attribute(base / entry / "cpulist")
            try:
                cpus = parse_cpulist(text) if text else ()
            except ValueError:
                continue
            for cpu in cpus:
                nodes[cpu] = int(match.group(1))
        if nodes != dict(self._cpu_nodes):
            self._cpu_nodes = MappingProxyType(nodes)

    def _read_softnet(self, poll: Poll) -> dict[int, SoftnetCpu]:
        # read to its end: one read() of this seq_file stops at a page (30 CPUs' lines)
        text, problem = read_records(self.procfs / "net" / "softnet_stat", MAX_SOFTNET_BYTES)
        if problem is not None:
            poll.error("", self.name, "invalid", f"net/softnet_stat: {problem}")
        if text is None:
            return {}
        try:
            table = parse_softnet(text, self._online)
        except ValueError as e:
            poll.error("", self.name, "parse", f"net/softnet_stat: {e}")
            return {}
        poll.put_host(HostReading.softnet, table)
        return {row.cpu: row for row in table}

    # ------------------------------------------------------------ per interface

    def _read_topology(self, nc: NetClass, now: float) -> _Topology:
        msi: tuple[int, ...] = ()
        sources = []
        if nc.pci_address:
            # strings, not Paths: a Path per file cost more than reading it
            function = f"{self.sysfs}/bus/pci/devices/{nc.pci_address}"
            try:
                msi = tuple(sorted(int(n) for n in os.listdir(f"{function}/msi_irqs")
                                   if n.isdigit()))
            except OSError:
                msi = ()
            if msi:
                sources.append("msi_irqs")
            else:
                text, _ = read_attribute(f"{function}/irq")
                if text and text.isdigit() and int(text) > 0:
                    msi = (int(text),)
                    sources.append("irq")
        rps = []
        queues = f"{self.sysfs}/class/net/{nc.name}/queues"
        try:
            names = os.listdir(queues)
        except OSError:
            names = []
        for entry in names:
            if not entry.startswith("rx-") or not entry[3:].isdigit():
                continue
            text, _ = read_attribute(f"{queues}/{entry}/rps_cpus")
            try:
                cpus = parse_cpu_mask(text) if text else ()
            except ValueError:
                continue
            if cpus:
                rps.append((int(entry[3:]), cpus))
        return _Topology(now, msi, "+".join(sources), tuple(sorted(rps)))

    def _irq_state(self, irq: int, changed: bool, now: float,
                   problems: list[str]) -> _IrqState:
        """The interrupt's state, its name and affinities read again when it is new, when
        its interface's interrupt set ``changed``, or after ``safety`` seconds."""
        state = self._irqs.get(irq)
        if state is None or changed or now - state.read_at >= self.safety * 0.9:
            name = None
            if self._sys_irq is not False:
                text, _ = read_attribute(f"{self.sysfs}/kernel/irq/{irq}/actions")
                name = text
            affinity, effective = self._affinity(irq, problems)
            if state is None:
                state = _IrqState(name, affinity, effective,
                                  path=f"{self.sysfs}/kernel/irq/{irq}/per_cpu_count")
            else:
                state.name = name or state.name
                state.set_affinity(affinity, effective)
            state.read_at = now
            self._irqs[irq] = state
        return state

    def _affinity(self, irq: int, problems: list[str]
                  ) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        out: list[tuple[int, ...] | None] = []
        for name in ("smp_affinity_list", "effective_affinity_list"):
            text, problem = read_attribute(f"{self.procfs}/irq/{irq}/{name}")
            if problem is not None and problem != "empty":
                problems.append(f"irq/{irq}/{name}: {problem}")
            try:
                out.append(parse_cpulist(text) if text else None)
            except ValueError:
                problems.append(f"irq/{irq}/{name}: not a CPU list")
                out.append(None)
        return out[0], out[1]

    def _read_counts(self, irqs: Sequence[int], problems: list[str]) -> None:
        """Every interrupt's per-CPU counts: /sys/kernel/irq/<n>/per_cpu_count, or (when
        that is missing, or the kernel cut it at a page) the lines of /proc/interrupts for
        them."""
        if self._sys_irq is None:
            self._sys_irq = (self.sysfs / "kernel" / "irq").is_dir()
        if self._sys_irq:
            files = self._files
            truncated: list[int] = []
            for irq in irqs:
                state = self._irqs[irq]
                # kept open: a pread at offset 0 re-runs show(), without the open and close
                data = None if files is None else files.read_bytes(state.path)
                if data is not None and 0 < len(data) <= MAX_ATTRIBUTE_BYTES:
                    data = data.strip()
                else:  # not kept open, or what is wrong with it is said by read_attribute
                    text, problem = read_attribute(state.path)
                    if text is None:
                        if problem is not None:
                            problems.append(f"kernel/irq/{irq}/per_cpu_count: {problem}")
                        state.counts = state.raw = state.segments = None
                        continue
                    data = text.encode()
                if data != state.raw:
                    if len(data) >= PAGE_SIZE - 1 and \
                            data.count(b",") + 1 < len(self._possible):
                        # per_cpu_count_show stops at a page (sysfs_emit_at): on a host of
                        # many CPUs with large counts its end, maybe half a number, is lost
                        truncated.append(irq)
                        state.raw = state.segments = None
                        continue
                    try:
                        _update_counts(state, data, self._possible)
                    except ValueError as e:
                        problems.append(f"kernel/irq/{irq}/per_cpu_count: {e}")
                        state.counts = state.raw = state.segments = None
                        state.inside_only = False
                else:
                    state.inside_only = True  # nothing moved
            if truncated:
                self._read_proc_counts(truncated, problems)
            return
        self._read_proc_counts(irqs, problems)

    def _read_proc_counts(self, irqs: Sequence[int], problems: list[str]) -> None:
        """The lines of /proc/interrupts for ``irqs`` (one record per interrupt, however
        many CPUs: never cut)."""
        try:
            with open(self.procfs / "interrupts", "rb") as f:
                data = f.read(MAX_INTERRUPTS_BYTES + 1)
        except OSError as e:
            problems.append(f"interrupts: {e.strerror or e}")
            return
        if len(data) > MAX_INTERRUPTS_BYTES:
            problems.append(f"interrupts: larger than {MAX_INTERRUPTS_BYTES} bytes")
            return
        try:
            table = parse_interrupts(data.decode("utf-8", "replace"), irqs)
        except ValueError as e:
            problems.append(f"interrupts: {e}")
            return
        for irq in irqs:
            line = table.lines.get(irq)
            state = self._irqs[irq]
            state.inside_only = False
            state.counts = None if line is None else line[0]
            if line is not None and line[1] is not None:
                state.name = line[1]

    def read(self, poll: Poll) -> None:
        now = self._clock()
        self._read_host(now)
        softnet = self._read_softnet(poll)
        wanted: list[tuple[NetClass, _Topology, tuple[int, ...], str, bool]] = []
        topologies: dict[tuple[str, str | None], _Topology] = {}
        irq_sets: dict[tuple[str, str | None, int | None], tuple[int, ...]] = {}
        for nc in poll.each():
            key = (nc.name, nc.pci_address)
            topo = self._topology.get(key)
            fresh = topo is None or now - topo.read_at >= self.refresh * 0.9
            if fresh:
                topo = self._read_topology(nc, now)
            assert topo is not None
            topologies[key] = topo
            napi = _napi_irqs(poll.get(nc.name, Reading.queues))
            irqs = tuple(sorted(set(topo.msi) | set(napi)))
            sources = topo.irqs_from
            if set(napi) - set(topo.msi):
                sources = "+".join(filter(None, (sources, "napi")))
            # a new ifindex is a new device (a driver reload) even with the same numbers
            set_key = (nc.name, nc.pci_address, nc.ifindex)
            irq_sets[set_key] = irqs
            changed = self._irq_sets.get(set_key) != irqs
            if irqs or topo.rps:
                wanted.append((nc, topo, irqs, sources, changed))
        self._topology = topologies
        self._irq_sets = irq_sets
        problems_by_device: dict[str, list[str]] = {}
        for nc, _topo, irqs, _sources, changed in wanted:
            problems = problems_by_device.setdefault(nc.name, [])
            for irq in irqs:
                self._irq_state(irq, changed, now, problems)
        every = sorted({irq for _, _, irqs, _, _ in wanted for irq in irqs})
        shared: list[str] = []
        self._read_counts(every, shared)
        if shared:
            poll.error("", self.name, "invalid", "; ".join(shared))
        for nc, topo, irqs, sources, _fresh in wanted:
            problems = problems_by_device[nc.name]
            out = []
            for irq in irqs:
                state = self._irqs[irq]
                if _moved(state):  # taken outside the effective affinity read last
                    state.set_affinity(*self._affinity(irq, problems))
                    state.outside = None  # counted against the new affinity from now on
                    state.read_at = now
                out.append(Irq(irq, state.name, state.counts, state.affinity, state.effective))
            serving = _serving(out, topo.rps)
            poll.put(nc.name, Reading.rxpath, ReceivePath(
                tuple(out), sources, topo.rps,
                tuple(softnet[cpu] for cpu in serving if cpu in softnet), self._cpu_nodes))
            if problems:
                poll.error(nc.name, self.name, "invalid", "; ".join(problems))
        live = {irq for _, _, irqs, _, _ in wanted for irq in irqs}
        for irq in [i for i in self._irqs if i not in live]:
            gone = self._irqs.pop(irq)
            if self._files is not None:
                self._files.close(gone.path)


def _napi_irqs(queues: NetdevQueues | None) -> tuple[int, ...]:
    if queues is None or not queues.napis:
        return ()
    return tuple(n.irq for n in queues.napis if n.irq is not None)


def _update_counts(state: _IrqState, data: bytes, possible: Sequence[int]) -> None:
    """``state.counts`` from a new per_cpu_count text (``data``, stripped). When the
    interrupt was taken only on its effective CPUs since the last read (the usual case),
    only their counts are converted: the rest of the text must equal the last one's
    (``state.segments``, checked with C-level ``startswith``/``endswith`` at the fields'
    new offsets), instead of one int() per CPU or a split of every field
    (benchmarks/rxpath.py). Raises ValueError for a text that is not one count per possible
    CPU."""
    segments, counts = state.segments, state.counts
    state.raw, state.inside_only = data, False
    if segments is not None and counts is not None and len(segments) == 2 and state.effective:
        # one effective CPU, the usual case: the counts rebuilt with C-level slices
        head, tail = segments
        if data.startswith(head):
            pos = len(head)
            end = data.find(b",", pos)
            if end < 0:
                end = len(data)
            if len(data) - end == len(tail) and data.endswith(tail):
                cpu = state.effective[0]
                state.counts = counts[:cpu] + (int(data[pos:end]),) + counts[cpu + 1:]
                state.inside_only = True
                return
    elif segments is not None and counts is not None and state.effective:
        cpus = sorted(state.effective)
        new = list(counts)
        pos = 0
        for cpu, segment in zip(cpus, segments, strict=False):
            if not data.startswith(segment, pos):
                break
            pos += len(segment)
            end = data.find(b",", pos)
            if end < 0:
                end = len(data)
            new[cpu] = int(data[pos:end])
            pos = end
        else:
            tail = segments[-1]
            if len(data) - pos == len(tail) and data.endswith(tail):
                state.counts, state.inside_only = tuple(new), True
                return
    state.counts = parse_per_cpu_count(data.decode("ascii"), possible)
    state.segments = _segments(data, state.effective, len(state.counts))


def _segments(data: bytes, effective: tuple[int, ...] | None,
              width: int) -> tuple[bytes, ...] | None:
    """``data`` cut around the fields of the ``effective`` CPUs (see _IrqState.segments),
    when each CPU's count is at its own position (possible CPUs 0..n-1)."""
    parts = data.split(b",")
    if not effective or len(parts) != width or max(effective) >= width:
        return None
    out = []
    start = 0  # the first field not yet in a segment
    for cpu in sorted(effective):
        segment = b",".join(parts[start:cpu])
        if cpu > start:
            segment += b","  # the comma after the last field in between
        if start:
            segment = b"," + segment  # the comma after the effective CPU before
        out.append(segment)
        start = cpu + 1
    out.append(b"," + b",".join(parts[start:]) if start < len(parts) else b"")
    return tuple(out)


def _moved(state: _IrqState) -> bool:
    """Whether the interrupt was taken on a CPU outside its effective affinity since the
    last poll. An interrupt that irqbalance moved keeps its old CPU's count forever, so
    only growth outside is news; the sum of all counts minus those of the effective CPUs
    costs a C-level sum, not a walk over every CPU, and none at all when the counts moved
    on the effective CPUs only."""
    counts = state.counts
    if counts is None or not state.effective:
        state.outside = None
        return False
    if state.inside_only and state.outside is not None:
        return False
    outside = sum(counts) - sum(counts[c] for c in state.effective if c < len(counts))
    last, state.outside = state.outside, outside
    return last is not None and outside != last


def _serving(irqs: Sequence[Irq], rps: Sequence[tuple[int, tuple[int, ...]]]) -> list[int]:
    """The CPUs that serve an interface: its interrupts' effective affinity (where that is
    unknown, the CPUs that took them) and its RPS CPUs."""
    cpus: set[int] = set()
    for irq in irqs:
        if irq.effective:
            cpus.update(irq.effective)
        elif irq.counters:
            cpus.update(cpu for cpu, n in enumerate(irq.counters) if n)
    for _, targets in rps:
        cpus.update(targets)
    return sorted(cpus)
