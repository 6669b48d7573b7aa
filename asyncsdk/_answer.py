"""The one answer interpreter: a final answer (status, headers, body) to data or the
SDK error it means, and the errors built from a call (redacted). ``Transport`` is one;
downloads reach it through ``StreamedResponse`` (an answer read piece by piece).

The area rules are data on the operation (``Operation.fail_in_body``, from
``_transport.FAIL_IN_BODY``; ``Operation.bare_fail_is_state``); nothing here names an area.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import aiohttp

from . import _constants as C
from ._convert import DecodeFailure, decode, decode_list
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    RateLimitError,
    ResponseDecodeError,
    error_class_for_status,
    error_class_for_text,
)
from ._wire import (
    CLOSED_IN_FLIGHT,
    TRANSPORT_ERRORS,
    Failure,
    describe_exception,
    message_from_body,
)

if TYPE_CHECKING:
    from ._transport import Call, Operation

M = TypeVar("M")

_json_loads: Callable[[bytes], Any]
try:  # optional speedup (extra "speedups"); same semantics as json.loads
    from orjson import loads as _json_loads  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _json_loads = json.loads


class Interpreter:
    """Reads answers and builds errors. ``scrub`` removes credentials from any text;
    ``retry_after`` reads a ``Retry-After`` header to seconds."""

    def __init__(self, scrub: Callable[[str], str],
                 retry_after: Callable[[str | None], float | None]) -> None:
        self._scrub = scrub
        self._retry_after = retry_after

    def interpret(self, call: Call, status: int, headers: Mapping[str, str],
                  raw: bytes) -> Any:
        """A final answer to data, or the SDK error it means.

        Where ``op.fail_in_body`` ``status: fail`` raises the error its ``error`` text
        maps to whatever the HTTP status (a bare ``fail`` too, unless the operation's
        ``bare_fail_is_state``); then a non-2xx status raises by status; then a body that
        is neither blank nor JSON raises ``ResponseDecodeError``. Returns the parsed JSON
        (None for a blank body).
        """
        data: Any = None
        parsed = False
        blank = not raw or raw.isspace()  # bytes.isspace: the whitespace strip() removes
        if not blank:
            try:
                data = _json_loads(raw)
                parsed = True
            except (ValueError, RecursionError):
                pass
        op = call.op
        if (
            op.fail_in_body
            and isinstance(data, dict)
            and str(data.get("status", "")).lower() == "fail"
        ):
            error = data.get("error")
            if error:
                self.raise_api(call, status, headers, raw, str(error))
            if not op.bare_fail_is_state:
                self.raise_api(call, status, headers, raw, None,
                               fallback="the service answered fail without an error text")
        if not 200 <= status < 300:
            self._raise_status(call, status, headers, raw)
        if not blank and not parsed:
            raise ResponseDecodeError(
                f"answer is not JSON (HTTP {status}, {headers.get('Content-Type', '?')})",
                operation=op.name, status_code=status, url=call.shown_url,
                body=self._body_text(raw))
        return data

    def _body_text(self, raw: bytes) -> str:
        return self._scrub(raw[: C.ERROR_BODY_PREVIEW].decode("utf-8", "replace"))

    def _raise_status(self, call: Call, status: int, headers: Mapping[str, str],
                      raw: bytes) -> NoReturn:
        self.raise_api(call, status, headers, raw, message_from_body(raw))

    def raise_api(
        self,
        call: Call,
        status: int,
        headers: Mapping[str, str],
        raw: bytes,
        text: str | None,
        *,
        fallback: str | None = None,
    ) -> NoReturn:
        """Raise the ``APIError`` subclass for the service's ``text`` (else the status)."""
        cls = error_class_for_text(text)
        if cls is APIError and not 200 <= status < 300:
            cls = error_class_for_status(status)
        clean_text = self._scrub(text) if text else None
        message = clean_text or fallback or f"HTTP {status}"
        kwargs: dict[str, Any] = {
            "operation": call.op.name,
            "status_code": status,
            "error_text": clean_text,
            "url": call.shown_url,
            "body": self._body_text(raw),
            "request_id": headers.get("X-Request-Id"),
        }
        if cls is RateLimitError:
            raise RateLimitError(
                message, retry_after=self._retry_after(headers.get("Retry-After")), **kwargs)
        raise cls(message, **kwargs)

    def connection_error(self, call: Call, failure: Failure) -> APIConnectionError:
        """The ``APIConnectionError`` (``APITimeoutError``) for ``failure``."""
        cls = APITimeoutError if failure.timeout else APIConnectionError
        return cls(failure.message, operation=call.op.name, url=call.shown_url,
                   may_have_been_sent=failure.may_have_been_sent)

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
        the body shown (redacted, at most ``ERROR_BODY_PREVIEW`` characters) however
        deeply it is nested."""
        try:
            shown = json.dumps(data)[: C.ERROR_BODY_PREVIEW]
        except (TypeError, ValueError, RecursionError):
            try:
                shown = repr(data)[: C.ERROR_BODY_PREVIEW]
            except RecursionError:  # nested deeper than repr goes
                shown = f"<{type(data).__name__} nested too deeply to show>"
        return ResponseDecodeError(
            f"answer not of the expected shape: {self._scrub(why)}",
            operation=op.name, body=self._scrub(shown))

    async def read_capped(self, call: Call, response: aiohttp.ClientResponse) -> bytes:
        """The body, at most ``MAX_JSON_BODY_BYTES`` once decompressed."""
        cap = C.MAX_JSON_BODY_BYTES
        length = response.content_length
        failure: Failure | None = None
        if length is not None and length > cap:
            raise self.too_large(call, response.status, f" of {length} bytes")
        try:
            # Without Content-Encoding the announced length is the body's: read it at
            # once. Compressed (or unannounced) bodies are counted as they inflate.
            if length is not None and "Content-Encoding" not in response.headers:
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
        except TRANSPORT_ERRORS as exc:
            failure = describe_exception(exc, self._scrub)
        if failure is not None:
            raise self.connection_error(call, failure)
        raise self.too_large(call, response.status, " (decompressed)")

    def too_large(self, call: Call, status: int, what: str) -> ResponseDecodeError:
        return ResponseDecodeError(
            f"answer{what} refused: larger than the {C.MAX_JSON_BODY_BYTES}-byte cap",
            operation=call.op.name, status_code=status, url=call.shown_url)


class StreamedResponse:
    """A 2xx answer whose body is read piece by piece (see ``Transport.stream``).

    ``Client.close()`` aborts it: a pending or later ``iter_chunks`` read raises
    ``APIConnectionError`` at once (the stream's user removes what it wrote)."""

    __slots__ = ("_aborted", "_call", "_response", "_transport", "headers", "status")

    def __init__(self, transport: Interpreter, call: Call,
                 response: aiohttp.ClientResponse) -> None:
        self._transport = transport
        self._call = call
        self._response = response
        self._aborted = False
        self.status = response.status
        self.headers = response.headers

    def interpret(self, raw: bytes) -> Any:
        """Run the one answer interpreter over a complete (small) body of this answer:
        the parsed JSON, or the mapped error raised (``status: fail`` in a validation
        answer, a body that is not JSON: ``ResponseDecodeError``)."""
        return self._transport.interpret(self._call, self.status, self.headers, raw)

    def raise_api_error(self, error_text: str | None, body: bytes = b"") -> NoReturn:
        """Raise the ``APIError`` subclass for a service error text found in the body."""
        self._transport.raise_api(self._call, self.status, self.headers, body, error_text)

    @property
    def content_type(self) -> str:
        """The media type, lowercase, without parameters."""
        return self._response.content_type.lower()

    def abort(self) -> None:
        """End the stream now (``Client.close()``): reads raise ``APIConnectionError``."""
        self._aborted = True
        # Closing the connection alone leaves a pending read waiting forever (aiohttp
        # drops the read timer with the connection): wake it with an exception first.
        self._response.content.set_exception(aiohttp.ClientConnectionError("closed"))
        self._response.close()

    async def iter_chunks(self, size: int = C.STREAM_CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The body in chunks of at most ``size`` bytes; transport failures become
        ``APIConnectionError``/``APITimeoutError`` (may_have_been_sent=True)."""
        content = self._response.content
        while True:
            failure = None
            try:
                chunk = await content.read(size)
            except TRANSPORT_ERRORS as exc:
                failure = describe_exception(exc, str)
            if self._aborted:
                failure = CLOSED_IN_FLIGHT
            if failure is not None:  # raised outside the except: nothing to chain
                raise self._transport.connection_error(self._call, failure)
            if not chunk:
                return
            yield chunk
