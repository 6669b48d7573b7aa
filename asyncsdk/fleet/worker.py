"""The fleet's worker: arq underneath, one ``asyncsdk.Client`` per process, tasks that
survive a crash.

    asyncsdk fleet worker [--redis-url URL] [--concurrency N] ...

(``serve``; credentials from ``--api-key``/``--username``/``--base-url`` or the
``ASYNCSDK_*`` variables, settings from flags or ``FLEET_*`` variables, see
``config.FleetConfig``: a bad value stops the worker before it starts, naming it).

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

The pace: ``shared_pace.SharedPace``, the library's own rate finder (``asyncsdk.pacing``)
driven by the fleet's one stream of events in Redis: built as ``SharedPace(redis)`` once
per process, given to each batch's ``check_many(pace=...)`` (a ``SendPolicy``: asked
before every send, told every answer), closed (``aclose``) at shutdown. The worker's
``Client`` is a plain one (its own session).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any, TypeVar

import attrs
from arq import Retry
from arq.connections import RedisSettings
from arq.worker import Worker, func
from redis.asyncio import Redis
from redis.exceptions import RedisError

import asyncsdk
from asyncsdk.cli.outputs import never_left

from . import config as settings
from .config import FleetConfig
from .shared_pace import SharedPace
from .store import (
    REDIS_DOWN,
    REDIS_OUTAGE_SECONDS,
    REDIS_RETRY_CAP_SECONDS,
    BatchLease,
    FleetInputError,
    FleetJobError,
    FleetPace,
    OutcomeStore,
    check_redis_version,
    is_final,
    job_key,
    job_source_key,
)

_T = TypeVar("_T")
log = logging.getLogger("asyncsdk.fleet")


@attrs.frozen(repr=False)
class Account:
    """The service and credentials a worker's Client uses (None: its ``ASYNCSDK_*``
    variable). Its repr shows none of them: it may sit in a traceback's locals."""

    api_key: str | None = None
    username: str | None = None
    base_url: str | None = None

    def __repr__(self) -> str:
        return "Account(...)"


async def startup(ctx: dict[str, Any]) -> None:
    """arq ``on_startup``: the ONE Client of this process (``ctx["account"]``, else the
    ``ASYNCSDK_*`` variables), at the fleet's pace.

    Raises:
        RedisVersionError: the Redis is older than the fleet supports (one line that
            names its version).
    """
    version = await check_redis_version(ctx["redis"])
    log.info("Redis %s", version)
    config: FleetConfig = ctx["config"]
    # The checks of every worker go at the fleet's pace, shared through Redis
    # (``shared_pace.SharedPace``, each batch's ``check_many(pace=...)``; on the
    # default clock, as the client's); enough connections for every batch this worker
    # runs at once.
    ctx["pace"] = SharedPace(ctx["redis"])
    who: Account = ctx.get("account") or Account()
    ctx["client"] = client = asyncsdk.Client(
        who.api_key, who.username, base_url=who.base_url, max_retries=config.client_retries,
        max_connections=max(100, config.concurrency * config.max_jobs))
    ctx["pid"] = os.getpid()
    if client.validation_url is None:  # every check would fail: take no batch
        raise asyncsdk.ConfigurationError(
            "no URL for the validation service: pass --base-url before 'fleet', or set "
            "ASYNCSDK_BASE_URL", field="base_url")


async def shutdown(ctx: dict[str, Any]) -> None:
    """arq ``on_shutdown``: close the Client and the pace (not reached on SIGKILL, and
    that is fine).

    Raises no Redis error: arq closes its pool only once this returns, and a pace whose
    last events could not be told (Redis gone) left the pool and its connections open.
    """
    client: asyncsdk.Client | None = ctx.get("client")
    pace: SharedPace | None = ctx.get("pace")
    try:
        if client is not None:
            await client.close()
    finally:
        if pace is not None:
            try:
                await pace.aclose()
            except (RedisError, OSError) as exc:  # its tasks are stopped all the same
                log.warning("the fleet's pace could not tell its last events: %r", exc)


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
                await asyncio.wait_for(give_up(exc), settings.MARGIN_SECONDS)
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


