"""The flight recorder: lossless in the snapshot format, bounded by polls and by bytes, its
memory estimate checked against tracemalloc, and its HTTP handlers mounted on the daemon's
own HTTP server, behind basic auth, for the `nicwatch history` client."""

import base64
import gc
import json
import subprocess
import tracemalloc
import urllib.error
import urllib.request
from functools import partial
from urllib.parse import parse_qs

import bcrypt
import pytest

from nicwatch.consumers.history import Recorder, history_response, parse_since, snapshot_response
from nicwatch.exporter.http import MetricsServer
from nicwatch.snapshot import files as S

from snapshot_helpers import (
    HOST,
    SNAPSHOT_CLI,
    T0,
    mlx5_collector,
    mlx5_stats,
    write_stats,
)


def polls_of(tmp_path, n: int, channels: int = 4, name: str = "eth2.txt"):
    """``n`` polls of the fixture ConnectX-7 port with counters moving between polls."""
    stats = mlx5_stats(channels)
    path = tmp_path / name
    collector = mlx5_collector(path)
    for i in range(n):
        for j, key in enumerate(stats):
            stats[key] += (i * 7 + j) % 13
        write_stats(path, stats)
        yield collector.poll().samples


def fill(recorder: Recorder, polls) -> list:
    added = []
    for samples in polls:
        recorder.add(samples, samples[0].time, samples[0].monotonic)
        added.append(samples)
    return added


def test_history_is_the_polls_in_the_snapshot_format_losslessly(tmp_path):
    recorder = Recorder(HOST, polls=10, raw_stats=True)
    added = fill(recorder, polls_of(tmp_path, 4))
    snap = recorder.since()
    assert snap.host == HOST and snap.raw_stats and len(snap.polls) == 4
    for poll, samples in zip(snap.polls, added, strict=False):
        assert poll.interfaces == tuple(S.interface_snapshot(s) for s in samples)
    assert S.decode(S.encode(snap), "history.json") == snap
    assert [p.time for p in recorder.since(T0 + 10).polls] == [T0 + 10, T0 + 15]
    assert recorder.since(T0 + 16) is None
    assert all(not i.raw for p in recorder.since(None, raw_stats=False).polls
               for i in p.interfaces)


def test_raw_statistics_are_kept_only_when_asked_and_the_document_says_so(tmp_path):
    polls = list(polls_of(tmp_path, 2))
    assert any(S.interface_snapshot(s).raw for samples in polls for s in samples)  # raw existed
    lean, full = Recorder(HOST, polls=10), Recorder(HOST, polls=10, raw_stats=True)
    fill(lean, polls)
    fill(full, polls)
    snap = lean.since()
    assert not snap.raw_stats
    assert all(not i.raw and i.counters for p in snap.polls for i in p.interfaces)
    assert [i.counters for p in snap.polls for i in p.interfaces] == \
        [i.counters for p in full.since().polls for i in p.interfaces]
    assert lean.bytes < full.bytes


