"""The fleet's arq worker: one ``asyncsdk.Client`` per process, tasks that survive a crash.

    ASYNCSDK_BASE_URL=... ASYNCSDK_API_KEY=... ASYNCSDK_USERNAME=... \\
    FLEET_REDIS_URL=redis://127.0.0.1:6379/0 arq examples.fleet.worker.WorkerSettings

(run from the repository root; ``python -m arq ...`` works the same). Settings come from
the environment, read once at import (a bad value stops the worker at start, naming the
variable); see ``FleetConfig``.

Tasks:
- ``check_batch(run, start, emails)``: checks the addresses with ``check_many`` and
  stores each outcome in Redis as it arrives; inputs already stored are skipped, so
  arq's re-run of a batch whose worker died sends only what was never answered.
- ``submit_job(name, file_url)``: submits a file job once and saves ``job.to_dict()``,
  then enqueues ``resume_job(name)``.
- ``resume_job(name)``: rebuilds the job from the saved dict (any worker, any time),
  polls it once, re-queues itself (``Retry(defer=...)``) while it is processing, then
  stores its rows.

Every task turns a failure that is not an answer (Redis down or stalled, a timeout, a
bug) into arq's ``Retry`` with a backoff, and ends itself before arq's timeout would
(``FleetConfig.run_budget``): a task arq finishes as *failed* is never run again.

What a crash costs: arq starts a job at most once at a time (its ``in-progress`` key) and
runs it again after a worker dies once that key expires (the task's timeout + 10 s).
The re-run skips what is stored, so only the checks in flight at the kill — at most
``FLEET_CONCURRENCY`` per running batch, ``FLEET_MAX_JOBS`` batches per worker — can
be sent (and paid for) twice. No request can be exactly-once across a crash without the
service's help (an idempotency key it does not offer): a check answered but not yet
stored when the process dies is sent again. A worker that froze past arq's key (no
heartbeat in arq) and wakes up cannot end a batch another worker has taken over: a run
returns only once every input of its batch is stored, and a batch is checked by one run
at a time (``BatchLease``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import signal
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from arq import Retry
from arq.connections import RedisSettings
from arq.worker import func

import asyncsdk

from .pace import SharedPace, paced_client
from .store import (
    BatchLease,
    FleetInputError,
    FleetJobError,
    FleetPace,
    OutcomeStore,
    RedisVersionError,
    check_redis_version,
    is_final,
    job_key,
)

_T = TypeVar("_T")
log = logging.getLogger("examples.fleet")

#: Seconds a run keeps, after its last check's budget, for its last Redis writes.
WRITE_SECONDS = 1.0
#: Seconds between a run's own deadline and arq's timeout (turning it into a Retry).
MARGIN_SECONDS = 1.0

# FLEET_* variable -> (field, type, minimum, whether the minimum itself is allowed).
_VARIABLES: dict[str, tuple[str, type, float, bool]] = {
    "FLEET_REDIS_URL": ("redis_url", str, 0, True),
    "FLEET_QUEUE": ("queue", str, 0, True),
    "FLEET_CONCURRENCY": ("concurrency", int, 1, True),
    "FLEET_MAX_JOBS": ("max_jobs", int, 1, True),
    "FLEET_SLICE_SECONDS": ("slice_seconds", float, 0, False),
    "FLEET_REQUEST_TIMEOUT": ("request_timeout", float, 0, False),
    "FLEET_CLIENT_RETRIES": ("client_retries", int, 0, True),
    "FLEET_MAX_TRIES": ("max_tries", int, 1, True),
    "FLEET_RETRY_SECONDS": ("retry_seconds", float, 0, True),
    "FLEET_JOB_POLL_SECONDS": ("job_poll_seconds", float, 0, False),
    "FLEET_JOB_MAX_POLLS": ("job_max_polls", int, 1, True),
}


@dataclass(frozen=True)
class FleetConfig:
    """The worker's settings, from ``FLEET_*`` variables (defaults in brackets).

    Attributes:
        redis_url: ``FLEET_REDIS_URL`` [redis://127.0.0.1:6379/0].
        queue: ``FLEET_QUEUE``, the arq queue name [arq:queue].
        concurrency: ``FLEET_CONCURRENCY``, checks in flight per batch [16], >= 1.
        max_jobs: ``FLEET_MAX_JOBS``, batches a worker runs at once [16], >= 1. Many
            small batches rather than a few big ones: the shared pace, not these, bounds
            what is in flight, and a batch waits for its last check, one the service
            refused waiting out its ``Retry-After``: with few batches running, a 429
            episode idled the whole worker for that long.
        slice_seconds: ``FLEET_SLICE_SECONDS`` [60], > 0: a batch run takes no new
            address after this long; it lets those in flight end and re-queues the rest
            at once.
        request_timeout: ``FLEET_REQUEST_TIMEOUT``, each check's budget [30], > 0.
        client_retries: ``FLEET_CLIENT_RETRIES``, the Client's ``max_retries`` [2], >= 0.
        max_tries: ``FLEET_MAX_TRIES``, runs of one batch [50], >= 1 (a time slice is a
            run; a run that sent nothing because the fleet was paused is not). On the
            last one, errors that are not the address's (5xx, 429, ...) are stored as
            its outcome, and inputs it could not send are stored as not attempted.
        retry_seconds: ``FLEET_RETRY_SECONDS``, before re-running a batch that met a
            transient failure (a 5xx, a timeout, no credit) [5], >= 0; doubled for each
            run that failed as a whole (Redis down, ...), up to 16 times.
        job_poll_seconds: ``FLEET_JOB_POLL_SECONDS``, between status polls of a job [5].
        job_max_polls: ``FLEET_JOB_MAX_POLLS`` [17280, a day at 5 s], >= 1.

    Raises:
        ValueError: a value out of range (``from_env`` names the variable).
    """

    redis_url: str = "redis://127.0.0.1:6379/0"
    queue: str = "arq:queue"
    concurrency: int = 16
    max_jobs: int = 16
    slice_seconds: float = 60.0
    request_timeout: float = 30.0
    client_retries: int = 2
    max_tries: int = 50
    retry_seconds: float = 5.0
    job_poll_seconds: float = 5.0
    job_max_polls: int = 17280

    def __post_init__(self) -> None:
        by_field = {f: (v, t, low, inclusive) for v, (f, t, low, inclusive) in _VARIABLES.items()}
        for field in fields(self):
            variable, kind, low, inclusive = by_field[field.name]
            value = getattr(self, field.name)
            if kind is str:
                if not value:
                    raise ValueError(f"{variable} ({field.name}): expected a value, got ''")
                continue
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or math.isnan(value) or math.isinf(value)
                    or (value < low if inclusive else value <= low)):
                want = f"{'an integer' if kind is int else 'a number'} " + (
                    f">= {low:g}" if inclusive else f"> {low:g}")
                raise ValueError(f"{variable} ({field.name}): expected {want}, got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FleetConfig:
        """The settings from the environment (``environ``: default ``os.environ``).

        Raises:
            ValueError: a variable that is not a number, or out of range; the message
                names it.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for variable, (name, kind, _, _) in _VARIABLES.items():
            raw = env.get(variable)
            if raw is None:
                continue
            try:
                values[name] = kind(raw.strip()) if kind is not str else raw
            except ValueError:
                what = "an integer" if kind is int else "a number"
                raise ValueError(f"{variable}: expected {what}, got {raw!r}") from None
        return cls(**values)

    @property
    def run_budget(self) -> float:
        """The longest one task run takes: its slice, the last checks' budget, the writes."""
        return self.slice_seconds + self.request_timeout + WRITE_SECONDS

    @property
    def batch_timeout(self) -> float:
        """arq's timeout of one task run: its own budget, then time to turn it into a Retry.

        A run ends itself at ``run_budget``; arq's timeout would finish the job as failed.
        """
        return self.run_budget + MARGIN_SECONDS

    @property
    def arq_max_tries(self) -> int:
        """arq's ``max_tries`` of a batch: room for runs that only waited out a pause."""
        return 3 * self.max_tries

    @property
    def stop_grace(self) -> int:
        """Seconds a worker told to stop (SIGTERM) lets its batches' checks in flight end."""
        return math.ceil(self.request_timeout + WRITE_SECONDS + MARGIN_SECONDS)

    def backoff(self, job_try: int) -> float:
        """The defer after a run that failed as a whole: doubling, up to 16 times."""
        return float(self.retry_seconds * 2 ** min(max(job_try - 1, 0), 4))


CONFIG = FleetConfig.from_env()


def _on_stop(stopping: asyncio.Event, previous: Any) -> Callable[[int, Any], None]:
    def handler(signum: int, frame: Any) -> None:
        stopping.set()
        if callable(previous):
            previous(signum, frame)
    return handler


async def startup(ctx: dict[str, Any]) -> None:
    """arq ``on_startup``: the ONE Client of this process (credentials from ASYNCSDK_*).

    A Redis older than the fleet supports stops the worker at once, with one line that
    names its version (``SystemExit``: no traceback).
    """
    try:
        version = await check_redis_version(ctx["redis"])
    except RedisVersionError as exc:
        raise SystemExit(f"fleet worker: {exc}") from None
    log.info("Redis %s", version)
    ctx["config"] = CONFIG
    # The checks of every worker go at the fleet's pace, shared through Redis
    # (``pace.SharedPace``: a middleware on this worker's session); enough connections
    # for every batch this worker runs at once.
    ctx["client"], ctx["session"] = paced_client(
        SharedPace(ctx["redis"]), max_retries=CONFIG.client_retries,
        max_connections=max(100, CONFIG.concurrency * CONFIG.max_jobs))
    ctx["pid"] = os.getpid()
    # On SIGTERM/SIGINT, batches send nothing new: arq (job_completion_wait) lets the
    # checks in flight end and be stored, and the rest is re-queued at once. arq's own
    # handler still runs (it is asyncio's, woken through the loop's wakeup fd; this one
    # only sets a flag).
    stopping = ctx["stopping"] = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _on_stop(stopping, signal.getsignal(sig)))


