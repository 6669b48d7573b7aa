"""The engine's parts a caller can give it: the clock (``Client(clock=...)``,
``asyncsdk.testing.VirtualClock``) and the send policy a call carries
(``CallOptions.policy``); and the pace a client shares with its ``with_options``
copies of the same key."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aioresponses import aioresponses
from helpers import API_KEY, BASE, USERNAME, engine_of

import asyncsdk
from asyncsdk._core import SINGLE, CallOptions, Operation
from asyncsdk._core.clock import SYSTEM_CLOCK
from asyncsdk._core.transport import Transport
from asyncsdk.resources._areas import Area
from asyncsdk.testing import VirtualClock

CHECK_URL = re.compile(r"^https://api\.test/api/v1/single/check(\?.*)?$")
CHECK = Operation("test.check", "GET", Area.VALIDATION, "/api/v1/single/check", True)
OK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}


# --- the clock ---------------------------------------------------------------------------
async def test_a_virtual_clock_moves_only_when_slept() -> None:
    clock = VirtualClock(start=5.0)
    assert clock.now() == 5.0 and clock.random() == 0.5
    await clock.sleep(2.5)
    await clock.sleep(0)
    clock.advance(1.0)
    assert clock.now() == 8.5
    assert clock.sleeps == [2.5, 0] and clock.slept == 2.5
    clock.random_value = 1.0
    assert clock.random() == 1.0
    seeded, again = VirtualClock(seed=3), VirtualClock(seed=3)
    assert [seeded.random() for _ in range(3)] == [again.random() for _ in range(3)]
    with pytest.raises(ValueError):
        VirtualClock(random=1.5)
    with pytest.raises(ValueError):
        clock.advance(-1)
    assert isinstance(clock, asyncsdk.Clock) and isinstance(SYSTEM_CLOCK, asyncsdk.Clock)


def test_a_clock_that_is_not_one_is_refused() -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=object())  # type: ignore[arg-type]
    assert info.value.field == "clock"


async def test_the_backoff_waits_on_the_clients_clock(mocked: aioresponses) -> None:
    """Three 503s: the pauses are the clock's (its jitter 1.0: the full backoff), none
    really slept, and a copy keeps the clock."""
    clock = VirtualClock(random=1.0)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, max_retries=3,
                               clock=clock) as client:
        for _ in range(3):
            mocked.get(CHECK_URL, status=503)
        mocked.get(CHECK_URL, payload=OK)
        await client.validation.check("a@b.com")
        assert clock.sleeps == [0.5, 1.0, 2.0] and clock.now() == 3.5
        mocked.get(CHECK_URL, status=503)
        mocked.get(CHECK_URL, payload=OK)
        await client.with_options(timeout=10).validation.check("a@b.com")
    assert clock.sleeps == [0.5, 1.0, 2.0, 0.5]


async def test_close_ends_a_pause_on_a_clock_that_never_wakes(mocked: aioresponses) -> None:
    """A clock whose sleep never returns: ``close()`` still ends the call's pause."""
    class Stuck(VirtualClock):
        async def sleep(self, seconds: float) -> None:
            self.sleeps.append(seconds)
            await asyncio.Event().wait()

    clock = Stuck()
    client = asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock)
    mocked.get(CHECK_URL, status=503, repeat=True)
    call = asyncio.ensure_future(client.validation.check("a@b.com"))
    while not clock.sleeps:
        await asyncio.sleep(0)
    await client.close()
    with pytest.raises(asyncsdk.APIConnectionError, match="closed"):
        await asyncio.wait_for(call, 5)


# --- the send policy ---------------------------------------------------------------------
class Recording:
    """A policy of a caller's own (as a fleet's shared pace would be): admits every
    attempt but the ones it is told to refuse, hears every answer, resends 429s free."""

    def __init__(self, *, refuse: int = 0, held_until: float = 0.0) -> None:
        self.refuse = refuse
        self.held_until = held_until
        self.admitted = 0
        self.reports: list[tuple[int | None, float | None]] = []

    async def admit(self, deadline: float) -> Any:
        if self.refuse:
            self.refuse -= 1
            return None
        self.admitted += 1
        return self.admitted

    def report(self, admission: Any, status: int | None, retry_after: float | None) -> None:
        assert admission == self.admitted
        self.reports.append((status, retry_after))

    def resends_free(self, status: int) -> bool:
        return status == 429


