"""The ethtool family's notifications, decoded from datagrams built to the kernel's layout:
``ethnl_default_notify()`` (net/ethtool/netlink.c) sends, on the family's "monitor" group,
an nlmsghdr of the family's type, a genlmsghdr whose cmd is the ETHTOOL_MSG_*_NTF, and the
GET reply's attributes with the header nest (DEV_INDEX, DEV_NAME) first."""

from __future__ import annotations

import struct

import pytest

from nicwatch.sources import ethtool_netlink as en
from nicwatch.sources.ethtool_netlink_decode import notified_ifindexes

from fixture_ethtool import attrs, header, nest, string, u32

# uapi numbers, spelled out here rather than taken from the module under test.
FAMILY = 0x15  # the id the controller gave the ethtool family (any id >= 0x10)
LINKINFO_NTF, RINGS_NTF, CHANNELS_NTF, COALESCE_NTF = 3, 17, 19, 21
CHANNELS_RX_MAX, CHANNELS_RX_COUNT = 2, 6
RINGS_RX = 6


def message(msg_type: int, cmd: int, payload: bytes, seq: int = 1) -> bytes:
    body = struct.pack("=BBH", cmd, 1, 0) + payload
    data = struct.pack("=IHHII", 16 + len(body), msg_type, 0, seq, 0) + body
    return data + b"\0" * (-len(data) % 4)


def test_rings_and_channels_notifications_name_their_devices_by_header_ifindex():
    datagram = b"".join((
        message(FAMILY, LINKINFO_NTF, attrs(header(1, ifindex=5))),  # another kind: skipped
        message(FAMILY, CHANNELS_NTF, attrs(header(1, ifindex=7), u32(CHANNELS_RX_MAX, 4),
                                            u32(CHANNELS_RX_COUNT, 2))),
        message(FAMILY, RINGS_NTF, attrs(header(1, ifindex=9), u32(RINGS_RX, 512))),
        message(FAMILY, COALESCE_NTF, attrs(header(1, ifindex=11))),
        message(FAMILY + 1, CHANNELS_NTF, attrs(header(1, ifindex=13))),  # another family
    ))
    assert notified_ifindexes(datagram, FAMILY) == {7, 9}
    assert notified_ifindexes(b"", FAMILY) == set()
    # re-exported where the source's importers look for it
    assert en.notified_ifindexes is notified_ifindexes


def test_header_not_first_is_walked():
    payload = attrs(u32(CHANNELS_RX_COUNT, 2), nest(1, string(2, "eth9"), u32(1, 42)))
    assert notified_ifindexes(message(FAMILY, CHANNELS_NTF, payload), FAMILY) == {42}


@pytest.mark.parametrize("datagram", [
    message(FAMILY, CHANNELS_NTF, attrs(nest(1, string(2, "eth9")))),  # no DEV_INDEX
    message(FAMILY, RINGS_NTF, attrs(header(1)))[:-4],  # cut: shorter than its nlmsg_len
    struct.pack("=IHHII", 8, FAMILY, 0, 0, 0),  # nlmsg_len below the header's size
])
def test_a_notification_that_does_not_fit_is_a_parse_error(datagram):
    with pytest.raises(en.ParseError):
        notified_ifindexes(datagram, FAMILY)


def test_monitor_group_id_from_the_controller_reply():
    """CTRL_CMD_GETFAMILY's reply: CTRL_ATTR_MCAST_GROUPS (7), one nest per group numbered
    from 1, each with CTRL_ATTR_MCAST_GRP_ID (2) and CTRL_ATTR_MCAST_GRP_NAME (1)."""
    reply = attrs(u32(1, FAMILY), string(2, "ethtool"),
                  nest(7, nest(1, u32(2, 3), string(1, "other")),
                       nest(2, u32(2, 9), string(1, "monitor"))))
    assert en.mcast_group_id(reply, "monitor") == 9
    assert en.mcast_group_id(reply, "absent") is None
    assert en.mcast_group_id(attrs(u32(1, FAMILY)), "monitor") is None
