"""`nicwatch normalize`: map a pasted `ethtool -S` dump onto the canonical metric names.

Reads the dump from FILE (or stdin), applies the driver's table exactly as the daemon does,
and prints every canonical counter with the raw names that fed it. Statistics that map to
nothing stay visible as raw entries (nic_driver_stat_total / nic_driver_stat_value), so a
missing mapping is never silent. Values are in the family's base unit (seconds, bytes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from nicwatch.cli import common
from nicwatch.metrics import CANONICAL_COUNTERS, RAW_COUNTER, RAW_GAUGE
from nicwatch.model import SeriesKey
from nicwatch.normalize import RawOptions, normalize_driver_stats
from nicwatch.normalize.drivers import TABLES
from nicwatch.normalize.engine import compile_plan
from nicwatch.pasted import ethtool_text

EXIT_USAGE = common.EXIT_USAGE
EXIT_NO_STATS = common.EXIT_FAILURE
RAW = RawOptions(enabled=True)
_ORDER = {name: i for i, name in enumerate((*CANONICAL_COUNTERS, RAW_COUNTER.name,
                                            RAW_GAUGE.name))}


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="`ethtool -S` output (default: standard input)")
    p.add_argument("--driver", help="driver whose table to apply (as `ethtool -i` shows it); "
                   "default: the `driver:` line of pasted `ethtool -i` output. Known: "
                   + ", ".join(sorted(TABLES)))
    p.add_argument("--table", action="store_true",
                   help="print an aligned table instead of JSON")
    return p


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    return configure(common.add_command(
        subparsers, "normalize",
        description=__doc__.splitlines()[0]))


def _gauge(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def series(driver: str, stats: ethtool_text.EthtoolStats) -> list[dict[str, Any]]:
    """Canonical counters, then raw counters for names no rule took, then raw gauges."""
    counters, gauges = normalize_driver_stats(driver, stats.names, stats.values, RAW)
    table = TABLES[driver]
    plan = compile_plan("ethtool_ioctl", table.rules, stats.names, table, RAW)
    sources: dict[SeriesKey, list[str]] = {}
    for entry in (*plan.counters, *plan.gauges):
        sources.setdefault(entry.key, []).append(stats.names[entry.index])
    mapped = {n for k, names in sources.items() if k.metric in CANONICAL_COUNTERS for n in names}
    out = []
    for key in sorted((*counters, *gauges), key=lambda k: (_ORDER[k.metric], k.labels)):
        names = sources[key]
        if key.metric == RAW_COUNTER.name and mapped.issuperset(names):
            continue
        cv = counters.get(key)
        value = (cv.raw if cv.scale == 1 else cv.value) if cv else _gauge(gauges[key])
        out.append({"metric": key.metric, "labels": dict(key.labels), "value": value,
                    "source_stats": names})
    return out


def format_table(rows: list[dict[str, Any]]) -> str:
    cells = [("METRIC", "LABELS", "VALUE", "FROM")] + [
        (r["metric"], ",".join(f"{k}={v}" for k, v in r["labels"].items()),
         str(r["value"]),
         _sources(r["source_stats"])) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    return "\n".join(
        f"{m.ljust(widths[0])}  {lab.ljust(widths[1])}  {v.rjust(widths[2])}  {src}".rstrip()
        for m, lab, v, src in cells)


def _sources(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} more)"


def _canonical(rows: list[dict[str, Any]]) -> int:
    return sum(r["metric"] in CANONICAL_COUNTERS for r in rows)


def _best_drivers(stats: ethtool_text.EthtoolStats, top: int = 3) -> list[str]:
    """The drivers whose tables map the most of these statistics, best first."""
    scores = {d: _canonical(series(d, stats)) for d in TABLES}
    ranked = sorted((d for d in scores if scores[d]), key=lambda d: (-scores[d], d))
    return [f"{d} ({scores[d]} counters)" for d in ranked[:top]]


def _error(message: str) -> int:
    print(f"nicwatch normalize: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    try:
        text = common.read_input(args.file)
    except OSError as e:
        return _error(f"cannot read {args.file}: {e.strerror or e}")
    stats = ethtool_text.parse(text)
    if (too_big := stats.oversized_message(args.file)) is not None:
        return _error(too_big)
    driver = args.driver or stats.info.get("driver")
    if driver not in TABLES:
        what = f"unknown driver {driver!r}" if driver else (
            "no --driver given (and no `driver:` line of `ethtool -i` in the input)")
        fits = _best_drivers(stats) if stats.names else []
        if fits:  # name the tables these statistics fit, not only every table there is
            return _error(f"{what}; the tables that fit these statistics best: "
                          f"{', '.join(fits)}")
        return _error(f"{what}; known drivers: {', '.join(sorted(TABLES))}")
    for problem in stats.problems:
        print(f"nicwatch normalize: warning: {problem}", file=sys.stderr)
    if not stats.names:
        print(f"nicwatch normalize: error: no 'name: value' statistics in {args.file}",
              file=sys.stderr)
        return EXIT_NO_STATS
    rows = series(driver, stats)
    # Nothing canonical is normal for some dumps (veth; ena before 2.2.10), so it is an
    # error only when another table fits these names or the dump names another driver.
    better = [] if _canonical(rows) else _best_drivers(stats)
    pasted = stats.info.get("driver")
    if better or (not _canonical(rows) and pasted not in (None, driver)):
        hint = f"; best matching tables: {', '.join(better)}" if better else ""
        print(f"nicwatch normalize: error: driver {driver!r}: none of the {len(stats.names)} "
              f"statistics maps to a canonical counter (wrong --driver?){hint}", file=sys.stderr)
        return EXIT_NO_STATS
    if args.table:
        print(format_table(rows))
    else:
        json.dump(rows, sys.stdout, indent=1)
        print()
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_USAGE, f"nicwatch normalize: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    return run(configure(_Parser(prog="nicwatch normalize")).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
