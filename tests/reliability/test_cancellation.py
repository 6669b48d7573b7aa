"""Cancellation inside any awaitable of the public API.

Cancelled while a request is in flight (held by a server ``delay``), in a retry sleep,
in ``wait()``, in ``rows()`` and in ``check_many``: ``CancelledError`` comes out
promptly, no task of the library is left pending, no connection stays checked out, and
the client serves the next call. ``asyncio.timeout()`` around a call behaves the same.
The moment to cancel is known from events (``sb.in_flight``, an Event set by the sleep),
never guessed with a sleep.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import Sleeper
from reliability_helpers import (
    OPS,
    Op,
    World,
    acquired,
    instant,
    library_tasks,
    prepare,
    sandbox,
)

import asyncsdk
from asyncsdk.testing import Sandbox

PROMPT = 0.5  # seconds: "promptly", with a wide margin for a loaded CI machine
HELD = 0.3  # server delay holding a request in flight while it is cancelled
SHORT_HELD = 0.12  # ... while an asyncio.timeout(0.05) runs out


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait, a loop turn at a time (bounded), until ``condition()`` holds."""
    for _ in range(5000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never happened: {what}")


async def cancel_and_check(task: asyncio.Task[Any], client: asyncsdk.Client) -> None:
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < PROMPT
    # Let the loop settle: an async generator abandoned by a cancelled consumer is closed
    # by the loop's finaliser, which takes a few turns (finaliser task, cancellation of
    # the checks in flight, their gather). Bounded turns, no wall-clock waiting.
    for _ in range(10):
        if not library_tasks():
            break
        await asyncio.sleep(0)
    assert library_tasks() == []
    assert acquired(client) == 0


async def test_cancel_with_request_in_flight_for_every_operation(tmp_path: Path) -> None:
    """One sandbox for all operations (the held handlers end together, fast)."""
    async with sandbox() as sb:
        world = prepare(sb, tmp_path)
        async with sb.client(clock=instant()) as client:
            for op in OPS:
                path = op.target(world)
                sb.faults.clear()
                sb.faults.delay(path, HELD, times=None, method=op.method)
                task = await start_held(op, client, world)
                assert not task.done(), f"{op.name} ended early: {task}"
                await cancel_and_check(task, client)
                # The held handler goes on at the server; the client serves the next call.
                sb.faults.clear()
                await ready(sb, op, world)
                await op.call(client, world, None)


async def start_held(op: Op, client: asyncsdk.Client, world: World) -> asyncio.Task[Any]:
    """Start ``op`` as a task and return once its request has reached the server."""
    path = op.target(world)
    before = world.count(op.method, path)
    task = asyncio.create_task(op.call(client, world, None))
    await until(lambda: world.count(op.method, path) > before or task.done(),
                f"{op.name} in flight")
    return task


async def ready(sb: Sandbox, op: Op, world: Any) -> None:
    """Undo what the cancelled call may have done that would spoil the next one."""
    if "delete" in op.tags:  # the delete may have happened: seed the object again
        kind = op.name.split(".")[0]
        key = {"contacts": "list_id", "leads": "lead_id", "customers": "customer_id",
               "products": "product_id", "invoices": "invoice_id"}[kind]
        store = {"contacts": sb.state.contact_lists, "leads": sb.state.leads,
                 "customers": sb.state.customers, "products": sb.state.products,
                 "invoices": sb.state.invoices}[kind]
        if getattr(world, key) not in store:
            seeded = {"contacts": lambda: sb.seed_contact_list("again"),
                      "leads": lambda: sb.seed_lead({"name": "x"}),
                      "customers": lambda: sb.seed_customer({"email": "c@example.com"}),
                      "products": lambda: sb.seed_product({"name": "p"}),
                      "invoices": lambda: sb.seed_invoice({"subject": "s"})}[kind]()
            setattr(world, key, seeded)


async def test_cancel_in_retry_sleep() -> None:
    clock = Sleeper()
    async with sandbox() as sb, sb.client(clock=clock) as client:
        clock.long = True
        sb.faults.status("/api/v1/contact/", 503)
        task = asyncio.create_task(client.contacts.list())
        await asyncio.wait_for(clock.sleeping.wait(), 5)
        await cancel_and_check(task, client)
        clock.long = False
        assert await client.contacts.list() == []


async def test_cancel_in_wait_between_polls() -> None:
    clock = Sleeper()
    async with sandbox(job_polls=1000) as sb, sb.client(clock=clock) as client:
        url = sb.host_file("email\nada@example.com\n")
        job = await client.validation.create_job(url)
        clock.long = True
        sleeping = clock.sleeping
        task = asyncio.create_task(job.wait())
        await asyncio.wait_for(sleeping.wait(), 5)
        await cancel_and_check(task, client)
        sb.finish_job(job.job_id)
        assert await job.status() is asyncsdk.JobStatus.SUCCESS


async def test_cancel_in_wait_during_a_poll() -> None:
    async with sandbox(job_polls=1000) as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=3))
        sb.faults.delay("/api/v1/jobs/status", HELD)
        task = asyncio.create_task(job.wait())
        await until(lambda: sb.in_flight >= 1, "poll in flight")
        await cancel_and_check(task, client)
        assert await job.wait() is asyncsdk.JobStatus.SUCCESS


