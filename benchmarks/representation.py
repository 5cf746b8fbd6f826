"""How to hold a poll's values as arrays (issue #39 item 1): the tracker's step on one
interface (extend every counter, check for a fall, compute every rate) on N series, with
the values as Python lists, as the stdlib ``array`` read through ``memoryview``, and as numpy
vectors (alone, and with the conversion from and back to the Python tuples the kernel's
decode and the consumers hold); and what each costs to import and in resident memory.
Prints one JSON document:

  python benchmarks/representation.py [N ...]      (default: 180 5000)

180 is a ConnectX port's canonical and per-queue series, 5,000 its raw statistics. numpy is
measured when it is importable (it is not a dependency of nicwatch).
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from array import array

P = time.perf_counter


def median_us(f, reps: int = 2000) -> float:
    xs = []
    for _ in range(reps):
        t0 = P()
        f()
        xs.append(P() - t0)
    return statistics.median(xs) * 1e6


def step_costs(n: int) -> dict:
    rng = random.Random(1)
    prev = [rng.randrange(0, 1 << 40) for _ in range(n)]
    # one series in five moved since the last poll, as on a busy port
    now = [p + (rng.randrange(0, 10**6) if i % 5 == 0 else 0) for i, p in enumerate(prev)]
    ext, scale, dt = list(prev), [1.0] * n, 5.0

    def lists():
        out = [(e + (v - p)) if v >= p else None for p, e, v in zip(prev, ext, now, strict=True)]
        return out, [(o - e) * s / dt if o is not None else None
                     for o, e, s in zip(out, ext, scale, strict=True)]

    pa, ea, na, sa = array("Q", prev), array("Q", ext), array("Q", now), array("d", scale)

    def arrays():
        mp, me, mn = memoryview(pa), memoryview(ea), memoryview(na)
        out = array("Q", [(e + (v - p)) if v >= p else 0
                          for p, e, v in zip(mp, me, mn, strict=True)])
        return out, array("d", [(o - e) * s / dt for o, e, s in zip(out, me, sa, strict=True)])

    row = {"series": n, "lists_us": median_us(lists), "array_memoryview_us": median_us(arrays),
           # an interface whose values did not move: one comparison of the whole sequence
           "lists_unchanged_check_us": median_us(lambda: prev == list(prev)),
           "array_unchanged_check_us": median_us(lambda: pa == array("Q", prev))}
    try:
        import numpy as np
    except ImportError:
        return row
    npp, npe, npn, nps = (np.array(prev, dtype=np.uint64), np.array(ext, dtype=np.uint64),
                          np.array(now, dtype=np.uint64), np.array(scale))

    def vectors():
        fell = npn < npp
        out = npe + (npn - npp)
        return fell.any(), out, (out - npe) * nps / dt

    def vectors_converted():
        v = np.array(now, dtype=np.uint64)
        fell = v < npp
        out = npe + (v - npp)
        return fell.any(), out.tolist(), ((out - npe) * nps / dt).tolist()

    row["numpy_us"] = median_us(vectors)
    row["numpy_with_conversion_us"] = median_us(vectors_converted)
    return row


def import_cost(module: str) -> dict:
    """A fresh interpreter's import time and its peak RSS after importing ``module`` (VmHWM:
    getrusage's maxrss would carry this process's own over fork)."""
    code = ("import time; t = time.perf_counter(); "
            f"{'import ' + module if module else 'pass'}; d = time.perf_counter() - t; "
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
            "print(d * 1e3, int(hwm.split()[1]) / 1024)")
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if out.returncode:
            return {"module": module, "importable": False}
        ms, mb = map(float, out.stdout.split())
        runs.append((ms, mb))
    return {"module": module or "(nothing)", "import_ms": statistics.median(r[0] for r in runs),
            "max_rss_mb": statistics.median(r[1] for r in runs)}


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [180, 5000]
    json.dump({"steps": [step_costs(n) for n in sizes],
               "imports": [import_cost(m) for m in ("", "array", "numpy")]}, sys.stdout)


if __name__ == "__main__":
    main()
