"""Parse `rdma statistic show` output as people paste it: the RDMA hardware counters of each
port, the same counters live polling reads with RDMA_NLDEV_CMD_STAT_GET.

iproute2 prints one line per port, ``link mlx5_0/1 rx_write_requests 0 rx_read_requests 0
...`` (name-value pairs after the port); pastes wrap long lines, so a line that does not
start with ``link`` continues the port before it. ``rdma -j statistic show`` (a JSON list
of objects with ``ifname``, ``port`` and the counters) is read too.

Nothing here raises on bad input: what is not a counter is reported in ``problems``; a
value above 2^64-1 is named in ``oversized`` (as ethtool_text).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from nicwatch.pasted.ethtool_text import U64_MAX, _digits, _fits

PORT = re.compile(r"(?P<device>[A-Za-z][\w.-]*)/(?P<port>\d{1,3})")
# RDMA device name -> its driver's counter table (normalize/drivers/ RDMA_TABLES): the kernel
# names devices after the driver (mlx5_0, bnxt_re0, irdma0, efa_0, mana_0, rxe0)
DRIVER_OF = re.compile(r"(?P<driver>[a-z][a-z0-9]*?(?:_re)?)_?\d+$")


@dataclass(frozen=True, slots=True)
class RdmaStats:
    """``ports``: "device/port" -> counter name -> raw value, in the order they appeared."""

    ports: dict[str, dict[str, int]]
    problems: tuple[str, ...] = ()
    oversized: tuple[tuple[str, int], ...] = ()

    def oversized_message(self, where: str) -> str | None:
        if not self.oversized:
            return None
        name, digits = self.oversized[0]
        return (f"{where}: {name} has a {digits:,}-digit value, more than a 64-bit counter "
                f"holds (2^64-1 = {U64_MAX:,}): not an `rdma statistic show` reading")


def driver_of(device: str) -> str | None:
    """mlx5_0 -> mlx5, bnxt_re0 -> bnxt_re; None when the name says nothing."""
    m = DRIVER_OF.fullmatch(device)
    return m.group("driver") if m else None


def _json(text: str) -> RdmaStats:
    ports: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    oversized: list[tuple[str, int]] = []
    try:
        doc = json.loads(text)
    except ValueError as e:
        return RdmaStats({}, (f"not JSON: {e}",))
    for item in doc if isinstance(doc, list) else []:
        if not isinstance(item, dict) or "ifname" not in item or "port" not in item:
            problems.append("a JSON entry without ifname and port")
            continue
        key = f"{item['ifname']}/{item['port']}"
        counters = ports.setdefault(key, {})
        for name, value in item.items():
            if name in ("ifindex", "ifname", "port") or isinstance(value, bool):
                continue
            if isinstance(value, int) and value >= 0:
                if value > U64_MAX:
                    oversized.append((f"{key} {name}", len(str(value))))
                    continue
                counters[name] = value
    return RdmaStats(ports, tuple(problems), tuple(oversized))


def parse(text: str) -> RdmaStats:
    if text.lstrip().startswith("["):
        return _json(text)
    ports: dict[str, dict[str, int]] = {}
    problems: list[str] = []
    oversized: list[tuple[str, int]] = []
    current: dict[str, int] | None = None
    key = ""
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "link":
            m = PORT.fullmatch(words[1]) if len(words) > 1 else None
            if m is None:
                problems.append(f"line {number}: 'link' without a device/port")
                current = None
                continue
            key = f"{m.group('device')}/{int(m.group('port'))}"
            current = ports.setdefault(key, {})
            words = words[2:]
        elif current is None:
            problems.append(f"line {number}: not a `rdma statistic show` line")
            continue
        if len(words) % 2:
            problems.append(f"line {number}: a counter name without its value")
        for name, raw in zip(words[::2], words[1::2], strict=False):
            digits = _digits(raw)
            if digits is None:
                problems.append(f"line {number}: {name}: value is not a non-negative integer")
            elif not _fits(digits):
                oversized.append((f"{key} {name}", len(digits.lstrip("0"))))
            else:
                current.setdefault(name, int(digits))
    return RdmaStats(ports, tuple(problems), tuple(oversized))
