"""What every command shares: the parser class, the flags of the settings table and the exit
codes. Usage and configuration errors print one line naming the problem and exit with status 2."""

from __future__ import annotations

import argparse
import http.client
import signal
import sys
import urllib.error
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

if TYPE_CHECKING:  # config is imported by the commands that read settings, when they run
    from nicwatch.config import Config

if TYPE_CHECKING:  # what add_parser(subparsers) is given (generic only in the stubs)
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran and found a problem (a failed check, no statistics, ...)
EXIT_USAGE = 2  # bad flags or configuration
EXIT_NOT_EXECUTABLE = 126  # `nicwatch record -- CMD`: CMD cannot be run (as a shell says)
EXIT_NOT_FOUND = 127  # `nicwatch record -- CMD`: CMD not found
EXIT_PIPE = 128 + signal.SIGPIPE  # the reader of standard output went away (as a shell says)


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    module: str  # nicwatch.cli.<module>: add_parser(subparsers) adds it, run(args) runs it
    help: str  # its line in `nicwatch --help`


# Every command, in `nicwatch --help` order: the one place their help lines are written (each
# module's add_parser takes its own from here: add_command).
COMMANDS: tuple[Command, ...] = (
    Command("serve", "serve", "poll every interval and serve /metrics"),
    Command("show", "show", "poll once and print a table (or --json)"),
    Command("check", "check", "poll once and check the configured expectations (exit 0 pass, "
            "1 violation, 2 configuration error)"),
    Command("snapshot", "snapshot", "save every interface's counters and state with "
            "provenance"),
    Command("diff", "snapshot", "counter deltas and rates between two snapshots"),
    Command("record", "snapshot", "snapshot, sample and report around a command"),
    Command("history", "snapshot", "save the running daemon's recent polls (flight recorder)"),
    Command("compare", "compare", "two runs side by side: configuration differences and "
            "rates, health counters first"),
    Command("incidents", "incidents", "list the incidents the daemon captured, or show one's "
            "report"),
    Command("diagnose", "diagnose", "name the likely cause (diagnosis signatures) with its "
            "evidence, live or from saved evidence (exit 0 none, 1 some hold, 2 usage)"),
    Command("fabric", "fabric", "the fabric from Prometheus: each link with both ends, their "
            "health and verdicts, configuration drift (exit 0 healthy, 1 something holds)"),
    Command("normalize", "normalize", "map pasted `ethtool -S` output to canonical metric "
            "names"),
    Command("module", "module", "pluggable transceiver modules (decode saved `ethtool -m` "
            "dumps)"),
    Command("demo", "demo", "run the daemon over simulated ports with scripted faults"),
    Command("deploy", "deploy", "print or write the shipped deployment files (systemd, rules, "
            "dashboards, kubernetes, config)"),
)
_HELP = {c.name: c.help for c in COMMANDS}


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line naming the problem; a command (or a bare `nicwatch`) missing its
        arguments also gets its help first (usage and the command or option list): that
        line alone does not say what to type."""
        if message.startswith("the following arguments are required"):
            self.print_help(sys.stderr)
            if self.prog == "nicwatch":  # the command itself is missing
                message = "name a command (above); `nicwatch COMMAND --help` describes it"
            self.exit(EXIT_USAGE, f"\nnicwatch: error: {message}\n")
        self.exit(EXIT_USAGE, f"nicwatch: error: {message}\n")


def add_command(subparsers: Subparsers, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The parser of command ``name``, with its help line from COMMANDS."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=_HELP[name], **kwargs)
    return parser


def add_settings(p: argparse.ArgumentParser, keys: Sequence[str] | None = None,
                 config_file: bool = True, helps: dict[str, str] | None = None) -> None:
    """Flags for the settings named by ``keys`` (all by default), declared once in SETTINGS;
    ``helps`` replaces the help of a setting whose default this command changes."""
    from nicwatch.config import COLLECTOR_KEYS, SETTINGS
    if config_file:
        p.add_argument("--config", metavar="FILE", help="TOML configuration file (see "
                       "deploy/nicwatch.toml); flags override it.")
    for s in SETTINGS:
        if keys is not None and s.key not in keys:
            continue
        help = (helps or {}).get(s.key, s.help)
        if s.metavar == "BOOL":
            p.add_argument(s.flag, dest=s.key, metavar=s.metavar, default=None, help=help,
                           nargs="?", const="true")
            if s.key in COLLECTOR_KEYS:  # node_exporter's --no-collector.NAME
                p.add_argument("--no-" + s.flag[2:], dest=s.key, action="store_const",
                               const="false", help=argparse.SUPPRESS)
        else:
            p.add_argument(s.flag, dest=s.key, metavar=s.metavar, default=None, help=help)


def given_flags(args: argparse.Namespace) -> dict[str, Any]:
    """Settings given on the command line, by key (raw strings, parsed by config.build)."""
    from nicwatch.config import SETTINGS
    return {s.key: getattr(args, s.key) for s in SETTINGS if getattr(args, s.key, None) is not None}


def load_config(args: argparse.Namespace) -> tuple[Config, dict[str, Any]]:
    """The effective configuration; also configures logging from it."""
    import nicwatch.consumers.registry  # noqa: F401  (registers the sections consumers own)
    from nicwatch import log
    from nicwatch.config import build
    flags = given_flags(args)
    config = build(args.config, flags)
    log.configure(config.log_level, config.log_format)
    return config, flags


# What a command reads of an HTTP error's body to name the error (history, incidents): the
# daemon's are one line; a server that sends more is not read further.
MAX_ERROR_BODY = 4096


def http_error_detail(e: urllib.error.HTTPError) -> str:
    """The first line of an HTTP error's body, at most MAX_ERROR_BODY bytes of it read, or
    the reason phrase; escaped for the terminal."""
    from nicwatch.printable import printable
    try:
        body = e.read(MAX_ERROR_BODY)
    except (OSError, http.client.HTTPException):
        body = b""
    finally:
        e.close()
    text = body.decode("utf-8", "replace").strip().split("\n", 1)[0].strip()
    return printable(text or str(e.reason))


def read_input(path: str) -> str:
    """A pasted dump from ``path``, or standard input for ``-`` (undecodable bytes replaced:
    the parsers report what they cannot read)."""
    if path == "-":
        return sys.stdin.read()
    from nicwatch.snapshot.atomicfile import open_input
    with open_input(path) as f:  # a FIFO or a device: OSError naming it, never a hang
        return f.read().decode("utf-8", "replace")
