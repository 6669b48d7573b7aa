"""``check_many`` on a client that is already closed raises the ``UsageError`` that
``check`` raises, once, as the iteration starts, before its input is read: nothing is
taken, nothing sent, and the input is left for an open client. Before: every input was
read and got a failure outcome of its own (a big file: millions of them), each telling
the same thing. A client closed during a run still accounts for every input
(``test_check_many.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator

import pytest

import asyncsdk

BOUND = 10  # a deadlock fails the test instead of hanging it
NOWHERE = "http://127.0.0.1:9"  # nothing may be sent: a send would fail, not hang


class Source:
    """Inputs, counting those read (sync or async)."""

    def __init__(self, n: int) -> None:
        self.inputs = [f"p{i}@example.com" for i in range(n)]
        self.read = 0

    def sync(self) -> Iterator[str]:
        for email in self.inputs:
            self.read += 1
            yield email

    async def async_(self) -> AsyncGenerator[str, None]:
        for email in self.inputs:
            self.read += 1
            yield email


async def what_check_raises(client: asyncsdk.Client) -> asyncsdk.UsageError:
    with pytest.raises(asyncsdk.UsageError) as raised:
        await client.validation.check("a@example.com")
    return raised.value


async def drain(client: asyncsdk.Client, emails: object,
                **options: object) -> list[asyncsdk.CheckOutcome]:
    async def run() -> list[asyncsdk.CheckOutcome]:
        return [o async for o in client.validation.check_many(
            emails, **options)]  # type: ignore[arg-type]
    return await asyncio.wait_for(run(), BOUND)


@pytest.mark.parametrize("kind", ["list", "sync", "async"])
async def test_a_client_closed_before_the_run_raises_once_and_reads_nothing(
        kind: str) -> None:
    source = Source(500)
    client = asyncsdk.Client("k", "u", base_url=NOWHERE)
    await client.close()
    expected = await what_check_raises(client)
    sync, async_ = source.sync(), source.async_()
    emails = {"list": source.inputs, "sync": sync, "async": async_}[kind]
    with pytest.raises(asyncsdk.UsageError) as raised:
        await drain(client, emails, concurrency=8)  # before: 500 failure outcomes
    assert str(raised.value) == str(expected)
    assert source.read == 0  # nothing taken: the input is the caller's still
    # Left as it was: its next input is its first (an open client can take it all).
    if kind == "sync":
        assert next(sync) == source.inputs[0]
    elif kind == "async":
        assert await anext(async_) == source.inputs[0]
    await async_.aclose()


async def test_a_run_made_inside_async_with_and_started_after_it_raises() -> None:
    async with asyncsdk.Client("k", "u", base_url=NOWHERE) as client:
        outcomes = client.validation.check_many(["a@example.com", "b@example.com"])
    expected = await what_check_raises(client)
    with pytest.raises(asyncsdk.UsageError) as raised:
        await asyncio.wait_for(outcomes.__anext__(), BOUND)
    assert str(raised.value) == str(expected)
    with pytest.raises(StopAsyncIteration):  # raised once: the run is over
        await outcomes.__anext__()


@pytest.mark.parametrize("given", ["stop", "pace"])
async def test_a_closed_copy_raises_once_with_a_stop_or_a_pace_of_the_callers(
        given: str) -> None:
    """A ``with_options`` copy closed on its own; the run's ``stop`` watcher, or the
    caller's ``pace``, changes nothing: the same one error, nothing left running."""
    class Pace:
        held_until = 0.0
        asked = 0

        async def admit(self, deadline: float) -> object:
            Pace.asked += 1
            return object()

        def report(self, admission: object, status: int | None,
                   retry_after: float | None) -> None:
            raise AssertionError("nothing is sent")

        def resends_free(self, status: int) -> bool:
            return False

    options: dict[str, object] = (
        {"stop": asyncio.Event()} if given == "stop" else {"pace": Pace()})
    async with asyncsdk.Client("k", "u", base_url=NOWHERE) as client:
        copy = client.with_options(timeout=5)
        await copy.close()
        before = asyncio.all_tasks()
        with pytest.raises(asyncsdk.UsageError, match="closed"):
            await drain(copy, [f"p{i}@example.com" for i in range(50)], **options)
        assert asyncio.all_tasks() <= before  # the stop's watcher ended with the run
    assert Pace.asked == 0
