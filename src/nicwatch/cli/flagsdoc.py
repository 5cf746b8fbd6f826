"""Generate docs/reference/flags.md from the settings declaration (config.SETTINGS) and the
command line parser (every command's own options).

    python -m nicwatch.cli.flagsdoc > docs/reference/flags.md

A test compares the committed file with this output, so a flag added to SETTINGS or to a
command's parser is documented by regenerating, and a stale page fails the suite."""

from __future__ import annotations

import argparse
import sys

from nicwatch import config
from nicwatch.cli import common
from nicwatch.values import show_bytes, show_seconds

COMMAND = "python -m nicwatch.cli.flagsdoc > docs/reference/flags.md"

INTRO = f"""\
# Flags and TOML keys

<!-- Generated from src/nicwatch/config.py (SETTINGS) and the command line parser. Do not
edit: regenerate with `{COMMAND}` (a test fails when this file is stale). -->

Every setting is a flag and a key of the TOML file given with `--config FILE`
(`deploy/nicwatch.toml`, `nicwatch deploy config nicwatch.toml`, has every key, commented
out); flags win over the file. `BOOL` flags take `=true`/`=false`, and alone mean true; a
collector switch `--[no-]collector.NAME` is also turned off by `--no-collector.NAME`, and
`--collector.disable-defaults` turns off every switch not turned on by name. The
syntax of durations, sizes and regular expressions, the port, the web config file and
signals: [configuration.md](configuration.md). Per-setting notes the table has no room for:
[configuration.md, "Notes on the settings"](configuration.md#notes-on-the-settings).
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(s: config.Setting) -> str:
    d = s.default
    if d is None or d == "" or d == ():
        return ""
    if isinstance(d, bool):
        return f"`{str(d).lower()}`"
    if s.metavar == "DURATION":
        return f"`{show_seconds(d)}`"
    if s.metavar == "SIZE":
        return f"`{show_bytes(d)}`"
    if isinstance(d, tuple):
        return "`" + ",".join(d) + "`"
    return f"`{d}`"


def _settings_table() -> list[str]:
    lines = ["## Settings (`nicwatch serve`; the commands below take the ones they name)", "",
             "| flag | TOML key | default | meaning |", "|---|---|---|---|"]
    for s in config.SETTINGS:
        flag = f"`{s.flag}[={s.metavar}]`" if s.metavar == "BOOL" else f"`{s.flag} {s.metavar}`"
        if s.key in config.COLLECTOR_KEYS:
            flag = f"`--[no-]{s.flag[2:]}[={s.metavar}]`"
        lines.append(f"| {flag} | `{s.key}` | {_default(s)} | {_cell(s.help)} |")
    return lines + [""]


def _option(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
    if action.option_strings and action.nargs != 0:
        metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        names += f" `{metavar}`"
    help = action.help or ""
    if "%" in help:
        help = parser._get_formatter()._expand_help(action)  # %(default)s and the like
    return f"| {names} | {_cell(help)} |"


def _commands() -> list[str]:
    from nicwatch.cli.main import parser

    settings = {s.flag for s in config.SETTINGS} | {
        "--no-" + s.flag[2:] for s in config.SETTINGS if s.key in config.COLLECTOR_KEYS}
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    lines = ["## Each command's options", "",
             "Settings flags a command takes are listed by name only; their meaning is in the "
             "table above. What each command does: [commands.md](commands.md).", ""]
    for c in common.COMMANDS:
        p = sub.choices[c.name]
        taken = [a.option_strings[0] for a in p._actions
                 if a.option_strings and a.option_strings[0] in settings
                 and not a.option_strings[0].startswith("--no-")]
        own = [a for a in p._actions if not isinstance(a, argparse._HelpAction)
               and not (a.option_strings and a.option_strings[0] in settings)
               and not isinstance(a, argparse._SubParsersAction)]
        lines += [f"### `nicwatch {c.name}`", "", _cell(c.help) + ".", ""]
        if own:
            lines += ["| option or argument | meaning |", "|---|---|"]
            lines += [_option(p, a) for a in own]
            lines.append("")
        for s in p._actions:  # `nicwatch module decode`, `nicwatch incidents show`
            if isinstance(s, argparse._SubParsersAction):
                for name, child in s.choices.items():
                    lines += [f"`nicwatch {c.name} {name}`:", "",
                              "| option or argument | meaning |", "|---|---|"]
                    lines += [_option(child, a) for a in child._actions
                              if not isinstance(a, argparse._HelpAction)]
                    lines.append("")
        if taken:
            lines += ["Settings: " + ", ".join(f"`{f}`" for f in taken) + ".", ""]
    return lines


def render() -> str:
    return "\n".join([INTRO, *_settings_table(), *_commands()]).rstrip("\n") + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
