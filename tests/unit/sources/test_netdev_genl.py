"""The netdev generic netlink family: for real on veth pairs in namespaces the test creates
(queue-get, napi-get, qstats-get on this 6.18 kernel), and on replies built to the kernel's
layout (tests/helpers/fixture_netdev.py) for what veth cannot give: queues linked to NAPIs,
NAPIs with an interrupt, per-queue statistics, older kernels."""

from __future__ import annotations

import json

import pytest

from nicwatch.model import Napi, NetClass, NetdevQueue
from nicwatch.sources import Poll
from nicwatch.sources.netdev_genl import (
    CMD_NAPI_GET,
    CMD_QSTATS_GET,
    CMD_QUEUE_GET,
    NetdevGenl,
    NetdevGenlSource,
)

from fixture_netdev import Device, KernelNetdev, mlx5_device
from netns import make_veth_pair, ns_python, ns_sh

READ = """
import json, socket
from nicwatch.sources.netdev_genl import NetdevGenl
with NetdevGenl() as s:
    d = s.read(True)
i = socket.if_nametoindex(%r)
print(json.dumps({
    "queues": [[q.kind, q.id, q.napi_id] for q in (d.queues or {}).get(i, [])],
    "napis": [[n.id, n.irq, n.pid] for n in (d.napis or {}).get(i, [])],
    "qstats": d.device.get(i), "per_queue": len(d.per_queue.get(i, [])),
    "lo_queues": len((d.queues or {}).get(1, [])), "failed": d.failed}))
"""


@pytest.fixture
def veth4():
    pair = make_veth_pair(queues=4, subnet=3)
    yield pair
    pair.delete()


def test_veth_queues_napis_and_qstats_as_this_kernel_gives_them(veth4):
    before = ns_python(veth4.ns_b, READ % veth4.b)
    # Every queue of the up interface, read to the end of the dump (the replies have no
    # NLM_F_MULTI), lo's two as well; no queue is linked to a NAPI (veth does not call
    # netif_queue_set_napi) and veth has no qstats (no netdev_stat_ops).
    assert before["queues"] == [["rx", q, None] for q in range(4)] + \
        [["tx", q, None] for q in range(4)]
    assert before["lo_queues"] == 2
    assert before["napis"] == [] and before["qstats"] is None and before["per_queue"] == 0
    assert before["failed"] == {}
    # GRO on gives veth one NAPI per rx queue (veth_napi_add); still no irq: none exists
    ns_sh(veth4.ns_b, "ethtool", "-K", veth4.b, "gro", "on")
    after = ns_python(veth4.ns_b, READ % veth4.b)
    assert len(after["napis"]) == 4
    assert all(irq is None and pid is None for _, irq, pid in after["napis"])
    assert after["queues"] == before["queues"]


def test_the_source_puts_the_part_of_each_interface_in_a_namespace(veth4):
    code = f"""
import json
from nicwatch.collect import Collector, Selection
from nicwatch.sources.netdev_genl import NetdevGenl
c = Collector("/sys", Selection(include={veth4.b!r}), netdev=NetdevGenl())
(s,) = c.poll().samples
q = s.reading.queues
print(json.dumps([len(q.queues), len(q.napis), q.stats, list(q.queue_stats)]))
c.close()
"""
    ns_sh(veth4.ns_b, "ethtool", "-K", veth4.b, "gro", "on")
    queues, napis, stats, per_queue = ns_python(veth4.ns_b, code)
    assert queues == 8 and napis == 4 and stats is None and per_queue == []


def netclass(name: str, ifindex: int) -> NetClass:
    return NetClass(name, ifindex, None, "up", 9000, 400000, "full", True, 0, 0, 0,
                    None, None, "mlx5_core")


def poll_of(*ncs: NetClass) -> Poll:
    return Poll(ncs)


def source(kernel: KernelNetdev, names: dict[int, str], refresh: float = 30.0
           ) -> NetdevGenlSource:
    """``names``: ifindex -> name in the kernel's namespace."""
    for d in kernel.devices:
        d.name = names.get(d.ifindex, "")
    return NetdevGenlSource(kernel, refresh)


def test_mlx5_queue_napi_irq_and_queue_statistics():
    kernel = KernelNetdev([mlx5_device(4, 8, 150, rx_packets=[10, 20, 30, 40, 5, 6, 7, 8])])
    poll = poll_of(netclass("ens1f0np0", 4))
    source(kernel, {4: "ens1f0np0"}).read(poll)
    part = poll.parts["ens1f0np0"]["queues"]
    assert part.queues[:2] == (NetdevQueue("rx", 0, 8192), NetdevQueue("rx", 1, 8193))
    assert part.napis[3] == Napi(8195, 154, None)
    rx3 = next(s for s in part.queue_stats if s.kind == "rx" and s.id == 3)
    assert dict(rx3.stats) == {"rx-packets": 40, "rx-bytes": 60000, "rx-alloc-fail": 0}
    # device scope: the queues plus what the driver keeps for queues gone (base stats)
    assert part.stats["rx-packets"] == 126 and part.stats["rx-alloc-fail"] == 3
    assert part.stats["tx-stop"] == 1


