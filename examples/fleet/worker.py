"""The fleet's arq worker: one ``asyncsdk.Client`` per process, tasks that survive a crash.

    ASYNCSDK_BASE_URL=... ASYNCSDK_API_KEY=... ASYNCSDK_USERNAME=... \\
    FLEET_REDIS_URL=redis://127.0.0.1:6379/0 arq examples.fleet.worker.WorkerSettings

(run from the repository root; ``python -m arq ...`` works the same). Settings come from
the environment, read once at import; see ``FleetConfig``.

Tasks:
- ``check_batch(run, start, emails)``: checks the addresses with ``check_many`` and
  stores each outcome in Redis as it arrives; inputs already stored are skipped, so
  arq's re-run of a batch whose worker died sends only what was never answered.
- ``submit_job(name, file_url)``: submits a file job once and saves ``job.to_dict()``,
  then enqueues ``resume_job(name)``.
- ``resume_job(name)``: rebuilds the job from the saved dict (any worker, any time),
  polls it once, re-queues itself (``Retry(defer=...)``) while it is processing, then
  stores its rows.

What a crash costs: arq starts a job at most once at a time (its ``in-progress`` key) and
runs it again after a worker dies once that key expires (the task's timeout + 10 s).
The re-run skips what is stored, so only the checks in flight at the kill — at most
``FLEET_CONCURRENCY`` per running batch, ``FLEET_MAX_JOBS`` batches per worker — can
be sent (and paid for) twice. No request can be exactly-once across a crash without the
service's help (an idempotency key it does not offer): a check answered but not yet
stored when the process dies is sent again.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from arq import Retry
from arq.connections import RedisSettings
from arq.worker import func

import asyncsdk

from .store import FleetPace, OutcomeStore, is_final, job_key

_ENV = os.environ.get


@dataclass(frozen=True)
class FleetConfig:
    """The worker's settings, from ``FLEET_*`` variables (defaults in brackets).

    Attributes:
        redis_url: ``FLEET_REDIS_URL`` [redis://127.0.0.1:6379/0].
        queue: ``FLEET_QUEUE``, the arq queue name [arq:queue].
        concurrency: ``FLEET_CONCURRENCY``, checks in flight per batch [50].
        max_jobs: ``FLEET_MAX_JOBS``, batches a worker runs at once [4].
        slice_seconds: ``FLEET_SLICE_SECONDS`` [60]: a batch run takes no new address
            after this long; it lets those in flight end and re-queues the rest at once.
        request_timeout: ``FLEET_REQUEST_TIMEOUT``, each check's budget [30].
        client_retries: ``FLEET_CLIENT_RETRIES``, the Client's ``max_retries`` [2].
        max_tries: ``FLEET_MAX_TRIES``, runs of one batch [50] (a time slice is a run);
            on the last one, errors that are not the address's (5xx, 429, ...) are
            stored as its outcome.
        retry_seconds: ``FLEET_RETRY_SECONDS``, before re-running a batch that met a
            transient failure (a 5xx, a timeout, no credit) [5].
        job_poll_seconds: ``FLEET_JOB_POLL_SECONDS``, between status polls of a job [5].
        job_max_polls: ``FLEET_JOB_MAX_POLLS`` [17280, a day at 5 s].
    """

    redis_url: str = "redis://127.0.0.1:6379/0"
    queue: str = "arq:queue"
    concurrency: int = 50
    max_jobs: int = 4
    slice_seconds: float = 60.0
    request_timeout: float = 30.0
    client_retries: int = 2
    max_tries: int = 50
    retry_seconds: float = 5.0
    job_poll_seconds: float = 5.0
    job_max_polls: int = 17280

    @classmethod
    def from_env(cls) -> FleetConfig:
        """The settings from the environment."""
        d = cls()
        return cls(
            redis_url=_ENV("FLEET_REDIS_URL", d.redis_url),
            queue=_ENV("FLEET_QUEUE", d.queue),
            concurrency=int(_ENV("FLEET_CONCURRENCY", d.concurrency)),
            max_jobs=int(_ENV("FLEET_MAX_JOBS", d.max_jobs)),
            slice_seconds=float(_ENV("FLEET_SLICE_SECONDS", d.slice_seconds)),
            request_timeout=float(_ENV("FLEET_REQUEST_TIMEOUT", d.request_timeout)),
            client_retries=int(_ENV("FLEET_CLIENT_RETRIES", d.client_retries)),
            max_tries=int(_ENV("FLEET_MAX_TRIES", d.max_tries)),
            retry_seconds=float(_ENV("FLEET_RETRY_SECONDS", d.retry_seconds)),
            job_poll_seconds=float(_ENV("FLEET_JOB_POLL_SECONDS", d.job_poll_seconds)),
            job_max_polls=int(_ENV("FLEET_JOB_MAX_POLLS", d.job_max_polls)),
        )

    @property
    def batch_timeout(self) -> float:
        """arq's timeout of one batch run: its slice, then the last checks' budget."""
        return self.slice_seconds + self.request_timeout + 2.0


CONFIG = FleetConfig.from_env()


async def startup(ctx: dict[str, Any]) -> None:
    """arq ``on_startup``: the ONE Client of this process (credentials from ASYNCSDK_*)."""
    ctx["config"] = CONFIG
    # Enough connections for every batch this worker runs at once.
    ctx["client"] = asyncsdk.Client(
        max_retries=CONFIG.client_retries,
        max_connections=max(100, CONFIG.concurrency * CONFIG.max_jobs),
    )
    ctx["pid"] = os.getpid()


async def shutdown(ctx: dict[str, Any]) -> None:
    """arq ``on_shutdown``: close the Client (not reached on SIGKILL, and that is fine)."""
    client: asyncsdk.Client | None = ctx.get("client")
    if client is not None:
        await client.close()


async def check_batch(
    ctx: dict[str, Any], run: str, start: int, emails: list[str]
) -> dict[str, int]:
    """Check ``emails`` (inputs ``start``.. of ``run``), storing each outcome as it comes.

    Returns:
        ``{"stored": n, "skipped": m}``: outcomes stored by this run, inputs found done.

    Raises:
        Retry: some inputs are left (a time slice ended, the service rate-limited or
            failed); arq runs the batch again after ``defer`` and that run skips the rest.
    """
    client: asyncsdk.Client = ctx["client"]
    config: FleetConfig = ctx["config"]
    store = OutcomeStore(ctx["redis"], run)
    pace = FleetPace(ctx["redis"])
    loop = asyncio.get_running_loop()
    indices = range(start, start + len(emails))
    done = await store.stored(indices)
    todo = [(i, email) for i, email in zip(indices, emails, strict=True) if i not in done]
    last_try = ctx["job_try"] >= config.max_tries
    deadline = loop.time() + config.slice_seconds
    sent: defaultdict[str, deque[int]] = defaultdict(deque)  # address -> its input indices
    # The pause as read in the same round trip as the last stored outcome: check_many
    # asks for the next address right after that outcome, so the reading is current.
    read_with_write: list[float] = []
    # At most ``concurrency`` addresses sent and not yet stored: check_many may have
    # finished checks whose outcomes wait for this loop to store them, and a kill then
    # loses those as well as the checks in flight. Each address takes a slot before it
    # is sent and gives it back once its outcome is handled, so a kill can cost at most
    # ``concurrency`` checks paid twice.
    unstored = asyncio.Semaphore(config.concurrency)

    async def feed() -> AsyncIterator[str]:
        for index, email in todo:
            # The whole fleet holds back while the service asks it to (one PTTL a send,
            # or none when the last write brought it; read again after sleeping:
            # another worker may have made the pause longer).
            paused = read_with_write.pop() if read_with_write else await pace.remaining()
            while paused:
                if loop.time() + paused >= deadline:
                    return  # the pause outlasts this run: arq re-runs it after the pause
                await asyncio.sleep(paused)
                paused = await pace.remaining()
            if loop.time() >= deadline:
                return  # the checks in flight end; the rest goes to the next run
            await unstored.acquire()
            sent[email].append(index)
            yield email

    stored = 0
    transient: list[asyncsdk.SDKError] = []
    checks = client.validation.check_many(
        feed(), concurrency=config.concurrency, request_timeout=config.request_timeout)
    async with aclosing(checks) as outcomes:
        async for outcome in outcomes:
            index = sent[outcome.email].popleft()
            if is_final(outcome) or last_try:
                read_with_write[:] = [await store.put(index, outcome, ctx["pid"], pace)]
                stored += 1
                unstored.release()
                continue
            unstored.release()
            assert outcome.error is not None
            read_with_write.clear()  # no write, no reading: the next send reads afresh
            transient.append(outcome.error)
            if isinstance(outcome.error, asyncsdk.RateLimitError):
                await pace.pause(outcome.error.retry_after)
    if stored < len(todo):
        # After a fleet-wide pause at the earliest; after a failure, not at once either.
        defer = await pace.remaining()
        if any(not isinstance(e, asyncsdk.RateLimitError) for e in transient):
            defer = max(defer, config.retry_seconds)
        raise Retry(defer=defer)
    return {"stored": stored, "skipped": len(done)}


async def submit_job(ctx: dict[str, Any], name: str, file_url: str) -> int:
    """Submit ``file_url`` as the validation job ``name`` at most once; save its handle.

    Jobs are paid per address, so this follows the library's own rule for ``create_job``:
    never sent again once it may have reached the service. A ``submitting`` mark is set
    before sending; a run that finds the mark but no saved handle (its worker died in
    between) refuses rather than paying twice, and says what to do.

    Returns:
        The job id. Then ``resume_job(name)`` is enqueued.

    Raises:
        RuntimeError: a previous run may have submitted the job (see above).
        Retry: the request surely never reached the service; tried again later.
    """
    client: asyncsdk.Client = ctx["client"]
    redis = ctx["redis"]
    saved = await redis.get(job_key(name))
    if saved is None:
        if not await redis.set(job_key(name) + ":state", "submitting", nx=True):
            raise RuntimeError(
                f"job {name!r} may already have been submitted by a worker that died before "
                f"saving it; check the service, then delete {job_key(name)}:state to resubmit")
        try:
            job = await client.validation.create_job(file_url)
        except asyncsdk.APIConnectionError as exc:
            if exc.may_have_been_sent:
                raise  # the mark stays: a human decides
            await redis.delete(job_key(name) + ":state")
            raise Retry(defer=ctx["config"].retry_seconds) from exc
        except asyncsdk.APIError:
            await redis.delete(job_key(name) + ":state")  # the service said no: nothing paid
            raise
        saved = json.dumps(job.to_dict())
        async with redis.pipeline(transaction=True) as pipe:
            pipe.set(job_key(name), saved).set(job_key(name) + ":state", "waiting")
            await pipe.execute()
    await redis.enqueue_job("resume_job", name, _job_id=f"resume:{name}",
                            _queue_name=ctx["config"].queue)
    return int(json.loads(saved)["job_id"])


async def resume_job(ctx: dict[str, Any], name: str) -> int:
    """Poll the saved job ``name`` once; when it is done, store its rows.

    Any worker can run it at any time: the job is rebuilt from its saved dict
    (``client.validation.job_from_dict``), so a worker dying mid-wait loses nothing and
    nothing is submitted again. Rows go to ``fleet:job:{name}:rows`` (row index -> JSON),
    in pipelined chunks; a re-run after a crash rewrites the same rows (a download is
    not paid for).

    Returns:
        The number of rows (0 for a failed job, whose state is ``failed``).

    Raises:
        Retry: the job is still processing; polled again after ``FLEET_JOB_POLL_SECONDS``.
    """
    client: asyncsdk.Client = ctx["client"]
    redis = ctx["redis"]
    raw = await redis.get(job_key(name))
    if raw is None:
        raise RuntimeError(f"no saved job {name!r}; enqueue submit_job first")
    state = job_key(name) + ":state"
    if await redis.get(state) == b"done":
        return int(await redis.hlen(job_key(name) + ":rows"))
    job = client.validation.job_from_dict(json.loads(raw))
    status = await job.status()
    if status is asyncsdk.JobStatus.FAIL:
        await redis.set(state, "failed")
        return 0
    if status is not asyncsdk.JobStatus.SUCCESS:  # processing, or a state not known yet
        raise Retry(defer=ctx["config"].job_poll_seconds)
    count = 0
    async with aclosing(job.rows()) as rows, redis.pipeline(transaction=False) as pipe:
        async for row in rows:
            pipe.hset(job_key(name) + ":rows", str(count), json.dumps({
                "email": row.email, "name": row.name, "status": str(row.status),
                "role_based": row.role_based}))
            count += 1
            if count % 500 == 0:
                await pipe.execute()
        await pipe.execute()
    await redis.set(state, "done")
    return count


class WorkerSettings:
    """arq settings; ``arq examples.fleet.worker.WorkerSettings`` runs a worker."""

    functions = [
        func(check_batch, timeout=CONFIG.batch_timeout, max_tries=CONFIG.max_tries),
        func(submit_job, timeout=CONFIG.batch_timeout, max_tries=CONFIG.max_tries),
        func(resume_job, timeout=CONFIG.batch_timeout, max_tries=CONFIG.job_max_polls),
    ]
    on_startup = startup
    on_shutdown = shutdown
    redis_settings = RedisSettings.from_dsn(CONFIG.redis_url)
    queue_name = CONFIG.queue
    max_jobs = CONFIG.max_jobs
    # A job's in-progress key lives for its timeout + 10 s: the longest a dead worker's
    # batch waits before another worker takes it. Keep every task's timeout short.
    job_timeout = CONFIG.batch_timeout
    keep_result = 3600
    poll_delay = 0.1
