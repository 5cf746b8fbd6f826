"""Issue #43 item 10: a SIGKILL during `snapshot -o` left hidden `.*.tmp` files nothing
cleaned up (each `-o` name carries the time, so no later write had the same target), and a
FIFO given as an input path hung forever."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paths import TESTS

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
SYSFS = TESTS / "fixtures" / "sysfs" / "cx7-gen5-healthy"

KILLED_WRITER = """
import os, signal, sys
from nicwatch.snapshot.atomicfile import AtomicFile
f = AtomicFile(sys.argv[1], compress=sys.argv[1].endswith(".gz"))
f.write(b"half of a snapshot")
f._file.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_writer(path: Path) -> str:
    """What a process SIGKILLed in the middle of writing ``path`` left behind."""
    before = set(os.listdir(path.parent))
    r = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], check=False)
    assert r.returncode == -signal.SIGKILL
    (left,) = set(os.listdir(path.parent)) - before
    return left


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_killed_snapshot_write_is_cleaned_up_by_the_next_one_in_its_directory(tmp_path):
    old = killed_writer(tmp_path / "nicwatch-host-20260101T000000Z.json.gz")
    young = killed_writer(tmp_path / "nicwatch-host-20260101T000500Z.json.gz")
    assert old.startswith(".nicwatch-host-20260101T000000Z.json.gz.") and old.endswith(".tmp")
    age(tmp_path / old, 11 * 60)  # older than STALE_TEMP_SECONDS: its writer is gone
    age(tmp_path / young, 5 * 60)  # may be another writer's, still running: kept
    foreign = [".notes.txt.abcd1234.tmp", ".x.json.nicwatch-abcd1234.tmp.bak"]
    for name in foreign:
        (tmp_path / name).write_text("not nicwatch's")
        age(tmp_path / name, 3600)
    r = subprocess.run([NICWATCH, "snapshot", f"--path.sysfs={SYSFS}", "-o",
                        "nicwatch-host-20260101T001000Z.json.gz"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(
        [young, *foreign, "nicwatch-host-20260101T001000Z.json.gz"])


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "input.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("argv", [
    ("diff", "{input}"),
    ("diff", "{input}", "{input}"),
    ("compare", "{input}", "{input}"),
    ("diagnose", "{input}", "{input}"),
    ("normalize", "{input}"),
])
def test_a_fifo_as_input_is_refused_in_one_line_not_waited_on(fifo, argv):
    argv = [a.format(input=fifo) for a in argv]
    r = subprocess.run([NICWATCH, *argv], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and f"{fifo}" in r.stderr, r.stderr
    assert "a FIFO, not a regular file" in r.stderr


def test_a_device_as_input_is_refused_in_one_line():
    r = subprocess.run([NICWATCH, "diff", "/dev/zero"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2
    assert r.stderr == ("nicwatch: error: /dev/zero: cannot read: a character device, "
                        "not a regular file\n")
