"""``check_many(stop=event)``: the caller's way to stop a run without losing a paid
check. Once ``stop`` is set nothing more is sent, not even a check already taken that
waits for its moment of the pace (the command line's first Ctrl-C near the end of a
run, when every input was already taken, could not stop those: they were sent, and
paid for); the checks on the wire finish and are yielded; the rest of the input is not
read; the iteration ends without an error.

The pace is the caller's (``pace=``, the public seam) and holds every check past the
first ``open_slots`` for good (a service that takes nothing more).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from test_check_many_stop_sending import BOUND, HoldingPace, answering
from validation_tools import LocalServer

import asyncsdk


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("inputs", "open_slots", "taken"), [
    (6, 2, 6), (6, 0, 6), (12, 5, 12), (3, 1, 3), (40, 3, 8)])
async def test_stop_sends_nothing_more_and_ends_the_run(
        local: LocalServer, local_client: asyncsdk.Client, kind: str, inputs: int,
        open_slots: int, taken: int) -> None:
    """``taken`` inputs are taken (``concurrency``), ``open_slots`` of them sent and on
    the wire when ``stop`` is set; the others wait for the pace, which never lets them
    go. The inputs after ``taken`` are never read."""
    on_the_wire = asyncio.Event()
    seen = answering(local, on_the_wire)
    pace = HoldingPace(open_slots)
    emails = [f"u{i}@example.com" for i in range(inputs)]
    read: list[str] = []

    def sync_source() -> Iterator[str]:
        for email in emails:
            read.append(email)
            yield email

    async def async_source() -> AsyncIterator[str]:
        for email in emails:
            read.append(email)
            yield email

    stop = asyncio.Event()
    received: list[asyncsdk.CheckOutcome] = []

    async def consume() -> None:
        source = sync_source() if kind == "sync" else async_source()
        async for outcome in local_client.validation.check_many(
                source, concurrency=taken, pace=pace, stop=stop):
            received.append(outcome)

    run = asyncio.ensure_future(consume())
    while len(seen) < open_slots or pace.given < open_slots or len(read) < taken:
        await asyncio.sleep(0)  # every input taken, the open ones on the wire
    stop.set()
    on_the_wire.set()
    await asyncio.wait_for(run, BOUND)  # ends, without an error
    sent = emails[:open_slots]
    assert sorted(seen) == sorted(sent)  # nothing sent after the stop
    assert len(read) == taken  # the rest of the input is not read
    assert sorted(o.email for o in received) == sorted(emails[:taken])
    answered = {o.email for o in received if o.ok}
    assert answered == set(sent)  # every check on the wire finished and was yielded
    for outcome in received:
        if not outcome.ok:
            assert outcome.attempted is False
            assert "stop" in str(outcome.error)


async def test_a_stop_set_before_the_run_sends_and_reads_nothing(
        local: LocalServer, local_client: asyncsdk.Client) -> None:
    seen = answering(local)
    read: list[str] = []

    def source() -> Iterator[str]:
        for i in range(5):
            read.append(f"u{i}@example.com")
            yield read[-1]

    stop = asyncio.Event()
    stop.set()
    outcomes = [o async for o in local_client.validation.check_many(source(), stop=stop)]
    assert (outcomes, seen, read) == ([], [], [])


async def test_a_run_that_ends_before_its_stop_leaves_nothing_behind(
        local: LocalServer, local_client: asyncsdk.Client) -> None:
    """The watcher of ``stop`` is the run's own task: gone with the run."""
    answering(local)
    stop = asyncio.Event()
    outcomes = [o async for o in local_client.validation.check_many(
        ["a@example.com", "b@example.com"], stop=stop)]
    assert [o.ok for o in outcomes] == [True, True]
    left = [t for t in asyncio.all_tasks() if t.get_coro().__qualname__.startswith("_Run.")]
    assert left == []


@pytest.mark.parametrize("stop", [True, "yes", object()])
async def test_a_stop_that_is_no_event_is_refused(
        local_client: asyncsdk.Client, stop: object) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match=r"stop: expected an asyncio\.Event"):
        local_client.validation.check_many(["a@example.com"], stop=stop)  # type: ignore[arg-type]
