"""The one way a test waits for something: poll a predicate until it holds or a deadline
passes, then fail naming what never happened."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "",
               interval: float = 0.01) -> T:
    """The predicate's first truthy value; an AssertionError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what or 'condition'} never held in {timeout} s"
        time.sleep(interval)
