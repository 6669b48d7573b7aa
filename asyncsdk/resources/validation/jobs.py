"""``ValidationJob``: a submitted validation file, to poll, wait on, read and download.

A job is plain data (``job_id``, ``file_url``, ``submitted_at``) plus the client's
engine. ``to_dict()`` / ``Validation.job_from_dict()`` let a worker persist the job and
resume waiting on it in another process after a crash.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import aclosing
from functools import partial
from typing import Any, BinaryIO

from ... import _constants as C
from ..._checks import check_file_path, check_job_id, check_number, check_seconds
from ..._core import CallOptions, Deadline, Engine, Operation
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
from .._base import ExtraHeaders, ExtraQuery, extras_of
from .destination import Destination
from .readers import CsvRecordReader, StreamDecodeError
from .results import Received, csv_text, decode_error
from .rows import EmailRows, email_rows

__all__ = ["ValidationJob"]



def _no_status(data: Any) -> str | None:
    """Why a jobs/status answer is none: it has no ``status`` text (None: it has)."""
    raw = data.get("status") if isinstance(data, dict) else None
    return None if isinstance(raw, str) and raw.strip() else "jobs/status gave no status"


STATUS = Operation("validation.job_status", "GET", Area.VALIDATION, "/api/v1/jobs/status",
                   safe_to_repeat=True, bare_fail_is_state=True, check_answer=_no_status)

#: The query field of every job call, set from the job: not replaced by ``extra_query``
#: (the call would be about another job, its answer read as this one's).
_JOB_ID = (("job_id", "the job (client.validation.job(job_id))"),)

#: ``on_status(status, elapsed_seconds)``; may be a plain function or a coroutine function.
StatusCallback = Callable[[JobStatus, float], "Awaitable[Any] | Any"]

_TRANSIENT = (APIConnectionError, ServerError, RateLimitError)


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

    __slots__ = ("_engine", "file_url", "job_id", "submitted_at")

    def __init__(
        self,
        engine: Engine,
        job_id: int,
        *,
        file_url: str | None = None,
        submitted_at: dt.datetime | None = None,
    ) -> None:
        self._engine = engine
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
    def from_dict(cls, engine: Engine, data: Any) -> ValidationJob:
        """Rebuild a job saved with ``to_dict`` (use ``client.validation.job_from_dict``).

        Raises:
            InvalidInputError: ``data`` is not such a dict.
        """
        if not isinstance(data, dict):
            raise InvalidInputError(f"data: expected a dict from ValidationJob.to_dict(), "
                                    f"got {type(data).__name__}", field="data")
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
        return cls(engine, job_id, file_url=file_url, submitted_at=when)

    # --- status ----------------------------------------------------------------------
    async def status(self, *, request_timeout: float | None = None,
                     extra_headers: ExtraHeaders | None = None,
                     extra_query: ExtraQuery | None = None) -> JobStatus:
        """Ask the service for the job's state.

        Args:
            request_timeout: this call's timeout, overriding the client's.
            extra_headers, extra_query: headers and query fields added to the request
                (a credential field, or ``job_id``, is refused).

        Returns:
            ``JobStatus.PROCESSING``, ``SUCCESS`` or ``FAIL`` (a ``fail`` answer without
            an error text is the job's state), matched ignoring case and surrounding
            spaces. ``JobStatus`` is open like the code lists: a status this library
            does not know is an unknown ``JobStatus`` value, equal to the text the
            service sent (``JobStatus("queued") == "queued"``; ``wait`` treats it as
            still processing).

        Raises:
            JobNotFoundError, AuthenticationError, InvalidRequestError, APIError: a
                ``fail`` answer with an error text; APIConnectionError: no answer;
            ResponseDecodeError: an answer without a status.
        """
        data = await self._engine.request(CallOptions(
            STATUS, query={"job_id": self.job_id}, timeout=request_timeout,
            extras=extras_of(extra_headers, extra_query, _JOB_ID)))
        return JobStatus(data["status"])  # a text: ``_no_status`` refused any other

    async def wait(
        self,
        *,
        interval: float = C.DEFAULT_POLL_INTERVAL,
        max_interval: float = C.DEFAULT_MAX_POLL_INTERVAL,
        factor: float = C.DEFAULT_POLL_FACTOR,
        deadline: float | None = None,
        on_status: StatusCallback | None = None,
        request_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
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
        consecutive polls failed (then the last error is raised). After a poll refused
        with HTTP 429, the next one waits at least the ``Retry-After`` it asked for
        (``RateLimitError.retry_after``); where that wait would end past ``deadline``,
        the wait ends at once with ``JobTimeoutError`` (nothing more is sent).

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
            extra_headers, extra_query: headers and query fields added to each poll
                (a credential field, or ``job_id``, is refused).

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
        engine = self._bound(extra_headers, extra_query)
        job = self if engine is self._engine else ValidationJob(
            engine, self.job_id, file_url=self.file_url, submitted_at=self.submitted_at)
        return await _poll_until_done(engine, job, interval, max_interval, factor, deadline,
                                      on_status, request_timeout)

    def _bound(self, extra_headers: ExtraHeaders | None,
               extra_query: ExtraQuery | None) -> Engine:
        """The engine for one call, whose requests carry its extras (checked)."""
        return self._engine.with_extras(extras_of(extra_headers, extra_query, _JOB_ID))

    # --- results ---------------------------------------------------------------------
    def rows(
        self, *, request_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
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
            request_timeout: this call's budget (overriding the client's ``timeout``)
                until the result starts to arrive: connecting, the answer's head and
                every redirect hop, and a result file hosted elsewhere, all within
                one budget; then each read of the result (not the whole download).
            extra_headers, extra_query: headers and query fields added to the request
                to the service (not to a result hosted elsewhere; a credential field is
                refused, at once).

        Yields:
            ``EmailRow``: ``status`` a ``Verdict`` (an unknown one, equal to its text, for
            a verdict this library does not know); ``role_based`` read from true/false,
            yes/no, y/n, 1/0 in any case, and None for any other value (never a failed
            download).

        Raises:
            JobNotReadyError: the job is still processing; JobNotFoundError,
                AuthenticationError, APIError: the service refused;
            APIError (NotFoundError, RateLimitError, ServerError by status): the host
                of a hosted result file refused it ("the result file hosted elsewhere
                could not be fetched"; a 401/403 there is no AuthenticationError);
            ResponseDecodeError: not UTF-8 (the byte's offset said), malformed JSON or
                CSV, a missing column; its ``status_code`` and ``url`` (redacted) are
                the answer's that was being read (the service's, or the hosted file's
                host's), its ``body`` the start of a JSON answer (scrubbed);
            APIConnectionError: the connection failed or broke (the bytes that had
                arrived said);
            UsageError: the client was closed meanwhile.
        """
        engine = self._bound(extra_headers, extra_query)
        read = Received()  # which answer the stream reads, for a decode error
        return email_rows(csv_text(engine, self.job_id, request_timeout, read),
                          partial(decode_error, engine, read))

    async def download(
        self, path: str | os.PathLike[str], *, request_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None, extra_query: ExtraQuery | None = None,
    ) -> int:
        """Stream the result CSV to ``path``, atomically.

        The CSV text (decoded from JSON when it came that way; UTF-8 without BOM, in
        either shape) is written to a temporary file beside ``path`` as it arrives,
        checked as it goes (as ``rows()`` reads it), and renamed over ``path`` only when
        complete and flushed to disk; on any failure, cancellation or ``client.close()``
        the temporary file is removed and ``path`` is untouched. The temporary name is
        kept within the directory's file-name limit, so any valid ``path`` works. A
        symbolic link is written through (it stays a link to the new content); an
        existing file keeps its permission bits; an existing device or pipe
        (``/dev/null``, a FIFO) is written in place, not replaced by a regular file: what
        was written before a failure stays written, a write to a pipe waits for its
        reader, and a FIFO without a reader is an OSError at once. Blank
        lines before the header of a body whose shape had to be sniffed (no telling
        media type) are not written. Writes are plain blocking writes of at most one
        chunk (64 KiB, into the OS page cache: microseconds); only the final ``fsync``
        runs in a thread.

        Args:
            path: the destination file.
            request_timeout: as ``rows()`` takes it.
            extra_headers, extra_query: as ``rows()`` takes them.

        Returns:
            The number of data rows (header and blank lines not counted).

        Raises:
            InvalidInputError: ``path`` is not a file path (a directory, one ending with a
                separator, a NUL, a name over the file-name limit...), before anything
                is sent.
            The errors of ``rows()``, and OSError when the file cannot be written.
        """
        destination = Destination(check_file_path(path))  # before anything is sent
        engine = self._bound(extra_headers, extra_query)
        reader = CsvRecordReader()
        builder = EmailRows()
        count = 0
        read = Received()  # which answer the stream reads, for a decode error
        failure: ResponseDecodeError | None = None
        try:
            with destination.open() as handle:
                pieces_of = csv_text(engine, self.job_id, request_timeout, read)
                async with aclosing(pieces_of) as pieces:
                    async for text in pieces:
                        handle.write(text.encode("utf-8"))
                        count += builder.count(reader.feed_counted(text, builder.need))
                count += builder.count(reader.finish())
                builder.finish()
                if destination.atomic:  # a device or a pipe takes no fsync
                    await _to_disk(handle)
            destination.commit()
        except BaseException as exc:
            destination.discard()
            text = ""  # a piece of the CSV (its header may echo a credential)
            if not isinstance(exc, StreamDecodeError):
                raise
            # Built here, raised below: outside the ``except`` it chains nothing (the
            # StreamDecodeError quotes the CSV unscrubbed, and its frames hold records).
            failure = decode_error(self._engine, read, exc)
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
    engine: Engine,
    job: ValidationJob,
    interval: float,
    max_interval: float,
    factor: float,
    deadline: float | None,
    on_status: StatusCallback | None,
    request_timeout: float | None,
) -> JobStatus:
    """The polling loop of ``ValidationJob.wait`` (arguments already checked): poll,
    until the job ends, pausing as the backoff says and the deadline allows."""
    wait = _Wait(engine, job, deadline, on_status, request_timeout)
    pauses = _backoff(engine, interval, max_interval, factor)
    while True:
        status = await wait.poll()
        if status is JobStatus.SUCCESS:
            return status
        if status is JobStatus.FAIL:
            raise JobFailedError(f"validation job {job.job_id} failed", job_id=job.job_id)
        # ``close()`` ends the pause at once (APIConnectionError, nothing sent), as it
        # ends a call waiting for its answer, instead of the next poll finding out.
        await engine.pause(wait.pause(next(pauses)), operation=STATUS.name)


