"""A fleet worker rides out a Redis restart: a real redis-server (its data kept on disk,
as a production Redis keeps it) stopped and started again on the same port mid-run, an
arq worker process, the sandbox.

arq's loop stops on Redis's first error: the worker exited (exit 1, "cannot reach
Redis"), and with every worker gone the run stood still until someone restarted them.
It now waits for Redis, starts afresh, and the run ends: every input one outcome, each
address sent once but for the checks in flight when Redis went away.
"""

from __future__ import annotations

import asyncio
import io
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arq.connections import RedisSettings, create_pool
from fleet_tools import CHECK, close_pool, tail, until, worker
from redis.exceptions import ConnectionError as RedisConnectionError

from asyncsdk.fleet.harness import start_worker, stop
from asyncsdk.fleet.store import OutcomeStore, job_key
from asyncsdk.fleet.submit import enqueue_batches, wait_for_job, wait_for_run
from asyncsdk.fleet.worker import check_batch
from asyncsdk.testing import Sandbox

EMAILS = [f"restart{i}@example.com" for i in range(120)]
CONCURRENCY = 2
#: Its data written to disk at each write, read back by the next server: a restart.
KEEP = ("--appendonly", "yes", "--appendfsync", "always")


async def test_a_worker_rides_out_a_redis_restart(
    tmp_path: Path, start_redis_server: Callable[..., tuple[subprocess.Popen[bytes], str]],
) -> None:
    first, url = start_redis_server(options=KEEP)
    log = tmp_path / "worker.log"
    pool = await create_pool(RedisSettings.from_dsn(url))
    workers: list[subprocess.Popen[bytes]] = []
    try:
        async with Sandbox() as sb:
            sb.faults.delay(CHECK, 0.05, times=None)  # a run of ~3 s
            workers.append(start_worker({
                "ASYNCSDK_BASE_URL": sb.base_url, "ASYNCSDK_API_KEY": sb.api_key,
                "ASYNCSDK_USERNAME": sb.username, "FLEET_REDIS_URL": url,
                "FLEET_CONCURRENCY": str(CONCURRENCY), "FLEET_MAX_JOBS": "1",
                "FLEET_SLICE_SECONDS": "1", "FLEET_REQUEST_TIMEOUT": "3",
                "FLEET_RETRY_SECONDS": "0.2"}, log))
            assert await enqueue_batches(pool, EMAILS, "r", 40) == 3
            store = OutcomeStore(pool, "r")

            async def begun() -> bool:
                return await store.count() >= 10

            await until(begun, timeout=60, what="the first outcomes")
            stop(first)  # SIGTERM: its data is on disk

            async def noticed() -> bool:  # (a restart faster than its next call is not)
                return (workers[0].poll() is not None
                        or "Redis stopped answering" in log.read_text())

            await until(noticed, timeout=60, what="the worker meeting Redis gone")
            start_redis_server(options=KEEP, same_as=url)

            async def finished() -> bool:
                assert workers[0].poll() is None, tail(log)
                try:
                    return await store.count() == len(EMAILS)
                except RedisConnectionError:  # this test's own connection, from before
                    return False

            await until(finished, timeout=120, what="an outcome for every input")
            sent = Counter(r.query["email"] for r in sb.requests if r.path == CHECK)
            stored = await store.all()
            # The worker started again still drains on SIGTERM (its handlers, not arq's).
            workers[0].send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(workers[0].wait, 60) == 0, tail(log)
    finally:
        for proc in workers:
            stop(proc)
        await pool.aclose()
    assert [stored[i]["email"] for i in range(len(EMAILS))] == EMAILS
    assert all(stored[i]["ok"] for i in range(len(EMAILS)))
    assert set(sent) == set(EMAILS)
    twice = [email for email, n in sent.items() if n > 1]
    assert len(twice) <= CONCURRENCY and all(n <= 2 for n in sent.values())
    text = log.read_text()
    assert "Redis stopped answering" in text
    assert "shutdown on SIGTERM" in text.split("Redis stopped answering")[1]


async def test_a_producers_wait_rides_out_a_redis_restart(
    start_redis_server: Callable[..., tuple[subprocess.Popen[bytes], str]],
) -> None:
    """``submit --wait`` and ``status --wait`` (a run's, a job's) outlive a Redis restart,
    as the workers now do: they ended (exit 1) at the first call after it, the
    connection they held closed by the server, though Redis was back."""
    first, url = start_redis_server(options=KEEP)
    pool = await create_pool(RedisSettings.from_dsn(url))
    waits: list[asyncio.Task[Any]] = []
    try:
        assert await enqueue_batches(pool, EMAILS[:2], "r", 2) == 1
        await pool.set(job_key("j") + ":state", "waiting")
        err = io.StringIO()
        waits[:] = run_wait, job_wait = (
            asyncio.create_task(wait_for_run(pool, "r", poll=0.01, stream=err)),
            asyncio.create_task(wait_for_job(pool, "j", poll=0.01, stream=err)))

        async def polling() -> bool:  # the job's wait says its state once it read it
            return "job j: waiting" in err.getvalue()

        await until(polling, timeout=30, what="the waits polling")
        assert not run_wait.done() and not job_wait.done()
        stop(first)
        start_redis_server(options=KEEP, same_as=url)
        writer = await create_pool(RedisSettings.from_dsn(url))
        try:
            async with Sandbox() as sb, sb.client() as client:
                await check_batch(worker(client, writer, 1), "r", 0, EMAILS[:2])
            await writer.set(job_key("j") + ":state", "done")
        finally:
            await close_pool(writer)
        assert await asyncio.wait_for(run_wait, 60) == 2
        assert await asyncio.wait_for(job_wait, 60) == ("done", "")
        # Whether a wait met the outage (and said so) depends on when its polls fell:
        # the client may reconnect between two of them. What holds is that both ended.
    finally:
        for task in waits:
            task.cancel()
        await pool.aclose()
