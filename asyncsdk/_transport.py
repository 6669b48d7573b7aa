"""One request's whole life: URL, credentials, send, retry with backoff, one answer
interpreter, errors.

Resource modules describe an operation (``Operation``: name, method, area, path, and
whether it is safe to repeat) and call ``Transport.request`` or ``Transport.stream``.
Everything else happens here, once:

* **The call in flight** is one frozen record, ``Call`` (operation, URL, query).
* **Credentials** by area (see ``_with_credentials``).
* **Retries** (DESIGN §3) follow from ``Operation.safe_to_repeat``, not from the HTTP
  method: connection errors, timeouts, 408 and 5xx are retried only for safe operations;
  an unsafe one is retried only when the request surely never left (connect refused,
  DNS) or the answer was 429. Backoff is exponential with full jitter, ``Retry-After``
  is honoured and capped, and no retry starts that would end past the call's deadline.
  ``max_retries`` is exact: aiohttp's own hidden resend is switched off (``_session``),
  so the service sees at most ``1 + max_retries`` attempts, each logged at DEBUG. A
  connection that dropped before any answer (a stale keep-alive connection) is retried
  at once, without a backoff sleep, once per call: it still counts as an attempt.
* **Timeouts**: ``timeout`` is one budget for the whole call; ``attempt_timeout`` bounds
  one attempt of a safe operation (default: ``DEFAULT_ATTEMPT_SHARE`` of the budget),
  through the attempt's own ``ClientTimeout.total`` (no extra timer). Streams bound the
  wait for a pooled connection, the connect and every read by the call's timeout.
* **One answer interpreter**, ``Transport.interpret``: status, headers and body to data
  or the SDK error, for plain requests and downloads (``StreamedResponse.interpret``)
  alike. The area rules are data: ``FAIL_IN_BODY`` and ``Operation.bare_fail_is_state``.
* **Bounds**: every answer's *decompressed* size is capped at ``MAX_JSON_BODY_BYTES``; an
  answer of ``OFFLOAD_DECODE_BYTES`` or more is parsed and decoded in a worker thread.
* **Secrets** never leave this module in clear: URLs are redacted before anything stores
  them, aiohttp's exceptions (which hold the full URL) are described, not chained.
* **Cancellation** is never caught, except the one ``Client.close()`` causes: that call
  ends with ``APIConnectionError`` (see ``_session``).
"""

from __future__ import annotations

import asyncio
import email.utils
import enum
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import attrs

from . import _constants as C
from ._answer import Interpreter, StreamedResponse
from ._convert import check_seconds
from ._errors import APIConnectionError, APITimeoutError, ResponseDecodeError, UsageError
from ._raw import RAW_CAPTURE
from ._session import SessionOwner
from ._wire import CLOSED_IN_FLIGHT, TRANSPORT_ERRORS, Failure, describe_exception

__all__ = [
    "FAIL_IN_BODY", "Area", "Call", "Credentials", "Operation", "StreamedResponse", "Transport",
    "backoff_delay", "parse_retry_after", "redact_url",
]

logger = logging.getLogger(C.LOGGER_NAME)

REDACTED = "REDACTED"
#: Query and form keys that hold a credential.
SECRET_KEYS = frozenset({"api_key", "api", "username"})


class Area(enum.Enum):
    """A part of the interface with its own base URL and way of passing credentials."""

    CONTACTS = ("contacts_url", "ASYNCSDK_CONTACTS_URL")
    CRM = ("crm_url", "ASYNCSDK_CRM_URL")
    INVOICING = ("invoicing_url", "ASYNCSDK_INVOICING_URL")
    VALIDATION = ("validation_url", "ASYNCSDK_VALIDATION_URL")
    MAIL = ("mail_url", "ASYNCSDK_MAIL_URL")

    @property
    def argument(self) -> str:
        """The ``Client`` argument that sets this area's URL."""
        return self.value[0]

    @property
    def env_var(self) -> str:
        """The environment variable that sets this area's URL."""
        return self.value[1]

    @property
    def answers_in_body(self) -> bool:
        """Validation and mail say fail in the body (``status: fail``), not by HTTP."""
        return self is Area.VALIDATION or self is Area.MAIL



