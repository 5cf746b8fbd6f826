"""netdevsim devlink: health reporters through an error that recovers, a recovery made to fail
(debugfs ``fail_recover``) and a recovery by hand, and the devlink ports, against `devlink -j`
in the same guest (tests/lab/guest/scenarios/nsim_devlink.py). /metrics at the failed
recovery is the one the host scraped through QEMU's forwarded port; the alert's expression is
evaluated on it by promtool.

tests/unit/sources/test_devlink.py builds the devlink dumps from the uapi layout and
tests/fixtures/devlink holds published `devlink` output of mlx5, ice and octeontx2; here the
kernel's devlink core answers for a real driver."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from evidence import check_results, samples, series

RULES = Path(__file__).resolve().parents[2] / "deploy/prometheus/nicwatch-rules.yml"
HANDLE = "netdevsim/netdevsim12"
# netdevsim's devlink handle is netdevsim/netdevsim12 (bus/device, as for every devlink
# instance): its device reporters reach the interfaces whose devlink port names that handle
# (the lab's finding for #25: nicwatch matched them by pci/<PCI address> only).


@pytest.fixture(scope="module")
def ev(lab):
    value = lab.scenario("nsim_devlink")
    value["scrapes"] = lab.scrapes
    return value


def _reporters(step: dict) -> dict[str, dict]:
    return {r["reporter"]: r for r in step["kernel"]["health"][HANDLE]}


def _step(ev, name: str) -> dict:
    (step,) = [s for s in ev["steps"] if s["step"] == name]
    assert step["kernel"] == step["kernel_after"]  # nothing moved while nicwatch read
    return step


def test_the_kernel_went_through_the_steps(ev):
    """The reference itself: break_health counted and recovered an error; with fail_recover
    the write failed with the recovery's error and the reporter stayed in error until
    `devlink health recover`."""
    assert ev["injected"] == ["ok", "ECANCELED"]
    states = [(_reporters(_step(ev, n))["dummy"]["state"]) for n in
              ("initial", "recovered", "failed_recovery", "recovered_by_hand")]
    assert states == ["healthy", "healthy", "error", "healthy"]
    recovered = _reporters(_step(ev, "recovered"))["dummy"]
    assert (recovered["error"], recovered["recover"]) == (1, 1)
    by_hand = _reporters(_step(ev, "recovered_by_hand"))["dummy"]
    failed = _reporters(_step(ev, "failed_recovery"))["dummy"]
    assert by_hand["recover"] == failed["recover"] + 1


def test_devlink_ports_equal_devlink_port_show(ev):
    m = samples(ev["steps"][0]["metrics"])
    ports = {name: p for name, p in ev["port"]["port"].items() if name.startswith(HANDLE + "/")}
    assert len(ports) == 2
    for name, port in ports.items():
        (labels,) = series(m, "nic_devlink_port_info", device=port["netdev"])
        assert dict(labels) == {"device": port["netdev"], "devlink": HANDLE,
                                "devlink_port": name.rsplit("/", 1)[1], "flavour": "physical",
                                "number": str(port["port"]), "split_subport": ""}


@pytest.mark.parametrize("name", ["initial", "recovered", "failed_recovery", "recovered_by_hand"])
def test_reporters_equal_devlink_health_show(ev, name):
    step = _step(ev, name)
    m = samples(step["metrics"])
    for reporter, kernel in _reporters(step).items():
        for device in ev["ports"]:
            labels = {"device": device, "devlink": HANDLE, "devlink_port": "", "reporter": reporter}
            errors = series(m, "nic_devlink_health_errors_total", **labels)
            assert list(errors.values()) == [kernel["error"]], (device, reporter)
            assert list(series(m, "nic_devlink_health_recoveries_total", **labels).values()) \
                == [kernel["recover"]]
            state = series(m, "nic_devlink_health_reporter_state", **labels, state=kernel["state"])
            assert list(state.values()) == [1]


def test_check_follows_the_reporter_state(ev):
    for name, want in (("initial", "pass"), ("failed_recovery", "fail"),
                       ("recovered_by_hand", "pass")):
        _, report = check_results(_step(ev, name)["check"])
        results = {r["device"]: r for r in report["results"] if r["check"] == "devlink_health"}
        assert {d: r["result"] for d, r in results.items()} == dict.fromkeys(ev["ports"], want)
        if want == "fail":
            assert all("dummy" in r["actual"] for r in results.values())


def _alert_expr(name: str) -> str:
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == name:
                return str(rule["expr"])
    raise AssertionError(f"no alert {name} in {RULES}")


def _evaluate(tmp_path: Path, metrics: dict, family: str, expr: str) -> list[dict]:
    """Samples of ``expr`` over constant series made from ``family`` in a scrape, as
    Prometheus' engine computes them (promtool test rules, expected nothing: its failure
    message lists what the expression gave)."""
    input_series = [{"series": name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(lbl)) + "}",
                     "values": f"{value:g}x10"}
                    for (name, lbl), value in metrics.items() if name == family]
    test = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": input_series,
        "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": []}]}]}
    path = tmp_path / "eval.yml"
    path.write_text(yaml.safe_dump(test))
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True,
                            text=True)
    if result.returncode == 0:
        return []
    out = result.stdout + result.stderr
    assert "got:" in out, out
    got = out.split("got:", 1)[1]
    return [{"labels": line} for line in got.splitlines() if "{" in line]


def test_error_state_alert_expression_fires_on_the_host_scrape(ev, tmp_path):
    m = samples(ev["scrapes"]["devlink_error"])
    got = _evaluate(tmp_path, m, "nic_devlink_health_reporter_state",
                    _alert_expr("NicDeviceHealthErrorState"))
    assert got and all('reporter="dummy"' in g["labels"] for g in got), got


def test_error_state_alert_expression_is_silent_while_healthy(ev, tmp_path):
    m = samples(_step(ev, "recovered_by_hand")["metrics"])
    assert _evaluate(tmp_path, m, "nic_devlink_health_reporter_state",
                     _alert_expr("NicDeviceHealthErrorState")) == []


def test_firmware_versions_equal_devlink_dev_info(ev):
    """nic_firmware_info against `devlink -j dev info` of the same instance (netdevsim's
    nsim_dev_info_get: running and stored fw.mgmt, equal), and no image pending. Added for
    issue #30; the guest scenario's step now keeps the nic_firmware lines."""
    kernel = ev["dev_info"]["info"][HANDLE]["versions"]
    expected = {(slot, name, version) for slot, versions in kernel.items()
                for name, version in versions.items()}
    assert ("running", "fw.mgmt", "10.20.30") in expected  # the reference itself
    m = samples(_step(ev, "initial")["metrics"])
    for port in ev["ports"]:
        got = {(d["slot"], d["component"], d["version"])
               for d in map(dict, series(m, "nic_firmware_info", device=port, devlink=HANDLE))}
        assert got == expected
        pending = series(m, "nic_firmware_activation_pending", device=port, devlink=HANDLE,
                         component="fw.mgmt")
        assert list(pending.values()) == [0.0]
