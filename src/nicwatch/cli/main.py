"""Command line: `nicwatch COMMAND`. One module per command in COMMANDS, each with
add_parser(subparsers) and run(args); what they share (parser, settings flags, exit codes) is
in nicwatch.cli.common."""

from __future__ import annotations

import argparse
import os
import select
import sys
from collections.abc import Sequence

from nicwatch import __version__
from nicwatch.cli import (
    check,
    common,
    demo,
    deploy,
    incidents,
    module,
    normalize,
    serve,
    show,
    snapshot,
)
from nicwatch.config import ConfigError

# in `nicwatch --help` order
COMMANDS = (serve, show, check, snapshot, incidents, normalize, module, demo, deploy)


def parser() -> argparse.ArgumentParser:
    p = common.Parser(prog="nicwatch", description="NIC telemetry for RoCE/RDMA and high-speed "
                      "Ethernet hosts: PAUSE/PFC, drops, FEC, CRC, rings and link state, served to "
                      "Prometheus.")
    p.add_argument("--version", action="version", version=f"nicwatch {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=common.Parser)
    for command in COMMANDS:  # each: add_parser(subparsers), run(args) -> exit status
        known = set(sub.choices)
        command.add_parser(sub)
        for name in set(sub.choices) - known:
            sub.choices[name].set_defaults(run=command.run)
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
    args = parser().parse_args(argv)
    try:
        return args.run(args)
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
