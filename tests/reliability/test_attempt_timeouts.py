"""An attempt of a safe operation ends by its time bound (``_core.timeouts``, aiohttp's
own ``ClientTimeout`` per attempt): only the late attempts end, each is retried within
the call's budget, a cancellation from anyone else is never taken for a timeout, and a
wait for a connection is "surely not sent".
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from reliability_helpers import instant
from scripted_server import CHECK_OK, CHECK_PATH, STALL_TIMEOUT, scripted_server

import asyncsdk


async def test_only_the_late_attempts_end_and_each_is_retried() -> None:
    """Ten checks at once, the first attempt of every other one stalls: those five are
    abandoned at their deadline and answered on their second attempt, the others once."""
    async with scripted_server() as server:
        stall, ok = server.stall(), server.answer(CHECK_OK)
        server.on(CHECK_PATH, *[stall if i % 2 == 0 else ok for i in range(10)], ok)
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   attempt_timeout=STALL_TIMEOUT, clock=instant()) as client:
            results = await asyncio.gather(
                *(client.validation.check("a@b.com") for _ in range(10)))
        assert all(r.email == "a@b.com" for r in results)
        assert server.count(CHECK_PATH) == 15


async def test_a_call_past_its_budget_is_a_timeout_after_exactly_its_attempts() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   attempt_timeout=STALL_TIMEOUT, max_retries=2,
                                   clock=instant()) as client:
            with pytest.raises(asyncsdk.APITimeoutError) as info:
                await client.validation.check("a@b.com")
        assert server.count(CHECK_PATH) == 3
        assert info.value.may_have_been_sent
        assert "timed out waiting for the answer" in str(info.value)


async def test_a_cancellation_from_the_caller_is_never_taken_for_a_timeout() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   attempt_timeout=5) as client:
            call = asyncio.ensure_future(client.validation.check("a@b.com"))
            await server.wait_for_hits(CHECK_PATH, 1)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        assert server.count(CHECK_PATH) == 1


async def test_a_wait_for_a_connection_is_still_surely_not_sent() -> None:
    """The one connection is held by a stalled call: the second call's attempt ends
    while it waits for the pool, which aiohttp bounds itself: not sent, so an unsafe
    retry rule would allow another try. (In a loop held up past both of aiohttp's
    bounds at once, which fires first is aiohttp's: the answer may then read "may have
    been sent", the conservative side.)"""
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   max_connections=1, max_retries=0) as client:
            holder = asyncio.ensure_future(client.validation.check("a@b.com",
                                                                   attempt_timeout=10))
            await server.wait_for_hits(CHECK_PATH, 1)
            waiter = asyncio.ensure_future(client.validation.check("a@b.com",
                                                                   attempt_timeout=0.05))
            with pytest.raises(asyncsdk.APITimeoutError) as info:
                await waiter
            holder.cancel()
            with pytest.raises(asyncio.CancelledError):
                await holder
        assert info.value.may_have_been_sent is False, str(info.value)
        assert "connecting" in str(info.value)
        assert server.count(CHECK_PATH) == 1


async def test_a_deadline_in_a_clean_up_after_a_cancel_is_a_retry_not_a_cancel() -> None:
    """A task already cancelling calls the service in its clean-up: the attempt's
    deadline is still the deadline (counted from the task's count when the attempt
    began, as asyncio.timeout counts), not the caller's cancel (before: a bare
    ``CancelledError`` from an attempt nobody cancelled)."""
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall(), server.answer(CHECK_OK))
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   attempt_timeout=STALL_TIMEOUT, clock=instant()) as client:
            got: list[object] = []

            async def worker() -> None:
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    try:
                        got.append(await client.validation.check("a@b.com"))
                    except BaseException as exc:  # recorded for the assert
                        got.append(exc)
                    raise

            task = asyncio.ensure_future(worker())
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert server.count(CHECK_PATH) == 2
        assert len(got) == 1 and not isinstance(got[0], BaseException), got


async def test_a_deadline_in_a_task_that_swallowed_a_cancel_is_a_retry() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall(), server.answer(CHECK_OK))
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   attempt_timeout=STALL_TIMEOUT, clock=instant()) as client:

            async def worker() -> Any:
                with contextlib.suppress(asyncio.CancelledError):  # a soft cancel
                    await asyncio.Event().wait()
                return await client.validation.check("a@b.com")

            task = asyncio.ensure_future(worker())
            await asyncio.sleep(0)
            task.cancel()
            result = await task
        assert result.email == "a@b.com"
        assert server.count(CHECK_PATH) == 2


async def test_close_under_a_call_in_a_clean_up_after_a_cancel_is_an_sdk_error() -> None:
    """``close()`` ends a call made by a task already cancelling with the SDK's error,
    not a bare ``CancelledError`` (the same counting as the deadline's)."""
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        client = asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30)
        got: list[BaseException] = []

        async def worker() -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                try:
                    await client.validation.check("a@b.com")
                except BaseException as exc:  # recorded for the assert
                    got.append(exc)
                raise

        task = asyncio.ensure_future(worker())
        await asyncio.sleep(0)
        task.cancel()
        await server.wait_for_hits(CHECK_PATH, 1)
        await client.close()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(got) == 1 and isinstance(got[0], asyncsdk.APIConnectionError), got
        assert "closed" in str(got[0])
