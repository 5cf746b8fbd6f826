"""sources.sysfs.OpenAttributes, for real: a sysfs attribute kept open and re-read with
pread at offset 0 shows the kernel's current value (a fresh show()), an attribute whose
show() fails reads as read_attribute says and is not kept, the limit holds, and the
descriptor of a removed interface's attribute reads as absent. Inside a network namespace
the test creates (a veth pair, traffic only between its two ends). And read_records, which
reads a procfs seq_file of many pages to its end, on this kernel's own /proc/kallsyms."""

from __future__ import annotations

import json

from netns import PYTHON, make_veth_pair, ns_sh

SNIPPET = """
import json, socket, subprocess
from nicwatch.sources.sysfs import OpenAttributes, read_attribute
stat = "/sys/class/net/{a}/statistics/tx_packets"
speed = "/sys/class/net/lo/speed"  # EINVAL from show(): loopback has no speed
files = OpenAttributes(2)
out = {{"before": files.read(stat)}}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("{addr_a}", 0))
for _ in range(7):
    s.sendto(b"x", ("{addr_b}", 9))
out["after"] = files.read(stat)
out["open_after_reads"] = len(files)
out["speed"] = files.read(speed)
out["speed_direct"] = read_attribute(speed)
out["open_after_failure"] = len(files)
out["others"] = [files.read(f"/sys/class/net/{{n}}/mtu") for n in ("lo", "{a}")]
out["open_at_limit"] = len(files)
subprocess.run(["ip", "link", "del", "{a}"], check=True)
out["removed"] = files.read(stat)
out["open_after_removal"] = len(files)
files.close_all()
print(json.dumps(out))
"""


def test_kept_open_attributes_read_what_the_kernel_has_now() -> None:
    pair = make_veth_pair(subnet=47)
    try:
        got = json.loads(ns_sh(pair.ns_a, PYTHON, "-c", SNIPPET.format(
            a=pair.a, addr_a=pair.addr_a, addr_b=pair.addr_b)).stdout)
    finally:
        pair.delete()
    before, after = int(got["before"][0]), int(got["after"][0])
    assert after - before >= 7  # re-read through the same descriptor: the new count
    assert got["open_after_reads"] == 1
    assert got["speed"] == got["speed_direct"] and got["speed"][1].startswith("EINVAL")
    assert got["open_after_failure"] == 1  # the failing attribute is not kept open
    assert [v[0] for v in got["others"]] == ["65536", "1500"]
    assert got["open_at_limit"] == 2  # the third attribute was read, not kept
    assert got["removed"] == [None, None]  # ENODEV on the stale descriptor: absent
    assert got["open_after_removal"] == 1


def test_a_seq_file_of_many_pages_is_read_to_its_end() -> None:
    """This kernel's /proc/kallsyms (a seq_file of one record per symbol, stable while no
    module loads): one read() returns at most a page of records, which is how a single read
    of a 256-CPU /proc/net/softnet_stat lost every CPU after the 30th; read_records reads
    it all."""
    from nicwatch.sources.sysfs import read_attribute, read_records
    with open("/proc/kallsyms", "rb") as f:
        whole = f.read().decode().strip()
    assert len(whole) > 1 << 20
    one_read, _ = read_attribute("/proc/kallsyms")
    assert one_read is not None and len(one_read) <= 4096 < len(whole)
    text, problem = read_records("/proc/kallsyms", 64 << 20)
    assert problem is None and text == whole
    assert read_records("/proc/kallsyms", 1 << 20) == (None, f"larger than {1 << 20} bytes")
    assert read_records("/proc/no-such-file", 1 << 20) == (None, None)