def _backoff(engine: Engine, interval: float, max_interval: float,
             factor: float) -> Iterator[float]:
    """The pauses between polls: ``interval`` growing by ``factor`` up to
    ``max_interval``, each shortened by a random part of up to ``POLL_JITTER``."""
    step = interval
    while True:
        yield min(max_interval, step) * (1.0 - C.POLL_JITTER * engine.jitter())
        step = min(max_interval, step * factor)


class _Deadline:
    """The ``deadline`` of one wait (on the engine's clock): the time left, and the
    pauses cut so that one last poll still starts ``reserve`` before it
    (``WAIT_FINAL_POLL_RESERVE``, or a tenth of a deadline under 10 s)."""

    __slots__ = ("_at", "last_poll", "reserve", "seconds")

    def __init__(self, at: Deadline) -> None:
        self._at = at
        self.seconds = at.seconds
        self.reserve = min(C.WAIT_FINAL_POLL_RESERVE, C.WAIT_FINAL_POLL_SHARE * at.seconds)
        self.last_poll = False  # the next poll is the last one

    def left(self) -> float:
        """Seconds until the deadline (<= 0: passed)."""
        return self._at.left()

    def cut(self, pause: float) -> float | None:
        """``pause``, shortened to end ``reserve`` before the deadline (the poll after it
        is then the last); None when the poll just made was the last."""
        left = self.left()
        if self.last_poll or left <= self.reserve:
            return None
        if pause >= left - self.reserve:
            self.last_poll = True
            return left - self.reserve
        return pause


