"""The run's gate (``check_many``'s send policy around the caller's ``pace``) records
nothing per check (most leave at once); at a stop it finds the run's tasks that the
pace makes wait and ends those waits at once, whatever awaitable ``admit`` gave (a
coroutine, a future, an object with ``__await__``): the cancellation reaches the
pace's wait, nothing is reported for it, and nothing is sent after the stop (issue 39).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest
from test_check_many_stop_sending import BOUND, answering
from validation_tools import LocalServer

import asyncsdk
from asyncsdk.pacing import Admission


class Later:
    """An awaitable that is not a coroutine: it waits for ``future``."""

    def __init__(self, future: asyncio.Future[object]) -> None:
        self.future = future

    def __await__(self) -> Generator[Any, None, object]:
        return (yield from self.future)


class FuturePace:
    """``admit`` is a plain method: its first ``open_slots`` calls get a future already
    done, the others one left pending (the service takes nothing more), each wrapped
    as ``shape`` says. The pending ones are kept, to see what became of them."""

    held_until = 0.0

    def __init__(self, open_slots: int, shape: str) -> None:
        self.open_slots = open_slots
        self.shape = shape
        self.given = 0
        self.pending: list[asyncio.Future[object]] = []
        self.reported: list[int | None] = []

    def admit(self, deadline: float) -> Any:
        future = asyncio.get_running_loop().create_future()
        if self.given < self.open_slots:
            future.set_result(object())
        else:
            self.pending.append(future)
        self.given += 1
        if self.shape == "future":
            return future
        if self.shape == "awaitable":
            return Later(future)

        async def admitted() -> object:
            return await future
        return admitted()

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        self.reported.append(status)

    def resends_free(self, status: int) -> bool:
        return False


@pytest.mark.parametrize("shape", ["future", "awaitable", "coroutine"])
@pytest.mark.parametrize(("inputs", "open_slots"), [(8, 3), (8, 0), (5, 5)])
async def test_a_stop_ends_the_waits_the_pace_began_and_sends_nothing_more(
        local: LocalServer, local_client: asyncsdk.Client, shape: str, inputs: int,
        open_slots: int) -> None:
    on_the_wire = asyncio.Event()
    seen = answering(local, on_the_wire)
    pace = FuturePace(open_slots, shape)
    emails = [f"u{i}@example.com" for i in range(inputs)]
    stop = asyncio.Event()
    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(
                emails, concurrency=inputs, pace=pace, stop=stop):
            received.append(outcome)

    run = asyncio.ensure_future(consume())
    while len(seen) < open_slots or pace.given < inputs:
        await asyncio.sleep(0)  # every check let out or waiting
    stop.set()
    on_the_wire.set()
    await asyncio.wait_for(run, BOUND)  # the waits ended at once: nothing hangs
    assert sorted(seen) == sorted(emails[:open_slots])  # nothing sent after the stop
    assert sorted(o.email for o in received) == sorted(emails)
    assert sorted(o.email for o in received if o.ok) == sorted(seen)
    assert all(o.attempted is False and "stop" in str(o.error)
               for o in received if not o.ok)
    # Each wait the pace began was handed the stop's cancellation; none was reported.
    assert len(pace.pending) == inputs - open_slots
    assert all(future.cancelled() for future in pace.pending)
    assert pace.reported == [200] * open_slots


async def test_a_wait_the_pace_ends_itself_lets_the_check_out(
        local: LocalServer, local_client: asyncsdk.Client) -> None:
    """A wait that ends (the future's result) sends the check with that admission."""
    seen = answering(local)
    pace = FuturePace(1, "awaitable")
    emails = ["a@example.com", "b@example.com"]
    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(
                emails, concurrency=2, pace=pace):
            received.append(outcome)

    run = asyncio.ensure_future(consume())
    while not pace.pending:
        await asyncio.sleep(0)
    pace.pending[0].set_result(object())
    await asyncio.wait_for(run, BOUND)
    assert sorted(seen) == emails and all(o.ok for o in received)
    assert pace.reported == [200, 200]
