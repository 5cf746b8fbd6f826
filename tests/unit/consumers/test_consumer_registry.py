"""The one list of consumers: each implements the contract, and the daemon feeds them all."""

from nicwatch.collect import PollResult
from nicwatch.config import build
from nicwatch.consumers.registry import CONSUMERS, open_consumers
from nicwatch.sources.host import read_host


def test_every_registered_consumer_observes_contributes_and_reconfigures(tmp_path):
    config = build(None, {"state.file": str(tmp_path / "state.json")})
    consumers = open_consumers(config, read_host())
    assert len(consumers) == len(CONSUMERS)
    empty = PollResult((), (), {}, {"softirq_seconds": (1.0, 2.0)})
    for consumer in consumers:
        consumer.observe(empty)
        assert all(f.series == () for f in consumer.families()), consumer
        consumer.reconfigure(config)
