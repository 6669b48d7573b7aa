"""``ValidationJob``: a submitted validation file, to poll, wait on, read and download.

A job is plain data (``job_id``, ``file_url``, ``submitted_at``) plus the client's
transport. ``to_dict()`` / ``Validation.job_from_dict()`` let a worker persist the job and
resume waiting on it in another process after a crash.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import os
import re
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing, suppress
from typing import Any

from . import _constants as C
from ._checks import check_job_id, check_number, is_http_url
from ._errors import (
    APIConnectionError,
    InvalidInputError,
    JobFailedError,
    JobTimeoutError,
    RateLimitError,
    ResponseDecodeError,
    ServerError,
)
from ._stream import (
    CsvRowReader,
    JsonResultExtractor,
    RowBuilder,
    StreamDecodeError,
    Utf8Decoder,
)
from ._transport import Area, Operation, StreamedResponse, Transport
from .models.codes import JobStatus
from .models.validation import EmailRow

__all__ = ["ValidationJob"]

STATUS = Operation("validation.job_status", "GET", Area.VALIDATION, "/api/v1/jobs/status",
                   safe_to_repeat=True, bare_fail_is_state=True)
DOWNLOAD = Operation("validation.job_download", "GET", Area.VALIDATION,
                     "/api/v1/jobs/download", safe_to_repeat=True)

#: ``on_status(status, elapsed_seconds)``; may be a plain function or a coroutine function.
StatusCallback = Callable[[JobStatus | str, float], "Awaitable[Any] | Any"]

_TRANSIENT = (APIConnectionError, ServerError, RateLimitError)
_STATUSES = {s.value: s for s in JobStatus}


class ValidationJob:
    """A validation job of the service.

    Get one from ``client.validation.create_job(url)``, ``client.validation.job(job_id)``
    or ``client.validation.job_from_dict(saved)``. It is bound to the client that made it
    (and that client's event loop); its data is public:

    Attributes:
        job_id: the service's job number.
        file_url: the URL the job was created from (None when resumed from an id alone).
        submitted_at: when ``create_job`` was answered (UTC), or None if unknown.
    """

    __slots__ = ("_transport", "file_url", "job_id", "submitted_at")

    def __init__(
        self,
        transport: Transport,
        job_id: int,
        *,
        file_url: str | None = None,
        submitted_at: dt.datetime | None = None,
    ) -> None:
        self._transport = transport
        self.job_id = job_id
        self.file_url = file_url
        self.submitted_at = submitted_at

    def __repr__(self) -> str:
        return f"ValidationJob(job_id={self.job_id!r}, submitted_at={self.submitted_at!r})"

    # --- persistence -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The job's data as a JSON-ready dict (``submitted_at`` as ISO 8601 text); give
        it to ``client.validation.job_from_dict`` to resume the job."""
        return {
            "job_id": self.job_id,
            "file_url": self.file_url,
            "submitted_at": None if self.submitted_at is None else self.submitted_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, transport: Transport, data: Any) -> ValidationJob:
        """Rebuild a job saved with ``to_dict`` (use ``client.validation.job_from_dict``).

        Raises:
            InvalidInputError: ``data`` is not such a dict.
        """
        if not isinstance(data, dict):
            raise InvalidInputError(f"expected a dict from ValidationJob.to_dict(), got "
                                    f"{type(data).__name__}", field="data")
        job_id = check_job_id(data.get("job_id"))
        file_url = data.get("file_url")
        if file_url is not None and not isinstance(file_url, str):
            raise InvalidInputError("file_url: expected a string or None", field="file_url")
        raw_when = data.get("submitted_at")
        when: dt.datetime | None = None
        if raw_when is not None:
            try:
                when = dt.datetime.fromisoformat(raw_when)
            except (TypeError, ValueError):
                raise InvalidInputError(
                    f"submitted_at: expected ISO 8601 text or None, got {raw_when!r}",
                    field="submitted_at") from None
        return cls(transport, job_id, file_url=file_url, submitted_at=when)

    # --- status ----------------------------------------------------------------------
    async def status(self, *, request_timeout: float | None = None) -> JobStatus | str:
        """Ask the service for the job's state.

        Args:
            request_timeout: this call's timeout, overriding the client's.

        Returns:
            ``JobStatus.PROCESSING``, ``SUCCESS`` or ``FAIL`` (a ``fail`` answer without
            an error text is the job's state). A status this library does not know is
            returned as the plain text the service sent (``wait`` treats it as still
            processing).

        Raises:
            JobNotFoundError, AuthenticationError, InvalidRequestError, APIError: a
                ``fail`` answer with an error text; APIConnectionError: no answer;
            ResponseDecodeError: an answer without a status.
        """
        data = await self._transport.request(
            STATUS, params={"job_id": self.job_id}, timeout=request_timeout)
        raw = data.get("status") if isinstance(data, dict) else None
        if not isinstance(raw, str) or not raw.strip():
            raise self._transport.decode_error(STATUS, data, "jobs/status gave no status")
        return _STATUSES.get(raw.strip().lower(), raw)

    async def wait(
        self,
        *,
        interval: float = C.DEFAULT_POLL_INTERVAL,
        max_interval: float = C.DEFAULT_MAX_POLL_INTERVAL,
        factor: float = C.DEFAULT_POLL_FACTOR,
        deadline: float | None = None,
        on_status: StatusCallback | None = None,
        request_timeout: float | None = None,
    ) -> JobStatus:
        """Poll the job until it ends, with exponential backoff and jitter.

        The pause after the n-th poll is ``min(max_interval, interval * factor**n)``
        shortened by a random part of up to ``POLL_JITTER`` (25 %), so many workers do
        not poll in step and no pause exceeds ``max_interval``. A job finishing after
        60 s is seen with at most 9 polls (defaults), at most ``max_interval`` late.

        A status this library does not know counts as still processing. A poll that
        fails transiently (``APIConnectionError``, ``ServerError``, ``RateLimitError``,
        after the client's own retries) does not end the wait: polling goes on until the
        deadline, or, with no deadline, until ``MAX_WAIT_TRANSIENT_FAILURES``
        consecutive polls failed (then the last error is raised).

        Args:
            interval: the first pause, in seconds (> 0).
            max_interval: the longest pause (>= ``interval``).
            factor: growth of the pause after each poll (>= 1).
            deadline: seconds from this call after which ``JobTimeoutError`` is raised;
                no pause runs past it: the last pause is cut short and one last poll is
                made at the deadline (a poll under way then may finish first). None
                waits as long as it takes.
            on_status: called as ``on_status(status, elapsed_seconds)`` after each
                answered poll; may return an awaitable, which is awaited.
            request_timeout: the timeout of each poll, overriding the client's.

        Returns:
            ``JobStatus.SUCCESS``.

        Raises:
            JobFailedError: the job ended in ``fail``.
            JobTimeoutError: ``deadline`` passed first (carries ``last_status``).
            InvalidInputError: a bad argument, before any request.
            JobNotFoundError, AuthenticationError, APIError: a poll was refused.
        """
        interval = check_number(interval, "interval")
        max_interval = check_number(max_interval, "max_interval", minimum=interval, strict=False)
        factor = check_number(factor, "factor", minimum=1.0, strict=False)
        if deadline is not None:
            deadline = check_number(deadline, "deadline", strict=False)
        transport = self._transport
        started = transport.clock()
        ends_at = None if deadline is None else started + deadline
        step = interval
        last_status: JobStatus | str | None = None
        last_error: BaseException | None = None
        failures = 0
        while True:
            try:
                status = await self.status(request_timeout=request_timeout)
            except _TRANSIENT as exc:
                failures += 1
                last_error = exc
                if ends_at is None and failures >= C.MAX_WAIT_TRANSIENT_FAILURES:
                    raise
            else:
                failures = 0
                last_error = None
                last_status = status
                if on_status is not None:
                    outcome = on_status(status, transport.clock() - started)
                    if inspect.isawaitable(outcome):
                        await outcome
                if status is JobStatus.SUCCESS:
                    return status
                if status is JobStatus.FAIL:
                    raise JobFailedError(f"validation job {self.job_id} failed",
                                         job_id=self.job_id)
            pause = min(max_interval, step) * (1.0 - C.POLL_JITTER * transport.rand())
            step = min(max_interval, step * factor)
            if ends_at is not None:
                remaining = ends_at - transport.clock()
                if remaining <= 0:
                    raise JobTimeoutError(
                        f"validation job {self.job_id} not finished after {deadline:g} s "
                        f"(last status: {last_status})",
                        job_id=self.job_id, last_status=last_status) from last_error
                pause = min(pause, remaining)
            await transport.sleep(pause)

    # --- results ---------------------------------------------------------------------
    async def rows(
        self, *, request_timeout: float | None = None
    ) -> AsyncGenerator[EmailRow, None]:
        """The rows of the job's result, streamed from jobs/download.

        Memory is bounded by the chunk size (plus one CSV record), whatever the size of
        the result. Both wire shapes are read: a CSV body, or JSON whose ``result`` is the
        CSV text (or an http(s) URL of it, fetched without credentials). Leaving the loop
        early releases the connection when the generator is closed: use
        ``contextlib.aclosing(job.rows())`` to close it at once.

        Args:
            request_timeout: bounds connecting and each read (not the whole download).

        Yields:
            ``EmailRow`` (``status`` a ``Verdict``, or the text for an unknown verdict).

        Raises:
            JobNotReadyError: the job is still processing; JobNotFoundError,
                AuthenticationError, APIError: the service refused;
            ResponseDecodeError: not UTF-8, malformed JSON or CSV, a missing column;
            APIConnectionError: the connection failed or broke.
        """
        reader = CsvRowReader()
        builder = RowBuilder()
        try:
            async with aclosing(self._csv_text(request_timeout)) as pieces:
                async for text in pieces:
                    for row in builder.rows(reader.feed(text)):
                        yield row
                for row in builder.rows(reader.finish()):
                    yield row
                builder.finish()
        except StreamDecodeError as exc:
            raise _decode_error(exc) from None

    async def download(
        self, path: str | os.PathLike[str], *, request_timeout: float | None = None
    ) -> int:
        """Stream the result CSV to ``path``, atomically.

        The CSV text (decoded from JSON when it came that way, UTF-8 without BOM) is
        written to a temporary file beside ``path`` as it arrives, checked as it goes, and
        renamed over ``path`` only when complete and flushed to disk; on any failure or
        cancellation the temporary file is removed and ``path`` is untouched. Writes are
        plain blocking writes of at most one chunk (64 KiB, into the OS page cache:
        microseconds); only the final ``fsync`` runs in a thread.

        Args:
            path: the destination file.
            request_timeout: bounds connecting and each read.

        Returns:
            The number of data rows (header and blank lines not counted).

        Raises:
            The errors of ``rows()``, and OSError when the file cannot be written.
        """
        target = os.path.abspath(os.fspath(path))  # noqa: ASYNC240 - no I/O to speak of
        temp = os.path.join(os.path.dirname(target),
                            f".{os.path.basename(target)}.{secrets.token_hex(4)}.part")
        reader = CsvRowReader()
        builder = RowBuilder()
        count = 0
        try:
            with open(temp, "xb") as handle:  # noqa: ASYNC230 - see the docstring
                async with aclosing(self._csv_text(request_timeout)) as pieces:
                    async for text in pieces:
                        handle.write(text.encode("utf-8"))
                        count += len(builder.rows(reader.feed(text)))
                count += len(builder.rows(reader.finish()))
                builder.finish()
                handle.flush()
                await asyncio.get_running_loop().run_in_executor(
                    None, os.fsync, handle.fileno())
            os.replace(temp, target)
        except BaseException as exc:
            with suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, StreamDecodeError):
                raise _decode_error(exc) from None
            raise
        return count

    # --- the wire --------------------------------------------------------------------
    async def _csv_text(self, request_timeout: float | None) -> AsyncGenerator[str, None]:
        """The result CSV as decoded text pieces, whichever shape it came in."""
        hosted: str | None = None
        async with self._transport.stream(
            DOWNLOAD, params={"job_id": self.job_id}, timeout=request_timeout
        ) as response:
            source = response.iter_chunks()
            try:
                first = b""
                async for chunk in source:
                    first += chunk
                    if first.strip():
                        break
                if _looks_like_json(response, first):
                    reading = _JsonResult(response)
                    for text in reading.feed(first):
                        yield text
                    async for chunk in source:
                        for text in reading.feed(chunk):
                            yield text
                    for text in reading.finish():
                        yield text
                    hosted = reading.url
                else:
                    decoder = Utf8Decoder()
                    yield decoder.decode(first)
                    async for chunk in source:
                        yield decoder.decode(chunk)
                    yield decoder.decode(b"", True)
            finally:
                await _close(source)
        if hosted is None:
            return
        async with self._transport.stream(
            DOWNLOAD, absolute_url=hosted, timeout=request_timeout
        ) as response:
            decoder = Utf8Decoder()
            source = response.iter_chunks()
            try:
                async for chunk in source:
                    yield decoder.decode(chunk)
            finally:
                await _close(source)
            yield decoder.decode(b"", True)


