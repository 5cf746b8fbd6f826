"""`nicwatch show`: poll once and print a table (or --json)."""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import time
from collections.abc import Sequence
from typing import Any

from nicwatch.cli import common
from nicwatch.cli.fabric_view import FABRIC_HEADERS, fabric_row
from nicwatch.collect import Collector, PollResult
from nicwatch.config import SOURCE_SWITCH_KEYS
from nicwatch.consumers.diagnosis.render import show_cell, show_json
from nicwatch.metrics import (
    CARRIER_DOWN_EVENTS,
    DEVLINK_HEALTH_ERRORS,
    DEVLINK_HEALTH_REPORTER_STATE,
    FAMILIES,
    FEC_UNCORRECTABLE_BLOCKS,
    IRQS,
    LINK_DOWN_EVENTS,
    LINK_DOWN_REASON,
    LINK_LANES,
    MODULE_DATA_PATH_STATE,
    MODULE_INFO,
    MODULE_RX_POWER_THRESHOLD_WATTS,
    MODULE_RX_POWER_WATTS,
    MODULE_STATE,
    PRE_FEC_BER,
    RDMA_RX_BYTES,
    RDMA_TX_BYTES,
    RX_BYTES,
    RX_CRC_ERRORS,
    RX_DISCARDS,
    RX_DROPPED,
    RX_ERRORS,
    RX_OUT_OF_BUFFER_DROPS,
    RX_PAUSE_FRAMES,
    RX_PFC_FRAMES,
    RX_PFC_TC_FRAMES,
    RX_QUEUE_PACKETS,
    SRIOV_VFS,
    TX_BYTES,
    TX_DROPPED,
    TX_ERRORS,
    TX_PAUSE_FRAMES,
    TX_PFC_FRAMES,
    TX_PFC_TC_FRAMES,
    VDM_PRE_FEC_BER,
    VDM_PRE_FEC_BER_THRESHOLD,
    VF_RX_DROPPED,
    VF_TX_DROPPED,
    Family,
)
from nicwatch.model import PciDevice, RdmaSample, Sample, SeriesKey
from nicwatch.normalize.linkphysics import CORRECTED_BITS, FEC_CODES, LANE_BIT_ERRORS, TOTAL
from nicwatch.normalize.pcie_verdict import describe as describe_verdict
from nicwatch.normalize.pcie_verdict import emulated_port
from nicwatch.normalize.rxpath import IRQ_INFO, cpulist, cumulative_balance, parse_cpus
from nicwatch.printable import printable
from nicwatch.sources.netns import SOURCE as NETNS_SOURCE
from nicwatch.values import ConfigError

SHOW_SETTINGS = ("path.sysfs", "path.procfs", "interfaces.include", "interfaces.exclude",
                 "collector.raw", "collector.raw_include", "collector.raw_exclude",
                 "collector.per_queue", "collector.ethtool_netlink", "collector.module",
                 "collector.vfs", "collector.rdma_netlink", "collector.rdma_include",
                 "collector.rdma_exclude", "collector.receive_path", "collector.lldp",
                 "fabric.chassis_id", "fabric.port_id", "log.level", "log.format",
                 *SOURCE_SWITCH_KEYS)


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    show = common.add_command(subparsers, "show")
    show.add_argument("interfaces", nargs="*", metavar="INTERFACE",
                      help="show only these interfaces, by exact name (any type: lo and veth "
                           "too); instead of --interfaces.include")
    common.add_settings(show, SHOW_SETTINGS)
    show.add_argument("--json", action="store_true", help="print the same data as JSON")
    return show


def _select_named(args: argparse.Namespace) -> None:
    """Interface names given as arguments become the selection (exact names)."""
    if not args.interfaces:
        return
    if getattr(args, "interfaces.include", None) is not None:
        raise ConfigError("show: name interfaces or give --interfaces.include, not both")
    setattr(args, "interfaces.include", "|".join(re.escape(n) for n in args.interfaces))