def test_an_8_byte_uint_statistic_is_read_whole():
    d = mlx5_device(4, 1, 150, rx_packets=[5 << 32])
    poll = poll_of(netclass("p0", 4))
    source(KernelNetdev([d]), {4: "p0"}).read(poll)
    assert poll.parts["p0"]["queues"].queue_stats[0].stats["rx-packets"] == 5 << 32


def test_a_kernel_without_qstats_is_asked_once():
    """6.8: queue-get and napi-get, no qstats-get (EOPNOTSUPP): remembered, never asked
    again, no error; the lists still come."""
    kernel = KernelNetdev([mlx5_device(4, 2, 150)], commands=(CMD_QUEUE_GET, CMD_NAPI_GET))
    src = source(kernel, {4: "p0"}, refresh=0.0)
    for _ in range(3):
        poll = poll_of(netclass("p0", 4))
        src.read(poll)
        assert poll.errors == []
        part = poll.parts["p0"]["queues"]
        assert part.stats is None and part.queue_stats == () and len(part.queues) == 4
    assert [c for c, _ in kernel.requests].count(CMD_QSTATS_GET) == 1


def test_a_kernel_without_queue_get_has_no_lists():
    kernel = KernelNetdev([mlx5_device(4, 2, 150)], commands=(CMD_QSTATS_GET,))
    poll = poll_of(netclass("p0", 4))
    source(kernel, {4: "p0"}).read(poll)
    part = poll.parts["p0"]["queues"]
    assert part.queues is None and part.napis is None and part.stats is not None


def test_the_lists_are_reread_on_their_cadence_or_when_stale():
    kernel = KernelNetdev([mlx5_device(4, 2, 150)])
    src = source(kernel, {4: "p0"}, refresh=3600.0)
    src.read(poll_of(netclass("p0", 4)))
    src.read(poll_of(netclass("p0", 4)))
    assert [c for c, _ in kernel.requests].count(CMD_QUEUE_GET) == 1
    # `ethtool -L` to 3 channels: the statistics name a queue the lists lack
    kernel.devices = [mlx5_device(4, 3, 150, name="p0")]
    poll = poll_of(netclass("p0", 4))
    src.read(poll)
    assert [c for c, _ in kernel.requests].count(CMD_QUEUE_GET) == 2
    assert len(poll.parts["p0"]["queues"].queues) == 6
    # a new interface makes them due too
    src.read(poll_of(netclass("p0", 4), netclass("p1", 5)))
    assert [c for c, _ in kernel.requests].count(CMD_QUEUE_GET) == 3


def test_an_ifindex_the_namespace_names_otherwise_is_not_this_interface():
    """A fixture tree's interface 4 is not the kernel's interface 4."""
    kernel = KernelNetdev([mlx5_device(4, 2, 150)])
    poll = poll_of(netclass("eth2", 4))
    source(kernel, {4: "eth0"}).read(poll)
    assert "queues" not in poll.parts["eth2"]


def test_a_device_that_is_down_lists_no_queues_but_its_napis():
    d = mlx5_device(4, 2, 150)
    d.up = False
    poll = poll_of(netclass("p0", 4))
    source(KernelNetdev([d]), {4: "p0"}).read(poll)
    part = poll.parts["p0"]["queues"]
    assert part.queues == () and len(part.napis) == 2


def test_a_failed_dump_is_one_error_of_the_source():
    class Failing(KernelNetdev):
        def _exchange(self, data, seq):
            raise OSError(105, "No buffer space available")
    poll = poll_of(netclass("p0", 4))
    source(Failing([Device(4)]), {4: "p0"}).read(poll)
    assert {(d, e.source, e.kind) for d, e in poll.errors} == {("", "netdev_genl", "ENOBUFS")}
    assert json.dumps(poll.parts["p0"]) == "{}"


def test_open_gives_a_source_on_this_kernel():
    from nicwatch.sources import SourceOptions
    src = NetdevGenlSource.open(SourceOptions())
    assert src is not None and isinstance(src.reader, NetdevGenl)
    src.close()
    assert NetdevGenlSource.open(SourceOptions(receive_path=False)) is None
