"""Security: the daemon needs no privilege (an unprivileged user with no capabilities gets
every series root gets; the hardened variant on a veth is in test_deploy.py), write
endpoints are off unless enabled, credentials never reach the log, and nothing is written
outside the state directory."""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest

from nicwatch.config import build
from nicwatch.daemon import Daemon

from faults import Process
from hostd import AS_NOBODY, NICWATCH, NOBODY
from paths import REPO


@pytest.fixture
def nobody_dir(reachable_dir):
    """A state directory owned by the unprivileged user."""
    state = reachable_dir / "state"
    state.mkdir()
    shutil.chown(state, NOBODY, NOBODY)
    return state


def capabilities(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {k: int(v, 16)
            for k, v in re.findall(r"^(Cap\w+):\s+([0-9a-f]+)$", status, re.MULTILINE)}


def test_unprivileged_user_gets_every_series_root_gets(nobody_dir, tmp_path):
    """On this host's eth0 (virtio_net): SIOCETHTOOL reads, ethtool netlink, sysfs, the
    uevent socket and the state file all work without a capability."""
    user = Process(f"--state.file={nobody_dir / 'identity.json'}", prefix=tuple(AS_NOBODY))
    root = Process(f"--state.file={tmp_path / 'identity.json'}")
    try:
        got, want = user.metrics(), root.metrics()
        caps = capabilities(user.proc.pid)
    finally:
        try:
            user_log = user.stop()
        finally:
            root.stop()
    assert caps["CapEff"] == caps["CapPrm"] == 0

    def keys(m: dict) -> set:
        return {k for k in m if k[0] != "nicwatch_build_info"}

    assert keys(got) == keys(want)
    assert len([k for k in got if ("device", "eth0") in k[1]]) > 20
    assert not any(k[0] == "nicwatch_source_errors_total" for k in got)
    assert '"udev_unavailable"' not in user_log and '"state_file_failed"' not in user_log
    assert (nobody_dir / "identity.json").stat().st_uid == NOBODY


def test_write_endpoints_are_off_by_default(tmp_path):
    """The daemon's own server, as `serve` builds it: its write route (POST
    /api/v1/snapshots, which reads the kernel on demand) and any route registered as a
    write route answer 403 without running; read routes answer."""
    config = build(None, {"web.listen_address": "127.0.0.1:0", "interval": "0.2s",
                          "state.file": str(tmp_path / "identity.json")})
    daemon = Daemon(config)
    runner = threading.Thread(target=daemon.run)
    runner.start()
    calls = []
    try:
        while daemon.server is None or daemon.polls < 1:
            assert runner.is_alive()
            time.sleep(0.02)
        server = daemon.server
        assert server.allow_writes is False
        server.add_route("POST", "/api/v1/test-write",
                         lambda q, b: calls.append(b) or (200, "text/plain", b"written\n"),
                         write=True)
        url = f"http://127.0.0.1:{server.port}/api/v1/"
        for path in ("snapshots", "test-write"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url + path, b"{}", method="POST"))
            assert refused.value.code == 403, path
        with urllib.request.urlopen(url + "history") as r:
            assert r.status == 200
    finally:
        daemon.stop_event.set()
        runner.join()
    assert calls == []


PASSWORD = "correct horse battery staple"
WRONG = "hunter2-wrong-password"


def test_credentials_never_reach_the_log(tmp_path):
    """Basic-auth users in the web config: right, wrong and malformed credentials, a web
    config that changes, one that breaks, SIGHUP; at debug level. Neither passwords, nor
    their bcrypt hashes, nor the Authorization headers appear on stderr."""
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    rotated = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  prometheus: {hashed}\n")
    p = Process(f"--state.file={tmp_path / 'identity.json'}", f"--web.config.file={web}",
                "--log.level=debug")
    secrets = [PASSWORD, WRONG, hashed, rotated, hashed[7:], rotated[7:]]
    try:
        def status(*curl: str) -> str:
            return p.get("/metrics", *curl).stdout.rpartition("\n")[2]

        deadline = time.monotonic() + 10
        while status("-u", f"prometheus:{PASSWORD}") != "200":
            assert p.proc.poll() is None and time.monotonic() < deadline, p.log()
            time.sleep(0.05)
        headers = []
        for user, password in (("prometheus", WRONG), ("admin", PASSWORD), ("prometheus", "")):
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers.append(token)
            assert status("-H", f"Authorization: Basic {token}") == "401"
        assert status("-H", "Authorization: Basic %%%not-base64") == "401"
        web.write_text(f"basic_auth_users:\n  prometheus: {rotated}\n")
        time.sleep(1.2)  # the web config is checked for changes once a second
        assert status("-u", f"prometheus:{PASSWORD}") == "200"
        web.write_text(f"basic_auth_users:\n  prometheus: {rotated[:30]}\n  bad: [\n")
        time.sleep(1.2)
        assert status("-u", f"prometheus:{PASSWORD}") == "200"  # the previous one stays
        p.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        secrets.append(base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode())
        secrets += headers
    finally:
        log = p.stop()
    assert '"web_config_reloaded"' in log and '"web_config_reload_failed"' in log
    assert '"reload_unchanged"' in log  # SIGHUP re-read the same settings
    leaked = [s for s in secrets if s and s in log]
    assert leaked == []


