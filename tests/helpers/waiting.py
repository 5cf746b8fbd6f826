"""The one way a test waits for something: poll a predicate until it holds or a deadline
passes, then fail naming what never happened."""

import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "",
               interval: float = 0.01, alive: subprocess.Popen | None = None) -> T:
    """The predicate's first truthy value; an AssertionError naming ``what`` at the deadline,
    or at once when the process ``alive`` has exited."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert alive is None or alive.poll() is None, \
            f"process {alive.pid} exited ({alive.returncode}) while waiting: {what or 'condition'}"
        assert time.monotonic() < deadline, f"{what or 'condition'} never held in {timeout} s"
        time.sleep(interval)
