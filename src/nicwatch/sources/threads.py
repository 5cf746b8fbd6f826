"""Threads the daemon starts, started with its signals blocked: SIGTERM, SIGINT and SIGHUP
are taken by the daemon's signal thread alone (daemon.SignalThread, with sigwaitinfo).

A process-directed signal goes to any thread that does not block it, and no handler is
installed: a thread that took SIGHUP or SIGTERM would end the process (the default action). A thread
inherits the signal mask of the thread that creates it, so the mask is blocked around
``start`` only: threads started before the main thread blocks the signals (the module reader,
the incident writer, the HTTP server) need it; later ones inherit it.
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
