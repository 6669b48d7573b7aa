"""One call's whole life, in layers (as httpx's client goes ``send`` ->
``_send_handling_auth`` -> ``_send_handling_redirects`` -> ``_send_single_request``):

* ``Transport.request(options)`` / ``Transport.stream``: the call — its ``CallOptions``
  and the configuration checked at once, its ``Attempts`` record made, the answer handed
  out as data (read, interpreted, decoded: ``_finish``) or as an open stream (``_open``).
* ``_send_handling_retries``: the call's budget and its attempts; after each, the retry
  policy (``_core.retry``: small predicates) decides between handing the answer out,
  another attempt after a pause, and the call's error (``_next_pause``).
* ``_send_with_policy``: the call's send policy (``_core.policy``) admits each attempt
  and hears what came of it: a single call's at once; a bulk call's when its area's pace
  lets it, a 429 sent again without spending ``max_retries`` (DESIGN §3).
* ``_attempt``: one attempt — the request handed to aiohttp, marked as the library's
  own (``middleware.OUTGOING``) so that the library's middleware adds the credentials
  last, and its answer either finished or, when it is to be retried, read and
  released. aiohttp's failures become a ``Failure``.
  (Each layer is a coroutine frame per call: the layers are few on purpose.)

The transport is composed, not inherited: it is given the answer interpreter
(``_core.answer``: status, headers and body to data or the SDK error), the session owner
(``_core.session``), the clock (``_core.clock``: time, sleep, jitter), the time limits
(``_core.timeouts``), the base URLs and logins, and the table of bulk paces
(``_core.policy``). ``make_transport`` builds those parts from a client's settings.

Time: ``timeout`` is one budget for the whole call, pauses included; ``attempt_timeout``
bounds one attempt of a safe operation, the rest of the budget one of an unsafe
operation. ``Client.close()`` ends a call in flight through the session owner
(``ClosedInFlight``): the call then raises ``APIConnectionError``.

Every ``SDKError`` leaving ``request`` and ``stream`` goes through ``Credentials.clean``
(in ``_send_handling_retries``). aiohttp's exceptions are described (``describe_exception``), never
chained.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import attrs
from yarl import URL

from .. import _constants as C
from .._errors import (
    APIConnectionError,
    APIError,
    RateLimitError,
    ResponseDecodeError,
    SDKError,
    ServerError,
    UsageError,
)
from .answer import Interpreter
from .backlog import Backlog
from .clock import Clock, SystemClock
from .credentials import Credentials, SecretValue, without_credential_fields
from .engine import Deadline
from .failures import (
    ATTEMPT_TIMED_OUT,
    CLOSED_IN_FLIGHT,
    TIME_RAN_OUT,
    TRANSPORT_ERRORS,
    Failure,
    describe_exception,
)
from .log import log_attempt, log_give_up, log_retry, logger
from .middleware import OUTGOING, Outgoing
from .operation import Call, Extras, Operation
from .options import CallOptions
from .pace_state import PaceState
from .policy import SINGLE, Admission, PacedPolicy, PaceTable, SendPolicy, key_fingerprint
from .retry import (
    asked_wait,
    backoff_delay,
    retries_answer,
    retries_at_once,
    retries_failure,
)
from .session import ClosedInFlight, SessionOwner
from .streamed import StreamedResponse
from .timeouts import TimeLimits, ran_out, within
from .urls import BaseUrls, split_login

__all__ = ["Answer", "Attempts", "Transport", "make_transport"]

#: A final answer's status, headers and body, read in full.
Answer = tuple[int, Mapping[str, str], bytes]


class _Retry:
    """What an attempt gives when another may follow: its answer or failure is on the
    call's ``Attempts`` (``answer``, ``failure``)."""

    __slots__ = ()


_RETRY = _Retry()


