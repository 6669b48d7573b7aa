"""The fleet's tasks, called in this process against a real redis-server and the sandbox.

Each "worker" is a ctx like the one arq hands a task (its own Client, the shared Redis),
so what one worker leaves in Redis is all another one knows.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from arq import Retry
from arq.connections import ArqRedis
from fleet_tools import CHECK, checks, worker

import asyncsdk
from asyncsdk.fleet.shared_pace import PACE_KEY
from asyncsdk.fleet.store import (
    PAUSE_KEY,
    FleetJobError,
    FleetPace,
    OutcomeStore,
    idle_key,
    job_key,
    writes_key,
)
from asyncsdk.fleet.submit import read_addresses
from asyncsdk.fleet.worker import check_batch, resume_job, submit_job
from asyncsdk.testing import Sandbox

EMAILS = [f"user{i}@example.com" for i in range(30)]


async def test_a_rerun_skips_every_stored_input(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        done = await check_batch(worker(client, pool, 1), "r", 100, EMAILS)
        again = await check_batch(worker(client, pool, 2, job_try=2), "r", 100, EMAILS)
    assert done == {"stored": 30, "skipped": 0}
    assert again == {"stored": 0, "skipped": 30}
    assert sorted(checks(sb)) == sorted(EMAILS)  # the re-run sent nothing
    stored = await OutcomeStore(pool, "r").all()
    assert sorted(stored) == list(range(100, 130))
    assert all(stored[100 + i]["email"] == e and stored[100 + i]["ok"] for i, e in
               enumerate(EMAILS))
    assert await pool.hgetall(writes_key("r")) == {b"1": b"30"}


async def test_an_address_given_twice_gets_an_outcome_at_each_index(pool: ArqRedis) -> None:
    batch = ["ann@example.com", "bob@example.com", "ann@example.com"]
    async with Sandbox() as sb, sb.client() as client:
        await check_batch(worker(client, pool, 1), "r", 0, batch)
    stored = await OutcomeStore(pool, "r").all()
    assert [stored[i]["email"] for i in range(3)] == batch


async def test_running_out_of_credit_leaves_the_rest_for_a_later_run(pool: ArqRedis) -> None:
    async with Sandbox(credit=3) as sb, sb.client() as client:
        with pytest.raises(Retry) as retry:
            await check_batch(worker(client, pool, 1, concurrency=1, retry_seconds=9), "r", 0,
                              EMAILS[:6])
        assert retry.value.defer_score == 9000
        assert sorted(await OutcomeStore(pool, "r").all()) == [0, 1, 2]
        sb.credit = None  # topped up
        assert await check_batch(worker(client, pool, 1, job_try=2), "r", 0, EMAILS[:6]) == {
            "stored": 3, "skipped": 3}
    stored = await OutcomeStore(pool, "r").all()
    assert all(stored[i]["ok"] for i in range(6))


async def test_a_time_slice_ends_the_run_and_the_next_run_sends_only_the_rest(
    pool: ArqRedis,
) -> None:
    async with Sandbox() as sb, sb.client() as client:
        sb.faults.delay(CHECK, 0.3, times=2)  # the first two answers outlast the slice
        with pytest.raises(Retry) as retry:
            await check_batch(worker(client, pool, 1, concurrency=2, slice_seconds=0.2),
                              "r", 0, EMAILS)
        assert not retry.value.defer_score  # the rest goes at once
        assert await OutcomeStore(pool, "r").count() == 2  # those in flight were kept
        result = await check_batch(worker(client, pool, 2, job_try=2), "r", 0, EMAILS)
    assert result == {"stored": 28, "skipped": 2}
    assert sorted(checks(sb)) == sorted(EMAILS)  # each address sent once


async def test_a_rate_limit_pauses_every_worker(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client(max_retries=0) as a, sb.client(max_retries=0) as b:
        sb.faults.rate_limit(CHECK, retry_after=30)
        with pytest.raises(Retry) as retry_a:
            await check_batch(worker(a, pool, 1, concurrency=1, slice_seconds=5), "r", 0,
                              EMAILS[:10])
        # Worker A heard "slow down": the pause is the service's Retry-After, fleet-wide.
        assert 29 < await FleetPace(pool).remaining() <= 30
        assert retry_a.value.defer_score is not None and retry_a.value.defer_score > 29_000
        assert checks(sb) == [EMAILS[0]]
        # Worker B, another process, sends nothing while the pause lasts.
        with pytest.raises(Retry) as retry_b:
            await check_batch(worker(b, pool, 2, slice_seconds=5), "r", 10, EMAILS[10:])
        assert retry_b.value.defer_score is not None and retry_b.value.defer_score > 29_000
        assert checks(sb) == [EMAILS[0]]
        assert await OutcomeStore(pool, "r").count() == 0
        # The pause over (its key expired), the re-runs check everything once. (arq runs
        # them after the pause, when the fleet's pace's hold of the 429 is over too: a
        # fresh pace and fresh clients stand in for that time.)
        await pool.delete(PAUSE_KEY, PACE_KEY)
        sb.faults.clear()
        async with sb.client() as a_later, sb.client() as b_later:
            await check_batch(worker(a_later, pool, 1, job_try=2), "r", 0, EMAILS[:10])
            await check_batch(worker(b_later, pool, 2, job_try=2), "r", 10, EMAILS[10:])
    assert await OutcomeStore(pool, "r").count() == 30
    assert sorted(checks(sb)) == sorted([EMAILS[0], *EMAILS])  # the 429'd one sent again


async def test_sends_wait_out_a_pause_that_ends_within_the_run(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        started = asyncio.get_running_loop().time()
        await FleetPace(pool).pause(0.3)
        await check_batch(worker(client, pool, 1, slice_seconds=10), "r", 0, EMAILS)
    first = min(r.time for r in sb.requests if r.path == CHECK)
    assert first >= started + 0.29  # nothing went out before the pause ended
    assert await OutcomeStore(pool, "r").count() == 30


async def test_a_pause_is_extended_never_shortened(pool: ArqRedis) -> None:
    pace = FleetPace(pool)
    await pace.pause(20)
    await pace.pause(1)
    assert 19 < await pace.remaining() <= 20
    await pace.pause(40)
    assert 39 < await pace.remaining() <= 40
    await pool.delete(PAUSE_KEY)
    await pace.pause(None)  # no Retry-After: the default pause
    assert 0 < await pace.remaining() <= 1


async def test_failures_that_are_not_the_address_are_retried_then_stored_last(
    pool: ArqRedis,
) -> None:
    async with Sandbox() as sb, sb.client(max_retries=0) as client:
        sb.faults.status(CHECK, 503, times=None)
        with pytest.raises(Retry) as retry:
            await check_batch(worker(client, pool, 1, retry_seconds=7), "r", 0, EMAILS[:5])
        assert retry.value.defer_score == 7000
        assert await OutcomeStore(pool, "r").count() == 0  # not an answer about the address
        await check_batch(worker(client, pool, 1, job_try=50, max_tries=50), "r", 0,
                          [*EMAILS[:4], "no-at-sign"])
    stored = await OutcomeStore(pool, "r").all()
    assert [stored[i]["error"].split(":")[0] for i in range(5)] == [
        "ServerError"] * 4 + ["InvalidInputError"]


async def test_a_job_is_submitted_once_and_resumed_by_another_worker(pool: ArqRedis) -> None:
    async with Sandbox(job_polls=2) as sb:
        url = sb.host_file("email\nann@example.com\nsales@example.com\nbob@mailinator.com\n")
        async with sb.client() as a:
            job_id = await submit_job(worker(a, pool, 1), "list", url)
            # arq re-runs the submit (its worker died after saving): nothing sent again.
            assert await submit_job(worker(a, pool, 1, job_try=2), "list", url) == job_id
        # Worker A is gone; worker B resumes from what A saved.
        assert json.loads(await pool.get(job_key("list")))["job_id"] == job_id
        assert await pool.exists(f"arq:job:resume:list:{job_id}")
        async with sb.client() as b:
            for attempt in (1, 2):  # processing: re-queued after the poll interval
                with pytest.raises(Retry) as retry:
                    await resume_job(worker(b, pool, 2, job_try=attempt, job_poll_seconds=3),
                                     "list")
                assert retry.value.defer_score == 3000
            assert await resume_job(worker(b, pool, 2, job_try=3), "list") == 3
            assert await resume_job(worker(b, pool, 2, job_try=4), "list") == 3  # done
    creates = [r for r in sb.requests if r.path == "/api/v1/jobs/create"]
    assert len(creates) == 1
    assert await pool.get(job_key("list") + ":state") == b"done"
    rows = {int(k): json.loads(v) for k, v in
            (await pool.hgetall(job_key("list") + ":rows")).items()}
    assert [rows[i]["email"] for i in range(3)] == [
        "ann@example.com", "sales@example.com", "bob@mailinator.com"]
    assert [rows[i]["status"] for i in range(3)] == ["Valid", "Valid", "Disposable"]
    assert rows[1]["role_based"] is True


async def test_a_submit_that_may_have_been_paid_is_not_sent_again(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        url = sb.host_file("ann@example.com\n")
        await pool.set(job_key("list") + ":state", "submitting")  # a worker died mid-send
        with pytest.raises(RuntimeError, match="may already have been submitted"):
            await submit_job(worker(client, pool, 1, job_try=2), "list", url)
    assert not [r for r in sb.requests if r.path == "/api/v1/jobs/create"]


async def test_a_refused_submit_can_be_submitted_again(pool: ArqRedis) -> None:
    async with Sandbox() as sb, sb.client() as client:
        with pytest.raises(asyncsdk.FileNotDownloadableError):
            await submit_job(worker(client, pool, 1), "list", f"{sb.base_url}/files/none.csv")
        url = sb.host_file("ann@example.com\n")
        assert await submit_job(worker(client, pool, 1, job_try=2), "list", url) >= 1
    assert await pool.get(job_key("list") + ":state") == b"waiting"


def test_the_producer_reads_a_csv_column_or_lines(tmp_path: Path) -> None:
    csv_file = tmp_path / "a.csv"
    csv_file.write_text("name,Email\nAnn,ann@example.com\nNo one,\nBob,bob@example.com\n")
    lines = tmp_path / "a.txt"
    lines.write_text("ann@example.com\n\n  bob@example.com \n")
    assert list(read_addresses(csv_file)) == ["ann@example.com", "bob@example.com"]
    assert list(read_addresses(lines)) == ["ann@example.com", "bob@example.com"]


def test_the_library_imports_neither_arq_nor_redis_nor_the_fleet() -> None:
    # Every module but the fleet's own: the command line's included (its fleet command
    # imports the fleet only once it runs). Found by file, not by pkgutil, which would
    # import the fleet's package to walk it.
    code = (
        "import importlib, pathlib, sys, asyncsdk\n"
        "root = pathlib.Path(asyncsdk.__file__).parent\n"
        "for path in sorted(root.rglob('*.py')):\n"
        "    parts = ('asyncsdk',) + path.relative_to(root).with_suffix('').parts\n"
        "    name = '.'.join(parts).removesuffix('.__init__')\n"
        "    if parts[1] != 'fleet' and not name.endswith('__main__'):\n"
        "        importlib.import_module(name)\n"
        "print(sorted(n for n in sys.modules\n"
        "             if n.split('.')[0] in ('arq', 'redis') or n.startswith('asyncsdk.fleet')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("url", ["not-a-url", "ftp://host/a.csv"])
async def test_a_job_refused_before_sending_is_failed_not_feared_paid(
    pool: ArqRedis, url: str,
) -> None:
    """Before: create_job's InvalidInputError (nothing sent) left the "submitting" mark,
    so the retry said the job "may already have been submitted" and asked a person to
    check the service and delete a Redis key; ``status`` stayed "submitting"."""
    async with Sandbox() as sb, sb.client() as client:
        with pytest.raises(FleetJobError, match="not submitted"):
            await submit_job(worker(client, pool, 1), "list", url)
        assert await pool.get(job_key("list") + ":state") == b"failed"
        error = (await pool.get(job_key("list") + ":error")).decode()
        assert error.startswith("job 'list': not submitted (nothing was sent): "
                                "InvalidInputError: file_url: expected an absolute http(s)")
        # Submitted again with a good URL, it goes through (no mark left behind).
        good = sb.host_file("ann@example.com\n")
        assert await submit_job(worker(client, pool, 1, job_try=2), "list", good) >= 1
    assert len([r for r in sb.requests if r.path == "/api/v1/jobs/create"]) == 1


async def test_a_worker_without_a_username_stores_nothing_even_on_its_last_try(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: check_many's ConfigurationError (an InvalidInputError) was taken for the
    address's own outcome: one worker without ASYNCSDK_USERNAME stored every input of
    every batch it took as failed, and the run was done without a single check."""
    monkeypatch.delenv("ASYNCSDK_USERNAME", raising=False)
    async with Sandbox() as sb, asyncsdk.Client(sb.api_key, None,
                                                base_url=sb.base_url) as client:
        with pytest.raises(Retry):
            await check_batch(worker(client, pool, 1, job_try=50, max_tries=50), "r", 0,
                              EMAILS[:3])
    assert checks(sb) == []
    assert await OutcomeStore(pool, "r").all() == {}
    assert await pool.hget(idle_key("r"), "0") == b"1"  # not a try: no last try stores it


