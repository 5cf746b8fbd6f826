"""virtio_net (drivers/net/virtio_net.c): per-queue software counters. Since 6.10 names are
`rx0_drops`; older kernels used `rx_queue_0_drops`."""

from nicwatch.normalize.rules import DriverTable, QueueStat

TABLE = DriverTable(
    driver="virtio_net",
    rules=(),
    queues=(
        QueueStat(r"(?P<dir>rx|tx)(?P<queue>\d+)_(?P<name>.+)", "{dir}_{name}"),
        QueueStat(r"(?P<dir>rx|tx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_{name}"),
    ),
    notes="A virtual NIC: no PAUSE, FEC or CRC. Drops per queue are summed into the raw "
    "`rx_drops`; rings and channels come from the standard ethtool calls.",
)
