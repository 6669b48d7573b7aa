"""A worker told to stop (SIGTERM) sends nothing more, whatever its batches wait for.

Tasks run in this process against a real redis-server and the sandbox; the worker's
``stopping`` event (what ``serve`` sets on SIGTERM) is set by the test, at a moment it
chooses: while a batch waits out the fleet's pause, or while its checks wait for their
moment of the shared pace. Each failed on the code before its fix (the pause was slept
through, and the checks waiting for the pace were all sent after the signal; on a last
try, what the stop kept back was stored as "its batch ran out of tries", and what a
failure of its own kept back was stored as the stop's).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from arq import Retry
from arq.connections import ArqRedis
from fleet_tools import checks, until, worker

from asyncsdk.fleet.store import FleetPace, OutcomeStore, lease_key
from asyncsdk.fleet.worker import STOPPED, check_batch
from asyncsdk.testing import Sandbox

EMAILS = [f"stop{i}@example.com" for i in range(12)]
#: Far longer than any test waits: a run that waited it out would fail the test.
LONG = 600.0


class HeldPace:
    """The fleet's pace holding every check until ``release`` (a 429 wave, a slow
    service): it counts the checks waiting for their moment and those it let out."""

    held_until = 0.0

    def __init__(self, free: int) -> None:
        self.free = free  # let out at once, before the hold
        self.open = asyncio.Event()
        self.waiting = 0
        self.given = 0  # moments handed out
        self.reported = 0  # moments heard of again: used (a status) or unused (None)

    async def admit(self, deadline: float) -> object | None:
        if self.free:
            self.free -= 1
            self.given += 1
            return self
        self.waiting += 1
        try:
            await self.hold()
        finally:
            self.waiting -= 1
        self.given += 1
        return self

    async def hold(self) -> None:
        """Wait for this check's moment: once the pace opens."""
        await self.open.wait()

    def report(self, admission: object, status: int | None,
               retry_after: float | None) -> None:
        self.reported += 1

    def resends_free(self, status: int) -> bool:
        return status == 429

    async def settled(self) -> None:
        return None


def stoppable(ctx: dict[str, Any]) -> tuple[dict[str, Any], asyncio.Event]:
    stopping = asyncio.Event()
    return {**ctx, "stopping": stopping}, stopping


async def rest_of_the_batch_once(pool: ArqRedis, sb: Sandbox, client: Any) -> None:
    """Another worker runs the batch again: every input stored, each address sent once."""
    done = await OutcomeStore(pool, "r").count()
    assert await check_batch(worker(client, pool, 2, job_try=2), "r", 0, EMAILS) == {
        "stored": len(EMAILS) - done, "skipped": done}
    assert Counter(checks(sb)) == Counter(EMAILS)
    stored = await OutcomeStore(pool, "r").all()
    assert [stored[i]["email"] for i in range(len(EMAILS))] == EMAILS


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_a_stop_during_the_fleets_pause_ends_the_run_at_once(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch, concurrency: int,
) -> None:
    """The pause (the service's Retry-After, within the run's slice) was slept through:
    the worker drained for as long as it lasted, past its grace, and arq then cancelled
    the batch, its lease kept (the batch then waited for the lease to expire)."""
    await FleetPace(pool).pause(LONG)
    read = asyncio.Event()
    remaining = FleetPace.remaining

    async def reading(self: FleetPace) -> float:
        read.set()  # the run reads the pause: it is about to wait it out
        return await remaining(self)

    monkeypatch.setattr(FleetPace, "remaining", reading)
    async with Sandbox() as sb, sb.client() as client:
        ctx, stopping = stoppable(worker(client, pool, 1, concurrency=concurrency,
                                         slice_seconds=2 * LONG))
        run = asyncio.create_task(check_batch(ctx, "r", 0, EMAILS))
        await asyncio.wait_for(read.wait(), 30)
        stopping.set()
        with pytest.raises(Retry) as retry:
            await asyncio.wait_for(run, 30)
        assert sb.requests == []
        assert await OutcomeStore(pool, "r").count() == 0
        assert not await pool.exists(lease_key("r", 0))  # let go: the batch is free
        assert retry.value.defer_score and retry.value.defer_score > (LONG - 60) * 1000
        monkeypatch.undo()
        await pool.delete("fleet:pause")
        await rest_of_the_batch_once(pool, sb, client)