class StopAtFirstOutcome:
    """A client whose ``check_many`` tells the worker to stop as its first outcome
    comes (a SIGTERM at that moment)."""

    def __init__(self, client: asyncsdk.Client, stopping: asyncio.Event) -> None:
        self.client = client
        self.stopping = stopping
        self.validation = self

    async def check_many(self, emails: Any, **options: Any) -> AsyncIterator[Any]:
        async with aclosing(self.client.validation.check_many(emails, **options)) as run:
            async for outcome in run:
                self.stopping.set()
                yield outcome


async def test_a_worker_without_a_username_told_to_stop_hands_its_last_try_back(
    pool: ArqRedis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same worker told to stop as its checks failed: a ConfigurationError (not
    attempted) was taken for a check the stop kept back, so the last try stored every
    input as not attempted ("its batch ran out of tries"), none ever checked."""
    monkeypatch.delenv("ASYNCSDK_USERNAME", raising=False)
    stopping = asyncio.Event()
    async with Sandbox() as sb, asyncsdk.Client(sb.api_key, None,
                                                base_url=sb.base_url) as client:
        ctx = {**worker(client, pool, 1, job_try=50, max_tries=50),
               "client": StopAtFirstOutcome(client, stopping), "stopping": stopping}
        with pytest.raises(Retry):
            await check_batch(ctx, "r", 0, EMAILS[:3])
    assert stopping.is_set()
    assert checks(sb) == []
    assert await OutcomeStore(pool, "r").all() == {}
    assert await pool.hget(idle_key("r"), "0") == b"1"
