"""One module per driver, each holding only a DriverTable. Adding a driver is adding a
module here and a line in ``_MODULES``."""

from __future__ import annotations

from importlib import import_module

from nicwatch.normalize.rules import DriverTable

_MODULES = ("be2net", "bnxt_en", "e1000e", "ena", "i40e", "ice", "ixgbe", "mlx5_core", "veth",
            "virtio_net")

TABLES: dict[str, DriverTable] = {
    t.driver: t for t in (import_module(f"{__name__}.{m}").TABLE for m in _MODULES)
}
