"""Rings and channels are configuration: the ethtool netlink source dumps them on its first
poll and then only for the interfaces a RINGS_NTF/CHANNELS_NTF of the family's "monitor"
group named, whose ifindex or link state changed, or every CONFIG_REFRESH seconds; without
the notification socket, or after it overflowed, every poll. The other dumps (statistics,
pause and FEC counters, link state) stay every poll. Real veths in a namespace the test
creates, and doubles for the clock and the notifications."""

from __future__ import annotations

import json
import textwrap
from types import MappingProxyType

import pytest

from nicwatch.model import Channels, EthtoolNetlinkInfo, NetClass
from nicwatch.sources import Poll
from nicwatch.sources import ethtool_netlink as en

from netns import PYTHON, namespace_with, ns_sh

# --- doubles ----------------------------------------------------------------------------------


class Reader:
    """read_some as EthtoolNetlink does it, from fixed channel counts per ifindex; records
    which ifindexes' configuration each poll asked for."""

    def __init__(self, rx: dict[int, int]) -> None:
        self.rx = rx
        self.asked: list[set[int] | None] = []
        self.failing: dict[str, str] = {}

    def read_all(self, ifindexes=None) -> en.NetlinkResult:
        return self.read_some(ifindexes, None)

    def read_some(self, ifindexes, config) -> en.NetlinkResult:
        self.asked.append(None if config is None else set(config))
        config = set(ifindexes) if config is None else set(config)
        infos = {}
        for ifindex in ifindexes:
            channels = (Channels(self.rx[ifindex], 1, None, None, 8, 8, None, None)
                        if ifindex in config and not self.failing else None)
            infos[ifindex] = EthtoolNetlinkInfo(
                channels=channels, std_stats=MappingProxyType({"eth-mac.FramesReceivedOK": 1}))
        return en.NetlinkResult(MappingProxyType(infos), MappingProxyType(self.failing))

    def close(self) -> None:
        pass


class Watch:
    def __init__(self) -> None:
        self.next: set[int] | None = set()

    def changed(self) -> set[int] | None:
        out, self.next = self.next, set()
        return out

    def close(self) -> None:
        pass


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def netclass(name: str, ifindex: int, carrier_changes: int = 1) -> NetClass:
    return NetClass(name, ifindex, None, "up", 1500, None, None, True, carrier_changes,
                    None, None, None, None, None)


NCS = [netclass("ens1", 11), netclass("ens2", 12), netclass("ens3", 13)]


def setup(watch: Watch | None = None):
    reader, clock = Reader({11: 1, 12: 2, 13: 3}), Clock()
    watch = Watch() if watch is None else watch
    return en.EthtoolNetlinkSource(reader, en.CONFIG_REFRESH, watch, clock), reader, watch, clock


def read(source, ncs=NCS) -> Poll:
    poll = Poll(ncs)
    source.read(poll)
    return poll


def test_unchanged_interfaces_keep_their_channels_without_a_config_dump():
    source, reader, _, clock = setup()
    first = read(source)
    clock.now += 5
    again = read(source)
    assert reader.asked == [{11, 12, 13}, set()]
    assert again.parts == first.parts
    assert again.parts["ens2"]["netlink"].channels.rx == 2


def test_a_notification_the_link_state_an_ifindex_or_the_period_reads_again():
    source, reader, watch, clock = setup()
    read(source)
    watch.next, reader.rx[12] = {12}, 5
    assert read(source).parts["ens2"]["netlink"].channels.rx == 5
    watch.next = en.EVERY  # notifications were lost: everyone
    read(source)
    moved = [netclass("ens1", 11, carrier_changes=3), netclass("ens2", 22), NCS[2]]
    reader.rx[22] = 7
    read(source, moved)
    clock.now += en.CONFIG_REFRESH
    read(source, moved)
    assert reader.asked[1:] == [{12}, {11, 12, 13}, {11, 22}, {11, 22, 13}]


def test_a_failed_config_dump_is_asked_again_next_poll():
    source, reader, _, _ = setup()
    reader.failing = {"CHANNELS_GET": "EOPNOTSUPP"}
    failed = read(source)
    assert failed.parts["ens1"]["netlink"].channels is None
    reader.failing = {}
    assert read(source).parts["ens1"]["netlink"].channels.rx == 1
    assert reader.asked == [{11, 12, 13}, {11, 12, 13}]


def test_without_notifications_or_refresh_every_poll_reads_everything():
    reader = Reader({11: 1, 12: 2, 13: 3})
    for source in (en.EthtoolNetlinkSource(reader, en.CONFIG_REFRESH, None),
                   en.EthtoolNetlinkSource(reader, 0.0, Watch())):
        read(source)
        read(source)
    assert reader.asked == [None] * 4


