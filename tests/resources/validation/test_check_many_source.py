"""check_many closes the async source it took, however the run ends (issue 29, item 1):
left early (``aclosing`` + ``break``), closed, cancelled, failed, stopped, or read to
its end. Before, a caller's async generator was left suspended: its ``finally`` ran
only when the event loop ended (or never, in a long-lived worker)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest

import asyncsdk
from asyncsdk.models.codes import Verdict
from asyncsdk.models.validation import CheckResult
from asyncsdk.resources.validation.check_many import check_many
from asyncsdk.testing import Sandbox

BOUND = 10


class Source:
    """An async generator's life, observed: how far it was read, and whether its
    ``finally`` ran (it awaits between inputs, as a real reader does)."""

    def __init__(self, count: int = 1_000) -> None:
        self.count = count
        self.read = 0
        self.closed = False

    async def emails(self) -> AsyncIterator[str]:
        try:
            for i in range(self.count):
                await asyncio.sleep(0)
                self.read += 1
                yield f"u{i}@example.com"
        finally:
            self.closed = True


def checker(fail: dict[str, BaseException] | None = None,
            hold: asyncio.Event | None = None) -> Any:
    """A stand-in for ``Validation.check``: a verdict, or the failure set for an address;
    with ``hold``, every check but the first waits for that event."""
    failures = fail or {}

    async def check(email: str, *, validity_timeout: float,
                    request_timeout: float | None) -> CheckResult:
        await asyncio.sleep(0)
        if hold is not None and email != "u0@example.com":
            await hold.wait()
        if email in failures:
            raise failures[email]
        return CheckResult(email=email, status="success", result=Verdict.VALID)

    return check


def run(source: AsyncIterator[Any], concurrency: int = 4,
        fail: dict[str, BaseException] | None = None, hold: asyncio.Event | None = None,
        ) -> Any:
    return check_many(checker(fail, hold), source, concurrency=concurrency, adaptive=False,
                      validity_timeout=30, request_timeout=None)


async def test_leaving_early_with_aclosing_closes_the_source() -> None:
    source = Source()
    taken = 0
    async with aclosing(run(source.emails())) as outcomes:
        async for _ in outcomes:
            taken += 1
            if taken == 3:
                break
    assert source.closed
    assert source.read < source.count


async def test_closing_the_outcomes_closes_the_source() -> None:
    source = Source()
    outcomes = run(source.emails())
    await asyncio.wait_for(outcomes.__anext__(), BOUND)
    assert not source.closed
    await outcomes.aclose()
    assert source.closed


async def test_a_consumer_cancelled_while_waiting_for_an_outcome_closes_the_source(
) -> None:
    """Cancelled inside ``check_many`` (waiting for the next outcome; no ``aclosing``)."""
    source = Source()
    first = asyncio.Event()
    held = asyncio.Event()  # never set: every check after the first hangs

    async def consume() -> None:
        async for _ in run(source.emails(), hold=held):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), BOUND)  # the consumer waits inside check_many
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert source.closed


async def test_an_error_of_the_run_closes_the_source() -> None:
    source = Source()

    async def consume() -> None:
        async for _ in run(source.emails(), fail={"u7@example.com": ZeroDivisionError()}):
            pass

    with pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(consume(), BOUND)
    assert source.closed


async def test_a_run_stopped_by_a_refused_key_reads_the_rest_and_closes_the_source() -> None:
    source = Source(count=20)
    refused = asyncsdk.AuthenticationError("User authentication failed.",
                                           operation="validation.check")
    outcomes = [o async for o in run(source.emails(), fail={"u5@example.com": refused})]
    assert len(outcomes) == 20
    assert source.closed and source.read == 20
    assert sum(not o.attempted for o in outcomes) > 0


async def test_a_source_read_to_its_end_is_closed() -> None:
    source = Source(count=5)
    assert len([o async for o in run(source.emails())]) == 5
    assert source.closed


async def test_an_async_iterator_with_aclose_is_closed_and_one_without_is_left() -> None:
    class Reader:
        """Not a generator: an iterator of its own with ``aclose()``."""

        def __init__(self) -> None:
            self.left = 50
            self.closes = 0

        def __aiter__(self) -> Reader:
            return self

        async def __anext__(self) -> str:
            if not self.left:
                raise StopAsyncIteration
            self.left -= 1
            return f"r{self.left}@example.com"

        async def aclose(self) -> None:
            self.closes += 1

    reader = Reader()
    async with aclosing(run(reader)) as outcomes:
        async for _ in outcomes:
            break
    assert reader.closes == 1

    class Plain:
        """An async iterator without ``aclose()``: nothing to call."""

        def __aiter__(self) -> Plain:
            return self

        async def __anext__(self) -> str:
            return "p@example.com"

    async with aclosing(run(Plain())) as outcomes:
        async for _ in outcomes:
            break


async def test_the_clients_check_many_left_early_closes_the_callers_generator() -> None:
    """The issue's case, through the client: 3 outcomes taken, then ``break``."""
    source = Source()
    async with Sandbox() as sb, sb.client() as client:
        async with aclosing(client.validation.check_many(source.emails(),
                                                          concurrency=5)) as outcomes:
            taken = 0
            async for outcome in outcomes:
                assert outcome.ok
                taken += 1
                if taken == 3:
                    break
        assert source.closed
