"""``Window``: at most ``limit`` places in use, the rest waiting in line; the one window
primitive of the library (a bulk pace's attempts in flight, ``check_many``'s outcomes
not yet received).

Why not ``asyncio.Semaphore``: the bound changes while places are in use (a pace's
window follows its rate finder), a wait gives up at a deadline through a park that
``Client.close()`` ends, a place may be taken without a coroutine when one is free (a
check per input), and a window that closes sends every waiter away.

A freed place wakes the first waiter in line (as many as the room allows, counting
those already woken), which then takes it if it is still free. A place free when asked
for is taken at once, even while a woken waiter is on its way: the pace's rate finding
was tuned with that (a worker that just got its answer sends its next input at once),
and it spares a park per input. A woken waiter that finds no place waits again, first in
line. A waiter that gives up (its time ran out, it was cancelled, its park raised) takes
no place, and one woken before it gave up passes the wake-up on: none is lost.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

__all__ = ["Window", "WindowPark"]

#: A wait for a place: until ``waiter`` is done, or ``seconds`` have passed (``inf``:
#: no limit); it may end early by raising (a client closed), and may mark ``waiter``
#: done itself when the time runs out (the engine's park does).
WindowPark = Callable[["asyncio.Future[None]", float], Awaitable[Any]]


class _Waiter:
    """One place asked for: its future, and whether a release or a resize woke it (the
    future alone cannot say: a park may mark it done when the time runs out)."""

    __slots__ = ("future", "woken")

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future
        self.woken = False


async def _wait(waiter: asyncio.Future[None], seconds: float) -> None:
    """The default park: the loop's own wait."""
    if seconds == math.inf:
        await waiter
    else:
        await asyncio.wait((waiter,), timeout=seconds)


class Window:
    """See the module docstring. ``park``: how a waiter waits (default: on the loop);
    ``clock``: the time of ``acquire``'s deadline (default: the loop's).

    ``limit`` may be fractional (a pace's window is): a place is taken while fewer than
    ``limit`` are in use, but a waiter is woken only for a whole place of room; the
    fraction goes to whoever asks while it is free (the pace's rate finding was tuned
    with that)."""

    __slots__ = ("_clock", "_closed", "_limit", "_park", "_used", "_waiters", "_woken")

    def __init__(self, limit: float, park: WindowPark | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self._limit = limit
        self._park = _wait if park is None else park
        self._clock = clock
        self._used = 0
        self._woken = 0  # waiters woken and not yet back
        self._closed = False
        self._waiters: deque[_Waiter] = deque()

    @property
    def limit(self) -> float:
        """The most places in use at once (more may be, for a while, after a shrink)."""
        return self._limit

    @property
    def in_use(self) -> int:
        """Places taken and not yet released."""
        return self._used

    @property
    def waiting(self) -> int:
        """Waiters in line (not counting those woken and on their way)."""
        return len(self._waiters)

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called: no place is taken any more."""
        return self._closed

    def try_acquire(self) -> bool:
        """Take a place now if one is free; no coroutine."""
        if self._used < self._limit and not self._closed:
            self._used += 1
            return True
        return False

    async def acquire(self, deadline: float = math.inf,
                      park: WindowPark | None = None) -> bool:
        """Take a place, waiting in line while none is free; False (and no place taken)
        when ``deadline`` (on the window's clock) passed first, or the window is closed.
        A place free now is taken even past ``deadline``. ``park``: how this wait waits
        (default: the window's)."""
        front = False
        while True:
            if self.try_acquire():
                return True
            if self._closed:
                return False
            left = math.inf if deadline == math.inf else deadline - self._now()
            if left <= 0:
                return False
            waiter = _Waiter(asyncio.get_running_loop().create_future())
            if front:  # woken, but the place was taken first: still first in line
                self._waiters.appendleft(waiter)
            else:
                self._waiters.append(waiter)
            try:
                await (self._park if park is None else park)(waiter.future, left)
            except BaseException:
                self._leave_line(waiter)
                raise
            if waiter.woken:
                self._woken -= 1
                front = True
            else:  # the time ran out (checked again above)
                self._leave_line(waiter)

    def release(self) -> None:
        """Give a place back; the first waiter is woken for it."""
        self._used -= 1
        if self._waiters:
            self._wake()

    def resize(self, limit: float) -> None:
        """Change the bound; a wider window wakes as many waiters as its new room. A
        narrower one takes no place back: it fills again only as places are released."""
        if limit != self._limit:
            self._limit = limit
            if self._waiters:
                self._wake()

    def close(self) -> None:
        """No place is taken any more: every waiter (and every later ``acquire``) gets
        False. Places in use stay so until released."""
        self._closed = True
        waiters = self._waiters
        while waiters:
            self._wake_one(waiters.popleft())

    def _wake(self) -> None:
        """Wake the waiters first in line, as many as the room not yet promised."""
        room = self._limit - self._used - self._woken
        waiters = self._waiters
        while room >= 1 and waiters:
            waiter = waiters.popleft()
            if not waiter.future.done():  # else it is leaving: its time ran out, or
                self._wake_one(waiter)  # it was cancelled
                room -= 1

    def _wake_one(self, waiter: _Waiter) -> None:
        waiter.woken = True
        self._woken += 1
        if not waiter.future.done():
            waiter.future.set_result(None)

    def _leave_line(self, waiter: _Waiter) -> None:
        """A waiter gave up: out of the line; a wake-up it got meanwhile goes on to the
        next one."""
        if waiter.woken:
            self._woken -= 1
            if self._waiters:
                self._wake()
        else:  # it may be out of line already (passed over as leaving)
            with suppress(ValueError):
                self._waiters.remove(waiter)

    def _now(self) -> float:
        clock = self._clock
        return asyncio.get_running_loop().time() if clock is None else clock()

    def __repr__(self) -> str:
        return (f"<Window in_use={self._used} limit={self._limit} "
                f"waiting={len(self._waiters)}{' closed' if self._closed else ''}>")
