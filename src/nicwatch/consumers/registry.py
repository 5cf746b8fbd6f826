"""The one list of consumers the daemon feeds after each poll, in this order (their families
are rendered in the same order). Each entry opens its consumer from the configuration, the
host's provenance and the shared services; a consumer that provides a service comes before
those that use it: the recorder (the history) and identity (the state directory, whose state
file is opened here, before any kernel handle) before incidents."""

from __future__ import annotations

from collections.abc import Callable

from nicwatch.config import Config
from nicwatch.consumers import Consumer, Services
from nicwatch.consumers.checks import ExpectationChecks
from nicwatch.consumers.diagnosis.consumer import Diagnosis
from nicwatch.consumers.fabric import FabricRole
from nicwatch.consumers.history import Recorder
from nicwatch.consumers.identity import IdentityConsumer
from nicwatch.consumers.incidents import Incidents
from nicwatch.consumers.linkphysics import LinkPhysicsConsumer
from nicwatch.consumers.queue_spread import QueueSpread
from nicwatch.consumers.softirq import SoftirqLoad
from nicwatch.sources.host import HostInfo

# By name: what a --no-collector.NAME switch names (config.COLLECTORS) and what
# nicwatch_collector_enabled reports.
NAMED: dict[str, Callable[[Config, HostInfo, Services], Consumer]] = {
    "history": Recorder.open,
    "identity": IdentityConsumer.open,
    "softirq": SoftirqLoad.open,
    "receive_path": QueueSpread.open,
    "link_physics": LinkPhysicsConsumer.open,
    "checks": ExpectationChecks.open,
    "incidents": Incidents.open,
    "diagnosis": Diagnosis.open,
    "fabric_role": FabricRole.open,
}
CONSUMERS: tuple[Callable[[Config, HostInfo, Services], Consumer], ...] = tuple(NAMED.values())


def open_consumers(config: Config, host: HostInfo,
                   services: Services | None = None) -> list[Consumer]:
    """Every consumer the configuration leaves on (config.disabled_consumers), opened in
    order; ``services`` is filled as they open (a service whose provider is off stays None:
    its users cope, as incidents without the history)."""
    services = services if services is not None else Services()
    off = config.disabled_consumers
    return [open_consumer(config, host, services) for name, open_consumer in NAMED.items()
            if name not in off]