#: Areas that say "refused" in the body (``status: fail`` and an ``error`` text),
#: whatever the HTTP status; the others fail by HTTP status and read the body for a
#: message. (A bare ``fail`` as a job's state: ``Operation.bare_fail_is_state``.)
FAIL_IN_BODY = frozenset({Area.VALIDATION, Area.MAIL})


@attrs.frozen
class Operation:
    """What a resource method asks of the transport: which request, and its safety.

    ``safe_to_repeat`` is False for requests with an effect the service may apply twice:
    creates, ``mail.send`` and ``jobs/create`` (a GET that spends credit).

    In a ``FAIL_IN_BODY`` area, ``status: fail`` with an ``error`` text is a refused
    request (the mapped ``APIError`` subclass is raised). A ``fail`` *without* a text is
    an ``APIError`` too, except where ``bare_fail_is_state``: jobs/status uses the same
    field for the job's own state, so there a bare ``fail`` is an answer, not an error.
    """

    name: str
    method: str
    area: Area
    path: str
    safe_to_repeat: bool
    bare_fail_is_state: bool = attrs.field(default=False, kw_only=True)
    #: Derived from ``FAIL_IN_BODY``: read by the answer interpreter.
    fail_in_body: bool = attrs.field(
        init=False, default=attrs.Factory(lambda op: op.area in FAIL_IN_BODY, takes_self=True))


@attrs.frozen
class Call:
    """The call in flight: its operation, URL (no query) and query (credentials
    included: shown only through ``shown_url``, which redacts them)."""

    op: Operation
    url: str
    query: dict[str, Any] = attrs.field(repr=False)

    @property
    def shown_url(self) -> str:
        """The URL with its query, every credential redacted."""
        return redact_url(self.url, self.query)



@attrs.define(slots=True)
class Credentials:
    """The secrets. Never shown in a repr."""

    api_key: str | None = attrs.field(repr=False)
    username: str | None = attrs.field(repr=False)

    def scrub(self, text: str) -> str:
        """``text`` with every credential value replaced by ``REDACTED``."""
        for secret in (self.api_key, self.username):
            if secret and secret in text:
                text = text.replace(secret, REDACTED)
        return text


def redact_url(url: str, params: Mapping[str, Any] | None = None) -> str:
    """The URL (plus ``params``) with the value of every credential key redacted."""
    if not params:
        return url
    shown = {k: (REDACTED if k in SECRET_KEYS else v) for k, v in params.items()}
    return f"{url}?{urlencode(shown)}"


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or HTTP date), capped at
    ``MAX_RETRY_AFTER``; None when absent or unreadable; never negative."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:  # pragma: no cover - older Pythons return None
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return float(min(max(seconds, 0.0), C.MAX_RETRY_AFTER))


def backoff_delay(retry: int, rand: Callable[[], float] = random.random) -> float:
    """Full-jitter exponential backoff for the ``retry``-th retry (0-based)."""
    return rand() * min(C.MAX_RETRY_DELAY, C.INITIAL_RETRY_DELAY * 2.0**retry)



