"""The vocabulary of driver tables: how a raw statistic name becomes a canonical series.

A table is data. Patterns are Python regular expressions matched in full against the
stripped raw name. Named groups become labels, except ``queue``, which is summed over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from nicwatch.model import Labels


@dataclass(frozen=True, slots=True)
class Rule:
    """Map raw names matching ``pattern`` to the canonical family ``metric``.

    ``labels`` are constant labels; ``width`` is the hardware counter width (32-bit
    counters are extended across wraps); ``scale`` converts the raw unit to the family's
    base unit (1e-6 for microseconds, 0.125 for bits -> bytes). ``evidence`` names the
    kernel source (file, function or table, kernel version) or documentation that says what
    the raw counter counts and in which unit; docs/metrics.md prints it next to the row.
    """

    pattern: str
    metric: str
    labels: Labels = ()
    width: int = 64
    scale: float = 1.0
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class QueueStat:
    """A per-queue raw name: ``pattern`` has a ``queue`` group; ``template`` formats the
    queue-less statistic name from the other named groups (``"rx_{name}"``)."""

    pattern: str
    template: str


@dataclass(frozen=True, slots=True)
class IrqName:
    """How a driver names the interrupts it requests (the action name /proc/interrupts and
    /sys/kernel/irq/<n>/actions show): ``pattern`` matched in full, its ``queue`` group the
    channel (rx queue) the interrupt serves; ``kind`` ``rxtx``, ``rx``, ``tx`` or
    ``other`` (the device's own: async events, mailbox, misc). ``evidence``: the driver
    function that builds the name."""

    pattern: str
    kind: str
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class NetlinkFill:
    """What a driver puts into one of the kernel's standard ethtool-netlink statistics.

    ``key`` is the netlink statistic as nicwatch names it (``pause.rx_frames``,
    ``eth-phy.SymbolErrorDuringCarrier``); ``raw`` the driver's own `ethtool -S` names the
    driver fills it from (their sum); ``metric`` the canonical family the value belongs to,
    which must be the family the driver table maps those raw names to (a test checks it),
    or ``None`` when no canonical family has that meaning (the value is then not exported).
    ``evidence``: the kernel function and version that shows it.
    """

    key: str
    raw: tuple[str, ...]
    metric: str | None
    evidence: str
    labels: Labels = ()


@dataclass(frozen=True, slots=True)
class SameRegister:
    """Raw names of one driver that read the same hardware register. At most one of them may
    feed a canonical family at a time: when several are present in one statistic set, only
    the first listed that is present is mapped (the others stay raw)."""

    names: tuple[str, ...]
    evidence: str


@dataclass(frozen=True, slots=True)
class VfDrop:
    """What a driver's ``ndo_get_vf_stats`` puts into one SR-IOV VF drop counter
    (``IFLA_VF_STATS_RX_DROPPED`` / ``_TX_DROPPED``; the kernel zero-fills whatever the
    driver leaves alone).

    ``meaning``: what the driver counts there, for docs/metrics.md and docs/sriov.md;
    ``evidence``: the driver function that fills it. ``updated`` False: the driver never
    writes it (always 0: the counter is absent). ``legacy_only``: counted only while the
    e-switch is in legacy mode and 0 in switchdev; exported only when the PF's devlink
    instance shows no VF representor ports (legacy known), absent otherwise. ``zero_unset``:
    0 on kernels where the driver does not update it and a count on kernels that fixed
    that: exported once a VF of the PF has it above zero.
    """

    meaning: str
    evidence: str
    updated: bool = True
    legacy_only: bool = False
    zero_unset: bool = False


@dataclass(frozen=True, slots=True)
class VfStats:
    """A driver's SR-IOV VF counters (``ndo_get_vf_stats``, named in ``evidence``): the
    kernel's VF counters are then the driver's measurements, zeros included. ``drops``:
    kernel statistic name (``rx_dropped``, ``tx_dropped``) -> what the driver puts there."""

    evidence: str
    drops: tuple[tuple[str, VfDrop], ...] = ()

    def drop(self, stat: str) -> VfDrop | None:
        return next((d for name, d in self.drops if name == stat), None)


# Words that make a raw statistic a gauge for any driver (a value that goes down by nature):
# a temperature, a level, a state, status or mode, a current value, a utilization. A name
# is split into words at anything but letters and digits; a table lists what is a gauge
# despite its name (``DriverTable.gauges``) or a counter despite it (``counters``).
GAUGE_WORDS = frozenset({
    "temperature", "temp", "level", "state", "status", "mode", "current", "utilization",
    "util", "percent", "pct", "available", "ifindex", "enabled",
})
_WORD = re.compile(r"[a-z0-9]+")


def gauge_by_name(name: str) -> bool:
    """Whether ``name`` says it is a gauge (see GAUGE_WORDS)."""
    return not GAUGE_WORDS.isdisjoint(_WORD.findall(name.lower()))


_GROUP = re.compile(r"\(\?P<(\w+)>")
_REGEX = re.compile(r"[()\[\]?*+{}|^$\\]")


def render(pattern: str, groups: Mapping[str, object]) -> str | None:
    """The raw name ``pattern`` matches with its named groups set to ``groups`` (the first
    alternative of a pattern written ``a|b``); None when the pattern names more than that
    (a character class or an alternation outside its named groups)."""
    out, i = [], 0
    for match in _GROUP.finditer(pattern):
        if match.start() < i:
            return None  # a group inside a group
        depth, j = 1, match.end()
        while depth and j < len(pattern):
            depth += {"(": 1, ")": -1}.get(pattern[j], 0) if pattern[j - 1] != "\\" else 0
            j += 1
        name = match.group(1)
        if name not in groups:
            return None
        out += [pattern[i:match.start()], "\0" + name + "\0"]
        i = j
    out.append(pattern[i:])
    text = "".join(out).split("|", 1)[0]
    if _REGEX.search(re.sub(r"\\.", "", text)):
        return None  # a character class, a repeat or a group left
    text = re.sub(r"\\(.)", r"\1", text)  # escaped characters stand for themselves
    name = re.sub("\0(\\w+)\0", lambda m: str(groups[m.group(1)]), text)
    return name if re.fullmatch(pattern, name) else None


@dataclass(frozen=True, slots=True)
class DriverTable:
    """Everything nicwatch knows about one driver's `ethtool -S` names.

    ``gauges``: raw names (patterns) that are not counters (levels, states, percentages:
    values that go down by nature), exported as the raw gauge family and never summed over
    queues; a name that says it is a gauge (``gauge_by_name``) is one without being listed,
    unless ``counters`` lists it (an event count such as mlx5 ``module_high_temp``, named
    after what it counts). ``width32``: raw counters that are 32 bits wide in hardware;
    ``queues``: how per-queue names are recognised; ``netlink``: how the driver fills the
    kernel's standard statistics (overrides of the driver-independent mapping in
    ``standard.py``); ``same_register``: raw names reading one hardware register; ``vf``:
    the driver's SR-IOV VF counters (None: no ``ndo_get_vf_stats`` known, the kernel
    zero-fills them); ``notes``: a sentence for docs/metrics.md; ``source``: the driver
    file(s) the table was read from.
    """

    driver: str
    rules: tuple[Rule, ...]
    gauges: tuple[str, ...] = ()
    width32: tuple[str, ...] = ()
    queues: tuple[QueueStat, ...] = ()
    notes: str = ""
    netlink: tuple[NetlinkFill, ...] = ()
    same_register: tuple[SameRegister, ...] = ()
    source: str = ""
    counters: tuple[str, ...] = ()
    vf: VfStats | None = None
    irqs: tuple[IrqName, ...] = ()
    rx_queue_packets: tuple[str, ...] = ()
    # What devlink, hwmon and the QoS tools show of the driver (looked up by driver name by
    # normalize/devlink.py, the hwmon source's options and the checks' fixes):
    # ``devlink_unreadable``: firmware "versions" the driver reports when it could not read
    # one (never compared); ``hwmon_one_per_chip``: the evidence that the driver registers
    # one hwmon device per chip, on one PF only ("": on every function);
    # ``trust_command``: the command that sets the port's trust (``{dev}``, ``{trust}``),
    # "": ``dcb apptrust``.
    devlink_unreadable: frozenset[str] = frozenset()
    hwmon_one_per_chip: str = ""
    trust_command: str = ""

    def raw_name(self, metric: str, **labels: object) -> str:
        """The driver's raw name for ``metric`` with ``labels`` (its rules' named groups and
        constant labels): the table's own spelling, for whoever must write what the driver
        shows (the demo). KeyError when no rule of the table has one."""
        for rule in self.rules:
            constant = dict(rule.labels)
            if rule.metric != metric or any(str(labels.get(k)) != v
                                             for k, v in constant.items()):
                continue
            groups = {k: v for k, v in labels.items() if k not in constant}
            if set(_GROUP.findall(rule.pattern)) != groups.keys():
                continue
            name = render(rule.pattern, groups)
            if name is not None:
                return name
        raise KeyError(f"{self.driver}: no raw name for {metric} {labels}")


# --- RDMA drivers: the port's hw_counters ------------------------------------------------


@dataclass(frozen=True, slots=True)
class HwCounter:
    """One driver hardware counter: ``metric`` the family it feeds (None: raw, no family
    has its meaning), its width (32-bit counters wrap and are extended), what it counts on
    this driver and the kernel source saying so. ``value``: not a counter (a rate, a level).
    ``optional``: shown only when enabled (mlx5 ``IB_STAT_FLAG_OPTIONAL``: netlink only,
    never in ``hw_counters/``)."""

    name: str
    metric: str | None
    meaning: str
    evidence: str
    width: int = 64
    value: bool = False
    optional: bool = False


@dataclass(frozen=True, slots=True)
class RdmaDriver:
    """Everything nicwatch knows about one RDMA driver's ``hw_counters``: ``key`` is the
    table's name (``RdmaPort.driver``), ``note`` a sentence for docs/metrics.md."""

    key: str
    title: str
    counters: tuple[HwCounter, ...]
    note: str = ""
    _index: dict[str, HwCounter] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {c.name: c for c in self.counters})

    def get(self, name: str) -> HwCounter | None:
        return self._index.get(name)

    def name_of(self, metric: str) -> str:
        """The driver's (first) counter name for ``metric``; KeyError when it has none."""
        for counter in self.counters:
            if counter.metric == metric:
                return counter.name
        raise KeyError(f"{self.key}: no counter for {metric}")
