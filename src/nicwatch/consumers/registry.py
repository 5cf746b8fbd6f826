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
from nicwatch.consumers.diagnosis import Diagnosis
from nicwatch.consumers.fabric import FabricRole
from nicwatch.consumers.history import Recorder
from nicwatch.consumers.identity import IdentityConsumer
from nicwatch.consumers.incidents import Incidents
from nicwatch.consumers.linkphysics import LinkPhysicsConsumer
from nicwatch.consumers.rxpath import ReceivePath
from nicwatch.consumers.softirq import SoftirqLoad
from nicwatch.sources.host import HostInfo

CONSUMERS: tuple[Callable[[Config, HostInfo, Services], Consumer], ...] = (
    Recorder.open,
    IdentityConsumer.open,
    SoftirqLoad.open,
    ReceivePath.open,
    LinkPhysicsConsumer.open,
    ExpectationChecks.open,
    Incidents.open,
    Diagnosis.open,
    FabricRole.open,
)


def open_consumers(config: Config, host: HostInfo,
                   services: Services | None = None) -> list[Consumer]:
    """Every consumer, opened in order; ``services`` is filled as they open."""
    services = services if services is not None else Services()
    return [open_consumer(config, host, services) for open_consumer in CONSUMERS]
