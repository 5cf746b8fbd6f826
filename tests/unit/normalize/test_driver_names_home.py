"""Driver knowledge lives in the driver tables (normalize/drivers/): no raw counter name of a
driver's table is spelled as a string constant anywhere else in src/ (issue #41 item 4). Code
that needs one looks it up in the table (``DriverTable.raw_name``, ``RdmaDriver.name_of``),
as the demo does.

A name the kernel itself gives every driver (the netdev statistics of ``rtnl_link_stats64``,
the IB PortCounters files) is no driver's knowledge and may be spelled anywhere, even where a
driver also uses it in its `ethtool -S` or ``hw_counters`` (e1000e ``rx_packets``, rxe
``link_downed``)."""

from __future__ import annotations

import ast
from pathlib import Path

from nicwatch.normalize.drivers import RDMA_TABLES, TABLES
from nicwatch.normalize.rdma import COUNTERS_EXT, PMA_BY_NAME
from nicwatch.normalize.rules import render
from nicwatch.sources.rtnetlink import STATS64_FIELDS

SRC = Path(__file__).resolve().parents[3] / "src" / "nicwatch"
HOME = SRC / "normalize" / "drivers"
GENERIC = frozenset(STATS64_FIELDS) | PMA_BY_NAME.keys() | COUNTERS_EXT.keys()
# (file relative to src/nicwatch, name): a spelling outside the tables that must stay, and
# why. Empty: keep it so.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def raw_names() -> dict[str, set[str]]:
    """Every literal raw name the tables hold -> the drivers holding it: the rules' patterns
    without groups (each alternative), the netlink fills' and same-register names, and the
    RDMA drivers' hw_counters; less the kernel's generic names."""
    names: dict[str, set[str]] = {}
    for table in TABLES.values():
        found = [render(alt, {}) for rule in table.rules for alt in rule.pattern.split("|")]
        found += [n for fill in table.netlink for n in fill.raw]
        found += [n for same in table.same_register for n in same.names]
        for name in found:
            if name is not None:
                names.setdefault(name, set()).add(table.driver)
    for driver in RDMA_TABLES.values():
        for counter in driver.counters:
            names.setdefault(counter.name, set()).add(driver.key)
    return {n: d for n, d in names.items() if n not in GENERIC}


def spelled(source: str, names: dict[str, set[str]]) -> list[tuple[int, str]]:
    """(line, name) of each string constant of ``source`` that is one of ``names``."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names]


def test_the_tables_hold_the_names_the_scan_looks_for():
    names = raw_names()
    for name, driver in (("rx_out_of_buffer", "mlx5_core"), ("np_cnp_sent", "mlx5"),
                         ("out_of_sequence", "bnxt_re"), ("cnpSent", "irdma"),
                         ("rx_crc_errors.nic", "ice"), ("rx_prio0_pause", "mlx5_core"),
                         ("rx_global_pause_duration", "mlx5_core"), ("sent_pkts", "rxe")):
        assert driver in names.get(name, set()), name
    assert "rx_packets" not in names and "link_downed" not in names  # the kernel's own


def test_the_scan_finds_a_spelling():
    names = raw_names()
    assert spelled('x = {"np_cnp_sent": 1}\nif a == "rx_out_of_buffer": pass\n', names) == [
        (1, "np_cnp_sent"), (2, "rx_out_of_buffer")]
    assert spelled('"""rx_out_of_buffer in prose"""\ny = f"rx{n}_packets"\n', names) == []


def test_no_raw_driver_name_is_spelled_outside_the_driver_tables():
    names = raw_names()
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if HOME in path.parents:
            continue
        where = str(path.relative_to(SRC))
        found += [f"{where}:{line}: {name!r} ({', '.join(sorted(names[name]))})"
                  for line, name in spelled(path.read_text(encoding="utf-8"), names)
                  if (where, name) not in ALLOWED]
    assert not found, ("raw driver names outside normalize/drivers/; look them up in the "
                       "driver's table instead:\n" + "\n".join(found))
