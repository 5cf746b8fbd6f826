"""The operator's role for this host's ports ([fabric] role): nic_fabric_role_info on every
port, the label the fleet drift rules group by (docs/fabric.md, "Fleet drift")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nicwatch import metrics
from nicwatch.consumers import BaseConsumer
from nicwatch.model import ExtraFamily

if TYPE_CHECKING:  # annotations only
    from nicwatch.collect import PollResult
    from nicwatch.config import Config
    from nicwatch.consumers import Services
    from nicwatch.tracker import TrackedSample


class FabricRole(BaseConsumer):
    def __init__(self, role: str | None) -> None:
        self.role = role
        self._devices: tuple[str, ...] = ()

    @classmethod
    def open(cls, config: Config, host: object = None,
             services: Services | None = None) -> FabricRole:
        return cls(config.fabric_role)

    def observe(self, result: PollResult, tracked: Sequence[TrackedSample] = ()) -> None:
        self._devices = tuple(sorted(s.identity.device for s in result.samples))

    def families(self) -> Sequence[ExtraFamily]:
        if not self.role:
            return ()
        return (metrics.extra(metrics.FABRIC_ROLE, tuple(
            ((("device", device), ("role", self.role)), 1.0) for device in self._devices)),)

    def reconfigure(self, config: Any) -> None:
        self.role = config.fabric_role