async def test_cancel_rows_waiting_for_the_first_chunk() -> None:
    async with sandbox() as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=10))
        sb.faults.delay("/api/v1/jobs/download", HELD)

        async def consume() -> list[Any]:
            return [row async for row in job.rows()]

        task = asyncio.create_task(consume())
        await until(lambda: sb.in_flight >= 1, "download in flight")
        await cancel_and_check(task, client)
        assert len(await consume()) == 10


async def test_cancel_check_many_cancels_its_checks() -> None:
    async with sandbox() as sb, sb.client() as client:
        sb.faults.delay("/api/v1/single/check", HELD, times=None)
        emails = [f"user{i}@example.com" for i in range(50)]
        seen: list[Any] = []

        async def consume() -> None:
            async for outcome in client.validation.check_many(emails, concurrency=8):
                seen.append(outcome)

        task = asyncio.create_task(consume())
        await until(lambda: sb.in_flight >= 8, "8 checks in flight")
        await cancel_and_check(task, client)
        assert seen == []
        await until(lambda: sb.in_flight == 0, "held handlers done")
        sb.faults.clear()
        outcomes = [o async for o in client.validation.check_many(emails[:5])]
        assert all(o.ok for o in outcomes) and len(outcomes) == 5


async def test_cancel_check_many_consumer_between_outcomes() -> None:
    async with sandbox() as sb, sb.client() as client:
        emails = [f"user{i}@example.com" for i in range(200)]
        got_some = asyncio.Event()

        async def consume() -> None:
            n = 0
            async for _ in client.validation.check_many(emails, concurrency=20):
                n += 1
                if n == 10:
                    got_some.set()
                    await asyncio.Event().wait()  # parked here, holding the generator

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got_some.wait(), 5)
        await cancel_and_check(task, client)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is Python 3.11+")
@pytest.mark.parametrize("name", ["contacts.list", "contacts.create", "validation.check",
                                  "mail.send", "validation.create_job", "job.rows"])
async def test_asyncio_timeout_around_a_call(name: str, tmp_path: Path) -> None:
    op = next(op for op in OPS if op.name == name)
    async with sandbox() as sb:
        world = prepare(sb, tmp_path)
        async with sb.client() as client:
            sb.faults.delay(op.target(world), SHORT_HELD, method=op.method)
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await op.call(client, world, None)
            assert time.monotonic() - started < PROMPT
            for _ in range(3):
                await asyncio.sleep(0)
            assert library_tasks() == []
            assert acquired(client) == 0
            await until(lambda: sb.in_flight == 0, "held handler done")
            await op.call(client, world, None)
