"""The command list: `nicwatch --help` imports no command (each is imported when run), and
the one table of commands (cli/common.COMMANDS) says what each module registers."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

from nicwatch.cli import common
from nicwatch.cli.main import parser


def _subparsers(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))


def test_help_imports_no_command_nor_what_commands_run():
    script = ("import sys, contextlib, io\n"
              "from nicwatch.cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
              "    try:\n"
              "        main(['--help'])\n"
              "    except SystemExit:\n"
              "        pass\n"
              "import json\n"
              "print(json.dumps({'modules': sorted(m for m in sys.modules "
              "if m.startswith('nicwatch')), 'help': out.getvalue()}))\n")
    got = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                    text=True, check=True).stdout)
    assert got["modules"] == ["nicwatch", "nicwatch.cli", "nicwatch.cli.common",
                              "nicwatch.cli.main", "nicwatch.values", "nicwatch.values.units"]
    for c in common.COMMANDS:
        assert c.name in got["help"]


def test_each_module_registers_the_commands_the_table_gives_it_with_their_help():
    modules = {c.module for c in common.COMMANDS}
    for module in sorted(modules):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"nicwatch.cli.{module}").add_parser(sub)
        assert list(sub.choices) == [c.name for c in common.COMMANDS if c.module == module]
        helps = {a.dest: a.help for a in sub._choices_actions}
        assert helps == {c.name: c.help for c in common.COMMANDS if c.module == module}


def test_a_command_named_gets_its_own_parser_and_the_others_a_help_line():
    for c in common.COMMANDS:
        sub = _subparsers(parser([c.name]))
        assert list(sub.choices) == [x.name for x in common.COMMANDS]  # --help order
        real = {name for name, p in sub.choices.items() if p.get_default("run") is not None}
        assert real == {x.name for x in common.COMMANDS if x.module == c.module}


def test_a_bad_command_is_one_line_and_exit_2():
    r = subprocess.run([sys.executable, "-m", "nicwatch", "nonesuch"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nonesuch" in r.stderr


def _nicwatch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nicwatch", *args], capture_output=True,
                          text=True, check=False)


def test_bare_nicwatch_prints_usage_and_the_command_list():
    """Issue #42 item 3: a bare `nicwatch` said only "the following arguments are required"."""
    r = _nicwatch()
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr.startswith("usage: nicwatch "), r.stderr
    listed = " ".join(r.stderr.split())
    for c in common.COMMANDS:
        assert f"{c.name} {' '.join(c.help.split())}" in listed, c.name
    assert r.stderr.splitlines()[-1] == ("nicwatch: error: name a command (above); "
                                         "`nicwatch COMMAND --help` describes it")


def test_a_command_missing_its_arguments_prints_its_usage_and_options():
    for args, missing, option in ((("diff",), "A", "--json"), (("compare", "a"), "B", "--margin")):
        r = _nicwatch(*args)
        assert (r.returncode, r.stdout) == (2, ""), r.stderr
        assert r.stderr.startswith(f"usage: nicwatch {args[0]} "), r.stderr
        assert option in r.stderr, r.stderr
        assert r.stderr.splitlines()[-1] == (
            f"nicwatch: error: the following arguments are required: {missing}")


def test_other_usage_errors_stay_one_line():
    r = _nicwatch("diff", "--bogus", "a")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "nicwatch: error: unrecognized arguments: --bogus\n"