@attrs.define
class TimeLimits:
    """A client's time limits and the ``ClientTimeout`` of each attempt.

    ``timeout`` is a call's whole budget, ``attempt_timeout`` one attempt's bound (None:
    ``DEFAULT_ATTEMPT_SHARE`` of the call's budget). Each attempt bound in use gets one
    ``ClientTimeout``, built once, not one per attempt.
    """

    timeout: float
    attempt_timeout: float | None = None
    _cache: dict[float, aiohttp.ClientTimeout] = attrs.field(factory=dict, init=False)

    def budget(self, request_timeout: float | None) -> float:
        """The call's time budget: its ``request_timeout`` (checked) or the client's."""
        if request_timeout is None:
            return self.timeout
        return float(check_seconds(request_timeout, "request_timeout"))

    def per_attempt(self, budget: float, attempt_timeout: float | None) -> float:
        """One attempt's bound: the call's ``attempt_timeout`` (checked), the client's,
        or ``DEFAULT_ATTEMPT_SHARE`` of the budget."""
        if attempt_timeout is not None:
            return float(check_seconds(attempt_timeout, "attempt_timeout"))
        if self.attempt_timeout is not None:
            return self.attempt_timeout
        return budget * C.DEFAULT_ATTEMPT_SHARE

    def client_timeout(self, remaining: float, per_attempt: float | None,
                        budget: float, streaming: bool) -> aiohttp.ClientTimeout:
        if streaming:
            # No total (a download may take long); the pool wait, the connect and every
            # read are bounded (a stalled read must not hang, nor a full pool).
            return aiohttp.ClientTimeout(total=None, connect=remaining, sock_read=budget)
        # ``total`` bounds the whole exchange, body included, so a stalled read cannot
        # hang (tests/reliability: test_answer_stalling_mid_body_times_out); a
        # ``sock_read`` could never fire first and costs a timer rescheduled per chunk.
        if per_attempt is not None and per_attempt < remaining:
            cached = self._cache.get(per_attempt)
            if cached is None:
                if len(self._cache) >= 64:  # per-call values: keep the cache small
                    self._cache.clear()
                cached = self._cache[per_attempt] = aiohttp.ClientTimeout(
                    total=per_attempt)
            return cached
        return aiohttp.ClientTimeout(total=remaining)


