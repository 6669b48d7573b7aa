"""``VirtualClock``: time for tests that moves only when something sleeps.

Give it to a client (``Client(clock=VirtualClock())``, ``sb.client(clock=...)``): a
retry's pause, a poll's pause, a paced send's wait end without waiting, each recorded in
``sleeps``; budgets and deadlines are counted on it, so a test sees a 60-second wait end
its call without waiting a second. Its ``random()`` (the backoff's jitter) is a value
you set, or a seeded generator's.

Sleepers wake in the order of their virtual deadlines, and tasks that sleep at the same
time sleep together: once per pass of the event loop, the sleep that ends first moves
the time to its end and returns (a lone sleep returns after one pass, as
``asyncio.sleep(0)`` would). Ten tasks each sleeping 1 s move it by 1 s, not 10: the
time a run takes on it is the time it would take on a real clock, not the sum of every
task's waits.

It is what the engine's ``asyncsdk.Clock`` protocol asks for, and nothing more.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random as _random
from typing import Any

__all__ = ["VirtualClock"]

#: (deadline, order of sleeping, the sleeping task): kept in a heap, the earliest first.
Sleeper = tuple[float, int, "asyncio.Task[Any] | None"]


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

    __slots__ = ("_draw", "_now", "_order", "_waiting", "random_value", "sleeps")

    def __init__(self, start: float = 0.0, *, random: float = 0.5,
                 seed: int | None = None) -> None:
        if not 0.0 <= random <= 1.0:
            raise ValueError(f"random: expected a value from 0 to 1, got {random!r}")
        self._now = float(start)
        self.random_value = random
        self._draw = None if seed is None else _random.Random(seed).random
        self.sleeps: list[float] = []
        self._waiting: list[Sleeper] = []
        self._order = itertools.count()  # equal deadlines end in the order they slept

    def now(self) -> float:
        """The clock's time, in seconds."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Record ``seconds`` and return once the clock reaches ``now() + seconds``, with
        no real wait: once per loop pass, the earliest sleep moves the time to its end
        and returns (a sleep of 0 or less: after one pass, as ``asyncio.sleep(0)``)."""
        self.sleeps.append(seconds)
        if not seconds > 0:
            await asyncio.sleep(0)
            return
        mine: Sleeper = (self._now + seconds, next(self._order), asyncio.current_task())
        heapq.heappush(self._waiting, mine)
        try:
            while True:
                await asyncio.sleep(0)  # one pass: whoever sleeps meanwhile gets in line
                if self._now >= mine[0]:
                    return
                if self._earliest() is mine:
                    self._now = mine[0]
                    return
        finally:
            self._waiting.remove(mine)
            heapq.heapify(self._waiting)

    def _earliest(self) -> Sleeper | None:
        """The sleep that ends first, dropping those of a loop that has gone (their task
        never runs again: it must not hold the others back)."""
        waiting = self._waiting
        while waiting and waiting[0][2] is not None and waiting[0][2].get_loop().is_closed():
            heapq.heappop(waiting)
        return waiting[0] if waiting else None

    def random(self) -> float:
        """``random_value``, or the seeded generator's next draw."""
        return self.random_value if self._draw is None else self._draw()

    def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds`` without sleeping (time spent elsewhere); the
        sleeps that end by then return."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self._now += seconds

    @property
    def slept(self) -> float:
        """The seconds slept in all."""
        return sum(self.sleeps)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now:g}, sleeps={len(self.sleeps)})"
