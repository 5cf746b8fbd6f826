"""Boot the lab guest under QEMU and collect what its scenarios report.

One boot runs every scenario (tests/lab/guest/runner.py). The guest talks back over its
serial console, which is QEMU's standard input and output here:

* ``@@nicwatch-lab begin KIND NAME BYTES SHA`` ... base64 lines ... ``@@nicwatch-lab end
  KIND NAME``: one result (gzip'd JSON), checked against its length and SHA-256 prefix;
* ``@@nicwatch-lab scrape TAG PATH``: the guest waits while the host fetches
  ``http://127.0.0.1:<port>PATH`` through QEMU's user-mode network (``hostfwd`` bound to
  127.0.0.1, ``restrict=on``: nothing leaves QEMU), then answers ``scraped TAG`` on the
  console;
* ``@@nicwatch-lab event TEXT``: progress, with the guest's monotonic time.

The guest ends by writing its status to QEMU's ``isa-debug-exit`` port: QEMU exits with
``2 * status + 1`` (1 when the runner finished). Every other line is the console log.

Devices (the topology the scenarios rely on; MAC addresses name the roles):

* hub 0: two e1000e (QEMU's emulated 82574), ``hub0a`` in the root namespace and
  ``hub0b``, which the e1000e scenario moves into a namespace: traffic between them never
  leaves QEMU's hub;
* hub 1: three e1000e, ``bond1`` and ``bond2`` (members of a bond) and ``bondpeer`` (in a
  namespace, the bond's partner);
* hub 2: one e1000e, ``rootbus0``, on q35's root bus (no root port): a root complex
  integrated endpoint, without link registers (its ``max_link_width`` reads 255);
* a virtio-net NIC ``mgmt0`` on user-mode networking, the only way in from the host.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import json
import os
import select
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from build import GUEST_FILES, REPO, Cpio, Guest, compile_tree

MARK = "@@nicwatch-lab"
GUEST_PORT = 10847  # nicwatch serve in the guest, on mgmt0
MGMT_NET = "198.18.100.0/24"  # RFC 2544, inside QEMU's user-mode stack only
MGMT_GUEST = "198.18.100.15"
MGMT_HOST = "198.18.100.2"

# role -> (QEMU hub, MAC); the guest renames each NIC to its role by this MAC.
E1000E = {
    "hub0a": (0, "52:54:00:6c:61:01"),
    "hub0b": (0, "52:54:00:6c:61:02"),
    "bond1": (1, "52:54:00:6c:61:11"),
    "bond2": (1, "52:54:00:6c:61:12"),
    "bondpeer": (1, "52:54:00:6c:61:13"),
}
# role -> (QEMU hub, MAC) of the e1000e put on the root bus itself (pcie.0).
ROOT_BUS = {"rootbus0": (2, "52:54:00:6c:61:21")}
MGMT_MAC = "52:54:00:6c:61:ff"
ENV_ACCEL = "NICWATCH_LAB_ACCEL"  # tcg (default) or kvm
ENV_TIMEOUT = "NICWATCH_LAB_TIMEOUT"  # seconds one boot may take (default 1500)


class BootFailed(Exception):
    pass


@dataclass
class BootResult:
    """What one boot reported: ``results[(kind, name)]`` (decoded JSON), the host's scrapes
    by tag, the console log (everything that was not a result), QEMU's exit status and the
    wall-clock seconds of the boot."""

    results: dict[tuple[str, str], object] = field(default_factory=dict)
    scrapes: dict[str, str] = field(default_factory=dict)
    events: list[tuple[float, str]] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    returncode: int | None = None
    seconds: float = 0.0
    wanted: list[str] | None = None  # the scenarios asked for (None: all)

    def scenario(self, name: str) -> dict[str, object]:
        if self.wanted is not None and name not in self.wanted:
            import pytest
            pytest.skip(f"scenario {name} was not asked for (NICWATCH_LAB_SCENARIOS)")
        value = self.results.get(("scenario", name))
        if value is None:
            failed = self.results.get(("error", name))
            if failed is not None:
                raise BootFailed(f"scenario {name} failed in the guest:\n{failed}")
            raise BootFailed(f"scenario {name} reported nothing; console tail:\n"
                             + "\n".join(self.console[-40:]))
        assert isinstance(value, dict)
        return value


def overlay(guest: Guest, out: Path, extra: Mapping[str, bytes] | None = None) -> Path:
    """The per-boot archive appended to the cached base: nicwatch from this working tree
    and the guest's scripts (tests/lab/guest), byte-compiled by the guest's interpreter
    (compiling nicwatch under emulation would take the guest ~15 s), and ``extra`` files."""
    with tempfile.TemporaryDirectory(prefix="nicwatch-lab-overlay-") as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(REPO / "src/nicwatch", tree / "lab/src/nicwatch",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copytree(GUEST_FILES, tree / "lab/guest",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name, data in (extra or {}).items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes(data)
        compile_tree(guest.directory / "python", "", tree)
        cpio = Cpio(out)
        cpio.tree(tree)
        cpio.close()
    return out


def save(result: BootResult, path: Path) -> None:
    """A boot's results as JSON (``scripts/lab --save``), for :func:`load`."""
    path.write_text(json.dumps({
        "results": [[k, n, v] for (k, n), v in result.results.items()],
        "scrapes": result.scrapes, "events": result.events, "console": result.console,
        "returncode": result.returncode, "seconds": result.seconds, "wanted": result.wanted}))


