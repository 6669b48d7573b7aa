"""One request's whole life: URL, credentials, send, retry with backoff, the answer
handed to the one interpreter (``_answer``), errors.

Resource modules describe an operation (``Operation``: name, method, area, path, and
whether it is safe to repeat) and call ``Transport.request`` or ``Transport.stream``.
Everything else happens here, once:

* **The call in flight** is one record, ``Call`` (operation, URL, query), never changed once made.
* **Credentials** by area, where ``_auth.Area``'s table says (``place_credentials``), as
  ``SecretValue``s revealed only inline in the call to aiohttp (``reveal``, ``Call.target``).
* **Retries** (DESIGN §3) follow from ``Operation.safe_to_repeat``, not from the HTTP
  method: connection errors, timeouts, 408 and 5xx are retried only for safe operations;
  an unsafe one is retried only when the request surely never left (connect refused,
  DNS) or the answer was 429. Backoff is exponential with full jitter, ``Retry-After``
  is honoured and capped (``_retry``), and no retry starts that would end past the
  call's deadline. ``max_retries`` is exact: aiohttp's own hidden resend is switched off
  (``_session``), so the service sees at most ``1 + max_retries`` attempts, each logged
  at DEBUG. A connection that dropped before any answer (a stale keep-alive connection)
  is retried at once, without a backoff sleep, once per call: it still counts as an
  attempt.
* **Timeouts** (``_timeouts``): ``timeout`` is one budget for the whole call;
  ``attempt_timeout`` bounds one attempt of a safe operation (default:
  ``DEFAULT_ATTEMPT_SHARE`` of the budget) by a deadline that one timer serves for every
  attempt in flight (``AttemptDeadlines``; aiohttp bounds the wait for a connection), an
  unsafe operation's attempt by aiohttp's ``total`` (the rest of the budget). Streams
  bound the wait for a pooled connection, the connect and every read by the budget.
* **One answer interpreter** (``_answer.Interpreter``, which ``Transport`` is): status,
  headers and body to data or the SDK error, for plain requests and downloads
  (``StreamedResponse.interpret``) alike. Every answer's *decompressed* size is capped at
  ``MAX_JSON_BODY_BYTES``; an answer of ``OFFLOAD_DECODE_BYTES`` or more is parsed and
  decoded in a worker thread. A small answer that arrived whole with its head is taken
  from aiohttp's buffer (``read_nowait``) rather than through ``read()``'s coroutines,
  on the client's own session; an answer aiohttp already closed is not released again.
* **Secrets** never leave this module in clear: URLs are redacted before anything stores
  them, aiohttp's exceptions (which hold the full URL) are described, not chained, and
  every ``SDKError`` leaving ``request``/``stream`` goes through ``Credentials.clean``
  (``clean_errors``; inline on the hot path, where a wrapper coroutine would cost). An
  exception re-raised as it is (a cancellation from outside: the ``__context__`` of a
  caller's ``TimeoutError``) loses the locals of the finished frames below
  (``forget_frames``: aiohttp's hold the full URL and the form) and ``_exchange`` its
  answer, only in ``except`` branches. The DEBUG line is scrubbed (a hosted URL).
* **Cancellation** is never caught, except the one ``Client.close()`` causes: that call
  ends with ``APIConnectionError`` (see ``_session``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import aiohttp
import attrs

from .. import _constants as C
from .._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    ConfigurationError,
    RateLimitError,
    SDKError,
    ServerError,
    UsageError,
)

# Area, Call, Operation and StreamedResponse re-exported: resource modules import them here.
from .answer import Call as Call
from .answer import Interpreter
from .answer import Operation as Operation
from .answer import StreamedResponse as StreamedResponse
from .credentials import Area as Area
from .credentials import Credentials, SecretValue, encode_query, place_credentials, reveal
from .failures import (
    ATTEMPT_TIMED_OUT,
    CLOSED_IN_FLIGHT,
    TRANSPORT_ERRORS,
    Failure,
    clean_errors,
    describe_exception,
    forget_frames,
)
from .retry import backoff_delay, parse_retry_after
from .session import SessionOwner
from .timeouts import AttemptDeadlines
from .timeouts import TimeLimits as TimeLimits
from .urls import wire_url

__all__ = ["Area", "BaseUrls", "Call", "Operation", "Shape", "StreamedResponse", "Streams",
           "TimeLimits", "Transport"]

logger = logging.getLogger(C.LOGGER_NAME)

#: What every call of one operation shares (``Transport.shape``): the operation, its URL,
#: the URL's encoded scheme, authority and path (None: aiohttp encodes the URL and
#: query), and the credentials' encoded query part (None where they are not in it).
Shape = tuple[Operation, str, "tuple[str, str, str] | None", "SecretValue | None"]


class BaseUrls:
    """Each area's base URL, the URL of an operation, and its ``Shape``."""

    __slots__ = ("_credentials", "_shapes", "by_area")

    def __init__(self, by_area: Mapping[Area, str | None], credentials: Credentials) -> None:
        self.by_area = dict(by_area)
        self._credentials = credentials
        #: id(op) -> the shape of an operation without an id (hashing the record on
        #: every call would cost more than finding the shape).
        self._shapes: dict[int, Shape] = {}

    def of(self, op: Operation, path_id: str | int | None = None) -> str:
        """Absolute URL of ``op`` (no query), with ``path_id`` put into ``{id}``."""
        base = self.by_area.get(op.area)
        if not base:
            raise ConfigurationError(
                f"{op.name}: no URL for this area: pass {op.area.argument}= or base_url= to "
                f"Client, or set {op.area.env_var} or {C.ENV_BASE_URL}",
                field=op.area.argument,
            )
        if path_id is not None:
            return base + op.path.replace("{id}", quote(str(path_id), safe=""))
        return base + op.path

    def shape(self, op: Operation, path_id: str | int | None = None) -> Shape:
        """What every call of ``op`` (with this ``path_id``) shares (``Shape``), found
        once per operation without a path id. ``ConfigurationError``: no URL for the
        area, or a credential it needs is missing."""
        if path_id is None:
            known = self._shapes.get(id(op))
            if known is not None and known[0] is op:
                return known
        url = self.of(op, path_id)
        wire = None if op.area.placement.in_form else wire_url(url)
        found = (op, url, wire,
                 None if wire is None else self._credentials.query_part(op.area, op.name))
        if path_id is None and len(self._shapes) < 256:
            self._shapes[id(op)] = found
        return found