@pytest.mark.parametrize(("concurrency", "stored_first"), [(1, 0), (4, 0), (4, 3), (3, 7)])
async def test_checks_waiting_for_the_shared_pace_are_not_sent_after_a_stop(
    pool: ArqRedis, concurrency: int, stored_first: int,
) -> None:
    """``stored_first`` checks go out and are stored; then the pace holds the next
    ``concurrency`` ones and the worker is told to stop. None of those leaves once the
    pace lets them (they were all sent: up to ``concurrency`` a batch, paid for after
    the signal); a moment given as the stop came is handed back, and the run ends with
    Retry."""
    pace = HeldPace(free=stored_first)
    store = OutcomeStore(pool, "r")
    async with Sandbox() as sb, sb.client() as client:
        ctx, stopping = stoppable({**worker(client, pool, 1, concurrency=concurrency,
                                            slice_seconds=LONG), "pace": pace})
        run = asyncio.create_task(check_batch(ctx, "r", 0, EMAILS))

        async def held() -> bool:
            return pace.waiting == concurrency and await store.count() == stored_first

        await until(held, timeout=30, what="the first outcomes, then checks waiting")
        sent_before = len(checks(sb))
        stopping.set()
        pace.open.set()  # the pace would let them out now
        with pytest.raises(Retry) as retry:
            await asyncio.wait_for(run, 30)
        assert len(checks(sb)) == sent_before  # nothing sent after the stop
        assert not retry.value.defer_score  # the rest goes to another worker at once
        stored = await store.all()
        assert {o["email"] for o in stored.values()} == set(checks(sb))  # all stored
        assert not await pool.exists(lease_key("r", 0))
        # Every moment given was heard of again: the checks sent, and those given as
        # the stop came (handed back unused); a wait the stop ended took none.
        assert pace.given == pace.reported
        await rest_of_the_batch_once(pool, sb, client)


async def test_a_run_cancelled_mid_batch_lets_its_batch_go(pool: ArqRedis) -> None:
    """arq cancels a run (a second SIGTERM, a drain past its grace): its checks are
    cancelled with it, and the next run takes the batch at once. The lease stayed until
    it expired (the run's budget and more: 92 s by default), each run meanwhile sending
    nothing."""
    async with Sandbox() as sb, sb.client() as client:
        sb.faults.delay("/api/v1/single/check", LONG, times=None)
        run = asyncio.create_task(check_batch(
            worker(client, pool, 1, concurrency=2, slice_seconds=LONG), "r", 0, EMAILS))

        async def sent() -> bool:
            return len(checks(sb)) == 2

        await until(sent, timeout=30, what="the checks on the wire")
        assert await pool.exists(lease_key("r", 0))
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert not await pool.exists(lease_key("r", 0))
        sb.faults.clear()
        # The next run takes it at once (no Retry for a batch held), and ends it.
        assert await check_batch(worker(client, pool, 2, job_try=2), "r", 0, EMAILS) == {
            "stored": len(EMAILS), "skipped": 0}


@pytest.mark.parametrize(("concurrency", "stored_first"), [(1, 0), (4, 2)])
async def test_a_stop_on_the_last_try_stores_the_rest_as_kept_back_by_the_stop(
    pool: ArqRedis, concurrency: int, stored_first: int,
) -> None:
    """The batch's last try stores every input, those it did not send as not attempted,
    each with what kept it back. At a stop, those check_many refused (waiting for their
    moment of the pace) and those it then never asked for were stored as "its batch ran
    out of tries": the stop named nothing, so the run fell back on that text."""
    pace = HeldPace(free=stored_first)
    store = OutcomeStore(pool, "r")
    async with Sandbox() as sb, sb.client() as client:
        ctx, stopping = stoppable({**worker(client, pool, 1, concurrency=concurrency,
                                            max_tries=1, slice_seconds=LONG),
                                   "pace": pace})
        run = asyncio.create_task(check_batch(ctx, "r", 0, EMAILS))

        async def held() -> bool:
            return pace.waiting == concurrency and await store.count() == stored_first

        await until(held, timeout=30, what="the first outcomes, then checks waiting")
        stopping.set()
        pace.open.set()
        assert await asyncio.wait_for(run, 30) == {"stored": len(EMAILS), "skipped": 0}
        assert len(checks(sb)) == stored_first  # nothing sent after the stop
    stored = await store.all()
    assert [stored[i]["ok"] for i in range(stored_first)] == [True] * stored_first
    for i in range(stored_first, len(EMAILS)):
        assert stored[i]["error"] == f"NotAttempted: {STOPPED}"
        assert stored[i]["attempted"] is False


