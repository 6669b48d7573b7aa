"""``validation.check_many``: many checks at once, one ``CheckOutcome`` per input.

How it runs: a pool of at most ``concurrency`` worker tasks, grown one at a time as
inputs arrive, each taking the next input from the source, awaiting its check and
putting the outcome in a buffer that the caller's generator empties. Nothing is
allocated per input beyond the check itself and its outcome (no task, no queue item),
and reading the source never stands between a finished check and its delivery: a worker
waiting on a slow source holds up nobody but itself.

A worker takes an input only while fewer than ``limit`` (``concurrency``) inputs are
taken and their outcomes not yet received by the caller, so at most ``limit`` checks are
in flight and the outcomes waiting for a slow consumer are at most ``limit``: memory
stays O(concurrency) whatever the input's length. How many of those are on the wire at
once is the pace's to say, not this module's: each check is a bulk call
(``Validation._bulk_check``), sent when the client's pace of the validation area (or the
caller's ``pace``, a ``SendPolicy``) lets it
(``_core.pace``: the rate and the window the service takes, found from every attempt's
answer), and a 429 it gets is sent again after the wait asked for, without spending a
retry, until its budget ends. The slots are a ``Window`` (``_core.window``) of
``concurrency`` places, closed when reading ends. A worker that finds no slot while the
consumer is already woken waits one loop turn (the consumer runs first and takes what
is ready); otherwise it waits in line until the consumer frees a slot.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
)
from contextlib import aclosing
from functools import partial
from typing import Any, Protocol, cast

from ..._checks import check_bool, check_count, check_seconds
from ..._core import Admission, Backlog, SendPolicy, Window
from ..._errors import (
    APIError,
    AuthenticationError,
    ConfigurationError,
    InsufficientCreditError,
    InvalidInputError,
    SDKError,
    UsageError,
)
from ...models.validation import CheckFailure, CheckOutcome, CheckResult, CheckSuccess

__all__ = ["CheckFunction", "PacedCheckFunction", "callers_policy", "check_many"]

#: Failures after which ``check_many`` stops sending: every later check would fail too
#: (refused credentials or credit, a client closed under the run or used wrongly, a
#: credential or URL the client lacks).
_STOPPING = (AuthenticationError, InsufficientCreditError, UsageError, ConfigurationError)


class CheckFunction(Protocol):
    """``Validation.check``'s shape: raises ``InvalidInputError`` before sending anything
    for an input that is not an address."""

    async def __call__(self, email: str, *, validity_timeout: float,
                       request_timeout: float | None) -> CheckResult: ...


class PacedCheckFunction(Protocol):
    """``Validation._bulk_check``'s shape: a check whose attempts ``policy`` lets out."""

    async def __call__(self, email: str, *, validity_timeout: float,
                       request_timeout: float | None, policy: SendPolicy) -> CheckResult: ...


def check_many(
    check: CheckFunction | PacedCheckFunction,
    emails: Iterable[str] | AsyncIterable[str],
    *,
    concurrency: int,
    adaptive: bool,
    validity_timeout: float,
    request_timeout: float | None,
    backlog: Backlog | None = None,
    policy: SendPolicy | None = None,
    stop: asyncio.Event | None = None,
    usable: Callable[[], None] | None = None,
) -> AsyncGenerator[CheckOutcome, None]:
    """The generator of ``Validation.check_many`` (documented there), each input checked
    with ``check`` (for ``adaptive``, see ``Validation._bulk_check``); the arguments are
    checked here, at the call. ``backlog`` (of ``emails``, told to the pace) is counted
    down as inputs are taken, and set to 0 when the run ends. ``policy``: the run's send
    policy, given to ``check`` as ``policy=`` behind the run's gate (``_StopGate``: once
    the run stops, no check waiting for it is sent). ``stop``: the caller's event that
    stops the run (``_Run.halt``). ``usable``: raises the error every check would (a
    closed client), asked once as the iteration starts, before any input is read."""
    check_count(concurrency, "concurrency")
    check_bool(adaptive, "adaptive")
    check_seconds(validity_timeout, "validity_timeout")
    if request_timeout is not None:
        check_seconds(request_timeout, "request_timeout")
    if isinstance(emails, (str, bytes, bytearray, memoryview)):
        # One address (text or bytes) is an iterable too: of characters, or of ints.
        raise InvalidInputError("emails: expected an iterable of addresses, got a single "
                                f"{type(emails).__name__}", field="emails")
    if not isinstance(emails, (Iterable, AsyncIterable)):
        raise InvalidInputError(
            f"emails: expected an iterable, got {type(emails).__name__}", field="emails")
    if stop is not None and not isinstance(stop, asyncio.Event):
        raise InvalidInputError(
            f"stop: expected an asyncio.Event, got {type(stop).__name__}", field="stop")
    return _Run(check, concurrency, validity_timeout, request_timeout,
                backlog, policy).outcomes(emails, stop, usable)


