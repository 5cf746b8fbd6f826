"""virtio_net (drivers/net/virtio_net.c): per-queue software counters. Since 6.10 names are
`rx0_drops` next to queue-less totals such as `rx_drops`; older kernels used
`rx_queue_0_drops` and had no totals."""

from nicwatch.normalize.rules import DriverTable, IrqName, QueueStat

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
    irqs=(
        IrqName(r"virtio\d+-input\.(?P<queue>\d+)", "rx",
                "virtio_pci_common.c vp_find_vqs_msix(): \"%s-%s\" of the device name and the "
                "virtqueue's, virtio_net.c virtnet_find_vqs(): \"input.%u\""),
        IrqName(r"virtio\d+-output\.(?P<queue>\d+)", "tx", "virtnet_find_vqs(): \"output.%u\""),
        IrqName(r"virtio\d+-(?:config|control|virtqueues)", "other",
                "vp_request_msix_vectors(): \"%s-config\", shared \"%s-virtqueues\""),
    ),
    # up to 6.9; since 6.10 per-queue packets are only in the netdev qstats
    rx_queue_packets=(r"rx_queue_(?P<queue>\d+)_packets",),
)
