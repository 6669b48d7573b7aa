"""One request's whole life: URL, credentials, send, retry with backoff, decode, errors.

Resource modules describe an operation (``Operation``: name, method, area, path, and
whether it is safe to repeat) and call ``Transport.request`` or ``Transport.stream``.
Everything else happens here, once:

* **Credentials** by area, where ``_auth.Area``'s table says (``place_credentials``), as
  ``SecretValue``s revealed only in the call to aiohttp.
* **Retries** (DESIGN §3) follow from ``Operation.safe_to_repeat``, not from the HTTP
  method: connection errors, timeouts, 408 and 5xx are retried only for safe operations;
  an unsafe one is retried only when the request surely never left (connect refused,
  DNS) or the answer was 429. Backoff is exponential with full jitter, ``Retry-After``
  is honoured and capped, and no retry starts that would end past the call's deadline.
* **Secrets** never leave this module in clear: URLs are redacted before anything stores
  them, texts are scrubbed (``Credentials.scrub``/``preview``), aiohttp's exceptions
  (which hold the full URL) are described, not chained, and every ``SDKError`` leaving
  ``request``/``stream`` goes through ``Credentials.clean`` (``clean_errors``).
* **Cancellation** is never caught: ``CancelledError`` passes through, and leaving an
  ``async with`` always releases the connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import aiohttp
import attrs
from aiohttp.client_reqrep import ContentDisposition

from . import _constants as C
from ._auth import (  # Area re-exported: the resource modules import it from here
    Area as Area,
)
from ._auth import (
    Credentials,
    clean_errors,
    place_credentials,
    redact_url,
    reveal,
)
from ._checks import check_seconds
from ._convert import DecodeFailure, decode, decode_list
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    RateLimitError,
    ResponseDecodeError,
    SDKError,
    error_class_for_status,
    error_class_for_text,
)
from ._retry import backoff_delay, parse_retry_after

logger = logging.getLogger(C.LOGGER_NAME)
M = TypeVar("M")

_json_loads: Callable[[bytes], Any]
try:  # optional speedup (extra "speedups"); same semantics as json.loads
    from orjson import loads as _json_loads  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _json_loads = json.loads

@attrs.frozen
class Operation:
    """What a resource method asks of the transport: which request, and its safety.

    ``safe_to_repeat`` is False for requests with an effect the service may apply twice:
    creates, ``mail.send`` and ``jobs/create`` (a GET that spends credit).

    Validation and mail answer ``status: fail`` with an ``error`` text for a refused
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


@attrs.frozen
class _Failure:
    """Why an attempt gave no usable answer (already redacted)."""

    message: str
    may_have_been_sent: bool
    retry_unsafe: bool  # True only when the request surely never left
    fatal: bool = False  # retrying cannot help (TLS verification)
    timeout: bool = False


def _describe_exception(exc: BaseException, scrub: Callable[[str], str]) -> _Failure:
    """Turn an aiohttp/OS exception into a redacted description (never chained)."""
    name = type(exc).__name__
    if isinstance(
        exc,
        (aiohttp.ClientConnectorCertificateError, aiohttp.ClientConnectorSSLError,
         aiohttp.ClientSSLError),
    ):
        return _Failure(
            f"TLS verification failed ({name}); pass ssl= or a session that trusts the "
            "server's certificate authority",
            may_have_been_sent=False, retry_unsafe=False, fatal=True,
        )
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return _Failure("timed out connecting", False, True, timeout=True)
    if isinstance(exc, aiohttp.ClientConnectorError):
        detail = scrub(f"{exc.host}:{exc.port}: {exc.strerror or exc.os_error}")
        return _Failure(f"could not connect ({name}: {detail})", False, True)
    if isinstance(exc, (aiohttp.ServerTimeoutError, asyncio.TimeoutError)):
        return _Failure("timed out waiting for the answer", True, False, timeout=True)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return _Failure("the answer was cut short", True, False)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return _Failure("the server closed the connection without an answer", True, False)
    if isinstance(exc, (aiohttp.ClientOSError, OSError)):
        return _Failure(f"connection broken ({name})", True, False)
    return _Failure(f"request failed ({name})", True, False)


_TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


class StreamedResponse:
    """A 2xx answer whose body is read piece by piece (see ``Transport.stream``)."""

    __slots__ = ("_fail", "_interpret", "_refuse", "_response", "headers", "status")

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        fail: Callable[[_Failure], SDKError],
        refuse: Callable[[str | None, bytes], SDKError],
        interpret: Callable[[bytes], Any],
    ) -> None:
        self._response = response
        self._fail = fail
        self._refuse = refuse
        self._interpret = interpret
        self.status = response.status
        self.headers = response.headers

    def interpret(self, raw: bytes) -> Any:
        """``raw``, a complete small body of this answer, read as a plain answer is:
        its parsed data, or the mapped SDK error raised."""
        return self._interpret(raw)

    @property
    def content_disposition(self) -> ContentDisposition | None:
        """The ``Content-Disposition`` header as aiohttp parses it (None when absent)."""
        return self._response.content_disposition

    def raise_api_error(self, error_text: str | None, body: bytes = b"") -> NoReturn:
        """Raise the ``APIError`` subclass for a service error text found in the body."""
        error = self._refuse(error_text, body)
        del error_text, body  # raised from here: the raw texts stay out of the locals
        raise error

    def release(self) -> None:
        """Give the connection back (``Transport.stream`` does it on exit)."""
        self._response.release()

    @property
    def content_type(self) -> str:
        """The media type, lowercase, without parameters."""
        return self._response.content_type.lower()

    async def iter_chunks(self, size: int = C.STREAM_CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The body in chunks of at most ``size`` bytes; transport failures become
        ``APIConnectionError``/``APITimeoutError`` (may_have_been_sent=True)."""
        content = self._response.content
        while True:
            failure = None
            try:
                chunk = await content.read(size)
            except _TRANSPORT_ERRORS as exc:
                failure = _describe_exception(exc, str)
            if failure is not None:
                raise self._fail(failure)  # outside the except: nothing to chain
            if not chunk:
                return
            yield chunk


class Transport:
    """Sends operations for a ``Client``. ``sleep``, ``rand`` and ``clock`` are plain
    attributes so tests can replace them and never really wait."""

    def __init__(
        self,
        *,
        credentials: Credentials,
        base_urls: Mapping[Area, str | None],
        session: Callable[[bool], aiohttp.ClientSession],
        timeout: float,
        max_retries: int,
        proxy: str | None = None,
        ssl: Any = True,
    ) -> None:
        self.credentials = credentials
        self.base_urls = dict(base_urls)
        self._session = session
        self.timeout = timeout
        self.max_retries = max_retries
        self.proxy = proxy
        self.ssl = ssl
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
        self.rand: Callable[[], float] = random.random
        self.clock: Callable[[], float] = time.monotonic

    # --- building -------------------------------------------------------------------
    def _seconds_for_call(self, request_timeout: float | None) -> float:
        """The call's time budget: its ``request_timeout`` (checked) or the client's."""
        if request_timeout is None:
            return self.timeout
        return float(check_seconds(request_timeout, "request_timeout"))

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

    # --- sending --------------------------------------------------------------------
    @clean_errors
    async def request(
        self,
        op: Operation,
        *,
        path_id: str | int | None = None,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        form: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send ``op`` and return its parsed JSON answer (None for an empty 2xx body).

        Raises the ``APIError`` subclass the answer maps to, ``APIConnectionError`` /
        ``APITimeoutError`` when no usable answer came, ``ResponseDecodeError`` for a
        body that is not JSON.
        """
        url = self.url_for(op, path_id)
        query, body_form = place_credentials(op.area, self.credentials, op.name, params, form)
        total = self._seconds_for_call(timeout)
        deadline = self.clock() + total
        # The attempt loop directly (no context manager: this is the hot path); the
        # answer is released whatever happens.
        # The body is read (and the answer released) inside the attempt loop, so that a
        # body cut short is retried like any other broken connection.
        response, raw = await self._attempts(op, url, query, json_body, body_form, total,
                                             deadline, False)
        return self._parse_answer(op, url, query, response.status, raw, response.headers)

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

        ``timeout`` bounds connecting and each read (a download may take long, a stall
        may not). With ``absolute_url`` the request goes there *without credentials*
        (a result hosted elsewhere). A non-2xx answer raises as ``request`` does.
        """
        # Opened by a method of its own: this frame stays in the traceback of an error
        # raised while opening, so it must hold no URL, query or answer.
        streamed = await self._open_stream(op, params, timeout, absolute_url)
        try:
            yield streamed
        finally:
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
            url = self.url_for(op)
            query, _ = place_credentials(op.area, self.credentials, op.name, params, None)
        else:
            url, query = absolute_url, dict(params or {})
        total = self._seconds_for_call(timeout)
        deadline = self.clock() + total
        response, _ = await self._attempts(op, url, query, None, None, total, deadline, True)
        status, headers = response.status, response.headers
        if not 200 <= status < 300:
            try:
                raw = await self._read_capped(op, url, query, response)
                self._parse_answer(op, url, query, status, raw, headers)
                self._raise_status(op, url, query, status, raw, headers)
            finally:
                response.release()

        def fail(failure: _Failure) -> SDKError:
            return self._connection_error(op, url, query, failure)

        def refuse(text: str | None, raw: bytes) -> SDKError:
            return self._api_error(op, url, query, status, raw, headers, text)

        def interpret(raw: bytes) -> Any:
            return self._parse_answer(op, url, query, status, raw, headers)

        return StreamedResponse(response, fail, refuse, interpret)

    async def _attempts(
        self,
        op: Operation,
        url: str,
        query: dict[str, Any],
        json_body: Any,
        form: dict[str, Any] | None,
        total: float,
        deadline: float,
        streaming: bool,
    ) -> tuple[aiohttp.ClientResponse, bytes]:
        """Attempts with retries until an answer worth handing out, or the error of the
        last attempt. Streaming: returns the answer open (the caller releases it) and
        ``b""``; otherwise the answer already read in full and released, and its body."""
        # Unsafe operations get a session that never resends by itself (see Client).
        session = self._session(op.safe_to_repeat)
        method = op.method
        last_failure: _Failure | None = None
        last_response: tuple[int, bytes, Mapping[str, str]] | None = None
        sent_maybe = False
        retry = 0
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0:
                last_failure = _Failure("the call's time ran out", sent_maybe, False,
                                        timeout=True)
                break
            if streaming:
                client_timeout = aiohttp.ClientTimeout(
                    total=None, sock_connect=total, sock_read=total)
            else:
                # ``total`` bounds the whole exchange, body included, so a stalled read
                # cannot hang (tests/reliability: test_answer_stalling_mid_body_times_out).
                # A ``sock_read`` of the same length could never fire first and costs a
                # timer rescheduled per chunk (~10% of check_many's throughput); streams,
                # which have no total, get it instead.
                client_timeout = aiohttp.ClientTimeout(
                    total=remaining, sock_connect=remaining)
            started = self.clock()
            failure: _Failure | None = None
            retry_after: float | None = None
            response: aiohttp.ClientResponse | None = None
            try:
                response = await session.request(
                    method, url, params=reveal(query), json=json_body, data=reveal(form),
                    timeout=client_timeout, proxy=self.proxy, ssl=self.ssl,
                    allow_redirects=op.safe_to_repeat,
                )
            except _TRANSPORT_ERRORS as exc:
                failure = _describe_exception(exc, self.credentials.scrub)
            if response is not None:
                status = response.status
                self._log(op, url, query, status, started, retry)
                retryable = status in C.RETRYABLE_STATUSES and (
                    op.safe_to_repeat or status == 429)
                if not retryable or retry >= self.max_retries:
                    if streaming:
                        return response, b""
                    read = await self._read_final(op, url, query, response)
                    if not isinstance(read, _Failure):
                        return response, read
                    failure = read  # the answer broke off: retried as a dropped connection
                else:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                    try:
                        raw = await self._read_capped(op, url, query, response)
                    except (APIConnectionError, ResponseDecodeError):
                        raw = b""
                    finally:
                        response.release()
                    last_response = (status, raw, response.headers)
                    last_failure = None
                    sent_maybe = True
            if failure is not None:
                if response is None:  # an answer that broke off is logged already
                    self._log(op, url, query, None, started, retry, failure.message)
                sent_maybe = sent_maybe or failure.may_have_been_sent
                last_failure = attrs.evolve(failure, may_have_been_sent=sent_maybe)
                last_response = None
                if failure.fatal or retry >= self.max_retries or not (
                    op.safe_to_repeat or failure.retry_unsafe
                ):
                    break
            delay = retry_after if retry_after is not None else backoff_delay(retry, self.rand)
            if self.clock() + delay >= deadline:
                break  # a retry could not finish in time: report what we have
            await self.sleep(delay)
            retry += 1
        if last_response is not None:
            status, raw, headers = last_response
            self._parse_answer(op, url, query, status, raw, headers)
            self._raise_status(op, url, query, status, raw, headers)
        assert last_failure is not None
        raise self._connection_error(op, url, query, last_failure)

    # --- decoding -------------------------------------------------------------------
    def decode(self, op: Operation, data: Any, model: type[M]) -> M:
        """``data`` read as ``model``; ``ResponseDecodeError`` (with the body) if it can't."""
        try:
            return decode(data, model)
        except DecodeFailure as exc:
            raise self.decode_error(op, data, str(exc)) from None

    def decode_many(self, op: Operation, data: Any, model: type[M]) -> list[M]:
        """``data`` read as a list of ``model``; ``ResponseDecodeError`` if it can't."""
        try:
            return decode_list(data, model)
        except DecodeFailure as exc:
            raise self.decode_error(op, data, str(exc)) from None

    def decode_error(self, op: Operation, data: Any, why: str) -> ResponseDecodeError:
        """The ``ResponseDecodeError`` for parsed ``data`` that is not what ``op`` expects:
        the body shown (redacted, shortened) however deeply it is nested."""
        preview = self.credentials.preview
        try:
            shown = preview(json.dumps(data), C.ERROR_BODY_PREVIEW * 8)
        except (TypeError, ValueError, RecursionError):
            try:
                shown = preview(repr(data), C.ERROR_BODY_PREVIEW)
            except RecursionError:  # nested deeper than repr goes
                shown = f"<{type(data).__name__} nested too deeply to show>"
        return ResponseDecodeError(
            f"answer not of the expected shape: {self.credentials.scrub(why)}",
            operation=op.name, body=shown)

    # --- reading --------------------------------------------------------------------
    async def _read_final(
        self, op: Operation, url: str, query: dict[str, Any], response: aiohttp.ClientResponse
    ) -> bytes | _Failure:
        """The capped body of a final answer, which is released; a transport failure
        while reading is returned, for the attempt loop to retry or report."""
        try:
            return await self._read_capped(op, url, query, response)
        except APIConnectionError as exc:
            return _Failure(exc.message, exc.may_have_been_sent, False,
                            timeout=isinstance(exc, APITimeoutError))
        finally:
            response.release()

    async def _read_capped(
        self, op: Operation, url: str, query: dict[str, Any], response: aiohttp.ClientResponse
    ) -> bytes:
        cap = C.MAX_JSON_BODY_BYTES
        length = response.content_length
        failure: _Failure | None = None
        if length is not None and length > cap:
            raise ResponseDecodeError(
                f"answer of {length} bytes refused: larger than the {cap}-byte cap",
                operation=op.name, status_code=response.status, url=redact_url(url, query))
        try:
            if length is not None:
                return await response.read()
            parts: list[bytes] = []
            size = 0
            async for chunk in response.content.iter_chunked(C.STREAM_CHUNK_SIZE):
                size += len(chunk)
                if size > cap:
                    break
                parts.append(chunk)
            else:
                return b"".join(parts)
        except _TRANSPORT_ERRORS as exc:
            failure = _describe_exception(exc, self.credentials.scrub)
        if failure is not None:
            raise self._connection_error(op, url, query, failure)
        raise ResponseDecodeError(
            f"answer refused: larger than the {cap}-byte cap",
            operation=op.name, status_code=response.status, url=redact_url(url, query))

    def _body_text(self, raw: bytes) -> str:
        return self.credentials.preview(raw, C.ERROR_BODY_PREVIEW * 8)

    def _parse_answer(
        self,
        op: Operation,
        url: str,
        query: dict[str, Any],
        status: int,
        raw: bytes,
        headers: Mapping[str, str],
    ) -> Any:
        """Parsed JSON of a final answer; raises the mapped error for a failure."""
        data: Any = None
        parsed = False
        blank = not raw or raw.isspace()  # bytes.isspace: the whitespace strip() removes
        if not blank:
            try:
                data = _json_loads(raw)
                parsed = True
            except (ValueError, RecursionError):
                pass
        ok = 200 <= status < 300
        if (
            op.area.answers_in_body
            and isinstance(data, dict)
            and str(data.get("status", "")).lower() == "fail"
        ):
            error = data.get("error")
            if error:
                raise self._api_error(op, url, query, status, raw, headers, str(error))
            if not op.bare_fail_is_state:
                raise self._api_error(
                    op, url, query, status, raw, headers, None,
                    fallback="the service answered fail without an error text")
        if not ok:
            self._raise_status(op, url, query, status, raw, headers)
        if not blank and not parsed:
            raise ResponseDecodeError(
                f"answer is not JSON (HTTP {status}, {headers.get('Content-Type', '?')})",
                operation=op.name, status_code=status, url=redact_url(url, query),
                body=self._body_text(raw))
        return data

    def _raise_status(
        self,
        op: Operation,
        url: str,
        query: dict[str, Any],
        status: int,
        raw: bytes,
        headers: Mapping[str, str],
    ) -> NoReturn:
        raise self._api_error(op, url, query, status, raw, headers, _message_from_body(raw))

    def _api_error(
        self,
        op: Operation,
        url: str,
        query: dict[str, Any],
        status: int,
        raw: bytes,
        headers: Mapping[str, str],
        text: str | None,
        *,
        fallback: str | None = None,
    ) -> APIError:
        cls = error_class_for_text(text)
        if cls is APIError and not 200 <= status < 300:
            cls = error_class_for_status(status)
        clean_text = self.credentials.scrub(text) if text else None
        message = clean_text or fallback or f"HTTP {status}"
        kwargs: dict[str, Any] = {
            "operation": op.name,
            "status_code": status,
            "error_text": clean_text,
            "url": redact_url(url, query),
            "body": self._body_text(raw),
            "request_id": headers.get("X-Request-Id"),
        }
        if cls is RateLimitError:
            return RateLimitError(
                message, retry_after=parse_retry_after(headers.get("Retry-After")), **kwargs)
        return cls(message, **kwargs)

    def _connection_error(
        self, op: Operation, url: str, query: dict[str, Any], failure: _Failure
    ) -> APIConnectionError:
        cls = APITimeoutError if failure.timeout else APIConnectionError
        return cls(
            failure.message,
            operation=op.name,
            url=redact_url(url, query),
            may_have_been_sent=failure.may_have_been_sent,
        )

    def _log(
        self,
        op: Operation,
        url: str,
        query: dict[str, Any],
        status: int | None,
        started: float,
        retry: int,
        failure: str | None = None,
    ) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "%s %s -> %s in %.1f ms (attempt %d)",
                op.method, redact_url(url, query),
                status if status is not None else failure,
                (self.clock() - started) * 1000.0, retry + 1,
            )


def _message_from_body(raw: bytes) -> str | None:
    """The service's message in an error body, if there is one to be found."""
    try:
        data = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        text = raw[:200].decode("utf-8", "replace").strip()
        return text if text and not text.lstrip().startswith("<") else None
    if isinstance(data, dict):
        for key in ("error", "detail", "message", "errors", "non_field_errors"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and value and isinstance(value[0], str):
                return "; ".join(str(v) for v in value)
        parts = [
            f"{k}: {'; '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in data.items()
            if isinstance(v, (list, str)) and k != "status"
        ]
        return ", ".join(parts)[:500] or None
    if isinstance(data, str) and data:
        return data
    return None
