"""`nicwatch diff` on snapshot files that validate as JSON but hold values no poll gives:
times before 1970, a counter scale of 5e-324, a 5,000-digit integer, two snapshots a
subnormal time apart (whose rates overflow). Each is one line naming the file and the value,
exit 2: no traceback, and `--json` never prints Infinity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nicwatch.snapshot import files as S

from snapshot_helpers import (
    HOST,
    mlx5_collector,
    mlx5_stats,
    write_stats,
)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[dict, dict]:
    """Two real snapshot documents of the fixture ConnectX-7 port, 5 s apart, rx bytes moved."""
    tmp = tmp_path_factory.mktemp("diff")
    stats = mlx5_stats(1)
    path = tmp / "eth2.txt"
    collector = mlx5_collector(path)
    docs = []
    for step in range(2):
        stats["rx_bytes_phy"] += 1000 * step
        write_stats(path, stats)
        samples = collector.poll().samples
        snap = S.build(HOST, [S.poll_of(samples, samples[0].time, samples[0].monotonic)])
        docs.append(json.loads(S.encode(snap)))
    return docs[0], docs[1]


def diff(tmp_path: Path, a: dict | str, b: dict | str, *flags: str) -> subprocess.CompletedProcess:
    files = []
    for name, doc in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))
        files.append(str(tmp_path / name))
    return subprocess.run([sys.executable, "-m", "nicwatch", "diff", *flags, *files],
                          capture_output=True, text=True)


def refused(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("nicwatch: error: ") and "Traceback" not in r.stderr
    assert all(w in r.stderr for w in words), r.stderr


def test_the_pair_itself_diffs(tmp_path, pair):
    r = diff(tmp_path, *pair, "--json")
    assert r.returncode == 0, r.stderr
    rows = [row for i in json.loads(r.stdout)["interfaces"] for row in i["rows"]]
    assert any(row["delta"] == 1000 for row in rows)


@pytest.mark.parametrize("where", ["poll", "interface"])
def test_a_time_before_1970_is_refused(tmp_path, pair, where):
    a, b = json.loads(json.dumps(pair))
    target = b["polls"][0] if where == "poll" else b["polls"][0]["interfaces"][0]
    target["time"] = -2e11  # year -4368: passed validation, then failed in datetime
    refused(diff(tmp_path, a, b), "b.json", ".time", "1970")


def test_a_boot_time_before_1970_is_refused(tmp_path, pair):
    a, b = json.loads(json.dumps(pair))
    a["host"]["boot_time"] = -2e11
    refused(diff(tmp_path, a, b), "a.json", "host.boot_time")


def test_a_negative_monotonic_time_is_refused(tmp_path, pair):
    a, b = json.loads(json.dumps(pair))
    a["polls"][0]["monotonic"] = -5.0
    refused(diff(tmp_path, a, b), "a.json", "polls[0].monotonic")


@pytest.mark.parametrize("scale", [5e-324, 1e300, 0])
def test_a_scale_no_counter_has_is_refused(tmp_path, pair, scale):
    a, b = json.loads(json.dumps(pair))
    b["polls"][0]["interfaces"][0]["counters"][0]["scale"] = scale
    refused(diff(tmp_path, a, b), "b.json", ".scale")


def test_an_integer_of_5000_digits_is_refused(tmp_path, pair):
    a, b = pair
    text = json.dumps(b).replace('"raw": ', '"raw": ' + "9" * 5000 + ", \"was\": ", 1)
    refused(diff(tmp_path, a, text), "b.json", "4300 digits")


def test_an_integer_too_large_for_a_float_is_refused(tmp_path, pair):
    a, b = json.loads(json.dumps(pair))
    b["polls"][0]["interfaces"][0]["counters"][0]["scale"] = 10 ** 400
    refused(diff(tmp_path, a, b), "b.json", ".scale")


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_snapshots_a_subnormal_time_apart_are_refused_not_infinite(tmp_path, pair, flags):
    a, b = json.loads(json.dumps(pair))
    for doc, mono in ((a, 0.0), (b, 5e-324)):
        doc["polls"][0]["monotonic"] = mono
        for iface in doc["polls"][0]["interfaces"]:
            iface["monotonic"] = mono
    r = diff(tmp_path, a, b, *flags)
    refused(r, "5e-324", "after A")
    assert "Infinity" not in r.stdout
