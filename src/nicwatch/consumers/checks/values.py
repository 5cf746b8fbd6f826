"""The configured values of the checkable properties: each parser takes the TOML value
(ValueError naming what is expected) and each show function gives the short label string."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from nicwatch.consumers.checks.readers import (
    BALANCED,
    PRIORITIES,
    RX_BALANCE_LIMIT,
    WITHIN_LIMIT,
    WITHIN_THRESHOLDS,
)
from nicwatch.model import FEC_LINK_MODES

MAX = "max"
U32_MAX = 2**32 - 1
PCIE_GENERATIONS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}
PCIE_WIDTHS = (1, 2, 4, 8, 12, 16, 32)
FEC_MODES = tuple(FEC_LINK_MODES.values())
RDMA_MTUS = (256, 512, 1024, 2048, 4096)


ETS_KEYS = ("prio_tc", "tc_bw", "tsa")
TSA_NAMES = ("strict", "cbs", "ets", "vendor")


def parse_activated(value: Any) -> str:
    if value is True:
        return "activated"
    raise ValueError(f"expected true (every firmware component runs the image stored on the "
                     f"device), got {value!r}")


def parse_local(value: Any) -> str:
    if value is True:
        return "local"
    raise ValueError(f"expected true (every queue interrupt on the NIC's NUMA node), got "
                     f"{value!r}")


def parse_balanced(value: Any) -> str:
    if value == BALANCED:
        return BALANCED
    raise ValueError(f"expected \"balanced\" (no receive queue above {RX_BALANCE_LIMIT:g}x its "
                     f"fair share), got {value!r}")
# A lane fails fec_lane_ber above its FEC code's threshold (normalize.linkphysics.FEC_CODES
# threshold: a decade below the code's limit, the NicPreFecBerHigh defaults).


def parse_within_limit(value: Any) -> str:
    if value == WITHIN_LIMIT:
        return WITHIN_LIMIT
    raise ValueError(f"expected \"within_limit\" (every lane's pre-FEC BER below "
                     f"its FEC code's threshold), got {value!r}")


def parse_within_thresholds(value: Any) -> str:
    if value == WITHIN_THRESHOLDS:
        return WITHIN_THRESHOLDS
    raise ValueError(f"expected \"{WITHIN_THRESHOLDS}\" (every lane's CMIS VDM pre-FEC BER "
                     f"below and eSNR above the module's own warning thresholds), got {value!r}")


def parse_rdma_mtu(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value in RDMA_MTUS:
        return value
    raise ValueError(f"expected an RDMA MTU ({', '.join(map(str, RDMA_MTUS))}), got {value!r}")


def _count(maximum_allowed: bool, what: str) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if maximum_allowed and value == MAX:
            return MAX
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= U32_MAX:
            alt = ' or "max"' if maximum_allowed else ""
            raise ValueError(f"expected a positive number of {what}{alt}, got {value!r}")
        return value
    return parse


_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*([MG])(?:b/s|bps)?", re.IGNORECASE)


def parse_link_speed(value: Any) -> int:
    """Mb/s from ``"400G"``, ``"2.5G"``, ``"100M"`` (also ``"400Gb/s"``)."""
    m = _SPEED.fullmatch(value.strip()) if isinstance(value, str) else None
    if m:
        # Decimal, not float: "257.9G" is exactly 257900 Mb/s (float says 257899.99...).
        mbps = Decimal(m.group(1)) * (1000 if m.group(2).upper() == "G" else 1)
        if mbps == mbps.to_integral_value() and 0 < mbps <= U32_MAX:
            return int(mbps)
    raise ValueError(f"expected a link speed such as \"400G\", \"25G\" or \"100M\", got {value!r}")


def show_link_speed(mbps: int) -> str:
    if mbps >= 1000 and mbps % 100 == 0:
        return f"{mbps // 1000}G" if mbps % 1000 == 0 else f"{mbps / 1000}G"
    return f"{mbps}M"


def parse_pcie_speed(value: Any) -> float | str:
    """GT/s per lane from a number (16, 32.0), a generation ("gen4") or "max"."""
    if value == MAX:
        return MAX
    if isinstance(value, str):
        m = re.fullmatch(r"gen([1-7])", value.strip().lower())
        if m:
            return PCIE_GENERATIONS[int(m.group(1))]
    elif (isinstance(value, (int, float)) and not isinstance(value, bool)
          and float(value) in PCIE_GENERATIONS.values()):
        return float(value)
    rates = ", ".join(f"{r:g}" for r in PCIE_GENERATIONS.values())
    raise ValueError(f"expected a PCIe speed in GT/s ({rates}), a generation such as \"gen4\" "
                     f"or \"max\", got {value!r}")


def parse_pcie_width(value: Any) -> int | str:
    if value == MAX:
        return MAX
    if isinstance(value, int) and not isinstance(value, bool) and value in PCIE_WIDTHS:
        return value
    raise ValueError(f"expected a PCIe link width ({', '.join(map(str, PCIE_WIDTHS))}) or "
                     f"\"max\", got {value!r}")


def parse_fec_mode(value: Any) -> str:
    if isinstance(value, str) and value.lower() in FEC_MODES:
        return value.lower()
    raise ValueError(f"expected a FEC mode ({', '.join(FEC_MODES)}), got {value!r}")


def parse_flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, got {value!r}")


def parse_priorities(value: Any) -> tuple[int, ...]:
    if (isinstance(value, list) and len(set(value)) == len(value)
            and all(isinstance(p, int) and not isinstance(p, bool) and p in PRIORITIES
                    for p in value)):
        return tuple(sorted(value))
    raise ValueError("expected the list of priorities (0-7, each once) that must have PFC "
                     f"enabled, such as [3], or [] for none; got {value!r}")


def parse_trust(value: Any) -> str:
    if value in ("dscp", "pcp"):
        return str(value)
    raise ValueError(f"expected \"dscp\" or \"pcp\", got {value!r}")


def parse_vfs(value: Any) -> Any:
    if value == MAX:
        return MAX
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 65535:
        return value
    raise ValueError(f"expected a number of SR-IOV VFs (0-65535) or \"max\", got {value!r}")


def parse_healthy(value: Any) -> str:
    if value == "healthy":
        return str(value)
    raise ValueError(f"expected \"healthy\" (every devlink health reporter of the port and "
                     f"its device), got {value!r}")


def _small_int(limit: int, what: str) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit:
            return value
        raise ValueError(f"expected {what} (0-{limit}), got {value!r}")
    return parse


def parse_dscp_map(value: Any) -> tuple[tuple[int, int], ...]:
    """``{ 26 = 3, 48 = 6 }`` (TOML keys are strings) -> ((26, 3), (48, 6))."""
    pairs = []
    if isinstance(value, dict) and value:
        for dscp, prio in value.items():
            d = int(dscp) if isinstance(dscp, str) and dscp.isdigit() else -1
            if not 0 <= d <= 63 or isinstance(prio, bool) or prio not in PRIORITIES:
                break
            pairs.append((d, prio))
        else:
            return tuple(sorted(pairs))
    raise ValueError("expected a table of DSCP (0-63) = priority (0-7), such as "
                     f"{{ 26 = 3, 48 = 6 }}; got {value!r}")


def parse_ecn(value: Any) -> tuple[int, ...]:
    try:
        return parse_priorities(value)
    except ValueError:
        raise ValueError("expected the list of priorities (0-7, each once) that must have ECN "
                         f"on at both reaction and notification point, such as [3]; got "
                         f"{value!r}") from None


def parse_ets(value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """``{ prio_tc = [8 TCs], tc_bw = [8 percents], tsa = [8 names] }``, any subset."""
    checks = {"prio_tc": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 8,
              "tc_bw": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100,
              "tsa": lambda v: v in TSA_NAMES}
    if (isinstance(value, dict) and value and set(value) <= set(ETS_KEYS)
            and all(isinstance(v, list) and len(v) == 8 and all(map(checks[k], v))
                    for k, v in value.items())):
        return tuple((k, tuple(value[k])) for k in ETS_KEYS if k in value)
    raise ValueError("expected a table with any of prio_tc (8 traffic classes 0-7), tc_bw "
                     f"(8 percents) and tsa (8 of {', '.join(TSA_NAMES)}); got {value!r}")


def _subset(actual: tuple[Any, ...], wanted: tuple[Any, ...]) -> tuple[Any, ...]:
    """The part of an actual (key, value) table that a wanted one names (None: missing)."""
    have = dict(actual)
    return tuple((k, have.get(k)) for k, _ in wanted)


def _show_pairs(pairs: tuple[Any, ...]) -> str:
    return ",".join(f"{k}:{'none' if v is None else v}" for k, v in pairs) or "none"


def _show_ets(table: tuple[Any, ...]) -> str:
    return " ".join(f"{k}=" + ",".join(map(str, v)) if v is not None else f"{k}=none"
                    for k, v in table)


def _on(value: bool) -> str:
    return "on" if value else "off"
