"""``client.validation``: check one address, check many, and validation jobs."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncGenerator, AsyncIterable, Iterable
from functools import partial
from typing import Any

from ..._checks import MAX_ID, check_email, check_http_url, check_job_id, check_seconds
from ..._constants import DEFAULT_CHECK_CONCURRENCY, DEFAULT_VALIDITY_TIMEOUT
from ..._core import Backlog, CallOptions, Extras, Operation, PaceState, SendPolicy
from ..._serde.converter import parse_int
from ...models.validation import CheckOutcome, CheckResult
from .._areas import Area
from .._base import ExtraHeaders, ExtraQuery, Resource, extras_of
from .check_many import callers_policy, check_many
from .jobs import ValidationJob

CHECK = Operation("validation.check", "GET", Area.VALIDATION, "/api/v1/single/check",
                  safe_to_repeat=True)


def _job_id_in(data: Any) -> int | None:
    """The job id of a jobs/create answer: an integer ``job_id`` (or its digits) that
    ``job()`` would take; None when there is none."""
    try:
        job_id = parse_int(data.get("job_id") if isinstance(data, dict) else None)
    except ValueError:
        return None
    return job_id if 0 <= job_id <= MAX_ID else None


def _no_job_id(data: Any) -> str | None:
    """Why a jobs/create answer is none: it has no job id (None: it has)."""
    return "jobs/create gave no job id" if _job_id_in(data) is None else None


#: The query field a check sets from its address, and that argument: not replaced by
#: ``extra_query`` (the answer would be another address's, read as this one's).
_EMAIL = (("email", "email"),)

#: jobs/create spends credit and starts a job: never repeated once it may have arrived.
CREATE_JOB = Operation("validation.create_job", "GET", Area.VALIDATION, "/api/v1/jobs/create",
                       safe_to_repeat=False, check_answer=_no_job_id)



class Validation(Resource):
    """Email validation: ``check`` one address now, or submit a file as a job."""

    __slots__ = ()

    async def check(
        self,
        email: str,
        *,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
        attempt_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> CheckResult:
        """Check one address in real time.

        Args:
            email: the address.
            validity_timeout: the service's ``timeout`` parameter (seconds the check may
                take at the service); not the client's request timeout.
            request_timeout: this call's timeout, overriding the client's.
            attempt_timeout: seconds one attempt may take before it is retried within
                ``request_timeout``, overriding the client's.
            extra_headers, extra_query: headers and query fields added to the request
                (a credential field, or ``email``, is refused).

        Returns:
            The ``CheckResult`` (``result`` is a ``Verdict``, ``role`` a bool).

        Raises:
            InvalidInputError: ``email`` is not an address; nothing was sent.
            InvalidEmailError, AuthenticationError, InsufficientCreditError, APIError:
                the service refused; APIConnectionError: no answer.
        """
        check_email(email, "email")
        if validity_timeout is not DEFAULT_VALIDITY_TIMEOUT:  # the default needs no check
            check_seconds(validity_timeout, "validity_timeout")
        params = {"email": email, "timeout": validity_timeout}
        extras = None if extra_headers is None and extra_query is None else extras_of(
            extra_headers, extra_query, _EMAIL)  # none: nearly every call, no call made
        return await self._engine.request(CallOptions(  # type: ignore[no-any-return]
            CHECK, query=params, timeout=request_timeout, attempt_timeout=attempt_timeout,
            model=CheckResult, extras=extras))

    async def _bulk_check(self, email: str, *, validity_timeout: float,
                          request_timeout: float | None, policy: SendPolicy,
                          extras: Extras | None) -> CheckResult:
        """``check`` as one of many (``check_many``): a bulk call, its attempts let out
        by ``policy`` (the validation area's pace: ``Engine.bulk_policy``), a 429 sent
        again after the wait asked for, without spending ``max_retries``, until
        ``request_timeout`` (the client's timeout) ends it."""
        check_email(email, "email")
        params = {"email": email, "timeout": validity_timeout}
        return await self._engine.request(CallOptions(  # type: ignore[no-any-return]
            CHECK, query=params, timeout=request_timeout, model=CheckResult, extras=extras,
            policy=policy))

    def check_many(
        self,
        emails: Iterable[str] | AsyncIterable[str],
        *,
        concurrency: int = DEFAULT_CHECK_CONCURRENCY,
        adaptive: bool = True,
        pace: SendPolicy | None = None,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
        stop: asyncio.Event | None = None,
    ) -> AsyncGenerator[CheckOutcome, None]:
        """Check many addresses concurrently; one ``CheckOutcome`` per input.

        ``emails`` (a sync or async iterable, of any length) is read lazily: at most
        ``concurrency`` checks are in flight, and an input is read only while fewer than
        ``concurrency`` inputs are read and their outcomes not yet received, so memory
        does not grow with the input. Each outcome is yielded as soon as its check ends,
        in completion order, whatever the source is doing (a slow async source holds
        back no finished outcome). An input that is not an address gets an outcome with
        ``InvalidInputError`` and is not sent; any other failure of one check is that
        input's outcome and the run goes on.

        **At the service's pace.** ``concurrency`` is an upper bound: how many checks
        are sent at once, and how fast, is found from the service's answers (on by
        default, ``adaptive``). The checks of the run go out paced at the rate the
        service takes, found from every answer, 429s included, the number on the wire
        following it (about that rate times the service's answer time) and any change of
        the limit during the run. A 429 is "not processed, come back later": that check
        is sent again after the wait the service asked for (``Retry-After``, else a
        jittered backoff) without spending the client's ``max_retries``, until its
        ``request_timeout`` (else the client's ``timeout``) ends it; only then is
        ``RateLimitError`` its outcome. The pace is the client's, for the validation
        area: a 429 holds back every check of every ``check_many`` run of this client
        (released one by one, never in a wave), not only the one that got it.

        **At your pace.** ``pace`` replaces the client's pace for this run with yours:
        any object of the ``asyncsdk.pacing.SendPolicy`` protocol. Before every send
        (each resend included) the run awaits ``pace.admit(deadline)`` — its
        ``Admission``, or None when it cannot let the check out before ``deadline`` (the
        check's budget end, on the client's clock): then that check is not sent and its
        outcome is the error of a spent budget (``RateLimitError`` while
        ``pace.held_until``, on the same clock, is ahead; else ``APITimeoutError``).
        After every attempt it calls ``pace.report(admission, status, retry_after)``:
        the answer's HTTP status (None: no answer) and, for a 429, the ``Retry-After``
        in seconds (None: absent). An answer whose status ``pace.resends_free(status)``
        accepts is sent again without spending ``max_retries``. The fleet's
        ``SharedPace`` is one (its state in Redis, shared by every worker). A wait in
        your ``admit`` is yours: ``close()`` does not end it.

        After an ``AuthenticationError`` or ``InsufficientCreditError`` (or a
        ``UsageError``: the client was closed under the run; or a ``ConfigurationError``:
        it lacks a credential or URL) no further check is sent, not even one already
        waiting for its moment of the pace: those in flight finish
        and get their outcomes, then the rest of ``emails`` is still read to the end so
        that every remaining input gets an outcome with ``attempted=False`` and an error
        of the same class saying it was not attempted (its ``__cause__`` is the failure
        that stopped the run).

        To stop early without losing a paid check, set ``stop`` (an ``asyncio.Event``):
        from then on nothing more is sent, not even a check already waiting for its
        moment of the pace (the inputs taken but not sent get ``attempted=False``
        outcomes, an ``SDKError`` saying so), the checks on the wire finish and are
        yielded, the rest of ``emails`` is not read, and the iteration ends without an
        error. (Ending ``emails`` stops taking inputs, but the checks it has already
        handed out are still sent.) Closing or cancelling the iteration cancels the
        checks in flight instead; those already sent may have been paid for (a bounded
        number: at most ``concurrency``).

        An exception from the source ends the iteration after every input already sent
        has yielded its outcome: nothing is sent after it, the checks in flight finish,
        their outcomes are yielded, then those of the inputs read but still waiting for
        their moment of the pace (not sent: ``attempted=False``, an ``SDKError`` saying
        so), then the source's exception is raised. (An unexpected, non-SDK exception
        from a check is treated the same way.) A stop ends a wait for the pace at once.

        Leaving the ``async for`` early and closing the generator (``aclose()``, or
        ``contextlib.aclosing``), or cancelling the consumer, cancels the checks in
        flight (and a read of an async source in progress); no task is left behind.
        Every outcome yielded before the close stays delivered; what the consumer has
        not received is what was in flight, plus any check that ended after the last
        outcome it took (a closed generator cannot yield those).

        However the iteration ends (the source's end, an error, a stop, ``aclose()``, a
        cancellation inside it), an async source with ``aclose()`` (an async generator)
        is closed before it finishes: its ``finally`` runs then, not when the event loop
        ends. A plain (sync) iterable is left as it is.

        Args:
            emails: the addresses.
            concurrency: the most checks in flight (an int >= 1; default 64): an upper
                bound, the pace finds how many the service takes below it.
            adaptive: True (the default): the pace finds the rate and the number in
                flight. False: up to ``concurrency`` in flight whatever the service
                takes, for a caller that paces on its own (to replace the pace
                altogether, give ``pace``); 429s are still sent again after their wait without
                spending a retry, and a 429 while the service takes nothing at all
                still holds every check back. (The flag was off by default before, and
                halved the number in flight on a ``RateLimitError``.) It concerns the
                client's pace only: not with ``pace``.
            pace: a ``SendPolicy`` that lets each check out and hears its answer, in
                place of the client's pace (see "At your pace"); None (the default):
                the client's.
            validity_timeout: the service's ``timeout`` per check, in seconds.
            request_timeout: each check's timeout, overriding the client's: the budget
                within which a rate-limited check is sent again.
            extra_headers, extra_query: headers and query fields added to each check's
                request (a credential field, or ``email``, is refused).
            stop: an ``asyncio.Event`` of yours that, once set, stops the run (above);
                None (the default): the run ends with its input.

        Returns:
            An async generator of ``CheckOutcome``.

        Raises:
            InvalidInputError: at once, for a bad ``concurrency`` or ``validity_timeout``,
                a ``stop`` that is not an ``asyncio.Event``,
                a ``pace`` that is not a ``SendPolicy`` or given with ``adaptive=False``,
                or for ``emails`` being a single string, or for extras that are not
                headers or query fields, would replace a credential or each check's
                ``email``, or could not be sent as given (checked once for every
                input: nothing is sent).
            UsageError: as the iteration starts, for a client already closed (or used
                from another event loop), as ``check`` raises it: once, before
                ``emails`` is read (nothing was taken or sent: give it to an open
                client). A client closed during the run stops it instead (above).
            Whatever iterating ``emails`` raises, once the outcomes of every input
            already sent have been yielded.
        """
        # Checked at once; an "email" would replace every input's: each outcome another's.
        extras = extras_of(extra_headers, extra_query, (("email", "emails"),))
        backlog = Backlog.of(emails)  # a list's length tells the pace when the end is near
        policy = (self._engine.bulk_policy(CHECK, adaptive=adaptive is True, backlog=backlog)
                  if pace is None else callers_policy(pace, adaptive))
        check = partial(self._bulk_check, extras=extras)  # its policy: the run's gate
        return check_many(check, emails, concurrency=concurrency, adaptive=adaptive,
                          validity_timeout=validity_timeout, request_timeout=request_timeout,
                          backlog=backlog, policy=policy, stop=stop,
                          usable=self._engine.usable)

    def pace(self) -> PaceState:
        """What the pace of this client's bulk checks is doing now: how fast the service
        lets ``check_many`` go, for a log line or a progress bar::

            state = client.validation.pace()
            print(state.phase.value, state.rate, state.hold_seconds, state.in_flight)

        The pace is the one ``check_many`` runs at (not a ``pace=`` policy of your own,
        which neither uses nor changes it: a run given one, as a fleet worker gives
        each batch its ``SharedPace``, shows nothing here, and a client whose every run
        is given one shows ``PaceState()``), of this client's API key: a
        ``with_options`` copy with the same key shows the same pace (a 429 to either
        shows as a hold in both), a copy with another key or another ``Client`` its
        own. See ``asyncsdk.pacing.PaceState`` for what each field means; it holds
        nothing of the key.

        A method, not a property: each call takes a new snapshot (a frozen record
        that does not change as the pace does), at the client's clock's time. It sends
        nothing, makes nothing and raises nothing, on a closed client too; before any
        bulk call it is ``PaceState()`` (nothing learnt, nothing held), and looking
        changes nothing of what a later ``check_many`` does.
        """
        return self._engine.pace_state(CHECK)

    async def create_job(
        self,
        file_url: str,
        *,
        validity_timeout: float = DEFAULT_VALIDITY_TIMEOUT,
        request_timeout: float | None = None,
        extra_headers: ExtraHeaders | None = None,
        extra_query: ExtraQuery | None = None,
    ) -> ValidationJob:
        """Submit a remotely hosted file of addresses as a validation job.

        Sent at most once (it spends credit): on a connection failure after the request
        may have left, ``APIConnectionError.may_have_been_sent`` is True and no retry is
        made.

        Args:
            file_url: an absolute http(s) URL the service can download the file from.
            validity_timeout: the service's ``timeout`` parameter, in seconds.
            request_timeout: this call's timeout, overriding the client's.
            extra_headers, extra_query: headers and query fields added to the request
                (a credential field, or ``file_name``, is refused). The job's own
                calls take their own.

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
        extras = extras_of(extra_headers, extra_query, (("file_name", "file_url"),))
        data = await self._engine.request(CallOptions(
            CREATE_JOB, query=params, timeout=request_timeout, extras=extras))
        job_id = _job_id_in(data)
        assert job_id is not None  # ``_no_job_id`` refused an answer without one
        return ValidationJob(self._engine, job_id, file_url=url,
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
        return ValidationJob(self._engine, check_job_id(job_id))

    def job_from_dict(self, data: dict[str, Any]) -> ValidationJob:
        """Rebuild a job from ``job.to_dict()`` (e.g. in another process, after a crash).

        Args:
            data: the dict, possibly through a JSON round trip.

        Returns:
            The ``ValidationJob``, bound to this client.

        Raises:
            InvalidInputError: ``data`` is not such a dict.
        """
        return ValidationJob.from_dict(self._engine, data)