def test_the_oldest_polls_go_first_by_count_and_by_bytes(tmp_path):
    recorder = Recorder(HOST, polls=3)
    polls = fill(recorder, polls_of(tmp_path, 5))
    assert len(recorder) == 3 and recorder.span() == (T0 + 10, T0 + 20)
    sizes = []
    for n in (1, 2):
        fresh = Recorder(HOST, polls=100)
        fill(fresh, polls[:n])
        sizes.append(fresh.bytes)
    small = Recorder(HOST, polls=100, max_bytes=sizes[1] + (sizes[1] - sizes[0]) // 2)
    fill(small, polls)
    assert len(small) == 2 and small.bytes <= small.max_bytes
    assert small.span() == (T0 + 15, T0 + 20)
    tiny = Recorder(HOST, polls=100, max_bytes=1)  # never less than the newest poll
    fill(tiny, polls_of(tmp_path, 2, name="tiny.txt"))
    assert len(tiny) == 1


def test_shared_values_are_freed_with_the_last_poll_using_them(tmp_path):
    """Name lists, keys and state are stored once; once no poll refers to them, they are
    gone from the count (and from memory)."""
    recorder = Recorder(HOST, polls=2)
    fill(recorder, polls_of(tmp_path, 2, channels=8))
    newer = list(polls_of(tmp_path, 2, channels=2, name="fewer.txt"))
    fill(recorder, newer)
    fresh = Recorder(HOST, polls=2)
    fill(fresh, newer)
    assert recorder.bytes == fresh.bytes


@pytest.mark.parametrize("channels, expect_bytes", [(1, 3_500), (63, 24_000)])
def test_the_byte_estimate_matches_what_python_allocates(tmp_path, channels, expect_bytes):
    """The cap is only as good as the estimate: within 25% of tracemalloc's count, and the
    cost per poll stays near the documented figure (docs/snapshots.md)."""
    samples = list(polls_of(tmp_path, 41, channels))
    recorder = Recorder(HOST, polls=1000)
    fill(recorder, samples[:1])  # first poll: shared values
    gc.collect()
    tracemalloc.start()
    try:
        before, base = tracemalloc.get_traced_memory()[0], recorder.bytes
        fill(recorder, samples[1:])
        gc.collect()  # packing leaves short-lived garbage; only what stays counts
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimated = recorder.bytes - base
    assert 0.75 * used <= estimated <= 1.25 * used, (used, estimated)
    assert estimated / 40 < expect_bytes


# --------------------------------------------------------------------------- HTTP API


def test_since_takes_durations_epoch_seconds_and_iso_times():
    now = 1_790_000_000.0
    assert parse_since("10m", now) == now - 600
    assert parse_since("1790000000.5", now) == 1_790_000_000.5
    assert parse_since("2026-09-21T12:00:00Z", now) == parse_since("2026-09-21T12:00:00", now)
    with pytest.raises(ValueError, match="since: expected a duration such as 10m"):
        parse_since("yesterday", now)


def test_history_response(tmp_path):
    recorder = Recorder(HOST, polls=10)
    status, ctype, body = history_response(recorder, {})
    assert (status, body) == (404, b"no polls recorded since unknown (history is empty)\n")
    fill(recorder, polls_of(tmp_path, 3))
    status, ctype, pieces = history_response(recorder, parse_qs("since=1790000105&raw=false"))
    assert (status, ctype) == (200, "application/json")
    pieces = list(pieces)
    assert len(pieces) == 2 + 2  # opening, one piece per poll, closing
    snap = S.decode(b"".join(pieces), "response")
    assert S.encode(snap) == b"".join(pieces) and snap == recorder.since(1790000105, False)
    assert len(snap.polls) == 2 and not snap.raw_stats
    assert history_response(recorder, {"since": "tomorrow"})[0] == 400
    assert history_response(recorder, {"raw": "perhaps"})[0] == 400
    status, _, body = history_response(recorder, {"since": "1890000000"})
    assert status == 404 and b"history holds 2026-" in body


def test_snapshot_response_takes_a_labelled_snapshot(tmp_path):
    (samples,) = polls_of(tmp_path, 1)
    taken = []

    def take(label):
        taken.append(label)
        return S.build(HOST, [S.poll_of(samples, T0, 1000.0)], label)
    status, ctype, body = snapshot_response(take, {}, b'{"label": "before iperf3"}')
    assert (status, ctype) == (200, "application/json")
    assert S.decode(body, "response").label == "before iperf3"
    assert snapshot_response(take, {"label": ["after"]}, b"")[0] == 200
    assert taken == ["before iperf3", "after"]
    for bad in (b"{", b'{"label": 7}', b"[1]", json.dumps({"label": "x" * 300}).encode()):
        status, _, body = snapshot_response(take, {}, bad)
        assert status == 400 and body.endswith(b"\n")
    assert taken == ["before iperf3", "after"]


class Daemon:
    """The daemon's HTTP server with both API routes mounted as daemon.py mounts them,
    behind basic auth (ops / s3cret) from an exporter-toolkit web config file."""

    def __init__(self, web_config: str) -> None:
        self.web_config = web_config
        self.recorder = Recorder(HOST, polls=10)
        self.labels: list[str | None] = []  # of the snapshots taken
        self.servers: list[MetricsServer] = []

    def take(self, label: str | None) -> S.Snapshot:
        self.labels.append(label)
        return self.recorder.since()

    def serve(self, allow_writes: bool) -> str:
        server = MetricsServer("127.0.0.1", 0, web_config_file=self.web_config,
                               allow_writes=allow_writes)
        server.add_route("GET", "/api/v1/history", partial(history_response, self.recorder))
        server.add_route("POST", "/api/v1/snapshots", partial(snapshot_response, self.take),
                         write=True)
        server.start()
        self.servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    def stop(self) -> None:
        while self.servers:
            self.servers.pop().stop()


@pytest.fixture
def daemon(tmp_path):
    web = tmp_path / "web.yml"
    digest = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode()
    web.write_text(f"basic_auth_users:\n  ops: {digest}\n")
    d = Daemon(str(web))
    yield d
    d.stop()


def _post(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_the_snapshot_endpoint_is_a_write_endpoint(tmp_path, daemon):
    fill(daemon.recorder, polls_of(tmp_path, 1))
    url = daemon.serve(allow_writes=False) + "/api/v1/snapshots"
    assert _post(url, b'{"label": "before"}') == (403, b"write endpoints are disabled\n")
    url = daemon.serve(allow_writes=True) + "/api/v1/snapshots"
    status, body = _post(url, b'{"label": "before"}')
    assert status == 200 and S.decode(body, "response").host == HOST
    assert daemon.labels == ["before"]


def history(url: str, cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*SNAPSHOT_CLI, "history", f"--web.url={url}", *args],
                          capture_output=True, text=True, cwd=cwd)


def test_nicwatch_history_saves_what_the_daemon_recorded(tmp_path, daemon):
    fill(daemon.recorder, polls_of(tmp_path, 3))
    url = daemon.serve(allow_writes=False)
    r = history(url.replace("http://", "http://ops:s3cret@"), tmp_path, "-o", "h.json.gz")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "h.json.gz\n" and "3 polls over 10 s" in r.stderr
    saved = S.load(tmp_path / "h.json.gz")
    assert saved == daemon.recorder.since()
    assert S.diff(saved, saved).seconds == 10.0  # first to last poll: the whole window
    r = history(url, tmp_path)
    assert r.returncode == 1 and r.stderr == f"nicwatch: error: {url}: HTTP 401: unauthorized\n"
    daemon.stop()
    r = history(url, tmp_path)
    assert r.returncode == 1 and "cannot reach the daemon" in r.stderr
    assert r.stderr.count("\n") == 1


def test_a_state_change_between_polls_is_recorded_and_equal_values_are_shared(tmp_path):
    """The recorder reuses the last state and packed values while they are equal: a change
    of link state (same counters) must still be recorded, and values that did not change
    come back as they were."""
    import dataclasses

    first, second = list(polls_of(tmp_path, 2))
    sample = second[0]
    reading = sample.reading
    changed = dataclasses.replace(sample, reading=dataclasses.replace(
        reading, netclass=dataclasses.replace(reading.netclass, mtu=reading.netclass.mtu + 1,
                                              operstate="down")))
    recorder = Recorder(HOST, polls=10)
    for samples in (first, second, (changed,), (changed,), second):
        recorder.add(samples, samples[0].time, samples[0].monotonic)
    states = [p.interfaces[0].state["link"] for p in recorder.since().polls]
    assert [s["mtu"] - reading.netclass.mtu for s in states] == [0, 0, 1, 1, 0]
    assert [s["operstate"] for s in states][2:] == ["down", "down", reading.netclass.operstate]
    polls = recorder.since().polls
    assert polls[3].interfaces[0] == S.interface_snapshot(changed, raw=False)
    assert polls[4].interfaces[0] == S.interface_snapshot(sample, raw=False)


def test_a_download_is_cut_to_what_nicwatch_history_accepts(tmp_path):
    """The issue: a 420 MB download was served although `nicwatch history` refuses more than
    256 MiB. The stream leaves out the oldest polls until the document fits, and says so."""
    recorder = Recorder(HOST, polls=50, raw_stats=True)
    fill(recorder, polls_of(tmp_path, 12))
    whole = b"".join(recorder.stream())
    limit = len(whole) // 3
    assert recorder.bytes * 8 >= limit  # the case the limit is for
    part = b"".join(recorder.stream(None, True, limit))
    assert len(part) <= limit
    snap = S.decode(part, "history")
    full = S.decode(whole, "history")
    assert 1 <= len(snap.polls) < 12 and snap.polls == full.polls[-len(snap.polls):]
    assert snap.meta["left_out"] == {"polls": 12 - len(snap.polls), "limit_bytes": limit}
    assert b"".join(recorder.stream(None, True, len(whole) * 2)) == whole


def test_nicwatch_history_over_its_limit_is_one_line_exit_2(tmp_path):
    """The docs say exit 2 for a document over the limit; it was 1."""
    import http.server
    import threading
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join(z.compress(bytes(1 << 20)) for _ in range((S.MAX_SNAPSHOT_BYTES >> 20) + 8))
    bomb += z.flush()

    class Bomb(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(bomb)))
            self.end_headers()
            self.wfile.write(bomb)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Bomb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = history(f"http://127.0.0.1:{server.server_address[1]}", tmp_path)
    finally:
        server.shutdown()
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "larger than 256 MiB" in r.stderr and "--since" in r.stderr


