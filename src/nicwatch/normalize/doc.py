"""Generate docs/metrics.md from the metric contract (nicwatch.metrics) and the source tables.

    python -m nicwatch.normalize.doc > docs/metrics.md

A test compares the committed file with this output, so the document cannot drift from the
code. Patterns are shown in a readable form: ``(?P<priority>[0-7])`` becomes ``<priority>``,
top-level alternatives are listed separately.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from nicwatch.metrics import (
    CONSUMER_FAMILIES,
    COUNTERS,
    DEFAULT_DETAIL,
    DETAIL_LEVELS,
    DETAIL_TEXT,
    EXPORTED,
    FABRIC_FAMILIES,
    FAMILIES,
    FULL,
    GAUGES,
    PARTIAL,
    PLATFORM_COUNTERS,
    QSTATS_COUNTERS,
    QUEUE_COUNTER,
    RATED_COUNTERS,
    RAW_COUNTER,
    RAW_GAUGE,
    RDMA_COUNTERS,
    RDMA_GAUGES,
    RDMA_RAW_COUNTER,
    RXPATH_COUNTERS,
    SELF,
    TRACKER_FAMILIES,
    Family,
    family_tier,
    peak_name,
)
from nicwatch.normalize import rdma, standard
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.rules import (
    GAUGE_WORDS,
    DriverTable,
    HwCounter,
    NetlinkFill,
    Rule,
    VfDrop,
)
from nicwatch.normalize.sriov import VF_FAMILIES

COMMAND = "python -m nicwatch.normalize.doc > docs/metrics.md"
TIER_TEXT = """\
`--collector.detail` (TOML `collector.detail`) sets how much of what nicwatch computes a
scrape carries: the series budget. It trims /metrics only: checks, diagnosis, incidents,
snapshots, the flight recorder and the CLI views see every series at every level. The
default, `port`, serves what grows with a port's hardware structure (lanes, priorities,
traffic classes, the module), not with its queues or CPUs, and every series the shipped
dashboards (grafana/) and alerts (deploy/prometheus/) read: a test evaluates each of their
queries against the demo host's default exposition. Measured on `nicwatch demo --ports 8`
(ConnectX-class ports with modules, RDMA devices, 8 queues each): 962 series a port before
the tiers, about 425 at `port` (none of them growing with queues or CPUs), 460 at
`queue`, all of them at `full`. The series that grow with
the queues and CPUs have per-port summaries at `port`: the busiest queue
(`nic_rx_queue_busiest_info`, `nic_rx_queue_imbalance_ratio`), the serving CPUs' softirq
share (`nic_irq_cpu_softirq_ratio`, `nic_rx_cpu_squeezed_softirq_ratio`) and how many of
them ran out of budget or dropped (`nic_rx_cpus_squeezed`, `nic_rx_cpus_dropping`)."""

INTRO = f"""\
# nicwatch metrics

<!-- Generated from src/nicwatch/metrics/ and the driver tables in
src/nicwatch/normalize/drivers/. Do not edit: regenerate with
`{COMMAND}` (a test fails when this file is stale). -->

Every series carries the `device` label (the interface name) in addition to the labels
listed here. Counters end in `_total`, are cumulative and in base units (seconds, bytes);
32-bit hardware counters are extended across wraps. A counter the interface does not have
is absent, never 0; a gauge per canonical counter family (see Gauges) says which families
an interface provides.

## Where the values come from

Each counter family comes whole from the first source that has any series of it:

1. **ethtool netlink**: the kernel's driver-independent statistics (PAUSE_GET, FEC_GET,
   STATS_GET). Keys are `pause.<attr>`, `fec.<attr>[.lane<N>]`, `eth-mac.<Name>`,
   `eth-phy.<Name>`, as the kernel names them. The kernel defines each after IEEE 802.3
   clause 30, but every driver chooses the hardware counter it reports under each name.
   Where a driver's table says what it fills a statistic with (rows "ethtool netlink
   (driver)"), the value goes to the family the table gives those same counters, so a
   family keeps its meaning whether the kernel is new enough to have the statistic or not
   (a test checks that both sources are the same counters, and that no hardware counter
   feeds two families).
2. **the driver's `ethtool -S` names**, through the driver's table below. Names are matched
   after stripping spaces; `<x>` in a name stands for a part that becomes the label `x`,
   `<queue>` for a queue number that is summed over.