# Why an input its batch's last try did not send is stored as not attempted: the
# reason that held it back, never another (a stop is not the slice's end, nor a try).
PAUSED = "the fleet was paused (the service's Retry-After)"
STOPPED = "the worker was stopped"
SLICE_OVER = "its batch's runs ran out of time"
#: None of the above was seen (not expected: kept so that every input gets a reason).
OUT_OF_TRIES = "its batch ran out of tries"


async def _check_batch(
    ctx: dict[str, Any], run: str, start: int, emails: list[str]
) -> dict[str, int]:
    if not emails:
        return {"stored": 0, "skipped": 0}
    batch = BatchRun(ctx, run, start, emails)
    await batch.take()
    try:
        await batch.check(ctx["client"])
        return await batch.finish()
    except asyncio.CancelledError:
        # arq cancelled the run (a second signal, a drain past its grace, its timeout):
        # its checks are cancelled too, so the batch is free for the next run at once,
        # instead of once the lease expires (its budget and more: 92 s by default).
        await batch.let_go()
        raise


class BatchRun:
    """One run of one batch: take its lease, check what is not stored, store each
    outcome as it comes, then end (every input stored) or hand the rest back (Retry)."""

    def __init__(self, ctx: dict[str, Any], run: str, start: int, emails: list[str]) -> None:
        self.config: FleetConfig = ctx["config"]
        self.job_try: int = ctx["job_try"]
        self.pid: int = ctx["pid"]
        self.stopping: asyncio.Event = ctx.get("stopping") or asyncio.Event()
        self.run, self.start, self.emails = run, start, emails
        self.store = OutcomeStore(ctx["redis"], run)
        self.pace = FleetPace(ctx["redis"])
        self.shared_pace: SharedPace = ctx["pace"]
        self.lease = BatchLease(ctx["redis"], run, start)
        self.token = f"{self.pid}:{uuid.uuid4().hex}"
        self.loop = asyncio.get_running_loop()
        # Done once ``stopping`` is set (SIGTERM), while ``check`` runs: what ends the
        # waits for a pause and for a moment of the pace at once.
        self.stopped: asyncio.Future[Any] = self.loop.create_future()
        self.deadline = self.loop.time() + self.config.slice_seconds
        self.done: dict[int, str] = {}  # inputs stored before this run: index -> address
        self.todo: list[tuple[int, str]] = []
        self.last_try = False
        self.sent: defaultdict[str, deque[int]] = defaultdict(deque)  # address -> indices
        self.handled: set[int] = set()  # inputs whose outcome this run stored
        # The pause as read in the same round trip as the last stored outcome:
        # check_many asks for the next address right after that outcome, so the
        # reading is current.
        self.read_with_write: list[float] = []
        # At most ``concurrency`` addresses sent and not yet stored: check_many may have
        # finished checks whose outcomes wait for this loop to store them, and a kill
        # then loses those as well as the checks in flight. Each address takes a slot
        # before it is sent and gives it back once its outcome is handled, so a kill can
        # cost at most ``concurrency`` checks paid twice.
        self.unstored = asyncio.Semaphore(self.config.concurrency)
        self.stop_reason: list[str] = []  # why ``feed`` ended before its last address
        self.kept_by_stop: set[int] = set()  # taken by check_many, not sent: the stop
        self.transient: list[asyncsdk.SDKError] = []
        self.misconfigured: list[asyncsdk.ConfigurationError] = []

    async def take(self) -> None:
        """Hold the batch and read what is stored.

        Raises:
            Retry: another run holds the batch (this one is not counted as a try).
            FleetInputError: the batch is not its run's.
        """
        config = self.config
        # The lease outlives this run's budget, so a run that froze and woke up past it
        # has been ended (Retry) by its own timeout before another run takes the batch.
        held = await self.lease.acquire(self.token,
                                        config.run_budget + settings.MARGIN_SECONDS)
        if held:
            await self.store.note_idle(self.start)  # another run is at it: not a try
            raise Retry(defer=held)
        self.done, idle, batch_size = await self.store.prepare(self.start, len(self.emails))
        try:
            _check_belongs(self.run, self.start, self.emails, self.done, batch_size)
        except FleetInputError:
            await self.lease.release(self.token)
            raise
        indices = range(self.start, self.start + len(self.emails))
        self.todo = [(i, email) for i, email in zip(indices, self.emails, strict=True)
                     if i not in self.done]
        self.last_try = (self.job_try - idle >= config.max_tries
                         or self.job_try >= config.arq_max_tries)

    async def feed(self) -> AsyncIterator[str]:
        """The addresses to send, each once its turn comes: none while the fleet is
        paused, none once the slice is over or the worker stopping."""
        for index, email in self.todo:
            # A 429 just reported may pause the fleet: read the pause once it is in Redis.
            await self.shared_pace.settled()
            if not await self.wait_out_pause():
                return
            if self.loop.time() >= self.deadline:
                self.stop_reason.append(SLICE_OVER)
                return  # the checks in flight end; the rest goes to the next run
            if self.stopping.is_set():
                self.stop_reason.append(STOPPED)
                return  # the worker is stopping: the rest goes to another worker
            await self.unstored.acquire()
            self.sent[email].append(index)
            yield email

    async def wait_out_pause(self) -> bool:
        """Hold back while the service asks the whole fleet to (one PTTL a send, or none
        when the last write brought it; read again after sleeping: another worker may
        have made the pause longer). False: the pause outlasts this run."""
        paused = (self.read_with_write.pop() if self.read_with_write
                  else await self.pace.remaining())
        while paused:
            if self.loop.time() + paused >= self.deadline:
                # the pause outlasts this run: arq re-runs it after the pause
                self.stop_reason.append(PAUSED)
                return False
            await asyncio.wait((self.stopped,), timeout=paused)
            if self.stopping.is_set():  # the pause is another worker's to wait out
                self.stop_reason.append(STOPPED)
                return False
            paused = await self.pace.remaining()
        return True

    async def check(self, client: asyncsdk.Client) -> None:
        """Send the batch through ``check_many``, storing each final outcome at once."""
        # The fleet's shared pace, not the client's own, says when each check leaves
        # and hears every answer; a 429 is sent again after its wait, without spending
        # a retry, within request_timeout.
        # ``stop``: once the worker is stopping no check leaves, one already waiting for
        # its moment of the pace included (not attempted: its input is the next run's).
        self.stopped = self.loop.create_task(self.stopping.wait())
        checks = client.validation.check_many(
            self.feed(), concurrency=self.config.concurrency, pace=self.shared_pace,
            request_timeout=self.config.request_timeout, stop=self.stopping)
        try:
            async with aclosing(checks) as outcomes:
                async for outcome in outcomes:
                    await self.handle(outcome)
        finally:
            self.stopped.cancel()  # this run's watch (our task; done: nothing happens)

    async def handle(self, outcome: asyncsdk.CheckOutcome) -> None:
        """Store a final outcome (any, on the last try); note a transient failure."""
        index = self.sent[outcome.email].popleft()
        if self.kept_by_the_stop(outcome):
            self.kept_by_stop.add(index)
            self.unstored.release()  # kept from leaving by the stop: the next run's
            return
        if isinstance(outcome.error, asyncsdk.RateLimitError):
            await self.pace.pause(outcome.error.retry_after)
        if isinstance(outcome.error, asyncsdk.ConfigurationError):
            # This worker's setup (no username, no URL), not the address's: never stored,
            # not even on the last try; another worker (or this one, fixed) checks it.
            self.misconfigured.append(outcome.error)
        elif is_final(outcome) or self.last_try:
            self.read_with_write[:] = [
                await self.store.put(index, outcome, self.pid, self.pace)]
            self.handled.add(index)
            self.unstored.release()
            return
        self.unstored.release()
        if self.misconfigured:
            return
        assert outcome.error is not None
        self.read_with_write.clear()  # no write, no reading: the next send reads afresh
        self.transient.append(outcome.error)

    def kept_by_the_stop(self, outcome: asyncsdk.CheckOutcome) -> bool:
        """Whether ``outcome`` is of a check that the worker's stop kept from leaving:
        one check_many refused at its ``stop=`` (not attempted, a plain ``SDKError``);
        before the last try, any that never left as well (the next run's). One refused
        for a failure of the run's own (no credit, a wrong key: its class; no username:
        a ``ConfigurationError``, handed back) is dealt with as that failure; on the
        last try, one its pace held past its budget is stored with that error."""
        error = outcome.error
        if not self.stopping.is_set() or error is None:
            return False
        if not outcome.attempted:
            return type(error) is asyncsdk.SDKError
        return not self.last_try and never_left(error)

    def why_not_sent(self, index: int) -> str:
        """Why input ``index`` (without an outcome at the end of the last try) was not
        sent: the stop, for one check_many refused at it; else what ended ``feed``;
        else the stop again (check_many, halted by it, asked ``feed`` for no more)."""
        if index in self.kept_by_stop:
            return STOPPED
        if self.stop_reason:
            return self.stop_reason[0]
        return STOPPED if self.stopping.is_set() else OUT_OF_TRIES

    async def finish(self) -> dict[str, int]:
        """End the run: every input stored, or the rest handed back to arq.

        Raises:
            Retry: inputs are left; after the fleet's pause at the earliest.
        """
        left = [(i, email) for i, email in self.todo if i not in self.handled]
        if self.misconfigured:
            await self.hand_back_misconfigured()
        # Sent nothing, only waited for a fleet-wide pause: not a try (up to arq's limit).
        only_waited = (len(left) == len(self.todo) and not self.transient
                       and self.stop_reason[:1] == [PAUSED]
                       and self.job_try < self.config.arq_max_tries)
        if left and self.last_try and not only_waited:
            # The last try: an outcome for every input, those never sent included.
            await self.store.put_not_attempted(
                [(i, email, self.why_not_sent(i)) for i, email in left], self.pid)
            self.handled.update(i for i, _ in left)
            left = []
        if left:
            # After a fleet-wide pause at the earliest; after a failure, not at once.
            defer = await self.pace.remaining()
            if any(not isinstance(e, asyncsdk.RateLimitError) for e in self.transient):
                defer = max(defer, self.config.retry_seconds)
            if only_waited:
                await self.store.note_idle(self.start)
            await self.lease.release(self.token)
            raise Retry(defer=defer)
        await self.lease.release(self.token)
        return {"stored": len(self.handled), "skipped": len(self.done)}

    async def let_go(self) -> None:
        """Let the lease go, from a run being cancelled (best effort, briefly: Redis may
        be what failed; the lease then expires by itself)."""
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self.lease.release(self.token)),
                                   settings.MARGIN_SECONDS)

    async def hand_back_misconfigured(self) -> None:
        """The worker's setup failed the checks: hand the rest back, not as a try (so no
        last try stores it), after ``retry_seconds``, and say why in the log.

        Raises:
            Retry: always.
        """
        log.error("check_batch %s:%s: this worker cannot check (%s); its inputs are left "
                  "for a worker that can", self.run, self.start, self.misconfigured[0])
        await self.store.note_idle(self.start)
        await self.lease.release(self.token)
        raise Retry(defer=self.config.retry_seconds)


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


