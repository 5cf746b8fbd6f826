"""The passive LLDP source on its own thread, its packet sockets replaced by datagram socket
pairs (a packet socket hands over one frame per recv as they do): neighbours reach the poll,
expire with their TTL, stay bounded under a flood of distinct chassis ids and are parsed at a
bounded rate; no CAP_NET_RAW and firmware agents are states, never an error per poll. The
real sockets are tested in tests/e2e/test_fabric_netns.py."""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Iterator

import pytest

from nicwatch.model import DcbxPfc, NetClass
from nicwatch.normalize.lldp import decode_frame, encode_frame
from nicwatch.sources import Poll
from nicwatch.sources.lldp import BPF_PROGRAM, BURST, MAX_NEIGHBORS, RATE, LldpSource

from waiting import wait_until


def netclass(name: str, ifindex: int, mac: str, device: bool = True) -> NetClass:
    return NetClass(name=name, ifindex=ifindex, address=mac, operstate="up", mtu=1500,
                    speed_mbps=None, duplex=None, carrier=True, carrier_changes=0,
                    carrier_up_count=0, carrier_down_count=0,
                    device_path=f"devices/pci0000:00/{name}" if device else None,
                    pci_address=None, driver=None)


PORTS = (netclass("eth1", 3, "02:00:00:00:00:0b"), netclass("eth0", 2, "02:00:00:00:00:0a"),
         netclass("veth9", 1, "02:00:00:00:00:09", device=False))


class Pairs:
    """The opener: one socket pair per port, the far end kept to send into it."""

    def __init__(self, refuse: int | None = None) -> None:
        self.far: dict[str, socket.socket] = {}
        self.refuse = refuse
        self.opened: list[str] = []

    def __call__(self, ifname: str, ifindex: int) -> socket.socket:
        self.opened.append(ifname)
        if self.refuse is not None:
            raise OSError(self.refuse, "refused")
        near, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        near.setblocking(False)
        self.far[ifname] = far
        return near

    def close(self) -> None:
        for sock in self.far.values():
            sock.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


FRAME = encode_frame(b"\x02\0\0\0\0\xb0", b"\x02\0\0\0\0\xb1", b"\x02\0\0\0\0\xb0", 120,
                     system_name="host-b", pfc=DcbxPfc(False, False, 8, (3,)))


@pytest.fixture
def pairs() -> Iterator[Pairs]:
    p = Pairs()
    yield p
    p.close()


def poll_once(source: LldpSource, ports: tuple[NetClass, ...] = PORTS) -> Poll:
    poll = Poll(ports)
    source.read(poll)
    return poll


def neighbours(source: LldpSource, device: str = "eth0") -> tuple:
    port = poll_once(source).parts[device]["lldp"]
    assert port is not None
    return port.neighbors


def test_a_neighbour_reaches_the_poll_with_this_ports_identity(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs, firmware=None)
    try:
        poll = poll_once(source)
        assert poll.errors == []
        wait_until(lambda: "eth0" in pairs.far, 5, "the worker opening eth0's socket")
        pairs.far["eth0"].send(FRAME)
        wait_until(lambda: neighbours(source), 5, "the neighbour")
        port = poll_once(source).parts["eth0"]["lldp"]
        assert port is not None and port.state == "ok" and port.frames == 1
        (n,) = port.neighbors
        assert (n.chassis_id, n.port_id, n.system_name, n.pfc.enabled if n.pfc else None) == (
            "02:00:00:00:00:b1", "02:00:00:00:00:b0", "host-b", (3,))
        # lldpd's default chassis id: the lowest-ifindex port with a device (not veth9's)
        assert (port.local_chassis_id, port.local_port_id) == (
            "02:00:00:00:00:0a", "02:00:00:00:00:0a")
        assert neighbours(source, "eth1") == ()
    finally:
        source.close()


def test_configured_identity_and_ifname_port_ids(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs, firmware=None, chassis_id="rack7-host3",
                        port_id="ifname")
    try:
        port = poll_once(source).parts["eth1"]["lldp"]
        assert port is not None
        assert (port.local_chassis_id, port.local_port_id) == ("rack7-host3", "eth1")
    finally:
        source.close()


def test_neighbours_expire_with_their_ttl_and_at_once_with_ttl_zero(pairs: Pairs) -> None:
    clock = Clock()
    source = LldpSource(decode_frame, opener=pairs, firmware=None, clock=clock)
    try:
        poll_once(source)
        wait_until(lambda: "eth0" in pairs.far, 5, "the socket")
        pairs.far["eth0"].send(FRAME)
        wait_until(lambda: neighbours(source), 5, "the neighbour")
        clock.now += 119
        assert neighbours(source)
        clock.now += 1.5  # past the 120 s TTL: gone from the poll even before the sweep
        assert neighbours(source) == ()
        clock.now += 10
        pairs.far["eth0"].send(FRAME)
        wait_until(lambda: neighbours(source), 5, "the neighbour again")
        bye = encode_frame(b"\x02\0\0\0\0\xb0", b"\x02\0\0\0\0\xb1", b"\x02\0\0\0\0\xb0", 0)
        pairs.far["eth0"].send(bye)
        wait_until(lambda: neighbours(source) == (), 5, "the shutdown LLDPDU removing it")
    finally:
        source.close()


