"""A call's budget bounds the whole call, whatever stage the server stalls at: a
stream's attempt made late in the budget included, and no bound is rounded up past
it; an unsafe call whose budget ran out while it waited for a connection says it was
not sent; a timeout says which bound ended it (``_core.timeouts``)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from reliability_helpers import OPS, Op, contact_list_create, instant
from scripted_server import (
    CHECK_PATH,
    DOWNLOAD_PATH,
    STALL_TIMEOUT,
    scripted_server,
)

import asyncsdk
from asyncsdk._core.timeouts import TimeLimits
from asyncsdk.testing import VirtualClock

HANG = 20.0  # only reached if the call outlives its budget: the test then fails

Stream = Callable[[asyncsdk.ValidationJob, float], Awaitable[Any]]


async def _rows(job: asyncsdk.ValidationJob, budget: float) -> Any:
    return [row async for row in job.rows(request_timeout=budget)]


def _download(tmp: Path) -> Stream:
    async def download(job: asyncsdk.ValidationJob, budget: float) -> Any:
        return await job.download(tmp / "out.csv", request_timeout=budget)
    return download


@pytest.fixture(params=["rows", "download"])
def stream(request: pytest.FixtureRequest, tmp_path: Path) -> Stream:
    return _rows if request.param == "rows" else _download(tmp_path)


async def test_a_stream_retried_late_in_its_budget_gets_only_the_rest(
        stream: Stream) -> None:
    """A 503 asks for a wait of 60 s of a budget of 60.5 s (a virtual clock: the wait is
    instant): the retry has half a second left, not the whole budget again."""
    async with scripted_server() as server:
        server.on(DOWNLOAD_PATH, server.answer({}, 503, {"Retry-After": "60"}),
                  server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, max_retries=1,
                                   clock=VirtualClock()) as client:
            with pytest.raises(asyncsdk.APITimeoutError):
                await asyncio.wait_for(stream(client.validation.job(1), 60.5), HANG)
        assert server.count(DOWNLOAD_PATH) == 2


async def test_a_hosted_result_file_gets_only_the_rest_of_the_budget(stream: Stream) -> None:
    """The job's answer (after a 503 asking for 60 s of a 60.5 s budget, on a virtual
    clock) points to a result file hosted elsewhere, whose host never answers: its head
    has the half second left, not a budget of its own (before: the whole 60.5 s again,
    the hosted file a call of its own)."""
    async with scripted_server() as server:
        hosted = f"{server.base_url}/files/emaillist.csv"
        server.on(DOWNLOAD_PATH, server.answer({}, 503, {"Retry-After": "60"}),
                  server.answer({"status": "success", "result": hosted}))
        server.on("/files/emaillist.csv", server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, max_retries=1,
                                   clock=VirtualClock()) as client:
            with pytest.raises(asyncsdk.APITimeoutError) as info:
                await asyncio.wait_for(stream(client.validation.job(1), 60.5), HANG)
        assert server.count("/files/emaillist.csv") >= 1
    assert "the call's budget ran out: 60.5 s" in str(info.value)


@pytest.mark.parametrize("remaining", [5.0, 7.3, 60.0, 3600.25])
def test_no_bound_of_an_attempt_is_rounded_up_to_a_whole_second(remaining: float) -> None:
    """aiohttp rounds a bound of 5 s or more up to the next whole second of the loop's
    clock unless told otherwise: up to a second past the budget. Safe attempts were
    exact; an unsafe one's (a create, ``mail.send``) and a stream's were not."""
    limits = TimeLimits(remaining)
    bounds = {
        "safe": limits.attempt(remaining, limits.per_attempt(remaining, None)),
        "unsafe": limits.attempt(remaining, None),
        "stream": TimeLimits.stream(remaining, remaining),
    }
    assert {name: bound.ceil_threshold for name, bound in bounds.items()} == dict.fromkeys(
        bounds, math.inf)


@pytest.mark.parametrize("op", [op for op in OPS if not op.safe], ids=str)
async def test_an_unsafe_call_that_never_got_a_connection_says_not_sent(op: Op) -> None:
    """The one connection for unsafe requests is held by a stalled create: the call's
    budget runs out while it waits for one. Before: "timed out waiting for the answer",
    ``may_have_been_sent=True`` (aiohttp's bound of the whole attempt fired, not its
    bound of the wait for a connection): a caller would reconcile a request never sent."""
    held = "/api/v1/contact/"
    async with scripted_server() as server:
        server.on(held, server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   max_connections=1, max_retries=0) as client:
            holder = asyncio.ensure_future(client.contacts.create(contact_list_create()))
            await server.wait_for_hits(held, 1)
            world: Any = SimpleNamespace(file_url=f"{server.base_url}/list.csv")
            with pytest.raises(asyncsdk.APITimeoutError) as info:
                await asyncio.wait_for(op.call(client, world, 0.3), HANG)
            holder.cancel()
            with pytest.raises(asyncio.CancelledError):
                await holder
        assert info.value.may_have_been_sent is False, str(info.value)
        assert "connecting" in str(info.value)
        assert len(server.hits) == 1


async def test_a_timeout_names_the_bound_that_ended_it() -> None:
    """Attempts abandoned at ``attempt_timeout``, a call ended by its budget, and a call
    whose budget ended before another attempt: each ``APITimeoutError`` says which
    bound it was, and how many attempts were made (before: all three read alike,
    "timed out waiting for the answer" or "the call's time ran out")."""
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   max_retries=1, clock=instant()) as client:
            with pytest.raises(asyncsdk.APITimeoutError) as per_attempt:
                await client.validation.check("a@b.com", attempt_timeout=STALL_TIMEOUT)
            with pytest.raises(asyncsdk.APITimeoutError) as budget:
                await client.validation.check("a@b.com", request_timeout=STALL_TIMEOUT,
                                              attempt_timeout=HANG)
            with pytest.raises(asyncsdk.APITimeoutError) as before_any:
                await client.validation.check("a@b.com", request_timeout=1e-12)
    assert str(per_attempt.value).endswith(
        f"each attempt's bound passed: {STALL_TIMEOUT:g} s (attempt_timeout), 2 attempt(s)")
    assert str(budget.value).endswith(
        f"the call's budget ran out: {STALL_TIMEOUT:g} s (request_timeout, else the "
        "client's timeout), 1 attempt(s)")
    assert str(before_any.value) == (
        "validation.check: the call's budget ran out: 1e-12 s (request_timeout, else the "
        "client's timeout), 0 attempt(s)")
    assert not before_any.value.may_have_been_sent


#: A dripping answer's pause between two of its bytes: far below any bound of a
#: read here, so that only a bound of the whole head (or error body) ends it.
DRIP = 0.02
#: At most this many bytes dripped at once (the server stops by itself: 30 s).
DRIPS = 1500


@asynccontextmanager
async def _dripping_server(status: int, head: int, body: bool
                           ) -> AsyncIterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 that answers each request with ``status``, dripping a byte
    every ``DRIP`` seconds: ``head`` bytes of a header (-1: a head that does not end),
    then, with ``body``, a body that does not end. A 302 points to the server itself (a
    loop of redirects). Yields its base URL and the paths it was asked for."""
    asked: list[str] = []
    stopping = asyncio.Event()
    answering: set[asyncio.Task[Any]] = set()

    async def drip(writer: asyncio.StreamWriter, count: int) -> bool:
        for _ in range(count):
            if stopping.is_set():
                return False
            await asyncio.sleep(DRIP)
            writer.write(b".")
            await writer.drain()
        return True

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answering.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            asked.append(request.split(b" ", 2)[1].decode())
            writer.write(b"HTTP/1.1 %d Dripping\r\nX-Drip: " % status)
            if not await drip(writer, DRIPS if head < 0 else head):
                return
            if status == 302:
                writer.write(b"\r\nLocation: %s?hop=%d" % (DOWNLOAD_PATH.encode(), len(asked)))
            writer.write(b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n" % (DRIPS if body else 0))
            await writer.drain()
            if body:
                await drip(writer, DRIPS)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client went away: as it should once its budget ended
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", asked
    finally:
        stopping.set()
        server.close()
        if answering:
            await asyncio.wait(answering)
        await server.wait_closed()


@pytest.mark.parametrize(("status", "head", "body", "why"), [
    (302, 20, False, "each 302 in 0.4 s"),
    (200, -1, False, "a head that never ends"),
    (503, 0, True, "a 503 (retried) whose body never ends"),
    (404, 0, True, "a 404 (refused) whose body never ends"),
])
async def test_a_streams_head_and_its_redirects_end_within_the_budget(
        stream: Stream, status: int, head: int, body: bool, why: str) -> None:
    """A budget of 0.5 s: the stream's head, every redirect hop included, and the body
    of an answer retried or refused end with it. Before, each hop had a bound of its
    own reads only (a read never waited more than ``DRIP``): a loop of 302s each taking
    0.4 s kept the caller 11 x 0.4 s and ended with "redirects could not be followed";
    a head or an error's body dripped a byte at a time, forever."""
    async with _dripping_server(status, head, body) as (base, asked), asyncsdk.Client(
            "k", "u", base_url=base, max_retries=2) as client:
        with pytest.raises(asyncsdk.APITimeoutError) as info:
            await asyncio.wait_for(stream(client.validation.job(1), 0.5), HANG)
    assert str(info.value).endswith(
        "the call's budget ran out: 0.5 s (request_timeout, else the client's timeout), "
        "1 attempt(s)"), why
    assert info.value.may_have_been_sent
    assert len(asked) < 11, f"{len(asked)} hops: the budget did not bound them ({why})"
