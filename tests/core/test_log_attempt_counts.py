"""The attempts a log line and an answer tell are the attempts sent (DESIGN §3).

A call's attempts are told three ways: the DEBUG line of each attempt (``attempt N``),
the WARNING of a call given up (``after N attempt(s)``) and the ``attempts`` of the
``RawResponse`` an ``APIError`` carries. All three count what went on the wire.

Before: a call whose next attempt was never sent (its pace would not let it out before
its deadline, or its budget ended during the wait) was said to have made one attempt
more than it had: a check of ``check_many`` that got one 429 and was then held back was
given up "after 2 attempt(s)", its ``RateLimitError.response.attempts == 2``, with one
request sent; a check never let out at all was given up "after 1 attempt(s)". And the
error a retried answer's body decided (a 503 whose ``fail`` text is a wrong key) kept
``response.attempts == 1`` and ``response.elapsed == 0.0`` whatever came before it.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
from aiohttp import web
from auth_helpers import serve

import asyncsdk
from asyncsdk.testing import Sandbox, VirtualClock

KEY = "kÖ+y/Z=9==Qx"
USER = "logging.user"
CHECK = "/api/v1/single/check"


class Admits:
    """A caller's pace (``asyncsdk.pacing.SendPolicy``) that lets ``times`` attempts out,
    then none: the check's next attempt is not sent."""

    held_until = 0.0

    def __init__(self, times: int) -> None:
        self.left = times

    async def admit(self, deadline: float) -> object | None:
        self.left -= 1
        return object() if self.left >= 0 else None

    def report(self, admission: object, status: int | None,
               retry_after: float | None) -> None:
        pass

    def resends_free(self, status: int) -> bool:
        return status == 429


def _lines(caplog: pytest.LogCaptureFixture) -> tuple[list[int], list[int]]:
    """The attempt numbers of the DEBUG lines, and the counts of the WARNING lines."""
    records = [r for r in caplog.records if r.name == "asyncsdk"]
    debug = [int(m.group(1)) for r in records if r.levelno == logging.DEBUG
             if (m := re.search(r"\(attempt (\d+)\)$", r.getMessage()))]
    given_up = [int(m.group(1)) for r in records if r.levelno == logging.WARNING
                if (m := re.search(r" after (\d+) attempt\(s\): ", r.getMessage()))]
    return debug, given_up


@pytest.mark.parametrize("let_out", [0, 1, 2, 3])
@pytest.mark.parametrize("status", [429, 503])
async def test_a_check_held_back_is_given_up_after_the_attempts_sent(
    caplog: pytest.LogCaptureFixture, let_out: int, status: int,
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(
            max_retries=5, clock=VirtualClock()) as client:
        sb.faults.status(CHECK, status, times=None)
        outcomes = [o async for o in client.validation.check_many(
            ["ada@example.org"], pace=Admits(let_out))]
        sent = len([r for r in sb.requests if r.path == CHECK])
    assert sent == let_out
    error = outcomes[0].error
    assert error is not None
    debug, given_up = _lines(caplog)
    assert debug == list(range(1, let_out + 1))
    assert given_up == [let_out]  # once, and true
    if let_out:  # the last answer's refusal: its attempts are the ones sent
        assert isinstance(error, asyncsdk.APIError) and error.response is not None
        assert error.response.attempts == let_out


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_a_single_call_given_up_tells_its_attempts_once(
    caplog: pytest.LogCaptureFixture, retries: int,
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(
            max_retries=retries, clock=VirtualClock()) as client:
        sb.faults.status(CHECK, 503, times=None)
        with pytest.raises(asyncsdk.ServerError) as info:
            await client.validation.check("ada@example.org")
        sent = len([r for r in sb.requests if r.path == CHECK])
    assert sent == retries + 1
    debug, given_up = _lines(caplog)
    assert debug == list(range(1, sent + 1))
    assert given_up == [sent]
    assert info.value.response is not None and info.value.response.attempts == sent


async def test_a_budget_ended_during_a_wait_tells_the_attempts_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 429 whose wait fits the budget, a pace that then holds the check past it."""
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(
            clock=VirtualClock()) as client:
        sb.faults.rate_limit(CHECK, retry_after=1, times=None)
        outcomes = [o async for o in client.validation.check_many(
            ["ada@example.org"], pace=Admits(2), request_timeout=30)]
        sent = len([r for r in sb.requests if r.path == CHECK])
    error = outcomes[0].error
    assert isinstance(error, asyncsdk.RateLimitError) and error.response is not None
    assert sent == 2
    assert error.response.attempts == 2
    assert _lines(caplog) == ([1, 2], [2])


@pytest.mark.parametrize("plain_503s", [0, 1, 2])
async def test_an_error_a_retried_answers_body_decides_carries_the_calls_attempts(
    plain_503s: int,
) -> None:
    """``plain_503s`` answers retried, then a 503 whose ``fail`` text decides."""
    answers = 0

    async def handle(request: web.Request) -> web.Response:
        nonlocal answers
        answers += 1
        body = {} if answers <= plain_503s else {
            "status": "fail", "error": "User authentication failed. Wrong API Key or username."}
        return web.Response(status=503, text=json.dumps(body), content_type="application/json")

    clock = VirtualClock(random=1.0)  # the full backoff: 0.5, 1 seconds
    async with serve(handle) as base, asyncsdk.Client(
            KEY, USER, base_url=base, max_retries=5, clock=clock) as client:
        with pytest.raises(asyncsdk.AuthenticationError) as info:
            await client.validation.check("ada@example.org")
    response = info.value.response
    assert response is not None
    assert answers == plain_503s + 1
    assert response.attempts == answers
    assert response.elapsed == sum(clock.sleeps) == [0.0, 0.5, 1.5][plain_503s]
