"""Issue #43 item 3: the snapshot reader's limits bound its memory, not only its input size.
A small .json.gz of empty polls under the 256 MiB decompressed cap reached 2-4.6 GB (3.0 GB
and 80 s measured here for 6 million polls): json.loads built the whole tree, then the
records, before anything was checked."""

import dataclasses
import gzip
import json
import re
import subprocess
import zlib

from nicwatch.snapshot import files as S
from nicwatch.snapshot.codec import encode_stream
from nicwatch.snapshot.decode import (
    MAX_SNAPSHOT_POLLS,
    MAX_SNAPSHOT_VALUES,
    VALUE_COST,
    count_values,
)
from nicwatch.sources.host import HostInfo

from netns import PYTHON
from snapshot_helpers import mlx5_collector, mlx5_stats, write_stats

NOBODY = HostInfo(None, None, None, None, None)

HEAD = {"format": "nicwatch-snapshot", "version": 1, "label": None, "nicwatch_version": "x",
        "raw_stats": False, "host": dict.fromkeys(("hostname", "boot_id", "boot_time",
                                                 "kernel_release", "kernel_version")),
        "meta": {}}
EMPTY_POLL = b'{"time":0,"monotonic":0,"interfaces":[]}'

# Runs a command in a fresh interpreter (with an address-space limit, as the issue's
# reporter had) and prints its own peak resident size: VmHWM, not pytest's.
HARNESS = """import re, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.argv[1:2] = []
{body}
status = open('/proc/self/status').read()
print(re.search(r'VmHWM:\\s+(\\d+) kB', status)[1])
sys.exit(code)
"""
CLI = ("from nicwatch.cli.main import main\n"
       "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n")
LOAD = ("base = int(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read())[1])\n"
        "from nicwatch.snapshot.decode import load\n"
        "snap = load(sys.argv[1])\n"
        "print(base, len(snap.polls))\ncode = 0\n")


def run(body: str, *argv: str, limit: int = 2 << 30) -> tuple[subprocess.CompletedProcess, int]:
    r = subprocess.run([PYTHON, "-c", HARNESS.format(body=body), str(limit), *argv],
                       capture_output=True, text=True, timeout=600)
    return r, int(r.stdout.split()[-1]) if r.stdout.strip() else -1


def empty_polls_gz(path, polls: int) -> int:
    """A gzip file of ``polls`` empty polls, made of repeated members (fast to write, and
    about 1/500 of the JSON on disk: the issue's 65 KB file was of this kind). Its size."""
    head = json.dumps(HEAD)[:-1].encode() + b',"polls":[\n'
    chunk_polls = 25_000
    chunk = gzip.compress(b",\n".join([EMPTY_POLL] * chunk_polls) + b",\n", 9)
    with open(path, "wb") as f:
        f.write(gzip.compress(head))
        for _ in range(polls // chunk_polls - 1):
            f.write(chunk)
        f.write(gzip.compress(b",\n".join([EMPTY_POLL] * chunk_polls) + b'],"stat_names":[]}'))
    return path.stat().st_size


def test_a_small_gzip_of_empty_polls_is_refused_in_bounded_memory(tmp_path):
    """The attack as written: 5 million empty polls (200 MiB of JSON, under the byte cap) in
    a file of a few hundred KB given to diff. Before: a MemoryError traceback under a 2 GiB
    address-space limit (3.0 GB resident without one)."""
    size = empty_polls_gz(tmp_path / "bomb.json.gz", 5_000_000)
    assert size < 1 << 20
    (tmp_path / "a.json").write_bytes(S.encode(S.build(NOBODY, [S.Poll(0.0, 0.0, ())])))
    r, peak_kib = run(CLI, "diff", str(tmp_path / "a.json"), str(tmp_path / "bomb.json.gz"))
    assert r.returncode == 2, r.stderr[-2000:]
    assert re.fullmatch(r"nicwatch: error: \S+bomb.json.gz: more than \S+ (JSON values|polls) "
                        r"\(.*\); narrow a history with --since\n", r.stderr), r.stderr
    assert peak_kib < 200 << 10, peak_kib  # what it read, never the objects (measured 104 MB)


def test_more_polls_than_the_limit_are_refused_before_decoding(tmp_path):
    polls = MAX_SNAPSHOT_POLLS + 25_000
    empty_polls_gz(tmp_path / "many.json.gz", polls)
    r, peak_kib = run(CLI, "diff", str(tmp_path / "many.json.gz"))
    assert r.returncode == 2
    assert f"more than {MAX_SNAPSHOT_POLLS:,} polls" in r.stderr and r.stderr.count("\n") == 1
    assert peak_kib < 150 << 10, peak_kib


def test_the_largest_document_of_empty_polls_loads_within_the_stated_cost(tmp_path):
    """200,000 polls (the issue's legitimate file was 200,000 polls, 1.68 GB, 22.5 s):
    within the limits, so it loads, at no more than VALUE_COST bytes a value."""
    path = tmp_path / "polls.json.gz"
    empty_polls_gz(path, 200_000)
    values = count_values(gzip.decompress(path.read_bytes()))
    r, peak_kib = run(LOAD, str(path))
    assert r.returncode == 0, r.stderr[-2000:]
    base, n = map(int, r.stdout.split()[:2])
    assert n == 200_000
    assert (peak_kib - base) << 10 <= values * VALUE_COST, (peak_kib - base, values)


def test_a_value_bomb_in_meta_is_refused_before_decoding(tmp_path):
    """Not polls: any member of the document (meta is kept as given) counts."""
    doc = dict(HEAD, meta={"x": [[]] * (MAX_SNAPSHOT_VALUES // 2 + 10)},
               polls=[{"time": 0, "monotonic": 0, "interfaces": []}], stat_names=[])
    path = tmp_path / "meta.json.gz"
    z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    path.write_bytes(z.compress(json.dumps(doc, separators=(",", ":")).encode()) + z.flush())
    r, peak_kib = run(CLI, "diff", str(path))
    assert r.returncode == 2 and "JSON values" in r.stderr, r.stderr[-2000:]
    assert peak_kib < 150 << 10, peak_kib


def test_a_long_series_of_a_real_port_costs_less_than_before(tmp_path):
    """1,000 polls of a ConnectX-7 port (the mlx5 fixture, one channel: 1,100 values a
    poll): before, json.loads's tree and the records together, 108 bytes a value at the
    peak; now one poll's tree at a time and one SeriesKey per series, under VALUE_COST."""
    write_stats(tmp_path / "eth2.txt", mlx5_stats(1))
    samples = mlx5_collector(tmp_path / "eth2.txt").poll().samples
    poll = S.poll_of(samples, samples[0].time, samples[0].monotonic)
    head = S.build(NOBODY, [poll])
    path = tmp_path / "series.json"
    with open(path, "wb") as f:
        for piece in encode_stream(head, (dataclasses.replace(poll, time=poll.time + 5 * i,
                                                              monotonic=poll.monotonic + 5 * i)
                                          for i in range(1000))):
            f.write(piece)
    values = count_values(path.read_bytes())
    r, peak_kib = run(LOAD, str(path))
    assert r.returncode == 0, r.stderr[-2000:]
    base = int(r.stdout.split()[0])
    assert (peak_kib - base) << 10 <= values * VALUE_COST * 0.8, (peak_kib - base, values)
