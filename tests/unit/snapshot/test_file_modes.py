"""Issue #43 item 9: what nicwatch creates is 0600 (files) and 0700 (directories) whatever
the umask; before, under umask 000 (run outside the unit), files were 0666 and directories
0777. Only `nicwatch deploy --output` and generated docs, written to be installed for
others, are 0644 and 0755."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nicwatch.consumers.identity import IdentityState
from nicwatch.snapshot.atomicfile import AtomicFile, make_dirs, write_atomic

from paths import TESTS

NICWATCH = str(Path(sys.executable).with_name("nicwatch"))
SYSFS = TESTS / "fixtures" / "sysfs" / "cx7-gen5-healthy"


@pytest.fixture
def umask_000():
    old = os.umask(0)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes(root: Path) -> dict[str, int]:
    """Every path under ``root`` (itself excluded) and its mode."""
    return {str(p.relative_to(root)): mode(p) for p in sorted(root.rglob("*"))}


def test_atomic_files_are_the_users_alone(tmp_path, umask_000):
    write_atomic(tmp_path / "plain.json", b"{}")
    with AtomicFile(tmp_path / "streamed.json.gz", compress=True) as f:
        f.write(b"{}")
    write_atomic(tmp_path / "shared.conf", b"x", mode=0o644)
    assert modes(tmp_path) == {"plain.json": 0o600, "shared.conf": 0o644,
                               "streamed.json.gz": 0o600}


def test_directories_and_their_missing_parents_are_0700(tmp_path, umask_000):
    (tmp_path / "kept").mkdir(0o755)
    make_dirs(tmp_path / "kept" / "a" / "b" / "c")
    assert modes(tmp_path) == {"kept": 0o755, "kept/a": 0o700, "kept/a/b": 0o700,
                               "kept/a/b/c": 0o700}
    make_dirs(tmp_path / "kept" / "a")  # existing: left as it is, no error
    with pytest.raises(FileExistsError):
        (tmp_path / "file").write_text("")
        make_dirs(tmp_path / "file" / "x")


def test_the_identity_state_file_and_its_directories(tmp_path, umask_000):
    state = IdentityState(tmp_path / "state" / "nicwatch" / "state.json")
    state.save()
    assert modes(tmp_path) == {"state": 0o700, "state/nicwatch": 0o700,
                               "state/nicwatch/state.json": 0o600}


def run_umask_000(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([NICWATCH, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: os.umask(0))


def test_snapshot_and_record_output_under_umask_000(tmp_path):
    r = run_umask_000("snapshot", f"--path.sysfs={SYSFS}", "-o", "snap.json.gz", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_umask_000("record", f"--path.sysfs={SYSFS}", "--interval=1s", "-o", "runs/one",
                      "--", "true", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    found = modes(tmp_path)
    assert found.pop("runs") == found.pop("runs/one") == 0o700
    assert found and all(m == 0o600 for m in found.values()), found


def test_deploy_output_is_shared_but_not_writable_by_others(tmp_path):
    r = run_umask_000("deploy", "kubernetes", "--output", "etc/nicwatch", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    found = modes(tmp_path)
    dirs = {p: m for p, m in found.items() if (tmp_path / p).is_dir()}
    files = {p: m for p, m in found.items() if p not in dirs}
    assert files and set(files.values()) == {0o644}, files
    assert set(dirs.values()) == {0o755}, dirs
