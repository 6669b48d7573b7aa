"""validation.check and validation.check_many."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any

import pytest
from aiohttp import web
from aioresponses import aioresponses
from helpers import API_KEY, USERNAME
from validation_tools import LocalServer, other_tasks, url_of

import asyncsdk

CHECK = url_of("/api/v1/single/check")
CHECK_PATH = "/api/v1/single/check"

AUTH = "User authentication failed. Wrong API Key or username."
CREDIT = "The request was refused due to insufficent credit."


def ok(email: str, role: Any = False) -> dict[str, Any]:
    return {"email": email, "status": "success", "result": "Valid", "role": role}


# --- check ----------------------------------------------------------------------------
@pytest.mark.parametrize(("wire", "expected"), [
    (True, True), (False, False), ("True", True), ("False", False), (1, True), (0, False),
    ("true", True), ("0", False)])
async def test_role_arrives_in_every_documented_form(
    client: asyncsdk.Client, mocked: aioresponses, wire: Any, expected: bool
) -> None:
    mocked.get(CHECK, payload=ok("a@b.com", wire))
    result = await client.validation.check("a@b.com")
    assert result.role is expected
    assert result.result is asyncsdk.Verdict.VALID


async def test_check_sends_validity_timeout_and_credentials(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CHECK, payload=ok("a@b.com"))
    await client.validation.check("a@b.com", validity_timeout=7)
    (key, _), = mocked.requests.items()
    query = key[1].query
    assert query["email"] == "a@b.com"
    assert query["timeout"] == "7"
    # What a mock sees carries no credential: the library's middleware adds them last,
    # on the wire (tests/core/test_middleware.py).
    assert "api" not in query and "username" not in query


@pytest.mark.parametrize(("text", "cls"), [
    ("Required parameter missing or invalid.", asyncsdk.InvalidRequestError),
    (AUTH, asyncsdk.AuthenticationError),
    ("Email Format is not correct.", asyncsdk.InvalidEmailError),
    (CREDIT, asyncsdk.InsufficientCreditError),
    ("Something new happened", asyncsdk.APIError),
])
async def test_every_error_text_of_single_check(
    client: asyncsdk.Client, mocked: aioresponses, text: str, cls: type[Exception]
) -> None:
    mocked.get(CHECK, payload={"email": "a@b.com", "status": "fail", "error": text})
    with pytest.raises(cls) as info:
        await client.validation.check("a@b.com")
    assert type(info.value) is cls
    assert info.value.error_text == text  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad", ["", "nobody", "a b@c.com", "a@b.com\n", None, 5])
async def test_check_refuses_a_non_address_without_sending(
    client: asyncsdk.Client, mocked: aioresponses, bad: Any
) -> None:
    with pytest.raises(asyncsdk.InvalidInputError):
        await client.validation.check(bad)
    assert not mocked.requests


# --- check_many: a real server counting requests in flight -----------------------------
class Counter:
    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.seen: list[str] = []


def checking_server(local: LocalServer, answers: dict[str, dict[str, Any]] | None = None,
                    seed: int = 0, hold_until: int = 0) -> Counter:
    """Answers checks on ``local``, counting them; ``hold_until``: no answer at all until
    that many are in flight at once (whether the client reaches its cap, whatever the
    machine's load)."""
    counter = Counter()
    rng = random.Random(seed)
    reached = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        email = request.query["email"]
        counter.seen.append(email)
        counter.now += 1
        counter.peak = max(counter.peak, counter.now)
        if counter.now >= hold_until:
            reached.set()
        try:
            # bounded: a client that never reaches the number fails the test, not hangs
            # (asyncio.TimeoutError: wait_for's on Python 3.10, TimeoutError's alias later)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(reached.wait(), 10)
            answer = (answers or {}).get(email)
            if answer is None:  # failures answer at once, the others take a moment
                await asyncio.sleep(0.0005 + rng.random() * 0.003)
            answer = answer or ok(email)
            return web.json_response(answer)
        finally:
            counter.now -= 1

    local.routes[CHECK_PATH] = handle
    return counter


def emails(n: int, prefix: str = "u") -> list[str]:
    return [f"{prefix}{i}@example.com" for i in range(n)]


async def test_check_many_one_outcome_per_input_and_cap_with_failures_mixed_in(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    inputs = emails(120)
    inputs[5] = "not-an-address"
    inputs[50] = "also bad@x.com"
    answers = {e: {"email": e, "status": "fail", "error": "Email Format is not correct."}
               for e in inputs[10::7]}
    counter = checking_server(local, answers, hold_until=7)
    outcomes = [o async for o in local_client.validation.check_many(inputs, concurrency=7)]
    assert sorted(o.email for o in outcomes) == sorted(inputs)  # exactly one each
    assert counter.peak == 7  # reached, never exceeded
    by_email = {o.email: o for o in outcomes}
    for bad in ("not-an-address", "also bad@x.com"):
        assert isinstance(by_email[bad].error, asyncsdk.InvalidInputError)
        assert bad not in counter.seen  # never sent
    for e in answers:
        assert isinstance(by_email[e].error, asyncsdk.InvalidEmailError)
    good = [o for o in outcomes if o.ok]
    assert len(good) == 118 - len(answers)
    assert all(o.attempted for o in outcomes)
    assert len(counter.seen) == 118


async def test_check_many_accepts_async_iterables_and_reads_lazily(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    counter = checking_server(local)
    pulled = 0

    async def source() -> AsyncIterator[str]:
        nonlocal pulled
        for e in emails(40):
            pulled += 1
            # never more than the in-flight limit ahead of the answers received
            assert pulled - len(outcomes) <= 4 + 1
            yield e

    outcomes: list[asyncsdk.CheckOutcome] = []
    async for outcome in local_client.validation.check_many(source(), concurrency=4):
        outcomes.append(outcome)
    assert len(outcomes) == 40
    assert counter.peak <= 4


async def test_check_many_never_materialises_an_endless_input(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    checking_server(local)
    pulled = 0

    def endless() -> Iterator[str]:
        nonlocal pulled
        while True:
            pulled += 1
            yield f"x{pulled}@example.com"

    got = 0
    async with aclosing(local_client.validation.check_many(endless(), concurrency=5)) as it:
        async for _ in it:
            got += 1
            if got == 30:
                break
    assert pulled <= 30 + 5


async def test_credit_failure_stops_sending_and_accounts_for_every_input(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    inputs = emails(60)
    answers = {inputs[10]: {"email": inputs[10], "status": "fail", "error": CREDIT}}
    counter = checking_server(local, answers)
    outcomes = [o async for o in local_client.validation.check_many(inputs, concurrency=3)]
    assert sorted(o.email for o in outcomes) == sorted(inputs)
    failure = next(i for i, o in enumerate(outcomes) if o.email == inputs[10])
    attempted = [o for o in outcomes if o.attempted]
    assert len(attempted) == len(counter.seen)  # an outcome for each request, no more
    # after the failure nothing new was sent: only the (at most 2) others in flight ended
    assert sum(o.attempted for o in outcomes[failure + 1:]) <= 2
    skipped = [o for o in outcomes if not o.attempted]
    assert outcomes[-len(skipped):] == skipped
    assert len(skipped) >= 30
    for o in skipped:
        assert isinstance(o.error, asyncsdk.InsufficientCreditError)
        assert "not attempted" in str(o.error)
        assert o.error.__cause__ is outcomes[failure].error
        assert o.email not in counter.seen
    assert all(o.ok for o in attempted if o.email != inputs[10])


async def test_authentication_failure_stops_early_too(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    answers = {e: {"status": "fail", "error": AUTH} for e in emails(20)}
    counter = checking_server(local, answers)
    outcomes = [o async for o in local_client.validation.check_many(emails(20),
                                                                      concurrency=2)]
    assert len(outcomes) == 20
    assert len(counter.seen) <= 2
    assert all(isinstance(o.error, asyncsdk.AuthenticationError) for o in outcomes)
    assert sum(not o.attempted for o in outcomes) == 20 - len(counter.seen)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4", None])
def test_concurrency_is_checked_at_once(client: asyncsdk.Client, bad: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match="concurrency"):
        client.validation.check_many(["a@b.com"], concurrency=bad)


async def test_check_many_refuses_an_extra_email_that_would_replace_every_input(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    """``extra_query={"email": ...}`` replaced each check's own field: every input's
    outcome was then the answer for that one address, reported as the input's."""
    mocked.get(re.compile(r".*"), payload=ok("x@example.com"), repeat=True)
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        client.validation.check_many(["a@example.com", "b@example.com"],
                                     extra_query={"email": "x@example.com"})
    assert info.value.field == "extra_query" and "'email'" in str(info.value)
    assert mocked.requests == {}
    # Another field is added as before, beside each input's own address.
    outcomes = [o async for o in client.validation.check_many(
        ["a@example.com"], extra_query={"source": "signup"})]
    assert [o.ok for o in outcomes] == [True]
    [(_, sent_url)] = mocked.requests
    assert sent_url.query["email"] == "a@example.com" and sent_url.query["source"] == "signup"


class Text(str):
    """A str subclass: text all the same."""


@pytest.mark.parametrize("single", [
    "a@b.com", Text("a@b.com"), b"a@b.com", bytearray(b"a@b.com"), memoryview(b"a@b.com")])
def test_a_single_string_is_not_an_iterable_of_addresses(
    client: asyncsdk.Client, single: Any
) -> None:
    """One address, as text or as bytes of any kind, is refused at once: iterated, it
    was one check per character (or per byte, as ints)."""
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        client.validation.check_many(single)
    assert info.value.field == "emails"
    assert str(info.value).startswith("emails: expected an iterable of addresses")


async def test_breaking_out_cancels_in_flight_work_and_leaves_no_task(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    started = asyncio.Event()
    hold = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        if request.query["email"] != "fast@example.com":
            started.set()
            await hold.wait()
        return web.json_response(ok(request.query["email"]))

    local.routes[CHECK_PATH] = slow
    before = other_tasks()
    inputs = ["fast@example.com", *emails(10)]

    async def consume() -> None:
        async with aclosing(local_client.validation.check_many(inputs, concurrency=4)) as it:
            async for outcome in it:
                assert outcome.email == "fast@example.com"
                await started.wait()
                assert len(other_tasks() - before) >= 3  # the checks in flight
                break

    await asyncio.wait_for(consume(), 5)  # closing must not wait for the server
    assert other_tasks() - before == set()
    hold.set()


async def test_cancelling_the_consumer_leaves_no_task(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    started = asyncio.Event()

    async def never(request: web.Request) -> web.Response:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    local.routes[CHECK_PATH] = never
    before = other_tasks()

    async def consume() -> None:
        async for _ in local_client.validation.check_many(emails(10), concurrency=3):
            pass

    consumer = asyncio.ensure_future(consume())
    await started.wait()
    assert len(other_tasks() - before) == 1 + 3
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(consumer, 5)
    assert other_tasks() - before == set()


async def test_an_error_from_the_input_iterable_leaves_no_task_behind(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    checking_server(local)
    before = other_tasks()

    def broken() -> Iterator[str]:
        yield "a@example.com"
        yield "b@example.com"
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        async for _ in local_client.validation.check_many(broken(), concurrency=4):
            pass
    assert other_tasks() - before == set()


@pytest.mark.parametrize("bad", [0, -1, float("inf"), "5"])
async def test_check_many_refuses_a_bad_request_timeout_at_the_call(
    client: asyncsdk.Client, mocked: aioresponses, bad: object
) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match="request_timeout"):
        client.validation.check_many(["a@b.com"], request_timeout=bad)  # type: ignore[arg-type]
    assert not mocked.requests


async def test_own_session_sends_the_agent_once_with_aiohttps_defaults(
        local: LocalServer) -> None:
    """The client's own session carries its ``User-Agent``: the service sees it exactly
    once, beside aiohttp's ``Accept`` headers."""
    async def check(request: web.Request) -> web.Response:
        return web.json_response(ok("a@b.com"))

    local.routes["/api/v1/single/check"] = check
    async with asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=local.url,
                               app_name="t/1") as client:
        await client.validation.check("a@b.com")
    (request,) = local.requests
    names = [name.lower() for name, _ in request.raw_headers]
    agents = [value.decode() for name, value in request.raw_headers
              if name.lower() == b"user-agent"]
    assert len(agents) == 1 and agents[0].startswith("asyncsdk/") and agents[0].endswith(" t/1")
    assert names.count(b"accept") == 1 and names.count(b"accept-encoding") == 1
