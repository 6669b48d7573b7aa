"""The pace of bulk work (``_core.pace``) on a fake clock (its finder alone:
``test_rate.py``).

A token-bucket service and check_many-like workers run in virtual time
(``virtual_time.VirtualLoop``): seconds of traffic in milliseconds, the same every run.
What is checked: a 429 spreads the waiting workers out (never a wave); a service that
takes nothing holds every worker for the wait it asked; the rate and the number in
flight follow a limit that changes; no input fails for a 429 (each is sent again); the
estimate of the service's rate from refused sends is exact.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from virtual_time import virtual_loop

from asyncsdk._core.pace import Pace

R = 500.0  # the service's rate (checks a second) ...
BURST = 50  # ... its bucket ...
SERVICE = 0.02  # ... and its answer time (seconds)


async def park(waiter: asyncio.Future[None] | None, seconds: float) -> None:
    """What the transport gives a pace: a sleep, or a wait for ``waiter`` (or the time)."""
    loop = asyncio.get_running_loop()
    done = waiter if waiter is not None else loop.create_future()
    timer = loop.call_later(seconds, lambda: done.done() or done.set_result(None))
    try:
        await asyncio.shield(done) if waiter is not None else await done
    finally:
        timer.cancel()


def new_pace(seed: int = 1) -> Pace:
    loop = asyncio.get_running_loop()
    return Pace(loop.time, park, random.Random(seed).random)


@dataclass
class Service:
    """A token bucket: ``limit(t)`` tokens a second, ``BURST`` at most; 429 when empty."""

    limit: Callable[[float], float] = lambda t: R
    tokens: float = BURST
    at: float = 0.0
    log: list[tuple[float, bool]] = field(default_factory=list)

    def take(self, now: float) -> bool:
        self.tokens = min(BURST, self.tokens + (now - self.at) * self.limit(now))
        self.at = now
        taken = self.tokens >= 1
        self.tokens -= taken
        self.log.append((now, taken))
        return taken

    def answered_between(self, start: float, end: float) -> float:
        """Answered (not 429) a second between ``start`` and ``end``."""
        return sum(1 for t, ok in self.log if ok and start <= t < end) / (end - start)

    def refused_share(self, start: float, end: float) -> float:
        window = [ok for t, ok in self.log if start <= t < end]
        return 1 - sum(window) / len(window)


async def run_workers(pace: Pace, service: Service, inputs: int, workers: int = 64,
                      wait: float | None = 1.0, answer_time: float = SERVICE
                      ) -> dict[int, int]:
    """check_many's shape: ``workers`` tasks take the inputs; each sends its input when
    the pace lets it, and sends it again after the wait asked for while it gets 429s
    (the transport's bulk rule). Returns how many times each input was answered."""
    loop = asyncio.get_running_loop()
    source = iter(range(inputs))
    answered: dict[int, int] = {}
    rand = random.Random(7)

    async def worker() -> None:
        for item in source:
            limited = 0
            while True:
                ticket = await pace.ready(True, math.inf)
                assert ticket is not None
                await asyncio.sleep(answer_time / 2)
                taken = service.take(loop.time())
                await asyncio.sleep(answer_time / 2)
                pace.done(ticket, 200 if taken else 429, None if taken else wait)
                if taken:
                    answered[item] = answered.get(item, 0) + 1
                    break
                limited += 1
                await asyncio.sleep(wait or rand.random() * min(8.0, 0.5 * 2 ** limited))

    await asyncio.gather(*(worker() for _ in range(workers)))
    return answered


def test_a_429_spreads_the_waiting_workers_out() -> None:
    """Twenty workers waiting when a 429 comes leave one by one, about one interval of
    the rate apart (jittered): never two at once, never a wave."""
    sent: list[float] = []

    async def main() -> None:
        pace = new_pace()
        pace.finder.starting = False
        pace.finder.rate, pace.finder.window = 100.0, 64
        first = await pace.ready(True, math.inf)
        assert first is not None
        loop = asyncio.get_running_loop()

        async def worker() -> None:
            ticket = await pace.ready(True, math.inf)
            assert ticket is not None
            sent.append(loop.time())

        workers = [loop.create_task(worker()) for _ in range(20)]
        await asyncio.sleep(0)  # every worker has its moment reserved
        pace.done(first, 429, 1.0)  # the service took other sends lately: no hold
        await asyncio.gather(*workers)

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert len(sent) == 20 and min(gaps) > 0.004  # at least half an interval (10 ms)
    assert 0.1 < sent[-1] - sent[0] < 0.35  # 19 intervals of 5 to 15 ms


@pytest.mark.parametrize("paced", [True, False])
def test_a_service_that_takes_nothing_holds_every_worker(paced: bool) -> None:
    """A 429 when nothing sent lately was answered holds every worker (paced or not)
    for the wait asked; they then leave spread out."""
    sent: list[float] = []

    async def main() -> None:
        pace = new_pace()
        loop = asyncio.get_running_loop()
        first = await pace.ready(paced, math.inf)
        assert first is not None
        pace.done(first, 429, 2.0)

        async def worker() -> None:
            ticket = await pace.ready(paced, math.inf)
            assert ticket is not None
            sent.append(loop.time())

        await asyncio.gather(*(worker() for _ in range(10)))

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    assert min(sent) >= 2.0
    assert len(set(sent)) == 10  # one by one


def test_a_wait_that_cannot_end_within_the_budget_sends_nothing() -> None:
    async def main() -> None:
        pace = new_pace()
        first = await pace.ready(True, math.inf)
        assert first is not None
        pace.done(first, 429, 5.0)
        assert await pace.ready(True, 3.0) is None
        assert await pace.ready(False, 3.0) is None
        assert pace.in_flight == 0  # nothing reserved

    with virtual_loop() as loop:
        loop.run_until_complete(main())


def test_one_process_finds_the_rate_and_loses_no_input() -> None:
    service = Service()

    async def main() -> tuple[dict[int, int], Pace, float]:
        pace = new_pace()
        loop = asyncio.get_running_loop()
        answered = await run_workers(pace, service, 1200)
        return answered, pace, loop.time()

    with virtual_loop() as loop:
        answered, pace, took = loop.run_until_complete(main())
    assert sorted(answered) == list(range(1200)) and set(answered.values()) == {1}
    assert 1200 / took >= 0.9 * R  # near the service's rate, the burst helping
    assert service.refused_share(0, took) < 0.05
    assert 0.9 * R <= pace.finder.estimate <= 1.05 * R
    # In flight: about twice the rate times the answer time, not the 64 workers.
    assert pace.finder.window <= 2.5 * R * SERVICE


def test_the_rate_and_the_window_follow_a_limit_that_changes() -> None:
    """R, then R/3 for two seconds, then R again."""
    service = Service(limit=lambda t: R / 3 if 2.0 <= t < 4.0 else R)
    seen: dict[str, tuple[float, float]] = {}

    async def main() -> None:
        pace = new_pace()

        async def look(name: str, at: float) -> None:
            await asyncio.sleep(at)
            seen[name] = (pace.finder.rate, pace.finder.window)

        watchers = [asyncio.ensure_future(look(n, t))
                    for n, t in (("before", 1.9), ("low", 3.9), ("after", 5.4))]
        await run_workers(pace, service, 3000)
        await asyncio.gather(*watchers)

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    assert 0.9 * R <= seen["before"][0] <= 1.05 * R
    assert 0.8 * R / 3 <= seen["low"][0] <= 1.2 * R / 3
    assert seen["low"][1] < seen["before"][1]  # fewer in flight
    assert seen["after"][0] >= 0.9 * R
    assert service.refused_share(3.0, 4.0) < 0.1  # a second after the drop
    assert service.answered_between(4.5, 5.5) >= 0.9 * R  # back within a second


def test_the_window_follows_a_slow_service() -> None:
    """100 ms to answer: in flight ~ rate x answer time (50), more than a fast service
    needs, and the rate rests near R once found (no probe lands its 429s at the end)."""
    service = Service()

    async def main() -> tuple[dict[int, int], Pace, float]:
        pace = new_pace()
        loop = asyncio.get_running_loop()
        answered = await run_workers(pace, service, 1200, answer_time=0.1)
        return answered, pace, loop.time()

    with virtual_loop() as loop:
        answered, pace, took = loop.run_until_complete(main())
    assert sorted(answered) == list(range(1200)) and set(answered.values()) == {1}
    assert 1200 / took >= 0.9 * R
    assert pace.finder.window >= 0.9 * R * 0.1
    assert service.refused_share(0, took) < 0.03


def test_a_restored_limit_is_found_whole() -> None:
    """R/3, then R from t = 2: the estimate after the restore is R, not a mean with the
    time the client sent below the limit (its bucket filled and wasted refills)."""
    service = Service(limit=lambda t: R / 3 if t < 2.0 else R)
    seen: list[float] = []

    async def main() -> None:
        pace = new_pace()

        async def look() -> None:
            await asyncio.sleep(4.5)  # a probe found the new limit (after a rest)
            seen.append(pace.finder.estimate)

        watcher = asyncio.ensure_future(look())
        await run_workers(pace, service, 3000)
        await watcher

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    assert 0.9 * R <= seen[0] <= 1.05 * R
    assert service.answered_between(4.2, 5.2) >= 0.9 * R


def test_two_paces_on_one_key_share_it() -> None:
    """Two clients (processes) on one key, no shared state: together near the rate."""
    service = Service()

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        ends: list[float] = []

        async def one(seed: int) -> None:
            answered = await run_workers(new_pace(seed), service, 1100)
            assert set(answered.values()) == {1} and len(answered) == 1100
            ends.append(loop.time())

        await asyncio.gather(one(1), one(2))
        return ends

    with virtual_loop() as loop:
        ends = loop.run_until_complete(main())
    assert 2200 / max(ends) >= 0.85 * R
    assert service.refused_share(0, max(ends)) < 0.05


def test_without_retry_after_the_backoff_still_loses_nothing() -> None:
    service = Service()

    async def main() -> dict[int, int]:
        return await run_workers(new_pace(), service, 600, wait=None)

    with virtual_loop() as loop:
        answered = loop.run_until_complete(main())
    assert sorted(answered) == list(range(600)) and set(answered.values()) == {1}


# --- a check that gives up takes nothing (issue 38: a lockout of hours) --------------
HOLD = 3.0  # the service took nothing and asked for this wait (the pace's hold)


async def held_pace() -> Pace:
    """A pace whose first send was refused with a 429 while nothing was answered: it
    holds every send until ``HOLD``."""
    pace = new_pace()
    first = await pace.ready(True, math.inf)
    assert first is not None
    pace.done(first, 429, HOLD)
    assert pace.held_until == HOLD
    return pace


@pytest.mark.parametrize("callers", [10, 1000, 100_000])
def test_checks_that_give_up_during_a_hold_take_no_moment(callers: int) -> None:
    """``callers`` checks whose budget ends before the hold does give up (paced and
    unpaced, at several times during the hold): none takes a place in the window or a
    moment of the schedule, so a check made afterwards is sent at the hold's end, as if
    none had come (it was one interval later for each: 100,000 of them locked the
    client out for hours)."""
    async def main() -> float:
        pace = await held_pace()
        loop = asyncio.get_running_loop()
        for start in (0.0, 1.0, 2.0):
            await asyncio.sleep(start - loop.time())
            for i in range(callers // 3 + 1):
                assert await pace.ready(i % 10 != 0, loop.time() + 0.5) is None
        assert pace.in_flight == 0
        ticket = await pace.ready(True, math.inf)
        assert ticket is not None
        return loop.time()

    with virtual_loop() as loop:
        sent = loop.run_until_complete(main())
    assert sent == HOLD  # within HOLD + 1 s, whatever the number that gave up


@pytest.mark.parametrize("order", ["first to last", "last to first", "shuffled",
                                   "all but the last", "all but the first"])
def test_checks_cancelled_before_their_moment_give_it_back(order: str) -> None:
    """500 checks wait for their moments after a hold (20 a second: 25 s of moments);
    at 1 s their caller cancels them (in ``order``). The moments of the cancelled ones
    are free again: new checks are sent from the hold's end, not after 25 s of moments
    nobody uses; a check left waiting is sent at its own moment."""
    waiting = 500
    kept = {"all but the last": [waiting - 1], "all but the first": [0]}.get(order, [])

    async def main() -> tuple[list[float], list[float]]:
        pace = await held_pace()
        pace.finder.window = 2 * waiting  # every check reserves a moment
        loop = asyncio.get_running_loop()
        sent: dict[int, float] = {}

        async def check(i: int) -> None:
            ticket = await pace.ready(True, math.inf)
            assert ticket is not None
            sent[i] = loop.time()
            pace.done(ticket, None, None)  # no answer: the rate stays as it is

        tasks = [loop.create_task(check(i)) for i in range(waiting)]
        await asyncio.sleep(1.0)
        leaving = [i for i in range(waiting) if i not in kept]
        if order == "last to first":
            leaving.reverse()
        elif order == "shuffled":
            random.Random(3).shuffle(leaving)
        for i in leaving:
            tasks[i].cancel()
        await asyncio.gather(*(tasks[i] for i in leaving), return_exceptions=True)
        new: list[float] = []
        for _ in range(5):
            ticket = await pace.ready(True, math.inf)
            assert ticket is not None
            new.append(loop.time())
            pace.done(ticket, None, None)
        await asyncio.gather(*(tasks[i] for i in kept))
        assert pace.in_flight == 0 and sorted(sent) == kept
        return new, [sent[i] for i in kept]

    with virtual_loop() as loop:
        new, kept_sent = loop.run_until_complete(main())
    assert HOLD <= new[0] <= new[-1] <= HOLD + 1.0
    assert all(a < b for a, b in itertools.pairwise(new))  # one by one
    assert all(t >= HOLD for t in kept_sent)