class Attempts:
    """One call in flight: what every attempt shares — the call, its credentials
    (``outgoing``), what aiohttp is given (``sent``), its time (budget, deadline,
    per-attempt bound), how its final answer is handed out (decoded as ``model``, a list
    of them with ``many``, or as an open stream), its send ``policy`` — and the attempts
    so far: the count (``retry``: attempts made less one, counted before the next is
    admitted; ``free``: of those, the ones the policy resent without spending a retry;
    ``made``: the attempts handed to aiohttp, what a log line and an answer's
    ``attempts`` tell), what the last gave (``answer`` to
    retry, or ``failure``), and whether any may have reached the service."""

    __slots__ = ("answer", "answered", "begun", "budget", "call", "deadline", "dropped",
                 "ends_at", "failure", "free", "left", "made", "many", "model", "outgoing",
                 "per_attempt", "policy", "retry", "sent", "sent_maybe", "streaming")

    def __init__(self, call: Call, outgoing: Outgoing | None, json_body: Any,
                 budget: float, per_attempt: float | None, *,
                 model: type[Any] | None = None, many: bool = False,
                 streaming: bool = False, policy: SendPolicy = SINGLE,
                 ends_at: float | None = None) -> None:
        self.call = call
        self.outgoing = outgoing
        self.budget = budget
        self.per_attempt = per_attempt
        self.model = model
        self.many = many
        self.streaming = streaming
        self.policy = policy
        self.begun = self.deadline = 0.0  # ``start``
        #: The deadline of a call that began before this request (None: ``budget`` from
        #: ``start``): a result hosted elsewhere, fetched within the job answer's budget.
        self.ends_at = ends_at
        self.left = budget  # what was left of the budget as the last attempt began
        self.retry = self.free = self.made = 0
        self.answered = 0  # the last attempt whose answer's head came (its DEBUG line)
        self.sent_maybe = False
        self.dropped = False  # a connection already dropped before its answer
        self.answer: Answer | None = None
        self.failure: Failure | None = None
        #: What aiohttp is given besides the method, URL and timeout: only what differs
        #: from its defaults. Unsafe operations follow no redirect (DESIGN §3).
        self.sent: dict[str, Any] = {"params": call.query or None}
        if json_body is not None:
            self.sent["json"] = json_body
        if call.form is not None:
            self.sent["data"] = dict(call.form)
        if not call.op.safe_to_repeat:
            self.sent["allow_redirects"] = False
        if call.headers:
            self.sent["headers"] = call.headers

    def start(self, now: float) -> None:
        """The call's clock starts: its deadline is its budget from ``now`` (or
        ``ends_at``, when given)."""
        self.begun = now
        self.deadline = now + self.budget if self.ends_at is None else self.ends_at

    @property
    def spent(self) -> int:
        """The retries spent so far (``max_retries`` bounds them)."""
        return self.retry - self.free

    @property
    def status(self) -> int | None:
        """The status of the last attempt's answer to retry (None: it failed)."""
        return None if self.answer is None else self.answer[0]

    def retry_with(self, answer: Answer | None, failure: Failure | None) -> _Retry:
        """The last attempt gave ``answer`` (to retry) or ``failure``."""
        self.answer = answer
        self.failure = failure
        return _RETRY

    def count(self) -> None:
        """Another attempt follows the last."""
        self.retry += 1
        if self.answer is not None and self.policy.resends_free(self.answer[0]):
            self.free += 1

    def failed(self, failure: Failure) -> Failure:
        """``failure``, counting every earlier attempt that may have been sent."""
        self.sent_maybe = self.sent_maybe or failure.may_have_been_sent
        if failure.may_have_been_sent == self.sent_maybe:
            return failure
        return attrs.evolve(failure, may_have_been_sent=self.sent_maybe)


def _discard(value: Any) -> None:
    """Release what an attempt's result holds (an open stream) when no one takes it."""
    if isinstance(value, StreamedResponse):
        value.release()


