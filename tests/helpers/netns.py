"""Network namespaces and veth pairs for tests that read the real kernel.

Every namespace is created by the test, named with a random suffix, and deleted afterwards.
Addresses come from the RFC 2544 benchmarking range 198.18.0.0/15 and traffic only ever goes
between the two ends of a pair the test created.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PYTHON = sys.executable


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def ns_sh(ns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *argv, check=check)


def ns_python(ns: str, code: str) -> object:
    """Run a Python snippet inside ``ns`` (with its own /sys) and return its JSON output."""
    out = ns_sh(ns, PYTHON, "-c", code).stdout
    return json.loads(out)


@contextmanager
def namespace_with(prefix: str, batch: str) -> Iterator[str]:
    """A namespace of the test's own (``prefix``-<random>) set up by an `ip -batch` of
    ``batch``; deleted afterwards, whatever happened."""
    ns = f"{prefix}-{secrets.token_hex(3)}"
    sh("ip", "netns", "add", ns)
    try:
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input=batch, text=True, check=True,
                       capture_output=True)
        yield ns
    finally:
        sh("ip", "netns", "del", ns, check=False)


@dataclass
class VethPair:
    """Two namespaces joined by a veth pair: ``a`` in ``ns_a`` (198.18.N.1), ``b`` in
    ``ns_b`` (198.18.N.2)."""

    ns_a: str
    ns_b: str
    a: str
    b: str
    addr_a: str
    addr_b: str

    def send_udp(self, count: int, size: int, port: int = 9) -> None:
        """Send ``count`` UDP datagrams of ``size`` payload bytes from a to b."""
        code = (
            "import socket\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"s.bind(('{self.addr_a}', 0))\n"
            f"for _ in range({count}): s.sendto(b'x' * {size}, ('{self.addr_b}', {port}))\n"
        )
        ns_sh(self.ns_a, PYTHON, "-c", code)

    def delete(self) -> None:
        for ns in (self.ns_a, self.ns_b):
            sh("ip", "netns", "del", ns, check=False)


def make_veth_pair(queues: int = 1, subnet: int = 0) -> VethPair:
    tag = secrets.token_hex(3)
    ns_a, ns_b = f"nwa-{tag}", f"nwb-{tag}"
    a, b = f"nwa{tag}", f"nwb{tag}"
    addr_a, addr_b = f"198.18.{subnet}.1", f"198.18.{subnet}.2"
    pair = VethPair(ns_a, ns_b, a, b, addr_a, addr_b)
    try:
        sh("ip", "netns", "add", ns_a)
        sh("ip", "netns", "add", ns_b)
        sh("ip", "-n", ns_a, "link", "add", a, "numtxqueues", str(queues), "numrxqueues",
           str(queues), "type", "veth", "peer", "name", b, "netns", ns_b,
           "numtxqueues", str(queues), "numrxqueues", str(queues))
        sh("ip", "-n", ns_a, "addr", "add", f"{addr_a}/24", "dev", a)
        sh("ip", "-n", ns_b, "addr", "add", f"{addr_b}/24", "dev", b)
        for ns, dev in ((ns_a, a), (ns_b, b)):
            # No IPv6: router/neighbour solicitations would move counters behind our back.
            ns_sh(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                  "net.ipv6.conf.default.disable_ipv6=1")
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
    except Exception:
        pair.delete()
        raise
    return pair


def have_root_and_tools() -> bool:
    return os.geteuid() == 0 and all(
        subprocess.run(["which", t], capture_output=True).returncode == 0 for t in ("ip", "ethtool")
    )