async def submit_job(ctx: dict[str, Any], name: str, file_url: str | None = None) -> int:
    """Submit ``file_url`` as the validation job ``name`` at most once; save its handle.

    ``file_url`` None (as ``fleet submit --job`` enqueues it): the URL the command stored
    in ``fleet:job:{name}:source``. arq logs a task's arguments, and such a URL may hold
    a password or a signed token: the task is enqueued with the label alone.

    Jobs are paid per address, so this follows the library's own rule for ``create_job``:
    never sent again once it may have reached the service. A ``submitting`` mark is set
    before sending; a run that finds the mark but no saved handle (its worker died in
    between) refuses rather than paying twice, and says what to do. Every refusal is
    written to ``fleet:job:{name}:error`` (and ``:state`` becomes ``failed`` unless the
    mark must stay), so ``submit --wait`` ends.

    Returns:
        The job id. Then ``resume_job(name)`` is enqueued.

    Raises:
        FleetJobError: a previous run may have submitted the job (see above).
        asyncsdk.APIError: the service refused the job (nothing was paid).
        Retry: the request surely never reached the service (or a rate limit, or Redis
            failed before sending); tried again later.
    """
    redis = ctx["redis"]
    if file_url is None:
        file_url = await _stored_job_url(redis, name)

    async def give_up(exc: BaseException) -> None:
        await fail_job(redis, name, await _why_submit_failed(redis, name, exc))

    return await _guarded(ctx, _submit_job(ctx, name, file_url), f"submit_job {name}",
                          give_up, final=(asyncsdk.APIError, FleetJobError))


