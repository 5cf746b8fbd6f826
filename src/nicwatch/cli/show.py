"""`nicwatch show`: poll once and print a table (or --json)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from nicwatch.cli import common
from nicwatch.model import Sample

SHOW_SETTINGS = ("path.sysfs", "interfaces.include", "interfaces.exclude", "collector.raw",
                 "collector.raw_include", "collector.raw_exclude", "collector.per_queue",
                 "collector.ethtool_netlink", "log.level", "log.format")


def add_parser(subparsers) -> argparse.ArgumentParser:
    show = subparsers.add_parser("show", help="poll once and print a table (or --json)")
    common.add_settings(show, SHOW_SETTINGS)
    show.add_argument("--json", action="store_true", help="print the same data as JSON")
    return show


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.1f}{suffix}{unit}"
    return f"{value:g}{unit}"


COLUMNS = (
    ("DEVICE", lambda s: s.identity.device),
    ("DRIVER", lambda s: s.identity.driver or "-"),
    ("PCI", lambda s: s.identity.pci_address or "-"),
    ("STATE", lambda s: s.netclass.operstate or "-"),
    ("SPEED", lambda s: _fmt(s.netclass.speed_mbps and s.netclass.speed_mbps * 1e6, "b/s")),
    ("MTU", lambda s: _fmt(s.netclass.mtu)),
    ("RING RX/TX (MAX)", lambda s: "{}/{} ({}/{})".format(
        *(_fmt(s.gauge(m, ring=r)) for m in ("nic_ring_descriptors", "nic_ring_max_descriptors")
          for r in ("rx", "tx")))),
    ("CHANNELS", lambda s: _fmt(s.gauge("nic_channels", type="combined"))),
    ("RX BYTES", lambda s: _fmt(s.counter("nic_rx_bytes_total"), "B")),
    ("TX BYTES", lambda s: _fmt(s.counter("nic_tx_bytes_total"), "B")),
    ("PAUSE RX/TX", lambda s: "{}/{}".format(_fmt(s.counter("nic_rx_pause_frames_total")),
                                             _fmt(s.counter("nic_tx_pause_frames_total")))),
    ("OUT-OF-BUF", lambda s: _fmt(s.counter("nic_rx_out_of_buffer_drops_total"))),
    ("DISCARDS", lambda s: _fmt(s.counter("nic_rx_discards_total"))),
    ("CRC", lambda s: _fmt(s.counter("nic_rx_crc_errors_total"))),
    ("FEC UNCORR", lambda s: _fmt(s.counter("nic_fec_uncorrectable_blocks_total"))),
)


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _hop(dev) -> str:
    link = dev.link
    if link is None:
        return f"{dev.bdf} (no PCIe link)"

    def one(speed, width):
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
    state = ("DEGRADED: " + ", ".join(verdict.reasons)) if verdict.reasons else "ok"
    if verdict.slot_limits:
        state += f" (slot-limited: {', '.join(verdict.slot_limits)})"
    return [s.identity.device, " <- ".join(_hop(d) for d in path.hops),
            f"{_fmt(ceiling, 'b/s')} / {_fmt(line, 'b/s')}", state]


def format_table(samples: Sequence[Sample]) -> str:
    lines = _aligned([[h for h, _ in COLUMNS]] + [[f(s) for _, f in COLUMNS] for s in samples])
    if not samples:
        lines.append("(no interfaces selected; see --interfaces.include)")
    pcie = [row for s in samples if (row := _pcie_row(s))]
    if pcie:
        lines += ["", *_aligned([["DEVICE", "PCIE PATH (NIC FIRST, TO THE ROOT PORT)",
                                  "CEILING / LINE RATE", "VERDICT"], *pcie])]
    return "\n".join(lines)


def sample_json(s: Sample) -> dict:
    ident = s.identity
    return {
        "device": ident.device,
        "identity": {f: getattr(ident, f) for f in ident.__slots__},
        "time": s.time,
        "counters": [{"metric": k.metric, "labels": dict(k.labels), "value": cv.value,
                      "source": cv.source} for k, cv in sorted(s.counters.items())],
        "gauges": [{"metric": k.metric, "labels": dict(k.labels), "value": v}
                   for k, v in sorted(s.gauges.items())],
        "raw": dict(zip(s.raw_stats.names, s.raw_stats.values)) if s.raw_stats else None,
        "errors": [{"source": e.source, "kind": e.kind, "message": e.message}
                   for e in s.errors],
    }


def run(args: argparse.Namespace) -> int:
    from nicwatch.daemon import build_collector
    config, _ = common.load_config(args)
    collector = build_collector(config)
    try:
        result = collector.poll()
    finally:
        collector.close()
    if args.json:
        json.dump([sample_json(s) for s in result.samples], sys.stdout, indent=1)
        print()
    else:
        print(format_table(result.samples))
    return 0
