"""A job's result on the wire: the bytes of jobs/download -> the result's CSV text.

``ResultText`` turns the answer's bytes into the CSV text, whichever wire shape it came
in, and finds a result hosted elsewhere (no I/O); ``csv_text`` streams the job's answer
(and a hosted result) through it. ``rows`` turns the text into ``EmailRow``s.

The shape of an answer (DESIGN §2):

* **JSON** when its media type says json; the CSV text is the ``result`` string of the
  object, streamed as it is decoded. A ``result`` that is a single http(s) URL, white
  space around it allowed, in at most ``MAX_HOSTED_URL_CHARS`` characters
  (``is_hosted_url``) is the address of the result file (``hosted_url``: fetched by the
  caller without credentials). That is decided from the whole value, once: its start is
  held back (``_UrlSoFar``) until the value ends or cannot be such a URL any more,
  wherever the network cut the answer.
  An answer that does not say ``"status": "success"`` is given, whole (up to
  ``MAX_RESULT_ERROR_BODY`` bytes), to the transport's answer interpreter, which raises
  the service's error; what it lets through must still hold a ``result`` string.
* **CSV** when its media type is ``text/csv`` or it is an attachment (aiohttp's parsed
  ``Content-Disposition``, not a substring test); the body is the CSV text.
* Otherwise the first character that is not white space decides: ``{`` is JSON, anything
  else CSV. Blank lines before it are dropped as they stream (memory stays bounded).

Either way the CSV text is UTF-8 and drops one leading byte order mark.
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, Protocol

import aiohttp

from ... import _constants as C
from ..._checks import is_http_url
from ..._core import Engine, Operation, StreamedResponse, forget_own_frames
from ..._errors import (
    APIConnectionError,
    APIError,
    NotFoundError,
    RateLimitError,
    ResponseDecodeError,
    SDKError,
    ServerError,
    UsageError,
)
from .._areas import Area
from .readers import JsonMemberReader, StreamDecodeError, Utf8Decoder

__all__ = ["DOWNLOAD", "Answer", "Received", "ResultText", "csv_text", "decode_error",
           "is_hosted_url"]


class _Disposition(Protocol):
    @property
    def type(self) -> str | None: ...


class Answer(Protocol):
    """What ``ResultText`` needs of a streamed answer (``_core.StreamedResponse``)."""

    @property
    def content_type(self) -> str: ...

    @property
    def content_disposition(self) -> _Disposition | None: ...

    def interpret(self, raw: bytes) -> Any: ...


_NOT_WS = re.compile(r"[^ \t\r\n]")
_SPACE = re.compile(r"\s")  # for text: what str.isspace() and str.strip() call white space
_CSV, _JSON, _SNIFF = range(3)
_LEAD, _URL, _TRAIL = range(3)
_SCHEMES = ("http://", "https://")


def is_hosted_url(value: str) -> bool:
    """True when a JSON answer's whole ``result`` is the URL of a hosted result file: an
    http(s) URL with white space around it at most, in at most ``MAX_HOSTED_URL_CHARS``
    characters (longer text is CSV)."""
    return len(value) <= C.MAX_HOSTED_URL_CHARS and is_http_url(value.strip())


class _UrlSoFar:
    """Whether the ``result`` read so far, fed in any pieces, may still turn out to be
    ``is_hosted_url``: white space, then an http(s) scheme and text without white space,
    then only white space, within the size. False only where no rest could make it so
    (then the text is CSV, released at once); otherwise the whole value decides."""

    __slots__ = ("head", "phase", "size")

    def __init__(self) -> None:
        self.phase = _LEAD
        self.head = ""  # the first characters after the leading white space, lowered
        self.size = 0

    def feed(self, piece: str) -> bool:
        """Take the next piece; False once the value cannot be a hosted URL."""
        self.size += len(piece)
        if self.size > C.MAX_HOSTED_URL_CHARS:
            return False
        if self.phase == _LEAD:
            piece = piece.lstrip()
            if not piece:
                return True
            self.phase = _URL
        if self.phase == _URL:
            if len(self.head) < len(_SCHEMES[1]) and not self._scheme_fits(piece):
                return False
            space = _SPACE.search(piece)
            if space is None:
                return True
            self.phase = _TRAIL
            piece = piece[space.start():]
        return not piece.strip()  # white space only, once a URL has ended

    def _scheme_fits(self, piece: str) -> bool:
        head = self.head = (self.head + piece[:len(_SCHEMES[1])]).lower()[:len(_SCHEMES[1])]
        return any(scheme.startswith(head) or head.startswith(scheme) for scheme in _SCHEMES)


def is_attachment(disposition: _Disposition | None) -> bool:
    """True when a parsed ``Content-Disposition`` says ``attachment`` (any case)."""
    kind = disposition.type if disposition is not None else None
    return kind is not None and kind.lower() == "attachment"


class ResultText:
    """The answer's bytes, fed chunk by chunk, as the result's CSV text.

    ``feed(chunk)`` and ``finish()`` return the CSV text they complete ("" when none);
    after ``finish()``, ``hosted_url`` is the URL of a result hosted elsewhere, or None.
    Raises ``StreamDecodeError`` for an answer that is not a result, and whatever the
    answer interpreter raises for a JSON answer that does not say success.
    """

    __slots__ = ("_answer", "_begun", "_decoder", "_held", "_json", "_pending", "_raw",
                 "_raw_cut", "_raw_size", "_shape", "_url", "hosted_url")

    def __init__(self, answer: Answer, *, hosted: bool = False) -> None:
        """``hosted``: the answer is a result file fetched from ``hosted_url`` (CSV)."""
        self._answer = answer
        self._decoder = Utf8Decoder()
        kind = answer.content_type
        with warnings.catch_warnings():  # aiohttp warns of a malformed header: not ours
            warnings.simplefilter("ignore")
            disposition = answer.content_disposition
        if hosted or kind == "text/csv" or is_attachment(disposition):
            self._shape = _CSV
        elif "json" in kind:
            self._shape = _JSON
        else:
            self._shape = _SNIFF
        self._json: JsonMemberReader | None = None
        self._pending = ""  # sniffing: white space after the last blank line so far
        self._raw: list[bytes] = []  # the JSON answer's bytes, for the interpreter
        self._raw_size = 0
        self._raw_cut = False  # the answer was longer than kept
        self._held: list[str] | None = []  # a result's start, until it is not a URL
        self._url = _UrlSoFar()  # whether the held start may still be one
        self._begun = False
        self.hosted_url: str | None = None

    def feed(self, chunk: bytes) -> str:
        """The CSV text completed by ``chunk``."""
        if self._shape == _CSV:
            return self._decoder.decode(chunk)
        self._keep(chunk)
        return self._text(self._decoder.decode(chunk))

    def finish(self) -> str:
        """The rest of the CSV text; checks the answer was complete."""
        text = self._decoder.decode(b"", True)
        if self._shape == _CSV:
            return text
        out = self._text(text)
        if self._shape == _SNIFF:  # nothing but white space: an empty CSV
            return out
        reader = self._json
        assert reader is not None
        reader.finish()
        status = reader.fields.get("status")
        if not (isinstance(status, str) and status.strip().lower() == "success"):
            self._answer.interpret(self._refusal(reader))  # raises the service's error
        if not reader.complete:
            raise StreamDecodeError("the JSON answer holds no result text")
        if self._held is not None:  # the whole result, held: a URL, or CSV text
            held, self._held = "".join(self._held), None
            if is_hosted_url(held):
                self.hosted_url = held.strip()
            else:
                out += self._out(held)
        return out

    def start(self) -> bytes:
        """The start of a JSON answer as it came (up to ``MAX_RESULT_ERROR_BODY``
        bytes), for an error's preview; b"" for a CSV one (its records, quoted by the
        error where they fail, are the user's)."""
        return b"".join(self._raw) if self._shape == _JSON else b""

    # --- inside ---------------------------------------------------------------------
    def _keep(self, chunk: bytes) -> None:
        """Keep the start of a JSON answer for the interpreter (white space before it
        dropped, so a long run of it cannot push the object out)."""
        room = C.MAX_RESULT_ERROR_BODY - self._raw_size
        if room <= 0:
            self._raw_cut = self._raw_cut or bool(chunk)
            return
        if not self._raw_size:
            chunk = chunk.lstrip(b" \t\r\n")
        piece = chunk[:room]
        self._raw_cut = self._raw_cut or len(piece) < len(chunk)
        if piece:
            self._raw.append(piece)
            self._raw_size += len(piece)

    def _refusal(self, reader: JsonMemberReader) -> bytes:
        """The answer that did not say success, for the interpreter: as it came, or,
        when it was longer than kept (a long ``result`` before ``status``), its other
        members (read whole, each small): the kept start alone is no JSON."""
        if not self._raw_cut:
            return b"".join(self._raw)
        return json.dumps(reader.fields).encode()

    def _text(self, text: str) -> str:
        if self._shape == _SNIFF:
            text = self._sniff(text)
            if not text:
                return ""
        if self._shape == _CSV:
            self._raw = []
            return text
        reader = self._json
        if reader is None:
            reader = self._json = JsonMemberReader("result")
        pieces = reader.feed(text)
        held = self._held
        if held is None:
            return self._out("".join(pieces)) if pieces else ""
        # the start of the result is held until it cannot be a URL
        held.extend(pieces)
        if reader.complete or all(map(self._url.feed, pieces)):
            return ""  # complete: finish() decides, from the whole value
        self._held = None
        return self._out("".join(held))

    def _sniff(self, text: str) -> str:
        """Before the first character that is not white space: drop blank lines; then
        fix the shape and hand on the text from the start of its line."""
        found = _NOT_WS.search(text)
        if found is None:
            text = self._pending + text
            last = max(text.rfind("\n"), text.rfind("\r"))
            self._pending = text[last + 1:]
            if len(self._pending) > C.MAX_CSV_RECORD_CHARS:
                raise StreamDecodeError("a CSV record is too long")
            return ""
        at = found.start()
        if text[at] == "{":
            self._shape = _JSON
            return text[at:]
        self._shape = _CSV
        last = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at))
        return self._pending + text if last < 0 else text[last + 1:]

    def _out(self, text: str) -> str:
        """The CSV text of the JSON shape, without a leading byte order mark."""
        if not self._begun and text:
            self._begun = True
            if text[0] == "\ufeff":
                return text[1:]
        return text


