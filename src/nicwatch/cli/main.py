"""Command line: `nicwatch COMMAND`. One module per command in COMMANDS, each with
add_parser(subparsers) and run(args); what they share (parser, settings flags, exit codes) is
in nicwatch.cli.common."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nicwatch import __version__
from nicwatch.cli import check, common, demo, normalize, serve, show, snapshot
from nicwatch.config import ConfigError

COMMANDS = (serve, show, check, snapshot, normalize, demo)  # in `nicwatch --help` order


def parser() -> argparse.ArgumentParser:
    p = common.Parser(prog="nicwatch", description="NIC telemetry for RoCE/RDMA and high-speed "
                      "Ethernet hosts: PAUSE/PFC, drops, FEC, CRC, rings and link state, served to "
                      "Prometheus.")
    p.add_argument("--version", action="version", version=f"nicwatch {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=common.Parser)
    for module in COMMANDS:  # each: add_parser(subparsers), run(args) -> exit status
        known = set(sub.choices)
        module.add_parser(sub)
        for name in set(sub.choices) - known:
            sub.choices[name].set_defaults(run=module.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except ConfigError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return common.EXIT_USAGE
    except KeyboardInterrupt:
        return 130
