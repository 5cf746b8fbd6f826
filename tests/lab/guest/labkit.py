"""What the guest's scenarios share: running the kernel's tools, running nicwatch, the
daemon's /metrics, sysfs/debugfs writes, and the console protocol (see tests/lab/qemu.py).

Runs inside the lab guest only (Debian's Python, nicwatch from /lab/src). The kernel's tools
are the reference: a scenario records their output next to nicwatch's, in the same guest, at
the same moment, and the host-side tests compare the two.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARK = "@@nicwatch-lab"
PLAN: dict[str, Any] = json.loads(Path("/lab/plan.json").read_text())
SERVE_URL = f"http://{PLAN['mgmt']['address']}:{PLAN['mgmt']['port']}"


def console(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def event(text: str) -> None:
    console(f"{MARK} event {time.monotonic():.1f} {text}")


def emit(kind: str, name: str, value: object) -> None:
    """One result on the console: gzip'd JSON in base64 lines between begin/end markers."""
    data = gzip.compress(json.dumps(value, default=str).encode(), 6)
    text = base64.b64encode(data).decode()
    console(f"{MARK} begin {kind} {name} {len(data)} {hashlib.sha256(data).hexdigest()[:16]}")
    for i in range(0, len(text), 100):
        console(text[i:i + 100])
    console(f"{MARK} end {kind} {name}")


def host_scrape(tag: str, path: str = "/metrics") -> None:
    """Let the host fetch ``path`` from the daemon through QEMU's forwarded port; returns
    once the host said it has it (the host keeps the text under ``tag``)."""
    console(f"{MARK} scrape {tag} {path}")
    while True:
        line = sys.stdin.readline()
        if not line:
            raise RuntimeError("the console closed while waiting for the host's scrape")
        if line.strip() == f"scraped {tag}":
            return


# --- the kernel's tools ------------------------------------------------------------------


class ToolFailed(Exception):
    pass


# Seconds spent per kind of step in the running scenario (reported with its evidence).
TIMES: dict[str, list[float]] = {}


def timed(kind: str, seconds: float) -> None:
    entry = TIMES.setdefault(kind, [0, 0.0])
    entry[0] += 1
    entry[1] += seconds


def sh(*argv: str, check: bool = True, ns: str | None = None, timeout: float = 120) -> str:
    """Run a tool (full Debian paths are found through PATH: /usr/sbin, /usr/bin first) in
    the root namespace or ``ns``; its standard output."""
    cmd = list(argv) if ns is None else ["ip", "netns", "exec", ns, *argv]
    t0 = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    timed(f"tool {argv[0]}", time.monotonic() - t0)
    if check and result.returncode != 0:
        raise ToolFailed(f"{' '.join(cmd)} exited {result.returncode}: "
                         f"{(result.stderr or result.stdout).strip()[:500]}")
    return result.stdout


def tool_json(*argv: str, ns: str | None = None) -> Any:
    return json.loads(sh(*argv, ns=ns) or "null")


def write(path: str | Path, value: str) -> None:
    """A sysfs or debugfs write, as `echo value > path` does."""
    with open(path, "w") as f:
        f.write(value)


def read(path: str | Path) -> str:
    return Path(path).read_text().strip()


def spawn(*argv: str, ns: str | None = None) -> subprocess.Popen[str]:
    cmd = list(argv) if ns is None else ["ip", "netns", "exec", ns, *argv]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(what: str, check: Callable[[], object], timeout: float = 60.0,
             every: float = 0.2) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(every)


def ethtool(*args: str, ns: str | None = None) -> str:
    return sh("ethtool", *args, ns=ns)


def link_json(name: str | None = None, *, stats: bool = False, details: bool = False,
              vf: bool = False, ns: str | None = None) -> Any:
    argv = ["ip", "-j"]
    if stats:
        argv.append("-s")
    if details:
        argv.append("-d")
    argv += ["link", "show"]
    if name:
        argv += ["dev", name]
    out = tool_json(*argv, ns=ns)
    return out[0] if name else out


# --- nicwatch ------------------------------------------------------------------------------

# Imported once here so each command forked below starts warm (a cold import of nicwatch
# under software emulation takes seconds; a fork takes milliseconds).
import nicwatch.cli.main  # noqa: E402

