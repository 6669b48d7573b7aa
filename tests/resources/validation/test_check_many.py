"""validation.check_many against a real server on 127.0.0.1: delivery while the source
waits, the source's own error, and closing early (issue 11, "Bulk and files")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, suppress
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from validation_tools import LocalServer, other_tasks

import asyncsdk

CHECK_PATH = "/api/v1/single/check"
CREDIT = "The request was refused due to insufficent credit."
#: Bounds each test: code that deadlocks fails with TimeoutError instead of hanging.
BOUND = 10


def ok(email: str) -> dict[str, Any]:
    return {"email": email, "status": "success", "result": "Valid", "role": False}


def emails(n: int, prefix: str = "u") -> list[str]:
    return [f"{prefix}{i}@example.com" for i in range(n)]


def answering(local: LocalServer) -> list[str]:
    """Every check answered at once; returns the addresses seen, in order."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.query["email"])
        return web.json_response(ok(request.query["email"]))

    local.routes[CHECK_PATH] = handle
    return seen


# --- a slow source holds back no finished outcome --------------------------------------
@pytest.mark.parametrize("concurrency", [1, 2, 8])
async def test_each_outcome_arrives_while_the_async_source_waits_for_it(
    local: LocalServer, local_client: asyncsdk.Client, concurrency: int
) -> None:
    """A conversation: the source gives input i+1 only once outcome i was received (as a
    queue fed by the consumer does). Old code read the source before delivering: stuck."""
    answering(local)
    inputs = emails(6)
    received: list[str] = []
    answered = [asyncio.Event() for _ in inputs]

    async def source() -> AsyncIterator[str]:
        for i, email in enumerate(inputs):
            yield email
            await answered[i].wait()  # blocks until the test has that outcome

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(
                source(), concurrency=concurrency):
            assert outcome.ok
            received.append(outcome.email)
            answered[inputs.index(outcome.email)].set()

    await asyncio.wait_for(consume(), BOUND)
    assert received == inputs


