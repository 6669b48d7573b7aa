"""``VirtualClock`` as a user's test tool: tasks that sleep at once sleep together, in the
order of their deadlines, and a run on it ends as it would on a real clock."""

from __future__ import annotations

import asyncio

import pytest

from asyncsdk import InvalidInputError
from asyncsdk.testing import RateLimit, Sandbox, VirtualClock

#: Only a guard against a hang: every wait here is virtual.
HANG_GUARD = 60.0


async def test_tasks_sleeping_at_once_move_the_time_by_the_longest_wait() -> None:
    clock = VirtualClock()
    woke: list[tuple[float, float]] = []

    async def nap(seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((seconds, clock.now()))

    durations = [3.0, 1.0, 2.0, 1.0, 0.5, 2.5, 1.5, 1.0, 3.0, 0.25]
    await asyncio.wait_for(asyncio.gather(*(nap(s) for s in durations)), HANG_GUARD)
    assert clock.now() == max(durations)  # not their sum
    assert woke == sorted(woke)  # each woke at its own deadline, earliest first
    assert all(at == seconds for seconds, at in woke)
    assert clock.sleeps == durations  # every wait asked, in the order asked


async def test_one_task_sleeping_in_turn_adds_its_waits() -> None:
    clock = VirtualClock(start=10.0)
    for seconds in (1.0, 0.0, 2.5, -1.0, 0.5):
        await asyncio.wait_for(clock.sleep(seconds), HANG_GUARD)
    assert clock.now() == 14.0
    assert clock.slept == 3.0


async def test_a_cancelled_sleep_holds_no_other_back() -> None:
    clock = VirtualClock()
    long = asyncio.ensure_future(clock.sleep(100.0))
    await asyncio.sleep(0)
    long.cancel()
    await asyncio.wait_for(clock.sleep(1.0), HANG_GUARD)
    assert clock.now() == 1.0


def test_a_clock_left_sleeping_by_one_loop_serves_the_next() -> None:
    clock = VirtualClock()

    async def leave_some_sleeping() -> None:
        left = [asyncio.ensure_future(clock.sleep(s)) for s in (5.0, 10.0, 20.0)]
        await asyncio.sleep(0)  # they sleep; asyncio.run then ends them, not the clock
        assert not all(task.done() for task in left)

    async def sleep_once() -> float:
        before = clock.now()
        await asyncio.wait_for(clock.sleep(1.0), HANG_GUARD)
        return clock.now() - before

    asyncio.run(leave_some_sleeping())
    assert asyncio.run(sleep_once()) == 1.0


async def test_sleeps_alongside_real_io_end() -> None:
    async with Sandbox() as sb:
        sb.faults.delay("/api/v1/single/check", 0.05)  # a real wait on the server
        clock = VirtualClock()
        async with sb.client(clock=clock) as client:
            await asyncio.wait_for(asyncio.gather(
                client.validation.check("ann@example.com"), clock.sleep(1000.0)), HANG_GUARD)
    assert clock.now() == 1000.0


@pytest.mark.parametrize(("emails", "rate", "burst"), [(30, 5, 2), (200, 50, 5), (300, 300, 30)])
async def test_check_many_on_a_virtual_clock_answers_every_input(
        emails: int, rate: float, burst: int) -> None:
    """The README's use: the limit and the client on one virtual clock. Its workers
    waiting out a 429 at once used to move the time by the sum of their waits, so
    inputs ran out of budget (57 of 200 answered) where a real clock answers all."""
    async with Sandbox(rate_limit=RateLimit(rate=rate, burst=burst)) as sb:
        clock = VirtualClock(random=1.0)
        sb.limits.use_clock(clock.now)
        async with sb.client(clock=clock) as client:
            # A budget of 300 virtual seconds: the real time a loaded machine spends
            # between sleeps still moves the virtual time on (one input of 200 ran out
            # of the default 60 s in a CI run on 3.12); the old clock, summing every
            # worker's wait, spends that many within the first rounds of 429s.
            outcomes = [o async for o in client.validation.check_many(
                [f"u{i}@example.com" for i in range(emails)], request_timeout=300)]
    assert [o.error for o in outcomes if not o.ok] == []
    stats = sb.limits.stats(sb.api_key)
    assert stats.answered == emails
    assert stats.first is not None and stats.last is not None
    assert stats.answered <= burst + rate * (stats.last - stats.first) + 1e-6


async def test_a_job_timed_in_seconds_ends_on_the_clients_virtual_clock() -> None:
    """``job_seconds`` ran on the real clock: a client on a ``VirtualClock`` polled
    through its whole deadline in no real time and met ``JobTimeoutError``."""
    async with Sandbox(job_seconds=90.0, rate_limit=RateLimit(rate=1, burst=1)) as sb:
        clock = VirtualClock(start=1000.0)
        sb.use_clock(clock.now)
        assert sb.limits.clock == clock.now  # the service limit too
        async with sb.client(clock=clock) as client:
            job = await client.validation.create_job(sb.host_file(b"ann@example.com\n"))
            await asyncio.wait_for(job.wait(deadline=600), HANG_GUARD)
            assert [row.email async for row in job.rows()] == ["ann@example.com"]
    assert 1090.0 <= clock.now() < 1090.0 + 60  # at most one poll pause late


async def test_a_job_running_when_the_clock_changes_keeps_the_time_it_has_left() -> None:
    async with Sandbox(job_seconds=3600.0) as sb:
        async with sb.client() as client:
            job = await client.validation.create_job(sb.host_file(b"ann@example.com\n"))
        clock = VirtualClock()
        sb.use_clock(clock.now)
        async with sb.client(clock=clock) as client:
            assert await client.validation.job(job.job_id).status() == "processing"
            clock.advance(3590.0)
            assert await client.validation.job(job.job_id).status() == "processing"
            clock.advance(10.0)
            assert await client.validation.job(job.job_id).status() == "success"


def test_use_clock_refuses_what_is_no_clock() -> None:
    sb = Sandbox()
    with pytest.raises(InvalidInputError) as caught:
        sb.use_clock(VirtualClock())  # type: ignore[arg-type]  # the clock, not its now
    assert caught.value.field == "clock"
