"""The one answer interpreter (``Interpreter``, which ``Transport`` is): a final answer
(status, headers, body) to data or the SDK error it means, the body read within its cap,
and every error of a call built here (redacted). Downloads reach it through
``StreamedResponse.interpret`` (``_core.streamed``).

The area rules are data (``Operation.fail_in_body``, ``Operation.bare_fail_is_state``);
nothing here names an area.

No frame of this module raises an error while holding a body: errors are built by
functions that *return* them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import aiohttp
from multidict import CIMultiDict

from .. import _constants as C
from .._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    RateLimitError,
    ResponseDecodeError,
    SDKError,
    ServerError,
    error_class_for_status,
    error_class_for_text,
)
from .._response import RawResponse
from .._serde.big_json import FAST_LOADS, NOT_READ, gil_sharer, parse_json, read_json
from .._serde.converter import DecodeFailure, decode, decode_list
from .._serde.listing import builders
from .credentials import Credentials
from .failures import TRANSPORT_ERRORS, Failure, message_from_body, message_from_data
from .operation import Call, Operation
from .raw import RAW_CAPTURE, shown_headers
from .retry import asked_wait

M = TypeVar("M")

#: How a small answer is parsed: as ``json.loads`` reads it, by orjson (the speedups
#: extra) where that reads the same (``_serde.big_json``: one reading at any size).
_json_loads: Callable[[bytes], Any] = parse_json


#: The most characters of an ``Operation.check_answer`` reason an error shows.
_WHY_LIMIT = 240


def _run_loads() -> Callable[[str], Any] | None:
    """How ``read_json`` parses runs of a big listing: orjson with the speedups extra,
    where it reads as ``json`` does (None: the ``json`` scanner)."""
    return FAST_LOADS


class Interpreter:
    """Reads answers and builds errors; ``credentials`` scrub every text shown."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def scrub(self, text: str) -> str:
        """``text`` with every credential redacted (the texts of answers read outside
        ``interpret``: a stream's URL, its log line)."""
        return self.credentials.scrub(text)

    def preview(self, raw: bytes | str) -> str:
        """An error's ``body`` of ``raw``: scrubbed, then cut (``ERROR_BODY_PREVIEW``),
        never inside a credential."""
        return self.credentials.preview(raw, C.ERROR_BODY_PREVIEW)

    def clean(self, exc: BaseException) -> None:
        """Clear the library's frames of ``exc`` (``Credentials.clean``): an error
        raised past the transport's edge (a stream's) holds no credential there."""
        self.credentials.clean(exc)

    def interpret(self, call: Call, status: int, headers: Mapping[str, str],
                  raw: bytes, data: Any = NOT_READ) -> Any:
        """A final answer to data, or the SDK error it means.

        Where ``op.fail_in_body`` ``status: fail`` raises the error its ``error`` text
        maps to whatever the HTTP status (a bare ``fail`` too, unless the operation's
        ``bare_fail_is_state``); then a non-2xx status raises by status; then a body that
        is neither blank nor JSON raises ``ResponseDecodeError``, as does an answer
        ``op.check_answer`` gives a reason for (with its status and URL). Returns the parsed JSON
        (None for a blank body). ``data``: ``raw`` already parsed (``_big_data``).
        """
        parsed = data is not NOT_READ
        blank = False
        if not parsed:
            data = None
            blank = not raw or raw.isspace()  # bytes.isspace: what strip() removes
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
            and str(data.get("status", "")).strip().lower() == "fail"
        ):
            error = data.get("error")
            if error and str(error).strip():  # a blank text is no error text
                raise self.api_error(call, status, headers, raw, str(error))
            if not op.bare_fail_is_state:
                raise self.api_error(
                    call, status, headers, raw, None,
                    fallback="the service answered fail without an error text")
        if not 200 <= status < 300:
            raise self.status_error(call, status, headers, raw, data if parsed else NOT_READ)
        if not blank and not parsed:
            raise ResponseDecodeError(
                f"answer is not JSON (HTTP {status}, {headers.get('Content-Type', '?')})",
                operation=op.name, status_code=status, url=call.shown_url,
                body=self.preview(raw))
        why = None if op.check_answer is None else op.check_answer(data)
        if why is not None:
            raise self.decode_error(op, data, self._shown_why(why), call, status)
        return data

    def _shown_why(self, why: str) -> str:
        """An operation's reason that an answer is none (it may quote the answer):
        scrubbed, then cut at ``_WHY_LIMIT`` characters, never inside a credential."""
        shown = self.credentials.preview(why, _WHY_LIMIT)
        return shown + "..." if len(why) > _WHY_LIMIT else shown

    def refused(self, call: Call, status: int, headers: Mapping[str, str],
                raw: bytes) -> SDKError:
        """The error a non-2xx answer means, by ``interpret``'s rules."""
        try:
            self.interpret(call, status, headers, raw)
        except SDKError as exc:
            return exc
        return self.status_error(call, status, headers, raw)

    def status_error(self, call: Call, status: int, headers: Mapping[str, str],
                     raw: bytes, data: Any = NOT_READ) -> APIError:
        """The ``APIError`` for a non-2xx answer, with the service's message if any
        (``data``: ``raw`` already parsed, not parsed again)."""
        message = message_from_body(raw) if data is NOT_READ else message_from_data(data)
        return self.api_error(call, status, headers, raw, message)

    def api_error(
        self,
        call: Call,
        status: int,
        headers: Mapping[str, str],
        raw: bytes,
        text: str | None,
        *,
        fallback: str | None = None,
    ) -> APIError:
        """The ``APIError`` subclass for the service's ``text`` (else the status)."""
        if text and len(text) > C.ERROR_BODY_PREVIEW:  # a known error text is short
            text = text[: C.ERROR_BODY_PREVIEW + 4096]  # cut again after scrubbing
        cls = error_class_for_text(text)
        if cls is APIError and not 200 <= status < 300:
            cls = error_class_for_status(status)
        clean_text = _shown_text(self.credentials, text) if text else None
        message = clean_text or fallback or f"HTTP {status}"
        scrub = self.credentials.scrub
        shown = CIMultiDict(shown_headers(headers, scrub))  # picklable
        url = scrub(call.shown_url)  # a hosted result's URL may hold one anywhere
        kwargs: dict[str, Any] = {
            "operation": call.op.name,
            "status_code": status,
            "error_text": clean_text,
            "url": url,
            "body": self.preview(raw),
            "request_id": headers.get("X-Request-Id"),  # scrubbed by ``clean``
            "headers": shown,
            # The transport sets the call's time and attempts (``Transport._timed``).
            "response": RawResponse(parsed=None, status_code=status, headers=shown,
                                    request_id=shown.get("X-Request-Id"), elapsed=0.0,
                                    url=url, attempts=1),
        }
        if cls is RateLimitError or cls is ServerError:  # the two that say when to return
            return cls(message, retry_after=asked_wait(headers), **kwargs)
        return cls(message, **kwargs)

    def connection_error(self, call: Call, failure: Failure) -> APIConnectionError:
        """The ``APIConnectionError`` (``APITimeoutError``) for ``failure``."""
        cls = APITimeoutError if failure.timeout else APIConnectionError
        return cls(failure.message, operation=call.op.name, url=call.shown_url,
                   may_have_been_sent=failure.may_have_been_sent)

    # --- decoding -------------------------------------------------------------------
    def finish(self, call: Call, response: aiohttp.ClientResponse, raw: bytes,
               attempts: int, elapsed: float, model: type[Any] | None, many: bool) -> Any:
        """The data of a final answer read in full (``model``: decoded, a list of them
        with ``many``), filling a ``with_raw_response`` capture. Only for an answer
        under ``OFFLOAD_DECODE_BYTES``, decoded here on the loop (a plain function: no
        coroutine per call on the hot path); a bigger one goes to ``finish_off_loop``."""
        status, headers = response.status, response.headers
        if RAW_CAPTURE.get() is not None:
            _capture(self.credentials, call, status, headers, attempts, elapsed)
        data = self.interpret(call, status, headers, raw)
        if model is None or many:
            return data if model is None else self.decode_many(call, status, data, model)
        try:  # ``decode`` inline: a frame less per call on the hot path
            return decode(data, model)
        except DecodeFailure as exc:
            raise self.decode_error(call.op, data, str(exc), call, response.status) from None

    async def finish_off_loop(self, call: Call, response: aiohttp.ClientResponse,
                              raw: bytes, attempts: int, elapsed: float,
                              model: type[Any] | None, many: bool) -> Any:
        """``finish`` for an answer of ``OFFLOAD_DECODE_BYTES`` or more: parsed and
        decoded in a worker thread, so that no stretch on the event loop is long."""
        status, headers = response.status, response.headers
        _capture(self.credentials, call, status, headers, attempts, elapsed)
        box = await asyncio.to_thread(self._big_data, call, status, headers, raw, model, many)
        return box.pop()

    def _big_data(self, call: Call, status: int, headers: Mapping[str, str], raw: bytes,
                  model: type[Any] | None, many: bool) -> list[Any]:
        """``finish`` in a worker thread without long GIL holds: parsed in slices
        (``read_json``), stepping aside for the loop (``gil_sharer``); a listing's
        parsed records dropped one at a time (one big object is freed whole: its parts
        may be the models'). Handed back in a list the loop empties: the thread pool
        keeps what a thread returned, and a listing the caller dropped first would be
        freed by the worker. A 2xx listing's records are decoded as they are parsed
        (``listing.builders``: their parsed dicts die young)."""
        share = gil_sharer()
        build = builders(model) if many and model is not None and 200 <= status < 300 else None
        parsed = read_json(raw, share=share, loads=_run_loads(), build=build)
        try:
            data = self.interpret(call, status, headers, raw, parsed)
            if model is None:
                return [data]
            if many:
                return [self.decode_many(call, status, data, model, share)]
            return [self.decode(call, status, data, model)]
        finally:  # not one long free (``parsed`` is the caller's data without model)
            while model is not None and parsed.__class__ is list and parsed:
                parsed.pop()
                share()

    def decode(self, call: Call, status: int, data: Any, model: type[M]) -> M:
        """``data``, the answer (``status``) to ``call``, read as ``model``;
        ``ResponseDecodeError`` (with the body, the status and the URL) if it can't."""
        try:
            return decode(data, model)
        except DecodeFailure as exc:
            raise self.decode_error(call.op, data, str(exc), call, status) from None

    def decode_many(self, call: Call, status: int, data: Any, model: type[M],
                    share: Callable[[], None] | None = None) -> list[M]:
        """``decode`` for a list of ``model`` (``share``: called between elements, see
        ``decode_list``)."""
        try:
            return decode_list(data, model, share)
        except DecodeFailure as exc:
            raise self.decode_error(call.op, data, str(exc), call, status) from None

    def decode_error(self, op: Operation, data: Any, why: str, call: Call | None = None,
                     status: int | None = None) -> ResponseDecodeError:
        """The ``ResponseDecodeError`` for parsed ``data`` that is not what ``op`` expects:
        the body shown (redacted, at most ``ERROR_BODY_PREVIEW`` characters) however
        deeply it is nested; the answer's status and URL when known (a 2xx to a create
        says that it may have taken effect: not to be sent again blindly)."""
        if status is not None and 200 <= status < 300 and not op.safe_to_repeat:
            why += f"; the service accepted the request (HTTP {status}): it may have taken effect"
        preview = self.credentials.preview
        try:
            shown = preview(json.dumps(data), C.ERROR_BODY_PREVIEW)
        except (TypeError, ValueError, RecursionError):
            try:
                shown = preview(repr(data), C.ERROR_BODY_PREVIEW)
            except RecursionError:  # nested deeper than repr goes
                shown = f"<{type(data).__name__} nested too deeply to show>"
        return ResponseDecodeError(
            f"answer not of the expected shape: {self.credentials.scrub(why)}",
            operation=op.name, body=shown, status_code=status,
            url=None if call is None else call.shown_url)

    async def read_capped(self, call: Call, response: aiohttp.ClientResponse,
                          cap: int | None = None) -> bytes:
        """The body, at most ``cap`` (``MAX_JSON_BODY_BYTES``) bytes once decompressed;
        aiohttp's errors of a body that broke off are raised as they are (the transport
        describes them)."""
        cap = C.MAX_JSON_BODY_BYTES if cap is None else cap
        length = response.content_length
        if length is not None and length > cap:
            raise self.too_large(call, response.status, f" of {length} bytes", cap)
        # Without Content-Encoding the announced length is the body's: a small body is
        # read at once. Compressed (or unannounced) bodies are counted as they inflate;
        # big ones are read in pieces and joined in a worker thread (one join of
        # megabytes on the loop would stall it).
        if (length is not None and length < C.OFFLOAD_DECODE_BYTES
                and "Content-Encoding" not in response.headers):
            return await response.read()
        parts: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(C.STREAM_CHUNK_SIZE):
            size += len(chunk)
            if size > cap:
                raise self.too_large(call, response.status, " (decompressed)", cap)
            parts.append(chunk)
        if size >= C.OFFLOAD_DECODE_BYTES:  # a long copy: off the loop
            return await asyncio.to_thread(b"".join, parts)
        return b"".join(parts)

    async def read_for_retry(self, call: Call, response: aiohttp.ClientResponse) -> bytes:
        """The capped body of an answer about to be retried (empty if it cannot be
        read: the answer is reported only if no retry follows); released."""
        try:
            return await self.read_capped(call, response, C.MAX_RETRIED_BODY_BYTES)
        except (*TRANSPORT_ERRORS, ResponseDecodeError):
            return b""
        finally:
            response.release()

    async def refusal(self, call: Call, response: aiohttp.ClientResponse) -> SDKError:
        """The error of a non-2xx answer to a stream (read capped, then released)."""
        try:
            raw = await self.read_capped(call, response)
        finally:
            response.release()
        return self.refused(call, response.status, response.headers, raw)

    def too_large(self, call: Call, status: int, what: str, cap: int) -> ResponseDecodeError:
        """The ``ResponseDecodeError`` for an answer over ``cap`` bytes."""
        return ResponseDecodeError(
            f"answer{what} refused: larger than the {cap}-byte cap",
            operation=call.op.name, status_code=status, url=call.shown_url)


def _capture(credentials: Credentials, call: Call, status: int, headers: Mapping[str, str],
             attempts: int, elapsed: float) -> None:
    """Fill the ``with_raw_response`` capture of this call, if one is open (its headers
    scrubbed: ``shown_headers``; its URL too, as an error's: a credential may be in a
    field of the caller's, ``extra_query``)."""
    if (capture := RAW_CAPTURE.get()) is not None:
        capture.status, capture.url = status, credentials.scrub(call.shown_url)
        capture.headers = shown_headers(headers, credentials.scrub)
        capture.elapsed, capture.attempts = elapsed, attempts


def _shown_text(credentials: Credentials, text: str) -> str:
    """The service's error ``text`` as an error shows it: scrubbed, then cut at
    ``ERROR_BODY_PREVIEW`` characters (never inside a credential: a text of megabytes
    would hold the loop in every scrub and ``str(exc)``); a lone surrogate (JSON
    ``"\\ud800"``) becomes ``?``, so that the message can be printed."""
    shown = credentials.preview(text, C.ERROR_BODY_PREVIEW)
    return shown.encode("utf-8", "replace").decode("utf-8")
