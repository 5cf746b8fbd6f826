"""The one list of consumers: each implements the contract, and the daemon feeds them all."""

from nicwatch.collect import PollResult
from nicwatch.config import build
from nicwatch.consumers.registry import CONSUMERS, open_consumers
from nicwatch.model import HostReading
from nicwatch.sources.host import read_host


def test_every_registered_consumer_observes_contributes_and_reconfigures(tmp_path):
    config = build(None, {"state.file": str(tmp_path / "state.json")})
    consumers = open_consumers(config, read_host())
    assert len(consumers) == len(CONSUMERS)
    empty = PollResult((), (), {}, HostReading(softirq_seconds=(1.0, 2.0)))
    for consumer in consumers:
        consumer.observe(empty)
        assert all(f.series == () for f in consumer.families()), consumer
        consumer.reconfigure(config)


def test_services_carry_the_softirq_and_receive_path_consumers(tmp_path):
    """The consumers that compute per-CPU softirq shares and receive-path windows put
    themselves in the Services, so the diagnosis after them reads their results of the poll
    instead of computing them a second time."""
    from nicwatch.consumers import Services
    from nicwatch.consumers.queue_spread import QueueSpread
    from nicwatch.consumers.softirq import SoftirqLoad
    config = build(None, {"state.file": str(tmp_path / "state.json")})
    services = Services()
    consumers = open_consumers(config, read_host(), services)
    assert services.softirq in consumers and isinstance(services.softirq, SoftirqLoad)
    assert services.receive_path in consumers and isinstance(services.receive_path, QueueSpread)