class Streams(Interpreter):
    """Downloads: an operation's answer handed out unread (``stream``); ``Transport``
    provides the attempt loop (``_exchange``) and the parts named here."""

    urls: BaseUrls
    sessions: SessionOwner
    limits: TimeLimits

    async def _exchange(self, call: Call, json_body: Any, form: dict[str, Any] | None,
                        budget: float, per_attempt: float | None, *,
                        streaming: bool = False, model: type[Any] | None = None,
                        many: bool = False) -> Any:
        raise NotImplementedError

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
        there *without credentials* (a result hosted elsewhere). A non-2xx answer raises
        as ``request`` does. ``Client.close()`` aborts the stream (``StreamedResponse``).
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

    @clean_errors
    async def _open_stream(
        self,
        op: Operation,
        params: Mapping[str, Any] | None,
        timeout: float | None,
        absolute_url: str | None,
    ) -> StreamedResponse:
        if absolute_url is None:
            call, _ = build_call(self.urls.shape(op), params, None, self.credentials)
        else:
            call = Call(op, absolute_url, dict(params or {}))
        budget = self.limits.budget(timeout)
        response = await self._exchange(call, None, None, budget, None, streaming=True)
        if not 200 <= response.status < 300:
            raise await self.refusal(call, response)
        return StreamedResponse(self, call, response)



