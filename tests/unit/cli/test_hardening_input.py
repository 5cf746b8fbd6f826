"""Issue #43 item 7 (part): inputs that gave tracebacks instead of one line naming the
problem. Each test runs the real command, as the report did."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))


def nicwatch(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([NICWATCH, *argv], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", ["check", "serve"])
@pytest.mark.parametrize("toml", ["interval = {n}\n", "[expectations]\nx = {n}\n",
                                  "[web]\nlisten_address = [{n}]\n"])
def test_a_config_with_a_5000_digit_integer_is_one_line_and_exit_2(tmp_path, command, toml):
    """Before: tomllib's int() raised ValueError (Exceeds the limit (4300 digits)) out of
    read_file: a traceback."""
    config = tmp_path / "nicwatch.toml"
    config.write_text(toml.format(n="9" * 5000))
    r = nicwatch(command, "--config", str(config))
    assert r.returncode == 2, r.stderr[-1500:]
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr[-1500:]
    assert f"{config}: holds an integer of more than 4300 digits" in r.stderr


@pytest.mark.parametrize("key, value, why", [
    ("onset", "1" + "0" * 400, "'onset' is not a time from 1970 to 9999"),
    ("onset", "-5", "'onset' is not a time from 1970 to 9999"),
    ("value", "1" + "0" * 400, "'value' is not a finite number"),
    ("end", "1" + "0" * 400, "'end' is not a time from 1970 to 9999"),
])
def test_incidents_dir_with_a_huge_onset_skips_the_entry_in_one_line(tmp_path, key, value, why):
    """Before: `nicwatch incidents --dir` with a 401-digit onset: OverflowError (int too
    large to convert to float) from the time formatting, a traceback, exit 1. A crafted
    incident.json is skipped and named, as the others are (docs/failure-behaviour.md)."""
    name = "20200101T000000.000Z-eth0-x-0123abcd"
    (tmp_path / name).mkdir()
    meta = {"id": name, "device": "eth0", "onset": 1.6e9, "trigger": {"name": "t"}}
    text = json.dumps(meta)[:-1] + f', "{key}": {value}}}'
    (tmp_path / name / "incident.json").write_text(text)
    r = nicwatch("incidents", "--dir", str(tmp_path))
    assert "Traceback" not in r.stderr, r.stderr[-1500:]
    assert r.returncode == 0 and r.stderr.count("\n") == 1
    assert name in r.stderr and why in r.stderr, r.stderr
