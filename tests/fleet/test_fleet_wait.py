"""``submit --wait`` and ``status --wait`` when no worker runs: they say so.

A run whose workers all died (or were never started) waited in silence, forever: a bar
standing still on a terminal, nothing at all in a log. The wait now says, each time no
outcome came for a while, that no batch of the run is being checked though one is due,
and goes on waiting (a worker started later takes them).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterator

import pytest
from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix
from fleet_tools import until, worker

from asyncsdk.fleet.submit import DEFAULT_QUEUE, enqueue_batches, untaken, wait_for_run
from asyncsdk.fleet.worker import check_batch
from asyncsdk.testing import Sandbox

EMAILS = [f"wait{i}@example.com" for i in range(6)]
NOTICE = "run r: no worker is checking its batches, though they are due"


async def test_no_batch_is_untaken_while_one_is_being_checked(pool: ArqRedis) -> None:
    assert await enqueue_batches(pool, EMAILS, "r", 3) == 2
    assert await untaken(pool, "r", DEFAULT_QUEUE)  # queued, due, no worker at it
    await pool.set(in_progress_key_prefix + "check:r:3", b"1")
    assert not await untaken(pool, "r", DEFAULT_QUEUE)  # a worker is at it (slow)
    await pool.delete(in_progress_key_prefix + "check:r:3")
    await pool.zadd(DEFAULT_QUEUE, {"check:r:0": 1e15, "check:r:3": 1e15})
    assert not await untaken(pool, "r", DEFAULT_QUEUE)  # deferred: not due yet


@pytest.mark.parametrize("requeue", [None, lambda: iter(EMAILS)],
                         ids=["status --wait", "submit --wait"])
async def test_a_wait_says_when_no_worker_checks_the_run(
    pool: ArqRedis, requeue: Callable[[], Iterator[str]] | None,
) -> None:
    assert await enqueue_batches(pool, EMAILS, "r", 3) == 2
    async with Sandbox() as sb, sb.client() as client:
        await check_batch(worker(client, pool, 1), "r", 0, EMAILS[:3])  # then it died
        err = io.StringIO()
        waiting = asyncio.create_task(wait_for_run(
            pool, "r", poll=0.01, requeue=requeue, batch_size=3, requeue_after=0,
            stream=err))
        try:
            async def said() -> bool:
                return NOTICE in err.getvalue()

            await until(said, timeout=30, what="the wait saying no worker checks the run")
            assert not waiting.done()  # it goes on waiting
            await check_batch(worker(client, pool, 2), "r", 3, EMAILS[3:])  # one started
            assert await asyncio.wait_for(waiting, 30) == len(EMAILS)
        finally:
            waiting.cancel()
    assert "is one running on queue 'arq:queue'? ('asyncsdk fleet worker')" in err.getvalue()
