"""What every command shares: the parser class, the flags of the settings table and the exit
codes. Usage and configuration errors print one line naming the problem and exit with status 2."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from nicwatch import log
from nicwatch.config import SETTINGS, Config, build

EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran and found a problem (a failed check, no statistics, ...)
EXIT_USAGE = 2  # bad flags or configuration
EXIT_NOT_EXECUTABLE = 126  # `nicwatch record -- CMD`: CMD cannot be run (as a shell says)
EXIT_NOT_FOUND = 127  # `nicwatch record -- CMD`: CMD not found
EXIT_PIPE = 128 + signal.SIGPIPE  # the reader of standard output went away (as a shell says)


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + message
        self.exit(EXIT_USAGE, f"nicwatch: error: {message}\n")


def add_settings(p: argparse.ArgumentParser, keys: Sequence[str] | None = None,
                 config_file: bool = True, helps: dict[str, str] | None = None) -> None:
    """Flags for the settings named by ``keys`` (all by default), declared once in SETTINGS;
    ``helps`` replaces the help of a setting whose default this command changes."""
    if config_file:
        p.add_argument("--config", metavar="FILE", help="TOML configuration file (see "
                       "deploy/nicwatch.toml); flags override it.")
    for s in SETTINGS:
        if keys is not None and s.key not in keys:
            continue
        extra = {"nargs": "?", "const": "true"} if s.metavar == "BOOL" else {}
        p.add_argument(s.flag, dest=s.key, metavar=s.metavar, default=None,
                       help=(helps or {}).get(s.key, s.help), **extra)


def given_flags(args: argparse.Namespace) -> dict:
    """Settings given on the command line, by key (raw strings, parsed by config.build)."""
    return {s.key: getattr(args, s.key) for s in SETTINGS if getattr(args, s.key, None) is not None}


def load_config(args: argparse.Namespace) -> tuple[Config, dict]:
    """The effective configuration; also configures logging from it."""
    flags = given_flags(args)
    config = build(args.config, flags)
    log.configure(config.log_level, config.log_format)
    return config, flags


def read_input(path: str) -> str:
    """A pasted dump from ``path``, or standard input for ``-`` (undecodable bytes replaced:
    the parsers report what they cannot read)."""
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()