3. **sysfs**: `/sys/class/net/<device>/statistics/<key>`, and
   `/sys/class/net/<device>/carrier_up_count` / `carrier_down_count`.

The daemon adds a peak-rate gauge (`*_peak_per_second`, the highest poll-to-poll rate within
the peak window) for the families marked *health* or *burst*, and, with `--collector.rates`,
a plain rate gauge (`*_per_second`) for every counter series.
"""

RAW_TEXT = """\
With `collector.raw` on, every `ethtool -S` name is also exported verbatim (filtered by the
include and exclude patterns). Per-queue names are summed over queues under a queue-less
name in which the queue number is replaced by `N` (`rx3_buff_alloc_err` becomes
`rxN_buff_alloc_err`, `[3]: rx_discards` becomes `[N]: rx_discards`), so a sum never
collides with a total the driver reports itself. Statistics listed in `collector.per_queue`
(by that queue-less name) are also exported per queue.

A statistic is a gauge (`nic_driver_stat_value`, never summed) when its driver's table lists
it as one, or, for every driver, when its name has one of the words {words} (split at
anything but letters and digits), unless the table lists it as a counter (such as mlx5's
`module_high_temp`, a count of high-temperature events). Everything else is a counter.""".format(
    words=", ".join(f"`{w}`" for w in sorted(GAUGE_WORDS)))


RDMA_TEXT = """\
Every port of every RDMA device (InfiniBand ports without a netdev included) has series of
its own, labelled `rdma_device` and `port`; where the port has a netdev (RoCE, iWARP, IPoIB
found through the PCI function) the netdev is the `device` label, as on every other family,
and an InfiniBand port's series have no `device` label. The IB PortCounters come from
`counters/` (sysfs: no netlink command carries them); each driver's hardware counters from
the RDMA netlink family (`RDMA_NLDEV_CMD_STAT_GET`, the optional counters an operator
enabled included), else from `hw_counters/` (docs/rdma.md). A counter name means what its
driver counts: the tables below map a driver's counter to a family only where it has the
family's meaning; the others are `nic_rdma_hw_stat_total{counter}`."""


def _close(pattern: str, start: int) -> int:
    """Index of the parenthesis closing the group that opens at ``start``."""
    depth, i = 0, start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return i
        i += 1
    raise ValueError(f"unbalanced pattern {pattern!r}")


def _alternatives(pattern: str) -> list[str]:
    parts, depth, last, i = [], 0, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        depth += (c == "(") - (c == ")")
        if c == "|" and depth == 0:
            parts.append(pattern[last:i])
            last = i + 1
        i += 1
    return [*parts, pattern[last:]]


