"""`nicwatch serve` on this host's own network namespace, on a free loopback port; running it as
the unprivileged user; checking its JSON log lines."""

import atexit
import functools
import importlib.metadata
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HostDaemon:
    def __init__(self, *flags: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([_lazy()["NICWATCH"], "serve",
                                      f"--web.listen-address=127.0.0.1:{self.port}", *flags],
                                     stderr=subprocess.PIPE, text=True)
        self.stderr = ""

    def metrics(self) -> str:
        return subprocess.run(["curl", "-sf", f"http://127.0.0.1:{self.port}/metrics"],
                              capture_output=True, text=True).stdout

    def wait_for(self, text: str, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while True:
            body = self.metrics()
            if text in body:
                return body
            assert self.proc.poll() is None, "daemon exited"
            assert time.monotonic() < deadline, f"{text!r} never appeared on /metrics"
            time.sleep(0.1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, self.stderr = self.proc.communicate(timeout=5)
        return self.proc.returncode


@contextmanager
def host_daemon(*flags: str):
    daemon = HostDaemon(*flags)
    try:
        yield daemon
    finally:
        daemon.stop()


NOBODY = 65534


def _runtime_distributions() -> list[importlib.metadata.Distribution]:
    """nicwatch's distribution and those it needs at run time (its requirements without an
    extra, and theirs), not the test tools: copying the whole venv took 9 s per session."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = ["nicwatch"]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        seen[name] = dist
        for requirement in dist.requires or ():
            spec, _, marker = requirement.partition(";")
            if "extra" not in marker:
                todo.append(re.match(r"[A-Za-z0-9_.-]+", spec.strip()).group(0))
    return list(seen.values())


def _reachable_packages() -> Path:
    """A copy of nicwatch and the packages it imports that the unprivileged user can read.

    The checkout (and with it the venv and the editable install) may sit in a directory only
    root can enter, as a fresh clone in root's home does; the unprivileged daemon would then
    find no module at all. A root-owned directory of mode 0755, removed at exit. Made on first
    use (module ``__getattr__``), so a test that runs nothing as that user pays nothing."""
    root = Path(tempfile.mkdtemp(prefix="nicwatch-nobody-"))
    root.chmod(0o755)
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    site = root / "site"
    purelib = Path(sysconfig.get_paths()["purelib"])
    for dist in _runtime_distributions():
        for file in dist.files or ():
            source = Path(dist.locate_file(file)).resolve()
            if (file.parts[0] == ".." or "__pycache__" in file.parts or file.suffix == ".pth"
                    or file.name.startswith("__editable__") or not source.is_file()
                    or not source.is_relative_to(purelib)):
                continue
            target = site / source.relative_to(purelib)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    shutil.copytree(Path(__file__).resolve().parents[2] / "src" / "nicwatch", site / "nicwatch",
                    ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    (root / "bin").mkdir()
    shutil.copy(Path(sys.executable).with_name("nicwatch"), root / "bin" / "nicwatch")
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() or path.parent.name == "bin" else 0o644)
    return root


@functools.cache
def _lazy() -> dict[str, object]:
    reachable = _reachable_packages()
    return {
        "REACHABLE": reachable,
        # The console script, copied beside the packages: the unprivileged user can open it
        # (root runs the same script, importing nicwatch from the checkout).
        "NICWATCH": str(reachable / "bin" / "nicwatch"),
        # Run as uid/gid 65534 with no groups; `env` first hands it a PYTHONPATH it can read
        # (no bytecode written: the copy is not its to write).
        "AS_NOBODY": ["env", f"PYTHONPATH={reachable / 'site'}", "PYTHONDONTWRITEBYTECODE=1",
                      "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"],
    }


def __getattr__(name: str) -> object:
    """REACHABLE, NICWATCH and AS_NOBODY, made on first use."""
    if name in ("REACHABLE", "NICWATCH", "AS_NOBODY"):
        return _lazy()[name]
    raise AttributeError(name)


def check_lines(lines: list[str]) -> list[dict]:
    """Every line is one JSON event with a level and a UTC ISO timestamp."""
    events = [json.loads(line) for line in lines]
    for e in events:
        assert e["level"] in ("debug", "info", "warning", "error") and e["event"], e
        assert datetime.fromisoformat(e["timestamp"]).utcoffset() is not None, e
    return events
