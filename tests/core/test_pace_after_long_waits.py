"""The pace after a long wait (the defect class "a pace that can lock a client out after
a long hold"): whatever the wait was, once the service takes again the schedule is not
the one laid while it did not.

- a first answer that took minutes (a slow service, a machine suspended with the first
  checks in flight) breaks nothing: the start-up's growth overflowed a float there;
- the moments laid at the crawl such an answer or a blackout left are not kept once an
  answer shows the service takes more: the long waits for them end, and the schedule is
  laid again from then (before, the checks holding a moment waited it out, 100 s apart
  after an hour's suspend).
"""

from __future__ import annotations

import asyncio
import math
import random

import pytest
from test_pace import park
from test_rate_dark_and_cap import R, Service, back_after, run
from virtual_time import virtual_loop

from asyncsdk._core.pace import Pace
from asyncsdk.pacing import RateFinder
from asyncsdk.testing import RateLimit


@pytest.mark.parametrize("elapsed", [90.0, 3600.0, 1e9])
def test_a_first_answer_minutes_late_breaks_nothing(elapsed: float) -> None:
    """The start-up's first answer, ``elapsed`` after its send: the window grows as
    after any long round trip (at most doubling), the rate stays a finite, positive
    number (before: ``OverflowError`` in ``answered``, from ``1.5 ** (rtt / 0.05)``)."""
    finder = RateFinder()
    start = finder.window
    send = finder.sent(0.0)
    finder.answered(send, 0.0, elapsed)
    assert start < finder.window <= 2 * start
    assert 0.0 < finder.rate < math.inf


@pytest.mark.parametrize("jump", [60.0, 3600.0])
def test_a_clock_that_jumps_with_checks_in_flight_does_not_lock_the_pace(
        jump: float) -> None:
    """The pace's clock jumps ``jump`` seconds forward while the start-up's first checks
    are in flight (a suspended machine): their answers come ``jump`` late, and the rate
    they time is a crawl (two windows a ``jump``). The first check sent after them is
    answered in 20 ms: the pace is back at once, and 300 checks take well under a second
    of the service's time after the jump (before: 60 s -> 35 s, the checks holding
    a moment laid at the crawl waiting it out; 3600 s -> ``OverflowError``)."""
    offset = [0.0]
    answered: list[float] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def clock() -> float:
            return loop.time() + offset[0]

        pace = Pace(clock, park, random.Random(1).random)
        inputs = iter(range(300))

        async def worker() -> None:
            for _ in inputs:
                ticket = await pace.ready(True, math.inf)
                assert ticket is not None
                await asyncio.sleep(0.02)
                if not offset[0]:
                    offset[0] = jump  # the machine sleeps with these in flight
                answered.append(clock())
                pace.done(ticket, 200, None)

        await asyncio.gather(*(worker() for _ in range(64)))

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    assert len(answered) == 300
    assert max(answered) - jump < 1.0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_blackout_before_any_estimate_leaves_no_crawl_behind(seed: int) -> None:
    """The service takes nothing from the first check on (429, ``Retry-After: 1``) for
    5 s, then R. The pace crawled meanwhile (the start-up's blind cut, then the dark:
    nothing to resume at), and its first answer after the blackout restarts it; the
    moments laid at the crawl are dropped then: 0.9 R within 0.4 s of the service
    taking again (before: 0.71-0.83 s, the sends after the first answer kept 0.1 s
    apart by the crawl's schedule)."""
    restore = 5.0
    out: dict[str, float] = {}

    async def main() -> None:
        service = Service(RateLimit(0.0, 50, 1.0), ((restore, RateLimit(R, 50, 1.0)),))
        pace = Pace(asyncio.get_running_loop().time, park, random.Random(seed).random)
        await run(pace, service, 2000)
        out["back"] = back_after(service.answered, restore)

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    assert out["back"] <= 0.4, out


def test_long_waits_cancelled_or_woken_leave_nothing_behind() -> None:
    """Checks in long waits for their moments (behind a 3 s hold): those cancelled
    leave no task of the pace's behind; an answer that speeds the rate up during the
    hold wakes the others, and none is sent before the hold ends."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        pace = Pace(loop.time, park, random.Random(1).random)
        first = await pace.ready(True, math.inf)
        early = await pace.ready(True, math.inf)
        assert first is not None and early is not None
        pace.done(first, 429, 3.0)  # nothing answered yet: a hold of 3 s
        assert pace.held_until == 3.0
        pace.finder.window = 100
        sent: list[float] = []

        async def check() -> None:
            ticket = await pace.ready(True, math.inf)
            assert ticket is not None
            sent.append(loop.time())
            pace.done(ticket, 200, None)

        tasks = [loop.create_task(check()) for _ in range(20)]
        await asyncio.sleep(1.0)
        for task in tasks[10:]:
            task.cancel()
        await asyncio.gather(*tasks[10:], return_exceptions=True)
        # Those left: each with the one task of its long wait, the cancelled none.
        assert len(asyncio.all_tasks() - {asyncio.current_task(), *tasks[:10]}) == 10
        pace.done(early, 200, None)  # the first answer: the rate it times is far higher
        await asyncio.gather(*tasks[:10])
        assert len(sent) == 10 and min(sent) >= 3.0
        assert asyncio.all_tasks() == {asyncio.current_task()}

    with virtual_loop() as loop:
        loop.run_until_complete(main())
