"""The library's middleware (``_core.middleware``): credentials are added last, after the
caller's middlewares and trace configs have seen the request; the wire carries them as
the spec says; a redirect to another origin, a hosted result and the caller's own
requests carry none."""

from __future__ import annotations

import contextlib
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve

import asyncsdk
from asyncsdk import APIError
from asyncsdk._core.middleware import OUTGOING
from asyncsdk.testing import Sandbox

KEY, USER = "k &+=%ä/y", "u?s#er"


def _seeing_session() -> tuple[aiohttp.ClientSession, list[str]]:
    """A caller's session whose middleware and trace config record every URL and body
    they are shown."""
    seen: list[str] = []

    async def looking(request: aiohttp.ClientRequest,
                      handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        seen.append(str(request.url))
        body = request.body
        seen.append(bytes(body._value).decode() if hasattr(body, "_value") else str(body))
        response = await handler(request)
        seen.append(str(request.url))  # after: still none
        return response

    async def on_start(_: Any, __: Any, params: aiohttp.TraceRequestStartParams) -> None:
        seen.append(str(params.url))

    async def on_end(_: Any, __: Any, params: aiohttp.TraceRequestEndParams) -> None:
        seen.append(str(params.url))
        seen.append(repr(params.response))

    tracer = aiohttp.TraceConfig()
    tracer.on_request_start.append(on_start)
    tracer.on_request_end.append(on_end)
    return aiohttp.ClientSession(middlewares=(looking,), trace_configs=[tracer]), seen


def _clean(texts: list[str]) -> None:
    joined = "\n".join(texts)
    for secret in (KEY, USER, "k%20%26", "u%3Fs%23er", "k+%26"):
        assert secret not in joined


@pytest.mark.parametrize("email", ['"a b+c&d=e"@exämple.com', "x%41;y@h.io", "ü+@[IPv6:::1]",
                                   "someone@example.com"])
@pytest.mark.parametrize("validity", [30, 7, 2.5])
async def test_the_service_receives_exactly_what_check_was_given(
        email: str, validity: float) -> None:
    async with Sandbox(api_key=KEY, username=USER) as sb:
        async with sb.client() as client:
            with contextlib.suppress(APIError):  # the sandbox may judge it invalid
                await client.validation.check(email, validity_timeout=validity)
        (seen,) = sb.requests
    assert seen.query == {"email": email, "timeout": str(validity), "api": KEY,
                          "username": USER}


async def test_what_the_callers_tools_see_carries_no_credential() -> None:
    """A caller's middleware and trace config see every request of every area (query
    and form) without credentials, before and after it is sent; the service gets them."""
    session, seen = _seeing_session()
    async with session, Sandbox(api_key=KEY, username=USER, demo_data=True) as sb, \
            sb.client(session=session) as client:
        await client.validation.check("a@example.com")
        await client.contacts.list()
        await client.mail.send(sender="me@example.com", to="you@example.org",
                               subject="hi", html="<p>hi</p>")
        got = sb.requests
    assert len(seen) >= 3 * 5
    _clean(seen)
    assert [r.query.get("api") for r in got[:1]] == [KEY]
    assert got[1].query.get("api_key") == KEY
    assert got[-1].form.get("api") == KEY and got[-1].form.get("username") == USER


async def test_no_credential_on_a_redirect_to_another_origin() -> None:
    arrived: list[web.Request] = []

    async def elsewhere(request: web.Request) -> web.Response:
        arrived.append(request)
        return web.json_response({"status": "success", "email": "a@b.com",
                                  "result": "Valid", "role": False})

    async with serve(elsewhere) as other:
        async def redirect(request: web.Request) -> web.Response:
            arrived.append(request)
            raise web.HTTPFound(other.replace("127.0.0.1", "localhost") + "/landing")

        async with serve(redirect) as base, asyncsdk.Client(KEY, USER, base_url=base) as c:
            await c.validation.check("a@b.com")
    first, landed = arrived
    assert first.query["api"] == KEY
    assert "api" not in landed.query and "username" not in landed.query
    assert KEY not in str(landed.url)


async def test_the_callers_own_requests_through_the_session_get_no_credential() -> None:
    """The mark is the library's own: a request the caller makes on the same session,
    even to the service's host, is sent as the caller wrote it."""
    seen: list[web.Request] = []

    async def record(request: web.Request) -> web.Response:
        seen.append(request)
        return web.json_response({"status": "success", "email": "a@b.com",
                                  "result": "Valid", "role": False})

    async with serve(record) as base, aiohttp.ClientSession() as session, \
            asyncsdk.Client(KEY, USER, base_url=base, session=session) as client:
        await client.validation.check("a@b.com")
        async with session.get(base + "/api/v1/single/check", params={"x": "1"}) as r:
            await r.read()
    assert seen[0].query["api"] == KEY
    assert dict(seen[1].query) == {"x": "1"}
    assert OUTGOING.get() is None  # nothing of a call is left marked
