"""Expectation documents for the checks tests: hypothesis strategies, a TOML writer and the
lab-report host fixture."""

import json
import re
import string

from hypothesis import strategies as st

from nicwatch.consumers.checks import CHECKS, FEC_MODES

from paths import SYSFS

LAB = SYSFS / "lab-report-host"
LAB_PORTS = ("ens1np0", "ens2np0", "ens3np0", "ens4np0")

REGEXES = st.sampled_from(["ens.*", "eth[0-9]+", "mlx5_core", "0000:41:00\\.[01]", ".*"]) | (
    st.text(string.ascii_letters + string.digits + "_-.:", min_size=1, max_size=12).map(re.escape))
COUNT = st.integers(1, 2**32 - 1)
PROPERTY_VALUES = {
    "rx_ring": COUNT | st.just("max"),
    "tx_ring": COUNT | st.just("max"),
    "mtu": COUNT,
    "link_speed": st.sampled_from(["100M", "1G", "2.5G", "10G", "25G", "400G", "800Gb/s"])
    | st.integers(1, 10**6).map(lambda n: f"{n}M"),
    "pcie_speed": st.sampled_from([2.5, 5, 8, 16, 32, 64, 16.0, "gen3", "Gen4", "max"]),
    "pcie_width": st.sampled_from([1, 2, 4, 8, 12, 16, 32, "max"]),
    "fec_mode": st.sampled_from([*FEC_MODES, "RS", "BaseR"]),
    "pause_autoneg": st.booleans(),
    "pause_rx": st.booleans(),
    "pause_tx": st.booleans(),
    "pfc": st.lists(st.integers(0, 7), unique=True),
    "channels": COUNT | st.just("max"),
    "trust": st.sampled_from(["dscp", "pcp"]),
    "dscp_map": st.dictionaries(st.integers(0, 63).map(str), st.integers(0, 7), min_size=1),
    "ecn": st.lists(st.integers(0, 7), unique=True),
    "cnp_priority": st.integers(0, 7),
    "cnp_dscp": st.integers(0, 63),
    "ets": st.fixed_dictionaries({}, optional={
        "prio_tc": st.lists(st.integers(0, 7), min_size=8, max_size=8),
        "tc_bw": st.lists(st.integers(0, 100), min_size=8, max_size=8),
        "tsa": st.lists(st.sampled_from(["strict", "cbs", "ets", "vendor"]), min_size=8,
                        max_size=8)}).filter(bool),
    "sriov_vfs": st.integers(0, 65535) | st.just("max"),
    "devlink_health": st.just("healthy"),
    "roce_gid_for_ip": st.booleans(),
    "rdma_mtu": st.sampled_from([256, 512, 1024, 2048, 4096]),
    "irq_numa_local": st.just(True),
    "rx_queue_balance": st.just("balanced"),
    "firmware_activated": st.just(True),
    "fec_lane_ber": st.just("within_limit"),
    "module_vdm": st.just("within_thresholds"),
}
assert set(PROPERTY_VALUES) == set(CHECKS)
SELECTOR = st.fixed_dictionaries({}, optional={
    "interfaces": REGEXES, "driver": REGEXES, "pci_address": REGEXES, "all": st.just(True)}
).filter(bool)
EXPECT = st.tuples(SELECTOR, st.fixed_dictionaries({}, optional=PROPERTY_VALUES).filter(bool)
                   ).map(lambda t: {**t[0], **t[1]})
CONSISTENT = st.tuples(
    SELECTOR, st.lists(st.sampled_from(CHECKS), min_size=1, unique=True),
    st.none() | st.text(min_size=1, max_size=20),
).map(lambda t: {**t[0], "checks": t[1], **({"group": t[2]} if t[2] is not None else {})})
DOCUMENT = st.fixed_dictionaries({}, optional={"expect": st.lists(EXPECT, min_size=1, max_size=4),
                                               "consistent": st.lists(CONSISTENT, min_size=1,
                                                                      max_size=3)})


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }"
    return "[" + ", ".join(map(toml_value, value)) + "]"


def dump_toml(document: dict) -> str:
    lines = []
    for section, tables in document.items():
        for table in tables:
            lines.append(f"[[{section}]]")
            lines.extend(f"{key} = {toml_value(value)}" for key, value in table.items())
    return "\n".join(lines) + "\n"
