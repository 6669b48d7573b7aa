"""``client.validation``: check one address, check many, and validation jobs."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from .._checks import check_count, check_email, check_http_url, check_job_id, check_seconds
from .._constants import DEFAULT_CHECK_CONCURRENCY, DEFAULT_VALIDITY_TIMEOUT
from .._convert import parse_int
from .._errors import (
    APIError,
    APITimeoutError,
    AuthenticationError,
    InsufficientCreditError,
    InvalidInputError,
    RateLimitError,
    SDKError,
)
from .._transport import Area, Operation
from ..jobs import ValidationJob
from ..models.validation import CheckFailure, CheckOutcome, CheckResult, CheckSuccess
from ._base import Resource

CHECK = Operation("validation.check", "GET", Area.VALIDATION, "/api/v1/single/check",
                  safe_to_repeat=True)
#: jobs/create spends credit and starts a job: never repeated once it may have arrived.
CREATE_JOB = Operation("validation.create_job", "GET", Area.VALIDATION, "/api/v1/jobs/create",
                       safe_to_repeat=False)

#: Failures after which ``check_many`` stops sending: every later check would fail too.
_STOPPING = (AuthenticationError, InsufficientCreditError)
#: Failures that mean "too fast" to ``check_many(adaptive=True)``.
_THROTTLED = (RateLimitError, APITimeoutError)
_END = object()


class Validation(Resource):
    """Email validation: ``check`` one address now, or submit a file as a job."""

    __slots__ = ()

    async def check(
        self,
        email: str,
        *,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
    ) -> CheckResult:
        """Check one address in real time.

        Args:
            email: the address.
            validity_timeout: the service's ``timeout`` parameter (seconds the check may
                take at the service); not the client's request timeout.
            request_timeout: this call's timeout, overriding the client's.

        Returns:
            The ``CheckResult`` (``result`` is a ``Verdict``, ``role`` a bool).

        Raises:
            InvalidInputError: ``email`` is not an address; nothing was sent.
            InvalidEmailError, AuthenticationError, InsufficientCreditError, APIError:
                the service refused; APIConnectionError: no answer.
        """
        check_email(email, "email")
        params = {"email": email, "timeout": check_seconds(validity_timeout, "validity_timeout")}
        data = await self._transport.request(CHECK, params=params, timeout=request_timeout)
        return self._transport.decode(CHECK, data, CheckResult)

    def check_many(
        self,
        emails: Iterable[str] | AsyncIterable[str],
        *,
        concurrency: int = DEFAULT_CHECK_CONCURRENCY,
        adaptive: bool = False,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
    ) -> AsyncGenerator[CheckOutcome, None]:
        """Check many addresses concurrently; one ``CheckOutcome`` per input.

        ``emails`` (a sync or async iterable, of any length) is read lazily: at most
        ``concurrency`` checks exist at a time, each started as another ends, so memory
        does not grow with the input. Outcomes come in completion order. An input that is
        not an address gets an outcome with ``InvalidInputError`` and is not sent; any
        other failure of one check is that input's outcome and the run goes on.

        After an ``AuthenticationError`` or ``InsufficientCreditError`` no further check
        is sent: those in flight finish and get their outcomes, then the rest of
        ``emails`` is still read to the end so that every remaining input gets an
        outcome with ``attempted=False`` and an error of the same class saying it was not
        attempted (its ``__cause__`` is the failure that stopped the run).

        With ``adaptive=True`` the number in flight halves (down to 1) on a
        ``RateLimitError`` or ``APITimeoutError`` and grows back by one after as many
        consecutive answers as the current limit, never above ``concurrency``.

        Leaving the ``async for`` early and closing the generator (``aclose()``, or
        ``contextlib.aclosing``), or cancelling the consumer, cancels the checks in
        flight; no task is left behind.

        Args:
            emails: the addresses.
            concurrency: the most checks in flight (an int >= 1).
            adaptive: adapt the number in flight to rate limiting (see above).
            validity_timeout: the service's ``timeout`` per check, in seconds.
            request_timeout: each check's timeout, overriding the client's.

        Returns:
            An async generator of ``CheckOutcome``.

        Raises:
            InvalidInputError: at once, for a bad ``concurrency`` or ``validity_timeout``
                or for ``emails`` being a single string.
            Whatever iterating ``emails`` raises, after the checks in flight are
            cancelled.
        """
        check_count(concurrency, "concurrency")
        check_seconds(validity_timeout, "validity_timeout")
        if request_timeout is not None:
            check_seconds(request_timeout, "request_timeout")
        if isinstance(emails, (str, bytes)):
            raise InvalidInputError("emails: expected an iterable of addresses, got a single "
                                    "string", field="emails")
        if not isinstance(emails, (Iterable, AsyncIterable)):
            raise InvalidInputError(
                f"emails: expected an iterable, got {type(emails).__name__}", field="emails")
        return self._check_many(emails, concurrency, adaptive, validity_timeout,
                                request_timeout)

    async def _check_many(
        self,
        emails: Iterable[str] | AsyncIterable[str],
        concurrency: int,
        adaptive: bool,
        validity_timeout: float,
        request_timeout: float | None,
    ) -> AsyncGenerator[CheckOutcome, None]:
        source: Iterator[Any] | None = None
        async_source: AsyncIterator[Any] | None = None
        if isinstance(emails, AsyncIterable):
            async_source = aiter(emails)
        else:
            source = iter(emails)

        async def next_input() -> Any:
            if async_source is not None:
                return await anext(async_source, _END)
            assert source is not None
            return next(source, _END)

        running: dict[asyncio.Task[CheckResult], tuple[str, int]] = {}
        # Each check puts itself here when it ends: waiting is O(1) per completion, where
        # asyncio.wait(FIRST_COMPLETED) would walk every running task each time.
        finished: asyncio.Queue[asyncio.Task[CheckResult]] = asyncio.Queue()
        limit = concurrency
        generation = 0  # bumped on each decrease: throttles of older requests are ignored
        streak = 0
        stopped: APIError | None = None
        exhausted = False
        try:
            while True:
                while not exhausted and stopped is None and len(running) < limit:
                    value = await next_input()
                    if value is _END:
                        exhausted = True
                        break
                    try:
                        email = check_email(value, "email")
                    except InvalidInputError as exc:
                        yield CheckFailure(email=_shown(value), error=exc)
                        continue
                    task = asyncio.ensure_future(self.check(
                        email, validity_timeout=validity_timeout,
                        request_timeout=request_timeout))
                    task.add_done_callback(finished.put_nowait)
                    running[task] = (email, generation)
                if not running:
                    break
                task = await finished.get()
                email, started_in = running.pop(task)
                failure = task.exception()
                if failure is None:
                    outcome: CheckOutcome = CheckSuccess(email=email, result=task.result())
                elif isinstance(failure, SDKError):
                    outcome = CheckFailure(email=email, error=failure)
                    if isinstance(failure, _STOPPING) and stopped is None:
                        stopped = failure
                else:
                    raise failure
                if adaptive:
                    if isinstance(failure, _THROTTLED):
                        streak = 0
                        if started_in == generation and limit > 1:
                            limit = max(1, limit // 2)
                            generation += 1
                    else:
                        streak += 1
                        if streak >= limit and limit < concurrency:
                            limit += 1
                            streak = 0
                yield outcome
            if stopped is not None:
                while True:
                    value = await next_input()
                    if value is _END:
                        break
                    yield CheckFailure(email=_shown(value), error=_not_attempted(stopped),
                                       attempted=False)
        finally:
            pending = [task for task in running if not task.done()]
            for task in running:
                if task.done() and not task.cancelled():
                    task.exception()  # retrieved: no "exception never retrieved" noise
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    async def create_job(
        self,
        file_url: str,
        *,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
    ) -> ValidationJob:
        """Submit a remotely hosted file of addresses as a validation job.

        Sent at most once (it spends credit): on a connection failure after the request
        may have left, ``APIConnectionError.may_have_been_sent`` is True and no retry is
        made.

        Args:
            file_url: an absolute http(s) URL the service can download the file from.
            validity_timeout: the service's ``timeout`` parameter, in seconds.
            request_timeout: this call's timeout, overriding the client's.

        Returns:
            The ``ValidationJob`` (``job_id``, ``file_url``, ``submitted_at``).

        Raises:
            InvalidInputError: ``file_url`` is not an absolute http(s) URL; nothing sent.
            FileNotDownloadableError, FileFormatError, InsufficientCreditError,
                AuthenticationError, InvalidRequestError, APIError: the service refused;
            APIConnectionError: no answer; ResponseDecodeError: no job id in the answer.
        """
        url = check_http_url(file_url, "file_url", what="an absolute http(s) URL of the file")
        params = {"file_name": url, "timeout": check_seconds(validity_timeout, "validity_timeout")}
        data = await self._transport.request(CREATE_JOB, params=params, timeout=request_timeout)
        raw = data.get("job_id") if isinstance(data, dict) else None
        try:
            job_id = parse_int(raw)
        except ValueError:
            raise self._transport.decode_error(
                CREATE_JOB, data, "jobs/create gave no job id") from None
        return ValidationJob(self._transport, job_id, file_url=url,
                             submitted_at=dt.datetime.now(dt.timezone.utc))

    def job(self, job_id: int) -> ValidationJob:
        """A handle on an existing job, without any request.

        Args:
            job_id: the job's number (digits in a string are accepted).

        Returns:
            The ``ValidationJob`` (``file_url`` and ``submitted_at`` unknown: None).

        Raises:
            InvalidInputError: ``job_id`` is not a non-negative integer.
        """
        return ValidationJob(self._transport, check_job_id(job_id))

    def job_from_dict(self, data: dict[str, Any]) -> ValidationJob:
        """Rebuild a job from ``job.to_dict()`` (e.g. in another process, after a crash).

        Args:
            data: the dict, possibly through a JSON round trip.

        Returns:
            The ``ValidationJob``, bound to this client.

        Raises:
            InvalidInputError: ``data`` is not such a dict.
        """
        return ValidationJob.from_dict(self._transport, data)


def _shown(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def _not_attempted(cause: APIError) -> APIError:
    error = type(cause)(
        f"not attempted: the run stopped after {cause.error_text or cause.message}",
        operation=cause.operation, status_code=cause.status_code,
        error_text=cause.error_text)
    error.__cause__ = cause
    return error
