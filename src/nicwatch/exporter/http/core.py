"""What every layer of the HTTP server shares (its event loop, once it runs)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class ServerCore:
    """What every layer of the server shares: its event loop, once it runs."""

    _loop: asyncio.AbstractEventLoop | None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop, once it runs (the loop's own code asks for it)."""
        if self._loop is None:
            raise RuntimeError("the server is not running")
        return self._loop

    def _call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """``callback(*args)`` on the loop, from any thread; nothing once it is closed."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the server stopped
            pass