# --- the wire: the job's answer (and a hosted result) as CSV text ----------------------
DOWNLOAD = Operation("validation.job_download", "GET", Area.VALIDATION,
                     "/api/v1/jobs/download", safe_to_repeat=True)

#: What a stream may raise that is not the library's own (the session closed under it).
_FOREIGN = (RuntimeError, OSError, asyncio.TimeoutError, aiohttp.ClientError)


async def csv_text(engine: Engine, job_id: int, request_timeout: float | None,
                   read: Received) -> AsyncGenerator[str, None]:
    """The result CSV of job ``job_id`` as decoded text pieces, whichever shape it came
    in: the job's answer, then the hosted result file it may point to (fetched without
    credentials), as ``_answer_texts`` reads them. ``read`` follows the stream (which
    answer, how far) for the errors that end it, ``decode_error``'s included.

    The outermost frame of the stream's own, and what leaves it is clean: the hosted URL
    is the service's text and may carry a credential (``?api=...``), and so do the locals
    of ``_answer_texts`` (``hosted``, ``chunk``) and the frames of ``Engine.stream``
    below (``absolute_url``). This frame holds none of them, and runs ``_answer_texts``
    closed on the way out (``aclosing``): whatever leaves here has passed through frames
    that are finished, and has them cleared: an ``SDKError`` through
    ``Engine.clean``, any other through ``forget_own_frames`` (the library's
    frames only); this frame's own text is reset. A failure of the stream that is not
    the library's is raised as an SDK error outside the ``except`` (it chains nothing).
    """
    failure: SDKError | None = None
    try:
        async with aclosing(_answer_texts(engine, job_id, request_timeout, read)) as texts:
            async for text in texts:
                yield text
    except GeneratorExit:  # closed early by the consumer: nothing shown
        raise
    except BaseException as exc:
        text = ""  # a piece of the CSV (its header may echo a credential)
        if isinstance(exc, SDKError):
            engine.clean(exc)
            failure = read.tell(exc)
            if failure is None:
                raise
        else:
            forget_own_frames(exc)
            if not isinstance(exc, _FOREIGN):  # a cancellation, a bug: as it is
                raise
            failure = _sdk_error(exc)  # the stream's own failure (the client closed)
            read.tell(failure)
    if failure is not None:
        raise failure


