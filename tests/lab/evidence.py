"""Reading what the guest reported: the kernel tools' output (the reference) and nicwatch's
(/metrics text, `show --json`, `check --json`, snapshots). The kernel's text is parsed here,
independently of nicwatch's own parsers, so a test never checks nicwatch against itself."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Labels = frozenset[tuple[str, str]]


def samples(metrics: str | Iterable[str]) -> dict[tuple[str, Labels], float]:
    """Every sample of a Prometheus text exposition (or a list of its sample lines), parsed
    by the Prometheus client library."""
    text = metrics if isinstance(metrics, str) else "\n".join(metrics) + "\n"
    out: dict[tuple[str, Labels], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = float(s.value)
    return out


def value(metrics: Mapping[tuple[str, Labels], float], name: str, **labels: str) -> float | None:
    """The one sample of ``name`` with exactly ``labels``; None when there is none."""
    return metrics.get((name, frozenset(labels.items())))


def series(metrics: Mapping[tuple[str, Labels], float], name: str, **labels: str
           ) -> dict[Labels, float]:
    """Every sample of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return {lbl: v for (n, lbl), v in metrics.items() if n == name and want <= lbl}


def devices(metrics: Mapping[tuple[str, Labels], float], name: str = "nic_info") -> set[str]:
    return {dict(lbl)["device"] for (n, lbl) in metrics if n == name}


def ethtool_stats(text: str) -> dict[str, int]:
    """`ethtool -S` / the ``Statistics:`` part of `ethtool -I ...`: ``name: value`` lines."""
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\s+([^:]+):\s+(-?\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def ethtool_sections(text: str) -> dict[str, dict[str, str]]:
    """`ethtool -g` / `-l` / `-a`: ``Key:<tabs>value`` lines, by section (``Pre-set
    maximums``, ``Current hardware settings``; ``""`` for lines before any section)."""
    out: dict[str, dict[str, str]] = {"": {}}
    section = ""
    for line in text.splitlines():
        if line.endswith(":") and "\t" not in line:
            section = line[:-1].strip()
            out.setdefault(section, {})
            continue
        m = re.fullmatch(r"\s*([^:\t]+):\s*(.*)", line)
        if m:
            out[section][m.group(1).strip()] = m.group(2).strip()
    return out


def ethtool_fields(text: str) -> dict[str, str]:
    """Every ``Key: value`` line, later sections overriding earlier ones (for `ethtool DEV`,
    `-i`, `--show-fec`, `-a`)."""
    flat: dict[str, str] = {}
    for fields in ethtool_sections(text).values():
        flat.update(fields)
    return flat


def show_entry(show: list[dict[str, Any]], device: str) -> dict[str, Any]:
    for entry in show:
        if entry["device"] == device:
            return entry
    raise AssertionError(f"`nicwatch show --json` has no {device}: "
                         f"{[e['device'] for e in show]}")


def show_values(entry: Mapping[str, Any], kind: str, metric: str) -> dict[Labels, float]:
    """``kind`` counters or gauges of one `show --json` entry, by label set."""
    return {frozenset(x["labels"].items()): x["value"] for x in entry[kind]
            if x["metric"] == metric}


def check_results(check: list[Any]) -> tuple[int, dict[str, Any]]:
    """(exit status, parsed JSON) of a `nicwatch check --json` the guest ran."""
    status, out, err = check
    assert out, f"check printed nothing (status {status}): {err}"
    return status, json.loads(out)


def snapshot_interface(snapshot: Mapping[str, Any], device: str) -> dict[str, Any]:
    """The record of ``device`` in a snapshot file the guest wrote."""
    assert snapshot["status"] == 0, snapshot["stderr"]
    data = json.loads(snapshot["text"])
    for poll in data["polls"]:
        for interface in poll["interfaces"]:
            if interface["device"] == device:
                return dict(interface)
    raise AssertionError(f"the snapshot has no {device}")


def snapshot_counter(interface: Mapping[str, Any], metric: str, **labels: str) -> int | None:
    for c in interface["counters"]:
        if c["metric"] == metric and c["labels"] == labels:
            return int(c["raw"])
    return None


def link(links: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for entry in links:
        if entry["ifname"] == name:
            return entry
    raise AssertionError(f"`ip -j link` has no {name}")
