"""LLDP neighbours, received passively on each selected port on the source's own thread.

nicwatch never transmits LLDP: the host's own LLDP agent (lldpd, lldpad, systemd-networkd,
the NIC firmware) announces it, and nicwatch listens to what the other end of each link
announces. One ``AF_PACKET``/``SOCK_RAW`` socket per selected Ethernet port (it needs
CAP_NET_RAW in the network namespace's user namespace), opened on the worker thread:

* created with protocol 0 (nothing queued yet), then a classic BPF program is attached
  (``SO_ATTACH_FILTER``) that accepts EtherType 0x88cc from another station only (the
  host's own LLDPDUs, ``PACKET_OUTGOING``, are refused in the kernel) and cuts every frame
  it accepts to :data:`MAX_FRAME` bytes; then it is bound to the port and EtherType 0x88cc;
* ``PACKET_ADD_MEMBERSHIP`` adds the nearest-bridge group 01:80:c2:00:00:0e to the port's
  multicast filter (dropped with the socket), so a NIC that filters multicast passes it;
* ``SO_RCVBUF`` is small (:data:`RCVBUF`): a flood fills it and the kernel drops the rest,
  counted by ``PACKET_STATISTICS``.

Parsing is rate-limited per port by a token bucket (:data:`RATE` frames a second, bursts of
:data:`BURST`; an LLDP agent sends one frame every 30 s by default): a port out of tokens is
not read at all until it has one again, so a flood at line rate costs the kernel's drops, not
this thread's time. Each port keeps at most :data:`MAX_NEIGHBORS` neighbours (a new one past
that is dropped and counted), each until its TTL runs out (TTL 0: gone at once).
:meth:`LldpSource.read` only copies the latest table into the poll.

Firmware that runs its own LLDP agent takes the frames before the host sees them (i40e and
ice with the ``fw-lldp-agent`` private flag on, mlx5 in firmware DCBX mode): the worker asks
dcbnl ``DCB_CMD_GDCBX`` and reports ``firmware_agent`` where the driver says its DCBX is
``LLD_MANAGED`` or not ``HOST`` (docs/fabric.md).
"""

from __future__ import annotations

import ctypes
import errno
import os
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import ClassVar, Protocol

import structlog

from nicwatch.model import LldpNeighbor, LldpPort, Reading
from nicwatch.sources import Poll, SourceOptions, threads
from nicwatch.sources.dcbnl import DCB_ATTR_IFNAME, RTM_GETDCB, DcbNetlink
from nicwatch.sources.netlink import KernelError, ParseError, attribute_index, nlattr

log = structlog.get_logger("nicwatch")

ETH_P_LLDP = 0x88CC
LLDP_MULTICAST = bytes.fromhex("0180c200000e")
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_STATISTICS = 6
PACKET_MR_MULTICAST = 0
SO_ATTACH_FILTER = 26
PACKET_OUTGOING = 4
SKF_AD_PKTTYPE = 0xFFFFF000 + 4  # SKF_AD_OFF + SKF_AD_PKTTYPE

MAX_FRAME = 1514  # an LLDPDU fits an untagged 1500-byte payload (802.1AB 7.1)
RCVBUF = 64 * 1024
RATE = 5.0  # frames parsed per second per port
BURST = 10.0
MAX_NEIGHBORS = 8  # per port
DCBX_PROBE_INTERVAL = 300.0

# struct sock_filter {u16 code; u8 jt, jf; u32 k}: accept 0x88cc not sent by this host.
BPF_PROGRAM = (
    (0x28, 0, 0, 12),  # ldh [12]            EtherType
    (0x15, 0, 3, ETH_P_LLDP),  # jeq #0x88cc  else drop
    (0x20, 0, 0, SKF_AD_PKTTYPE),  # ld #pkttype
    (0x15, 1, 0, PACKET_OUTGOING),  # jeq #outgoing: drop
    (0x06, 0, 0, MAX_FRAME),  # ret #MAX_FRAME   accept, cut to MAX_FRAME bytes
    (0x06, 0, 0, 0),  # ret #0              drop
)