class Transport(Interpreter):
    """Sends operations for a ``Client`` and reads their answers (``Interpreter``).
    ``sleep``, ``rand`` and ``clock`` are plain attributes so tests can replace them
    and never really wait."""

    def __init__(
        self,
        *,
        credentials: Credentials,
        base_urls: Mapping[Area, str | None],
        sessions: SessionOwner,
        timeout: float,
        max_retries: int,
        attempt_timeout: float | None = None,
        proxy: str | None = None,
        ssl: Any = True,
    ) -> None:
        super().__init__(credentials.scrub, parse_retry_after)
        self.credentials = credentials
        self.base_urls = dict(base_urls)
        self.sessions = sessions
        self.limits = TimeLimits(timeout, attempt_timeout)
        self.max_retries = max_retries
        self.proxy = proxy
        self.ssl = ssl
        # Keyword arguments of every request that differ from aiohttp's defaults: the
        # caller's session's (``SessionOwner.request_options``), proxy and ssl.
        self._options: dict[str, Any] = dict(sessions.request_options)
        if proxy is not None:
            self._options["proxy"] = proxy
        if ssl is not True:
            self._options["ssl"] = ssl
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
        self.rand: Callable[[], float] = random.random
        self.clock: Callable[[], float] = time.monotonic

    # --- building -------------------------------------------------------------------
    def url_for(self, op: Operation, path_id: str | int | None = None) -> str:
        """Absolute URL of ``op`` (no query), with ``path_id`` put into ``{id}``."""
        base = self.base_urls.get(op.area)
        if not base:
            from ._errors import ConfigurationError

            raise ConfigurationError(
                f"{op.name}: no URL for this area: pass {op.area.argument}= or base_url= to "
                f"Client, or set {op.area.env_var} or ASYNCSDK_BASE_URL",
                field=op.area.argument,
            )
        path = op.path
        if path_id is not None:
            path = path.replace("{id}", quote(str(path_id), safe=""))
        return base + path

    def _with_credentials(
        self,
        op: Operation,
        params: Mapping[str, Any] | None,
        form: Mapping[str, Any] | None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        creds = self.credentials
        query = dict(params) if params else {}
        if op.area is Area.MAIL:
            body = dict(form) if form else {}
            body["api"] = self._need(creds.api_key, op, "api_key", "ASYNCSDK_API_KEY")
            body["username"] = self._need(creds.username, op, "username", "ASYNCSDK_USERNAME")
            return query, body
        if op.area is Area.VALIDATION:
            query["api"] = self._need(creds.api_key, op, "api_key", "ASYNCSDK_API_KEY")
            query["username"] = self._need(creds.username, op, "username", "ASYNCSDK_USERNAME")
        else:
            query["api_key"] = self._need(creds.api_key, op, "api_key", "ASYNCSDK_API_KEY")
        return query, dict(form) if form is not None else None

    @staticmethod
    def _need(value: str | None, op: Operation, argument: str, env: str) -> str:
        if not value:
            from ._errors import ConfigurationError

            raise ConfigurationError(
                f"{op.name}: no {argument}: pass {argument}= to Client or set {env}",
                field=argument,
            )
        return value

    # --- sending --------------------------------------------------------------------
    def request(
        self,
        op: Operation,
        *,
        path_id: str | int | None = None,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        form: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        model: type[Any] | None = None,
        many: bool = False,
    ) -> Awaitable[Any]:
        """Send ``op``; the awaitable gives its parsed JSON answer (None for an empty
        2xx body), decoded as ``model`` (a list of them with ``many``) when one is given.

        Arguments and configuration are checked at once (``ConfigurationError``,
        ``InvalidInputError``). Awaiting raises the ``APIError`` subclass the answer maps
        to, ``APIConnectionError`` / ``APITimeoutError`` when no usable answer came,
        ``ResponseDecodeError`` for a body that is not JSON or not of the model's shape.
        (Not a coroutine function itself: one frame less between the caller and aiohttp.)
        """
        url = self.url_for(op, path_id)
        query, body_form = self._with_credentials(op, params, form)
        budget = self.limits.budget(timeout)
        per_attempt: float | None = self.limits.per_attempt(budget, attempt_timeout)
        if not op.safe_to_repeat:
            per_attempt = None  # an unsafe attempt may have arrived: never abandoned
        return self._exchange(Call(op, url, query), json_body, body_form, budget,
                              per_attempt, model=model, many=many)

    async def _finish(self, call: Call, response: aiohttp.ClientResponse, raw: bytes,
                      attempts: int, elapsed: float, model: type[Any] | None,
                      many: bool) -> Any:
        """The data of a final answer read in full; large ones off the event loop."""
        status, headers = response.status, response.headers
        capture = RAW_CAPTURE.get()
        if capture is not None:
            capture.status, capture.headers, capture.url = status, headers, call.shown_url
            capture.elapsed, capture.attempts = elapsed, attempts
        if len(raw) >= C.OFFLOAD_DECODE_BYTES:  # keep the loop responsive (see module doc)
            return await asyncio.to_thread(self._data, call, status, headers, raw, model,
                                           many)
        return self._data(call, status, headers, raw, model, many)

    def _data(self, call: Call, status: int, headers: Mapping[str, str], raw: bytes,
              model: type[Any] | None, many: bool) -> Any:
        data = self.interpret(call, status, headers, raw)
        if model is None:
            return data
        return self.decode_many(call.op, data, model) if many else self.decode(
            call.op, data, model)

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
        if absolute_url is None:
            call = Call(op, self.url_for(op), self._with_credentials(op, params, None)[0])
        else:
            call = Call(op, absolute_url, dict(params or {}))
        budget = self.limits.budget(timeout)
        response = await self._exchange(call, None, None, budget, None, streaming=True)
        streamed = StreamedResponse(self, call, response)
        owner = self.sessions
        try:
            if not 200 <= response.status < 300:
                raw = await self.read_capped(call, response)
                self.interpret(call, response.status, response.headers, raw)
                self._raise_status(call, response.status, response.headers, raw)
            owner.add_stream(streamed)
            yield streamed
        finally:
            owner.discard_stream(streamed)
            response.release()

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
        last attempt. Streaming: returns the answer open (the caller releases it);
        otherwise the answer is read in full, released and interpreted (``_finish``),
        and its data returned.

        The call is marked in flight meanwhile, so that ``Client.close()`` can end it: a
        cancellation by ``close()`` becomes ``APIConnectionError``. (One coroutine for
        all of it: every frame between the caller and aiohttp is crossed again at each
        of aiohttp's suspensions.)
        """
        owner = self.sessions
        session, task = owner.begin()
        op = call.op
        safe = op.safe_to_repeat
        debug = logger.isEnabledFor(logging.DEBUG)  # a disabled log costs one test a call
        options = self._options
        limits = self.limits
        clock = self.clock
        begun = clock()
        deadline = begun + budget
        last_failure: Failure | None = None
        last_response: tuple[int, bytes, Mapping[str, str]] | None = None
        sent_maybe = False
        redropped = False
        retry = 0
        try:
            while True:
                started = clock()
                remaining = deadline - started
                if remaining <= 0:
                    last_failure = Failure("the call's time ran out", sent_maybe, False,
                                           timeout=True)
                    break
                client_timeout = limits.client_timeout(remaining, per_attempt, budget, streaming)
                failure: Failure | None = None
                retry_after: float | None = None
                response: aiohttp.ClientResponse | None = None
                try:
                    response = await session.request(
                        op.method, call.url, params=call.query, json=json_body, data=form,
                        timeout=client_timeout, allow_redirects=safe, **options,
                    )
                except TRANSPORT_ERRORS as exc:
                    failure = describe_exception(exc, self.credentials.scrub)
                except RuntimeError:
                    if session.closed:  # the caller closed the session they gave the client
                        raise UsageError(
                            "the aiohttp session given to Client was closed") from None
                    raise
                if response is not None:
                    status = response.status
                    if debug:
                        self._log(call, status, started, retry)
                    retryable = status in C.RETRYABLE_STATUSES and (safe or status == 429)
                    if not retryable or retry >= self.max_retries:
                        if streaming:
                            return response
                        try:
                            length = response.content_length
                            if (length is not None and length <= C.MAX_JSON_BODY_BYTES
                                    and "Content-Encoding" not in response.headers):
                                raw = await response.read()  # exactly the length announced
                            else:
                                raw = await self.read_capped(call, response)
                        # The answer broke off: retried like a dropped connection.
                        except TRANSPORT_ERRORS as exc:
                            failure = describe_exception(exc, self.credentials.scrub)
                        except APIConnectionError as exc:
                            failure = Failure(exc.message, exc.may_have_been_sent, False,
                                              timeout=isinstance(exc, APITimeoutError))
                        finally:
                            response.release()
                        if failure is None:
                            return await self._finish(call, response, raw, retry + 1,
                                                      clock() - begun, model, many)
                    else:
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
                        try:
                            raw = await self.read_capped(call, response)
                        except (APIConnectionError, ResponseDecodeError):
                            raw = b""
                        finally:
                            response.release()
                        last_response = (status, raw, response.headers)
                        last_failure = None
                        sent_maybe = True
                if failure is not None:
                    if response is None and debug:  # an answer that broke off is logged
                        self._log(call, None, started, retry, failure.message)
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
                status, raw, headers = last_response
                self.interpret(call, status, headers, raw)
                self._raise_status(call, status, headers, raw)
            assert last_failure is not None
            raise self.connection_error(call, last_failure)
        except asyncio.CancelledError:
            if owner.was_closed_under(task):
                raise self.connection_error(call, CLOSED_IN_FLIGHT) from None
            raise
        finally:
            owner.leave(task)

    def _log(self, call: Call, status: int | None, started: float, retry: int,
             failure: str | None = None) -> None:
        """The DEBUG line of one attempt (the caller checked that DEBUG is on)."""
        logger.debug(
            "%s %s -> %s in %.1f ms (attempt %d)",
            call.op.method, call.shown_url,
            status if status is not None else failure,
            (self.clock() - started) * 1000.0, retry + 1,
        )