# --- real veths in a namespace ---------------------------------------------------------------

# Polls the source inside the namespace: dumps per poll and v0's channel counts; between the
# polls runs the shell commands given.
POLLS = textwrap.dedent("""
    import json, socket, subprocess, sys
    from nicwatch.sources import Poll, SourceOptions
    from nicwatch.sources import ethtool_netlink as en
    from nicwatch.sources.sysfs_net import read_netclass

    steps = json.loads(sys.argv[1])
    mode = sys.argv[2]
    if mode == "open":
        source = en.EthtoolNetlinkSource.open(SourceOptions())
        assert isinstance(source.watch, en.EthtoolWatch)
    else:  # no notification socket
        source = en.EthtoolNetlinkSource(en.EthtoolNetlink(), en.CONFIG_REFRESH, None)
    if mode == "overflow":  # the smallest receive buffer: a few notifications overflow it
        source = en.EthtoolNetlinkSource.open(SourceOptions())
        source.watch._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 0)
    seen = []  # what the watch answered each poll (None: EVERY)
    if source.watch is not None:
        changed = source.watch.changed
        def recording():
            ifindexes = changed()
            seen.append(None if ifindexes is None else len(ifindexes))
            return ifindexes
        source.watch.changed = recording
    out = []
    for commands in steps:
        for command in commands:
            subprocess.run(command, check=True, capture_output=True)
        poll = Poll([read_netclass("/sys", name) for name in ("v0", "v1")])
        before = source.reader.dumps
        source.read(poll)
        channels = poll.parts["v0"]["netlink"].channels
        out.append([source.reader.dumps - before, channels.rx, channels.tx,
                    [str(e) for _, e in poll.errors]])
    source.close()
    print(json.dumps(out if mode != "overflow" else [out, seen]))
""")


def polls(ns: str, steps: list[list[list[str]]], mode: str = "open") -> list[list]:
    return json.loads(ns_sh(ns, PYTHON, "-c", POLLS, json.dumps(steps), mode).stdout)


@pytest.fixture
def veth_ns():
    """A namespace with one veth pair v0/v1 of 4 rx and 4 tx queues each, left down: on a
    running veth, setting the channels takes the carrier down and up again (carrier_changes
    +2), which alone would re-read them; down, only the notification tells."""
    batch = ("link add v0 numtxqueues 4 numrxqueues 4 type veth peer name v1 "
             "numtxqueues 4 numrxqueues 4\n")
    with namespace_with("nwc", batch) as ns:
        yield ns


def set_rx(n: int) -> list[str]:
    return ["ethtool", "-L", "v0", "rx", str(n)]


ALL, STEADY = len(en.REQUESTS), len(en.REQUESTS) - len(en.CONFIG_MESSAGES)


@pytest.mark.netns
def test_channels_are_read_first_then_only_after_a_notification(veth_ns):
    out = polls(veth_ns, [[], [], [set_rx(2)], [], [set_rx(3), ["ethtool", "-L", "v0", "tx", "1"]]])
    assert out == [
        [ALL, 4, 4, []],  # first poll: everything
        [STEADY, 4, 4, []],  # nothing changed: no RINGS_GET/CHANNELS_GET
        [ALL, 2, 4, []],  # CHANNELS_NTF named v0
        [STEADY, 2, 4, []],
        [ALL, 3, 1, []],
    ]


@pytest.mark.netns
def test_link_state_change_reads_again(veth_ns):
    up = [["ip", "link", "set", "v0", "up"], ["ip", "link", "set", "v1", "up"]]
    out = polls(veth_ns, [[], [], up])
    assert [dumps for dumps, *_ in out] == [ALL, STEADY, ALL]


@pytest.mark.netns
def test_without_notifications_every_poll_reads_channels(veth_ns):
    out = polls(veth_ns, [[], [], [set_rx(2)]], mode="none")
    assert out == [[ALL, 4, 4, []], [ALL, 4, 4, []], [ALL, 2, 4, []]]


@pytest.mark.netns
def test_overflowed_notifications_read_everything_again(veth_ns):
    toggles = [set_rx(n) for _ in range(20) for n in (1, 2)]
    out, seen = polls(veth_ns, [[], [], toggles, []], mode="overflow")
    assert seen == [0, 0, None, 0]  # the third poll found the socket overflowed (ENOBUFS)
    assert out == [[ALL, 4, 4, []], [STEADY, 4, 4, []], [ALL, 2, 4, []], [STEADY, 2, 4, []]]
