"""Live `nicwatch diagnose` on a terminal shows its progress and the verdicts as they form
(issue #42 item 14); piped, its output is what it was. The terminal is a pseudo-terminal
the test opens (os.openpty) for stderr; stdout stays a pipe."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "helpers"))
from netns import have_root_and_tools, make_veth_pair, ns_sh

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))

pytestmark = pytest.mark.skipif(not have_root_and_tools(), reason="needs root and ip")


def _drain(fd: int, until: float) -> bytes:
    out = b""
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    return out


def test_on_a_terminal_progress_and_verdicts_show_as_they_form():
    """Blind: a veth pair whose far end flaps twice 3 s into a 10 s window. Expected on the
    terminal: progress lines counting the window, then "holds: <near end> physical_layer"
    while it still runs; on stdout (a pipe) the same JSON as without a terminal."""
    pair = make_veth_pair(subnet=33)
    master, slave = os.openpty()
    try:
        cmd = ["ip", "netns", "exec", pair.ns_a, NICWATCH, "diagnose", "--window", "10s",
               "--interval", "1s", "--interfaces.include", pair.a, "--json"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        seen = _drain(master, time.monotonic() + 5)
        for _ in range(2):
            ns_sh(pair.ns_b, "ip", "link", "set", pair.b, "down")
            ns_sh(pair.ns_b, "ip", "link", "set", pair.b, "up")
        seen += _drain(master, time.monotonic() + 60)
        out, _ = proc.communicate(timeout=60)
        terminal = seen.decode(errors="replace")
        assert proc.returncode == 1, terminal
        assert "diagnosing: " in terminal and " of 10 s, 1 interface(s)" in terminal, terminal
        assert f"holds: {pair.a} physical_layer (Physical layer)" in terminal, terminal
        assert terminal.endswith("\r\x1b[K"), repr(terminal[-40:])  # the line is cleared
        doc = json.loads(out)
        assert [v["signature"] for v in doc["verdicts"]] == ["physical_layer"]
    finally:
        os.close(master)
        pair.delete()


def test_piped_output_is_unchanged():
    pair = make_veth_pair(subnet=35)
    try:
        r = subprocess.run(["ip", "netns", "exec", pair.ns_a, NICWATCH, "diagnose",
                            "--window", "2s", "--interval", "1s", "--interfaces.include",
                            pair.a], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        assert "diagnosing:" not in r.stdout
        assert r.stdout.startswith("0 diagnosis signature(s) hold on 0 of 1 interface(s)")
    finally:
        pair.delete()