class NoMomentPace(HeldPace):
    """A pace that has no moment for a check within its budget (``admit`` gives None),
    and tells the worker to stop as it says so."""

    def __init__(self, stopping: asyncio.Event) -> None:
        super().__init__(free=0)
        self.stopping = stopping

    async def admit(self, deadline: float) -> object | None:
        self.stopping.set()
        return None


async def test_a_check_its_pace_held_past_its_budget_keeps_its_own_error_at_a_stop(
    pool: ArqRedis,
) -> None:
    """On the last try, a check that never left because its pace had no moment for it
    within its budget is stored with that error, though the worker stopped meanwhile:
    it was taken for one the stop kept back and stored as not attempted, with the
    stop's reason (or "its batch ran out of tries"). The inputs after it are the
    stop's."""
    async with Sandbox() as sb, sb.client() as client:
        ctx, stopping = stoppable(worker(client, pool, 1, concurrency=1, max_tries=1,
                                         slice_seconds=LONG))
        ctx["pace"] = NoMomentPace(stopping)
        assert await asyncio.wait_for(check_batch(ctx, "r", 0, EMAILS), 30) == {
            "stored": len(EMAILS), "skipped": 0}
        assert checks(sb) == []
    stored = await OutcomeStore(pool, "r").all()
    assert stored[0]["error"].startswith("APITimeoutError: ")
    assert "budget ran out" in stored[0]["error"]
    assert stored[0]["attempted"] is False
    for i in range(1, len(EMAILS)):
        assert stored[i]["error"] == f"NotAttempted: {STOPPED}"


class StopOnRefusal(HeldPace):
    """A pace that holds every check until the test lets them out one by one
    (``let_one``), and tells the worker to stop as it hears an answer of ``status``
    (the service's refusal of a wrong key)."""

    def __init__(self, stopping: asyncio.Event, status: int) -> None:
        super().__init__(free=0)
        self.stopping = stopping
        self.status = status
        self.turns = asyncio.Semaphore(0)

    async def hold(self) -> None:
        await self.turns.acquire()

    def report(self, admission: object, status: int | None,
               retry_after: float | None) -> None:
        super().report(admission, status, retry_after)
        if status == self.status:
            self.stopping.set()


async def test_checks_a_failed_run_refused_keep_its_failure_at_a_stop(
    pool: ArqRedis,
) -> None:
    """On the last try, a wrong key stops check_many, which refuses the checks waiting
    for their moment with that failure, and the worker is told to stop meanwhile: they
    were taken for checks the stop kept back (stored as not attempted with the stop's
    reason, or "its batch ran out of tries"). They keep their own failure."""
    async with Sandbox() as sb, sb.client(api_key="not-a-key") as client:
        ctx, stopping = stoppable(worker(client, pool, 1, concurrency=3, max_tries=1,
                                         slice_seconds=LONG))
        pace = ctx["pace"] = StopOnRefusal(stopping, 200)  # the service's refusal: a 200
        run = asyncio.create_task(check_batch(ctx, "r", 0, EMAILS))

        async def held() -> bool:
            return pace.waiting == 3

        await until(held, timeout=30, what="three checks waiting for the pace")
        pace.turns.release()  # the first goes out, and is refused
        assert await asyncio.wait_for(run, 30) == {"stored": len(EMAILS), "skipped": 0}
        assert len(checks(sb)) == 1
    stored = await OutcomeStore(pool, "r").all()
    assert stored[0]["error"].startswith("AuthenticationError: ")
    assert stored[0]["attempted"] is True
    for i in (1, 2):  # waiting for the pace as the key was refused
        assert stored[i]["error"].startswith(
            "AuthenticationError: validation.check: not attempted: the run stopped after")
        assert stored[i]["attempted"] is False
    for i in range(3, len(EMAILS)):  # never read: the stop came first
        assert stored[i]["error"] == f"NotAttempted: {STOPPED}"
