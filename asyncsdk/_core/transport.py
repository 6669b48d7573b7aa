"""One call's whole life, in layers (as httpx's client goes ``send`` ->
``_send_handling_auth`` -> ``_send_handling_redirects`` -> ``_send_single_request``):

* ``Transport.request`` / ``Transport.stream``: the call — arguments and configuration
  checked at once, the ``Call`` record made, the answer handed out as data (read,
  interpreted, decoded: ``_finish``) or as an open stream (``_open``).
* ``_send_handling_retries``: the call's budget and its attempts; after each, the retry
  policy (``_core.retry``: small predicates) decides between handing the answer out,
  another attempt after a pause, and the call's error (``_next_pause``). A bulk call's
  attempt is first let through by its area's pace (``_core.pace``: ``_paced``), which
  hears what came of it; a 429 it gets is sent again after the wait the service asked
  for without spending ``max_retries``, until the budget ends it (DESIGN §3).
* ``_attempt``: one attempt — the request sent, and its answer either finished or, when
  it is to be retried, read and released. aiohttp's failures become a ``Failure``.
* ``_send_single_request``: the request handed to aiohttp, marked as the library's own
  (``middleware.OUTGOING``), so that the library's middleware adds the credentials last.
* The answer interpreter (``_core.answer``, which ``Transport`` is): status, headers and
  body to data or the SDK error.

Time (``_core.timeouts``): ``timeout`` is one budget for the whole call, pauses
included; ``attempt_timeout`` bounds one attempt of a safe operation, the rest of the
budget one of an unsafe operation. ``Client.close()`` ends a call in flight through the
session owner (``ClosedInFlight``): the call then raises ``APIConnectionError``.

Every ``SDKError`` leaving ``request`` and ``stream`` goes through ``Credentials.clean``
(``clean_errors``). aiohttp's exceptions are described (``describe_exception``), never
chained.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import aiohttp
import attrs
from yarl import URL

from .. import _constants as C
from .._errors import APIError, RateLimitError, SDKError, ServerError, UsageError
from .answer import Interpreter
from .credentials import Credentials, SecretValue
from .failures import (
    CLOSED_IN_FLIGHT,
    TIME_RAN_OUT,
    TRANSPORT_ERRORS,
    Failure,
    clean_errors,
    describe_exception,
)
from .log import log_attempt, log_give_up, log_retry, logger
from .middleware import OUTGOING, Outgoing
from .operation import Call, Extras, Operation
from .pace import Pace
from .retry import (
    backoff_delay,
    parse_retry_after,
    resent_free,
    retries_answer,
    retries_at_once,
    retries_failure,
)
from .session import ClosedInFlight, SessionOwner
from .streamed import StreamedResponse
from .timeouts import TimeLimits
from .urls import BaseUrls, split_login

__all__ = ["Answer", "Attempted", "Attempts", "Exchange", "Transport"]

T = TypeVar("T")
#: A final answer's status, headers and body, read in full.
Answer = tuple[int, Mapping[str, str], bytes]


class Exchange:
    """What every attempt of one call shares: the call, its credentials (``outgoing``),
    its JSON body, its time (budget and per-attempt bound), and how its final answer is
    handed out: decoded as ``model`` (a list of them, ``many``), or as an open stream. A
    bulk call's attempts wait for ``pace`` (``paced``: its rate and window too, not only
    its holds)."""

    __slots__ = ("budget", "call", "many", "model", "outgoing", "pace", "paced",
                 "per_attempt", "sent", "streaming")

    def __init__(self, call: Call, outgoing: Outgoing | None, json_body: Any, budget: float,
                 per_attempt: float | None, *, model: type[Any] | None = None,
                 many: bool = False, streaming: bool = False, pace: Pace | None = None,
                 paced: bool = True) -> None:
        self.call = call
        self.pace = pace
        self.paced = paced
        self.outgoing = outgoing
        self.budget = budget
        self.per_attempt = per_attempt
        self.model = model
        self.many = many
        self.streaming = streaming
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


class Attempted(Generic[T]):
    """What one attempt gave: the call's result (``done``), an answer to retry
    (``answer``), or a failure (``failure``)."""

    __slots__ = ("answer", "done", "failure", "value")

    def __init__(self, *, value: Any = None, answer: Answer | None = None,
                 failure: Failure | None = None) -> None:
        self.done = answer is None and failure is None
        self.value: T = value
        self.answer = answer
        self.failure = failure

    @property
    def status(self) -> int | None:
        """The answer's status for the pace: an answer to retry's, 200 for the call's
        result (the service took it), None for a failure (no answer)."""
        if self.answer is not None:
            return self.answer[0]
        return None if self.failure is not None else 200

    def discard(self) -> None:
        """Release what the result holds (an open stream) when no one will take it."""
        if isinstance(self.value, StreamedResponse):
            self.value.release()


class Attempts:
    """The attempts of one call so far: the count (``retry``: attempts made less one;
    ``free``: of those, the 429s of a ``bulk`` call, which spend no retry), the clock, what
    the last gave, and whether any may have reached the service."""

    __slots__ = ("begun", "bulk", "deadline", "dropped", "free", "last", "retry",
                 "sent_maybe")

    def __init__(self, begun: float, budget: float, bulk: bool = False) -> None:
        self.begun = begun
        self.deadline = begun + budget
        self.bulk = bulk
        self.retry = 0
        self.free = 0
        self.sent_maybe = False
        self.dropped = False  # a connection already dropped before its answer
        self.last: Attempted[Any] | None = None

    @property
    def spent(self) -> int:
        """The retries spent so far (``max_retries`` bounds them)."""
        return self.retry - self.free

    def count(self, attempted: Attempted[Any]) -> None:
        """Another attempt follows ``attempted``."""
        self.retry += 1
        if attempted.answer is not None and resent_free(attempted.answer[0], self.bulk):
            self.free += 1

    def failed(self, failure: Failure) -> Failure:
        """``failure``, counting every earlier attempt that may have been sent."""
        self.sent_maybe = self.sent_maybe or failure.may_have_been_sent
        if failure.may_have_been_sent == self.sent_maybe:
            return failure
        return attrs.evolve(failure, may_have_been_sent=self.sent_maybe)


class Transport(Interpreter):
    """Sends operations for a ``Client`` and reads their answers (``Interpreter``);
    ``sleep``, ``rand``, ``clock``: plain attributes, for tests never to really wait."""

    def __init__(self, *, credentials: Credentials, base_urls: Mapping[Any, str | None],
                 sessions: SessionOwner, timeout: float, max_retries: int,
                 attempt_timeout: float | None = None) -> None:
        super().__init__(credentials.with_urls(base_urls.values()))  # their passwords too
        split = {area: split_login(url) if url else (url, None)
                 for area, url in base_urls.items()}
        self.urls = BaseUrls({area: url for area, (url, _) in split.items()})
        #: Each area's base URL login, sent by the middleware (``split_login``).
        self._logins = {area.argument: SecretValue(login)
                        for area, (_, login) in split.items() if login is not None}
        self.sessions = sessions
        self.limits = TimeLimits(timeout, attempt_timeout)
        self.max_retries = max_retries
        self.sleep: Callable[[float], Awaitable[Any]] = sessions.pause
        self.rand: Callable[[], float] = random.random
        self.clock: Callable[[], float] = time.monotonic
        #: Each area's credentials to add (by its argument), worked out at its first call.
        self._outgoing: dict[str, Outgoing] = {}
        #: What the caller adds to every request by default (``with_extras``).
        self.extras: Extras | None = None
        #: Each area's pace of bulk work (by its argument), made at its first bulk call.
        self._paces: dict[str, Pace] = {}

    # --- the call -------------------------------------------------------------------
    def request(self, op: Operation, *, path_id: str | int | None = None,
                params: Mapping[str, Any] | None = None, json_body: Any = None,
                form: Mapping[str, Any] | None = None, timeout: float | None = None,
                attempt_timeout: float | None = None, model: type[Any] | None = None,
                many: bool = False, extras: Extras | None = None,
                bulk: bool = False, paced: bool = True) -> Awaitable[Any]:
        """Send ``op``; the awaitable gives its parsed JSON answer (None for an empty
        2xx body), decoded as ``model`` (a list of them with ``many``) when one is given.
        ``extras``: what the caller adds to this call's requests (``extra_query=``,
        ``extra_headers=``; default: this transport's, ``with_extras``).

        ``bulk``: one call of many (``check_many``): each attempt waits for the area's
        pace (its holds; with ``paced`` its rate and window too), and a 429 is sent again
        after the wait asked for without spending ``max_retries``, until the budget ends.

        Arguments and configuration are checked at once (``ConfigurationError``,
        ``InvalidInputError``). Awaiting raises the ``APIError`` subclass the answer maps
        to, ``APIConnectionError`` / ``APITimeoutError`` when no usable answer came,
        ``ResponseDecodeError`` for a body that is not JSON or not of the model's shape.
        """
        try:
            if extras is None:
                extras = self.extras
            if extras is not None:
                self._check_extras(op, extras)
            call = Call(op, self.urls.of(op, path_id), params, form, extras=extras)
            budget, per_attempt = self.limits.for_call(timeout, attempt_timeout,
                                                       op.safe_to_repeat)
            exchange = Exchange(call, self._credentials_of(call), json_body, budget,
                                per_attempt, model=model, many=many,
                                pace=self.pace(op) if bulk else None, paced=paced)
        except SDKError as exc:
            self.credentials.clean(exc)
            raise
        return self._send_handling_retries(exchange)

    @asynccontextmanager
    async def stream(
        self,
        op: Operation,
        *,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        absolute_url: str | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Send ``op`` and hand out its 2xx answer unread, releasing it on exit.

        ``timeout`` bounds the wait for a pooled connection, connecting and each read (a
        download may take long, a stall may not). With ``absolute_url`` the request goes
        there *without credentials* (a result hosted elsewhere), and without the
        caller's extras. A non-2xx answer raises as ``request`` does.
        ``Client.close()`` aborts the stream (``StreamedResponse``). The extras are this
        transport's ``extras`` (``with_extras``).
        """
        # Opened by a method of its own: this frame stays in the traceback of an error
        # raised while the stream is read, so it holds no URL, query or answer.
        streamed = await self._open_stream(op, params, timeout, absolute_url)
        owner = self.sessions
        try:
            owner.add_stream(streamed)
            yield streamed
        finally:
            owner.discard_stream(streamed)
            streamed.release()

    async def _open_stream(self, op: Operation, params: Mapping[str, Any] | None,
                           timeout: float | None, absolute_url: str | None,
                           ) -> StreamedResponse:
        try:
            if absolute_url is None:
                if self.extras is not None:
                    self._check_extras(op, self.extras)
                call = Call(op, self.urls.of(op), params, extras=self.extras)
                outgoing: Outgoing | None = self._credentials_of(call)
            else:
                call = Call(op, absolute_url, params, with_credentials=False)
                outgoing = Outgoing(URL(absolute_url), (), in_form=False)  # none added
            exchange = Exchange(call, outgoing, None, self.limits.budget(timeout), None,
                                streaming=True)
        except SDKError as exc:
            self.credentials.clean(exc)
            raise
        streamed: StreamedResponse = await self._send_handling_retries(exchange)
        return streamed

    def with_extras(self, extras: Extras | None) -> Transport:
        """This transport, whose requests and streams carry ``extras`` by default: for
        code that sends on behalf of one call (``self`` when there are none)."""
        if extras is None:
            return self
        bound = copy.copy(self)
        bound.extras = extras
        return bound

    def _check_extras(self, op: Operation, extras: Extras) -> None:
        """``InvalidInputError`` for extras that would replace a credential of ``op``'s
        area (``Extras`` refused the others when made)."""
        if op.area.argument in self._logins:
            extras.refuse_login()

    def pace(self, op: Operation) -> Pace:
        """The pace of ``op``'s area on this client (made at first use)."""
        key = op.area.argument
        pace = self._paces.get(key)
        if pace is None:
            pace = self._paces[key] = Pace(lambda: self.clock(), self._park,
                                           lambda: self.rand())
        return pace

    async def _park(self, waiter: asyncio.Future[None] | None, seconds: float) -> None:
        """A pace's wait: ``seconds`` (``sleep``), or until ``waiter`` is done, at most
        ``seconds``; ``close()`` ends both (``ClosedInFlight``)."""
        if waiter is None:
            await self.sleep(seconds)
        else:
            await self.sessions.pause(seconds, waiter)

    def _credentials_of(self, call: Call) -> Outgoing:
        """What the middleware adds to ``call``'s requests (``ConfigurationError``: a
        credential the area needs is not configured)."""
        area = call.op.area
        outgoing = self._outgoing.get(area.argument)
        if outgoing is None:
            fields = self.credentials.fields(area.placement, call.op.name)
            outgoing = self._outgoing[area.argument] = Outgoing(
                URL(call.url), fields, in_form=area.placement.in_form,
                authorization=self._logins.get(area.argument))
        return outgoing if call.form is None else outgoing.with_form(call.form)

    # --- the attempts ---------------------------------------------------------------
    @clean_errors
    async def _send_handling_retries(self, exchange: Exchange) -> Any:
        """Attempts until one gives the call's result, or the call's error."""
        attempts = Attempts(self.clock(), exchange.budget, exchange.pace is not None)
        sessions = self.sessions
        session = sessions.session()  # a closed client, another loop: UsageError now
        cancelled_before = sessions.cancellations()
        while True:
            if attempts.deadline <= self.clock():
                raise self._ran_out(exchange.call, attempts)
            if exchange.pace is None:
                attempted = await self._run(session, exchange, attempts, cancelled_before)
            else:
                attempted = await self._paced(session, exchange, attempts, cancelled_before)
            if attempted.done:
                return attempted.value
            attempts.last = attempted
            pause = self._next_pause(exchange.call, attempted, attempts)
            if pause:
                try:
                    await self.sleep(pause)
                except ClosedInFlight:
                    raise self.connection_error(
                        exchange.call, attempts.failed(CLOSED_IN_FLIGHT)) from None
            attempts.count(attempted)

    async def _run(self, session: aiohttp.ClientSession, exchange: Exchange,
                   attempts: Attempts, cancelled_before: int) -> Attempted[Any]:
        """One attempt within what is left of the budget (on a caller's session in a
        task of the client's own); ended by ``close()``: a failure."""
        sessions = self.sessions
        timeout = self.limits.for_attempt(attempts.deadline - self.clock(), exchange.budget,
                                          exchange.per_attempt, exchange.streaming)
        attempt = self._attempt(session, exchange, timeout,
                                attempts.spent >= self.max_retries, attempts)
        try:
            return await (attempt if sessions.owns_session
                          else sessions.in_own_task(attempt, Attempted.discard))
        except asyncio.CancelledError:
            if not sessions.closed_under(cancelled_before):
                raise
            return Attempted(failure=CLOSED_IN_FLIGHT)

    async def _paced(self, session: aiohttp.ClientSession, exchange: Exchange,
                     attempts: Attempts, cancelled_before: int) -> Attempted[Any]:
        """One attempt of a bulk call, sent once its area's pace lets it (the call's
        error when no moment is left in its budget), its outcome told to the pace."""
        pace = exchange.pace
        assert pace is not None
        try:
            ticket = await pace.ready(exchange.paced, attempts.deadline)
        except ClosedInFlight:
            raise self.connection_error(exchange.call,
                                        attempts.failed(CLOSED_IN_FLIGHT)) from None
        if ticket is None:
            held = pace.held_until - self.clock()
            raise (self._held_back(exchange.call, held) if held > 0 and attempts.last is None
                   else self._ran_out(exchange.call, attempts))
        status: int | None = None
        attempted: Attempted[Any] | None = None
        try:
            attempted = await self._run(session, exchange, attempts, cancelled_before)
            status = attempted.status
        except APIError as exc:  # a final answer refused: the service took it
            status = exc.status_code or 200
            raise
        finally:
            answer = attempted.answer if attempted is not None else None
            pace.done(ticket, status, parse_retry_after(
                answer[1].get("Retry-After")) if answer and status == 429 else None)
        return attempted

    def _held_back(self, call: Call, seconds: float) -> RateLimitError:
        """The error of a bulk call the pace holds past its budget before its first
        attempt: the service asked this client to wait (a 429 while it took nothing)."""
        error = RateLimitError(
            f"not sent: the service asked for a wait of {seconds:.1f} s (HTTP 429 to "
            "this client), past this call's time", operation=call.op.name,
            url=call.shown_url, retry_after=seconds)
        if logger.isEnabledFor(logging.WARNING):
            log_give_up(call.op.method, self._shown(call), str(error), 0)
        return error

    def _ran_out(self, call: Call, attempts: Attempts) -> SDKError:
        """The error of a call whose budget ended before another attempt could be made."""
        last = attempts.last
        return self._given_up(call, attempts, None if last and last.answer else TIME_RAN_OUT)

    def _next_pause(self, call: Call, attempted: Attempted[Any], attempts: Attempts) -> float:
        """The pause before the next attempt; raises the call's error when there is none
        to make (the policy says no, or it could not finish within the budget)."""
        failure = attempted.failure
        if failure is not None:
            failure = attempts.failed(CLOSED_IN_FLIGHT if self.sessions.closed else failure)
            if self.max_retries <= attempts.spent or not retries_failure(
                    failure, call.op.safe_to_repeat):
                raise self._given_up(call, attempts, failure)
            if retries_at_once(failure, attempts.dropped):
                attempts.dropped = True
                self._log_retry(call, failure.message, 0.0, attempts)
                return 0.0
            reason, delay = failure.message, backoff_delay(attempts.spent, self.rand)
        else:
            assert attempted.answer is not None
            reason, delay = self._answer_pause(call, attempted.answer, attempts)
        if self.clock() + delay >= attempts.deadline:  # a retry could not finish in time
            raise self._given_up(call, attempts, failure)
        self._log_retry(call, reason, delay, attempts)
        return delay

    def _log_retry(self, call: Call, reason: str, delay: float, attempts: Attempts) -> None:
        """The INFO line of the retry about to be made (attempt ``retry + 2``)."""
        if logger.isEnabledFor(logging.INFO):
            log_retry(call.op.method, self._shown(call), reason, delay, attempts.retry + 2)

    def _answer_pause(self, call: Call, answer: Answer, attempts: Attempts,
                      ) -> tuple[str, float]:
        """Why and how long to wait before retrying ``answer``; raises what its body
        decides (``_decided``)."""
        attempts.sent_maybe = True
        if call.op.fail_in_body and (meant := self._decided(call, answer)):
            raise meant
        status, headers, _ = answer
        delay = parse_retry_after(headers.get("Retry-After"))
        if delay:
            return f"HTTP {status}", delay
        free = resent_free(status, attempts.bulk)
        return f"HTTP {status}", backoff_delay(attempts.free if free else attempts.spent,
                                               self.rand)

    def _given_up(self, call: Call, attempts: Attempts, failure: Failure | None) -> SDKError:
        """The call's error: ``failure``'s, or (None) the refusal of the last answer."""
        if failure is None:
            assert attempts.last is not None and attempts.last.answer is not None
            error: SDKError = self._timed(self.refused(call, *attempts.last.answer), attempts)
        else:
            error = self.connection_error(call, attempts.failed(failure))
        if logger.isEnabledFor(logging.WARNING):
            log_give_up(call.op.method, self._shown(call), str(error), attempts.retry + 1)
        return error

    def _timed(self, error: SDKError, attempts: Attempts) -> SDKError:
        """``error``, whose answer (an ``APIError``'s ``response``) gets the call's time
        so far and its attempts."""
        if isinstance(error, APIError) and error.response is not None:
            error.response = attrs.evolve(error.response, attempts=attempts.retry + 1,
                                          elapsed=self.clock() - attempts.begun)
        return error

    def _shown(self, call: Call) -> str:
        """``call``'s URL as a log line shows it: a hosted result's URL is the
        service's text, and may carry a credential anywhere."""
        return self.credentials.scrub(call.shown_url)

    def _decided(self, call: Call, answer: Answer) -> SDKError | None:
        """The error a retryable answer means when its body's ``fail`` text decides (no
        credit, a wrong key: the same on every retry), whatever its status; else None (the
        classes a status alone gives, or an unknown text: retried)."""
        meant = self.refused(call, *answer)
        return None if type(meant) in (APIError, ServerError, RateLimitError) else meant

    async def _attempt(self, session: aiohttp.ClientSession, exchange: Exchange,
                       timeout: aiohttp.ClientTimeout, final: bool,
                       attempts: Attempts) -> Attempted[Any]:
        """One attempt: the request sent; its answer completed (``complete``) unless it
        is to be retried (not ``final``), then read for the record and released."""
        call = exchange.call
        debug = logger.isEnabledFor(logging.DEBUG)
        started = self.clock() if debug else 0.0
        try:
            response = await self._send_single_request(session, exchange, timeout)
        except TRANSPORT_ERRORS as exc:
            failure = describe_exception(exc)
            if debug:
                log_attempt(call.op.method, self._shown(call), failure.message,
                            self.clock() - started, attempts.retry + 1)
            return Attempted(failure=failure)
        if debug:
            log_attempt(call.op.method, self._shown(call), response.status,
                        self.clock() - started, attempts.retry + 1)
        status = response.status
        if retries_answer(status, call.op.safe_to_repeat) and (
                not final or resent_free(status, attempts.bulk)):
            body = await self.read_for_retry(call, response)
            return Attempted(answer=(response.status, response.headers, body))
        try:
            if exchange.streaming:
                return Attempted(value=await self._open(call, response))
            return Attempted(value=await self._finish(call, response, attempts,
                                                      exchange.model, exchange.many))
        except TRANSPORT_ERRORS as exc:  # the answer broke off: as a dropped connection
            return Attempted(failure=describe_exception(exc))
        except APIError as exc:
            self._timed(exc, attempts)
            if exc.status_code in C.RETRYABLE_STATUSES and logger.isEnabledFor(logging.WARNING):
                log_give_up(call.op.method, self._shown(call), str(exc),
                            attempts.retry + 1)  # the last of its retries
            raise

    async def _send_single_request(self, session: aiohttp.ClientSession, exchange: Exchange,
                                   timeout: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:
        """The request handed to aiohttp, marked for the library's middleware."""
        call = exchange.call
        marked = OUTGOING.set(exchange.outgoing)
        try:
            return await session.request(call.op.method, call.url, timeout=timeout,
                                         **exchange.sent, **self.sessions.request_options)
        except RuntimeError:
            if session.closed:  # the caller closed the session they gave the client
                raise UsageError("the aiohttp session given to Client was closed") from None
            raise
        finally:
            OUTGOING.reset(marked)

    # --- completing the answer ------------------------------------------------------
    async def _finish(self, call: Call, response: aiohttp.ClientResponse, attempts: Attempts,
                      model: type[Any] | None, many: bool) -> Any:
        """A final answer read in full, interpreted and decoded (a big one off the loop).

        An answer that arrived whole with its head (a small one usually does) is taken
        as aiohttp buffered it (``StreamReader.read_nowait``), not through ``read()``'s
        coroutines; not on a caller's session, whose trace configs see ``read()``."""
        content = response.content
        try:
            if self.sessions.library_session and content.is_eof():
                raw = content.read_nowait()
                if len(raw) > C.MAX_JSON_BODY_BYTES:
                    raise self.too_large(call, response.status, " (decompressed)",
                                         C.MAX_JSON_BODY_BYTES)
            else:
                raw = await self.read_capped(call, response)
        finally:
            response.release()
        elapsed = self.clock() - attempts.begun
        if len(raw) < C.OFFLOAD_DECODE_BYTES:
            return self.finish(call, response, raw, attempts.retry + 1, elapsed, model, many)
        return await self.finish_off_loop(call, response, raw, attempts.retry + 1, elapsed,
                                          model, many)

    async def _open(self, call: Call, response: aiohttp.ClientResponse) -> StreamedResponse:
        """A final answer handed out as a stream (a refusal read and raised)."""
        if not 200 <= response.status < 300:
            raise await self.refusal(call, response)
        return StreamedResponse(self, call, response)

