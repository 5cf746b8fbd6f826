"""The checkable properties: how the configuration spells each, where a Sample has it,
how it is shown and which command would set it (docs/expectations.md has the table)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nicwatch.consumers.checks.fixes import (
    _balance_fix,
    _dev,
    _devlink_fix,
    _ecn_fix,
    _ets_fix,
    _fec_ber_fix,
    _firmware_fix,
    _gid_fix,
    _irq_fix,
    _module_vdm_fix,
    _pcie_fix,
    _rdma_mtu_fix,
    _sriov_fix,
    _trust_fix,
)
from nicwatch.consumers.checks.readers import (
    PRIORITIES,
    _channel_type,
    _channels,
    _channels_max,
    _devlink_health,
    _dscp_map,
    _ecn,
    _ets,
    _fec_active,
    _fec_lane_ber,
    _firmware_activated,
    _gauge,
    _gid_for_ip,
    _int,
    _irq_placement,
    _link_speed_mbps,
    _module_vdm,
    _pause,
    _pcie_speed,
    _pcie_width,
    _pfc_enabled,
    _rdma_mtu,
    _ring,
    _rx_balance,
    _trust,
)
from nicwatch.consumers.checks.values import (
    _count,
    _on,
    _show_ets,
    _show_pairs,
    _small_int,
    _subset,
    parse_activated,
    parse_balanced,
    parse_dscp_map,
    parse_ecn,
    parse_ets,
    parse_fec_mode,
    parse_flag,
    parse_healthy,
    parse_link_speed,
    parse_local,
    parse_pcie_speed,
    parse_pcie_width,
    parse_priorities,
    parse_rdma_mtu,
    parse_trust,
    parse_vfs,
    parse_within_limit,
    parse_within_thresholds,
    show_link_speed,
)
from nicwatch.metrics import (
    ROCE_CNP_DSCP,
    ROCE_CNP_PRIORITY,
    SRIOV_VFS,
)
from nicwatch.model import Sample
from nicwatch.printable import shell_word


@dataclass(frozen=True, slots=True)
class Property:
    """One checkable property: how the configuration spells it, where a Sample has it, how
    it is shown in labels and which command would set it."""

    name: str
    parse: Callable[[Any], Any]  # config value -> wanted value (or MAX); ValueError if bad
    actual: Callable[[Sample], Any]  # None: not reported
    maximum: Callable[[Sample], Any] | None  # for "max"; None: "max" not accepted
    show: Callable[[Any], str]  # a value as a short label string
    fix: Callable[[Sample, Any], str]  # command that would set the wanted value
    table: Callable[[Any], Any] = lambda v: v  # wanted value back to its TOML form
    # (actual, wanted) -> the part of actual an [[expect]] compares; None: all of it
    project: Callable[[Any, Any], Any] | None = None


def _maximum(prop: Property, sample: Sample) -> Any:
    """What "max" means for ``prop`` on ``sample``; None where "max" is not accepted."""
    return None if prop.maximum is None else prop.maximum(sample)


PROPERTIES: Mapping[str, Property] = {p.name: p for p in (
    Property("rx_ring", _count(True, "descriptors"), _ring("rx"), _ring("rx_max"), str,
             lambda s, v: f"ethtool -G {_dev(s)} rx {v}"),
    Property("tx_ring", _count(True, "descriptors"), _ring("tx"), _ring("tx_max"), str,
             lambda s, v: f"ethtool -G {_dev(s)} tx {v}"),
    Property("mtu", _count(False, "bytes"), lambda s: s.state.mtu, None,
             str, lambda s, v: f"ip link set dev {_dev(s)} mtu {v}"),
    Property("link_speed", parse_link_speed, _link_speed_mbps, None, show_link_speed,
             lambda s, v: f"ethtool -s {_dev(s)} speed {v} duplex full", show_link_speed),
    Property("pcie_speed", parse_pcie_speed, _pcie_speed(True), _pcie_speed(False),
             lambda v: f"{v:g}GT/s", _pcie_fix("speed")),
    Property("pcie_width", parse_pcie_width, _pcie_width(True), _pcie_width(False),
             lambda v: f"x{v}", _pcie_fix("width")),
    Property("fec_mode", parse_fec_mode, _fec_active, None, str,
             lambda s, v: f"ethtool --set-fec {_dev(s)} encoding {v}"),
    Property("pause_autoneg", parse_flag, _pause("autoneg"), None,
             _on, lambda s, v: f"ethtool -A {_dev(s)} autoneg {_on(v)}"),
    Property("pause_rx", parse_flag, _pause("rx"), None, _on,
             lambda s, v: f"ethtool -A {_dev(s)} rx {_on(v)}"),
    Property("pause_tx", parse_flag, _pause("tx"), None, _on,
             lambda s, v: f"ethtool -A {_dev(s)} tx {_on(v)}"),
    Property("pfc", parse_priorities, _pfc_enabled, None,
             lambda v: ",".join(map(str, v)) or "none",
             lambda s, v: f"dcb pfc set dev {_dev(s)} prio-pfc "
                          + " ".join(f"{p}:{_on(p in v)}" for p in PRIORITIES), list),
    Property("channels", _count(True, "channels"), _channels, _channels_max, str,
             lambda s, v: f"ethtool -L {_dev(s)} {_channel_type(s)} {v}"),
    Property("trust", parse_trust, _trust, None, str, _trust_fix),
    Property("dscp_map", parse_dscp_map, _dscp_map, None, _show_pairs,
             lambda s, v: f"dcb app replace dev {_dev(s)} dscp-prio "
                          + " ".join(f"{d}:{p}" for d, p in v),
             lambda v: {str(d): p for d, p in v}, _subset),
    Property("ecn", parse_ecn, _ecn, None, lambda v: ",".join(map(str, v)) or "none", _ecn_fix,
             list, lambda actual, wanted: tuple(p for p in actual if p in wanted)),
    Property("cnp_priority", _small_int(7, "an 802.1p priority"),
             lambda s: _int(_gauge(s, ROCE_CNP_PRIORITY.name)), None, str,
             lambda s, v: f"echo {v} > " + shell_word(
                 f"/sys/class/net/{s.identity.device}/ecn/roce_np/cnp_802p_prio")),
    Property("cnp_dscp", _small_int(63, "a DSCP"),
             lambda s: _int(_gauge(s, ROCE_CNP_DSCP.name)), None, str,
             lambda s, v: f"echo {v} > " + shell_word(
                 f"/sys/class/net/{s.identity.device}/ecn/roce_np/cnp_dscp")),
    Property("ets", parse_ets, _ets, None, _show_ets, _ets_fix,
             lambda v: {k: list(x) for k, x in v}, _subset),
    Property("sriov_vfs", parse_vfs,
             lambda s: _int(_gauge(s, SRIOV_VFS.name, ("state", "enabled"))),
             lambda s: _int(_gauge(s, SRIOV_VFS.name, ("state", "total"))), str, _sriov_fix),
    Property("devlink_health", parse_healthy, _devlink_health, None, str, _devlink_fix),
    Property("roce_gid_for_ip", parse_flag, _gid_for_ip, None,
             lambda v: "true" if v else "false", _gid_fix),
    Property("rdma_mtu", parse_rdma_mtu, _rdma_mtu, None, str, _rdma_mtu_fix),
    Property("irq_numa_local", parse_local, _irq_placement, None, str, _irq_fix,
             lambda v: True),
    Property("rx_queue_balance", parse_balanced, _rx_balance, None, str, _balance_fix),
    Property("firmware_activated", parse_activated, _firmware_activated, None, str,
             _firmware_fix, lambda v: True),
    Property("fec_lane_ber", parse_within_limit, _fec_lane_ber, None, str, _fec_ber_fix),
    Property("module_vdm", parse_within_thresholds, _module_vdm, None, str, _module_vdm_fix),
)}
CHECKS: tuple[str, ...] = tuple(PROPERTIES)
PCIE_PROPERTIES = ("pcie_speed", "pcie_width")
