"""Time and chance, as the engine sees them: one ``Clock`` a client is given.

The engine reads the time (budgets, deadlines, the pace), sleeps (a pause before a
retry, between polls, a paced send) and draws random numbers (backoff jitter) through
it, and through nothing else: ``Client(clock=...)`` is the supported seam for tests
(``asyncsdk.testing.VirtualClock``: time that moves only when something sleeps) and for
callers who run their own clock. The default is ``SystemClock``.

Whatever the clock, ``Client.close()`` still ends a pause at once: the engine races the
clock's ``sleep`` against the client's close (``SessionOwner.pause``).
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Protocol, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """What the engine needs of time: ``now()`` (seconds, monotonic: only differences
    count), ``sleep(seconds)``, and ``random()`` (a float in [0, 1): backoff jitter)."""

    def now(self) -> float:
        """The current time in seconds (any origin; it never goes back)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return after ``seconds`` of this clock's time."""
        ...

    def random(self) -> float:
        """A random float in [0, 1)."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic``, ``asyncio.sleep``, ``random.random``.

    ``now`` and ``random`` are the builtins themselves (no Python frame per reading: the
    engine reads the time several times per call)."""

    __slots__ = ()

    now = staticmethod(time.monotonic)
    random = staticmethod(random.random)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


#: The clock of every client not given one.
SYSTEM_CLOCK = SystemClock()