async def _why_submit_failed(redis: Any, name: str, exc: BaseException) -> str:
    """Why the last try of job ``name``'s submit, ended by ``exc`` (Redis, its run's
    time), leaves it without rows, as Redis shows: a saved handle (submitted, not yet
    resumed); the ``submitting`` mark alone (ended with the submit in flight or its
    answer unsaved: it may have been paid for); neither (nothing was sent)."""
    state = job_key(name) + ":state"
    if await redis.exists(job_key(name)):
        return (f"job {name!r} was submitted and saved, but its run ended before its "
                f"resume was enqueued ({exc!r}); submit it again under the same label: "
                "the saved job is resumed, not sent again")
    if await redis.get(state) == b"submitting":
        return (f"job {name!r}: the submit may have reached the service (its run ended "
                f"with it in flight or unsaved: {exc!r}); check the service, then "
                f"delete {state} to resubmit")
    return f"job {name!r}: the submit failed before it was sent: {exc!r}"


async def _stored_job_url(redis: Any, name: str) -> str:
    """The file URL ``fleet submit --job`` stored for job ``name``.

    Raises:
        FleetJobError: none is stored (its keys were deleted): nothing was sent.
    """
    stored = await redis.get(job_source_key(name))
    if stored is None:
        message = (f"job {name!r}: its file URL is no longer stored (was fleet:job:{name}:* "
                   "deleted?); nothing was sent: submit it again")
        await fail_job(redis, name, message)
        raise FleetJobError(message)
    return str(stored.decode("utf-8", "surrogatepass"))


