"""A 2xx answer whose body is read piece by piece (``StreamedResponse``; see
``Transport.stream``). What raises here drops the body and cleans the error
(``Interpreter.clean``) first: a stream's errors reach the caller without passing the
transport's own edge."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from types import MappingProxyType
from typing import Any

import aiohttp
from aiohttp.client_reqrep import ContentDisposition

from .. import _constants as C
from .._errors import SDKError
from .answer import Interpreter
from .failures import CLOSED_IN_FLIGHT, TRANSPORT_ERRORS, Failure, describe_exception
from .log import log_give_up, logger
from .operation import Call

__all__ = ["StreamedResponse"]


class StreamedResponse:
    """A 2xx answer read piece by piece. ``Client.close()`` aborts it: a pending or
    later ``iter_chunks`` read raises ``APIConnectionError`` at once (the stream's user
    removes what it wrote). ``attempts``: the call's attempts, this answer's included
    (the WARNING of a stream given up tells them)."""

    __slots__ = ("_aborted", "_attempts", "_call", "_interpreter", "_response", "headers",
                 "status")

    def __init__(self, interpreter: Interpreter, call: Call,
                 response: aiohttp.ClientResponse, attempts: int = 1) -> None:
        self._interpreter = interpreter
        self._call = call
        self._attempts = attempts
        self._response = response
        self._aborted = False
        self.status = response.status
        self.headers = response.headers

    def interpret(self, raw: bytes) -> Any:
        """Run the one answer interpreter over a complete (small) body of this answer:
        the parsed JSON, or the mapped error raised (``status: fail`` in a validation
        answer, a body that is not JSON: ``ResponseDecodeError``)."""
        interpreter = self._interpreter
        try:
            return interpreter.interpret(self._call, self.status, self.headers, raw)
        except SDKError as exc:
            del raw  # raised on from here: the body stays out of the locals
            interpreter.clean(exc)
            raise

    @property
    def url(self) -> str:
        """The URL this answer came from, every credential redacted (a hosted result's
        URL is the service's text and may hold one anywhere: scrubbed too)."""
        return self._interpreter.scrub(self._call.shown_url)

    def preview(self, raw: bytes) -> str:
        """A short preview of ``raw`` (a part of this answer's body) for an error's
        ``body``: scrubbed, then cut (``ERROR_BODY_PREVIEW``), never inside a credential."""
        return self._interpreter.preview(raw)

    def release(self) -> None:
        """Give the connection back (``Transport.stream`` does it on exit)."""
        self._response.release()

    @property
    def content_type(self) -> str:
        """The media type, lowercase, without parameters."""
        return self._response.content_type.lower()

    @property
    def content_disposition(self) -> ContentDisposition | None:
        """The ``Content-Disposition`` header as aiohttp parses it (None when absent).

        Older aiohttp releases crash on some malformed headers (an empty parameter value:
        ``attachment; filename=``); such a header has no disposition type, as later
        releases read it, never a bare ``IndexError``.
        """
        try:
            return self._response.content_disposition
        except (IndexError, ValueError):
            return ContentDisposition(None, MappingProxyType({}), None)

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
                failure = describe_exception(exc)
            if self._aborted:
                failure = CLOSED_IN_FLIGHT
            if failure is not None:  # raised outside the except: nothing to chain
                raise self._given_up(failure)
            if not chunk:
                return
            yield chunk

    def _given_up(self, failure: Failure) -> SDKError:
        """The error of a stream broken off, said at WARNING as the transport says a call
        it gives up (DESIGN §3): the stream is not sent again."""
        error = self._interpreter.connection_error(self._call, failure)
        if logger.isEnabledFor(logging.WARNING):
            scrub = self._interpreter.scrub
            log_give_up(self._call.op.method, scrub(self._call.shown_url), scrub(str(error)),
                        self._attempts)
        return error
