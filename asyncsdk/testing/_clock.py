"""``VirtualClock``: time for tests that moves only when something sleeps.

Give it to a client (``Client(clock=VirtualClock())``, ``sb.client(clock=...)``): a
retry's pause, a poll's pause, a paced send's wait end without waiting, each recorded in
``sleeps``; budgets and deadlines are counted on it, so a test sees a 60-second wait end
its call without waiting a second. Its ``random()`` (the backoff's jitter) is a value
you set, or a seeded generator's.

Sleepers wake in the order of their virtual deadlines, and tasks that sleep at the same
time sleep together: the time moves on only once the loop has run a few passes with no
new sleeper, then to the earliest deadline (as trio's ``MockClock`` autojumps when idle).
Ten tasks each sleeping 1 s move it by 1 s, not 10: the time a run takes on it is the
time it would take on a real clock, not the sum of every task's waits.

It is what the engine's ``asyncsdk.Clock`` protocol asks for, and nothing more.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import random as _random

__all__ = ["VirtualClock"]

#: Loop passes with no new sleeper before the time moves on: enough for tasks woken
#: together (or answered by an in-process server) to reach their next sleep first.
IDLE_PASSES = 20

Sleeper = tuple[float, int, "asyncio.Future[None]"]


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

    __slots__ = ("_draw", "_driver", "_now", "_order", "_quiet", "_waiting", "random_value",
                 "sleeps")

    def __init__(self, start: float = 0.0, *, random: float = 0.5,
                 seed: int | None = None) -> None:
        if not 0.0 <= random <= 1.0:
            raise ValueError(f"random: expected a value from 0 to 1, got {random!r}")
        self._now = float(start)
        self.random_value = random
        self._draw = None if seed is None else _random.Random(seed).random
        self.sleeps: list[float] = []
        self._waiting: list[Sleeper] = []  # a heap: the earliest deadline first
        self._order = itertools.count()  # equal deadlines wake in the order they slept
        self._driver: asyncio.AbstractEventLoop | None = None
        self._quiet = 0

    def now(self) -> float:
        """The clock's time, in seconds."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Record ``seconds`` and return once the clock reaches ``now() + seconds``
        (no real wait: the time jumps there when no task is about to sleep sooner). A
        sleep of 0 or less lets other tasks run once, as ``asyncio.sleep(0)`` does."""
        self.sleeps.append(seconds)
        if not seconds > 0 or math.isinf(seconds):
            if seconds > 0:  # forever: nothing can wake it but a cancellation
                await asyncio.get_running_loop().create_future()
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._waiting, (self._now + seconds, next(self._order), wake))
        self._quiet = 0
        if self._driver is not loop:  # none yet, or one of a loop that has gone
            self._driver = loop
            loop.call_soon(self._drive, loop)
        await wake

    def _drive(self, loop: asyncio.AbstractEventLoop) -> None:
        """Once per loop pass while anything sleeps: after ``IDLE_PASSES`` quiet passes,
        move the time to the earliest deadline and wake who sleeps until then."""
        if self._driver is not loop:
            return
        self._quiet += 1
        if self._quiet >= IDLE_PASSES:
            self._quiet = 0
            self._jump()
        if self._waiting:
            loop.call_soon(self._drive, loop)
        else:
            self._driver = None

    def _jump(self) -> None:
        while self._waiting and self._waiting[0][2].done():  # a cancelled sleep
            heapq.heappop(self._waiting)
        if self._waiting:
            self._now = max(self._now, self._waiting[0][0])
            self._wake_due()

    def _wake_due(self) -> None:
        while self._waiting and self._waiting[0][0] <= self._now:
            wake = heapq.heappop(self._waiting)[2]
            if wake.done():
                continue
            if wake.get_loop() is self._driver:
                wake.set_result(None)
            elif not wake.get_loop().is_closed():  # a sleeper of another thread's loop
                wake.get_loop().call_soon_threadsafe(_resolve, wake)

    def random(self) -> float:
        """``random_value``, or the seeded generator's next draw."""
        return self.random_value if self._draw is None else self._draw()

    def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds`` without sleeping (time spent elsewhere), and
        wake the sleeps that end by then."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self._now += seconds
        self._wake_due()

    @property
    def slept(self) -> float:
        """The seconds slept in all."""
        return sum(self.sleeps)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now:g}, sleeps={len(self.sleeps)})"


def _resolve(wake: asyncio.Future[None]) -> None:
    if not wake.done():
        wake.set_result(None)
