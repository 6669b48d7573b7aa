"""``VirtualClock``: time for tests that moves only when something sleeps.

Give it to a client (``Client(clock=VirtualClock())``, ``sb.client(clock=...)``): a
retry's pause, a poll's pause, a paced send's wait return at once, each advancing the
clock by what was asked and recorded in ``sleeps``; budgets and deadlines are counted on
it, so a test sees a 60-second wait end its call without waiting a second. Its
``random()`` (the backoff's jitter) is a value you set, or a seeded generator's.

It is what the engine's ``asyncsdk.Clock`` protocol asks for, and nothing more.
"""

from __future__ import annotations

import asyncio
import random as _random

__all__ = ["VirtualClock"]


class VirtualClock:
    """A clock whose time moves only through ``sleep`` and ``advance``.

    Args:
        start: the time ``now()`` gives at first.
        random: what ``random()`` returns (0 <= value <= 1; 1.0 gives the backoff's
            longest waits, 0.0 none). Default 0.5. Settable later (``clock.random_value``).
        seed: instead of a fixed value, draw ``random()`` from ``random.Random(seed)``.

    Attributes:
        sleeps: every ``sleep`` asked of it, in seconds, in order.
    """

    __slots__ = ("_draw", "_now", "random_value", "sleeps")

    def __init__(self, start: float = 0.0, *, random: float = 0.5,
                 seed: int | None = None) -> None:
        if not 0.0 <= random <= 1.0:
            raise ValueError(f"random: expected a value from 0 to 1, got {random!r}")
        self._now = float(start)
        self.random_value = random
        self._draw = None if seed is None else _random.Random(seed).random
        self.sleeps: list[float] = []

    def now(self) -> float:
        """The clock's time, in seconds."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Record ``seconds``, advance the time by it, and let other tasks run once (as a
        real sleep would) before returning."""
        self.sleeps.append(seconds)
        if seconds > 0:
            self._now += seconds
        await asyncio.sleep(0)

    def random(self) -> float:
        """``random_value``, or the seeded generator's next draw."""
        return self.random_value if self._draw is None else self._draw()

    def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds`` without sleeping (time spent elsewhere)."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self._now += seconds

    @property
    def slept(self) -> float:
        """The seconds slept in all."""
        return sum(self.sleeps)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now:g}, sleeps={len(self.sleeps)})"