class Transport(Streams):
    """Sends operations for a ``Client`` and reads their answers (``Interpreter``);
    ``sleep``, ``rand``, ``clock``: plain attributes, for tests never to really wait."""

    def __init__(self, *, credentials: Credentials, base_urls: Mapping[Area, str | None],
                 sessions: SessionOwner, timeout: float, max_retries: int,
                 attempt_timeout: float | None = None) -> None:
        credentials = credentials.with_urls(base_urls.values())  # their passwords too
        super().__init__(credentials)
        self.urls = BaseUrls(base_urls, credentials)
        self.sessions = sessions
        self.limits = TimeLimits(timeout, attempt_timeout)
        self.deadlines = AttemptDeadlines()
        self.max_retries = max_retries
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
        self.rand: Callable[[], float] = random.random
        self.clock: Callable[[], float] = time.monotonic

    def request(self, op: Operation, *, path_id: str | int | None = None,
                params: Mapping[str, Any] | None = None, json_body: Any = None,
                form: Mapping[str, Any] | None = None, timeout: float | None = None,
                attempt_timeout: float | None = None, model: type[Any] | None = None,
                many: bool = False, encoded_params: str | None = None) -> Awaitable[Any]:
        """Send ``op``; the awaitable gives its parsed JSON answer (None for an empty
        2xx body), decoded as ``model`` (a list of them with ``many``) when one is given.

        Arguments and configuration are checked at once (``ConfigurationError``,
        ``InvalidInputError``). Awaiting raises the ``APIError`` subclass the answer maps
        to, ``APIConnectionError`` / ``APITimeoutError`` when no usable answer came,
        ``ResponseDecodeError`` for a body that is not JSON or not of the model's shape.
        ``encoded_params``: ``params`` already encoded by the caller, the very text
        ``encode_query(params)`` gives (a hot path that knows its query's shape).
        Not a coroutine function (one frame less under aiohttp): ``clean_errors`` inline.
        """
        try:
            call, body_form = build_call(self.urls.shape(op, path_id), params, form,
                                         self.credentials, encoded_params)
            budget, per_attempt = (
                self.limits.defaults[op.safe_to_repeat]
                if timeout is None and attempt_timeout is None
                else self.limits.for_call(timeout, attempt_timeout, op.safe_to_repeat))
        except SDKError as exc:
            self.credentials.clean(exc)
            raise
        return self._exchange(call, json_body, body_form, budget, per_attempt,
                              model=model, many=many)

    async def _exchange(
        self,
        call: Call,
        json_body: Any,
        form: dict[str, Any] | None,
        budget: float,
        per_attempt: float | None,
        *,
        streaming: bool = False,
        model: type[Any] | None = None,
        many: bool = False,
    ) -> Any:
        """Attempts with retries until an answer worth handing out, or the error of the
        last attempt. Streaming: returns the answer open (the caller releases it); else
        its data (read in full, released and interpreted: ``finish``).

        The call is marked in flight meanwhile, so that ``Client.close()`` can end it: a
        cancellation by ``close()`` becomes ``APIConnectionError``. (One coroutine: every
        frame between caller and aiohttp is crossed again at each of its suspensions.)
        """
        owner = self.sessions
        session, task = owner.begin()
        op = call.op
        wire = call.wire
        safe = op.safe_to_repeat
        # What scrubs the DEBUG lines, if on (a disabled log costs one test a call).
        debug = self.credentials if logger.isEnabledFor(logging.DEBUG) else None
        options = owner.request_options
        # Pre-encoded, safe (aiohttp's default: follow redirects), no body: aiohttp gets
        # only URL, timeout and the options (a caller's session: User-Agent, middlewares).
        plain = wire is not None and safe and json_body is None and form is None
        limits = self.limits
        # An attempt of a safe operation ends by its deadline (``_timeouts``: one timer for
        # every attempt in flight, not one per request); others by aiohttp's ``total``.
        deadlines = self.deadlines
        bounded = task if per_attempt is not None and not streaming else None
        bound = per_attempt if per_attempt is not None else budget
        clock = self.clock
        begun = clock()
        deadline = begun + budget
        last_failure: Failure | None = None
        last_response: tuple[int, Mapping[str, str], bytes] | None = None
        sent_maybe = False
        redropped = False
        retry = 0
        started = begun  # the first attempt starts now: one clock read less per call
        try:
            while True:
                if retry:
                    started = clock()
                remaining = deadline - started
                if remaining <= 0:
                    last_failure = Failure("the call's time ran out", sent_maybe, False,
                                           timeout=True)
                    break
                if bounded is not None:
                    seconds = bound if bound < remaining else remaining
                    client_timeout = (limits.connect_bounds.get(seconds)  # built once
                                      or limits.connect_bound(seconds))
                    deadlines.start(bounded, seconds)
                else:
                    client_timeout = limits.client_timeout(remaining, per_attempt, budget,
                                                           streaming)
                failure: Failure | None = None
                retry_after: float | None = None
                response: aiohttp.ClientResponse | None = None
                try:
                    # ``target``/``reveal`` inline: no local variable holds a credential.
                    if plain and not options:  # each keyword costs aiohttp: only what differs
                        response = await session.request(op.method, call.target(),
                                                         timeout=client_timeout)
                    elif plain:  # a caller's session (``**{}`` would cost the call above)
                        response = await session.request(op.method, call.target(),
                                                         timeout=client_timeout, **options)
                    else:
                        response = await session.request(
                            op.method, call.target(),
                            params=None if wire else reveal(call.query), json=json_body,
                            data=None if form is None else reveal(form),
                            timeout=client_timeout, allow_redirects=safe,
                            **options,
                        )
                except TRANSPORT_ERRORS as exc:
                    failure = describe_exception(exc, self.credentials.scrub)
                except asyncio.CancelledError:
                    if not deadlines.expired(bounded):
                        raise
                    failure = ATTEMPT_TIMED_OUT
                except RuntimeError:
                    if session.closed:  # the caller closed the session they gave the client
                        raise UsageError(
                            "the aiohttp session given to Client was closed") from None
                    raise
                if response is not None:
                    status = response.status
                    if debug:
                        _log(call, status, clock() - started, retry, debug)
                    retryable = status in C.RETRYABLE_STATUSES and (safe or status == 429)
                    if not retryable or retry >= self.max_retries:
                        if streaming:
                            return response
                        try:
                            length = response.content_length
                            if (length is not None and length < C.OFFLOAD_DECODE_BYTES
                                    and "Content-Encoding" not in response.headers):
                                content = response.content
                                if content.is_eof() and not options:
                                    # Arrived whole with its head (a small answer
                                    # usually does): taken as aiohttp buffered it,
                                    # without ``read``'s four coroutines. (Not on a
                                    # caller's session: its trace configs see ``read``.)
                                    raw = content.read_nowait()
                                else:  # exactly the length announced
                                    raw = await response.read()
                            else:  # capped; a big body joined off the loop
                                raw = await self.read_capped(call, response)
                        # The answer broke off: retried like a dropped connection.
                        except TRANSPORT_ERRORS as exc:
                            failure = describe_exception(exc, self.credentials.scrub)
                        except APIConnectionError as exc:
                            failure = Failure(exc.message, exc.may_have_been_sent, False,
                                              timeout=isinstance(exc, APITimeoutError))
                        except asyncio.CancelledError:
                            if not deadlines.expired(bounded):
                                raise
                            failure = ATTEMPT_TIMED_OUT
                        finally:
                            if not response.closed:  # closed: its body ended, the
                                response.release()  # connection is back in the pool
                        if failure is None:
                            if len(raw) < C.OFFLOAD_DECODE_BYTES:
                                # Decoded now, without an await: the attempt's deadline
                                # cannot fire, and ``forget`` (finally) drops it.
                                return self.finish(call, response, raw, retry + 1,
                                                   clock() - begun, model, many)
                            if bounded is not None:
                                deadlines.stop(bounded)
                            return await self.finish_off_loop(
                                call, response, raw, retry + 1, clock() - begun, model, many)
                    else:
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
                        try:
                            body = await self.read_for_retry(call, response)
                        except asyncio.CancelledError:
                            if not deadlines.expired(bounded):
                                raise
                            body = b""  # as for an answer that broke off
                        last_response = (status, response.headers, body)
                        last_failure = None
                        sent_maybe = True
                        if op.fail_in_body and (meant := _decided(self, call, last_response)):
                            raise meant
                if bounded is not None:
                    deadlines.stop(bounded)
                if failure is not None:
                    if response is None and debug:  # an answer that broke off is logged
                        _log(call, failure.message, clock() - started, retry, debug)
                    sent_maybe = sent_maybe or failure.may_have_been_sent
                    last_failure = attrs.evolve(failure, may_have_been_sent=sent_maybe)
                    last_response = None
                    if failure.fatal or retry >= self.max_retries or not (
                        safe or failure.retry_unsafe
                    ):
                        break
                    if failure.dropped and not redropped:
                        # A stale keep-alive connection: try again at once (still an attempt).
                        redropped = True
                        retry += 1
                        continue
                delay = retry_after if retry_after is not None else backoff_delay(retry, self.rand)
                if clock() + delay >= deadline:
                    break  # a retry could not finish in time: report what we have
                await self.sleep(delay)
                retry += 1
            if last_response is not None:
                raise self.refused(call, *last_response)
            assert last_failure is not None
            raise self.connection_error(call, last_failure)
        except BaseException as exc:
            # ``clean_errors`` inline (no wrapper coroutine on the hot path): ``clean``
            # skips this running frame, so the answer (its repr has the full URL), the
            # body and the wire parts (a base URL's password) are dropped by hand. Any
            # other exception (a cancellation from outside: the ``__context__`` of the
            # caller's ``TimeoutError``) is raised as it is, without the locals below.
            response = last_response = None
            raw = b""
            wire = None
            if isinstance(exc, SDKError):
                self.credentials.clean(exc)
                raise
            if not isinstance(exc, asyncio.CancelledError) or not owner.was_closed_under(task):
                forget_frames(exc)
                raise
        finally:
            if bounded is not None:
                deadlines.forget(bounded)
            owner.leave(task)
        # Only a cancellation by ``close()`` gets here; raised outside the ``except``, it
        # chains nothing (the cancelled frames hold the full URL).
        raise self.connection_error(call, CLOSED_IN_FLIGHT)