# The regex engine (google-re2, a C++ extension) is imported on first use; importing it here
# makes a missing native library fail the runner at once, named, instead of each forked
# daemon dying before its first poll.
import nicwatch.values.regex  # noqa: E402


def enter_netns(name: str) -> None:
    """Move this process into network namespace ``name`` as `ip netns exec` does: join the
    namespace, then remount /sys in a mount namespace of its own so that /sys shows that
    namespace's interfaces."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    steps = (
        ("setns", lambda: libc.setns(fd, 0x40000000)),  # CLONE_NEWNET
        ("unshare", lambda: libc.unshare(0x00020000)),  # CLONE_NEWNS
        ("mount --make-rprivate /", lambda: libc.mount(b"none", b"/", None, 0x4000 | 0x40000,
                                                        None)),  # MS_REC | MS_PRIVATE
        ("umount /sys", lambda: libc.umount2(b"/sys", 2)),  # MNT_DETACH
        ("mount sysfs", lambda: libc.mount(b"sysfs", b"/sys", b"sysfs", 0, None)),
    )
    for what, call in steps:
        if call() != 0:
            raise OSError(ctypes.get_errno(), f"{what} for netns {name}")
    os.close(fd)


def nicwatch_cmd(*argv: str, timeout: float = 300, stdin: str | None = None,
                 ns: str | None = None) -> tuple[int, str, str]:
    """``nicwatch ARGV`` in a process of its own, forked from this warm interpreter (in
    network namespace ``ns`` if given): the command's exit status, standard output and error
    (as from the installed entry point)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: nicwatch's main() with its own stdout/stderr
            status = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                if stdin is None:
                    devnull = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(devnull, 0)
                if ns is not None:
                    enter_netns(ns)
                status = nicwatch.cli.main.main(list(argv))
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            except BaseException:
                traceback.print_exc()
                status = 70
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(status)
        t0 = time.monotonic()
        deadline = t0 + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise TimeoutError(f"nicwatch {' '.join(argv)}: not done in {timeout:.0f} s")
            time.sleep(0.05)
        code = os.waitstatus_to_exitcode(status)
        timed(f"nicwatch {argv[0]}", time.monotonic() - t0)
        out.seek(0)
        err.seek(0)
        return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8",
                                                                              "replace")


def nicwatch_json(*argv: str, ns: str | None = None) -> Any:
    code, out, err = nicwatch_cmd(*argv, ns=ns)
    if code != 0:
        raise ToolFailed(f"nicwatch {' '.join(argv)} exited {code}: {err.strip()[:800]}")
    return json.loads(out)


class Daemon:
    """``nicwatch serve`` for one scenario (:func:`serve`), on mgmt0 (the host reaches it
    through QEMU's forwarded port), polling every second."""

    def __init__(self, *flags: str) -> None:
        self.flags = flags
        self.log = Path("/tmp/nicwatch-serve.log")
        self.pid: int | None = None

    def start(self) -> None:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            status = 70
            try:
                fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                status = nicwatch.cli.main.main(
                    ["serve", "--interval", "1s", "--web.listen-address",
                     f"{PLAN['mgmt']['address']}:{PLAN['mgmt']['port']}",
                     "--state.file", "/tmp/nicwatch-state.json", "--log.format", "json",
                     *self.flags])
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(status)
        self.pid = pid
        # /metrics answers once the first poll is rendered.
        wait_for("nicwatch serve answering", lambda: self._get("/metrics") is not None, 180, 0.5)

    def _get(self, path: str) -> str | None:
        try:
            with urllib.request.urlopen(SERVE_URL + path, timeout=20) as r:
                return str(r.read().decode())
        except OSError:
            return None

    def metrics(self) -> str:
        text = wait_for("nicwatch serve /metrics", lambda: self._get("/metrics"), 120, 0.5)
        assert isinstance(text, str)
        return text

    def polls(self) -> int:
        for line in self.metrics().splitlines():
            if line.startswith("nicwatch_polls_total"):
                return int(float(line.split()[-1]))
        return 0

    def fresh(self, polls: int = 2) -> str:
        """/metrics once the daemon has finished ``polls`` polls that started after now
        (so none of them read the state from before the caller's change)."""
        t0 = time.monotonic()
        start = self.polls()
        wait_for("nicwatch serve polling", lambda: self.polls() >= start + polls, 120, 0.3)
        text = self.metrics()
        timed("serve: fresh /metrics", time.monotonic() - t0)
        return text

    def stop(self) -> str:
        if self.pid is not None:
            os.kill(self.pid, 15)
            os.waitpid(self.pid, 0)
            self.pid = None
        return self.log.read_text(errors="replace") if self.log.exists() else ""