def _unmatched(names: Sequence[str], include: str | None,
               samples: Sequence[Sample]) -> str | None:
    """What the selection asked for and did not find (None: nothing missing): interfaces
    named as arguments that were not read, or an include pattern nothing matched."""
    if names:
        found = {s.identity.device for s in samples}
        missing = [n for n in names if n not in found]
        return f"no interface {', '.join(missing)}" if missing else None
    if include is None or samples:
        return None
    return f"no interface matched interfaces.include {include!r}"


def _fmt(value: float | None, unit: str = "") -> str:
    """Short SI form for volumes and rates (1.2TB, 200Gb/s); exact below 1000."""
    if value is None:
        return "-"
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.1f}".removesuffix(".0") + f"{suffix}{unit}"
    return f"{value:g}{unit}"


def _exact(value: float | None) -> str:
    """Sizes a reader compares exactly (MTU 9000, ring 8192): never abbreviated."""
    return "-" if value is None else f"{value:g}"


def _sum(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _rings(s: Sample) -> str:
    rings = s.state.rings
    if rings is None:
        return "-"
    now, most = [rings.rx, rings.tx], [rings.rx_max, rings.tx_max]
    if now == [None, None]:
        return "-"
    return "/".join(map(_exact, now)) + (" (" + "/".join(map(_exact, most)) + ")"
                                         if most != [None, None] else "")


def _channels(s: Sample) -> str:
    """Combined channels as a number ("8"); separate rx/tx channels spelled out
    ("rx4/tx4", "rx1/tx1/c8") where the driver has them."""
    ch = s.state.channels
    counts = {"rx": ch.rx, "tx": ch.tx, "combined": ch.combined} if ch else {"rx": None}
    if not any(counts.values()):
        return "-" if all(v is None for v in counts.values()) else "0"
    if not (counts["rx"] or counts["tx"]):
        return _exact(counts["combined"])
    parts = [f"rx{counts['rx'] or 0:g}", f"tx{counts['tx'] or 0:g}"]
    return "/".join(parts + ([f"c{counts['combined']:g}"] if counts["combined"] else []))


def _health(s: Sample) -> str:
    """devlink health reporters that are not healthy or have counted errors, as
    "fw_fatal:error 1,tx 3" (errors since the driver loaded); "ok" when none, "-" without
    reporters."""
    states = {}
    for key, value in s.gauges.items():
        if key.metric == DEVLINK_HEALTH_REPORTER_STATE.name and value == 1:
            labels = dict(key.labels)
            states[(labels["devlink"], labels["devlink_port"], labels["reporter"])] = (
                labels["state"])
    if not states:
        return "-"
    errors = {}
    for key, cv in s.counters.items():
        if key.metric == DEVLINK_HEALTH_ERRORS.name:
            labels = dict(key.labels)
            errors[(labels["devlink"], labels["devlink_port"], labels["reporter"])] = cv.value
    shown = [f"{name}{'' if state == 'healthy' else ':' + state} {errors.get(k, 0):g}"
             for k, state in sorted(states.items(), key=lambda kv: (kv[1] == "healthy", kv[0]))
             if state != "healthy" or errors.get(k) for name in (k[2],)]
    return ",".join(shown) or "ok"


def _pair(s: Sample, rx: Family, tx: Family) -> str:
    """``rx/tx`` of two counter families."""
    return f"{_fmt(s.counter(rx.name))}/{_fmt(s.counter(tx.name))}"


COLUMNS = (
    ("DEVICE", lambda s: s.identity.device),
    ("DRIVER", lambda s: s.identity.driver or "-"),
    ("PCI", lambda s: s.identity.pci_address or "-"),
    ("STATE", lambda s: s.netclass.operstate or "-"),
    ("SPEED", lambda s: _fmt(s.state.speed_mbps and s.state.speed_mbps * 1e6, "b/s")),
    ("MTU", lambda s: _exact(s.state.mtu)),
    ("RING RX/TX (MAX)", _rings),
    ("CHANNELS", _channels),
    ("RX BYTES", lambda s: _fmt(s.counter(RX_BYTES.name), "B")),
    ("TX BYTES", lambda s: _fmt(s.counter(TX_BYTES.name), "B")),
    ("PAUSE RX/TX", lambda s: _pair(s, RX_PAUSE_FRAMES, TX_PAUSE_FRAMES)),
    ("PFC RX/TX", lambda s: "{}/{}".format(*(_fmt(_sum(s.counter(link.name), s.counter(tc.name)))
                                             for link, tc in ((RX_PFC_FRAMES, RX_PFC_TC_FRAMES),
                                                              (TX_PFC_FRAMES, TX_PFC_TC_FRAMES))))),
    # The netdev's own drop and error counters (the kernel's rtnl_link_stats64): a veth
    # or a virtio port has no OUT-OF-BUF or DISCARDS, and its 1,661 tx drops were invisible.
    ("DROPS RX/TX", lambda s: _pair(s, RX_DROPPED, TX_DROPPED)),
    ("ERRORS RX/TX", lambda s: _pair(s, RX_ERRORS, TX_ERRORS)),
    ("OUT-OF-BUF", lambda s: _fmt(s.counter(RX_OUT_OF_BUFFER_DROPS.name))),
    ("DISCARDS", lambda s: _fmt(s.counter(RX_DISCARDS.name))),
    ("CRC", lambda s: _fmt(s.counter(RX_CRC_ERRORS.name))),
    ("FEC UNCORR", lambda s: _fmt(s.counter(FEC_UNCORRECTABLE_BLOCKS.name))),
    ("HEALTH", _health),
    ("DIAGNOSIS", lambda s: show_cell(s)),  # configuration signatures (one poll)
)
PCIE_HEADERS = ["DEVICE", "PCIE PATH (NIC FIRST, TO THE ROOT PORT)", "CEILING / LINE RATE",
                "VERDICT"]
SRIOV_HEADERS = ["DEVICE", "VFS ENABLED/TOTAL", "REPORTED", "WORST VF DROPS (RX+TX)"]
RXPATH_HEADERS = ["DEVICE", "RX QUEUES", "QUEUE IRQ CPUS", "IRQ PLACEMENT",
                  "HOT QUEUE (SINCE ITS COUNTER STARTED)"]
GAP = "  "


def _worst_vf(s: Sample) -> str:
    """The VF with the most dropped packets (rx + tx, cumulative), e.g. "vf 3: 5.79k"."""
    drops: dict[str, float] = {}
    for key, cv in s.counters.items():
        if key.metric in (VF_RX_DROPPED.name, VF_TX_DROPPED.name):
            vf = dict(key.labels)["vf"]
            drops[vf] = drops.get(vf, 0.0) + cv.value
    if not drops:
        return "-"
    vf = max(drops, key=lambda v: (drops[v], -int(v)))
    return f"vf {vf}: {_fmt(drops[vf])}"


def _sriov_row(s: Sample) -> list[str] | None:
    """SR-IOV PFs only (--collector.vfs): VF counts and the VF that dropped most."""
    counts = {st: s.gauge(SRIOV_VFS.name, state=st) for st in ("enabled", "total", "reported")}
    if all(v is None for v in counts.values()):
        return None
    return [s.identity.device, f"{_exact(counts['enabled'])}/{_exact(counts['total'])}",
            _exact(counts["reported"]), _worst_vf(s)]


def _rxpath_row(s: Sample) -> list[str] | None:
    """The receive path of an interface: its receive queues, the CPUs its queue interrupts
    are delivered to, their placement against the NIC's node, and the busiest queue of the
    packets its counters hold (share, times its fair share, the CPUs serving it)."""
    cpus: set[int] = set()
    for key in s.gauges:
        if key.metric == IRQ_INFO:
            labels = dict(key.labels)
            if labels.get("queue"):
                cpus.update(parse_cpus(labels.get("effective") or labels.get("affinity", "")))
    placed = {p: s.gauge(IRQS.name, placement=p) for p in ("local", "remote", "unknown")}
    queues = [k for k in s.counters if k.metric == RX_QUEUE_PACKETS.name]
    if not cpus and not queues and all(v is None for v in placed.values()):
        return None
    placement = ", ".join(f"{v:g} {p}" for p, v in placed.items() if v) or "-"
    spread = cumulative_balance(s.counters, s.gauges) if queues else None
    hot = "-"
    if spread is not None:
        top = spread.busiest
        hot = (f"{top.queue}: {top.share:.0%} ({spread.ratio:.1f}x fair), "
               f"{top.cpus.describe()}")
    return [s.identity.device, _exact(float(len(queues))) if queues else "-",
            cpulist(cpus) or "-", placement, hot]


def _aligned(rows: list[list[str]]) -> list[str]:
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [GAP.join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]


def _wrapped(first: str, items: Sequence[str], width: int, indent: str = "    ") -> list[str]:
    """``first`` then ``items`` on as few lines of at most ``width`` characters as fit
    (an item longer than a line gets a line of its own)."""
    lines, line = [], first
    for item in items:
        if len(line) + len(GAP) + len(item) <= width or not line.strip():
            line = f"{line}{GAP if line.strip() else ''}{item}"
        else:
            lines.append(line)
            line = indent + item
    return [*lines, line]


def _narrow(samples: Sequence[Sample], width: int) -> list[str]:
    """One block per interface, "label value" pairs filling each line: everything the
    table shows, in ``width`` columns."""
    lines: list[str] = []
    for s in samples:
        if lines:
            lines.append("")
        cells = [f(s) for _, f in COLUMNS]
        items = [f"{h.lower()} {c}" for (h, _), c in zip(COLUMNS[1:], cells[1:], strict=False)]
        lines += _wrapped(cells[0], items, width)
        if pcie := _pcie_row(s):
            _, path, rates, verdict = pcie
            lines += _wrapped(f"    pcie {verdict}", [f"ceiling / line rate {rates}"], width)
            hops = path.split(" <- ")
            lines += [f"      {'<- ' if i else ''}{hop}" for i, hop in enumerate(hops)]
        if module := _module_row(s):
            _, kind, temp, rx, read = module
            lines += _wrapped(f"    module {kind}", [f"temp {temp}", f"worst rx {rx}",
                                                      f"read {read}"], width)
        if sriov := _sriov_row(s):
            pairs = zip(SRIOV_HEADERS[1:], sriov[1:], strict=False)
            lines += _wrapped("    sriov", [f"{h.lower()} {c}" for h, c in pairs], width)
        if receive := _rxpath_row(s):
            pairs = zip(RXPATH_HEADERS[1:], receive[1:], strict=False)
            lines += _wrapped("    receive path", [f"{h.lower()} {c}" for h, c in pairs],
                              width)
        if fabric := fabric_row(s):
            pairs = zip(FABRIC_HEADERS[1:], fabric[1:], strict=False)
            lines += _wrapped("    link peer", [f"{h.lower()} {c}" for h, c in pairs], width)
    return lines


def terminal_width() -> int | None:
    """$COLUMNS, else the terminal's width; None (no limit) when writing to a pipe or file."""
    return shutil.get_terminal_size(fallback=(0, 0)).columns or None


def _hop(dev: PciDevice) -> str:
    link = dev.link
    if link is None:
        return f"{dev.bdf} (no PCIe link)"
    if (emulated := emulated_port(dev)) is not None:
        return f"{dev.bdf} ({emulated}, emulated)"

    def one(speed: float | None, width: int | None) -> str:
        if not (speed or width):
            return "unknown"
        return f"{f'{speed:g}' if speed else '?'}GT/s x{width or '?'}"
    return (f"{dev.bdf} {one(link.current_speed_gts, link.current_width)} "
            f"(max {one(link.max_speed_gts, link.max_width)})")


def _pcie_row(s: Sample) -> list[str] | None:
    path, verdict = s.pcie, s.pcie_verdict
    if path is None or not path.is_pcie or verdict is None:
        return None
    ceiling = verdict.ceiling.bytes_per_second * 8 if verdict.ceiling else None
    line = verdict.line_rate_bytes_per_second and verdict.line_rate_bytes_per_second * 8
    state = describe_verdict(verdict, path)
    return [s.identity.device, " <- ".join(_hop(d) for d in path.hops),
            f"{_fmt(ceiling, 'b/s')} / {_fmt(line, 'b/s')}", state]


MODULE_HEADERS = ["DEVICE", "MODULE", "TEMP (HIGH WARN)", "WORST RX LANE (LOW WARN)", "READ"]


def _dbm(watts: float) -> str:
    return f"{10 * math.log10(watts * 1000):.1f}dBm" if watts > 0 else "dark"


def _labelled(s: Sample, metric: str, label: str) -> dict[str, float]:
    return {dict(k.labels).get(label, ""): v for k, v in s.gauges.items() if k.metric == metric}


def _module_row(s: Sample) -> list[str] | None:
    """The module of a port (--collector.module): type and part, temperature against its
    high warning, the weakest lane's rx power against its low warning, the read state and
    the age of the values."""
    state = s.state.module
    if state is None or state.read_state is None:
        return None
    info = next((dict(k.labels) for k in s.gauges if k.metric == MODULE_INFO.name), None)
    module = " ".join(x for x in (info["identifier"], info["vendor"], info["part"]) if x) \
        if info else "-"
    temp, warn = state.temperature_celsius, state.temperature_high_warning_celsius
    temp_text = "-" if temp is None else f"{temp:.1f}C" + (f" ({warn:g}C)" if warn else "")
    lanes = {dict(k.labels)["lane"]: (v, dict(k.labels).get("type", ""))
             for k, v in s.gauges.items() if k.metric == MODULE_RX_POWER_WATTS.name}
    rx_text = "-"
    if lanes:
        lane, (watts, kind) = min(lanes.items(), key=lambda item: item[1][0])
        low = s.gauge(MODULE_RX_POWER_THRESHOLD_WATTS.name, level="low_warning", type=kind)
        rx_text = f"{_dbm(watts)} lane {lane}" + (f" ({_dbm(low)})" if low else "")
    read_at = state.read_at
    read = state.read_state + (f", {max(s.time - read_at, 0):.0f}s ago" if read_at else "")
    # A CMIS module that is not ready, or lanes whose data path carries no data: their
    # missing light is that state, not a fault.
    module_state = [st for st, on in _labelled(s, MODULE_STATE.name, "state").items() if on]
    if module_state and module_state[0] != "ready":
        read += f", module {module_state[0]}"
    idle = sorted((dict(k.labels)["lane"] for k in s.gauges
                   if k.metric == MODULE_DATA_PATH_STATE.name
                   and dict(k.labels)["state"] != "activated"), key=int)
    if idle:
        read += f", data path off on lane {','.join(idle)}"
    read += _vdm_note(s)
    return [s.identity.device, module, temp_text, rx_text, read]


def _vdm_note(s: Sample) -> str:
    """The lanes whose CMIS VDM current pre-FEC BER is at or above the module's own high
    warning (docs/link-physics.md), worst first; "" when none is (or the module has no VDM)."""
    over = []
    for k, v in s.gauges.items():
        labels = dict(k.labels)
        if k.metric != VDM_PRE_FEC_BER.name or labels.get("stat") != "current":
            continue
        warn = s.gauge(VDM_PRE_FEC_BER_THRESHOLD.name, lane=labels["lane"],
                       side=labels["side"], stat="current", level="high_warning")
        if warn and v >= warn:
            over.append((v, f"lane {labels['lane']} {labels['side']} {v:.1e} (warn {warn:.0e})"))
    return "".join(f", VDM pre-FEC BER {text}" for _, text in sorted(over, reverse=True))


RDMA_HEADERS = ["RDMA PORT", "DEVICE", "LINK", "STATE", "RATE", "RX", "TX", "ERRORS",
                "COUNTERS FROM"]


def rdma_value(r: RdmaSample, metric: str) -> float | None:
    values = [cv.value for k, cv in r.counters.items() if k.metric == metric]
    return sum(values) if values else None


def rdma_errors(r: RdmaSample, most: int = 3) -> str:
    """The largest RDMA trouble counters that are not 0, as "out_of_buffer_drops 22.8k,
    local_ack_timeout_errors 37 +7" (the family without nic_rdma_ and _total, "+7": seven
    more not shown); a saturated PortCounters counter marked "(sat)"; "0" when none."""
    found = []
    for key, cv in r.counters.items():
        family = FAMILIES.get(key.metric)
        if family is not None and family.health and cv.raw:
            found.append((-cv.value, key.metric.removeprefix("nic_rdma_").removesuffix(
                "_total"), " (sat)" if cv.saturated else "", cv.value))
    found.sort()
    shown = [f"{name} {_fmt(value)}{mark}" for _, name, mark, value in found[:most]]
    more = f" +{len(found) - most}" if len(found) > most else ""
    return ",".join(shown) + more if shown else "0"


def _rdma_row(r: RdmaSample) -> list[str]:
    port = r.port
    source = port.source
    if port.skipped:
        source += f", {len(port.skipped)} backed off"
    return [port.key, port.netdev or "-",
            {"InfiniBand": "IB", "Ethernet": "RoCE"}.get(port.link_layer or "", "-"),
            f"{port.state or '-'}/{port.phys_state or '-'}",
            _fmt(port.rate_bytes_per_second and port.rate_bytes_per_second * 8, "b/s"),
            _fmt(rdma_value(r, RDMA_RX_BYTES.name), "B"),
            _fmt(rdma_value(r, RDMA_TX_BYTES.name), "B"), rdma_errors(r), source]


def format_table(samples: Sequence[Sample], width: int | None = None,
                 rdma: Sequence[RdmaSample] = ()) -> str:
    """A table of the interfaces, then one of their PCIe paths, ..., and the RDMA ports
    (with or without a netdev); when a table is wider than ``width`` (None: no limit), one
    block per interface instead."""
    table = _aligned([[h for h, _ in COLUMNS]] + [[f(s) for _, f in COLUMNS] for s in samples])
    pcie = [row for s in samples if (row := _pcie_row(s))]
    if pcie:
        table += ["", *_aligned([PCIE_HEADERS, *pcie])]
    modules = [row for s in samples if (row := _module_row(s))]
    if modules:
        table += ["", *_aligned([MODULE_HEADERS, *modules])]
    sriov = [row for s in samples if (row := _sriov_row(s))]
    if sriov:
        table += ["", *_aligned([SRIOV_HEADERS, *sriov])]
    rxpath = [row for s in samples if (row := _rxpath_row(s))]
    if rxpath:
        table += ["", *_aligned([RXPATH_HEADERS, *rxpath])]
    physics = [row for s in samples if (row := _physics_row(s))]
    if physics:
        table += ["", *_aligned([PHYSICS_HEADERS, *physics])]
    fabric = [row for s in samples if (row := fabric_row(s))]
    if fabric:
        table += ["", *_aligned([FABRIC_HEADERS, *fabric])]
    if width and max(map(len, table)) > width:
        table = _narrow(samples, width)
    if not samples:
        table.append("(no interfaces selected; see --interfaces.include)")
    if rdma:
        table += ["", *_aligned([RDMA_HEADERS, *(_rdma_row(r) for r in rdma)])]
    return "\n".join(table)


PHYSICS_HEADERS = ["DEVICE", "LANES", "FEC", "PRE-FEC BER WORST LANE (LIMIT)", "PORT",
                   "DOWN REASON", "LINK DOWNS"]


def _physics_row(s: Sample) -> list[str] | None:
    """Link physics (docs/link-physics.md): the worst lane's pre-FEC BER against its FEC
    code's limit, the port's, why the link is down and how often it went down."""
    bers = {dict(k.labels).get("lane", ""): (v, dict(k.labels).get("fec", ""))
            for k, v in s.gauges.items() if k.metric == PRE_FEC_BER.name}
    reasons = [f"{labels['reason']}" + (f"/{labels['subreason']}" if labels["subreason"] else "")
               for k in s.gauges if k.metric == LINK_DOWN_REASON.name
               for labels in (dict(k.labels),)]
    lanes = s.gauges.get(SeriesKey(LINK_LANES.name))
    if not bers and not reasons and lanes is None:
        return None
    named = {lane: v for lane, v in bers.items() if lane != TOTAL}
    worst = "-"
    if named:
        lane, (ber, fec) = max(named.items(), key=lambda item: item[1][0])
        code = FEC_CODES.get(fec)
        worst = f"lane {lane} {ber:.1e}" + (f" ({code.ber_limit:.1e})" if code else "")
    port = f"{bers[TOTAL][0]:.1e}" if TOTAL in bers else "-"
    fec = next((f for _, f in bers.values()), "-")
    downs = s.counter(LINK_DOWN_EVENTS.name)  # the NIC's own count, else the carrier's
    if downs is None:
        downs = s.counter(CARRIER_DOWN_EVENTS.name)
    return [s.identity.device, _exact(lanes), fec, worst, port, ",".join(reasons) or "-",
            _exact(downs)]


def with_rates(collector: Collector, result: PollResult,
               window: float = 1.0) -> Sequence[Sample]:
    """The samples with their pre-FEC BER (two polls ``window`` apart through the tracker)
    when an interface reports FEC bit errors and lanes; else the first poll's samples."""
    if not any(s.gauges.get(SeriesKey(LINK_LANES.name)) and any(
            k.metric in (LANE_BIT_ERRORS, CORRECTED_BITS) for k in s.counters)
            for s in result.samples):
        return result.samples
    from nicwatch.consumers.linkphysics import with_physics
    from nicwatch.tracker import Tracker
    tracker = Tracker()
    tracker.update(result.samples)
    time.sleep(window)
    return with_physics(tracker.update(collector.poll().samples))


def sample_json(s: Sample) -> dict[str, Any]:
    ident = s.identity
    return {
        "device": ident.device,
        "identity": {f: getattr(ident, f) for f in ident.__slots__},
        "time": s.time,
        "counters": [{"metric": k.metric, "labels": dict(k.labels), "value": cv.value,
                      "source": cv.source} for k, cv in sorted(s.counters.items())],
        "gauges": [{"metric": k.metric, "labels": dict(k.labels), "value": v}
                   for k, v in sorted(s.gauges.items())],
        "raw": s.raw_stats.as_dict() if s.raw_stats else None,
        "errors": [{"source": e.source, "kind": e.kind, "message": e.message}
                   for e in s.errors],
        "diagnosis": show_json(s),
    }


def rdma_json(r: RdmaSample) -> dict[str, object]:
    port = r.port
    return {
        "rdma_port": port.key, "rdma_device": port.device, "port": port.port,
        "device": port.netdev, "link_layer": port.link_layer, "state": port.state,
        "phys_state": port.phys_state, "driver": port.driver, "source": port.source,
        "skipped": dict(port.skipped), "time": r.time,
        "counters": [{"metric": k.metric, "labels": dict(k.labels), "value": cv.value,
                      "raw": cv.raw, "width": cv.width, "saturated": cv.saturated}
                     for k, cv in sorted(r.counters.items())],
        "gauges": [{"metric": k.metric, "labels": dict(k.labels), "value": v}
                   for k, v in sorted(r.gauges.items())],
        "problems": list(port.problems),
    }


def run(args: argparse.Namespace) -> int:
    from nicwatch.daemon import build_collector
    _select_named(args)
    config, _ = common.load_config(args)
    collector = build_collector(config)
    try:
        result = collector.first_poll()
        samples = with_rates(collector, result)
    finally:
        collector.close()
    if args.json:
        # interfaces first, then each RDMA port (an object with "rdma_port")
        json.dump([*(sample_json(s) for s in samples),
                   *(rdma_json(r) for r in result.rdma)], sys.stdout, indent=1)
        print()
    else:
        print(printable(format_table(samples, terminal_width(), result.rdma),
                        keep="\n", backslash=False))
    for device, error in result.errors:  # --path.sysfs of another network namespace
        if not device and error.source == NETNS_SOURCE:
            print(printable(f"nicwatch show: warning: {error.message}"), file=sys.stderr)
    missing = _unmatched(args.interfaces, config.interfaces_include, result.samples)
    if missing is not None:
        print(printable(f"nicwatch show: {missing}"), file=sys.stderr)
        return common.EXIT_FAILURE
    return 0