def callers_policy(pace: object, adaptive: object) -> SendPolicy:
    """``check_many(pace=...)``: the caller's policy, in place of the client's pace
    (``adaptive`` is about the client's pace: left at its default)."""
    if not isinstance(pace, SendPolicy):
        raise InvalidInputError(
            f"pace: expected an asyncsdk.pacing.SendPolicy (admit, report, resends_free, "
            f"held_until), got {type(pace).__name__}", field="pace")
    if adaptive is not True:
        raise InvalidInputError(
            "adaptive: concerns the client's own pace, which pace= replaces; leave it "
            "out with pace=", field="adaptive")
    return pace


# --- outcomes (a success is built where it is delivered, ``_Run._work``) ---------------
def _failed(email: str, error: SDKError) -> CheckOutcome:
    # Refused before sending because no check could be sent (closed client, missing
    # configuration): not attempted. A bad address is attempted: dealt with, never sent.
    return CheckFailure(email=email, error=error,
                        attempted=not isinstance(error, (UsageError, ConfigurationError)))


def _unsendable(exc: ValueError) -> InvalidInputError:
    """What a ``ValueError`` from below the library (aiohttp or yarl refusing the request
    of one input) makes of that input: its failure, not the run's. Its text is not
    repeated (it may show the request); it stays the ``__cause__``."""
    error = InvalidInputError(f"could not be sent: the HTTP client refused the request "
                              f"({type(exc).__name__})")
    error.__cause__ = exc
    return error


def _skipped(value: object, cause: SDKError) -> CheckOutcome:
    """The outcome of an input not sent because ``cause`` stopped the run: an error of
    the same class, saying so."""
    error: SDKError
    if isinstance(cause, APIError):
        error = type(cause)(
            f"not attempted: the run stopped after {cause.error_text or cause.message}",
            operation=cause.operation, status_code=cause.status_code,
            error_text=cause.error_text)
    elif isinstance(cause, InvalidInputError):
        error = type(cause)(f"not attempted: the run stopped after {cause}",
                            field=cause.field)
    else:
        error = type(cause)(f"not attempted: the run stopped after {cause}")
    error.__cause__ = cause
    return CheckFailure(email=_shown(value), error=error, attempted=False)


class _NotSent(Exception):
    """A check the run kept from leaving: it stopped while the check waited for its
    pace (never seen outside the run)."""


class _StopGate:
    """A run's send policy: ``policy``'s, except that once the run has stopped
    (``stopped``: an authentication or credit failure, or the run's failure: its
    source's error, the caller's way to stop early) no check that waits for it
    leaves (DESIGN §2: the run stops sending; those waiting for a moment of the pace
    when it stopped were sent all the same, up to ``concurrency`` of them). A moment the
    pace gives then is handed back unused, as an attempt without an answer; a wait for
    one in progress then is cut short (``stop``), so a run stopped while the service
    takes nothing does not wait for its budget to end."""

    __slots__ = ("_cut", "_policy", "_waiting", "stopped")

    def __init__(self, policy: SendPolicy) -> None:
        self._policy = policy
        self.stopped = False
        self._waiting: set[asyncio.Task[Any]] = set()  # in ``admit``, waiting for a moment
        self._cut: set[asyncio.Task[Any]] = set()  # cancelled by ``stop``, not yet out

    def stop(self, ours: list[asyncio.Task[None]]) -> None:
        """No check leaves any more; the waits of the run's own tasks (``ours``: never
        another's) for a moment of the pace end now."""
        self.stopped = True
        for task in self._waiting:
            if task in ours and task not in self._cut:
                self._cut.add(task)
                task.cancel()

    @property
    def held_until(self) -> float:
        return self._policy.held_until

    async def admit(self, deadline: float) -> Admission | None:
        if self.stopped:
            raise _NotSent
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - admit always runs in a task
            return await self._policy.admit(deadline)
        self._waiting.add(task)
        try:
            admission = await self._policy.admit(deadline)
        except asyncio.CancelledError:
            if task in self._cut:  # ``stop``'s cancellation: not sent, unless another came
                self._cut.discard(task)
                if _only_cancellation(task):
                    raise _NotSent from None
            raise
        finally:
            self._waiting.discard(task)
        if admission is not None and self.stopped:
            self._policy.report(admission, None, None)  # not sent: nothing came back
            raise _NotSent
        return admission

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        self._policy.report(admission, status, retry_after)

    def resends_free(self, status: int) -> bool:
        return self._policy.resends_free(status)


