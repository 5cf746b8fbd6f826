"""The blind set (cases.toml): real `ethtool -S` dumps as BEFORE, a scenario's increments for
AFTER, and the verdict set an operator would name, written before the code ran. Each case is
evaluated exactly as `nicwatch diagnose --ethtool` evaluates two pasted dumps."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from nicwatch.consumers.checks import parse_link_speed
from nicwatch.consumers.diagnosis.engine import evaluate
from nicwatch.consumers.diagnosis.windows import from_ethtool
from nicwatch.pasted import ethtool_text

HERE = Path(__file__).parent
FIXTURES = HERE.parents[3] / "fixtures"
CASES = tomllib.loads((HERE / "cases.toml").read_text(encoding="utf-8"))["case"]


def verdicts(case: dict[str, object]) -> set[str]:
    before = ethtool_text.parse((FIXTURES / str(case["before"])).read_text(encoding="utf-8"))
    names = list(before.names)
    values = list(before.values)
    for name in case.get("adds", []):  # type: ignore[attr-defined]
        assert name not in names, f"{name} is already in the dump"
        names.append(name)
        values.append(0)
    after = list(values)
    increments = case["increments"]
    assert isinstance(increments, dict)
    for name, inc in increments.items():
        assert name in names, f"{name} is not in {case['before']}"
        after[names.index(name)] += int(inc)
    speed = parse_link_speed(case["speed"]) * 125_000.0
    w = from_ethtool("eth0", str(case["driver"]), names, values, names, after,
                     float(case["interval"]), speed)  # type: ignore[arg-type]
    return {v.label for v in evaluate([w])}


@pytest.mark.parametrize("case", CASES, ids=[str(c["name"])[:60] for c in CASES])
def test_blind_case(case: dict[str, object]) -> None:
    assert verdicts(case) == set(case["expected"])  # type: ignore[arg-type]


def test_every_driver_table_the_issue_names_has_a_healthy_busy_case() -> None:
    healthy = {c["driver"] for c in CASES if not c["expected"]}
    assert healthy >= {"mlx5_core", "ice", "bnxt_en", "ixgbe", "i40e", "be2net"}
