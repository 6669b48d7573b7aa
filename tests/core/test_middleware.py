"""The library's middleware (``_core.middleware``): credentials are added last, after the
caller's middlewares and trace configs have seen the request; the wire carries them as
the spec says; a redirect to another origin, a hosted result and the caller's own
requests carry none."""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve
from hypothesis import given
from hypothesis import strategies as st

import asyncsdk
from asyncsdk import APIError
from asyncsdk._core.credentials import may_name_a_credential, query_without_credential_fields
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


async def _answer_check(request: web.Request) -> web.Response:
    return web.json_response({"status": "success", "email": "a@b.com", "result": "Valid",
                              "role": False})


async def test_the_answers_request_info_shows_the_request_before_the_credentials() -> None:
    """aiohttp builds ``response.request_info`` below the middleware, from the request
    with the credentials; trace configs (``on_request_end``, ``on_request_redirect``),
    recorders (vcrpy records each hop of a redirect from it) and ``ClientResponseError``
    read it. It shows the URL from before, on every hop; the server got the credentials
    on both (same origin)."""
    arrived: list[web.Request] = []
    infos: list[aiohttp.RequestInfo] = []

    async def redirect_once(request: web.Request) -> web.Response:
        arrived.append(request)
        if request.path.endswith("/check"):
            raise web.HTTPFound("/api/v1/single/moved?email=a@b.com")
        return await _answer_check(request)

    async def on_end(_: Any, __: Any, params: aiohttp.TraceRequestEndParams) -> None:
        infos.append(params.response.request_info)
        infos.extend(hop.request_info for hop in params.response.history)

    async def on_redirect(_: Any, __: Any,
                          params: aiohttp.TraceRequestRedirectParams) -> None:
        infos.append(params.response.request_info)

    tracer = aiohttp.TraceConfig()
    tracer.on_request_end.append(on_end)
    tracer.on_request_redirect.append(on_redirect)
    async with serve(redirect_once) as base, \
            aiohttp.ClientSession(trace_configs=[tracer]) as session, \
            asyncsdk.Client(KEY, USER, base_url=base, session=session) as client:
        await client.validation.check("a@b.com")
    assert [str(i.url.with_host("h").with_port(None)) for i in infos] == [
        "http://h/api/v1/single/check?email=a@b.com&timeout=30",
        "http://h/api/v1/single/moved?email=a@b.com",
        "http://h/api/v1/single/check?email=a@b.com&timeout=30",
    ]
    _clean([repr(i) for i in infos])
    assert [(r.query["api"], r.query["username"]) for r in arrived] == [(KEY, USER)] * 2


async def test_the_callers_own_response_class_is_kept() -> None:
    class Mine(aiohttp.ClientResponse):
        pass

    async with serve(_answer_check) as base, \
            aiohttp.ClientSession(response_class=Mine) as session, \
            asyncsdk.Client(KEY, USER, base_url=base, session=session) as client:
        raw = await client.with_raw_response.validation.check("a@b.com")
        async with session.get(base + "/x") as mine:
            assert type(mine) is Mine  # the caller's own requests: untouched
    assert raw.status_code == 200


async def test_an_error_replaced_by_the_middleware_holds_nothing_of_the_original() -> None:
    """A pool wait that times out: aiohttp's ``ConnectionTimeoutError`` quotes the URL
    with the credentials. What a caller's trace config gets instead has neither that
    text nor the original as ``__cause__`` or ``__context__``."""
    got: list[BaseException] = []
    arrived, release = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        arrived.set()
        await release.wait()
        return web.json_response([])

    async def on_exception(_: Any, __: Any,
                           params: aiohttp.TraceRequestExceptionParams) -> None:
        got.append(params.exception)

    tracer = aiohttp.TraceConfig()
    tracer.on_request_exception.append(on_exception)
    async with serve(slow) as base, aiohttp.ClientSession(
            trace_configs=[tracer], connector=aiohttp.TCPConnector(limit=1)) as session, \
            asyncsdk.Client(KEY, USER, base_url=base, session=session, max_retries=0) as c:
        holding = asyncio.ensure_future(c.contacts.list())  # takes the one connection
        await arrived.wait()
        with pytest.raises(asyncsdk.APITimeoutError, match="connecting"):
            # Waits for it in the pool until its time ends: long enough for a loaded
            # machine to reach the pool first (a shorter one ended before, elsewhere).
            await c.contacts.list(request_timeout=0.5)
        release.set()
        await holding
    (exc,) = got
    assert isinstance(exc, aiohttp.ConnectionTimeoutError)
    assert exc.__cause__ is None and exc.__context__ is None
    _clean([str(exc), repr(exc), "".join(traceback.format_exception(exc))])


async def test_an_answer_aiohttp_cannot_read_raises_with_the_request_before_them() -> None:
    """A malformed answer head: aiohttp raises ``ClientResponseError`` below the
    middleware, with the ``request_info`` of the request with the credentials; a
    caller's trace config gets it with the one from before."""
    got: list[BaseException] = []

    async def malformed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
        await writer.drain()
        writer.close()

    async def on_exception(_: Any, __: Any,
                           params: aiohttp.TraceRequestExceptionParams) -> None:
        got.append(params.exception)

    tracer = aiohttp.TraceConfig()
    tracer.on_request_exception.append(on_exception)
    server = await asyncio.start_server(malformed, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with aiohttp.ClientSession(trace_configs=[tracer]) as session, \
                asyncsdk.Client(KEY, USER, base_url=base, session=session,
                                max_retries=0) as client:
            with pytest.raises(asyncsdk.APIConnectionError):
                await client.contacts.list()
    finally:
        server.close()
        await server.wait_closed()
    (exc,) = got
    assert isinstance(exc, aiohttp.ClientResponseError)
    assert str(exc.request_info.url) == base + "/api/v1/contact/"
    _clean([repr(exc.request_info), str(exc), "".join(traceback.format_exception(exc))])


# The middleware's quick test must never let through a query the full check would clean:
# queries built from credential names in any letter case, percent-encoded or '+'-spelt,
# non-ASCII look-alikes, and other fields around them.
_QUERY_PARTS = st.sampled_from(
    ["api_key", "API_KEY", "Api", "api", "username", "UserName", "api%5Fkey", "%61pi",
     "user+name", "a", "b", "x", "=", "&", "%", "+", "_", "k", "\u212a", "\u0131", "i",
     "p", "e", "ey", "name", "user"])


@given(st.lists(_QUERY_PARTS, max_size=12).map("".join))
def test_the_quick_test_lets_through_no_query_the_full_check_would_clean(
        query: str) -> None:
    if query_without_credential_fields(query) is not None:
        assert may_name_a_credential(query)
