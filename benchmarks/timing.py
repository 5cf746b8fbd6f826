"""The one CPU-time measure the stage benchmarks share (imported by the scripts beside it,
which Python runs with this folder first on its path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], rounds: int) -> float:
    """Median CPU seconds of one call over 5 batches of ``rounds`` calls."""
    times = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(rounds):
            fn()
        times.append((time.process_time() - start) / rounds)
    return statistics.median(times)
