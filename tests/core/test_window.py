"""``_core.window.Window``: the one window primitive (the pace's attempts in flight,
``check_many``'s slots).

Everything runs on the real loop, stepped by loop turns (``settle``): no test waits for
time. Deadlines are those of a test clock that only the test's park moves.
"""

from __future__ import annotations

import asyncio
import math

from asyncsdk._core import Window
from asyncsdk._core.pace import Pace


async def settle(turns: int = 5) -> None:
    """Let every task woken so far run (a few loop turns)."""
    for _ in range(turns):
        await asyncio.sleep(0)


class Waiters:
    """Tasks asking ``window`` for a place, each noting in ``got`` when it gets one."""

    def __init__(self, window: Window) -> None:
        self.window = window
        self.got: list[str] = []
        self.tasks: dict[str, asyncio.Task[bool]] = {}

    def ask(self, name: str, deadline: float = math.inf) -> asyncio.Task[bool]:
        async def one() -> bool:
            taken = await self.window.acquire(deadline)
            if taken:
                self.got.append(name)
            return taken

        task = self.tasks[name] = asyncio.ensure_future(one())
        return task


class TestClock:
    """A clock and a park for ``Window(park=, clock=)``: a wait ends when its waiter is
    woken, or when the test lets the time run out (``expire``), marking the waiter done
    the way the engine's park does (``SessionOwner.pause``)."""

    __test__ = False

    def __init__(self) -> None:
        self.now = 0.0
        self.parked: list[tuple[asyncio.Future[None], float]] = []

    def clock(self) -> float:
        return self.now

    async def park(self, waiter: asyncio.Future[None], seconds: float) -> None:
        self.parked.append((waiter, self.now + seconds))
        await waiter

    def expire(self, now: float) -> None:
        """The time is ``now``: every park whose time ran out ends."""
        self.now = now
        for waiter, until in self.parked:
            if until <= now and not waiter.done():
                waiter.set_result(None)


async def full_window(limit: int, *names: str) -> Waiters:
    """A window of ``limit`` places, all taken, and ``names`` waiting in that order."""
    window = Window(limit)
    for _ in range(limit):
        assert window.try_acquire()
    waiters = Waiters(window)
    for name in names:
        waiters.ask(name)
    await settle()
    assert window.waiting == len(names)
    return waiters


async def test_free_places_are_taken_at_once_then_waiters_line_up_first_come_first_served(
) -> None:
    window = Window(2)
    assert window.try_acquire() and await window.acquire()
    assert not window.try_acquire()
    waiters = Waiters(window)
    for name in "abc":
        waiters.ask(name)
    await settle()
    assert waiters.got == [] and window.waiting == 3
    for _ in range(3):
        window.release()
        await settle()
    assert waiters.got == ["a", "b", "c"]
    assert window.in_use == 2 and window.waiting == 0


async def test_a_release_wakes_exactly_one_waiter() -> None:
    waiters = await full_window(1, "a", "b", "c")
    waiters.window.release()
    await settle()
    assert waiters.got == ["a"]
    assert waiters.window.in_use == 1 and waiters.window.waiting == 2


async def test_a_wider_window_lets_in_as_many_as_its_new_room() -> None:
    waiters = await full_window(1, "a", "b", "c", "d")
    waiters.window.resize(3)
    await settle()
    assert waiters.got == ["a", "b"]
    assert waiters.window.in_use == 3 and waiters.window.waiting == 2


async def test_a_narrower_window_lets_nobody_in_until_it_has_room_again() -> None:
    waiters = await full_window(3, "a")
    window = waiters.window
    window.resize(1)
    assert not window.try_acquire()
    window.release()
    window.release()
    await settle()
    assert waiters.got == [] and window.in_use == 1  # still at the new bound
    window.release()
    await settle()
    assert waiters.got == ["a"] and window.in_use == 1


async def test_a_fractional_place_is_taken_when_free_but_wakes_nobody() -> None:
    """A pace's window is fractional: 2.5 lets a third attempt in when one asks, but a
    release wakes a waiter only for a whole place of room."""
    window = Window(2.5)
    assert window.try_acquire() and window.try_acquire() and window.try_acquire()
    waiters = Waiters(window)
    waiters.ask("a")
    await settle()
    window.release()  # 2 in use: half a place of room, nobody woken
    await settle()
    assert waiters.got == [] and window.waiting == 1
    assert window.try_acquire()  # ... but one who asks takes it
    window.release()
    window.release()  # 1 in use: a whole place
    await settle()
    assert waiters.got == ["a"] and window.in_use == 2


