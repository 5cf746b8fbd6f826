"""Threads the daemon starts, started with its signals blocked, so only the main thread
ever takes SIGTERM, SIGINT and SIGHUP.

A process-directed signal goes to any thread that does not block it. CPython runs the Python
handler on the main thread either way, but the C-level handler that notes the signal runs on
the thread that took it, and when the main thread then finds the handler changed (the daemon
sets SIGHUP to SIG_IGN as it stops) it prints "Signal 1 ignored due to race condition" on
stderr. With every other thread blocking the signals, the main thread can block them too and
then ignore them, and no signal arrives in between (daemon.py). A thread inherits the signal
mask of the thread that creates it, so the mask is blocked around ``start`` only.
"""

from __future__ import annotations

import signal
import threading

DAEMON_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def start(thread: threading.Thread) -> None:
    """``thread.start()`` with DAEMON_SIGNALS blocked in the new thread."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, DAEMON_SIGNALS)
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