def test_a_polls_keys_are_taken_again_by_their_entry_and_stay_shared(tmp_path):
    """An interface's counter and gauge keys, unchanged since its last poll, are taken again
    by their stored entry (not built and hashed again): the same stored tuples, counted as
    often as a recorder that hashed each gets them, also when the keys change and change
    back, and when the polls holding them are gone."""
    many = list(polls_of(tmp_path, 2, channels=4))
    few = list(polls_of(tmp_path, 1, channels=2, name="fewer.txt"))
    order = [many[0], many[1], few[0], many[1], many[0]]
    recorder = Recorder(HOST, polls=2)
    held = []
    for samples in order:
        recorder.add(samples, samples[0].time, samples[0].monotonic)
        held.append(recorder._polls[-1].interfaces[0])
    assert held[1].counter_keys is held[0].counter_keys
    assert held[1].gauge_keys is held[0].gauge_keys
    assert held[2].counter_keys != held[1].counter_keys
    assert held[3].counter_keys is held[1].counter_keys  # found again after a change
    assert held[4].counter_keys is held[3].counter_keys
    fresh = Recorder(HOST, polls=2)
    fill(fresh, order[-2:])
    assert recorder.bytes == fresh.bytes
    assert S.encode(recorder.since()) == S.encode(fresh.since())