async def test_a_waiter_whose_deadline_passes_takes_no_place() -> None:
    time = TestClock()
    window = Window(1, time.park, time.clock)
    assert window.try_acquire()
    waiters = Waiters(window)
    late, later = waiters.ask("late", deadline=1.0), waiters.ask("later", deadline=5.0)
    await settle()
    assert [until for _, until in time.parked] == [1.0, 5.0]
    time.expire(2.0)  # marks the late one's future done, as the engine's park does
    await settle()
    assert late.done() and late.result() is False
    assert window.waiting == 1 and window.in_use == 1
    window.release()  # the place goes to the one still waiting, not the one gone
    await settle()
    assert waiters.got == ["later"] and later.result() is True
    window.release()
    assert window.in_use == 0 and window.try_acquire()


async def test_a_deadline_already_past_gives_up_at_once_but_a_free_place_is_taken() -> None:
    time = TestClock()
    time.now = 10.0
    window = Window(1, time.park, time.clock)
    assert await window.acquire(deadline=5.0)  # free: taken, whatever the deadline
    assert await window.acquire(deadline=5.0) is False
    assert time.parked == [] and window.waiting == 0 and window.in_use == 1


async def test_a_waiter_cancelled_in_line_takes_no_place() -> None:
    waiters = await full_window(1, "a", "b")
    waiters.tasks["a"].cancel()
    await settle()
    assert waiters.window.waiting == 1
    waiters.window.release()
    await settle()
    assert waiters.got == ["b"] and waiters.window.in_use == 1


async def test_a_waiter_woken_then_cancelled_passes_its_wake_up_on() -> None:
    """The classic loss: woken for a place, cancelled before it resumes. The place must
    reach the next waiter now, not at the next release."""
    waiters = await full_window(1, "a", "b")
    waiters.window.release()  # wakes a ...
    waiters.tasks["a"].cancel()  # ... which leaves before it runs
    await settle()
    assert waiters.tasks["a"].cancelled()
    assert waiters.got == ["b"] and waiters.window.in_use == 1
    assert waiters.window.waiting == 0


async def test_a_waiter_woken_then_timed_out_passes_its_wake_up_on() -> None:
    time = TestClock()
    window = Window(1, time.park, time.clock)
    assert window.try_acquire()
    waiters = Waiters(window)
    waiters.ask("a", deadline=1.0)
    waiters.ask("b")
    await settle()
    window.release()  # wakes a: its time has not run out yet, it takes the place
    time.expire(2.0)
    await settle()
    assert waiters.got == ["a"] and window.waiting == 1


async def test_a_woken_waiter_that_finds_its_place_taken_stays_first_in_line() -> None:
    waiters = await full_window(1, "a", "b")
    window = waiters.window
    window.release()  # wakes a; a newcomer takes the place before a runs
    assert window.try_acquire()
    await settle()
    assert waiters.got == [] and window.waiting == 2
    window.release()
    await settle()
    assert waiters.got == ["a"]


async def test_a_closed_window_sends_every_waiter_away_and_takes_no_place() -> None:
    waiters = await full_window(1, "a", "b")
    window = waiters.window
    window.close()
    await settle()
    assert [task.result() for task in waiters.tasks.values()] == [False, False]
    assert not window.try_acquire() and await window.acquire() is False
    assert window.in_use == 1 and window.waiting == 0 and window.closed
    window.release()
    assert window.in_use == 0


async def test_the_default_park_gives_up_at_its_deadline() -> None:
    """Without a park of its own the window waits on the loop, deadline on its time."""
    window = Window(1)
    assert window.try_acquire()
    loop = asyncio.get_running_loop()
    assert await window.acquire(deadline=loop.time()) is False
    assert window.waiting == 0 and window.in_use == 1


# --- the pace's window -----------------------------------------------------------------
async def pace_park(waiter: asyncio.Future[None] | None, seconds: float) -> None:
    """A park whose sleeps take no time (the test clock stands still)."""
    if waiter is None:
        await asyncio.sleep(0)
    else:
        await waiter


async def test_the_pace_passes_on_the_place_of_an_attempt_cancelled_once_woken() -> None:
    """Regression (the pace's own window before ``Window``): an attempt woken for a place
    and cancelled before it ran took the wake-up with it, and the next parked attempt
    waited for another release (forever, in a deadline-less wait)."""
    pace = Pace(lambda: 0.0, pace_park, lambda: 0.5)
    pace.finder.starting = False
    pace.finder.window = 1
    first = await pace.ready(True, math.inf)
    assert first is not None
    woken = asyncio.ensure_future(pace.ready(True, math.inf))
    waiting = asyncio.ensure_future(pace.ready(True, math.inf))
    await settle()
    assert not woken.done() and not waiting.done() and pace.in_flight == 1
    pace.done(first, None, None)  # no answer: the window stays as it is
    woken.cancel()
    await settle()
    try:
        assert waiting.done() and waiting.result() is not None
        assert pace.in_flight == 1
    finally:
        waiting.cancel()