async def _submit_job(ctx: dict[str, Any], name: str, file_url: str) -> int:
    client: asyncsdk.Client = ctx["client"]
    redis = ctx["redis"]
    state = job_key(name) + ":state"
    saved = await redis.get(job_key(name))
    if saved is None:
        # SET ... GET: one command, so two runs cannot both see "no mark".
        if await redis.set(state, "submitting", get=True) == b"submitting":
            message = (
                f"job {name!r} may already have been submitted by an earlier run that "
                "ended before saving it (its worker died, or its time ran out with the "
                f"submit in flight); check the service, then delete {state} to resubmit")
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
        except asyncsdk.InvalidInputError as exc:  # refused before sending: nothing paid
            await redis.delete(state)
            await fail_job(redis, name, f"job {name!r}: not submitted (nothing was sent): "
                                        f"{type(exc).__name__}: {exc}")
            raise FleetJobError(f"job {name!r}: not submitted: {exc}") from exc
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


def make_worker(config: FleetConfig, account: Account | None = None, *,
                stopping: asyncio.Event | None = None) -> Worker:
    """arq's ``Worker`` of the fleet's tasks, with ``config`` (in the running loop).

    ``stopping`` (set on SIGTERM/SIGINT by ``serve``): batches send nothing new once it
    is set; arq (``job_completion_wait``) lets the checks in flight end and be stored,
    and the rest is re-queued at once.
    """
    timeout = config.batch_timeout
    return Worker(
        functions=[
            func(check_batch, timeout=timeout, max_tries=config.arq_max_tries),
            func(submit_job, timeout=timeout, max_tries=config.max_tries),
            func(resume_job, timeout=timeout, max_tries=config.job_max_polls),
        ],
        on_startup=startup,
        on_shutdown=shutdown,
        redis_settings=RedisSettings.from_dsn(config.redis_url),
        queue_name=config.queue,
        max_jobs=config.max_jobs,
        # A job's in-progress key lives for its timeout + 10 s: the longest a dead
        # worker's batch waits before another worker takes it. Keep every task's
        # timeout short.
        job_timeout=timeout,
        keep_result=3600,
        poll_delay=0.1,
        # On SIGTERM: take no new job, let the running ones end (their checks in flight
        # are stored, the rest re-queued) for at most this long, then cancel the rest.
        job_completion_wait=config.stop_grace,
        ctx={"config": config, "account": account, "stopping": stopping},
    )


