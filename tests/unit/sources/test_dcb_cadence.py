"""DCB is configuration: the daemon's DCB source asks the kernel for an interface's PFC and QoS
again only when a DCB notification names it, its link state or ifindex changed, or 30 s
passed; between those its last answer (or error) is served. Before, every poll sent one
RTM_GETDCB per interface. The replies are built to the kernel's layout (fixture_dcb); the
notification socket is opened for real."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from nicwatch.collect import DCB_REFRESH
from nicwatch.model import NetClass
from nicwatch.sources import Poll
from nicwatch.sources.dcbnl import (
    EVERY,
    RTM_GETDCB,
    DcbError,
    DcbSource,
    DcbWatch,
    notified_names,
)
from nicwatch.sources.netlink import ParseError
from nicwatch.sources.sysfs_net import read_netclass

from fixture_dcb import DCB_ATTR_IEEE, DCB_ATTR_IFNAME, NLA_F_NESTED, RecordedDcb, nla, roce_reply
from paths import SYSFS

RTM_SETDCB = RTM_GETDCB + 1
DCB_CMD_IEEE_SET = 22


class Counted(RecordedDcb):
    def __init__(self, replies: dict[str, bytes]) -> None:
        super().__init__(replies)
        self.asked: list[str] = []
        self.failing: set[str] = set()

    def ieee(self, ifname: str):
        self.asked.append(ifname)
        if ifname in self.failing:
            raise DcbError(1, f"{ifname}: RTM_GETDCB: EPERM")
        return super().ieee(ifname)


class Watch:
    def __init__(self) -> None:
        self.next: set[str] | None = set()

    def changed(self) -> set[str] | None:
        out, self.next = self.next, set()
        return out

    def close(self) -> None:
        pass


def interfaces() -> list[NetClass]:
    base = read_netclass(SYSFS / "mlx5-rdma", "enp33s0f0np0")
    return [dataclasses.replace(base, name=f"ens{i}", ifindex=10 + i) for i in range(3)]


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def setup(refresh: float = DCB_REFRESH):
    reader = Counted({f"ens{i}": roce_reply(f"ens{i}") for i in range(3)})
    watch, clock = Watch(), Clock()
    return DcbSource(reader, refresh, watch, clock), reader, watch, clock


def read(source: DcbSource, ncs: list[NetClass]) -> Poll:
    poll = Poll(ncs)
    source.read(poll)
    return poll


def test_an_unchanged_interface_is_not_asked_again_and_keeps_its_parts():
    source, reader, _, clock = setup()
    ncs = interfaces()
    first = read(source, ncs)
    assert reader.asked == ["ens0", "ens1", "ens2"]
    clock.now += 5
    again = read(source, ncs)
    assert reader.asked == ["ens0", "ens1", "ens2"]  # no request in the second poll
    assert again.parts == first.parts and again.parts["ens1"]["dcb_pfc"].enabled == (3,)


def test_a_notification_the_link_state_or_the_period_asks_again():
    source, reader, watch, clock = setup()
    ncs = interfaces()
    read(source, ncs)
    reader.asked.clear()
    watch.next = {"ens1"}
    read(source, ncs)
    assert reader.asked == ["ens1"]
    reader.asked.clear()
    watch.next = EVERY  # notifications were lost: everyone
    read(source, ncs)
    assert reader.asked == ["ens0", "ens1", "ens2"]
    reader.asked.clear()
    moved = [dataclasses.replace(ncs[0], carrier_changes=(ncs[0].carrier_changes or 0) + 2),
             dataclasses.replace(ncs[1], ifindex=99), ncs[2]]
    read(source, moved)
    assert reader.asked == ["ens0", "ens1"]
    reader.asked.clear()
    clock.now += DCB_REFRESH * 0.8
    read(source, moved)
    assert reader.asked == []
    clock.now += DCB_REFRESH * 0.2
    read(source, moved)
    assert reader.asked == ["ens0", "ens1", "ens2"]


def test_an_error_is_served_again_while_kept_and_refresh_zero_asks_every_poll():
    source, reader, _, clock = setup()
    reader.failing = {"ens2"}
    ncs = interfaces()
    for _ in range(3):
        poll = read(source, ncs)
        clock.now += 5
        assert [(d, e.kind) for d, e in poll.errors] == [("ens2", "EPERM")]
    assert reader.asked.count("ens2") == 1
    every, reader, _, _ = setup(refresh=0.0)
    for _ in range(3):
        read(every, ncs)
    assert len(reader.asked) == 9  # one request per interface and poll, as before


def _notification(ifname: str, kind: int = RTM_SETDCB) -> bytes:
    """What dcbnl_notify() multicasts: nlmsghdr, dcbmsg (IEEE_SET), then dcbnl_ieee_fill()."""
    body = (struct.pack("=BBH", 0, DCB_CMD_IEEE_SET, 0) + nla(DCB_ATTR_IFNAME, ifname.encode()
                                                              + b"\0")
            + nla(DCB_ATTR_IEEE | NLA_F_NESTED, b""))
    return struct.pack("=IHHII", 16 + len(body), kind, 0, 0, 0) + body


def test_notifications_name_their_interfaces():
    assert notified_names(_notification("ens1") + _notification("eth7", RTM_GETDCB)) == {
        "ens1", "eth7"}
    assert notified_names(b"") == set()
    with pytest.raises(ParseError):
        notified_names(struct.pack("=I", 4096) + _notification("ens1")[4:])  # cut short


def test_the_notification_socket_opens_without_blocking():
    watch = DcbWatch()
    try:
        assert watch.changed() == set()  # nothing pending, and it does not wait
    finally:
        watch.close()