def _readable(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("\\d+", i):
            out.append("<n>")
            i += 3
        elif pattern[i] == "\\":
            out.append(pattern[i + 1])
            i += 2
        elif pattern.startswith("(?P<", i):
            out.append("<" + pattern[i + 4:pattern.index(">", i)] + ">")
            i = _close(pattern, i) + 1
        elif pattern.startswith("(?:", i):
            out.append("(")
            i += 3
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def names(pattern: str) -> list[str]:
    """The readable names a pattern stands for, one per top-level alternative."""
    return [_readable(p) for p in _alternatives(pattern)]


def _code(items: Iterable[str]) -> str:
    return ", ".join(f"`{x}`" for x in items)


def _cell(text: str) -> str:
    """A Markdown table cell: a `|`, even inside code, would end the cell."""
    return text.replace("|", "\\|")


def _rule_row(source: str, rule: Rule) -> str:
    labels = [f'{k}="{v}"' for k, v in rule.labels]
    evidence = _cell(rule.evidence)
    conversion = []
    if rule.scale != 1:
        conversion.append(f"x {rule.scale:g}")
    if rule.width != 64:
        conversion.append(f"{rule.width}-bit, wraps")
    if "(?P<queue>" in rule.pattern:
        conversion.append("summed over queues")
    return f"| {source} | {_cell(_code(names(rule.pattern)))} | {', '.join(labels)} | " \
           f"{'; '.join(conversion)} | {evidence} |"


def _labels(family: Family) -> str:
    return _code(family.labels) if family.labels else "none"


def _rows(source: str, rules: Iterable[Rule], family: Family) -> list[str]:
    return [_rule_row(source, r) for r in rules if r.metric == family.name]


def _fill_row(driver: str, fill: NetlinkFill) -> str:
    labels = [f'{k}="{v}"' for k, v in fill.labels]
    return (f"| ethtool netlink ({driver}) | `{fill.key}` | {', '.join(labels)} | "
            f"= {_cell(' + '.join(f'`{r}`' for r in fill.raw))} | {_cell(fill.evidence)} |")


def _vf_exported(drop: VfDrop) -> str:
    if not drop.updated:
        return "never: the driver does not update it"
    if drop.legacy_only:
        return "in legacy e-switch mode (absent in switchdev and where devlink is unknown)"
    if drop.zero_unset:
        return "once a VF of the PF has it above 0"
    return "as read"


def _vf_drop_rows() -> list[str]:
    """The VF drop families per PF driver, from the driver tables' ``vf`` field."""
    rows = [f"| `{family}` | {driver} | {_vf_exported(drop)} | {_cell(drop.meaning)} | "
            f"{_cell(drop.evidence)} |"
            for stat, family in VF_FAMILIES for driver, t in sorted(TABLES.items())
            if t.vf is not None and (drop := t.vf.drop(stat)) is not None]
    return [("SR-IOV VF drop counters as each PF driver fills them (the kernel defines only "
             "the field; docs/sriov.md):"), "",
            "| family | driver | exported | what it counts | evidence |",
            "|---|---|---|---|---|", *rows, ""]


def _family_section(family: Family) -> list[str]:
    drivers = {d: _rows(d, t.rules, family) for d, t in sorted(TABLES.items())}
    fills = [_fill_row(d, f) for d, t in sorted(TABLES.items()) for f in t.netlink
             if f.metric == family.name]
    rows = [*_rows("ethtool netlink", standard.ETHTOOL_NETLINK, family), *fills,
            *(row for found in drivers.values() for row in found),
            *_rows("sysfs", standard.SYSFS_NET, family)]
    missing = [d for d, found in drivers.items() if not found]
    lines = [f"### `{family.name}`", "",
             f"{family.type}; unit: {family.unit or 'none'}; labels: {_labels(family)}"
             + ("; health" if family.health else "") + ("; burst" if family.burst else ""),
             "", family.help, "",
             "| source | statistic | labels | conversion | evidence |", "|---|---|---|---|---|",
             *rows, ""]
    if 0 < len(missing) < len(drivers):
        lines += [f"Not in the tables of: {', '.join(missing)}.", ""]
    return lines


def _gauge_rows(families: Iterable[Family]) -> list[str]:
    return ["| name | labels | unit | meaning |", "|---|---|---|---|",
            *(f"| `{f.name}` | {_labels(f)} | {f.unit or 'none'} | {f.help} |"
              for f in families), ""]


def _typed_rows(families: Iterable[Family]) -> list[str]:
    return ["| name | type | labels | unit | meaning |", "|---|---|---|---|---|",
            *(f"| `{f.name}` | {f.type} | {_labels(f)} | {f.unit or 'none'} | {f.help} |"
              for f in families), ""]


def _rdma_family(counter: HwCounter) -> str:
    if counter.metric:
        return f"`{counter.metric}`"
    return "value: `nic_rdma_hw_value`" if counter.value else "raw"


def _rdma_section() -> list[str]:
    """The RDMA port families, the PortCounters they come from and each RDMA driver's
    hardware counters with what they count on that driver (normalize.rdma)."""
    lines = ["## RDMA ports", "", RDMA_TEXT, "", *_typed_rows(
        (*RDMA_COUNTERS, RDMA_RAW_COUNTER, *RDMA_GAUGES)),
        "### IB PortCounters (all drivers with a PMA)", "",
        f"Evidence: {rdma.PMA_EVIDENCE}. Widths are the counters' own: a counter narrower "
        "than 64 bits stops at 2^width - 1 (saturated) and is never extended as a wrap; the "
        "data and packet counters are 64-bit where the PMA has PortCountersExtended "
        "(`unicast_*`/`multicast_*` present, or a value above 2^32 - 1).", "",
        "| file | family | width | scale | counts |", "|---|---|---|---|---|",
        *(f"| `{c.name}` | `{c.metric}` | {c.width}{' (64 extended)' if c.extended else ''} "
          f"| {c.scale:g} | {_cell(c.meaning)} |" for c in rdma.PMA), ""]
    lines += [f"Where a port has the separate 64-bit directory {rdma.EXT_EVIDENCE}, each of "
              "its files wins over the `counters/` file it extends (64 bits, never saturated):",
              "", "| counters_ext file | supersedes | family |", "|---|---|---|",
              *(f"| `{ext}` | `{name}` | `{rdma.PMA_BY_NAME[name].metric}` |"
                for ext, name in rdma.COUNTERS_EXT.items()), ""]
    for driver in rdma.DRIVERS.values():
        lines += [f"### RDMA driver {driver.title}", ""]
        if driver.note:
            lines += [driver.note, ""]
        lines += ["| counter | family | width | counts on this driver | evidence |",
                  "|---|---|---|---|---|",
                  *(f"| `{c.name}` | {_rdma_family(c)} | {c.width} | {_cell(c.meaning)} | "
                    f"{_cell(c.evidence)} |" for c in driver.counters), ""]
    lines += [f"Other drivers: {rdma.UNMAPPED_NOTE}", ""]
    return lines


def _driver_section(table: DriverTable) -> list[str]:
    lines = [f"### {table.driver}", "", f"Source: `{table.source}`.", "", table.notes, ""]
    mapped = [f.name for f in COUNTERS if any(r.metric == f.name for r in table.rules)]
    lines += [f"Canonical counters: {_code(mapped) if mapped else 'none'}.", ""]
    if table.gauges:
        lines += [f"Gauges (not counters): {_code(n for p in table.gauges for n in names(p))}.",
                  ""]
    if table.counters:
        lines += [f"Counters despite a gauge's name: "
                  f"{_code(n for p in table.counters for n in names(p))}.", ""]
    if table.width32:
        lines += [f"32-bit counters: {_code(n for p in table.width32 for n in names(p))}.", ""]
    if table.vf is not None:
        lines += [f"SR-IOV VF counters: {table.vf.evidence} (the drop counters: Platform "
                  f"counters).", ""]
    dropped = [f for f in table.netlink if f.metric is None]
    if dropped:
        lines += [f"Netlink statistics not exported (no family has their meaning): "
                  f"{_code(f.key for f in dropped)}.", ""]
    for group in table.same_register:
        lines += [f"One register, at most one family: {_code(group.names)} ({group.evidence}).",
                  ""]
    if table.rx_queue_packets:
        lines += [f"Packets per receive queue (nic_rx_queue_packets_total, where the netdev "
                  f"qstats have none): {_code(n for p in table.rx_queue_packets for n in names(p))}"
                  + (" (summed)." if len(table.rx_queue_packets) > 1 else "."), ""]
    if table.irqs:
        lines += ["| interrupt name | kind | evidence |", "|---|---|---|"]
        lines += [f"| {_cell(_code(names(i.pattern)))} | {i.kind} | {_cell(i.evidence)} |"
                  for i in table.irqs]
        lines.append("")
    if table.queues:
        lines += ["| per-queue name | summed as |", "|---|---|"]
        lines += [f"| {_cell(_code(names(q.pattern)))} | "
                  f"`{q.template.replace('{', '<').replace('}', '>')}` |" for q in table.queues]
        lines.append("")
    return lines


def _tier_section() -> list[str]:
    """The detail tiers of --collector.detail and what moved from the default exposition
    when they were introduced (the migration table the README's changelog links to)."""
    names = sorted({*EXPORTED, *(peak_name(c) for c in RATED_COUNTERS if FAMILIES[c].peaked)})
    moved = {level: [n for n in names if n not in PARTIAL and family_tier(n) == level]
             for level in DETAIL_LEVELS[1:]}
    lines = ["## Detail tiers", "", TIER_TEXT, "",
             "| `--collector.detail` | serves |", "|---|---|",
             *(f"| `{level}`{' (default)' if level == DEFAULT_DETAIL else ''} | "
               f"{DETAIL_TEXT[level]} |" for level in DETAIL_LEVELS), "",
             "### Migration: what the default exposition no longer serves", "",
             "| family | at the default (`port`) | to get it back |", "|---|---|---|"]
    for level, families in moved.items():
        for name in families:
            back = f"`--collector.detail={level}`" + (" (or `full`)" if level != FULL else "")
            lines.append(f"| `{name}` | not served | {back} |")
    for name, (_, kept) in sorted(PARTIAL.items()):
        lines.append(f"| `{name}` | {kept} | `--collector.detail=full` |")
    lines += ["| (new) `nic_module_flags_set` | the count of set module flags per module | "
              "served at every level |",
              "| (new) `nic_rx_cpu_squeezed_softirq_ratio`, `nic_rx_cpus_squeezed`, "
              "`nic_rx_cpus_dropping` | per-port summaries of the per-CPU series | served at "
              "every level |",
              "| alert `NicReceiveCpuSaturated` | reads `nic_rx_cpu_squeezed_softirq_ratio` "
              "(over 5 minutes); its alerts carry no `cpu` label | the per-CPU series at "
              "`--collector.detail=queue` name the CPU |",
              "| alerts `NicRxPauseFramesHigh`, `NicTxPauseFramesHigh` | skip ports that serve "
              "`nic_{rx,tx}_pause_duration_seconds_total` (before: `nic_stat_supported` 1) | "
              "same ports |", ""]
    return lines


def render() -> str:
    lines = [INTRO, *_tier_section(), "## Counters", ""]
    for family in COUNTERS:
        lines += _family_section(family)
    lines += ["## Platform counters", "",
              "From the NIC's surroundings: AER files of every device on its PCIe path, and "
              "the devlink health reporters of its device and devlink port (docs/devlink.md).",
              "", *_gauge_rows(PLATFORM_COUNTERS), *_vf_drop_rows()]
    lines += _rdma_section()
    lines += ["## Receive path counters", "",
              "Device-scope queue statistics from the netdev generic netlink family "
              "(qstats-get, 6.9+; each family absent where the driver does not fill it), "
              "packets per receive queue, and the softnet_stat counters of the CPUs serving "
              "the interface (docs/receive-path.md).", "",
              *_gauge_rows((*QSTATS_COUNTERS, *RXPATH_COUNTERS))]
    lines += ["## Gauges", "",
              "From the interface's configuration (sysfs, rings, channels, pause settings).",
              "", *_gauge_rows(GAUGES)]
    lines += ["## The other end of the link (opt-in)", "",
              "With `--collector.lldp`: each port's LLDP neighbour, received passively, its "
              "IEEE 802.1Qaz DCBX and the driver's dcbnl peer attributes beside the port's "
              "own, and the port's identity as this host's LLDP agent announces it, which "
              "the fabric rules join to the neighbour series of the other end "
              "(docs/fabric.md).", "", *_typed_rows(FABRIC_FAMILIES)]
    lines += ["## Raw driver statistics (opt-in)", "", RAW_TEXT, "",
              *_gauge_rows((RAW_COUNTER, RAW_GAUGE, QUEUE_COUNTER))]
    lines += ["## Computed by nicwatch", "",
              "The tracker's resets and 32-bit wrap evidence. Derived per counter family above: "
              "`<family without _total>_peak_per_second`, the highest poll-to-poll rate within "
              "the peak window (`--rates.peak-window`), for the families marked *health* and "
              "the byte counters (below `--collector.detail=full`, for the byte and flow "
              "control families only: Detail tiers); with `--collector.rates`, "
              "`<...>_per_second`, the rate between the last two polls (absent on the first "
              "poll and after a reset).", "",
              *_typed_rows(TRACKER_FAMILIES)]
    lines += ["## Consumers", "",
              "Expectation checks (`[[expect]]`, `[[consistent]]` in the configuration), NIC "
              "identity across restarts (the state file), the softirq load of each NIC's "
              "local CPUs and of the CPUs serving it, its receive path between polls "
              "(docs/receive-path.md), and incident capture (`[capture]`, docs/incidents.md).",
              "", *_typed_rows(CONSUMER_FAMILIES)]
    lines += ["## nicwatch itself", "",
              "The daemon's own health. These series carry no implicit `device` label: the "
              "labels listed are all of them.", "", *_typed_rows(SELF)]
    lines += ["## Drivers", ""]
    for _, table in sorted(TABLES.items()):
        lines += _driver_section(table)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
