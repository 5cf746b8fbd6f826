"""firmware_activated: devlink dev info's stored versions against the running ones, on
replies built to the kernel's layout (tests/helpers/fixture_devlink.py) from the published
mlx5 dump and netdevsim's source (tests/fixtures/devlink/info-*.txt)."""

from __future__ import annotations

import tomllib

import pytest

from nicwatch.consumers.checks import CheckResult, evaluate, parse_expectations
from nicwatch.model import DevlinkInfo, Reading, Sample
from nicwatch.normalize import normalize
from nicwatch.values import ConfigError

from fixture_devlink import DEVLINK, KernelDouble, netclass

EXPECT = "[[expect]]\ninterfaces = \".*\"\nfirmware_activated = true\n"


def _samples(*fixtures: str) -> list[Sample]:
    infos = KernelDouble(info=tuple(DEVLINK / f for f in fixtures)).read_all().infos
    return [_sample(f"eth{i}", info) for i, info in enumerate(infos)]


def _sample(name: str, info: DevlinkInfo | None) -> Sample:
    pci = info.handle.removeprefix("pci/") if info and info.handle.startswith("pci/") else None
    return normalize(Reading(device=name, time=1.0, monotonic=1.0,
                             netclass=netclass(name, 4, pci), devlink_info=info))


def checked(samples: list[Sample]) -> dict[tuple[str, str], CheckResult]:
    report = evaluate(parse_expectations(tomllib.loads(EXPECT), "host.toml"), samples)
    return {(r.device, r.check): r for r in report.results}


def test_a_flashed_image_not_activated_fails_naming_versions_and_the_fix():
    got = checked(_samples("info-mlx5-pending.txt"))
    pending, settled = got[("eth0", "firmware_activated")], got[("eth1", "firmware_activated")]
    assert not pending.passed
    assert pending.actual == ("pending: pci/0000:08:00.0 fw stored 22.43.1014 running "
                              "22.41.0188; pci/0000:08:00.0 fw.version stored 22.43.1014 "
                              "running 22.41.0188")
    assert pending.fix is not None
    assert pending.fix.startswith("devlink dev reload pci/0000:08:00.0 action fw_activate  # ")
    assert "cold reboot" in pending.fix
    assert settled.passed and settled.actual == "activated"


def test_running_what_is_stored_passes_netdevsim():
    got = checked(_samples("info-netdevsim.txt"))
    assert got[("eth0", "firmware_activated")].passed
    assert got[("eth1", "firmware_activated")].actual == "activated"


def test_an_unreadable_stored_version_is_not_known_right():
    """The published mlx5 dump (stored 255.255.65535: the query failed): nothing can be
    compared, so the check fails as absent, never passes."""
    result = checked(_samples("info-mlx5-query-failed.txt"))[("eth0", "firmware_activated")]
    assert not result.passed
    assert result.actual == "absent"


def test_no_devlink_info_is_absent():
    result = checked([_sample("eth0", None)])[("eth0", "firmware_activated")]
    assert (result.passed, result.actual) == (False, "absent")


@pytest.mark.parametrize("value", ["true", "yes", 1, False])
def test_only_true_is_accepted(value):
    text = f"[[expect]]\nall = true\nfirmware_activated = {value!r}\n".replace("'", '"')
    if value is False:
        text = "[[expect]]\nall = true\nfirmware_activated = false\n"
    with pytest.raises(ConfigError, match="firmware_activated"):
        parse_expectations(tomllib.loads(text), "host.toml")
