"""docs/metrics.md is generated from the contract and the tables; it must not drift."""

from nicwatch.collect import Collector
from nicwatch.config import build
from nicwatch.daemon import Daemon
from nicwatch.metrics import COUNTERS, EXPORTED, FAMILIES, GAUGES, RATED_COUNTERS
from nicwatch.normalize import doc
from nicwatch.normalize.drivers import TABLES

from fixture_ethtool import RecordedEthtool
from paths import ETHTOOL, REPO, SYSFS

METRICS_MD = REPO / "docs" / "metrics.md"


def test_docs_metrics_md_is_up_to_date():
    assert METRICS_MD.read_text() == doc.render(), (
        f"docs/metrics.md is stale; regenerate it with `{doc.COMMAND}`")


def test_every_family_and_driver_is_documented():
    text = doc.render()
    for family in (*COUNTERS, *GAUGES):
        assert f"`{family.name}`" in text
    for driver, table in TABLES.items():
        assert f"### {driver}\n\nSource: `{table.source}`.\n\n{table.notes}\n" in text
        # Every mapping row carries the kernel source or documentation that backs it.
        for rule in table.rules:
            assert rule.evidence and doc._cell(rule.evidence) in text, (driver, rule.pattern)


def test_readable_names():
    assert doc.names(r"rx_prio(?P<priority>[0-7])_pause") == ["rx_prio<priority>_pause"]
    assert doc.names(r"link_xoff_rx\.nic|port-rx-xoff_events") == ["link_xoff_rx.nic",
                                                                   "port-rx-xoff_events"]
    assert doc.names(r"port\.rx_(?:dropped|discards)") == ["port.rx_(dropped|discards)"]
    assert doc.names(r"\[(?P<queue>\d+)\]: (?P<name>.+)") == ["[<queue>]: <name>"]
    assert doc.names(r"rxq\d+: rx_drops_no_frags") == ["rxq<n>: rx_drops_no_frags"]


def test_every_family_on_metrics_is_declared_in_the_contract(tmp_path):
    """The daemon's whole exposition (canonical, tracker, consumers, self-metrics) names only
    families nicwatch.metrics declares, so docs/metrics.md, generated from it, lists them all."""
    config_file = tmp_path / "nicwatch.toml"
    # Every option that adds families on: expectations, and a capture trigger that fires
    # (the incident families were once served undeclared, and this test ran without one).
    config_file.write_text(f"[state]\nfile = '{tmp_path / 'state.json'}'\n"
                           "[[expect]]\nall = true\nmtu = 9000\nrx_ring = 'max'\n"
                           f"[capture]\ndirectory = '{tmp_path / 'incidents'}'\n"
                           "[[capture.trigger]]\nfamily = 'nic_rx_bytes_total'\n"
                           "rate_above = 0\n")
    config = build(str(config_file), {})
    ports = {"enp33s0f0np0": {"driver": "mlx5_core", "perm_address": "0c:42:a1:00:00:01",
                              "stats": str(ETHTOOL / "mlx5_core.txt")}}
    daemon = Daemon(config, collector=Collector(SYSFS / "mlx5-rdma", ioctl=RecordedEthtool(ports)))
    daemon.poll_once()
    text = daemon.poll_once().get(False, False).decode()
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    derived = {f"{FAMILIES[n].base}_{kind}" for n in RATED_COUNTERS
               for kind in ("per_second", "peak_per_second")}
    assert names - EXPORTED.keys() - derived == set()
    assert {"nic_expectation_violation", "nicwatch_expectation_checks",
            "nic_identity_changes_total", "nicwatch_polls_total", "nic_incidents_total",
            "nicwatch_incident_open", "nicwatch_incident_writes_pending",
            "nicwatch_incidents_merged_total"} <= names
    documented = doc.render()
    assert all(f"`{name}`" in documented for name in EXPORTED)