class Received:
    """How far a result's stream came, for the error that ends it: how many bytes of
    its answers had arrived (a cut is not a refusal at the start), whether the result
    file hosted elsewhere was being fetched (its host's refusal is not the service's),
    and the answer being read (its status, its URL redacted, and the scrubbed start of
    a JSON answer that could not be read): what ``decode_error`` shows."""

    __slots__ = ("_response", "body", "bytes", "hosted")

    def __init__(self) -> None:
        self.bytes = 0
        self.hosted = False  # the hosted result file is being fetched
        self._response: StreamedResponse | None = None  # the answer being read
        self.body: str | None = None  # scrubbed and cut

    def reading(self, response: StreamedResponse) -> None:
        """The stream has reached ``response`` (the service's answer, or the host's)."""
        self._response, self.body = response, None

    @property
    def status(self) -> int | None:
        """The status of the answer being read (None: none reached yet)."""
        return None if self._response is None else self._response.status

    @property
    def url(self) -> str | None:
        """The URL of the answer being read, redacted: scrubbed here, only for an error
        that shows it, never for every download."""
        return None if self._response is None else self._response.url

    def unreadable(self, response: StreamedResponse, result: ResultText) -> None:
        """``response`` could not be read as a result: keep a preview of its start (a
        JSON answer's; a CSV one's is the user's records)."""
        start = result.start()
        self.body = response.preview(start) if start else None

    def tell(self, exc: SDKError) -> SDKError | None:
        """Say in ``exc``'s message how far the stream came; the error to raise instead
        of it, if any (``_hosted_refusal``)."""
        if self.bytes and isinstance(exc, APIConnectionError):
            exc.message = f"{exc.message} (after {self.bytes:,} bytes of the result)"
            exc.args = (exc.message,)
        if self.hosted and isinstance(exc, APIError):
            return _hosted_refusal(exc)
        return None


