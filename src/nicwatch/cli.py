"""Command line: `nicwatch serve | show | normalize`.

Usage and configuration errors print one line naming the problem and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from nicwatch import __version__, check_cli, demo_cli, log, normalize_cli, snapshot_cli
from nicwatch.config import SETTINGS, Config, ConfigError, build
from nicwatch.model import Sample

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + message
        self.exit(EXIT_USAGE, f"nicwatch: error: {message}\n")


def _add_settings(p: argparse.ArgumentParser, keys: Sequence[str] | None = None,
                  config_file: bool = True) -> None:
    """Flags for the settings named by ``keys`` (all by default), declared once in SETTINGS."""
    if config_file:
        p.add_argument("--config", metavar="FILE", help="TOML configuration file (see "
                       "deploy/nicwatch.toml); flags override it.")
    for s in SETTINGS:
        if keys is not None and s.key not in keys:
            continue
        extra = {"nargs": "?", "const": "true"} if s.metavar == "BOOL" else {}
        p.add_argument(s.flag, dest=s.key, metavar=s.metavar, default=None, help=s.help, **extra)


def given_flags(args: argparse.Namespace) -> dict:
    """Settings given on the command line, by key (raw strings, parsed by config.build)."""
    return {s.key: getattr(args, s.key) for s in SETTINGS if getattr(args, s.key, None) is not None}


def _config(args: argparse.Namespace) -> tuple[Config, dict]:
    """The effective configuration; also configures logging from it."""
    flags = given_flags(args)
    config = build(args.config, flags)
    log.configure(config.log_level, config.log_format)
    return config, flags


SHOW_SETTINGS = ("path.sysfs", "interfaces.include", "interfaces.exclude", "collector.raw",
                 "collector.raw_include", "collector.raw_exclude", "collector.per_queue",
                 "collector.ethtool_netlink", "log.level", "log.format")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nicwatch", description="NIC telemetry for RoCE/RDMA and high-speed "
                "Ethernet hosts: PAUSE/PFC, drops, FEC, CRC, rings and link state, served to "
                "Prometheus.")
    p.add_argument("--version", action="version", version=f"nicwatch {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = sub.add_parser("serve", help="poll every interval and serve /metrics")
    _add_settings(serve)
    show = sub.add_parser("show", help="poll once and print a table (or --json)")
    _add_settings(show, SHOW_SETTINGS)
    show.add_argument("--json", action="store_true", help="print the same data as JSON")
    serve.set_defaults(run=cmd_serve)
    show.set_defaults(run=cmd_show)
    for module in (check_cli, snapshot_cli, normalize_cli, demo_cli):  # add_parser(sub), run(args)
        known = set(sub.choices)
        module.add_parser(sub)
        for name in set(sub.choices) - known:
            sub.choices[name].set_defaults(run=module.run)
    return p


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.1f}{suffix}{unit}"
    return f"{value:g}{unit}"


def _counter(s: Sample, metric: str) -> float | None:
    """Sum of a counter family over its labels (a family may have per-priority series)."""
    values = [cv.value for k, cv in s.counters.items() if k.metric == metric]
    return sum(values) if values else None


def _sum(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _gauge(s: Sample, metric: str, **labels: str) -> float | None:
    want = tuple(sorted(labels.items()))
    return next((v for k, v in s.gauges.items() if k.metric == metric and k.labels == want), None)


COLUMNS = (
    ("DEVICE", lambda s: s.identity.device),
    ("DRIVER", lambda s: s.identity.driver or "-"),
    ("PCI", lambda s: s.identity.pci_address or "-"),
    ("STATE", lambda s: s.reading.netclass.operstate or "-"),
    ("SPEED", lambda s: _fmt(s.reading.netclass.speed_mbps and s.reading.netclass.speed_mbps * 1e6, "b/s")),
    ("MTU", lambda s: _fmt(s.reading.netclass.mtu)),
    ("RING RX/TX (MAX)", lambda s: "{}/{} ({}/{})".format(
        *(_fmt(_gauge(s, m, ring=r)) for m in ("nic_ring_descriptors", "nic_ring_max_descriptors")
          for r in ("rx", "tx")))),
    ("CHANNELS", lambda s: _fmt(_gauge(s, "nic_channels", type="combined"))),
    ("RX BYTES", lambda s: _fmt(_counter(s, "nic_rx_bytes_total"), "B")),
    ("TX BYTES", lambda s: _fmt(_counter(s, "nic_tx_bytes_total"), "B")),
    ("PAUSE RX/TX", lambda s: "{}/{}".format(_fmt(_counter(s, "nic_rx_pause_frames_total")),
                                             _fmt(_counter(s, "nic_tx_pause_frames_total")))),
    ("PFC RX/TX", lambda s: "{}/{}".format(*(_fmt(_sum(_counter(s, f"nic_{d}_pfc_frames_total"),
                                                       _counter(s, f"nic_{d}_pfc_tc_frames_total")))
                                             for d in ("rx", "tx")))),
    ("OUT-OF-BUF", lambda s: _fmt(_counter(s, "nic_rx_out_of_buffer_drops_total"))),
    ("DISCARDS", lambda s: _fmt(_counter(s, "nic_rx_discards_total"))),
    ("CRC", lambda s: _fmt(_counter(s, "nic_rx_crc_errors_total"))),
    ("FEC UNCORR", lambda s: _fmt(_counter(s, "nic_fec_uncorrectable_blocks_total"))),
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
    path, verdict = s.reading.pcie, s.reading.pcie_verdict
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
        "raw": dict(zip(s.reading.stats.names, s.reading.stats.values)) if s.reading.stats else None,
        "errors": [{"source": e.source, "kind": e.kind, "message": e.message}
                   for e in s.reading.errors],
    }


def cmd_show(args: argparse.Namespace) -> int:
    from nicwatch.daemon import build_collector
    config, _ = _config(args)
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


def cmd_serve(args: argparse.Namespace) -> int:
    from nicwatch.daemon import Daemon
    from nicwatch.identity import StateFileError
    config, flags = _config(args)
    try:
        daemon = Daemon(config, args.config, flags)
    except StateFileError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    daemon.install_signals()
    try:
        daemon.run()
    except OSError as e:  # typically the listen address: in use, or not ours to bind
        print(f"nicwatch: error: {config.web_listen_address}: {e.strerror or e}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except ConfigError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