async def shutdown(ctx: dict[str, Any]) -> None:
    """arq ``on_shutdown``: close the Client and its session (not reached on SIGKILL, and
    that is fine)."""
    client: asyncsdk.Client | None = ctx.get("client")
    if client is not None:
        await client.close()
    session = ctx.get("session")
    if session is not None:
        await session.close()


async def _guarded(ctx: dict[str, Any], work: Awaitable[_T], what: str,
                   give_up: Callable[[BaseException], Awaitable[None]] | None = None,
                   *, final: tuple[type[BaseException], ...] = ()) -> _T:
    """Run ``work`` within ``run_budget``; turn what is not an answer into ``Retry``.

    ``Retry``, ``FleetInputError`` and ``final`` pass; any other exception (Redis down or stalled,
    a timeout, a bug) becomes ``Retry(defer=backoff)``, so arq runs the task again
    instead of finishing it as failed. Cancelled by arq once this run's budget is over
    (a worker frozen past it: arq's timeout fires as it wakes up): ``Retry`` as well.
    ``give_up`` runs (best effort) before the last allowed try ends this way.
    """
    config: FleetConfig = ctx["config"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.run_budget
    try:
        return await asyncio.wait_for(work, config.run_budget)
    except (Exception, asyncio.CancelledError) as exc:
        if isinstance(exc, (Retry, FleetInputError, *final)):
            raise
        if isinstance(exc, asyncio.CancelledError) and loop.time() < deadline:
            raise  # the worker is stopping: arq runs the job again
        log.warning("%s failed (try %s), retried: %r", what, ctx.get("job_try"), exc,
                    exc_info=not isinstance(exc, asyncio.CancelledError | TimeoutError))
        if give_up is not None and ctx["job_try"] >= _max_tries(ctx, what):
            try:
                await asyncio.wait_for(give_up(exc), MARGIN_SECONDS)
            except Exception:  # Redis may be what failed: nothing more to do
                log.warning("%s: could not record the failure", what)
        raise Retry(defer=config.backoff(ctx["job_try"])) from exc


def _max_tries(ctx: dict[str, Any], what: str) -> int:
    config: FleetConfig = ctx["config"]
    return config.job_max_polls if what.startswith("resume_job") else config.max_tries


async def check_batch(
    ctx: dict[str, Any], run: str, start: int, emails: list[str]
) -> dict[str, int]:
    """Check ``emails`` (inputs ``start``.. of ``run``), storing each outcome as it comes.

    Returns (only once every input of the batch has an outcome):
        ``{"stored": n, "skipped": m}``: outcomes stored by this run, inputs found done.

    Raises:
        Retry: some inputs are left (a time slice ended, the service rate-limited or
            failed, Redis failed, another run holds the batch); arq runs the batch again
            after ``defer`` and that run skips the rest.
        FleetInputError: the batch is not its run's (an input stored under the same
            index is another address, or the run has another batch size): not retried.
    """
    return await _guarded(ctx, _check_batch(ctx, run, start, emails),
                          f"check_batch {run}:{start}")


PAUSED = "the fleet was paused (the service's Retry-After)"


async def _check_batch(
    ctx: dict[str, Any], run: str, start: int, emails: list[str]
) -> dict[str, int]:
    if not emails:
        return {"stored": 0, "skipped": 0}
    client: asyncsdk.Client = ctx["client"]
    config: FleetConfig = ctx["config"]
    stopping: asyncio.Event | None = ctx.get("stopping")
    store = OutcomeStore(ctx["redis"], run)
    pace = FleetPace(ctx["redis"])
    lease = BatchLease(ctx["redis"], run, start)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.slice_seconds
    token = f"{ctx['pid']}:{uuid.uuid4().hex}"
    # The lease outlives this run's budget, so a run that froze and woke up past it has
    # been ended (Retry) by its own timeout before another run can take the batch.
    held = await lease.acquire(token, config.run_budget + MARGIN_SECONDS)
    if held:
        await store.note_idle(start)  # another run is at it: this one is not a try
        raise Retry(defer=held)
    done, idle, batch_size = await store.prepare(start, len(emails))
    try:
        _check_belongs(run, start, emails, done, batch_size)
    except FleetInputError:
        await lease.release(token)
        raise
    indices = range(start, start + len(emails))
    todo = [(i, email) for i, email in zip(indices, emails, strict=True) if i not in done]
    last_try = (ctx["job_try"] - idle >= config.max_tries
                or ctx["job_try"] >= config.arq_max_tries)
    sent: defaultdict[str, deque[int]] = defaultdict(deque)  # address -> its input indices
    handled: set[int] = set()  # inputs whose outcome this run stored
    # The pause as read in the same round trip as the last stored outcome: check_many
    # asks for the next address right after that outcome, so the reading is current.
    read_with_write: list[float] = []
    # At most ``concurrency`` addresses sent and not yet stored: check_many may have
    # finished checks whose outcomes wait for this loop to store them, and a kill then
    # loses those as well as the checks in flight. Each address takes a slot before it
    # is sent and gives it back once its outcome is handled, so a kill can cost at most
    # ``concurrency`` checks paid twice.
    unstored = asyncio.Semaphore(config.concurrency)
    stop_reason: list[str] = []

    async def feed() -> AsyncIterator[str]:
        for index, email in todo:
            # The whole fleet holds back while the service asks it to (one PTTL a send,
            # or none when the last write brought it; read again after sleeping:
            # another worker may have made the pause longer).
            paused = read_with_write.pop() if read_with_write else await pace.remaining()
            while paused:
                if loop.time() + paused >= deadline:
                    # the pause outlasts this run: arq re-runs it after the pause
                    stop_reason.append(PAUSED)
                    return
                await asyncio.sleep(paused)
                paused = await pace.remaining()
            if loop.time() >= deadline:
                stop_reason.append("its batch's runs ran out of time")
                return  # the checks in flight end; the rest goes to the next run
            if stopping is not None and stopping.is_set():
                stop_reason.append("the worker was stopped")
                return  # the worker is stopping: the rest goes to another worker
            await unstored.acquire()
            sent[email].append(index)
            yield email

    transient: list[asyncsdk.SDKError] = []
    # adaptive=False: the fleet's shared pace (the session's middleware), not the
    # client's own, says when each check leaves; a 429 is still sent again after its
    # wait, without spending a retry, within request_timeout.
    checks = client.validation.check_many(
        feed(), concurrency=config.concurrency, adaptive=False,
        request_timeout=config.request_timeout)
    async with aclosing(checks) as outcomes:
        async for outcome in outcomes:
            index = sent[outcome.email].popleft()
            if isinstance(outcome.error, asyncsdk.RateLimitError):
                await pace.pause(outcome.error.retry_after)
            if is_final(outcome) or last_try:
                read_with_write[:] = [await store.put(index, outcome, ctx["pid"], pace)]
                handled.add(index)
                unstored.release()
                continue
            unstored.release()
            assert outcome.error is not None
            read_with_write.clear()  # no write, no reading: the next send reads afresh
            transient.append(outcome.error)
    left = [(i, email) for i, email in todo if i not in handled]
    # Sent nothing, only waited for a fleet-wide pause: not a try (up to arq's limit).
    only_waited = (len(left) == len(todo) and not transient and stop_reason[:1] == [PAUSED]
                   and ctx["job_try"] < config.arq_max_tries)
    if left and last_try and not only_waited:
        # The last try: an outcome for every input, those never sent included.
        why = stop_reason[0] if stop_reason else "its batch ran out of tries"
        await store.put_not_attempted(left, why, ctx["pid"])
        handled.update(i for i, _ in left)
        left = []
    if left:
        # After a fleet-wide pause at the earliest; after a failure, not at once either.
        defer = await pace.remaining()
        if any(not isinstance(e, asyncsdk.RateLimitError) for e in transient):
            defer = max(defer, config.retry_seconds)
        if only_waited:
            await store.note_idle(start)
        await lease.release(token)
        raise Retry(defer=defer)
    await lease.release(token)
    return {"stored": len(handled), "skipped": len(done)}


def _check_belongs(run: str, start: int, emails: list[str], done: dict[int, str],
                   batch_size: int | None) -> None:
    """Refuse a batch that is not its run's: another input, or another batch size."""
    if batch_size is not None and (start % batch_size or len(emails) > batch_size):
        raise FleetInputError(
            f"run {run!r} is enqueued in batches of {batch_size}, and this batch "
            f"({len(emails)} inputs from {start}) is not one of them: its inputs would be "
            "checked twice. Enqueue it with the run's batch size, or under another run")
    for index, stored in done.items():
        if stored != emails[index - start]:
            raise FleetInputError(
                f"run {run!r}: input {index} is stored as {stored!r}, but this batch has "
                f"{emails[index - start]!r}: another input under the same run label. "
                f"Give this input its own run, or delete the keys fleet:{run}:*")


def _error_key(name: str) -> str:
    return job_key(name) + ":error"


async def fail_job(redis: Any, name: str, message: str) -> None:
    """Record why job ``name`` ended without rows: ``:error``, and ``:state`` ``failed``.

    A ``submitting`` mark is kept (the job may have been paid for: a human decides).
    """
    state = job_key(name) + ":state"
    async with redis.pipeline(transaction=True) as pipe:
        pipe.set(_error_key(name), message)
        pipe.get(state)
        _, current = await pipe.execute()
    if current != b"submitting":
        await redis.set(state, "failed")


async def submit_job(ctx: dict[str, Any], name: str, file_url: str) -> int:
    """Submit ``file_url`` as the validation job ``name`` at most once; save its handle.

    Jobs are paid per address, so this follows the library's own rule for ``create_job``:
    never sent again once it may have reached the service. A ``submitting`` mark is set
    before sending; a run that finds the mark but no saved handle (its worker died in
    between) refuses rather than paying twice, and says what to do. Every refusal is
    written to ``fleet:job:{name}:error`` (and ``:state`` becomes ``failed`` unless the
    mark must stay), so the producer's ``--wait`` ends.

    Returns:
        The job id. Then ``resume_job(name)`` is enqueued.

    Raises:
        FleetJobError: a previous run may have submitted the job (see above).
        asyncsdk.APIError: the service refused the job (nothing was paid).
        Retry: the request surely never reached the service (or a rate limit, or Redis
            failed before sending); tried again later.
    """
    redis = ctx["redis"]

    async def give_up(exc: BaseException) -> None:
        await fail_job(redis, name, f"job {name!r}: the submit failed: {exc!r}")

    return await _guarded(ctx, _submit_job(ctx, name, file_url), f"submit_job {name}",
                          give_up, final=(asyncsdk.APIError, FleetJobError))


async def _submit_job(ctx: dict[str, Any], name: str, file_url: str) -> int:
    client: asyncsdk.Client = ctx["client"]
    redis = ctx["redis"]
    state = job_key(name) + ":state"
    saved = await redis.get(job_key(name))
    if saved is None:
        # SET ... GET: one command, so two runs cannot both see "no mark".
        if await redis.set(state, "submitting", get=True) == b"submitting":
            message = (
                f"job {name!r} may already have been submitted by a worker that died before "
                f"saving it; check the service, then delete {state} to resubmit")
            await fail_job(redis, name, message)
            raise FleetJobError(message)
        await redis.delete(_error_key(name))
        try:
            job = await client.validation.create_job(file_url)
        except asyncsdk.APIConnectionError as exc:
            if exc.may_have_been_sent:  # the mark stays: a human decides
                message = (f"job {name!r}: the submit may have reached the service ({exc}); "
                           f"check the service, then delete {state} to resubmit")
                await fail_job(redis, name, message)
                raise FleetJobError(message) from exc
            await redis.delete(state)
            raise Retry(defer=ctx["config"].retry_seconds) from exc
        except asyncsdk.RateLimitError as exc:  # refused before anything was done
            await redis.delete(state)
            raise Retry(defer=exc.retry_after or ctx["config"].retry_seconds) from exc
        except asyncsdk.APIError as exc:  # the service said no: nothing paid
            await redis.delete(state)
            await fail_job(redis, name, f"job {name!r}: the service refused it: "
                                        f"{type(exc).__name__}: {exc}")
            raise
        saved = json.dumps(job.to_dict())
        async with redis.pipeline(transaction=True) as pipe:
            pipe.set(job_key(name), saved).set(state, "waiting")
            await pipe.execute()
    job_id = int(json.loads(saved)["job_id"])
    # One resume job per submitted job: a result kept of an earlier one never blocks it.
    await redis.enqueue_job("resume_job", name, _job_id=f"resume:{name}:{job_id}",
                            _queue_name=ctx["config"].queue)
    return job_id


async def resume_job(ctx: dict[str, Any], name: str) -> int:
    """Poll the saved job ``name`` once; when it is done, store its rows.

    Any worker can run it at any time: the job is rebuilt from its saved dict
    (``client.validation.job_from_dict``), so a worker dying mid-wait loses nothing and
    nothing is submitted again. Rows go to ``fleet:job:{name}:rows`` (row index -> JSON),
    in pipelined chunks; a re-run after a crash rewrites the same rows (a download is
    not paid for).

    Returns:
        The number of rows (0 for a job that failed, or was still processing after
        ``FLEET_JOB_MAX_POLLS`` polls: ``:state`` is then ``failed``, ``:error`` says why).

    Raises:
        Retry: the job is still processing; polled again after ``FLEET_JOB_POLL_SECONDS``
            (or a failure such as Redis down: after a backoff).
    """
    redis = ctx["redis"]

    async def give_up(exc: BaseException) -> None:
        await fail_job(redis, name, f"job {name!r}: resuming it failed: {exc!r}")

    return await _guarded(ctx, _resume_job(ctx, name), f"resume_job {name}", give_up,
                          final=(FleetJobError,))


async def _resume_job(ctx: dict[str, Any], name: str) -> int:
    client: asyncsdk.Client = ctx["client"]
    config: FleetConfig = ctx["config"]
    redis = ctx["redis"]
    raw = await redis.get(job_key(name))
    if raw is None:
        message = f"no saved job {name!r}; enqueue submit_job first"
        await fail_job(redis, name, message)
        raise FleetJobError(message)
    state = job_key(name) + ":state"
    if await redis.get(state) == b"done":
        return int(await redis.hlen(job_key(name) + ":rows"))
    job = client.validation.job_from_dict(json.loads(raw))
    status = await job.status()
    if status is asyncsdk.JobStatus.FAIL:
        await fail_job(redis, name, f"job {name!r}: the service reports it failed")
        return 0
    if status is not asyncsdk.JobStatus.SUCCESS:  # processing, or a state not known yet
        if ctx["job_try"] >= config.job_max_polls:
            await fail_job(redis, name, (
                f"job {name!r} is still {status} after {config.job_max_polls} polls; "
                f"enqueue resume_job({name!r}) again to keep waiting (nothing is lost)"))
            return 0
        raise Retry(defer=config.job_poll_seconds)
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
        func(check_batch, timeout=CONFIG.batch_timeout, max_tries=CONFIG.arq_max_tries),
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
    # On SIGTERM: take no new job, let the running ones end (their checks in flight are
    # stored, the rest re-queued) for at most this long, then cancel what is left.
    job_completion_wait = CONFIG.stop_grace
