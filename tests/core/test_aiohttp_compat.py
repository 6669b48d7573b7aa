"""What the library needs of aiohttp beyond its public API (``_core.aiohttp_compat``),
pinned on the installed aiohttp, and the hazard the middleware guards against: aiohttp
silently resends an idempotent-method request when the connection drops. The library's
middleware refuses that on every request of its own, on its own session and on a
caller's: ``max_retries`` is exact and an operation declared unsafe (jobs/create is a
GET) reaches the server only once."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest
from helpers import engine_of

import asyncsdk
from asyncsdk._core import CallOptions, Operation, aiohttp_compat
from asyncsdk.resources._areas import Area
from asyncsdk.testing import VirtualClock


async def start_dropping_server() -> tuple[asyncio.AbstractServer, list[bytes], int]:
    """A server that reads each request line and closes without answering."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        seen.append(line)
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, seen, port


async def test_aiohttp_still_resends_by_itself_and_keeps_its_middlewares_here() -> None:
    """The version guard: the hazard exists in the installed aiohttp (a plain session
    sends a dropped GET twice), the installed aiohttp is one the compat module was
    checked with, and the private attributes it reads are still there (the list it
    reads to keep a caller's middlewares in front of its own, and the session's loop)."""

    async def mine(request: aiohttp.ClientRequest,
                   handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        return await handler(request)

    version = tuple(int(p) for p in aiohttp.__version__.split(".")[:2])
    assert version in aiohttp_compat.TESTED_AIOHTTP, (
        f"aiohttp {aiohttp.__version__}: check _core/aiohttp_compat.py against it")
    server, seen, port = await start_dropping_server()
    try:
        async with aiohttp.ClientSession(middlewares=(mine,)) as session:
            assert aiohttp_compat.session_middlewares(session) == (mine,)
            assert aiohttp_compat.session_loop(session) is asyncio.get_running_loop()
            with pytest.raises(aiohttp.ClientError):
                await session.get(f"http://127.0.0.1:{port}/x")
    finally:
        server.close()
        await server.wait_closed()
    assert len(seen) == 2


@pytest.mark.parametrize("safe", [False, True])
@pytest.mark.parametrize("own_session", [True, False])
async def test_an_attempt_reaches_the_server_once(safe: bool, own_session: bool) -> None:
    server, seen, port = await start_dropping_server()
    op = Operation("validation.create_job", "GET", Area.VALIDATION, "/api/v1/jobs/create", safe)
    session = None if own_session else aiohttp.ClientSession()
    try:
        async with engine_of(VirtualClock(), f"http://127.0.0.1:{port}", max_retries=0,
                             session=session) as engine:
            with pytest.raises(asyncsdk.APIConnectionError) as info:
                await engine.request(CallOptions(op, query={"file_name": "x"}))
    finally:
        if session is not None:
            await session.close()
        server.close()
        await server.wait_closed()
    assert len(seen) == 1  # before: 2 for the safe GET (aiohttp's own resend)
    assert all(line.startswith(b"GET /api/v1/jobs/create?") for line in seen)
    assert info.value.may_have_been_sent is True


@pytest.mark.parametrize("max_retries", [0, 1, 2, 3])
async def test_max_retries_is_exact_and_each_attempt_is_logged(
    max_retries: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    server, seen, port = await start_dropping_server()
    clock = VirtualClock()
    try:
        async with asyncsdk.Client("k", "u", base_url=f"http://127.0.0.1:{port}",
                                   max_retries=max_retries, clock=clock) as client:
            with pytest.raises(asyncsdk.APIConnectionError):
                await client.validation.check("a@b.com")
    finally:
        server.close()
        await server.wait_closed()
    assert len(seen) == 1 + max_retries  # before: twice as many
    lines = [r for r in caplog.records
             if r.levelno == logging.DEBUG and "(attempt " in r.getMessage()]
    assert len(lines) == len(seen)
    # The first dropped connection is retried at once (a stale keep-alive connection),
    # the later ones after a backoff sleep.
    assert len(clock.sleeps) == max(0, max_retries - 1)


def test_a_session_whose_middlewares_cannot_be_read_warns_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback: an aiohttp without the attribute gives no middlewares, and one
    RuntimeWarning says the caller's are not applied."""

    class Later:
        pass

    monkeypatch.setattr(aiohttp_compat, "_warned", False)
    with pytest.warns(RuntimeWarning, match="middlewares"):
        assert aiohttp_compat.session_middlewares(Later()) == ()  # type: ignore[arg-type]
    assert aiohttp_compat.session_middlewares(Later()) == ()  # type: ignore[arg-type]
