"""veth: software pairs; only XDP and drop counters per queue (drivers/net/veth.c)."""

from nicwatch.normalize.rules import DriverTable, QueueStat

TABLE = DriverTable(
    driver="veth",
    source="drivers/net/veth.c",
    rules=(),
    gauges=(r"peer_ifindex",),
    queues=(
        QueueStat(r"(?P<dir>rx|tx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_queue_N_{name}"),
    ),
    notes="veth has no physical port: traffic comes from the kernel netdev counters; "
    "`peer_ifindex` is an interface index, exported only as a raw gauge.",
    # every packet veth_poll() handles (NAPI: GRO or XDP on, or threaded) is counted in
    # xdp_packets of its rx queue (veth.c veth_xdp_rcv); without NAPI none is
    rx_queue_packets=(r"rx_queue_(?P<queue>\d+)_xdp_packets",),
)
