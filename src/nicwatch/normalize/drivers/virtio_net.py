"""virtio_net (drivers/net/virtio_net.c): per-queue software counters. Since 6.10 names are
`rx0_drops` next to queue-less totals such as `rx_drops`; older kernels used
`rx_queue_0_drops` and had no totals."""

from nicwatch.normalize.rules import DriverTable, QueueStat

TABLE = DriverTable(
    driver="virtio_net",
    source="drivers/net/virtio_net.c",
    rules=(),
    queues=(
        QueueStat(r"(?P<dir>rx|tx)(?P<queue>\d+)_(?P<name>.+)", "{dir}N_{name}"),
        QueueStat(r"(?P<dir>rx|tx)_queue_(?P<queue>\d+)_(?P<name>.+)", "{dir}_queue_N_{name}"),
    ),
    notes="A virtual NIC: no PAUSE, FEC or CRC. Since 6.10 the driver's own totals "
    "(`rx_drops`, `tx_kicks`, ...) sit next to the per-queue `rxN_*` names, which keep their "
    "`N` when summed so the two are not added together; per-queue packets and bytes moved to "
    "netdev queue statistics. Rings and channels come from the standard ethtool calls.",
)
