"""The one list of consumers the daemon feeds after each poll, in this order (their families
are rendered in the same order). Each entry opens its consumer from the configuration and the
host's provenance; the identity state file is opened here, before any kernel handle."""

from __future__ import annotations

from nicwatch.config import Config
from nicwatch.consumers import Consumer
from nicwatch.consumers.checks import ExpectationChecks
from nicwatch.consumers.history import Recorder
from nicwatch.consumers.identity import IdentityConsumer
from nicwatch.consumers.rxpath import ReceivePath
from nicwatch.consumers.softirq import SoftirqLoad
from nicwatch.sources.host import HostInfo

CONSUMERS = (
    Recorder.open,
    IdentityConsumer.open,
    SoftirqLoad.open,
    ReceivePath.open,
    ExpectationChecks.open,
)


def open_consumers(config: Config, host: HostInfo) -> list[Consumer]:
    return [open_consumer(config, host) for open_consumer in CONSUMERS]
