"""What the error of an operation not safe to repeat says (DESIGN §3): every failure is
an ``SDKError`` subclass that says whether the request may have taken effect
(``may_have_been_sent``), with its operation, HTTP status and request id (None where no
answer came), after exactly the attempts the rules allow.

On the old code only ``APIConnectionError`` had ``may_have_been_sent``: a mail answered
with a 500 (``ServerError``) or a create answered 201 with a body that could not be read
(``ResponseDecodeError``: it was created) raised an ``AttributeError`` when asked, and
an ``APIConnectionError`` had no ``status_code`` or ``request_id`` to read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from auth_helpers import serve
from helpers import API_KEY, USERNAME
from reliability_helpers import contact_list_create

import asyncsdk
from asyncsdk.testing import VirtualClock

MAX_RETRIES = 2
Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]
Call = Callable[[asyncsdk.Client], Awaitable[Any]]


def _status(status: int, body: str, content_type: str = "application/json") -> Answer:
    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, text=body, content_type=content_type,
                            headers={"X-Request-Id": "rid-1"})
    return answer


async def _reset(request: web.Request) -> web.StreamResponse:
    await request.read()
    assert request.transport is not None
    request.transport.close()  # after the whole request arrived: it may have been done
    return web.Response()


#: (answer, error class, may_have_been_sent, requests that arrive, the status shown)
OUTCOMES = [
    pytest.param(_status(500, '{"status": "fail"}'), asyncsdk.ServerError, True, 1, 500,
                 id="500"),
    pytest.param(_status(503, "<html>busy</html>", "text/html"), asyncsdk.ServerError, True,
                 1, 503, id="503-html"),
    pytest.param(_status(429, '{"detail": "slow down"}'), asyncsdk.RateLimitError, False,
                 1 + MAX_RETRIES, 429, id="429"),
    pytest.param(_status(400, '{"detail": "bad"}'), asyncsdk.InvalidRequestError, False,
                 1, 400, id="400"),
    pytest.param(_status(201, "{not json"), asyncsdk.ResponseDecodeError, True, 1, 201,
                 id="2xx-unreadable"),
    pytest.param(_reset, asyncsdk.APIConnectionError, True, 1, None, id="reset"),
]
CALLS = [
    pytest.param(lambda c: c.mail.send(sender="a@example.com", to="b@example.org",
                                       subject="Hi", html="<p>Hi</p>"), id="mail.send"),
    pytest.param(lambda c: c.contacts.create(contact_list_create()), id="contacts.create"),
    pytest.param(lambda c: c.validation.create_job("https://files.example/list.csv"),
                 id="jobs.create"),
]


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize(("answer", "error", "may_have_been_sent", "arrivals", "status"),
                         OUTCOMES)
async def test_an_unsafe_calls_error_says_whether_it_may_have_taken_effect(
        call: Call, answer: Answer, error: type[asyncsdk.SDKError], may_have_been_sent: bool,
        arrivals: int, status: int | None) -> None:
    arrived: list[str] = []

    async def counting(request: web.Request) -> web.StreamResponse:
        arrived.append(request.path)
        return await answer(request)

    async with serve(counting) as url, asyncsdk.Client(
            API_KEY, USERNAME, base_url=url, max_retries=MAX_RETRIES,
            clock=VirtualClock()) as client:
        with pytest.raises(error) as raised:
            await call(client)
    failure: Any = raised.value
    assert len(arrived) == arrivals
    assert failure.may_have_been_sent is may_have_been_sent
    assert failure.operation  # which call, always
    assert failure.status_code == status
    assert failure.request_id == ("rid-1" if isinstance(
        failure, asyncsdk.APIError) else None)
