"""``ValidationJob.wait``: the wait a 429 or 503 answer to a poll asks for
(``Retry-After``) is kept by the next poll, with and without a deadline, whatever the
client's retries."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from aioresponses import CallbackResult, aioresponses
from helpers import API_KEY, BASE, USERNAME
from validation_tools import url_of

import asyncsdk
from asyncsdk import JobStatus
from asyncsdk.testing import VirtualClock

STATUS = url_of("/api/v1/jobs/status")


#: The answers that say when to come back: rate limited, and a service in maintenance.
BUSY = [429, 503]


def busy_then_done(mocked: aioresponses, clock: VirtualClock, retry_after: float,
                   busy: int, status: int = 429) -> list[tuple[float, int]]:
    """The status endpoint: ``busy`` answers ``status`` asking for ``retry_after``
    seconds, then ``success``. Returns (time, status) of every request as it comes."""
    seen: list[tuple[float, int]] = []

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        if len(seen) < busy:
            seen.append((clock.now(), status))
            return CallbackResult(status=status, body="slow down",
                                  headers={"Retry-After": f"{retry_after:g}"})
        seen.append((clock.now(), 200))
        return CallbackResult(payload={"status": "success"})

    mocked.get(STATUS, callback=answer, repeat=True)
    return seen


def assert_each_wait_kept(seen: list[tuple[float, int]], retry_after: float) -> None:
    """No request came sooner after a busy answer than the wait it asked for."""
    for (at, status), (then, _) in pairwise(seen):
        if status in BUSY:
            assert then - at >= retry_after, seen


@pytest.mark.parametrize("status", BUSY)
@pytest.mark.parametrize("max_retries", [0, 2])
@pytest.mark.parametrize("retry_after", [0.5, 7.0, 40.0])
@pytest.mark.parametrize("busy", [1, 3, 4])
async def test_wait_keeps_the_retry_after_of_a_poll_without_a_deadline(
    mocked: aioresponses, max_retries: int, retry_after: float, busy: int, status: int
) -> None:
    """Regression: once the client's retries were spent, a 429's ``Retry-After`` was
    dropped and the next poll came after the poll interval (0.75 s here): a service
    asking for 40 s was polled again at once. A 503's was dropped too: a
    ``ServerError`` carried no ``retry_after``."""
    clock = VirtualClock(random=1.0)
    seen = busy_then_done(mocked, clock, retry_after, busy, status)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock,
                               max_retries=max_retries) as client:
        assert await client.validation.job(3).wait() is JobStatus.SUCCESS
    assert [s for _, s in seen] == [status] * busy + [200]
    assert_each_wait_kept(seen, retry_after)


@pytest.mark.parametrize("status", BUSY)
@pytest.mark.parametrize("max_retries", [0, 2])
@pytest.mark.parametrize(("retry_after", "deadline"), [
    (40.0, 10.0), (10.0, 10.0), (60.0, 59.0), (3.0, 2.0)])
async def test_a_retry_after_past_the_deadline_ends_the_wait_without_another_poll(
    mocked: aioresponses, max_retries: int, retry_after: float, deadline: float, status: int
) -> None:
    """Regression: with ``deadline=10`` a poll answered 429 ``Retry-After: 40`` was
    followed by five more polls within the 10 s (each at the poll interval)."""
    clock = VirtualClock(random=1.0)
    seen = busy_then_done(mocked, clock, retry_after, busy=100, status=status)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock,
                               max_retries=max_retries) as client:
        with pytest.raises(asyncsdk.JobTimeoutError) as info:
            await client.validation.job(3).wait(deadline=deadline)
    assert len(seen) == 1  # the service said: not before the deadline
    cause = info.value.__cause__
    assert isinstance(cause, asyncsdk.RateLimitError if status == 429 else asyncsdk.ServerError)
    assert cause.retry_after == retry_after
    assert clock.now() <= deadline


@pytest.mark.parametrize("status", BUSY)
@pytest.mark.parametrize("max_retries", [0, 2])
@pytest.mark.parametrize(("retry_after", "deadline"), [
    (4.0, 10.0), (8.9, 10.0), (9.5, 10.0), (1.0, 3.0), (30.0, 100.0)])
async def test_a_retry_after_within_the_deadline_is_kept_and_the_poll_made(
    mocked: aioresponses, max_retries: int, retry_after: float, deadline: float, status: int
) -> None:
    clock = VirtualClock(random=1.0)
    seen = busy_then_done(mocked, clock, retry_after, busy=1, status=status)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock,
                               max_retries=max_retries) as client:
        assert await client.validation.job(3).wait(deadline=deadline) is JobStatus.SUCCESS
    assert [s for _, s in seen] == [status, 200]
    assert_each_wait_kept(seen, retry_after)
    assert seen[-1][0] < deadline


# --- a fail with and without an error text ----------------------------------------------
NOT_YOURS = "This Job Id not associated to your users."


@pytest.mark.parametrize("answer", [
    {"status": "fail"}, {"status": "fail", "error": ""}, {"status": "fail", "error": " "},
    {"status": "Fail", "error": "\t\r\n"}, {"status": " FAIL ", "error": "  "},
    {"status": "fail", "error": None}, {"status": " fail\n"}])
async def test_a_fail_without_an_error_text_is_the_jobs_state(
    client: asyncsdk.Client, mocked: aioresponses, answer: dict[str, Any]
) -> None:
    """Regression: a blank ``error`` (white space) was an error text: status() raised a
    bare ``APIError`` whose message was that white space, instead of ``JobStatus.FAIL``."""
    mocked.get(STATUS, payload=answer, repeat=True)
    job = client.validation.job(3)
    assert await job.status() is JobStatus.FAIL
    with pytest.raises(asyncsdk.JobFailedError):
        await job.wait()


@pytest.mark.parametrize("status", ["fail", "FAIL", " fail ", "Fail\n"])
async def test_a_fail_with_an_error_text_is_the_mapped_error_in_any_spelling(
    client: asyncsdk.Client, mocked: aioresponses, status: str
) -> None:
    """Regression: ``" fail "`` with an error text was read as the job's state (FAIL),
    the service's refusal ("not your job") lost."""
    mocked.get(STATUS, payload={"status": status, "error": NOT_YOURS}, repeat=True)
    job = client.validation.job(3)
    with pytest.raises(asyncsdk.JobNotFoundError):
        await job.status()
    with pytest.raises(asyncsdk.JobNotFoundError):
        await job.wait()
