"""Input `nicwatch diagnose` and `nicwatch normalize` cannot trust is named, never diagnosed
(issue #38 items 7-9 and 15, #43 item 7): real published dumps (tests/fixtures/published),
and pairs built from them whose construction each test states. Each blind case wrote its
expected verdict down before the code first ran on it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "published"
DUMPS = FIXTURES / "ethtool-S"
MLX5 = DUMPS / "mlx5_core-cx4lx-ethq-issue8.txt"  # ConnectX-4 Lx, kernel 4.15
BNXT = DUMPS / "bnxt_en-ethq-tests-cloudflare.txt"
BE2NET = DUMPS / "be2net-emulex-ethq-issue7.txt"
NICWATCH = str(Path(sys.executable).with_name("nicwatch"))


def nicwatch(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NICWATCH, *args], capture_output=True, text=True, input=stdin,
                          timeout=120)


def later(dump: Path, tmp: Path, increments: dict[str, int], name: str = "") -> Path:
    """The published dump some seconds later: each named statistic raised by its
    increment, every other line as published."""
    text = dump.read_text()
    for stat, inc in increments.items():
        pattern = re.compile(rf"^(\s*{re.escape(stat)}: )(\d+)$", re.M)
        text, n = pattern.subn(lambda m, inc=inc: f"{m.group(1)}{int(m.group(2)) + inc}", text)
        assert n == 1, stat
    out = tmp / (name or f"after-{dump.name}")
    out.write_text(text)
    return out


def one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# --------------------------------------------------------------- #43 item 7: huge counters

@pytest.mark.parametrize("digits", [5000, 400, 21])
def test_a_counter_beyond_64_bits_is_one_line_and_exit_2(tmp_path, digits):
    """5,000 digits made int() raise ValueError, 400 made windows.py's float() overflow;
    21 digits (above 2^64-1 = 18,446,744,073,709,551,615) is no u64 either."""
    huge = "9" * digits
    bad = tmp_path / "huge.txt"
    bad.write_text(MLX5.read_text().replace("rx_out_of_buffer: 0", f"rx_out_of_buffer: {huge}"))
    for r in (nicwatch("diagnose", "--ethtool", str(MLX5), str(bad), "--driver", "mlx5_core",
                       "--interval", "5s"),
              nicwatch("normalize", "--driver", "mlx5_core", str(bad))):
        line = one_error_line(r)
        assert "rx_out_of_buffer" in line and f"{digits:,}-digit" in line, line
        assert "2^64-1" in line


def test_the_largest_64_bit_value_is_a_counter(tmp_path):
    top = tmp_path / "top.txt"
    top.write_text(MLX5.read_text().replace("rx_out_of_buffer: 0",
                                            f"rx_out_of_buffer: {(1 << 64) - 1}"))
    r = nicwatch("normalize", "--driver", "mlx5_core", str(top))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["value"] for row in rows
            if row["metric"] == "nic_rx_out_of_buffer_drops_total"] == [(1 << 64) - 1]