class _Wait:
    """One ``ValidationJob.wait`` in progress: its polls, bounded by the deadline if any;
    the transient failures it rides out; the statuses it reports to ``on_status``."""

    __slots__ = ("asked", "budget", "deadline", "failures", "job", "last_error",
                 "last_status", "now", "on_status", "request_timeout", "started")

    def __init__(self, engine: Engine, job: ValidationJob, deadline: float | None,
                 on_status: StatusCallback | None, request_timeout: float | None) -> None:
        self.job = job
        self.now = engine.now
        self.budget = engine.budget
        self.on_status = on_status
        self.request_timeout = request_timeout
        self.started = engine.now()
        self.deadline = None if deadline is None else _Deadline(engine.deadline(deadline))
        self.last_status: JobStatus | None = None
        self.last_error: BaseException | None = None  # of the polls failing since the last answer
        self.failures = 0  # consecutive transient failures
        self.asked = 0.0  # the wait the last poll's 429 asked for (its Retry-After)

    async def poll(self) -> JobStatus | None:
        """Ask the job's status and report it to ``on_status``; None when the poll failed
        transiently and the wait goes on.

        Raises:
            JobTimeoutError: the deadline has passed (before this poll, or within a
                callback that the job's end did not answer).
            The poll's error: not a transient one, or one too many of them.
        """
        timeout = self._poll_timeout()
        try:
            status = await self.job.status(request_timeout=timeout)
        except _TRANSIENT as exc:
            if not self._rides_out(exc):
                raise
            return None
        self.asked = 0.0
        self.failures = 0
        self.last_error = None
        self.last_status = status
        if self.on_status is not None:
            await self._report(status, self.on_status)
        return status

    def pause(self, pause: float) -> float:
        """The backoff's ``pause``, at least the wait a 429 asked for, as the deadline
        allows.

        Raises:
            JobTimeoutError: no time is left for another poll (or the service asked
                for a wait that ends past the deadline: no poll may be made before).
        """
        asked = self.asked
        if self.deadline is None:
            return max(pause, asked)
        cut = self.deadline.cut(pause)
        if cut is None or asked >= self.deadline.left():  # that was the last poll
            raise self._timed_out() from self.last_error
        return max(cut, asked)

    def _poll_timeout(self) -> float | None:
        """The next poll's timeout: the time left before the deadline at most."""
        deadline = self.deadline
        if deadline is None:
            return self.request_timeout
        left = deadline.left()
        if left <= 0:
            raise self._timed_out() from self.last_error
        return min(self.budget(self.request_timeout), left)

    def _rides_out(self, exc: BaseException) -> bool:
        """Count a transient failure; False when the wait gives up on it (no deadline,
        ``MAX_WAIT_TRANSIENT_FAILURES`` in a row)."""
        self.failures += 1
        self.last_error = exc
        # The service's own word on when to come back outweighs the backoff.
        self.asked = getattr(exc, "retry_after", None) or 0.0
        return self.deadline is not None or self.failures < C.MAX_WAIT_TRANSIENT_FAILURES

    async def _report(self, status: JobStatus, on_status: StatusCallback) -> None:
        """``on_status(status, elapsed)``, awaited if it returns an awaitable; the
        deadline bounds that too (cancelled at it: the job's end is still reported)."""
        outcome = on_status(status, self.now() - self.started)
        if not inspect.isawaitable(outcome):
            return
        if self.deadline is None:
            await outcome
            return
        try:
            await asyncio.wait_for(outcome, max(0.0, self.deadline.left()))
        except asyncio.TimeoutError:  # TimeoutError from 3.11 on
            if status not in (JobStatus.SUCCESS, JobStatus.FAIL):
                raise self._timed_out() from None

    def _timed_out(self) -> JobTimeoutError:
        assert self.deadline is not None
        return _timed_out(self.job, self.deadline.seconds, self.last_status)


def _timed_out(job: ValidationJob, deadline: float | None,
               last: JobStatus | None) -> JobTimeoutError:
    return JobTimeoutError(
        f"validation job {job.job_id} not finished after {deadline:g} s "
        f"(last status: {last})", job_id=job.job_id, last_status=last)
