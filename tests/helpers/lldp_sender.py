"""An LLDP agent for tests: frames built by nicwatch.normalize.lldp.encode_frame
(tests/unit/normalize/test_lldp_decode.py checks it against frames written byte by byte from
the standard), sent from a raw AF_PACKET socket inside a namespace the test created."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from netns import PYTHON, ns_sh

SRC = str(Path(__file__).resolve().parents[2] / "src")

SENDER = """
import json, socket, sys, time
sys.path.insert(0, {src!r})
from nicwatch.model import DcbApp, DcbxPfc
from nicwatch.normalize.lldp import encode_frame
spec = json.loads(sys.argv[1])
mac = bytes.fromhex(spec["mac"].replace(":", ""))
frame = encode_frame(mac, mac, mac, spec.get("ttl", 120), system_name=spec["name"],
                     port_description=spec["dev"], management_ipv4=spec["addr"],
                     pfc=DcbxPfc(False, False, 8, tuple(spec["pfc"])),
                     apps=(DcbApp(3, spec["roce"], 4791),))
frames = [frame] + [bytes.fromhex(h) for h in spec.get("raw", [])]
frames += [encode_frame(mac, i.to_bytes(6, "big"), b"port", 65535)  # distinct chassis ids
           for i in range(spec.get("distinct", 0))]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((spec["dev"], 0))
end = time.monotonic() + spec.get("flood", 0)
sent = 0
for _ in range(spec.get("repeat", 1)):
    while True:
        for f in frames:
            try:
                s.send(f)
                sent += 1
            except OSError:
                pass
        if time.monotonic() >= end:
            break
    time.sleep(spec.get("every", 0))
print(sent, flush=True)
"""


def send(ns: str, **spec: object) -> int:
    """Send the frames of ``spec`` (dev, mac, name, addr, pfc, roce; raw, distinct, flood,
    repeat, every) from inside ``ns``; the number of frames sent."""
    out = ns_sh(ns, PYTHON, "-c", SENDER.format(src=SRC), json.dumps(spec)).stdout
    return int(out)


def start(ns: str, **spec: object) -> subprocess.Popen:
    """The same in the background (with ``repeat`` and ``every``); stop it by its PID."""
    return subprocess.Popen(["ip", "netns", "exec", ns, PYTHON, "-c", SENDER.format(src=SRC),
                             json.dumps(spec)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
