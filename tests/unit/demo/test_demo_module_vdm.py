"""The demo module's spec-built VDM pages (demo/module_vdm.py) decode into every lane's VDM
values, inside the module's own warnings, with no flag set: the demo shows VDM and fires no
VDM alert."""

from __future__ import annotations

from nicwatch.demo.module_eeprom import DUMP
from nicwatch.demo.module_vdm import with_vdm
from nicwatch.normalize.module import decode
from nicwatch.normalize.module.hexdump import parse


def test_demo_module_has_healthy_vdm_on_every_lane():
    values = decode(with_vdm(parse(DUMP).eeprom))
    ber = {v.labels["lane"]: v.value for v in values
           if v.metric == "nic_module_vdm_pre_fec_ber" and v.labels["side"] == "media"}
    assert sorted(ber, key=int) == [str(lane) for lane in range(1, 9)]
    assert ber["1"] == 1.8e-6 and ber["8"] == 2.5e-6
    warn = {v.labels["lane"]: v.value for v in values
            if v.metric == "nic_module_vdm_pre_fec_ber_threshold"
            and v.labels["side"] == "media" and v.labels["level"] == "high_warning"}
    assert all(ber[lane] < warn[lane] == 1e-4 for lane in ber)
    esnr = [v.value for v in values if v.metric == "nic_module_vdm_esnr_db"]
    assert min(esnr) == 19.0 and len(esnr) == 8
    flags = [v for v in values if v.metric == "nic_module_flag" and "vdm" in v.labels["quantity"]]
    assert flags and not any(v.value for v in flags)