def _only_cancellation(task: asyncio.Task[Any]) -> bool:
    """Withdraw the one cancellation of ``task`` that its run asked for; False: another
    was asked for too (it stands). Python 3.10 does not count them: then True (the
    worker ends at once all the same: the run has stopped, no input is taken)."""
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    return uncancel is None or uncancel() == 0


def _shown(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


class _Run:
    """The state of one ``check_many`` run, shared by its workers and its generator."""

    loop: asyncio.AbstractEventLoop

    __slots__ = (
        "alive", "async_source", "backlog", "check", "closing", "done_reading",
        "failure", "gate", "halted", "leftover", "limit", "lock", "loop", "ready",
        "request_timeout", "source", "spawned", "stopped", "tasks", "validity_timeout",
        "waiter", "window")

    def __init__(self, check: CheckFunction | PacedCheckFunction, concurrency: int,
                 validity_timeout: float, request_timeout: float | None,
                 backlog: Backlog | None = None, policy: SendPolicy | None = None) -> None:
        #: What keeps the checks waiting for the pace from leaving once the run stops.
        self.gate = None if policy is None else _StopGate(policy)
        self.check: CheckFunction = (
            cast(CheckFunction, check) if self.gate is None
            else partial(cast(PacedCheckFunction, check), policy=self.gate))
        #: The inputs not yet taken, counted down for the pace (left None: no count).
        self.backlog = backlog if backlog is not None else Backlog(None)
        self.validity_timeout = validity_timeout
        self.request_timeout = request_timeout
        self.limit = concurrency
        self.source: Iterator[Any] | None = None
        self.async_source: AsyncIterator[Any] | None = None
        self.lock: asyncio.Lock | None = None  # one reader at a time of an async source
        #: A place per input taken (or about to be) whose outcome the consumer has not
        #: received; closed when no worker takes another input.
        self.window = Window(concurrency)
        self.ready: deque[CheckOutcome] = deque()  # finished, not yet yielded
        self.waiter: asyncio.Future[None] | None = None  # the generator, waiting
        self.tasks: list[asyncio.Task[None]] = []
        self.spawned = 0
        self.alive = 0
        self.done_reading = False  # no worker takes another input
        self.closing = False
        self.stopped: SDKError | None = None
        self.failure: BaseException | None = None
        self.halted = False  # the caller's ``stop`` was set: nothing more is sent or read
        self.leftover: list[object] = []  # taken from the source after the run stopped

    # --- the consumer's side -----------------------------------------------------------
    async def outcomes(
        self, emails: Iterable[str] | AsyncIterable[str], stop: asyncio.Event | None = None,
        usable: Callable[[], None] | None = None,
    ) -> AsyncGenerator[CheckOutcome, None]:
        """The run, as the caller's generator: the outcome of every check as it is ready,
        then, once every worker has ended, those of the inputs a stopped run did not
        send; the source's own error last. Closing it ends the workers. However it
        ends, an async source with ``aclose()`` is then closed (``_close_source``).
        ``stop``: once set, the run halts (``halt``). ``usable``: raises when no check
        could be sent (a closed client): then the run raises it, once, having read and
        sent nothing (``emails`` is left as it was, to give to an open client)."""
        self.loop = asyncio.get_running_loop()
        watcher = None if stop is None else self.loop.create_task(self._halt_at(stop))
        try:
            if usable is not None:
                usable()
            self._read_from(emails)
            self._spawn()
            ready, release = self.ready, self.window.release
            while True:
                while ready:
                    # Received: its slot is free again (for a parked worker, if any).
                    outcome = ready.popleft()
                    release()
                    yield outcome
                if not self.alive:
                    break
                self.waiter = self.loop.create_future()
                await self.waiter
                self.waiter = None
            # Every worker has ended: the source ended or failed, or the run stopped, and
            # every check sent has been yielded.
            cause = self._stop_cause()
            if cause is not None:
                async with aclosing(self._not_attempted(cause)) as rest:
                    async for outcome in rest:
                        yield outcome
            if self.failure is not None:
                raise self.failure
        finally:
            # Nothing more is sent, however the run ended, whatever its source: a run
            # of unknown length left at None would hide the count of every later run.
            self.backlog.left = 0
            try:
                await self._end_workers(watcher)
            finally:
                await self._close_source()

    def _read_from(self, emails: Iterable[str] | AsyncIterable[str]) -> None:
        if isinstance(emails, AsyncIterable):
            self.async_source = aiter(emails)
            self.lock = asyncio.Lock()
        else:
            self.source = iter(emails)

    def _stop_cause(self) -> SDKError | None:
        """What stopped the run, told to the inputs it kept from being sent (None: it
        was not stopped). Compared with None, never by truth: an error's class (one a
        caller's pace raised) may define ``__bool__`` or ``__len__``."""
        if self.stopped is not None:
            return self.stopped
        failed = self._failed_run()
        return failed if failed is not None else self._halted_run()

    def _failed_run(self) -> SDKError | None:
        """What the inputs taken but kept from being sent are told when the source (or a
        check) failed: none taken, None."""
        if not self.leftover or self.failure is None:
            return None
        cause = SDKError(f"{type(self.failure).__name__} was raised (by its input or a "
                         "check); nothing more was sent")
        cause.__cause__ = self.failure
        return cause

    def _halted_run(self) -> SDKError | None:
        """What the inputs taken but kept from being sent are told when the caller's
        ``stop`` halted the run: none taken, None."""
        if not self.leftover or not self.halted:
            return None
        return SDKError("the caller's stop was set; nothing more was sent")

    async def _not_attempted(self, stopped: SDKError) -> AsyncGenerator[CheckOutcome, None]:
        """The outcomes of the inputs that ``stopped`` kept from being sent: those taken
        after it, then the rest of the source (read here: no worker is left), unless the
        source failed or the caller halted the run (what it did not take is not read)."""
        for value in self.leftover:
            yield _skipped(value, stopped)
        if self.failure is not None or self.halted:
            return
        if self.source is not None:
            for value in self.source:
                yield _skipped(value, stopped)
        elif self.async_source is not None:
            async for value in self.async_source:
                yield _skipped(value, stopped)

    async def _end_workers(self, watcher: asyncio.Task[None] | None) -> None:
        """No worker takes another input; those still running (and the ``stop``
        watcher) are cancelled, awaited."""
        self.closing = self.done_reading = True
        self.window.close()
        pending = [task for task in (*self.tasks, watcher) if task and not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _close_source(self) -> None:
        """Close what the run took: an async source with ``aclose()`` (an async
        generator) is closed however the run ends, once no worker reads it."""
        aclose = getattr(self.async_source, "aclose", None)
        if aclose is not None:
            await aclose()

    # --- the workers -------------------------------------------------------------------
    def _spawn(self) -> None:
        self.spawned += 1
        self.alive += 1
        self.tasks.append(self.loop.create_task(self._work()))

    def _deliver(self, outcome: CheckOutcome) -> None:
        self.ready.append(outcome)
        waiter = self.waiter
        if waiter is not None:
            _wake(waiter)

    def _end_reading(self) -> None:
        self.done_reading = True
        self.window.close()  # every parked worker ends

    def _fail(self, exc: BaseException) -> None:
        """The run fails with ``exc`` (the source's error, or a check's unexpected one):
        no input is taken, and no check still waiting for its moment of the pace is sent
        (it gets a not-attempted outcome): those already sent finish."""
        if self.failure is None:
            self.failure = exc
        self._stop_sending()
        self._end_reading()

    def _stop_sending(self) -> None:
        if self.gate is not None:
            self.gate.stop(self.tasks)

    async def _halt_at(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self.halt()

    def halt(self) -> None:
        """The caller's ``stop``: no input is taken or read any more, no check waiting
        for its moment of the pace is sent (not attempted); those on the wire finish and
        are yielded, then the iteration ends (no error). A read of an async source in
        progress ends first."""
        if not self.halted:
            self.halted = True
            self._stop_sending()
            self._end_reading()

    def _source_ended(self, exc: Exception) -> None:
        """Reading the source raised ``exc``: its end, or its own error (raised by the
        generator once every input already sent has yielded its outcome)."""
        if isinstance(exc, (StopIteration, StopAsyncIteration)):
            self._end_reading()
        else:
            self._fail(exc)

    def _take(self, source: Iterator[Any]) -> Any:
        """The next input of ``source`` (an iterable's), or ``self`` when it has none (it
        ended or failed)."""
        try:
            value = next(source)
        except Exception as exc:
            self._source_ended(exc)
            return self
        self.backlog.take()
        return value

    async def _take_async(self) -> Any:
        """The next input of an async source (one reader at a time), or ``self``."""
        assert self.async_source is not None and self.lock is not None
        async with self.lock:
            if self.done_reading:
                return self
            try:
                value = await anext(self.async_source)
            except Exception as exc:
                self._source_ended(exc)
                return self
            self.backlog.take()
            return value

    async def _work(self) -> None:
        """One worker's life: take an input while fewer than ``limit`` are outstanding,
        check it, deliver its outcome, until no input is left to take; a failure of its
        own handed to the generator (raised there), unless the generator is closing; its
        end counted. One frame for all of it: every resumption of the worker (each
        check's waits) goes through each frame of its stack."""
        # Read once: the loop runs once per input.
        check, source, deliver = self.check, self.source, self._deliver
        validity_timeout, request_timeout = self.validity_timeout, self.request_timeout
        take_slot = self.window.try_acquire
        try:
            while True:
                # A coroutine only when no slot is free; none when reading has ended.
                if not take_slot() and not await self._slot():
                    return
                value = self._take(source) if source is not None else await self._take_async()
                if value is self or self.stopped is not None or self.halted:
                    self._not_checked(value)
                    return
                if self.spawned < self.limit:
                    self._spawn()  # another input may be waiting: one more worker
                try:
                    result = await check(value, validity_timeout=validity_timeout,
                                         request_timeout=request_timeout)
                except (SDKError, ValueError) as exc:
                    self._check_failed(value, exc)
                    continue
                except _NotSent:  # the run stopped while it waited: not attempted
                    self._not_checked(value)
                    continue
                deliver(CheckSuccess(email=value, result=result))
        except BaseException as exc:
            if self._worker_failed(exc):
                raise
        finally:
            self.alive -= 1
            if not self.alive and self.waiter is not None:
                _wake(self.waiter)

    def _worker_failed(self, exc: BaseException) -> bool:
        """A worker's own failure, handed to the generator unless it is closing (it
        cancelled the worker); True: raised on (an interruption, a cancellation)."""
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return True
        if not self.closing:  # not cancelled by the generator: raise it there
            self._fail(exc)
        return isinstance(exc, asyncio.CancelledError)

    async def _slot(self) -> bool:
        """Take a slot once one is free; False: reading has ended (no slot taken)."""
        window = self.window
        while True:
            waiter = self.waiter
            if waiter is None or not waiter.done():
                return await window.acquire()  # in line, until the consumer frees one
            # The consumer is woken and runs first (its step is queued before ours):
            # one loop turn, and it has taken what is ready. A park would cost a
            # future and one more turn before this worker sends again (fewer checks in
            # flight meanwhile). Never a spin: each turn follows a run of the consumer.
            await asyncio.sleep(0)
            if window.try_acquire():
                return True
            if window.closed:
                return False

    def _not_checked(self, value: Any) -> None:
        """``value``, just taken, is not checked: the source had none left (``self``),
        or the run stopped while it was read (kept, to be accounted for as not
        attempted). Its slot is given back."""
        if value is not self:
            self.leftover.append(value)
        self.window.release()

    def _check_failed(self, value: Any, exc: SDKError | ValueError) -> None:
        """Deliver the failure of one check (an ``SDKError``: ``InvalidInputError``,
        never sent, shown as given; a ``ValueError``: aiohttp or yarl refused this
        input's request alone); one that every later check would share stops the run."""
        if not isinstance(exc, SDKError):
            exc = _unsendable(exc)
        self._deliver(_failed(_shown(value), exc))
        if isinstance(exc, _STOPPING) and self.stopped is None:
            self.stopped = exc
            self._stop_sending()
            self._end_reading()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
