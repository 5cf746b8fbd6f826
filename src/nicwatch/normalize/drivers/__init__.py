"""One module per driver, each holding its tables: a netdev driver's ``TABLE`` (DriverTable:
its `ethtool -S` names) and an RDMA driver's ``RDMA`` (RdmaDriver: its ``hw_counters``; the
RDMA side of a NIC has a module of its own, named as the kernel module: mlx5_ib, bnxt_re,
irdma). Adding a driver is adding a module here and a line in ``_MODULES`` or
``_RDMA_MODULES``."""

from __future__ import annotations

from importlib import import_module

from nicwatch.normalize.rules import DriverTable, RdmaDriver

_MODULES = ("be2net", "bnxt_en", "e1000e", "ena", "i40e", "ice", "ixgbe", "mlx5_core", "veth",
            "virtio_net")

TABLES: dict[str, DriverTable] = {
    t.driver: t for t in (import_module(f"{__name__}.{m}").TABLE for m in _MODULES)
}
# Drivers that register one hwmon device per chip, on one PF (handed to the hwmon source).
HWMON_ONE_PER_CHIP = frozenset(d for d, t in TABLES.items() if t.hwmon_one_per_chip)

_RDMA_MODULES = ("mlx5_ib", "bnxt_re", "irdma", "efa", "mana_ib", "rdma_rxe")  # docs order

RDMA_TABLES: dict[str, RdmaDriver] = {
    t.key: t for t in (import_module(f"{__name__}.{m}").RDMA for m in _RDMA_MODULES)
}
