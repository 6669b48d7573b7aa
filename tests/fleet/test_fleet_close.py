"""Every Redis connection the fleet opened is closed: after a worker's shutdown with Redis
gone, and after a batch run whose pace still had events to tell.

Each test collects what it left unreachable (``gc.collect``, in the test: the library
never touches the collector) with the warnings recorded: a redis-py connection dropped
without being closed says "unclosed Connection" there, in the test that left it, not in
whichever test the collector happened to run next (two CI runs failed that way).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import warnings
from collections.abc import Callable

import pytest
from arq.connections import RedisSettings, create_pool
from fleet_tools import close_pool, until, worker

from asyncsdk.fleet.harness import stop
from asyncsdk.fleet.shared_pace import SharedPace
from asyncsdk.fleet.worker import check_batch, shutdown
from asyncsdk.testing import Sandbox

EMAILS = [f"close{i}@example.com" for i in range(4)]


def unclosed_left() -> list[str]:
    """The "unclosed ..." ResourceWarnings of what is unreachable now."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [str(w.message) for w in seen
            if issubclass(w.category, ResourceWarning) and "unclosed" in str(w.message)]


async def nothing_else_runs() -> bool:
    """No task of the loop but this test's is left (a pace's flusher included)."""
    return all(task.done() or task is asyncio.current_task() for task in asyncio.all_tasks())


async def test_a_shutdown_with_redis_gone_lets_arq_close_its_pool(
    start_redis_server: Callable[[], tuple[subprocess.Popen[bytes], str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """arq closes its pool only once ``on_shutdown`` returns. The pace's last events
    cannot be told with Redis gone (a restart, the worker's own outage): its ``aclose``
    raised through ``shutdown``, arq's close stopped there, and the pool's connections
    were never closed (at each Redis restart the worker lived through)."""
    proc, url = start_redis_server()
    pool = await create_pool(RedisSettings.from_dsn(url))
    pace = SharedPace(pool)
    await asyncio.gather(pool.ping(), pool.ping())  # two connections in the pool
    admission = await pace.admit()
    assert admission is not None
    pace.report(admission, None, None)  # a send never made: an event to tell
    stop(proc)  # Redis goes away
    async with Sandbox() as sb:
        client = sb.client()
        with caplog.at_level(logging.WARNING, "asyncsdk.fleet"):
            await shutdown({"client": client, "pace": pace})  # arq's on_shutdown
        await pool.aclose()  # what arq's close does next
        assert client.closed
    assert "could not tell its last events" in caplog.text
    assert unclosed_left() == []


async def test_a_batch_runs_pace_is_closed_before_its_pool(redis_url: str) -> None:
    """A batch's pace tells its last events a moment after the run ends; the tests made
    one per ``worker`` context and never closed it, so one told after the test closed
    its pool opened a connection there that nothing closed."""
    pool = await create_pool(RedisSettings.from_dsn(redis_url))
    await pool.flushdb()
    async with Sandbox() as sb, sb.client() as client:
        ctx = worker(client, pool, 1)
        assert await check_batch(ctx, "r", 0, EMAILS) == {"stored": 4, "skipped": 0}
        admission = await ctx["pace"].admit()
        ctx["pace"].report(admission, None, None)  # told by its flusher, in a moment
        await close_pool(pool)
    await until(nothing_else_runs, timeout=30, what="the pace's flusher to end")
    assert unclosed_left() == []
