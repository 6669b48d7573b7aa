"""``close()`` while calls are in flight: every call ends promptly with an SDK error,
streams included (no ``.part`` file left), whether the session is the client's own or
the caller's; ``close()`` from another event loop refuses instead of leaking.

"Promptly" is asserted without a clock: each call is awaited through ``wait_for`` with a
generous bound that only a hang would reach (the stalls here never end by themselves).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from scripted_server import CHECK_PATH, DOWNLOAD_PATH, ScriptedServer, scripted_server

import asyncsdk
import asyncsdk.testing

HANG = 10.0  # only reached if the call hangs: the test then fails


async def _ended_by_close(client: asyncsdk.Client, call: Any, ready: Any) -> BaseException:
    task = asyncio.ensure_future(call)
    await ready()
    await client.close()
    with pytest.raises(asyncsdk.SDKError) as info:
        await asyncio.wait_for(task, HANG)
    return info.value


@pytest.mark.parametrize("own_session", [True, False])
async def test_a_call_waiting_for_its_answer_ends_with_an_sdk_error(own_session: bool) -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        session = None if own_session else aiohttp.ClientSession()
        client = asyncsdk.Client("k", "u", base_url=server.base_url, session=session)
        error = await _ended_by_close(client, client.validation.check("a@b.com"),
                                      lambda: server.wait_for_hits(CHECK_PATH, 1))
        assert isinstance(error, asyncsdk.APIConnectionError)
        assert "closed" in str(error) and error.may_have_been_sent
        with pytest.raises(asyncsdk.UsageError, match="closed"):
            await client.validation.check("a@b.com")
        if session is not None:
            assert not session.closed  # the caller's session is never closed
            await session.close()


async def test_a_call_sleeping_before_a_retry_ends_with_an_sdk_error() -> None:
    async with scripted_server() as server:
        # Retry in a minute: only close() ends the wait before that.
        server.on(CHECK_PATH, server.answer({"detail": "busy"}, status=503,
                                            headers={"Retry-After": "60"}))
        client = asyncsdk.Client("k", "u", base_url=server.base_url, timeout=300)
        error = await _ended_by_close(client, client.validation.check("a@b.com"),
                                      lambda: server.wait_for_hits(CHECK_PATH, 1))
        assert isinstance(error, asyncsdk.APIConnectionError)


async def _partial_download(server: ScriptedServer) -> None:
    server.on(DOWNLOAD_PATH, server.partial(
        b"Email,Name,Status,Role Based Emails\r\n" + b"a@b.com,A,Valid,no\r\n" * 10))


async def test_rows_in_flight_end_with_an_sdk_error() -> None:
    async with scripted_server() as server:
        await _partial_download(server)
        client = asyncsdk.Client("k", "u", base_url=server.base_url)
        got: list[Any] = []
        first = asyncio.Event()

        async def read() -> None:
            async for row in client.validation.job(1).rows():
                got.append(row)
                first.set()

        error = await _ended_by_close(client, read(), first.wait)
        assert isinstance(error, asyncsdk.APIConnectionError)  # before: hung forever
        assert got


async def test_download_in_flight_ends_and_leaves_no_part_file(tmp_path: Path) -> None:
    async with scripted_server() as server:
        await _partial_download(server)
        client = asyncsdk.Client("k", "u", base_url=server.base_url)
        target = tmp_path / "out.csv"

        async def part_written() -> None:
            await server.wait_for_hits(DOWNLOAD_PATH, 1)
            while not list(tmp_path.iterdir()):  # the .part file exists: reading began
                await asyncio.sleep(0)

        await _ended_by_close(client, client.validation.job(1).download(target),
                              part_written)
        assert list(tmp_path.iterdir()) == []


def test_close_from_another_event_loop_refuses() -> None:
    client = asyncsdk.Client("k", "u", base_url="https://h")

    async def use() -> None:  # a call binds the client to this loop (its session made)
        with asyncsdk.testing.aioresponses() as mocked:
            mocked.get("https://h/api/v1/contact/", payload=[])
            assert await client.contacts.list() == []

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(use())

        async def close_elsewhere() -> None:
            with pytest.raises(asyncsdk.UsageError, match="event loop"):
                await client.close()  # before: returned, leaving the socket open

        asyncio.run(close_elsewhere())
        assert not client.closed
        loop.run_until_complete(client.close())  # on its own loop it really releases
        assert client.closed and client._session is None
    finally:
        loop.close()
