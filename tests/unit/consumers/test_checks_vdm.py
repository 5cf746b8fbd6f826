"""module_vdm: a CMIS module's VDM lane measurements against its own warning thresholds, on
the real DR8 dump with spec-built VDM pages (tests/helpers/fixture_vdm.py)."""

from __future__ import annotations

import tomllib
from types import MappingProxyType

import pytest

from nicwatch.consumers.checks import CheckResult, evaluate, parse_expectations
from nicwatch.model import ModuleEeprom, ModuleReadStatus, NetClass, Reading, Sample
from nicwatch.normalize import normalize
from nicwatch.values import ConfigError

from fixture_module import fixture_eeprom
from fixture_vdm import f16, u16, vdm_eeprom

EXPECT = "[[expect]]\ninterfaces = \".*\"\nmodule_vdm = \"within_thresholds\"\n"


def _sample(name: str, module: ModuleEeprom | None) -> Sample:
    return normalize(Reading(device=name, time=1000.0, monotonic=1.0,
                             netclass=NetClass(name, 2, *[None] * 12), module=module,
                             module_read=ModuleReadStatus("ok", 990.0, {})))


def checked(samples: list[Sample]) -> dict[tuple[str, str], CheckResult]:
    report = evaluate(parse_expectations(tomllib.loads(EXPECT), "host.toml"), samples)
    return {(r.device, r.check): r for r in report.results}


def _healed(e: ModuleEeprom) -> ModuleEeprom:
    """Lane 5 brought back to the others' 2.1e-6 and 19.5 dB (samples at slots 4 and 20)."""
    samples = bytearray(e.upper[(0x50, 0, 0x24)])
    samples[8:10] = u16(f16(210, -8))
    samples[40:42] = u16(int(19.5 * 256))
    return ModuleEeprom(e.lower, MappingProxyType(dict(e.upper) | {(0x50, 0, 0x24):
                                                                  bytes(samples)}), e.read_at)


def test_the_bad_lane_fails_naming_its_values_and_a_healthy_module_passes():
    got = checked([_sample("eth0", vdm_eeprom()), _sample("eth1", _healed(vdm_eeprom()))])
    bad, good = got[("eth0", "module_vdm")], got[("eth1", "module_vdm")]
    assert not bad.passed
    assert bad.actual == ("lane 5 media pre-FEC BER 0.00032 >= 0.0001; "
                          "lane 5 media eSNR 15.2 <= 16.5")
    assert "hardware, not settable" in bad.fix and "ethtool -m eth0 hex on" in bad.fix
    assert good.passed and good.actual == "within_thresholds"


def test_absent_without_vdm_never_passes():
    got = checked([_sample("eth0", fixture_eeprom("osfp-800g-dr8-juniper.txt")),
                   _sample("eth1", None)])
    for device in ("eth0", "eth1"):
        assert not got[(device, "module_vdm")].passed
        assert got[(device, "module_vdm")].actual == "absent"


@pytest.mark.parametrize("value", [True, "within_limit", 1])
def test_only_within_thresholds_is_accepted(value):
    text = f"[[expect]]\nall = true\nmodule_vdm = {value!r}\n".replace("'", '"')
    if value is True:
        text = "[[expect]]\nall = true\nmodule_vdm = true\n"
    with pytest.raises(ConfigError, match="module_vdm"):
        parse_expectations(tomllib.loads(text), "host.toml")
