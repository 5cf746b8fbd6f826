"""`nicwatch record` around real traffic between the two ends of a veth pair (subnets
42-43), its exit status, its files, its progress line and its signal handling."""

import json
import os
import pty
import signal
import subprocess
import time

import pytest

from nicwatch.snapshot import files as S
from nicwatch.sources.host import read_host

from netns import PYTHON, make_veth_pair
from snapshot_helpers import SNAPSHOT_CLI, UDP_OVERHEAD, neighbours

pytestmark = pytest.mark.netns


def record(out, *args: str, ns: str | None = None) -> list[str]:
    prefix = ["ip", "netns", "exec", ns] if ns else []
    return [*prefix, *SNAPSHOT_CLI, "record", "-o", str(out), *args]


def bursts(src: str, dst: str, count: int, size: int, exit_status: int) -> str:
    """CMD: ``count`` datagrams in five bursts 0.2 s apart, then "sent" and an exit status."""
    return (f"import socket, sys, time\n"
            f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('{src}', 0))\n"
            f"for _ in range(5):\n"
            f"    [s.sendto(b'x' * {size}, ('{dst}', 9)) for _ in range({count // 5})]\n"
            f"    time.sleep(0.2)\n"
            f"print('sent'); sys.exit({exit_status})\n")


def test_recording_veth_traffic_reports_bytes_rates_and_provenance(tmp_path):
    pair = make_veth_pair(subnet=42)
    count, size = 1000, 1200
    sent = count * (size + UDP_OVERHEAD)
    out = tmp_path / "run"
    try:
        neighbours(pair)
        r = subprocess.run(record(out, "--interval=0.1s", f"--interfaces.include={pair.a}",
                                  "--label", "udp", "--", PYTHON, "-c",
                                  bursts(pair.addr_a, pair.addr_b, count, size, 3),
                                  ns=pair.ns_a), capture_output=True, text=True)
    finally:
        pair.delete()
    assert r.returncode == 3, r.stderr  # CMD's exit status passes through
    assert r.stdout == "sent\n"  # CMD's output goes where it would, untouched
    assert sorted(os.listdir(out)) == ["after.json", "before.json", "report.html",
                                       "report.json", "report.txt", "series.json.gz"]
    rep = json.loads((out / "report.json").read_text())
    (iface,) = rep["interfaces"]
    assert iface["device"] == pair.a and rep["exit_status"] == 3
    rows = {c["family"]: c for c in iface["counters"]}
    tx = rows["nic_tx_bytes_total"]
    assert (tx["delta"], tx["status"]) == (sent, "ok")
    assert rows["nic_tx_packets_total"]["delta"] == count
    assert tx["mean_per_second"] == pytest.approx(sent / iface["seconds"])
    assert tx["peak_per_second"] > tx["mean_per_second"]  # bursts, then quiet
    assert rep["host"]["boot_id"] == read_host().boot_id

    text = (out / "report.txt").read_text()
    assert f"{sent:,} B" in text and f"{count:,} packets" in text
    for fact in ("exit status        3", f"boot id            {read_host().boot_id}",
                 f"kernel             {read_host().kernel_release}",
                 "PAUSE/PFC: not counted by this interface.", "Drops and errors: none."):
        assert fact in text
    assert r.stderr.endswith(text)  # the summary is printed too, after CMD's output

    before, after = S.load(out / "before.json"), S.load(out / "after.json")
    assert (before.label, after.label) == ("udp before", "udp after")
    assert after.meta["record"]["exit_status"] == 3
    tx_row = next(x for x in S.diff(before, after).interfaces[0].rows
                  if x.name == "nic_tx_bytes_total")
    assert tx_row.delta == sent
    series = S.load(out / "series.json.gz")
    assert not series.raw_stats and len(series.polls) >= 4
    first, taken = series.polls[0].interfaces[0], before.polls[0].interfaces[0]
    assert (first.counters, first.raw) == (taken.counters, {}) and taken.raw
    html = (out / "report.html").read_text()
    assert html.count("<svg") == 3 and "<script" not in html and "http://" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_usage_errors_and_a_missing_command(tmp_path):
    r = subprocess.run(record(tmp_path / "a"), capture_output=True, text=True)
    assert r.returncode == 2 and "no command given" in r.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.txt").write_text("a previous run")
    r = subprocess.run(record(tmp_path / "full", "--", "true"), capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr == (f"nicwatch: error: {tmp_path / 'full'}: not empty;"
                                              " record writes into a new or empty directory\n")
    r = subprocess.run(record(tmp_path / "b", "--", "no-such-command-here", "-x"),
                       capture_output=True, text=True)
    assert r.returncode == 127
    assert r.stderr == "nicwatch: error: no-such-command-here: command not found\n"
    assert not (tmp_path / "b").exists()


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def test_progress_shows_on_a_terminal_and_not_in_a_pipe(tmp_path):
    args = ("--interval=0.1s", "--interfaces.include=lo", "--", "sleep", "0.6")
    master, slave = pty.openpty()
    proc = subprocess.Popen(record(tmp_path / "tty", *args), stdout=subprocess.DEVNULL,
                            stderr=slave)
    os.close(slave)
    shown = _read_all(master)
    os.close(master)
    assert proc.wait() == 0
    assert "\r\x1b[Krecording 0:0" in shown and " lo rx " in shown and " drops " in shown
    r = subprocess.run(record(tmp_path / "pipe", *args), capture_output=True, text=True)
    assert r.returncode == 0 and "recording" not in r.stderr and "\x1b" not in r.stderr


def test_sigterm_is_passed_to_the_command_and_the_run_is_still_reported(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(record(out, "--interval=0.1s", "--interfaces.include=lo", "--",
                                   "sleep", "30"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (out / "before.json").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert json.loads((out / "report.json").read_text())["exit_status"] == 143


def test_record_samples_every_second_by_default_and_names_what_it_left_out(tmp_path):
    """At the daemon's 5 s a 10 s run was sampled twice; record now samples every second
    unless --interval is given, and the report names the interfaces the selection left out
    (here the namespace's lo and the veth, neither backed by a device), so loopback traffic
    missing from it reads as a choice."""
    pair = make_veth_pair(subnet=43)
    out = tmp_path / "run"
    try:
        r = subprocess.run(record(out, "--", PYTHON, "-c", "import time; time.sleep(3.2)",
                                  ns=pair.ns_a), capture_output=True, text=True, timeout=120)
    finally:
        pair.delete()
    assert r.returncode == 0, r.stderr
    rep = json.loads((out / "report.json").read_text())
    assert rep["interval"] == 1.0 and rep["context"]["not recorded"].startswith("lo, ")
    polls = S.load(out / "series.json.gz").polls
    assert 4 <= len(polls) <= 6, len(polls)  # before, about 3 in 3.2 s, after
    text = (out / "report.txt").read_text()
    line, = [x for x in text.splitlines() if x.startswith("not recorded")]
    assert line.split(None, 2)[2] == (
        f"lo, {pair.a} (left out by the interface selection: by default only interfaces "
        "backed by a device; --interfaces.include selects by name)")