WRITES = re.compile(r"\b(open|openat|openat2|creat|mkdir|mkdirat|rename|renameat|renameat2|"
                    r"unlink|unlinkat|rmdir|link|linkat|symlink|symlinkat|chmod|fchmodat|"
                    r"chown|lchown|fchownat|truncate|utimensat|mknod|mknodat)\((.*)")
FOR_WRITING = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def written_paths(trace: str) -> list[tuple[str, str]]:
    """(call, path) of every path-based call in an strace log that may change the file
    system (opens for writing, creating, removing, renaming, linking, changing a file),
    whether it succeeded or not."""
    out = []
    for line in trace.splitlines():
        m = WRITES.search(line)
        if m is None:
            continue
        call, args = m.group(1), m.group(2).rsplit(" = ", 1)[0]
        if call.startswith("open") and not FOR_WRITING.search(args):
            continue
        out += [(call, path) for path in QUOTED.findall(args)]
    return out


def test_nothing_is_written_outside_the_state_directory(tmp_path):
    """Every file-system call of the daemon and its children, through start, polls, scrapes
    (plain and gzip), a web config change, SIGHUP and stop, under strace. Bytecode caching
    is the interpreter's, not the daemon's, so it is off (PYTHONDONTWRITEBYTECODE)."""
    assert shutil.which("strace"), "strace is needed (scripts/test installs it)"
    state = tmp_path / "state"
    web = tmp_path / "web.yml"
    web.write_text("http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
    trace = tmp_path / "trace"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    p = Process(f"--state.file={state / 'identity.json'}", f"--web.config.file={web}",
                prefix=("strace", "-f", "-qq", "-s", "4096", "-o", str(trace), "-e", "trace=%file"),
                env=env)
    try:
        p.metrics()
        p.get("/metrics", "--compressed")
        web.write_text("http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n")
        time.sleep(1.2)
        p.get("/metrics")
        p.proc.send_signal(signal.SIGHUP)
        p.metrics(polls=4)
    finally:
        p.stop()
    writes = written_paths(trace.read_text())
    assert ("rename", str(state / "identity.json")) in writes  # the state file was written
    outside = {(call, path) for call, path in writes
               if not (path == str(state) or path.startswith(f"{state}/") or path == "/dev/null")}
    assert outside == set()


def _nobody_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "XDG_STATE_HOME", "STATE_DIRECTORY")}
    return {**env, **extra}


def test_unprivileged_serve_with_defaults_keeps_state_in_the_users_state_directory(
        reachable_dir):
    """`nicwatch serve` as uid 65534 with no --state.file: /var/lib/nicwatch is not its to
    write, so the state file goes to ~/.local/state/nicwatch, and /metrics is served."""
    home = reachable_dir / "home"
    home.mkdir()
    shutil.chown(home, NOBODY, NOBODY)
    p = Process(prefix=tuple(AS_NOBODY), env=_nobody_env(HOME=str(home)))
    try:
        metrics = p.metrics()
    finally:
        log = p.stop()
    assert ("nicwatch_polls_total", ()) in metrics
    state = home / ".local" / "state" / "nicwatch" / "identity.json"
    assert state.stat().st_uid == NOBODY
    assert '"state_file_disabled"' not in log and '"state_file_failed"' not in log
    assert str(state) in log  # which file it chose is said once, at start


def test_unprivileged_serve_with_no_writable_state_directory_warns_once(reachable_dir):
    """Nowhere to write (no HOME of its own): the daemon serves anyway, without identity
    persistence, and says so in one warning."""
    p = Process(prefix=tuple(AS_NOBODY), env=_nobody_env(HOME="/nonexistent"))
    try:
        metrics = p.wait_polls(3)
    finally:
        log = p.stop()
    assert ("nicwatch_polls_total", ()) in metrics
    assert log.count('"state_file_disabled"') == 1
    assert '"state_file_failed"' not in log


def test_explicit_unwritable_state_file_is_one_line_exit_2(reachable_dir):
    """An explicit --state.file is never silently replaced by a default."""
    r = subprocess.run([*AS_NOBODY, NICWATCH, "serve", "--web.listen-address=127.0.0.1:0",
                        f"--state.file={reachable_dir / 'identity.json'}"],
                       capture_output=True, text=True, timeout=30, env=_nobody_env())
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and str(reachable_dir / "identity.json") in r.stderr
    assert "Traceback" not in r.stderr



def test_unprivileged_serve_with_the_shipped_example_config(reachable_dir):
    """The shipped example set state.file to /var/lib/nicwatch/identity.json, so `serve
    --config nicwatch.toml` failed as a non-root user where plain `serve` worked; every key
    of the generated example is commented out, so it serves as uid 65534 like the defaults."""
    home = reachable_dir / "home"
    home.mkdir()
    shutil.chown(home, NOBODY, NOBODY)
    config = reachable_dir / "nicwatch.toml"
    shutil.copy(REPO / "deploy" / "nicwatch.toml", config)
    config.chmod(0o644)
    p = Process(f"--config={config}", prefix=tuple(AS_NOBODY),
                env=_nobody_env(HOME=str(home)))
    try:
        metrics = p.metrics()
    finally:
        log = p.stop()
    assert ("nicwatch_polls_total", ()) in metrics, log
    assert (home / ".local" / "state" / "nicwatch" / "identity.json").stat().st_uid == NOBODY