@pytest.fixture
async def engine() -> AsyncIterator[Transport]:
    async with engine_of(VirtualClock(random=1.0), max_retries=0) as composed:
        yield composed


async def test_a_callers_policy_is_asked_before_and_told_after_every_attempt(
        engine: Transport, mocked: aioresponses) -> None:
    policy = Recording()
    for _ in range(3):
        mocked.get(CHECK_URL, status=429, headers={"Retry-After": "2"})
    mocked.get(CHECK_URL, status=503)
    with pytest.raises(asyncsdk.ServerError):  # max_retries 0: the 503 ends it
        await engine.request(CallOptions(CHECK, query={"email": "a@b.com"}, policy=policy))
    # Three 429s sent again without spending a retry (max_retries is 0), each heard.
    assert policy.reports == [(429, 2.0), (429, 2.0), (429, 2.0), (503, None)]
    mocked.get(CHECK_URL, payload=OK)
    assert await engine.request(CallOptions(CHECK, policy=policy)) == OK
    assert policy.reports[-1] == (200, None)


async def test_a_call_its_policy_holds_past_its_budget_is_not_sent(
        engine: Transport, mocked: aioresponses) -> None:
    policy = Recording(refuse=1, held_until=engine.now() + 30)
    with pytest.raises(asyncsdk.RateLimitError, match="not sent") as info:
        await engine.request(CallOptions(CHECK, policy=policy))
    assert info.value.retry_after == 30
    assert not mocked.requests and policy.reports == []
    policy = Recording(refuse=1)  # no hold: the budget simply ran out
    with pytest.raises(asyncsdk.APITimeoutError):
        await engine.request(CallOptions(CHECK, policy=policy))


async def test_a_single_call_is_admitted_at_once_and_spends_its_retries(
        engine: Transport, mocked: aioresponses) -> None:
    assert await SINGLE.admit(0.0) is not None and not SINGLE.resends_free(429)
    mocked.get(CHECK_URL, status=429, headers={"Retry-After": "2"})
    with pytest.raises(asyncsdk.RateLimitError):  # max_retries 0
        await engine.request(CallOptions(CHECK))
    assert sum(len(c) for c in mocked.requests.values()) == 1


# --- the pace a copy shares --------------------------------------------------------------
async def test_a_copy_with_the_same_key_waits_in_its_parents_pace(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    """A service that takes nothing and asks for 30 s: the parent's bulk check gets the
    429 (and gives up: 30 s is past its 5 s budget); then a copy's bulk check with the
    same key is held by the same pace and never sent (before: the copy had a pace of
    its own and sent it), while a copy with another key sends its own."""
    mocked.get(CHECK_URL, status=429, headers={"Retry-After": "30"}, repeat=True)

    async def bulk(of: asyncsdk.Client, email: str) -> asyncsdk.CheckOutcome:
        outcomes = [o async for o in of.validation.check_many([email], request_timeout=5)]
        return outcomes[0]

    assert isinstance((await bulk(client, "a@b.com")).error, asyncsdk.RateLimitError)
    held = await bulk(client.with_options(timeout=7), "b@b.com")
    assert isinstance(held.error, asyncsdk.RateLimitError) and "not sent" in str(held.error)
    other = await bulk(client.with_options(api_key="another-key"), "c@b.com")
    assert isinstance(other.error, asyncsdk.RateLimitError)
    sent = [str(call.kwargs["params"]["email"]) for calls in mocked.requests.values()
            for call in calls]
    assert "b@b.com" not in sent
    assert "a@b.com" in sent and "c@b.com" in sent
