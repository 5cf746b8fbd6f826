"""`nicwatch module decode`: decode a saved `ethtool -m DEV hex on` dump into nic_module_* values.

Reads FILE (or standard input), places its bytes in the module's memory map (SFF-8472 SFP,
SFF-8636 QSFP+/QSFP28, CMIS QSFP-DD/OSFP) exactly as the daemon's decoder sees a module read
by the kernel, and prints every value as JSON ({metric, labels, value}, base units) or, with
--table, as an aligned table with the power in mW and dBm. A dump of only some pages decodes
what those pages hold. Exit status: 0 decoded; 1 a dump, but nothing decodable in it (no
lower page, or a module type nicwatch does not decode); 2 not a dump, or an unreadable file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from nicwatch.cli import common
from nicwatch.normalize.module import decode, identify
from nicwatch.normalize.module.common import ModuleValue, identifier_name
from nicwatch.normalize.module.hexdump import DumpError, parse

PROG = "nicwatch module decode"


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="`ethtool -m DEV hex on` output (default: standard input); put each "
                   "`ethtool -m DEV page N hex on` block under its command line or a "
                   "`# page N` line")
    p.add_argument("--table", action="store_true", help="print an aligned table instead of JSON")
    return p


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    module = common.add_command(
        subparsers, "module",
        description="Pluggable transceiver modules (SFP, QSFP, QSFP-DD, OSFP).")
    actions = module.add_subparsers(dest="action", required=True, parser_class=common.Parser)
    return configure(actions.add_parser("decode", help=__doc__.splitlines()[0].split(": ", 1)[1],
                                        description=__doc__.splitlines()[0]))


def _error(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def rows(values: Iterable[ModuleValue]) -> list[dict[str, Any]]:
    return [{"metric": v.metric, "labels": v.labels, "value": v.value} for v in values]


def _human(metric: str, value: float) -> str:
    if metric.endswith("_watts"):
        dbm = f"{10 * math.log10(value * 1000):.2f} dBm" if value > 0 else "-inf dBm"
        return f"{value * 1000:.4f} mW ({dbm})"
    if metric.endswith("_amperes"):
        return f"{value * 1000:.3f} mA"
    if metric.endswith("_celsius"):
        return f"{value:.2f} C"
    if metric.endswith("_volts"):
        return f"{value:.4f} V"
    if metric == "nic_module_flag":
        return "set" if value else "clear"
    return ""


def format_table(data: list[dict[str, Any]]) -> str:
    cells = [("METRIC", "LABELS", "VALUE", "")] + [
        (r["metric"], ",".join(f"{k}={v}" for k, v in r["labels"].items()), f"{r['value']:g}",
         _human(r["metric"], r["value"])) for r in data]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    return "\n".join(f"{m.ljust(widths[0])}  {lab.ljust(widths[1])}  {v.rjust(widths[2])}  {h}"
                     .rstrip() for m, lab, v, h in cells)


def run(args: argparse.Namespace) -> int:
    try:
        text = common.read_input(args.file)
    except OSError as e:
        return _error(f"cannot read {args.file}: {e.strerror or e}", common.EXIT_USAGE)
    try:
        dump = parse(text)
    except DumpError as e:
        return _error(f"{args.file}: {e}", common.EXIT_USAGE)
    for problem in dump.problems:
        print(f"{PROG}: warning: {problem}", file=sys.stderr)
    lower = dump.eeprom.lower.get(0x50)
    if not lower:
        return _error(f"{args.file}: no lower page of i2c address 0x50 (bytes 0x00-0x7f), "
                      "whose identifier byte says how to read the rest", common.EXIT_FAILURE)
    if identify(dump.eeprom) is None:
        return _error(f"{args.file}: module identifier 0x{lower[0]:02x} "
                      f"({identifier_name(lower[0])}) is not one nicwatch decodes (SFF-8472, "
                      "SFF-8636/8436 or CMIS)", common.EXIT_FAILURE)
    data = rows(decode(dump.eeprom))
    if args.table:
        print(format_table(data))
    else:
        json.dump(data, sys.stdout, indent=1)
        print()
    return common.EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(configure(common.Parser(prog=PROG)).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
