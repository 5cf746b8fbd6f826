"""`nicwatch show`, `nicwatch check`, /metrics and the shipped alerts tell the same PCIe story
for every fixture scenario (issue #14: a state must never be green in one of them and red or
unknown in another). The alerts are evaluated by promtool on the very series the exposition
carries."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from nicwatch.cli.show import format_table
from nicwatch.collect import Collector, Selection
from nicwatch.consumers.checks import evaluate, parse_expectations
from nicwatch.exporter.render import SelfStats, render
from nicwatch.normalize.pcie_verdict import (
    CEILING_BELOW_LINE_RATE,
    HIDDEN_LINK_PARTNER,
    LINK_STATE,
    NO_OWN_LINK,
    SPEED,
    WIDTH,
)
from nicwatch.tracker import Tracker

from fixture_ethtool import RecordedEthtool
from paths import REPO, SYSFS
from promtext import parse_exposition

RULES = REPO / "deploy" / "prometheus" / "nicwatch-rules.yml"
SCENARIOS = ("cx7-gen5-healthy", "cx6-dual-gen4x8-width", "cx6-dual-slot-x8", "gen3-old-kernel",
             "lab-report-cx6-200g", "mlx5-rdma", "cx7-link-unknown", "gpu-switch-uplink-x8",
             "qemu-vm-passthrough", "bnxt-npar")
PCIE_FAMILIES = ("nic_pcie_degraded", "nic_pcie_verdict_unknown", "nic_pcie_slot_limited",
                 "nic_pcie_bandwidth_ceiling_bytes_per_second",
                 "nic_pcie_shared_line_rate_bytes_per_second")
SHOW_WORD = {"ok": "ok", "degraded": "DEGRADED", "unknown": "UNKNOWN"}


def poll(scenario: str):
    collector = Collector(SYSFS / scenario, Selection(), ioctl=RecordedEthtool({}),
                          clock=lambda: 1_790_000_000.0,
                          monotonic=iter(range(0, 1000, 5)).__next__)
    tracker = Tracker()
    for _ in range(2):
        samples = collector.poll().samples
        tracked = tracker.update(samples)
    return samples, render(tracked, SelfStats()).decode()


def expected_alerts(verdict) -> set[tuple[str, str, str]]:
    """(alert, reason, limit) the verdict calls for, from the verdict alone. A VF in a
    guest (no_own_link) is reported but alerts nobody: nothing can be done from there."""
    out = {("NicPcieLinkDegraded", r, "") for r in verdict.reasons if r in (WIDTH, SPEED)}
    if CEILING_BELOW_LINE_RATE in verdict.reasons:
        out.add(("NicPcieBandwidthBelowLineRate", "", ""))
    out |= {("NicPcieSlotLimited", "", limit) for limit in verdict.slot_limits}
    out |= {("NicPcieLinkPartnerHidden" if u == HIDDEN_LINK_PARTNER else
             "NicPcieLinkStateUnknown", u, "") for u in verdict.unknown if u != NO_OWN_LINK}
    return out


def firing(text: str, tmp_path: Path, devices: dict[str, set]) -> None:
    """Feed the exposition's PCIe series to the shipped rules for 2 hours and check that
    exactly the expected alerts fire."""
    series = []
    for (name, labels), value in parse_exposition(text).items():
        if name in PCIE_FAMILIES:
            inner = ",".join(f'{k}="{v}"' for k, v in (*labels, ("job", "nicwatch"),
                                                       ("instance", "h1:10847")))
            series.append({"series": f"{name}{{{inner}}}", "values": f"{value:g}x130"})
    samples = []
    for device, alerts in devices.items():
        for alert, reason, limit in sorted(alerts):
            labels = {"alertname": alert, "device": device, "reason": reason, "limit": limit}
            inner = ",".join(f'{k}="{v}"' for k, v in labels.items() if v)
            samples.append({"labels": f"{{{inner}}}", "value": 1})
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{
            "expr": 'count by (alertname, device, reason, limit) '
                    '(ALERTS{alertstate="firing", alertname=~"NicPcie.*"})',
            "eval_time": "2h", "exp_samples": samples}]}]}
    path = tmp_path / "agreement.yml"
    path.write_text(yaml.safe_dump(test))
    r = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_show_check_metrics_and_alerts_agree(scenario: str, tmp_path: Path) -> None:
    samples, text = poll(scenario)
    metrics = parse_exposition(text)
    table = format_table(samples).splitlines()
    report = evaluate(parse_expectations(tomllib.loads(
        "[[expect]]\nall = true\npcie_width = 'max'\n"), "agree.toml"), samples)
    width_check = {r.device: r for r in report.results}
    devices = {}
    for sample in samples:
        dev, verdict = sample.identity.device, sample.pcie_verdict
        assert verdict is not None and verdict.pcie
        # show: the verdict column starts with the state's word.
        (row,) = [line for line in table if line.startswith(dev + " ") and "<-" in line]
        assert row.split("  ")[-1].startswith(SHOW_WORD[verdict.state]), row
        # /metrics: any degraded series <=> degraded; any unknown series <=> unknown.
        mine = {(name, dict(labels).get("reason")): v for (name, labels), v in metrics.items()
                if dict(labels).get("device") == dev}
        assert any(v for (n, _), v in mine.items() if n == "nic_pcie_degraded") == verdict.degraded
        assert (any(v for (n, _), v in mine.items() if n == "nic_pcie_verdict_unknown")
                == bool(verdict.unknown))
        # check: a NIC link that cannot be read never passes; one at its maximum always does.
        result = width_check[dev]
        if LINK_STATE in verdict.unknown:
            assert not result.passed and result.actual == "absent"
        if verdict.state == "ok" and not verdict.slot_limits:
            assert result.passed
        if any(f.hop == 0 and f.reason == WIDTH for f in verdict.faults):
            assert not result.passed and "reseat" in result.fix
        devices[dev] = expected_alerts(verdict)
    firing(text, tmp_path, devices)