async def test_a_queue_fed_source_gets_its_outcome_before_the_next_item(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    """The reproduction's shape: an async generator draining an asyncio.Queue that the
    producer fills only after seeing the previous outcome."""
    answering(local)
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    await queue.put("first@example.com")

    async def from_queue() -> AsyncIterator[str]:
        while (item := await queue.get()) is not None:
            yield item

    async def consume() -> list[str]:
        got = []
        async for outcome in local_client.validation.check_many(from_queue(), concurrency=4):
            got.append(outcome.email)
            await queue.put(None if len(got) == 3 else f"next{len(got)}@example.com")
        return got

    assert await asyncio.wait_for(consume(), BOUND) == [
        "first@example.com", "next1@example.com", "next2@example.com"]


# --- the source's own error: everything sent is delivered first ------------------------
def held_server(local: LocalServer, release: asyncio.Event) -> list[str]:
    """Every check waits for ``release`` before it is answered."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.query["email"])
        await release.wait()
        return web.json_response(ok(request.query["email"]))

    local.routes[CHECK_PATH] = handle
    return seen


class SourceBroke(Exception):
    pass


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("concurrency", [1, 3, 10, 16])
async def test_a_source_error_comes_after_the_outcome_of_every_input_sent(
    local: LocalServer, local_client: asyncsdk.Client, kind: str, concurrency: int
) -> None:
    """10 inputs sent (10 credits spent), then the source raises: 10 outcomes, then the
    error. Where all fit in flight the server answers only after the error: old code
    cancelled the checks in flight and delivered nothing (fewer at any concurrency)."""
    release = asyncio.Event()
    if concurrency < 10:
        release.set()  # answered at once: the last ones are still in flight at the error
    seen = held_server(local, release)
    inputs = [*emails(9), "not an address"]  # a refused input is "sent" too: an outcome

    def broken_sync() -> Iterator[str]:
        yield from inputs
        release.set()
        raise SourceBroke("the source broke")

    async def broken_async() -> AsyncIterator[str]:
        for email in inputs:
            yield email
        release.set()
        raise SourceBroke("the source broke")

    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        source = broken_sync() if kind == "sync" else broken_async()
        async for outcome in local_client.validation.check_many(
                source, concurrency=concurrency):
            received.append(outcome)

    with pytest.raises(SourceBroke, match="the source broke"):
        await asyncio.wait_for(consume(), BOUND)
    assert sorted(o.email for o in received) == sorted(inputs)
    if concurrency >= 10:  # all in flight at the error: every one answered
        assert sorted(seen) == sorted(inputs[:9])
    # Nothing sent after the error: an input still waiting for its moment then (the
    # pace's, on the client's clock) is not attempted, and was never sent.
    assert sorted(seen) == sorted(o.email for o in received if o.ok)
    assert all("not attempted" in str(o.error) for o in received
               if not o.ok and o.email != "not an address")


async def test_a_source_error_after_a_credit_stop_still_accounts_for_everything_read(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    inputs = emails(5)

    async def handle(request: web.Request) -> web.Response:
        email = request.query["email"]
        if email == inputs[0]:
            return web.json_response({"email": email, "status": "fail", "error": CREDIT})
        return web.json_response(ok(email))

    local.routes[CHECK_PATH] = handle

    def broken() -> Iterator[str]:
        yield from inputs
        raise SourceBroke("late")

    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(broken(), concurrency=1):
            received.append(outcome)

    with pytest.raises(SourceBroke):
        await asyncio.wait_for(consume(), BOUND)
    assert [o.email for o in received] == inputs
    assert isinstance(received[0].error, asyncsdk.InsufficientCreditError)
    assert [o.attempted for o in received] == [True, False, False, False, False]


# --- a credit failure while a worker waits on the source -------------------------------
async def test_an_input_read_after_the_run_stopped_is_not_sent_and_comes_last(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    inputs = emails(8)
    release = asyncio.Event()
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        email = request.query["email"]
        seen.append(email)
        if email == inputs[0]:
            return web.json_response({"email": email, "status": "fail", "error": CREDIT})
        await release.wait()
        return web.json_response(ok(email))

    local.routes[CHECK_PATH] = handle
    stop_seen = asyncio.Event()

    async def source() -> AsyncIterator[str]:
        yield inputs[0]
        yield inputs[1]
        await stop_seen.wait()  # a worker is reading here when the run stops
        for email in inputs[2:]:
            yield email

    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        async for outcome in local_client.validation.check_many(source(), concurrency=4):
            received.append(outcome)
            if outcome.email == inputs[0]:
                stop_seen.set()
                release.set()

    await asyncio.wait_for(consume(), BOUND)
    assert sorted(o.email for o in received) == sorted(inputs)
    assert seen == inputs[:2]
    assert [o.attempted for o in received] == [True, True] + [False] * 6
    assert received[0].email == inputs[0] and received[1].email == inputs[1]
    for o in received[2:]:
        assert isinstance(o.error, asyncsdk.InsufficientCreditError)
        assert o.error.__cause__ is received[0].error


# --- closing early ---------------------------------------------------------------------
async def test_closing_while_a_worker_waits_on_the_source_leaves_no_task(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    answering(local)
    before = other_tasks()
    never = asyncio.Event()

    async def source() -> AsyncIterator[str]:
        yield "a@example.com"
        await never.wait()
        yield "b@example.com"  # pragma: no cover - never reached

    async def consume() -> str:
        async with aclosing(local_client.validation.check_many(source(), concurrency=4)) as it:
            async for outcome in it:
                return outcome.email
        raise AssertionError("no outcome")

    assert await asyncio.wait_for(consume(), BOUND) == "a@example.com"
    assert other_tasks() - before == set()


async def test_every_answered_check_was_delivered_when_the_consumer_stops(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    """The server answers one check at a time, each only after the consumer received the
    previous outcome; the consumer stops after 5: exactly the 5 answered were delivered,
    the checks still in flight were cancelled, nothing is left running."""
    turn = asyncio.Condition()
    delivered = 0
    answered: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        async with turn:
            await turn.wait_for(lambda: len(answered) == delivered)
            answered.append(request.query["email"])
        return web.json_response(ok(request.query["email"]))

    local.routes[CHECK_PATH] = handle
    before = other_tasks()
    got: list[str] = []

    async def consume() -> None:
        nonlocal delivered
        async with aclosing(local_client.validation.check_many(emails(50), concurrency=8)) as it:
            async for outcome in it:
                got.append(outcome.email)
                if len(got) == 5:
                    break
                async with turn:
                    delivered += 1
                    turn.notify_all()

    await asyncio.wait_for(consume(), BOUND)
    assert got == answered
    assert other_tasks() - before == set()


async def test_ending_the_source_drains_the_checks_in_flight(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    """The graceful stop (for a consumer that wants every check it paid for): the source
    ends on the consumer's word; every check already sent still yields its outcome."""
    seen = answering(local)
    stop = False

    def source() -> Iterator[str]:
        for email in emails(1000):
            if stop:
                return
            yield email

    got: list[str] = []

    async def consume() -> None:
        nonlocal stop
        async for outcome in local_client.validation.check_many(source(), concurrency=8):
            got.append(outcome.email)
            stop = len(got) >= 20

    await asyncio.wait_for(consume(), BOUND)
    assert sorted(got) == sorted(seen)  # every check sent was delivered
    assert 20 <= len(got) <= 20 + 8


async def test_a_client_closed_under_the_run_stops_it_and_accounts_for_every_input() -> None:
    """Before: every input read after ``close()`` got a ``UsageError`` outcome with
    ``attempted=True`` (thousands the service never saw), and the run went on reading
    and failing one input at a time."""
    from asyncsdk.testing import Sandbox

    inputs = [f"p{i}@example.com" for i in range(300)]
    async with Sandbox() as sb:
        client = sb.client()
        outcomes = []
        async for outcome in client.validation.check_many(inputs, concurrency=4):
            outcomes.append(outcome)
            if len(outcomes) == 10:
                await client.close()
        sent = [r.query["email"] for r in sb.requests if r.path == "/api/v1/single/check"]
    assert sorted(o.email for o in outcomes) == sorted(inputs)
    attempted = {o.email: o for o in outcomes if o.attempted}
    assert set(sent) <= set(attempted)  # whatever reached the service says so
    for email in set(attempted) - set(sent):  # in flight at close(): may have been sent
        error = attempted[email].error
        assert isinstance(error, asyncsdk.APIConnectionError) and error.may_have_been_sent
    assert len(attempted) <= len(sent) + 4  # no more than the checks in flight
    skipped = [o for o in outcomes if not o.attempted]
    assert len(skipped) >= len(inputs) - 20
    assert all(isinstance(o.error, asyncsdk.UsageError) for o in skipped)
    assert any("not attempted" in str(o.error) for o in skipped)


async def test_a_client_without_a_username_stops_the_run_at_the_first_input() -> None:
    """Before: each input got ``ConfigurationError`` with ``attempted=True`` (a subclass
    of ``InvalidInputError``: it read as "not an address")."""
    async with asyncsdk.Client("k", base_url="http://127.0.0.1:9") as client:
        outcomes = [o async for o in client.validation.check_many(
            [f"p{i}@example.com" for i in range(50)], concurrency=3)]
    assert len(outcomes) == 50
    assert all(isinstance(o.error, asyncsdk.ConfigurationError) for o in outcomes)
    assert not any(o.attempted for o in outcomes)
    assert sum("not attempted" in str(o.error) for o in outcomes) >= 47


@pytest.mark.parametrize("concurrency", [1, 2, 4, 16])
async def test_a_worker_waits_one_turn_for_a_woken_consumer_and_the_bound_holds(
        concurrency: int) -> None:
    """A check that ends while the consumer is already woken does not park its worker
    (the consumer runs first and frees the slot): its next check starts a loop turn
    sooner, so the run takes fewer turns. The read-ahead bound stays exact: never more
    than ``concurrency`` inputs read and not yet received."""
    from asyncsdk.models.validation import CheckResult
    from asyncsdk.resources.validation.check_many import check_many

    result = CheckResult(email="a@b.io", status="success", result=asyncsdk.Verdict.VALID)
    read = received = worst = turns = 0

    async def check(email: str, *, validity_timeout: float,
                    request_timeout: float | None) -> CheckResult:
        await asyncio.sleep(0)  # answered one loop turn later
        return result

    def source(n: int) -> Iterator[str]:
        nonlocal read, worst
        for i in range(n):
            read += 1
            worst = max(worst, read - received)
            yield f"u{i}@b.io"

    async def count_turns() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    n = 960
    ticker = asyncio.get_running_loop().create_task(count_turns())
    try:
        async for outcome in check_many(check, source(n), concurrency=concurrency,
                                        adaptive=False, validity_timeout=30,
                                        request_timeout=None):
            assert outcome.ok
            received += 1
    finally:
        ticker.cancel()
        with suppress(asyncio.CancelledError):
            await ticker
    assert received == read == n
    assert worst <= concurrency
    # Two turns an input per worker (its check's, the consumer's); a park made three.
    assert turns <= 2.2 * n / concurrency + 10, turns


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_value_error_below_the_library_fails_its_input_not_the_run(
        local: LocalServer, concurrency: int) -> None:
    """Issue 38: a ``ValueError`` escaping the transport for one input (aiohttp or yarl
    refusing its request; here a middleware of the caller's session) ended the whole
    run. Now it is that input's ``InvalidInputError`` (the original its cause)."""
    seen = answering(local)
    refused = ValueError("refused below the library")

    async def refuse_one(request: aiohttp.ClientRequest,
                         handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        if request.url.query.get("email") == "bad@example.com":
            raise refused
        return await handler(request)

    inputs = ["a@example.com", "bad@example.com", "c@example.com", "d@example.com"]
    async with aiohttp.ClientSession(middlewares=(refuse_one,)) as session, \
            asyncsdk.Client("k", "u", base_url=local.url, session=session) as client:
        outcomes = {o.email: o async for o in client.validation.check_many(
            inputs, concurrency=concurrency)}
    assert sorted(outcomes) == sorted(inputs)
    bad = outcomes.pop("bad@example.com")
    assert not bad.ok and isinstance(bad.error, asyncsdk.InvalidInputError)
    assert bad.error.__cause__ is refused and "ValueError" in str(bad.error)
    assert all(o.ok for o in outcomes.values()) and sorted(seen) == sorted(outcomes)
