"""docs/metrics.md is generated from the contract and the tables; it must not drift."""

from paths import REPO

from nicwatch.normalize import doc
from nicwatch.normalize.drivers import TABLES
from nicwatch.metrics import COUNTERS, GAUGES

METRICS_MD = REPO / "docs" / "metrics.md"


def test_docs_metrics_md_is_up_to_date():
    assert METRICS_MD.read_text() == doc.render(), (
        f"docs/metrics.md is stale; regenerate it with `{doc.COMMAND}`")


def test_every_family_and_driver_is_documented():
    text = doc.render()
    for family in (*COUNTERS, *GAUGES):
        assert f"`{family.name}`" in text
    for driver, table in TABLES.items():
        assert f"### {driver}\n\n{table.notes}\n" in text


def test_readable_names():
    assert doc.names(r"rx_prio(?P<priority>[0-7])_pause") == ["rx_prio<priority>_pause"]
    assert doc.names(r"link_xoff_rx\.nic|port-rx-xoff_events") == ["link_xoff_rx.nic",
                                                                   "port-rx-xoff_events"]
    assert doc.names(r"port\.rx_(?:dropped|discards)") == ["port.rx_(dropped|discards)"]
    assert doc.names(r"\[(?P<queue>\d+)\]: (?P<name>.+)") == ["[<queue>]: <name>"]
    assert doc.names(r"rxq\d+: rx_drops_no_frags") == ["rxq<n>: rx_drops_no_frags"]
