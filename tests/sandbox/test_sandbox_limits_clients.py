"""Clients, copies and keys against the sandbox's limit per key (issue 40, items 4 and
5): each key has its bucket, whichever client sends; a ``with_options`` copy with the
same key (and a copy of a copy) shares its parent's pace, a copy with another key and
any other ``Client`` have paces of their own (README, "Copies share it"); closing a copy
leaves its parent's pace whole."""

from __future__ import annotations

import asyncio

import pytest

import asyncsdk
from asyncsdk.pacing import PaceState
from asyncsdk.testing import RateLimit, Sandbox

CHECK = "/api/v1/single/check"
#: So slow that no token comes back while a test runs: what a test sees is the burst.
FROZEN = 0.001


async def checks(client: asyncsdk.Client, n: int, tag: str) -> list[asyncsdk.CheckOutcome]:
    return [o async for o in client.validation.check_many(
        [f"{tag}{i}@example.com" for i in range(n)])]


async def test_each_key_has_its_bucket_whichever_client_sends() -> None:
    """``sb.client(api_key=..., username=...)`` is a client of another account (it was a
    TypeError: the keywords were given twice); its key's bucket is its own."""
    async with Sandbox(rate_limit=RateLimit(rate=FROZEN, burst=2)) as sb:
        sb.add_account("key-2", "user-2")
        async with sb.client(max_retries=0) as first, \
                sb.client(api_key="key-2", username="user-2", max_retries=0) as second:
            for _ in range(2):
                await first.validation.check("ann@example.com")
            with pytest.raises(asyncsdk.RateLimitError):
                await first.validation.check("ann@example.com")
            for _ in range(2):  # the first key's empty bucket is not the second's
                await second.validation.check("bob@example.com")
            with pytest.raises(asyncsdk.RateLimitError):
                await second.validation.check("bob@example.com")
    assert sb.limits.stats(sb.api_key).answered == sb.limits.stats("key-2").answered == 2
    assert {r.query["api"] for r in sb.requests} == {sb.api_key, "key-2"}


async def test_copies_share_the_pace_of_their_key_and_no_other() -> None:
    """The service, having answered nothing, asks the parent's first check to come back
    in a minute: every client on the parent's pace shows that hold in its
    ``validation.pace()`` (a copy, a copy of a copy, a copy back on the key after
    another), and holds its own checks for it; a copy with another key and another
    ``Client`` on the same key show none, and their checks are answered."""
    async with Sandbox() as sb:
        sb.add_account("key-2", "user-2")
        sb.faults.rate_limit(CHECK, retry_after=60)
        async with sb.client() as parent, sb.client() as another_client:
            copy = parent.with_options(timeout=60)
            copy_of_copy = copy.with_options(max_retries=1)
            other_key = parent.with_options(api_key="key-2", username="user-2")
            back = other_key.with_options(api_key=sb.api_key, username=sb.username)
            [refused] = [o async for o in parent.validation.check_many(
                ["first@example.com"], request_timeout=5)]
            assert isinstance(refused.error, asyncsdk.RateLimitError)
            for sharing in (parent, copy, copy_of_copy, back):
                assert sharing.validation.pace().hold_seconds > 50
            for apart in (other_key, another_client):
                assert apart.validation.pace() == PaceState()  # never used
            [held] = [o async for o in back.validation.check_many(
                ["held@example.com"], request_timeout=5)]
            assert isinstance(held.error, asyncsdk.RateLimitError)
            assert held.error.status_code is None  # held back by the shared pace: not sent
            for apart in (other_key, another_client):
                assert [o.ok for o in await checks(apart, 2, "apart")] == [True, True]
    sent = [(r.query["api"], r.query["email"], r.status) for r in sb.requests]
    assert sent[0] == (sb.api_key, "first@example.com", 429)
    assert sorted(sent[1:]) == sorted(  # and nothing of the held pace
        (key, f"apart{i}@example.com", 200) for key in (sb.api_key, "key-2") for i in (0, 1))


async def test_closing_a_copy_with_checks_on_the_wire_leaves_the_parents_pace_whole() -> None:
    """A copy's checks held by the service when it closes end with it; the places they
    held in the shared pace come back, and the parent's run goes on to the end."""
    async with Sandbox(rate_limit=RateLimit(rate=200, burst=5, retry_after=0.05)) as sb:
        sb.faults.delay(CHECK, 3600.0, times=4)  # the copy's first four stay unanswered
        async with sb.client(timeout=30) as parent:
            copy = parent.with_options(timeout=30)
            run = asyncio.ensure_future(checks(copy, 20, "copy"))
            # the copy's checks on the wire, in the parent's view: one pace
            while sb.in_flight < 4 or parent.validation.pace().in_flight < 4:
                await asyncio.sleep(0.005)
            await copy.close()
            ended = await run
            assert len(ended) == 20 and not all(o.ok for o in ended)
            assert parent.validation.pace().in_flight == 0
            outcomes = await checks(parent, 40, "parent")
            assert all(o.ok for o in outcomes) and len(outcomes) == 40
            assert parent.validation.pace().in_flight == 0 and not parent.closed
