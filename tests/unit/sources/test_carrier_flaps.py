"""Why a link is down and how often, for real: a veth pair in namespaces the test creates,
its peer end flapped with `ip link set down/up`. The carrier counters nicwatch exports
(rtnetlink IFLA_CARRIER_UP_COUNT / IFLA_CARRIER_DOWN_COUNT) equal the kernel's own
(/sys/class/net/<if>/carrier_*_count) and the flaps made; LINKSTATE_GET's link follows the
carrier as `ethtool <if>` shows it; veth gives no extended state, so no down reason is
exported (absent, not a made-up one)."""

from __future__ import annotations

import pytest

from netns import make_veth_pair, ns_python, ns_sh

READ = """
import json
from nicwatch.collect import Collector, Selection
from nicwatch.sources.ethtool_netlink import EthtoolNetlink
from nicwatch.sources.rtnetlink import RtNetlink
c = Collector("/sys", Selection(include=%r), rtnetlink=RtNetlink(), netlink=EthtoolNetlink())
try:
    (s,) = c.poll().samples
finally:
    c.close()
info = s.reading.netlink
print(json.dumps({
    "counters": {k.metric: cv.value for k, cv in s.counters.items()
                 if "carrier" in k.metric or "link_down" in k.metric},
    "reasons": [dict(k.labels) for k in s.gauges if k.metric == "nic_link_down_reason"],
    "link": None if info is None or info.linkstate is None else info.linkstate.link,
    "ext_state": None if info is None or info.linkstate is None else info.linkstate.ext_state,
}))
"""


def kernel_counts(ns: str, dev: str) -> tuple[int, int]:
    out = ns_sh(ns, "sh", "-c", f"cat /sys/class/net/{dev}/carrier_up_count "
                f"/sys/class/net/{dev}/carrier_down_count").stdout.split()
    return int(out[0]), int(out[1])


def ethtool_link_detected(ns: str, dev: str) -> bool:
    text = ns_sh(ns, "ethtool", dev).stdout
    return "Link detected: yes" in text


@pytest.fixture
def flapping_pair():
    pair = make_veth_pair(subnet=43)
    yield pair
    pair.delete()


@pytest.mark.netns
def test_carrier_counters_equal_the_kernels_after_real_flaps(flapping_pair):
    p = flapping_pair
    up0, down0 = kernel_counts(p.ns_a, p.a)
    flaps = 4
    for _ in range(flaps):
        ns_sh(p.ns_b, "ip", "link", "set", p.b, "down")
        ns_sh(p.ns_b, "ip", "link", "set", p.b, "up")
    got = ns_python(p.ns_a, READ % (p.a,))
    up, down = kernel_counts(p.ns_a, p.a)
    assert (up - up0, down - down0) == (flaps, flaps)  # each flap: carrier off, then on
    assert got["counters"]["nic_carrier_down_events_total"] == down
    assert got["counters"]["nic_carrier_up_events_total"] == up
    assert "nic_link_down_events_total" not in got["counters"]  # veth has no count of its own
    assert got["link"] is True and ethtool_link_detected(p.ns_a, p.a)
    assert got["reasons"] == []


@pytest.mark.netns
def test_a_link_down_without_a_driver_reason_has_no_reason(flapping_pair):
    p = flapping_pair
    ns_sh(p.ns_b, "ip", "link", "set", p.b, "down")
    got = ns_python(p.ns_a, READ % (p.a,))
    up, down = kernel_counts(p.ns_a, p.a)
    assert got["link"] is False and not ethtool_link_detected(p.ns_a, p.a)
    assert (got["ext_state"], got["reasons"]) == (None, [])
    assert got["counters"]["nic_carrier_down_events_total"] == down >= 1
    assert got["counters"]["nic_carrier_up_events_total"] == up