def build_call(shape: Shape, params: Mapping[str, Any] | None,
               form: Mapping[str, Any] | None, credentials: Credentials,
               encoded_params: str | None = None) -> tuple[Call, dict[str, Any] | None]:
    """The ``Call`` of an operation's ``shape`` (``Transport.shape``) with ``params``
    (kept, not copied: the caller hands over a dict of its own), and the form;
    credentials placed where the area says.

    Where the credentials go in the query, only ``params`` are encoded here, so that
    aiohttp re-encodes nothing (``Call.wire``): the URL and the credentials were encoded
    once, in the shape. Otherwise (credentials in a form, a URL with its own query, a
    value not a plain str/int/float) aiohttp encodes ``params`` with the credentials
    (``place_credentials``).

    ``encoded_params``: what ``encode_query(params)`` gives, encoded by the caller.

    Raises:
        ConfigurationError: a credential the area needs is not configured.
    """
    op, url, wire, credentials_part = shape
    if wire is not None and credentials_part is not None:
        tail = encode_query(params) if encoded_params is None else encoded_params
        if tail is not None:
            return Call(op, url, params or {}, wire, tail + "&" if tail else "",
                        credentials_part), None if form is None else dict(form)
    query, body = place_credentials(op.area, credentials, op.name, params, form)
    return Call(op, url, query), body


def _decided(transport: Transport, call: Call,
             answer: tuple[int, Mapping[str, str], bytes]) -> SDKError | None:
    """The error a retryable answer means when its body's ``fail`` text decides (no
    credit, a wrong key: the same on every retry), whatever its status; else None (the
    classes a status alone gives, or an unknown text: retried)."""
    meant = transport.refused(call, *answer)
    return None if type(meant) in (APIError, ServerError, RateLimitError) else meant


def _log(call: Call, outcome: int | str, elapsed: float, retry: int,
         credentials: Credentials) -> None:
    """The DEBUG line of one attempt (the caller checked that DEBUG is on); the URL
    scrubbed too: a hosted result's URL is the service's text (it may carry one)."""
    logger.debug("%s %s -> %s in %.1f ms (attempt %d)", call.op.method,
                 credentials.scrub(call.shown_url), outcome, elapsed * 1000.0, retry + 1)
