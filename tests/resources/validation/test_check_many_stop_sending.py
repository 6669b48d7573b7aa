"""``check_many``: once the run fails (its input raises, or a check raises something
unexpected), nothing more is sent, not even a check already taken that waits for its
moment of the pace; that input gets a not-attempted outcome, every check already sent
finishes and is delivered, then the error is raised (README "Email validation"; the
command line's first Ctrl-C relies on it: "stops sending").

The pace is the caller's (``pace=``, the public seam): it lets ``open_slots`` checks out
at once and holds the others until ``release`` is set, which the source does just
before it raises: old code then sent the held checks after the error (and paid for
them).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from aiohttp import web
from validation_tools import LocalServer

import asyncsdk
from asyncsdk.pacing import Admission

CHECK_PATH = "/api/v1/single/check"
BOUND = 10  # a deadlock fails the test instead of hanging it


class SourceBroke(Exception):
    pass


class HoldingPace:
    """Lets the first ``open_slots`` checks out at once, the others once ``release`` is
    set; counts what it gave and what came back."""

    held_until = 0.0

    def __init__(self, open_slots: int) -> None:
        self.open_slots = open_slots
        self.release = asyncio.Event()
        self.given = 0
        self.reported: list[int | None] = []

    async def admit(self, deadline: float) -> Admission | None:
        if self.given >= self.open_slots:
            await self.release.wait()
        self.given += 1
        return object()

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        self.reported.append(status)

    def resends_free(self, status: int) -> bool:
        return status == 429


def answering(local: LocalServer, hold: asyncio.Event | None = None) -> list[str]:
    """The server: answers each check (once ``hold`` is set); the addresses seen."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        email = request.query["email"]
        seen.append(email)
        if hold is not None:
            await hold.wait()
        return web.json_response({"email": email, "status": "success",
                                  "result": "Valid", "role": False})

    local.routes[CHECK_PATH] = handle
    return seen


@pytest.mark.parametrize("released", [True, False])
@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("inputs", "open_slots"), [(6, 2), (6, 0), (12, 5), (3, 1)])
async def test_a_source_error_stops_the_checks_waiting_for_the_pace(
        local: LocalServer, local_client: asyncsdk.Client, kind: str, inputs: int,
        open_slots: int, released: bool) -> None:
    """``released``: the pace lets the held checks go as the source raises (old code
    sent them); else it never does (a service that takes nothing: old code waited for
    it, here past ``BOUND``, instead of ending the wait). The checks sent are on the
    wire when the source raises (the server answers them after): they finish."""
    on_the_wire = asyncio.Event()
    seen = answering(local, on_the_wire)
    pace = HoldingPace(open_slots)
    emails = [f"u{i}@example.com" for i in range(inputs)]

    def release() -> None:
        on_the_wire.set()
        if released:
            pace.release.set()  # the held checks may go now: only a stopped run keeps them

    def broken_sync() -> Iterator[str]:
        yield from emails
        release()
        raise SourceBroke("the source broke")

    async def broken_async() -> AsyncIterator[str]:
        for email in emails:
            yield email
        release()
        raise SourceBroke("the source broke")

    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        source = broken_sync() if kind == "sync" else broken_async()
        async for outcome in local_client.validation.check_many(
                source, concurrency=inputs + 1, pace=pace):  # one reads the error
            received.append(outcome)

    with pytest.raises(SourceBroke, match="the source broke"):
        await asyncio.wait_for(consume(), BOUND)
    sent = emails[:open_slots]
    assert sorted(seen) == sorted(sent)  # nothing sent after the error
    # Every input has exactly one outcome: the sent ones answered, the rest not attempted.
    assert sorted(o.email for o in received) == sorted(emails)
    assert sorted(o.email for o in received if o.ok) == sorted(sent)
    held = [o for o in received if not o.ok]
    assert all(o.attempted is False for o in held)
    assert all(isinstance(o.error, asyncsdk.SDKError) for o in held)
    assert all("not attempted" in str(o.error) for o in held)
    assert all(isinstance(o.error and o.error.__cause__ and o.error.__cause__.__cause__,
                          SourceBroke) for o in held)
    # The answered ones come first: the held ones are accounted for after them.
    assert [o.ok for o in received] == [True] * len(sent) + [False] * len(held)
    # A moment the pace gave after the stop is handed back unused (no answer); a wait
    # cut short took none.
    assert pace.reported.count(200) == len(sent)
    assert pace.reported.count(None) == pace.given - len(sent)
    assert len(pace.reported) == pace.given


async def test_a_source_that_ends_still_sends_the_checks_waiting_for_the_pace(
        local: LocalServer, local_client: asyncsdk.Client) -> None:
    """The end of the input is no stop: a check taken and waiting is sent."""
    seen = answering(local)
    pace = HoldingPace(1)
    emails = [f"u{i}@example.com" for i in range(4)]

    def source() -> Iterator[str]:
        yield from emails
        pace.release.set()

    received: list[Any] = []

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(
                source(), concurrency=4, pace=pace):
            received.append(outcome)

    await asyncio.wait_for(consume(), BOUND)
    assert sorted(seen) == sorted(emails)
    assert all(o.ok for o in received) and len(received) == 4


async def test_a_refused_key_ends_the_waits_for_a_pace_that_lets_nothing_out(
        local: LocalServer, local_client: asyncsdk.Client) -> None:
    """The first check is refused (a wrong key); the others wait for a pace that lets
    nothing more out (a service that takes nothing): they end at once, not attempted,
    instead of waiting for their budget (old code: past ``BOUND``)."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.query["email"])
        return web.json_response({"status": "fail", "error": "User authentication "
                                  "failed. Wrong API Key or username."})

    local.routes[CHECK_PATH] = handle
    emails = [f"u{i}@example.com" for i in range(5)]
    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(
                emails, concurrency=3, pace=HoldingPace(1)):
            received.append(outcome)

    await asyncio.wait_for(consume(), BOUND)
    assert seen == emails[:1]
    assert sorted(o.email for o in received) == sorted(emails)
    assert all(isinstance(o.error, asyncsdk.AuthenticationError) for o in received)
    assert [o.attempted for o in received] == [True] + [False] * 4


async def test_a_consumer_cancelled_as_the_run_stops_is_still_cancelled(
        local: LocalServer, local_client: asyncsdk.Client) -> None:
    """The run stops (its source raises) and the consumer is cancelled in the same
    turn: ending the workers' waits takes nothing of the consumer's cancellation, and
    no task is left behind."""
    answering(local)
    pace = HoldingPace(0)
    started = asyncio.Event()

    def broken() -> Iterator[str]:
        yield "a@example.com"
        yield "b@example.com"
        started.set()
        raise SourceBroke("late")

    async def consume() -> None:
        async for _ in local_client.validation.check_many(broken(), concurrency=3,
                                                          pace=pace):
            pass

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, BOUND)
    assert task.cancelled()