def test_a_flood_of_distinct_chassis_ids_is_bounded_and_rate_limited(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs, firmware=None)
    try:
        poll_once(source)
        wait_until(lambda: "eth0" in pairs.far, 5, "the socket")
        pairs.far["eth0"].setblocking(False)
        start = time.monotonic()
        sent = 0
        for i in range(10_000):
            frame = encode_frame(b"\x02\0\0\0\0\xb0", i.to_bytes(6, "big"), b"port", 65535)
            try:
                pairs.far["eth0"].send(frame)
                sent += 1
            except BlockingIOError:  # the pair's buffer is full: the "kernel" drops it
                pass
        time.sleep(1.0)
        elapsed = time.monotonic() - start
        port = poll_once(source).parts["eth0"]["lldp"]
        assert port is not None
        assert len(port.neighbors) == MAX_NEIGHBORS
        assert source.parsed <= BURST + RATE * (elapsed + 0.5), (source.parsed, elapsed)
        assert port.frames == source.parsed and port.dropped == port.frames - MAX_NEIGHBORS
    finally:
        source.close()


def test_malformed_frames_are_counted_not_raised(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs, firmware=None)
    try:
        poll_once(source)
        wait_until(lambda: "eth0" in pairs.far, 5, "the socket")
        pairs.far["eth0"].send(FRAME[:30])
        pairs.far["eth0"].send(FRAME)
        wait_until(lambda: neighbours(source), 5, "the good frame after the bad one")
        port = poll_once(source).parts["eth0"]["lldp"]
        assert port is not None and (port.frames, port.malformed) == (2, 1)
    finally:
        source.close()


def test_without_cap_net_raw_it_is_a_state_not_an_error_per_poll() -> None:
    pairs = Pairs(refuse=errno.EPERM)
    source = LldpSource(decode_frame, opener=pairs, firmware=None)
    try:
        poll_once(source)
        wait_until(lambda: len(pairs.opened) == 3, 5, "the worker trying every port")
        for _ in range(3):
            poll = poll_once(source)
            assert poll.errors == []
            port = poll.parts["eth0"]["lldp"]
            if port is not None and port.state == "not_permitted":
                break
            time.sleep(0.05)
        assert port is not None and port.state == "not_permitted"
        assert len(pairs.opened) == 3  # not retried every poll
    finally:
        source.close()


def test_a_firmware_agent_is_reported(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs,
                        firmware=lambda name: "dcbx=lld_managed" if name == "eth1" else None)
    try:
        poll_once(source)

        def state(device: str) -> str | None:
            port = poll_once(source).parts[device]["lldp"]
            return port.state if port else None

        wait_until(lambda: state("eth1") == "firmware_agent", 5, "the firmware probe")
        assert state("eth0") == "ok"
        port = poll_once(source).parts["eth1"]["lldp"]
        assert port is not None and port.firmware_detail == "dcbx=lld_managed"
    finally:
        source.close()


def test_a_port_that_goes_away_closes_its_socket(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs, firmware=None)
    try:
        poll_once(source)
        wait_until(lambda: "eth1" in pairs.far, 5, "the socket")
        poll_once(source, PORTS[1:])
        wait_until(lambda: "eth1" not in source._ports, 5, "eth1 dropped")
        pairs.far["eth1"].setblocking(False)
        with pytest.raises(OSError):  # the near end is closed
            for _ in range(1000):
                pairs.far["eth1"].send(FRAME)
    finally:
        source.close()


def test_the_bpf_program_jumps_stay_inside_it() -> None:
    for i, (code, jt, jf, _) in enumerate(BPF_PROGRAM):
        if code & 0x07 == 0x05:  # BPF_JMP
            assert i + 1 + max(jt, jf) < len(BPF_PROGRAM)
    assert BPF_PROGRAM[-1] == (0x06, 0, 0, 0)  # falls through to drop


def test_without_a_port_with_a_device_the_chassis_is_the_lowest_ifindex_mac(pairs: Pairs) -> None:
    source = LldpSource(decode_frame, opener=pairs, firmware=None)
    try:
        veths = (netclass("veth7", 5, "02:00:00:00:00:07", device=False), PORTS[2])
        port = poll_once(source, veths).parts["veth7"]["lldp"]
        assert port is not None and port.local_chassis_id == "02:00:00:00:00:09"
    finally:
        source.close()
