"""What the systemd units `nicwatch deploy systemd` writes run (issue #42 item 10): the
console script of the installation that runs deploy; without one (nicwatch run as
`python -m nicwatch` from an interpreter whose scripts directory has none) that
interpreter with -m; a path with a space quoted as systemd reads ExecStart=."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from nicwatch.cli import deploy


def _install(folder: Path) -> Path:
    folder.mkdir(parents=True)
    script = folder / "nicwatch"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return script


def test_the_console_script_of_this_installation(tmp_path: Path, monkeypatch) -> None:
    script = _install(tmp_path / "opt nicwatch" / "bin")
    monkeypatch.setattr(deploy.sysconfig, "get_path", lambda name: str(script.parent))
    command, path = deploy.running_command()
    assert (command, path) == (f'"{script}"', str(script))
    unit = deploy.content("systemd", "nicwatch.service").decode()
    (start,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert shlex.split(start.removeprefix("ExecStart="))[:2] == [str(script), "serve"]


def test_without_a_console_script_the_interpreter_runs_the_module(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.setattr(deploy.sysconfig, "get_path", lambda name: str(tmp_path))
    python = tmp_path / "py" / "python3"  # an interpreter with no nicwatch script beside it
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    monkeypatch.setattr(deploy.sys, "executable", str(python))
    command, path = deploy.running_command()
    assert (command, path) == (f"{python} -m nicwatch", str(python))
    # the command the unit runs works: the module's --version
    r = subprocess.run([*shlex.split(command), "--version"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0 and r.stdout.startswith("nicwatch "), r.stderr


@pytest.mark.parametrize("name", ["nicwatch.service", "nicwatch.service.d/socket-activation.conf"])
def test_every_unit_that_runs_nicwatch_is_rewritten(name: str) -> None:
    shipped = deploy.read("systemd", name).decode()
    written = deploy.content("systemd", name).decode()
    assert f"ExecStart={deploy.UNIT_COMMAND} " in shipped
    assert f"ExecStart={deploy.UNIT_COMMAND} " not in written