async def serve(config: FleetConfig, account: Account | None = None) -> None:
    """Run a worker until SIGTERM or SIGINT (Ctrl-C), then drain it: no new check is
    sent, those in flight end and are stored, the rest of its batches go back to the
    queue at once (within ``config.stop_grace``; a second signal cancels what is left).

    Redis gone mid-run (arq's loop stops on the first error): the worker waits for it
    to answer again (up to ``REDIS_OUTAGE_SECONDS``, a line in its log at each try) and
    starts afresh; its batches then stored are skipped, the rest run again.

    Raises:
        RedisVersionError: the Redis is older than the fleet supports.
        redis.exceptions.ConnectionError: Redis cannot be reached (at the start, or for
            longer than ``REDIS_OUTAGE_SECONDS``).
    """
    loop = asyncio.get_running_loop()
    signals = StopSignals()
    try:
        while True:
            signals.worker = worker = make_worker(config, account, stopping=signals.stopping)
            # In place of arq's own handlers, which it installs as it is made (they only
            # drain): the batches' flag first, and a second signal stops at once.
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, signals.received, signum)
            try:
                await _run(worker)
                return
            except REDIS_DOWN as exc:
                signals.worker = None  # closed: a signal now ends the wait below
                if signals.stopping.is_set() or "client" not in worker.ctx:
                    raise  # stopping, or never started: say so at once
                log.warning("Redis stopped answering (%s); the worker starts again once "
                            "it answers", exc)
                if not await _redis_back(config, signals.stopping):
                    raise
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


class StopSignals:
    """SIGTERM and SIGINT for the worker running now (``worker``): the first sets
    ``stopping`` and drains it, the second stops it at once."""

    def __init__(self) -> None:
        self.stopping = asyncio.Event()
        self.worker: Worker | None = None

    def received(self, signum: int) -> None:
        first = not self.stopping.is_set()
        self.stopping.set()
        if self.worker is None:
            return
        if first:
            self.worker.handle_sig_wait_for_completion(signal.Signals(signum))
        else:
            self.worker.handle_sig(signal.Signals(signum))


async def _run(worker: Worker) -> None:
    """Run arq's ``worker`` until it stops; then close it, even with Redis gone."""
    try:
        await worker.async_run()
    except asyncio.CancelledError:
        if worker.main_task is None or not worker.main_task.cancelled():
            raise  # not the worker's own stop: this task was cancelled
    finally:
        await _close(worker)


async def _close(worker: Worker) -> None:
    """arq's close of ``worker``; where it stops part way (Redis gone; a run's end that a
    second signal cancelled), what it did not get to: the runs' end (they end by
    themselves, as Retry: their Redis fails them too), the Client and the pace, and
    arq's pool, closed whatever the rest raised."""
    try:
        await worker.close()
    except BaseException:
        try:
            await asyncio.gather(*worker.tasks.values(), return_exceptions=True)
            await shutdown(worker.ctx)
        finally:
            with contextlib.suppress(RedisError, OSError):
                await worker.pool.aclose()
        raise


async def _redis_back(config: FleetConfig, stopping: asyncio.Event) -> bool:
    """Try to reach Redis until it answers (True), the worker is told to stop or
    ``REDIS_OUTAGE_SECONDS`` have passed (False); a log line at each try."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REDIS_OUTAGE_SECONDS
    settings = RedisSettings.from_dsn(config.redis_url)
    delay = 0.1
    while not stopping.is_set() and loop.time() < deadline:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stopping.wait(), delay)
        # A client of our own, closed whatever its ping gives: arq's create_pool leaves
        # the connection of a failed ping open (a server still starting accepts it).
        probe = Redis.from_url(config.redis_url, socket_connect_timeout=settings.conn_timeout)
        try:
            await probe.ping()
        except (RedisError, OSError) as exc:
            delay = min(2 * delay, REDIS_RETRY_CAP_SECONDS)
            log.warning("Redis does not answer (%s); trying again in %.1f s", exc, delay)
            continue
        finally:
            await probe.aclose()
        return not stopping.is_set()
    return False
