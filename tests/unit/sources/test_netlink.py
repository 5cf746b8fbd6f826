"""The netlink framing every netlink source shares: where an exchange ends.

A dump ends with NLMSG_DONE; a plain request with its one reply. The netdev family's dump
replies carry no NLM_F_MULTI on this kernel (6.18: genlmsg_iput() puts no flags; seen on
its queue-get, napi-get and qstats-get dumps), so a dump must not end at the first reply
without it: before the fix only the first queue of the first interface came back
(test_netdev_genl.py reads a real dump in a namespace).
"""

from __future__ import annotations

import pytest

from nicwatch.sources import netlink
from nicwatch.sources.netlink import NLM_F_MULTI, NLMSG_DONE, NLMSGHDR, split_replies

TYPE = 0x1A


def message(body: bytes, seq: int, flags: int = 0, msg_type: int = TYPE) -> bytes:
    out = NLMSGHDR.pack(NLMSGHDR.size + len(body), msg_type, flags, seq, 0) + body
    return out + bytes(-len(out) % 4)


def done(seq: int) -> bytes:
    return message(bytes(4), seq, NLM_F_MULTI, NLMSG_DONE)


def test_a_dump_without_multi_flags_is_read_up_to_done():
    first = message(b"a" * 8, 7) + message(b"b" * 8, 7)
    replies, finished = split_replies(first, 7, dump=True)
    assert replies == [b"a" * 8, b"b" * 8] and not finished
    replies, finished = split_replies(message(b"c" * 8, 7) + done(7), 7, dump=True)
    assert replies == [b"c" * 8] and finished


def test_a_plain_request_still_ends_at_its_reply():
    replies, finished = split_replies(message(b"a" * 8, 3) + message(b"b" * 8, 3), 3)
    assert replies == [b"a" * 8] and finished


def test_a_family_socket_without_its_family_raises_its_own_unavailable_and_closes():
    """One constructor for every generic netlink family: a subclass names its family and its
    kind of FamilyUnavailable, and a kernel without the family raises that kind."""
    class Missing(netlink.FamilyUnavailable):
        pass

    class NoSuchFamily(netlink.GenericNetlinkSocket):
        family_name = "nicwatch_none"  # no kernel has it
        unavailable = Missing

    with pytest.raises(Missing, match="nicwatch_none"):
        NoSuchFamily()
    opened = []

    class Recorded(NoSuchFamily):
        def __init__(self) -> None:
            opened.append(self)
            super().__init__()

    with pytest.raises(Missing):
        Recorded()
    assert opened[0]._sock.fileno() == -1  # closed
    with netlink.GenericNetlinkSocket("nlctrl") as ctrl:  # the controller's own family
        assert ctrl._family == netlink.GENL_ID_CTRL
