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
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing, suppress
from functools import partial
from typing import Any, BinaryIO

from ... import _constants as C
from ..._checks import check_file_path, check_job_id, check_number, check_seconds
from ..._core.operation import Operation
from ..._core.session import ClosedInFlight
from ..._core.transport import Transport
from ..._errors import (
    APIConnectionError,
    InvalidInputError,
    JobFailedError,
    JobTimeoutError,
    RateLimitError,
    ResponseDecodeError,
    ServerError,
)
from ...models.codes import JobStatus
from ...models.validation import EmailRow
from .._areas import Area
from .readers import CsvRecordReader, StreamDecodeError
from .results import csv_text, decode_error
from .rows import EmailRows, email_rows

__all__ = ["ValidationJob"]

STATUS = Operation("validation.job_status", "GET", Area.VALIDATION, "/api/v1/jobs/status",
                   safe_to_repeat=True, bare_fail_is_state=True)

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
            error = self._transport.decode_error(STATUS, data, "jobs/status gave no status")
            data = raw = None  # the answer (it may echo the request) stays out of tracebacks
            raise error
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
            deadline: seconds from this call within which the wait ends, with
                ``JobTimeoutError`` if the job has not; it bounds every poll too (each
                poll's timeout is at most the time left). No pause runs past it: the
                last pause is cut short so that one last poll starts
                ``WAIT_FINAL_POLL_RESERVE`` (1 s, or a tenth of a deadline under 10 s) before
                it. ``deadline=0`` polls nothing. None waits as long as it takes.
            on_status: called as ``on_status(status, elapsed_seconds)`` after each
                answered poll; may return an awaitable, which is awaited (and, with a
                ``deadline``, cancelled at it: the job's end is still reported).
            request_timeout: the timeout of each poll, overriding the client's
                (shortened to the time left before ``deadline``).

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
        if request_timeout is not None:
            request_timeout = check_seconds(request_timeout, "request_timeout")
        if on_status is not None and not callable(on_status):
            raise InvalidInputError(
                "on_status: expected a function called as on_status(status, elapsed), got "
                f"{type(on_status).__name__}", field="on_status")
        return await _poll_until_done(self, interval, max_interval, factor, deadline,
                                      on_status, request_timeout)

    # --- results ---------------------------------------------------------------------
    def rows(
        self, *, request_timeout: float | None = None
    ) -> AsyncGenerator[EmailRow, None]:
        """The rows of the job's result, streamed from jobs/download.

        Memory is bounded by the chunk size (plus one CSV record), whatever the size of
        the result. Both wire shapes are read: a CSV body, or JSON whose ``result`` is the
        CSV text (or an http(s) URL of it, fetched without credentials). The CSV is read
        as Python's ``csv.reader(..., strict=True)`` reads it (RFC 4180 quoting; CRLF, LF
        or CR line ends; a last record without a line end; on Python 3.10, whose ``csv``
        reads no NUL character, a result holding one is a ``ResponseDecodeError``).
        Leaving the loop early releases the connection when the generator is closed:
        use ``contextlib.aclosing(job.rows())`` to close it at once.

        Args:
            request_timeout: bounds connecting and each read (not the whole download).

        Yields:
            ``EmailRow``: ``status`` a ``Verdict`` (an unknown one, equal to its text, for
            a verdict this library does not know); ``role_based`` read from true/false,
            yes/no, y/n, 1/0 in any case, and None for any other value (never a failed
            download).

        Raises:
            JobNotReadyError: the job is still processing; JobNotFoundError,
                AuthenticationError, APIError: the service refused;
            ResponseDecodeError: not UTF-8, malformed JSON or CSV, a missing column;
            APIConnectionError: the connection failed or broke;
            UsageError: the client was closed meanwhile.
        """
        transport = self._transport
        return email_rows(csv_text(transport, self.job_id, request_timeout),
                          partial(decode_error, transport))

    async def download(
        self, path: str | os.PathLike[str], *, request_timeout: float | None = None
    ) -> int:
        """Stream the result CSV to ``path``, atomically.

        The CSV text (decoded from JSON when it came that way; UTF-8 without BOM, in
        either shape) is written to a temporary file beside ``path`` as it arrives,
        checked as it goes (as ``rows()`` reads it), and renamed over ``path`` only when
        complete and flushed to disk; on any failure, cancellation or ``client.close()``
        the temporary file is removed and ``path`` is untouched. The temporary name is
        kept within the directory's file-name limit, so any valid ``path`` works. Blank
        lines before the header of a body whose shape had to be sniffed (no telling
        media type) are not written. Writes are plain blocking writes of at most one
        chunk (64 KiB, into the OS page cache: microseconds); only the final ``fsync``
        runs in a thread.

        Args:
            path: the destination file.
            request_timeout: bounds connecting and each read.

        Returns:
            The number of data rows (header and blank lines not counted).

        Raises:
            InvalidInputError: ``path`` is not a file path (a directory, a NUL, a name
                over the file-name limit...), before anything is sent.
            The errors of ``rows()``, and OSError when the file cannot be written.
        """
        target = check_file_path(path)  # before anything is sent
        temp = temporary_name(target)
        reader = CsvRecordReader()
        builder = EmailRows()
        count = 0
        failure: ResponseDecodeError | None = None
        try:
            with open(temp, "xb") as handle:  # noqa: ASYNC230 - see the docstring
                pieces_of = csv_text(self._transport, self.job_id, request_timeout)
                async with aclosing(pieces_of) as pieces:
                    async for text in pieces:
                        handle.write(text.encode("utf-8"))
                        count += builder.count(reader.feed_counted(text, builder.need))
                count += builder.count(reader.finish())
                builder.finish()
                await _to_disk(handle)
            os.replace(temp, target)
        except BaseException as exc:
            with suppress(OSError):
                os.unlink(temp)
            text = ""  # a piece of the CSV (its header may echo a credential)
            if not isinstance(exc, StreamDecodeError):
                raise
            # Built here, raised below: outside the ``except`` it chains nothing (the
            # StreamDecodeError quotes the CSV unscrubbed, and its frames hold records).
            failure = decode_error(self._transport, exc)
        if failure is not None:
            raise failure
        return count


async def _to_disk(handle: BinaryIO) -> None:
    """Flush ``handle`` and ``fsync`` it in a thread. Cancelled meanwhile, it still waits
    for the thread: the file is closed (its descriptor free for reuse) only once the
    thread has let go of it."""
    handle.flush()
    synced = asyncio.get_running_loop().run_in_executor(None, os.fsync, handle.fileno())
    try:
        await asyncio.shield(synced)
    except asyncio.CancelledError:
        await asyncio.wait([synced])
        raise


async def _poll_until_done(
    job: ValidationJob,
    interval: float,
    max_interval: float,
    factor: float,
    deadline: float | None,
    on_status: StatusCallback | None,
    request_timeout: float | None,
) -> JobStatus:
    """The polling loop of ``ValidationJob.wait`` (arguments already checked)."""
    transport = job._transport
    started = transport.clock()
    ends_at = reserve = None
    if deadline is not None:
        ends_at = started + deadline
        reserve = min(C.WAIT_FINAL_POLL_RESERVE, C.WAIT_FINAL_POLL_SHARE * deadline)
    step = interval
    last_status: JobStatus | str | None = None
    last_error: BaseException | None = None
    failures = 0
    last_poll = False
    while True:
        poll_timeout = request_timeout
        if ends_at is not None:
            remaining = ends_at - transport.clock()
            if remaining <= 0:
                raise _timed_out(job, deadline, last_status) from last_error
            poll_timeout = min(transport.limits.budget(poll_timeout), remaining)
        try:
            status = await job.status(request_timeout=poll_timeout)
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
                    if ends_at is None:
                        await outcome
                    else:  # the deadline bounds the callback too: cancelled at it
                        try:
                            await asyncio.wait_for(outcome, max(0.0, ends_at - transport.clock()))
                        except asyncio.TimeoutError:  # TimeoutError from 3.11 on
                            if status not in (JobStatus.SUCCESS, JobStatus.FAIL):
                                raise _timed_out(job, deadline, last_status) from None
            if status is JobStatus.SUCCESS:
                return status
            if status is JobStatus.FAIL:
                raise JobFailedError(f"validation job {job.job_id} failed",
                                     job_id=job.job_id)
        pause = min(max_interval, step) * (1.0 - C.POLL_JITTER * transport.rand())
        step = min(max_interval, step * factor)
        if ends_at is not None and reserve is not None:
            remaining = ends_at - transport.clock()
            if last_poll or remaining <= reserve:  # that was the last poll
                raise _timed_out(job, deadline, last_status) from last_error
            if pause >= remaining - reserve:
                pause = remaining - reserve
                last_poll = True
        await _pause(transport, pause)


async def _pause(transport: Transport, seconds: float) -> None:
    """The pause between two polls: ``Client.close()`` ends it at once with
    ``APIConnectionError`` (nothing sent), as it ends a call waiting for its answer,
    instead of the wait finding out at its next poll (up to ``max_interval`` later)."""
    transport.sessions.session()  # a closed client: UsageError now
    try:
        await transport.sleep(seconds)
    except ClosedInFlight:
        raise APIConnectionError("the Client was closed while this wait was in progress",
                                 operation=STATUS.name, may_have_been_sent=False) from None


def _timed_out(job: ValidationJob, deadline: float | None,
               last: JobStatus | str | None) -> JobTimeoutError:
    return JobTimeoutError(
        f"validation job {job.job_id} not finished after {deadline:g} s "
        f"(last status: {last})", job_id=job.job_id, last_status=last)


def temporary_name(target: str) -> str:
    """A fresh temporary file name beside ``target`` (``.name.XXXXXXXX.part``), the name
    shortened to stay within the directory's file-name limit (``NAME_MAX``)."""
    folder, name = os.path.split(target)
    try:
        limit = os.pathconf(folder or ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    suffix = f".{secrets.token_hex(4)}.part"
    room = limit - len(os.fsencode(suffix)) - 1
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return os.path.join(folder, f".{name}{suffix}")


