"""Command line: `nicwatch COMMAND`. One module per command (common.COMMANDS names them),
each with add_parser(subparsers) and run(args), imported only when its command is run; what
they share (parser, settings flags, exit codes, the command list) is in nicwatch.cli.common."""

from __future__ import annotations

import argparse
import importlib
import os
import select
import sys
from collections.abc import Sequence

from nicwatch import __version__
from nicwatch.cli import common
from nicwatch.values import ConfigError


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line parser. Only the module of the command ``argv`` names is imported
    (each pulls in what its command runs: the collector, the daemon, the snapshot format);
    every other command is a placeholder with its help line from common.COMMANDS, which is
    all `nicwatch --help` shows. Without ``argv``, every command is built (tests)."""
    p = common.Parser(prog="nicwatch", description="NIC telemetry for RoCE/RDMA and high-speed "
                      "Ethernet hosts: PAUSE/PFC, drops, FEC, CRC, rings and link state, served to "
                      "Prometheus.",
                      epilog="Documentation: https://github.com/nicwatch/nicwatch/tree/main/docs. "
                      "A docs/NAME.md that a help text or message names is installed with "
                      "nicwatch: `nicwatch deploy docs NAME.md`.")
    p.add_argument("--version", action="version", version=f"nicwatch {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=common.Parser,
                           metavar="COMMAND")
    named = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    wanted = {c.module for c in common.COMMANDS if named is None or c.name == named}
    for c in common.COMMANDS:  # in `nicwatch --help` order
        if c.name in sub.choices:
            continue  # added with an earlier command of its module
        if c.module not in wanted:
            sub.add_parser(c.name, help=c.help, add_help=False)  # not run: its help line only
            continue
        # each module: add_parser(subparsers) for its commands, run(args) -> exit status
        command = importlib.import_module(f"nicwatch.cli.{c.module}")
        known = set(sub.choices)
        command.add_parser(sub)
        for added in set(sub.choices) - known:
            sub.choices[added].set_defaults(run=command.run)
    return p


def _stdout_reader_gone() -> bool:
    """True when standard output is a pipe nobody reads any more (POLLERR on its end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _run(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = parser(given).parse_args(given)
    try:
        status: int = args.run(args)
        return status
    except ConfigError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return common.EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """Every command, piped into `head` or `less`, stops quietly when the reader goes away:
    no BrokenPipeError traceback, exit status 141 like a tool killed by SIGPIPE."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return status
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # a socket or a child's pipe, not our reader: a real error
        # Point stdout at /dev/null so the interpreter's final flush is silent too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return common.EXIT_PIPE
