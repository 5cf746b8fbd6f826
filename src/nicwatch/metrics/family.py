"""The Family record and its constructors: one exact definition of a metric family."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    type: str  # "counter" or "gauge"
    help: str
    labels: tuple[str, ...] = ()
    unit: str = ""
    health: bool = False  # a trouble counter; also gets a peak-rate gauge
    total_label: tuple[str, str] | None = None  # a summary series dropped when parts exist
    burst: bool = False  # not trouble, but its sub-scrape peaks matter (throughput)

    @property
    def peaked(self) -> bool:
        """Served with a *_peak_per_second gauge over the peak window."""
        return self.health or self.burst

    @property
    def base(self) -> str:
        return self.name[: -len("_total")] if self.name.endswith("_total") else self.name


def _counter(name: str, help: str, labels: Sequence[str] = (), unit: str = "",
             health: bool = False, total_label: tuple[str, str] | None = None,
             burst: bool = False) -> Family:
    return Family(name, "counter", help, tuple(labels), unit, health, total_label, burst)


def _gauge(name: str, help: str, labels: Sequence[str] = (), unit: str = "") -> Family:
    return Family(name, "gauge", help, tuple(labels), unit)


RDMA = ("rdma_device", "port")
DEVLINK_HEALTH = ("devlink", "devlink_port", "reporter")