class Transport:
    """Sends operations for a ``Client`` and reads their answers, through the parts it is
    given (see the module docstring); ``Engine`` is what resources see of it."""

    __slots__ = ("_logins", "_now", "_outgoing", "_pace_key", "_paces", "_sleep", "clock",
                 "credentials", "extras", "interpreter", "limits", "max_retries",
                 "sessions", "urls")

    def __init__(self, *, interpreter: Interpreter, sessions: SessionOwner, clock: Clock,
                 limits: TimeLimits, max_retries: int, urls: BaseUrls,
                 logins: Mapping[str, SecretValue], paces: PaceTable, pace_key: bytes,
                 extras: Extras | None = None) -> None:
        self.interpreter = interpreter
        self.credentials: Credentials = interpreter.credentials
        self.sessions = sessions
        self.clock = clock
        self._now = clock.now
        #: The clock's own sleep, raced against ``close()`` (None: the loop's timer,
        #: the system clock's sleep without a task per pause).
        self._sleep = None if type(clock) is SystemClock else clock.sleep
        self.limits = limits
        self.max_retries = max_retries
        self.urls = urls
        #: Each area's base URL login, sent by the middleware (``split_login``).
        self._logins = logins
        #: Each area's credentials to add (by its argument), worked out at its first call.
        self._outgoing: dict[str, Outgoing] = {}
        self._paces = paces
        self._pace_key = pace_key
        #: What the caller adds to every request by default (``with_extras``).
        self.extras = extras

    # --- what resources see (``Engine``) -----------------------------------------------
    def request(self, options: CallOptions) -> Awaitable[Any]:
        """Send ``options.op``; the awaitable gives its parsed JSON answer (None for an
        empty 2xx body), decoded as ``options.model`` (a list of them with ``many``)
        when one is given. ``options.extras``: what the caller adds to this call's
        requests (default: this transport's, ``with_extras``); ``options.policy``: when
        its attempts may leave (``bulk_policy``: a bulk call's).

        Arguments and configuration are checked at once (``ConfigurationError``,
        ``InvalidInputError``). Awaiting raises the ``APIError`` subclass the answer maps
        to, ``APIConnectionError`` / ``APITimeoutError`` when no usable answer came,
        ``ResponseDecodeError`` for a body that is not JSON or not of the model's shape.
        """
        try:
            attempts = self._attempts_of(options)
        except SDKError as exc:
            self.credentials.clean(exc)
            raise
        return self._send_handling_retries(attempts)

    @asynccontextmanager
    async def stream(self, op: Operation, *, query: Mapping[str, Any] | None = None,
                     timeout: float | None = None, absolute_url: str | None = None,
                     deadline: Deadline | None = None,
                     ) -> AsyncIterator[StreamedResponse]:
        """Send ``op`` and hand out its 2xx answer unread, releasing it on exit.

        ``timeout`` bounds the wait for a pooled connection, connecting, the answer's
        head (every redirect hop of it) and each read (a download may take long, a
        stall may not). ``deadline`` (instead of ``timeout``): a budget that began
        before this request (``deadline``), shared with the call's earlier streams.
        With ``absolute_url`` the request goes
        there *without credentials* (a result hosted elsewhere; a credential field in
        its query taken out), and without the caller's extras. A non-2xx answer raises
        as ``request`` does. ``Client.close()`` aborts the stream (``StreamedResponse``).
        The extras are this transport's ``extras`` (``with_extras``).
        """
        # Opened by a method of its own: this frame stays in the traceback of an error
        # raised while the stream is read, so it holds no URL, query or answer.
        streamed = await self._open_stream(op, query, timeout, absolute_url, deadline)
        owner = self.sessions
        try:
            owner.add_stream(streamed)
            yield streamed
        finally:
            owner.discard_stream(streamed)
            streamed.release()

    def usable(self) -> None:
        """``UsageError`` now when no call could be sent: the client is closed, or used
        outside its event loop (the session is made, as the first call makes it)."""
        self.sessions.session()

    async def pause(self, seconds: float, *, operation: str) -> None:
        """Wait ``seconds`` on the clock; ``UsageError`` when the client is closed now,
        ``APIConnectionError`` (nothing sent) when ``close()`` ends the wait."""
        self.sessions.session()  # a closed client: UsageError now
        try:
            await self._pause(seconds)
        except ClosedInFlight:
            raise APIConnectionError("the Client was closed while this wait was in progress",
                                     operation=operation, may_have_been_sent=False) from None

    def deadline(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now, on the clock."""
        return Deadline(self._now, seconds)

    def now(self) -> float:
        """The clock's time."""
        return self._now()

    def jitter(self) -> float:
        """The clock's random number in [0, 1]."""
        return self.clock.random()

    def budget(self, request_timeout: float | None) -> float:
        """A call's time budget: ``request_timeout`` (checked) or the client's."""
        return self.limits.budget(request_timeout)

    def decode_error(self, op: Operation, data: Any, why: str) -> ResponseDecodeError:
        """The ``ResponseDecodeError`` for ``data`` that is not what ``op`` expects."""
        return self.interpreter.decode_error(op, data, why)

    def scrub(self, text: str) -> str:
        """``text`` with every credential replaced."""
        return self.credentials.scrub(text)

    def shown_hosts(self) -> list[str]:
        """The configured areas' URLs (their logins taken out), scrubbed, sorted and
        without repeats: what the client's repr shows."""
        return sorted({self.scrub(url.split("@")[-1])
                       for url in self.urls.by_area.values() if url})

    def clean(self, exc: SDKError) -> None:
        """``exc`` through ``Credentials.clean``."""
        self.credentials.clean(exc)

    def with_extras(self, extras: Extras | None) -> Transport:
        """This transport, whose requests and streams carry ``extras`` by default: for
        code that sends on behalf of one call (``self`` when there are none)."""
        if extras is None:
            return self
        return Transport(interpreter=self.interpreter, sessions=self.sessions,
                         clock=self.clock, limits=self.limits, max_retries=self.max_retries,
                         urls=self.urls, logins=self._logins, paces=self._paces,
                         pace_key=self._pace_key, extras=extras)

    def bulk_policy(self, op: Operation, *, adaptive: bool,
                    backlog: Backlog | None = None) -> PacedPolicy:
        """The policy of a bulk call of ``op``: its area's pace for this client's key
        (shared with the client's copies of the same key), told of the run's
        ``backlog``."""
        pace = self._paces.pace(self._pace_key, op.area.argument)
        if backlog is not None:
            pace.expect(backlog)
        return PacedPolicy(pace, self._park, adaptive=adaptive)

    def pace_state(self, op: Operation) -> PaceState:
        """What the pace of ``op``'s area for this client's key (its copies' of the same
        key too) is doing now; ``PaceState()`` while none was made: a look makes none."""
        pace = self._paces.find(self._pace_key, op.area.argument)
        return PaceState() if pace is None else pace.snapshot()

    # --- the call -------------------------------------------------------------------
    def _attempts_of(self, options: CallOptions) -> Attempts:
        op = options.op
        extras = self.extras if options.extras is None else options.extras
        if extras is not None:
            self._check_extras(op, extras)
        call = Call(op, self.urls.of(op, options.path_id), options.query, options.form,
                    extras=extras)
        budget, per_attempt = self.limits.for_call(options.timeout, options.attempt_timeout,
                                                   op.safe_to_repeat)
        return Attempts(call, self._credentials_of(call), options.json_body, budget,
                        per_attempt, model=options.model, many=options.many,
                        policy=options.policy)

    async def _open_stream(self, op: Operation, query: Mapping[str, Any] | None,
                           timeout: float | None, absolute_url: str | None,
                           deadline: Deadline | None) -> StreamedResponse:
        try:
            if absolute_url is None:
                if self.extras is not None:
                    self._check_extras(op, self.extras)
                call = Call(op, self.urls.of(op), query, extras=self.extras)
                outgoing: Outgoing | None = self._credentials_of(call)
            else:
                # A credential field the service copied into the hosted URL (as a
                # ``Location`` may) goes nowhere: not to that host, nor to a trace config.
                absolute_url = without_credential_fields(absolute_url) or absolute_url
                call = Call(op, absolute_url, query, with_credentials=False)
                outgoing = Outgoing(URL(absolute_url), (), in_form=False)  # none added
            if deadline is None:
                attempts = Attempts(call, outgoing, None, self.limits.budget(timeout), None,
                                    streaming=True)
            else:
                attempts = Attempts(call, outgoing, None, deadline.seconds, None,
                                    streaming=True, ends_at=deadline.ends_at)
        except SDKError as exc:
            self.credentials.clean(exc)
            raise
        streamed: StreamedResponse = await self._send_handling_retries(attempts)
        return streamed

    def _check_extras(self, op: Operation, extras: Extras) -> None:
        """``InvalidInputError`` for extras that would replace a credential of ``op``'s
        area (``Extras`` refused the others when made)."""
        if op.area.argument in self._logins:
            extras.refuse_login()

    def _credentials_of(self, call: Call) -> Outgoing:
        """What the middleware adds to ``call``'s requests (``ConfigurationError``: a
        credential the area needs is not configured)."""
        area = call.op.area
        outgoing = self._outgoing.get(area.argument)
        if outgoing is not None and call.form is None:  # nearly every call
            return outgoing
        if outgoing is None:
            fields = self.credentials.fields(area.placement, call.op.name)
            outgoing = self._outgoing[area.argument] = Outgoing(
                URL(call.url), fields, in_form=area.placement.in_form,
                authorization=self._logins.get(area.argument),
                hidden=self.credentials.hidden())
        return outgoing if call.form is None else outgoing.with_form(call.form)

    # --- waits ----------------------------------------------------------------------
    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds`` on the clock; ``close()`` ends it (``ClosedInFlight``)."""
        await self.sessions.pause(seconds, None, self._sleep)

    async def _park(self, waiter: asyncio.Future[None] | None, seconds: float) -> None:
        """A pace's wait: ``seconds`` on the clock, or until ``waiter`` is done (on the
        loop's timer: a wait for a place, bounded), at most ``seconds``; ``close()``
        ends both (``ClosedInFlight``)."""
        if waiter is None:
            await self._pause(seconds)
        else:
            await self.sessions.pause(seconds, waiter)

    # --- the attempts ---------------------------------------------------------------
    async def _send_handling_retries(self, attempts: Attempts) -> Any:
        """Attempts until one gives the call's result, or the call's error; an
        ``SDKError`` leaving goes through ``Credentials.clean`` (inline, not by a
        decorator: a coroutine frame less per call)."""
        now = self._now
        try:
            attempts.start(now())
            sessions = self.sessions
            session = sessions.session()  # a closed client, another loop: UsageError now
            if not attempts.call.op.safe_to_repeat:  # never on a kept-alive connection
                session = sessions.fresh_session()
            cancelled_before = sessions.cancellations()
            while True:
                if attempts.deadline <= now():
                    raise self._ran_out(attempts)
                result = await self._send_with_policy(session, attempts, cancelled_before)
                if result is not _RETRY:
                    return result
                pause = self._next_pause(attempts)
                if pause:
                    try:
                        await self._pause(pause)
                    except ClosedInFlight:
                        raise self._closed(attempts) from None
                attempts.count()
        except SDKError as exc:
            self.credentials.clean(exc)
            raise

    async def _send_with_policy(self, session: aiohttp.ClientSession, attempts: Attempts,
                                cancelled_before: int) -> Any:
        """One attempt, sent once the call's policy admits it (the call's error when no
        moment is left in its budget) within what is left of the budget, its outcome
        reported to the policy. On a caller's session it runs in a task of the client's
        own; ended by ``close()``, it is a failure."""
        policy = attempts.policy
        admission: Admission | None = policy
        if policy is not SINGLE:  # SINGLE admits at once and hears nothing: not asked,
            try:  # a coroutine less per call
                admission = await policy.admit(attempts.deadline)
            except ClosedInFlight:
                raise self._closed(attempts) from None
            if admission is None:
                raise self._not_admitted(attempts)
        sessions = self.sessions
        status: int | None = None
        try:
            limits, remaining = self.limits, attempts.deadline - self._now()
            attempts.made += 1
            attempts.left = remaining
            if attempts.streaming:
                attempt = self._stream_attempt(session, attempts,
                                               limits.stream(remaining, attempts.budget))
            else:
                attempt = self._attempt(session, attempts,
                                        limits.attempt(remaining, attempts.per_attempt))
            result = await (attempt if sessions.owns_session
                            else sessions.in_own_task(attempt, _discard))
            status = 200 if result is not _RETRY else attempts.status
        except asyncio.CancelledError:
            if not sessions.closed_under(cancelled_before):
                raise
            result = attempts.retry_with(None, CLOSED_IN_FLIGHT)
        except APIError as exc:  # a final answer refused: the service took it
            status = exc.status_code or 200
            raise
        finally:
            if policy is not SINGLE:
                policy.report(admission, status,
                              None if status != 429 else self._asked_wait(attempts))
        return result

    @staticmethod
    def _asked_wait(attempts: Attempts) -> float | None:
        """The wait the last answer (a 429 to retry) asked for (None: it said nothing)."""
        answer = attempts.answer
        return None if answer is None else asked_wait(answer[1])

    def _closed(self, attempts: Attempts) -> SDKError:
        """The error of a call whose wait ``close()`` ended."""
        return self.interpreter.connection_error(attempts.call,
                                                 attempts.failed(CLOSED_IN_FLIGHT))

    def _not_admitted(self, attempts: Attempts) -> SDKError:
        """The error of a call its policy would not let out within its budget: held
        back before its first attempt (the service asked this client to wait: a 429
        while it took nothing), or its time ran out."""
        held = attempts.policy.held_until - self._now()
        if held <= 0 or attempts.retry:
            return self._ran_out(attempts)
        call = attempts.call
        error = RateLimitError(
            f"not sent: the service asked for a wait of {held:.1f} s (HTTP 429 to "
            "this client), past this call's time", operation=call.op.name,
            url=call.shown_url, retry_after=held)
        if logger.isEnabledFor(logging.WARNING):
            log_give_up(call.op.method, self._shown(call), str(error), 0)
        return error

    def _ran_out(self, attempts: Attempts) -> SDKError:
        """The error of a call whose budget ended before another attempt could be made."""
        return self._given_up(attempts, None if attempts.answer else TIME_RAN_OUT)

    def _next_pause(self, attempts: Attempts) -> float:
        """The pause before the next attempt; raises the call's error when there is none
        to make (the policy says no, or it could not finish within the budget)."""
        call = attempts.call
        failure = attempts.failure
        if failure is not None:
            failure = attempts.failed(CLOSED_IN_FLIGHT if self.sessions.closed else failure)
            if self.max_retries <= attempts.spent or not retries_failure(
                    failure, call.op.safe_to_repeat):
                raise self._given_up(attempts, failure)
            if retries_at_once(failure, attempts.dropped):
                attempts.dropped = True
                self._log_retry(call, failure.message, 0.0, attempts)
                return 0.0
            reason, delay = failure.message, backoff_delay(attempts.spent, self.clock.random)
        else:
            reason, delay = self._answer_pause(attempts)
        if self._now() + delay >= attempts.deadline:  # a retry could not finish in time
            raise self._given_up(attempts, failure)
        self._log_retry(call, reason, delay, attempts)
        return delay

    def _log_retry(self, call: Call, reason: str, delay: float, attempts: Attempts) -> None:
        """The INFO line of the retry about to be made (attempt ``retry + 2``)."""
        if logger.isEnabledFor(logging.INFO):
            log_retry(call.op.method, self._shown(call), reason, delay, attempts.retry + 2)

    def _answer_pause(self, attempts: Attempts) -> tuple[str, float]:
        """Why and how long to wait before retrying the last answer; raises what its
        body decides (``_decided``)."""
        call, answer = attempts.call, attempts.answer
        assert answer is not None
        attempts.sent_maybe = True
        if call.op.fail_in_body and (meant := self._decided(call, answer)):
            raise self._timed(meant, attempts)  # its answer's attempts and time are the call's
        status, headers, _ = answer
        delay = asked_wait(headers)
        if delay:
            return f"HTTP {status}", delay
        free = attempts.policy.resends_free(status)
        return f"HTTP {status}", backoff_delay(attempts.free if free else attempts.spent,
                                               self.clock.random)

    def _given_up(self, attempts: Attempts, failure: Failure | None) -> SDKError:
        """The call's error: ``failure``'s, or (None) the refusal of the last answer."""
        call = attempts.call
        if failure is None:
            assert attempts.answer is not None
            error: SDKError = self._timed(self.interpreter.refused(call, *attempts.answer),
                                          attempts)
        else:
            if failure.timeout:  # which bound ended it: the call's, or its attempts'
                failure = self._which_ran_out(attempts, failure)
            error = self.interpreter.connection_error(call, attempts.failed(failure))
        if logger.isEnabledFor(logging.WARNING):
            log_give_up(call.op.method, self._shown(call), str(error), attempts.made)
        return error

    @staticmethod
    def _which_ran_out(attempts: Attempts, failure: Failure) -> Failure:
        """A timeout's ``failure``, its message saying which bound it was."""
        if failure is TIME_RAN_OUT:  # before another attempt: the call's budget
            return attrs.evolve(failure, message=ran_out(attempts.budget, None, 0.0,
                                                         attempts.made))
        return attrs.evolve(failure, message=f"{failure.message}; " + ran_out(
            attempts.budget, attempts.per_attempt, attempts.left, attempts.made))

    def _timed(self, error: SDKError, attempts: Attempts) -> SDKError:
        """``error``, whose answer (an ``APIError``'s ``response``) gets the call's time
        so far and its attempts."""
        if isinstance(error, APIError) and error.response is not None:
            error.response = attrs.evolve(error.response, attempts=attempts.made,
                                          elapsed=self._now() - attempts.begun)
        return error

    def _shown(self, call: Call) -> str:
        """``call``'s URL as a log line shows it: a hosted result's URL is the
        service's text, and may carry a credential anywhere."""
        return self.credentials.scrub(call.shown_url)

    def _decided(self, call: Call, answer: Answer) -> SDKError | None:
        """The error a retryable answer means when its body's ``fail`` text decides (no
        credit, a wrong key: the same on every retry), whatever its status; else None (the
        classes a status alone gives, or an unknown text: retried)."""
        meant = self.interpreter.refused(call, *answer)
        return None if type(meant) in (APIError, ServerError, RateLimitError) else meant

    def _outgoing_on(self, session: aiohttp.ClientSession,
                     outgoing: Outgoing | None) -> Outgoing | None:
        """``outgoing`` for a request on ``session``: where nothing but the library reads
        its answer (the library's own session, no trace config), without the test of
        the answer's headers for echoed credentials."""
        if outgoing is not None and self.sessions.library_session and not session.trace_configs:
            return outgoing.unwatched
        return outgoing

    async def _attempt(self, session: aiohttp.ClientSession, attempts: Attempts,
                       timeout: aiohttp.ClientTimeout) -> Any:
        """One attempt: the request sent; its answer read and released for a retry
        (``_RETRY``, the answer or failure on ``attempts``) while one may follow, else
        completed as the call's result or error."""
        call = attempts.call
        started = self._now() if logger.isEnabledFor(logging.DEBUG) else None
        # The request handed to aiohttp here (not by a coroutine of its own: a frame
        # less per attempt), marked for the library's middleware only while aiohttp
        # sends it.
        marked = OUTGOING.set(self._outgoing_on(session, attempts.outgoing))
        try:
            response = await session.request(call.op.method, call.url, timeout=timeout,
                                             **attempts.sent, **self.sessions.request_options)
        except TRANSPORT_ERRORS as exc:
            failure = describe_exception(exc)
            if started is not None:
                self._log_attempt(call, failure.message, started, attempts)
            return attempts.retry_with(None, failure)
        except RuntimeError:
            if session.closed:  # the caller closed the session they gave the client
                raise UsageError("the aiohttp session given to Client was closed") from None
            raise
        finally:
            OUTGOING.reset(marked)
        status = response.status
        attempts.answered = attempts.made
        if started is not None:
            self._log_attempt(call, status, started, attempts)
        if retries_answer(status, call.op.safe_to_repeat) and (
                attempts.spent < self.max_retries or attempts.policy.resends_free(status)):
            body = await self.interpreter.read_for_retry(call, response)
            return attempts.retry_with((status, response.headers, body), None)
        try:
            if attempts.streaming:
                return await self._open(call, response, attempts.made)
            return await self._finish(call, response, attempts)
        except TRANSPORT_ERRORS as exc:  # the answer broke off: as a dropped connection
            return attempts.retry_with(None, describe_exception(exc))
        except APIError as exc:
            self._refused_at_last(exc, attempts)
            raise

    async def _stream_attempt(self, session: aiohttp.ClientSession, attempts: Attempts,
                              timeout: aiohttp.ClientTimeout) -> Any:
        """One attempt of a stream (``_attempt``) whose head, every redirect hop of it,
        and the body of an answer refused or retried end with the budget: aiohttp bounds
        a stream's connections and reads only, each hop afresh (``_core.timeouts``)."""
        started = self._now()
        try:
            return await within(self._attempt(session, attempts, timeout), attempts.left)
        except asyncio.TimeoutError:  # within's: aiohttp's own are the attempt's failures
            if attempts.answered != attempts.made and logger.isEnabledFor(logging.DEBUG):
                self._log_attempt(attempts.call, ATTEMPT_TIMED_OUT.message, started, attempts)
            return attempts.retry_with(None, ATTEMPT_TIMED_OUT)

    def _log_attempt(self, call: Call, outcome: int | str, started: float,
                     attempts: Attempts) -> None:
        """The DEBUG line of an attempt."""
        log_attempt(call.op.method, self._shown(call), outcome, self._now() - started,
                    attempts.retry + 1)

    def _refused_at_last(self, exc: APIError, attempts: Attempts) -> None:
        """``exc``, a final answer's refusal: timed, and said at WARNING when it is the
        last of a call's retries."""
        self._timed(exc, attempts)
        if exc.status_code in C.RETRYABLE_STATUSES and logger.isEnabledFor(logging.WARNING):
            call = attempts.call
            log_give_up(call.op.method, self._shown(call), str(exc), attempts.made)

    # --- completing the answer ------------------------------------------------------
    async def _finish(self, call: Call, response: aiohttp.ClientResponse,
                      attempts: Attempts) -> Any:
        """A final answer read in full, interpreted and decoded (a big one off the loop).

        An answer that arrived whole with its head (a small one usually does) is taken
        as aiohttp buffered it (``StreamReader.read_nowait``), not through ``read()``'s
        coroutines; not on a caller's session, whose trace configs see ``read()``."""
        interpreter = self.interpreter
        content = response.content
        try:
            if self.sessions.library_session and content.is_eof():
                raw = content.read_nowait()
                if len(raw) > C.MAX_JSON_BODY_BYTES:
                    raise interpreter.too_large(call, response.status, " (decompressed)",
                                                C.MAX_JSON_BODY_BYTES)
            else:
                raw = await interpreter.read_capped(call, response)
        finally:
            response.release()
        elapsed = self._now() - attempts.begun
        if len(raw) < C.OFFLOAD_DECODE_BYTES:
            return interpreter.finish(call, response, raw, attempts.retry + 1, elapsed,
                                      attempts.model, attempts.many)
        return await interpreter.finish_off_loop(call, response, raw, attempts.retry + 1,
                                                 elapsed, attempts.model, attempts.many)

    async def _open(self, call: Call, response: aiohttp.ClientResponse,
                    attempts: int) -> StreamedResponse:
        """A final answer handed out as a stream (a refusal read and raised)."""
        if not 200 <= response.status < 300:
            raise await self.interpreter.refusal(call, response)
        return StreamedResponse(self.interpreter, call, response, attempts)


def make_transport(*, credentials: Credentials, base_urls: Mapping[Any, str | None],
                   sessions: SessionOwner, clock: Clock, timeout: float, max_retries: int,
                   attempt_timeout: float | None = None,
                   paces: PaceTable | None = None) -> Transport:
    """A client's transport, its parts made from the client's settings: each area's base
    URL and its login taken apart (``split_login``; the passwords scrubbed too), the
    time limits, the interpreter; ``paces``: the bulk paces it shares (a copy's parent's;
    None: a table of its own)."""
    split = {area: split_login(url) if url else (url, None)
             for area, url in base_urls.items()}
    logins = {area.argument: SecretValue(login)
              for area, (_, login) in split.items() if login is not None}
    return Transport(
        interpreter=Interpreter(credentials.with_urls(base_urls.values())),
        sessions=sessions, clock=clock, limits=TimeLimits(timeout, attempt_timeout),
        max_retries=max_retries, urls=BaseUrls({a: url for a, (url, _) in split.items()}),
        logins=logins, paces=PaceTable(clock) if paces is None else paces,
        pace_key=key_fingerprint(credentials.api_key))

