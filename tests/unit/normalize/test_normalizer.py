"""What normalizing keeps from poll to poll belongs to the Normalizer a collector owns: the
plans by the names object a reader hands over again, the decoded module EEPROMs by
interface. Nothing is kept at module level, so no test clears a global and two collectors
(the daemon's, a snapshot's) share nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import nicwatch
from nicwatch.collect import Collector
from nicwatch.metrics import RAW_COUNTER
from nicwatch.model import NetClass, Reading, StatSet
from nicwatch.normalize import Normalizer, RawOptions, normalize, normalize_driver_stats

PACKAGE = Path(nicwatch.__file__).parent
# Module-level mutable values that are not caches of a stage: keyed by a record class
# (a value: every instance of the class has the same fields), never by a device or an id().
BY_CLASS = {("snapshot/statekey.py", "_FIELD_NAMES"), ("snapshot/statekey.py", "_STATE_FIELDS"),
            ("snapshot/statekey.py", "_STATE_GETTERS")}
# Declarations filled once as their owners are imported, never at run time (config.py's
# register_section refuses a name twice): the configuration sections consumers own, and
# the families each diagnosis quantity declares it reads (filled by its @reads decorator).
DECLARATIONS = {("config.py", "SECTIONS"), ("consumers/diagnosis/quantities.py", "READS")}
EMPTY_CALLS = {"dict", "set", "list", "defaultdict", "OrderedDict", "WeakKeyDictionary",
               "WeakValueDictionary"}


def _empty_mutable(node: ast.expr | None) -> bool:
    if isinstance(node, (ast.Dict, ast.List, ast.Set)):
        return not (node.keys if isinstance(node, ast.Dict) else node.elts)
    return (isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Name)
            and node.func.id in EMPTY_CALLS)


def module_level_stores() -> set[tuple[str, str]]:
    """(module path, name) of every module-level name bound to an empty dict, list or set:
    the shape of a cache filled as the program runs."""
    out = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign) else [])
            if targets and _empty_mutable(node.value):
                out.update((str(path.relative_to(PACKAGE)), t.id) for t in targets
                           if isinstance(t, ast.Name))
    return out


def test_no_module_level_cache_outside_an_owner():
    assert module_level_stores() == BY_CLASS | DECLARATIONS


def _reading(names: tuple[str, ...], values: tuple[int, ...]) -> Reading:
    nc = NetClass("eth0", 2, None, "up", 1500, 100_000, "full", True, None, None, None, None,
                  "0000:41:00.0", "mlx5_core")
    return Reading("eth0", 0.0, 0.0, nc, stats=StatSet(names, values, 1))


def test_a_normalizer_gives_what_normalize_gives_and_follows_a_changed_raw_option():
    names, values = ("rx_crc_errors_phy", "rx_out_of_buffer", "tx_pause_ctrl_phy"), (3, 4, 5)
    kept = Normalizer()
    once = normalize(_reading(names, values))
    for _ in range(2):  # the second time from the plan it kept for this names object
        again = kept.normalize(_reading(names, values))
        assert again.counters == once.counters and again.gauges == once.gauges
    plain, _ = kept.driver_stats("mlx5_core", names, values, RawOptions())
    assert not any(k.metric == RAW_COUNTER.name for k in plain)
    # a reload turns raw statistics on: the same names object, a new plan at once
    raw, _ = kept.driver_stats("mlx5_core", names, values, RawOptions(enabled=True))
    assert raw == normalize_driver_stats("mlx5_core", names, values, RawOptions(enabled=True))[0]
    assert sum(k.metric == RAW_COUNTER.name for k in raw) == 3


def test_each_collector_owns_its_normalizer():
    a, b = Collector("/nonexistent"), Collector("/nonexistent")
    assert isinstance(a.normalizer, Normalizer) and a.normalizer is not b.normalizer