# dcbnl DCB_CMD_GDCBX (enum dcbnl_commands) and its reply attribute; DCB_CAP_DCBX_* bits.
DCB_CMD_GDCBX = 22
DCB_ATTR_DCBX = 15
DCB_CAP_DCBX_HOST = 0x01
DCB_CAP_DCBX_LLD_MANAGED = 0x02
DCB_CAP_DCBX_VERSIONS = 0x04 | 0x08  # VER_CEE, VER_IEEE

Decoder = Callable[[bytes, float], LldpNeighbor]


def attach_filter(sock: socket.socket) -> None:
    """SO_ATTACH_FILTER with :data:`BPF_PROGRAM` (the kernel copies it in the call)."""
    code = b"".join(struct.pack("=HBBI", *insn) for insn in BPF_PROGRAM)
    buffer = ctypes.create_string_buffer(code)
    fprog = struct.pack("@HP", len(BPF_PROGRAM), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def open_packet_socket(ifname: str, ifindex: int) -> socket.socket:
    """The filtered, bound, non-blocking LLDP socket of one port; raises OSError (EPERM
    without CAP_NET_RAW)."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        attach_filter(sock)
        sock.bind((ifname, ETH_P_LLDP))
        mreq = struct.pack("=iHH8s", ifindex, PACKET_MR_MULTICAST, 6, LLDP_MULTICAST)
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def kernel_drops(sock: socket.socket) -> int:
    """Frames the kernel dropped on this socket since the last call (its buffer was full)."""
    try:
        raw = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
    except OSError:
        return 0
    drops: int = struct.unpack("=II", raw)[1]
    return drops


def dcbx_firmware(ifname: str, netlink: DcbNetlink | None = None) -> str | None:
    """Why firmware consumes this port's LLDP (``dcbx=lld_managed`` or ``dcbx=firmware``),
    from dcbnl GDCBX; None where the host's own agent runs it or the driver has no DCBX."""
    own = netlink is None
    try:
        nl = netlink or DcbNetlink()
    except OSError:
        return None
    try:
        body = (struct.pack("=BBH", socket.AF_UNSPEC, DCB_CMD_GDCBX, 0)
                + nlattr(DCB_ATTR_IFNAME, ifname.encode() + b"\0"))
        replies = nl.request(RTM_GETDCB, 0, body)
        for reply in replies:
            span = attribute_index(reply, 4, len(reply)).get(DCB_ATTR_DCBX)
            if span is None or span[1] <= span[0]:
                continue
            cap = reply[span[0]]
            if cap & DCB_CAP_DCBX_LLD_MANAGED:
                return "dcbx=lld_managed"
            if cap & DCB_CAP_DCBX_VERSIONS and not cap & DCB_CAP_DCBX_HOST:
                return "dcbx=firmware"
    except (KernelError, ParseError, OSError):
        return None
    finally:
        if own:
            nl.close()
    return None


class PacketOpener(Protocol):
    def __call__(self, ifname: str, ifindex: int) -> socket.socket: ...


class _Port:
    """One port as the worker keeps it."""

    __slots__ = ("dropped", "firmware", "frames", "ifindex", "malformed", "neighbors",
                 "paused", "probed", "sock", "state", "tokens", "updated")

    def __init__(self, ifindex: int) -> None:
        self.ifindex = ifindex
        self.sock: socket.socket | None = None
        self.state = "ok"
        self.firmware: str | None = None
        self.neighbors: dict[tuple[str, str], tuple[LldpNeighbor, float]] = {}  # -> expiry
        self.frames = self.malformed = self.dropped = 0
        self.tokens = BURST
        self.updated = 0.0
        self.paused = False
        self.probed = -DCBX_PROBE_INTERVAL


class LldpSource:
    """LLDP neighbours of each selected port as a :class:`~nicwatch.sources.Source`: the
    ``lldp`` part of each Reading, read on the ``nicwatch-lldp`` thread."""

    name = "lldp"
    fills: ClassVar[frozenset[str]] = frozenset({"lldp"})
    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, decode: Decoder, opener: PacketOpener = open_packet_socket,
                 firmware: Callable[[str], str | None] | None = dcbx_firmware,
                 chassis_id: str = "", port_id: str = "mac",
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 rate: float = RATE, burst: float = BURST,
                 max_neighbors: int = MAX_NEIGHBORS) -> None:
        self.decode = decode
        self.opener = opener
        self.firmware = firmware
        self.chassis_id = chassis_id
        self.port_id = port_id
        self._clock, self._monotonic = clock, monotonic
        self.rate, self.burst, self.max_neighbors = rate, burst, max_neighbors
        self._lock = threading.Lock()
        self._wanted: Mapping[str, int] = {}
        self._ports: dict[str, _Port] = {}
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread: threading.Thread | None = None
        self._permission_logged = False
        self._ready = threading.Event()  # set once every port of a poll was opened and probed
        self.parsed = 0  # frames handed to the decoder since start (tests, benchmarks)

    @classmethod
    def open(cls, options: SourceOptions) -> LldpSource | None:
        if not options.lldp or options.lldp_decode is None:
            return None
        return cls(options.lldp_decode, chassis_id=options.lldp_chassis_id,
                   port_id=options.lldp_port_id)

    # --- the poll's side -------------------------------------------------------------------

    def local_chassis_id(self, poll: Poll) -> str | None:
        """The configured chassis id, else what lldpd picks by default: the MAC address of
        the lowest-ifindex Ethernet port with a device behind it, else of any port (veth in a
        namespace of its own; docs/fabric.md)."""
        if self.chassis_id:
            return self.chassis_id
        ports = sorted((nc.device_path is None, nc.ifindex, nc.address)
                       for nc in poll.interfaces
                       if nc.ifindex and nc.address and nc.address != "00:00:00:00:00:00")
        return ports[0][2] if ports else None

    def read(self, poll: Poll) -> None:
        wanted = {nc.name: nc.ifindex for nc in poll.interfaces
                  if nc.ifindex and nc.address and nc.address != "00:00:00:00:00:00"}
        chassis = self.local_chassis_id(poll)
        now = self._clock()
        with self._lock:
            changed = wanted != self._wanted
            if changed:
                self._wanted = wanted
            latest = {name: self._view(port, now) for name, port in self._ports.items()
                      if name in wanted}
        addresses = {nc.name: nc.address for nc in poll.interfaces}
        for name in wanted:
            port_id = addresses.get(name) if self.port_id == "mac" else name
            view = latest.get(name) or LldpPort("starting")  # the worker has not opened it
            poll.put(name, Reading.lldp, replace(view, local_chassis_id=chassis,
                                           local_port_id=port_id))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="nicwatch-lldp", daemon=True)
            threads.start(self._thread)
        elif changed:
            self._wake()

    def wait_first_read(self, timeout: float) -> bool:
        """Wait until the worker opened (or failed to open) and probed every port of the
        last poll, so a one-shot command (`nicwatch show`) reports each receiver's state;
        neighbours take an LLDP agent's interval (30 s by default) and are not waited for."""
        return self._ready.wait(timeout)

    @staticmethod
    def _view(port: _Port, now: float) -> LldpPort:
        neighbors = tuple(n for n, expiry in sorted(port.neighbors.values(),
                                                    key=lambda item: item[0].received_at)
                          if expiry > now)
        state = port.state
        if state == "ok" and port.firmware is not None:
            state = "firmware_agent"
        return LldpPort(state, neighbors, port.frames, port.malformed, port.dropped,
                        port.firmware)

    def close(self) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join()
        for port in self._ports.values():
            if port.sock is not None:
                port.sock.close()
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:  # pragma: no cover - a full pipe wakes the worker anyway
            pass

    # --- the worker ------------------------------------------------------------------------

    def _run(self) -> None:
        last = self._monotonic()
        while not self._stop.is_set():
            self._reconcile()
            now = self._monotonic()
            self._refill(now - last)
            last = now
            self._probe(now)
            self._ready.set()
            timeout = 1.0 / self.rate if any(p.paused for p in self._ports.values()) else 5.0
            for key, _ in self._selector.select(timeout):
                if key.data is None:
                    try:
                        os.read(self._wake_r, 4096)
                    except BlockingIOError:
                        pass
                    continue
                self._receive(key.data)
            self._expire()

    def _reconcile(self) -> None:
        with self._lock:
            wanted = dict(self._wanted)
            gone = [name for name in self._ports if wanted.get(name) != self._ports[name].ifindex]
            for name in gone:
                port = self._ports.pop(name)
                if port.sock is not None:
                    if not port.paused:
                        self._selector.unregister(port.sock)
                    port.sock.close()
        for name, ifindex in wanted.items():
            if name in self._ports:
                continue
            port = _Port(ifindex)
            try:
                port.sock = self.opener(name, ifindex)
                self._selector.register(port.sock, selectors.EVENT_READ, (name, port))
            except OSError as e:
                port.state = ("not_permitted" if e.errno in (errno.EPERM, errno.EACCES)
                              else "failed")
                if port.state == "not_permitted":
                    if not self._permission_logged:
                        self._permission_logged = True
                        log.warning("lldp_not_permitted", device=name,
                                    hint="receiving LLDP needs CAP_NET_RAW")
                else:
                    log.info("lldp_socket_failed", device=name, error=str(e))
            with self._lock:
                if self._wanted.get(name) == ifindex:
                    self._ports[name] = port
                elif port.sock is not None:
                    self._selector.unregister(port.sock)
                    port.sock.close()

    def _refill(self, elapsed: float) -> None:
        for name, port in list(self._ports.items()):
            port.tokens = min(self.burst, port.tokens + elapsed * self.rate)
            if port.paused and port.tokens >= 1 and port.sock is not None:
                port.paused = False
                self._selector.register(port.sock, selectors.EVENT_READ, (name, port))

    def _probe(self, now: float) -> None:
        if self.firmware is None:
            return
        for name, port in list(self._ports.items()):
            if now - port.probed >= DCBX_PROBE_INTERVAL:
                port.probed = now
                try:
                    detail = self.firmware(name)
                except Exception:  # a probe bug must not end the thread
                    log.debug("lldp_firmware_probe_crashed", device=name, exc_info=True)
                    detail = None
                with self._lock:
                    port.firmware = detail

    def _receive(self, data: tuple[str, _Port]) -> None:
        name, port = data
        sock = port.sock
        assert sock is not None
        while port.tokens >= 1:
            try:
                frame = sock.recv(MAX_FRAME)
            except BlockingIOError:
                break
            except OSError as e:  # ENETDOWN while the port goes down: the next frame comes
                log.debug("lldp_recv_failed", device=name, error=str(e))
                break
            port.tokens -= 1
            self._parse(name, port, frame)
        if port.tokens < 1 and not port.paused:
            port.paused = True  # not read until a token is back: the kernel drops the rest
            self._selector.unregister(sock)
        drops = kernel_drops(sock)
        if drops:
            with self._lock:
                port.dropped += drops

    def _parse(self, name: str, port: _Port, frame: bytes) -> None:
        now = self._clock()
        self.parsed += 1
        try:
            neighbor = self.decode(frame, now)
        except ValueError as e:
            with self._lock:
                port.frames += 1
                port.malformed += 1
            log.debug("lldp_malformed", device=name, error=str(e))
            return
        key = (neighbor.chassis_id, neighbor.port_id)
        with self._lock:
            port.frames += 1
            if neighbor.ttl == 0:  # the neighbour shut down (802.1AB 9.2.7.7.2)
                port.neighbors.pop(key, None)
            elif key in port.neighbors or len(port.neighbors) < self.max_neighbors:
                if key not in port.neighbors:
                    log.info("lldp_neighbor", device=name, chassis_id=neighbor.chassis_id,
                             port_id=neighbor.port_id, system_name=neighbor.system_name)
                port.neighbors[key] = (neighbor, now + neighbor.ttl)
            else:
                port.dropped += 1

    def _expire(self) -> None:
        now = self._clock()
        with self._lock:
            for port in self._ports.values():
                for key in [k for k, (_, expiry) in port.neighbors.items() if expiry <= now]:
                    del port.neighbors[key]
