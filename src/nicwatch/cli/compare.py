"""`nicwatch compare A B`: two runs side by side (record directories, incident directories
or snapshot files): every difference in provenance and configuration, and per family and
label the mean rate in each and the ratio, health counters first (snapshot/compare.py).

    $ nicwatch compare run-ring1024 run-ring8192
    A  run-ring1024  record  10 s from 2026-12-02 02:11:04Z  host1
    B  run-ring8192  record  10 s from 2026-12-02 02:30:15Z  host1

    ens1f0
      CONFIGURATION                       A      B
      nic_ring_descriptors{ring=rx}   1,024  8,192
        RATE                                  A          B     B/A
      ! nic_rx_out_of_buffer_drops_total  1.2k/s       0/s   x0
        nic_rx_bytes_total              340 Gb/s   392 Gb/s  x1.15

Exit status 0; 1 when a health rate of B is worse than A's by more than the margin
(--margin, default 10%: the rule and default of `record --baseline`, one rule for both); 2
for a side that cannot be read (one line naming it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from nicwatch.cli import common
from nicwatch.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from nicwatch.snapshot import compare as C
from nicwatch.snapshot.files import SnapshotError, write_atomic


def parse_margin(text: str) -> float:
    """A margin as a percentage (``10%``, ``10``) or a fraction below 1 (``0.1``)."""
    raw = text.strip().removesuffix("%")
    try:
        number = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 10%, got {text!r}"
                                         ) from None
    if not (number >= 0 and number < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a percentage of 0 or more, got {text!r}")
    return number / 100 if text.strip().endswith("%") or number >= 1 else number


MARGIN_HELP = (f"a health rate (drops, errors, discards, PAUSE/PFC) more than this above the "
               f"baseline's is worse (default {C.DEFAULT_MARGIN:.0%}; with a baseline of zero, "
               "any counted event is worse)")


def add_parser(subparsers: common.Subparsers) -> None:
    p = common.add_command(
        subparsers, "compare",
        description="Compare run B against run A (each a `nicwatch record` directory, an "
                    "incident directory or a snapshot file): provenance and configuration "
                    "differences, then per family and label the mean rate in each and B/A, "
                    "health counters first.")
    p.add_argument("a", metavar="A", help="the baseline (the earlier run)")
    p.add_argument("b", metavar="B", help="the run to compare with it")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--html", metavar="FILE", help="also write the comparison as an HTML page")
    p.add_argument("--all", action="store_true",
                   help="also series at zero in both and measured values that differ")
    p.add_argument("--margin", type=parse_margin, metavar="PERCENT",
                   help="exit 1 when a health rate of B is worse than A's by more than "
                        f"PERCENT ({MARGIN_HELP})".replace("%", "%%"))  # argparse formats


def run(args: argparse.Namespace) -> int:
    try:
        a, b = C.load_side(args.a), C.load_side(args.b)
    except C.CompareError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    c = C.compare(a, b)
    margin = C.DEFAULT_MARGIN if args.margin is None else args.margin  # as record --baseline
    if args.html:
        try:
            write_atomic(args.html, C.html_page(c, margin).encode())
        except SnapshotError as e:
            print(f"nicwatch: error: --html: {e}", file=sys.stderr)
            return EXIT_FAILURE
    if args.json:
        print(json.dumps(C.as_json(c, args.all, margin), indent=1, allow_nan=False))
    else:
        sys.stdout.write(C.text(c, args.all, margin))
    return EXIT_FAILURE if C.worse(c, margin) else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    p = common.Parser(prog="nicwatch")
    add_parser(p.add_subparsers(dest="command", required=True, parser_class=common.Parser))
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