#: The errors that say only what the HTTP status says (of any host).
_HTTP_ERRORS = (APIError, NotFoundError, RateLimitError, ServerError)


def _hosted_refusal(exc: APIError) -> APIError | None:
    """The error for the hosted result file's host refusing it: said to be that host's
    answer, and a plain ``APIError`` where its class speaks of the service (no
    credential went there: a 401/403 of an expired link is no ``AuthenticationError``);
    a 404, a 429 and a 5xx keep theirs. None: ``exc``, its message changed, is raised
    as it is."""
    what = "the result file hosted elsewhere could not be fetched"
    message = what if exc.message == f"HTTP {exc.status_code}" else f"{what}: {exc.message}"
    if type(exc) in _HTTP_ERRORS:
        exc.message = message
        exc.args = (message,)
        return None
    return APIError(message, operation=exc.operation, status_code=exc.status_code,
                    error_text=exc.error_text, url=exc.url, body=exc.body,
                    request_id=exc.request_id, headers=exc.headers, response=exc.response)


async def _answer_texts(engine: Engine, job_id: int, request_timeout: float | None,
                        read: Received) -> AsyncGenerator[str, None]:
    """The CSV text of the job's answer, then of the result file it points to, if any
    (``ResultText.hosted_url``, fetched without credentials); ``read`` counts its bytes.
    Its locals may hold that URL: run it only through ``csv_text``."""
    hosted: str | None = None
    # One budget for the job's answer and the hosted file's head: the hosted file is a
    # hop of the same download, not a call with a budget of its own.
    deadline = engine.deadline(engine.budget(request_timeout))
    while True:
        if hosted is None:
            stream = engine.stream(DOWNLOAD, query={"job_id": job_id}, deadline=deadline)
        else:
            read.hosted = True
            stream = engine.stream(DOWNLOAD, absolute_url=hosted, deadline=deadline)
        async with stream as response:
            read.reading(response)
            result = ResultText(response, hosted=hosted is not None)
            chunks = response.iter_chunks()
            try:
                async for chunk in chunks:
                    read.bytes += len(chunk)
                    text = result.feed(chunk)
                    if text:
                        yield text
                text = result.finish()
            except StreamDecodeError:
                read.unreadable(response, result)
                raise
            finally:  # an async generator left suspended: closed now, not at GC
                aclose = getattr(chunks, "aclose", None)
                if aclose is not None:
                    await aclose()
            if text:
                yield text
        hosted = result.hosted_url
        if hosted is None:
            return


def decode_error(engine: Engine, read: Received, exc: StreamDecodeError) -> ResponseDecodeError:
    """The ``ResponseDecodeError`` of an unreadable result, naming the answer that was
    being read (``read``: the service's or the hosted file's host; its status, its URL
    redacted, a preview of a JSON answer). The reason may quote the answer (a header,
    a JSON member): credentials are scrubbed first, then the text is shortened (a cut
    through a credential would leave its prefix)."""
    why = engine.scrub(str(exc))[: C.ERROR_BODY_PREVIEW]
    where = " (the result file hosted elsewhere)" if read.hosted else ""
    return ResponseDecodeError(f"job result unreadable{where}: {why}",
                               operation=DOWNLOAD.name, status_code=read.status,
                               url=read.url, body=read.body)


def _sdk_error(exc: BaseException) -> SDKError:
    """The SDK error for a failure of the stream that is not already one."""
    if isinstance(exc, RuntimeError) and not isinstance(exc, OSError):
        return UsageError(f"{DOWNLOAD.name}: the download could not go on "
                          f"({type(exc).__name__}: the client was closed?)")
    return APIConnectionError(f"the download broke off ({type(exc).__name__})",
                              operation=DOWNLOAD.name, may_have_been_sent=True)