def load(path: Path) -> BootResult:
    """A saved boot (a development aid: writing assertions without booting again)."""
    data = json.loads(path.read_text())
    return BootResult({(k, n): v for k, n, v in data["results"]}, data["scrapes"],
                      [tuple(e) for e in data["events"]], data["console"],  # type: ignore[misc]
                      data["returncode"], data["seconds"], data.get("wanted"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def qemu_argv(guest: Guest, initrd: Path, host_port: int) -> list[str]:
    accel = os.environ.get(ENV_ACCEL, "tcg")
    argv = [
        "qemu-system-x86_64", "-accel", accel, "-machine", "q35",
        "-cpu", "max" if accel == "tcg" else "host",
        "-smp", os.environ.get("NICWATCH_LAB_SMP", "1"), "-m", "1024",
        "-nodefaults", "-nographic", "-no-reboot",
        "-kernel", str(guest.vmlinux), "-initrd", str(initrd),
        # quiet: kernel messages stay in dmesg (the runner reports it), off the console the
        # results travel on.
        "-append", "console=ttyS0 panic=-1 quiet loglevel=1 cryptomgr.notests",
        "-chardev", "stdio,id=console,signal=off", "-serial", "chardev:console",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
    ]
    # Each e1000e behind a PCIe root port of its own, as a NIC in a slot (on the root bus
    # it would be an integrated endpoint without a link).
    for slot, (role, (hub, mac)) in enumerate(E1000E.items(), start=1):
        argv += ["-device", f"pcie-root-port,id=rp{slot},chassis={slot},slot={slot}",
                 "-netdev", f"hubport,id={role},hubid={hub}",
                 "-device", f"e1000e,netdev={role},mac={mac},bus=rp{slot},romfile="]
    for role, (hub, mac) in ROOT_BUS.items():
        argv += ["-netdev", f"hubport,id={role},hubid={hub}",
                 "-device", f"e1000e,netdev={role},mac={mac},bus=pcie.0,romfile="]
    argv += ["-netdev", f"user,id=mgmt,restrict=on,net={MGMT_NET},host={MGMT_HOST},"
                        f"hostfwd=tcp:127.0.0.1:{host_port}-{MGMT_GUEST}:{GUEST_PORT}",
             "-device", f"virtio-net-pci,netdev=mgmt,mac={MGMT_MAC},romfile="]
    return argv


def plan(scenarios: list[str] | None = None) -> dict[str, object]:
    """What the guest's runner is told (written to /lab/plan.json)."""
    return {
        "e1000e": {role: mac for role, (_, mac) in (E1000E | ROOT_BUS).items()},
        "mgmt": {"mac": MGMT_MAC, "address": MGMT_GUEST, "prefix": 24, "port": GUEST_PORT},
        "scenarios": scenarios,
        "importtime": bool(os.environ.get("NICWATCH_LAB_IMPORTTIME")),
    }


def _decode(lines: list[str], size: int, digest: str) -> object:
    data = base64.b64decode("".join(lines))
    if len(data) != size or hashlib.sha256(data).hexdigest()[:16] != digest:
        raise BootFailed(f"a result arrived damaged ({len(data)} of {size} bytes)")
    return json.loads(gzip.decompress(data))


def boot(guest: Guest, workdir: Path, scenarios: list[str] | None = None,
         timeout: float | None = None, echo: bool = False) -> BootResult:
    """Boot once, run the scenarios (all by default), return what they reported. QEMU is
    stopped (by its PID) whatever happens."""
    if shutil.which("qemu-system-x86_64") is None:
        raise FileNotFoundError("qemu-system-x86_64")
    timeout = timeout or float(os.environ.get(ENV_TIMEOUT, "1500"))
    workdir.mkdir(parents=True, exist_ok=True)
    ov = overlay(guest, workdir / "overlay.cpio",
                 {"lab/plan.json": json.dumps(plan(scenarios)).encode()})
    initrd = workdir / "initrd.cpio"
    with initrd.open("wb") as out:
        for part in (guest.base, ov):
            with part.open("rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
    port = free_port()
    result = BootResult(wanted=scenarios)
    t0 = time.monotonic()
    proc = subprocess.Popen(qemu_argv(guest, initrd, port), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None and proc.stdin is not None
    buffer = b""
    block: tuple[str, str, int, str] | None = None
    block_lines: list[str] = []
    try:
        while True:
            remaining = t0 + timeout - time.monotonic()
            if remaining <= 0:
                raise BootFailed(f"the guest did not finish within {timeout:.0f} s; console "
                                 "tail:\n" + "\n".join(result.console[-40:]))
            ready, _, _ = select.select([proc.stdout], [], [], min(remaining, 5.0))
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                if echo and not (block and not line.startswith(MARK)):
                    print(line[:200], flush=True)
                if block is not None:
                    if line.startswith(f"{MARK} end "):
                        kind, name, size, digest = block
                        result.results[(kind, name)] = _decode(block_lines, size, digest)
                        block, block_lines = None, []
                    else:
                        block_lines.append(line.strip())
                    continue
                at = line.find(MARK)
                if at < 0:
                    result.console.append(line)
                    continue
                words = line[at:].split()
                if words[1] == "begin" and len(words) == 6:
                    block = (words[2], words[3], int(words[4]), words[5])
                elif words[1] == "scrape" and len(words) == 4:
                    tag, path = words[2], words[3]
                    result.scrapes[tag] = _scrape(port, path)
                    proc.stdin.write(f"scraped {tag}\n".encode())
                    proc.stdin.flush()
                elif words[1] == "event":
                    result.events.append((time.monotonic() - t0, " ".join(words[2:])))
                else:
                    result.console.append(line)
        result.returncode = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        result.seconds = time.monotonic() - t0
    return result


def _scrape(port: int, path: str) -> str:
    """GET from the guest through the forwarded port; a failure is recorded, not raised
    (the test that needs the scrape reports it)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as r:
            return str(r.read().decode())
    except (OSError, http.client.HTTPException) as e:  # a truncated body: IncompleteRead
        return f"#scrape failed: {e}"


def results_summary(result: BootResult) -> Mapping[str, object]:
    return {"seconds": round(result.seconds, 1), "returncode": result.returncode,
            "events": result.events}