_SERVING: list[Daemon] = []


def serve(*flags: str) -> Daemon:
    """Start ``nicwatch serve FLAGS`` for the calling scenario (forked from this warm
    interpreter: serving within a second); the runner stops it when the scenario ends. Each
    scenario selects its own interfaces, so the daemon's polls stay small under emulation."""
    stop_serving()
    daemon = Daemon(*flags)
    daemon.start()
    _SERVING.append(daemon)
    return daemon


def stop_serving() -> str:
    """Stop the scenario's daemon; its log."""
    logs = [daemon.stop() for daemon in _SERVING]
    _SERVING.clear()
    return "".join(logs)


# --- netdevsim -----------------------------------------------------------------------------

NSIM_BUS = Path("/sys/bus/netdevsim")
DEBUGFS = Path("/sys/kernel/debug/netdevsim")


def nsim_new(dev_id: int, ports: int, queues: int = 4) -> list[str]:
    """A netdevsim device with ``ports`` ports (``echo "ID PORTS QUEUES" >
    /sys/bus/netdevsim/new_device``); its netdevs renamed ``nsim<ID>p<N>`` (no udev here),
    in port order."""
    sh("modprobe", "netdevsim")
    write(NSIM_BUS / "new_device", f"{dev_id} {ports} {queues}")
    net = NSIM_BUS / "devices" / f"netdevsim{dev_id}" / "net"
    wait_for(f"netdevsim{dev_id} ports", lambda: len(list(net.iterdir())) >= ports
             if net.exists() else False, 30)
    names = []
    for netdev in sorted(net.iterdir()):
        port = read(netdev / "phys_port_name").removeprefix("p")
        new = f"nsim{dev_id}p{port}"
        sh("ip", "link", "set", netdev.name, "name", new)
        names.append(new)
    return sorted(names)


def nsim_link(a: str, b: str, ns_b: str | None = None) -> bool:
    """Link two netdevsim ports (Linux 6.9+ ``link_device``): what one sends, the other
    receives, and both have carrier. False on kernels without linking."""
    target = NSIM_BUS / "link_device"
    if not target.exists():
        return False
    fd_a = os.open("/proc/self/ns/net", os.O_RDONLY)
    fd_b = os.open(f"/run/netns/{ns_b}", os.O_RDONLY) if ns_b else fd_a
    try:
        index_a = int(read(f"/sys/class/net/{a}/ifindex"))
        index_b = int(sh("cat", f"/sys/class/net/{b}/ifindex", ns=ns_b).strip()) if ns_b \
            else int(read(f"/sys/class/net/{b}/ifindex"))
        write(target, f"{fd_a}:{index_a} {fd_b}:{index_b}")
    finally:
        os.close(fd_a)
        if ns_b:
            os.close(fd_b)
    return True


def netns(name: str) -> str:
    sh("ip", "netns", "add", name)
    sh("ip", "-n", name, "link", "set", "lo", "up")
    return name


def metrics_lines(text: str, *prefixes: str) -> list[str]:
    """The sample lines of /metrics whose name starts with one of ``prefixes`` (to keep a
    result small)."""
    return [line for line in text.splitlines()
            if not line.startswith("#") and line.startswith(prefixes)]


def run_scenario(name: str, body: Callable[[], dict[str, object]]) -> bool:
    event(f"scenario {name} start")
    TIMES.clear()
    t0 = time.monotonic()
    try:
        value = body()
        value["seconds"] = {"total": round(time.monotonic() - t0, 1),
                            **{k: [n, round(t, 1)] for k, (n, t) in sorted(TIMES.items())}}
    except BaseException:
        emit("error", name, traceback.format_exc())
        event(f"scenario {name} failed")
        return False
    emit("scenario", name, value)
    event(f"scenario {name} done")
    return True