async def _close(iterator: AsyncIterator[bytes]) -> None:
    """Close an async generator left suspended (``iter_chunks``) at once, not at GC."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


def _decode_error(exc: StreamDecodeError) -> ResponseDecodeError:
    return ResponseDecodeError(f"job result unreadable: {exc}", operation=DOWNLOAD.name)


def _looks_like_json(response: StreamedResponse, first: bytes) -> bool:
    kind = response.content_type
    if "json" in kind:
        return True
    if kind == "text/csv" or "attachment" in response.headers.get("Content-Disposition", ""):
        return False
    return first.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


class _JsonResult:
    """Feeds the JSON shape through the extractor; holds back the start of ``result``
    until it is known to be CSV text rather than the URL of a hosted file."""

    def __init__(self, response: StreamedResponse) -> None:
        self._response = response
        self._decoder = Utf8Decoder()
        self._extractor = JsonResultExtractor()
        self._head = b""
        self._held: list[str] | None = []
        self._held_size = 0
        self.url: str | None = None

    def feed(self, chunk: bytes) -> list[str]:
        if len(self._head) < C.ERROR_BODY_PREVIEW:
            self._head += chunk[: C.ERROR_BODY_PREVIEW - len(self._head)]
        return self._pieces(self._extractor.feed(self._decoder.decode(chunk)))

    def finish(self) -> list[str]:
        extractor = self._extractor
        out = self._pieces(extractor.feed(self._decoder.decode(b"", True)))
        extractor.finish()
        fields = extractor.fields
        status = fields.get("status")
        error = fields.get("error")
        if isinstance(status, str) and status.strip().lower() == "fail":
            self._response.raise_api_error(
                error if isinstance(error, str) and error else None, self._head)
        if not extractor.result_started:
            raise StreamDecodeError("the JSON answer holds no result text")
        return out

    def _pieces(self, pieces: list[str]) -> list[str]:
        extractor = self._extractor
        status = extractor.fields.get("status")
        if (extractor.result_started and isinstance(status, str)
                and status.strip().lower() == "fail" and extractor.fields.get("error")):
            self._response.raise_api_error(str(extractor.fields["error"]), self._head)
        held = self._held
        if held is None:
            return pieces
        held.extend(pieces)
        self._held_size += sum(map(len, pieces))
        if extractor.result_done:  # the whole result is held: a URL, or short CSV text
            self._held = None
            text = "".join(held)
            if is_http_url(text.strip()):
                self.url = text.strip()
                return []
            return [text] if text else []
        if self._held_size > C.MAX_HOSTED_URL_CHARS or any(_SPACE.search(p) for p in pieces):
            self._held = None  # CSV text: hand out what was held, stream the rest
            return ["".join(held)]
        return []


_SPACE = re.compile(r"\s")

