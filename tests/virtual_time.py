"""An asyncio event loop on a fake clock: time moves only when every task waits on a
timer, and then straight to the next one. Tests of pacing run seconds of simulated time
in milliseconds, deterministically (no sleeps, no sockets: a loop that would block for
good raises instead).

    with virtual_loop() as loop:
        loop.run_until_complete(main())
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
from collections.abc import Iterator
from typing import Any


class _Selector(selectors.SelectSelector):
    """Never blocks: a wait of ``timeout`` seconds moves the loop's clock instead."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready:
            return ready
        if timeout is None:
            raise RuntimeError("virtual time: every task waits and no timer is set")
        self.now += timeout
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """``time()`` is the fake clock (starting at 0.0)."""

    def __init__(self) -> None:
        self._virtual = _Selector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


@contextlib.contextmanager
def virtual_loop() -> Iterator[VirtualLoop]:
    """A fresh ``VirtualLoop``, closed afterwards."""
    loop = VirtualLoop()
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
