"""A redirect whose ``Location`` echoes the query it was sent (nginx's ``return 301
http://new$request_uri``) carries the credentials the middleware added: DESIGN §3 says
they are taken out of the redirected URL before anything sees it, and added back once,
only where the redirect stays on the call's own origin.

Two real servers on 127.0.0.1 (two ports: two origins); each test failed before the
fix (the other origin received the key, the caller's tools saw it, the same origin got
it twice).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import leaks, serve
from yarl import URL

import asyncsdk
from asyncsdk._core.credentials import without_credential_fields

KEY, USER = "s3cr+t/k&y=Ö", "jo smith"
FOLDED = {name.casefold() for name in asyncsdk.CREDENTIAL_FIELDS}

Call = Callable[[asyncsdk.Client], Awaitable[Any]]


def _check(client: asyncsdk.Client) -> Awaitable[Any]:
    return client.validation.check("a@b.com")


def _list_contacts(client: asyncsdk.Client) -> Awaitable[Any]:
    return client.contacts.list()


#: (a call, the credential fields the interface puts in its query)
AREAS = [
    pytest.param(_check, {"api": KEY, "username": USER}, id="validation"),
    pytest.param(_list_contacts, {"api_key": KEY}, id="contacts"),
]


async def _answer(request: web.Request) -> web.Response:
    if "/contact/" in request.path:
        return web.json_response([])
    return web.json_response({"status": "success", "email": "a@b.com", "result": "Valid",
                              "role": False})


class Arrivals:
    """What a server received: each request's URL, query, headers and body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, Any, dict[str, str], bytes]] = []

    async def record(self, request: web.Request) -> None:
        self.requests.append((str(request.url), request.query.copy(), dict(request.headers),
                              await request.read()))


def _credential_fields(query: Any) -> list[str]:
    return [name for name in query if name.casefold() in FOLDED]


@asynccontextmanager
async def _moved_away(
        target: Callable[[str, web.Request], str],
) -> AsyncIterator[tuple[str, Arrivals, Arrivals]]:
    """Two servers, two origins: the first answers each request with a 301 to
    ``target(the other's base URL, request)``, the other answers it. Yields the first's
    base URL and what each received."""
    first, moved = Arrivals(), Arrivals()

    async def new_home(request: web.Request) -> web.Response:
        await moved.record(request)
        return await _answer(request)

    async with serve(new_home) as other:
        async def old_home(request: web.Request) -> web.Response:
            await first.record(request)
            raise web.HTTPMovedPermanently(target(other, request))

        async with serve(old_home) as base:
            yield base, first, moved


@pytest.mark.parametrize(("call", "fields"), AREAS)
async def test_a_redirect_to_another_origin_echoing_the_query_gets_no_credential(
        call: Call, fields: dict[str, str]) -> None:
    async with _moved_away(lambda other, request: other + request.raw_path) as (
            base, first, moved), asyncsdk.Client(KEY, USER, base_url=base) as client:
        await call(client)  # to other$request_uri
    ((_, sent, _, _),) = first.requests
    assert {name: sent.getall(name) for name in fields} == {k: [v] for k, v in fields.items()}
    ((url, query, headers, body),) = moved.requests
    assert _credential_fields(query) == []
    assert query.get("email", "a@b.com") == "a@b.com"  # the rest of the query followed
    assert "Authorization" not in headers
    assert leaks("\n".join([url, repr(headers), body.decode("latin-1")]), [KEY, USER]) == []


@pytest.mark.parametrize("location", ["absolute", "relative"])
@pytest.mark.parametrize(("call", "fields"), AREAS)
async def test_a_redirect_on_the_same_origin_echoing_the_query_gets_each_credential_once(
        call: Call, fields: dict[str, str], location: str) -> None:
    moved = Arrivals()

    async def home(request: web.Request) -> web.Response:
        if not request.path.startswith("/v2/"):
            target = "/v2" + request.raw_path
            raise web.HTTPMovedPermanently(
                target if location == "relative" else f"{request.url.origin()}{target}")
        await moved.record(request)
        return await _answer(request)

    async with serve(home) as base, asyncsdk.Client(KEY, USER, base_url=base) as client:
        await call(client)
    ((_, query, _, _),) = moved.requests
    assert {name: query.getall(name) for name in _credential_fields(query)} == {
        name: [value] for name, value in fields.items()}


def _seeing_session() -> tuple[aiohttp.ClientSession, list[str]]:
    """A caller's session whose middleware and trace config write down every URL they
    are shown: the request's, the answer's (``url``, ``real_url``, ``request_info``,
    its history) and a redirect's target in the answer's headers."""
    seen: list[str] = []

    def answer(response: aiohttp.ClientResponse) -> None:
        for hop in (*response.history, response):
            info = hop.request_info
            seen.extend([str(hop.url), str(hop.real_url), str(info.url), str(info.real_url),
                         repr(dict(hop.headers)), repr(hop.raw_headers), repr(hop)])

    async def looking(request: aiohttp.ClientRequest,
                      handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        seen.append(str(request.url))
        response = await handler(request)
        seen.append(str(request.url))
        answer(response)
        return response

    async def on_start(_: Any, __: Any, params: aiohttp.TraceRequestStartParams) -> None:
        seen.append(str(params.url))

    async def on_redirect(_: Any, __: Any,
                          params: aiohttp.TraceRequestRedirectParams) -> None:
        seen.append(str(params.url))
        answer(params.response)

    async def on_end(_: Any, __: Any, params: aiohttp.TraceRequestEndParams) -> None:
        seen.append(str(params.url))
        answer(params.response)

    tracer = aiohttp.TraceConfig()
    tracer.on_request_start.append(on_start)
    tracer.on_request_redirect.append(on_redirect)
    tracer.on_request_end.append(on_end)
    return aiohttp.ClientSession(middlewares=(looking,), trace_configs=[tracer]), seen


@pytest.mark.parametrize("same_origin", [True, False], ids=["same-origin", "other-origin"])
@pytest.mark.parametrize(("call", "fields"), AREAS)
async def test_the_callers_middleware_and_trace_config_see_no_credential_on_a_redirect(
        call: Call, fields: dict[str, str], same_origin: bool) -> None:
    async def new_home(request: web.Request) -> web.Response:
        return await _answer(request)

    async with serve(new_home) as other:
        async def home(request: web.Request) -> web.Response:
            if request.path.startswith("/v2/"):
                return await _answer(request)
            where = f"{request.url.origin()}" if same_origin else other
            raise web.HTTPMovedPermanently(f"{where}/v2{request.raw_path}")

        session, seen = _seeing_session()
        async with session, serve(home) as base, \
                asyncsdk.Client(KEY, USER, base_url=base, session=session) as client:
            await call(client)
    joined = "\n".join(seen)
    assert "/v2/" in joined  # they were shown the redirect
    assert leaks(joined, [KEY, USER]) == []
    assert not any(f"{name}=" in joined.casefold() for name in FOLDED)


def _percent_encoded(name: str) -> str:
    return "".join(f"%{ord(c):02X}" for c in name)


@pytest.mark.parametrize("spelled", [str.upper, _percent_encoded])
@pytest.mark.parametrize(("call", "fields"), AREAS)
async def test_a_credential_field_that_reaches_the_middleware_is_never_sent_twice_or_elsewhere(
        call: Call, fields: dict[str, str], spelled: Callable[[str], str]) -> None:
    """The second line of defence: whatever put a credential field in the URL of a call
    that carries credentials (here a caller's middleware copying them into every request,
    as aiohttp would from a ``Location`` read elsewhere than the answer's headers), the
    middleware takes it out before adding the credentials: the call's origin gets each
    once, another origin none. Its name in another letter case or percent-encoded (the
    middleware's quick search must send both to the full check)."""
    async def copying(request: aiohttp.ClientRequest,
                      handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        url = request.url
        copied = "&".join(f"{spelled(name)}={quote(value, safe='')}"
                          for name, value in fields.items())
        query = url.raw_query_string
        request.url = URL.build(scheme=url.scheme, authority=url.raw_authority,
                                path=url.raw_path, encoded=True,
                                query_string=f"{query}&{copied}" if query else copied)
        return await handler(request)

    async with _moved_away(lambda other, request: other + request.path) as (
            base, first, moved), aiohttp.ClientSession(middlewares=(copying,)) as session, \
            asyncsdk.Client(KEY, USER, base_url=base, session=session) as client:
        await call(client)
    ((_, sent, _, _),) = first.requests
    assert {name: sent.getall(name) for name in _credential_fields(sent)} == {
        name: [value] for name, value in fields.items()}
    ((url, query, _, _),) = moved.requests
    assert _credential_fields(query) == [] and leaks(url, [KEY, USER]) == []


@pytest.mark.parametrize(("location", "shown"), [
    ("/v2/x?email=a&api_key=K", "/v2/x?email=a"),
    ("http://h:81/x?API=K&username=U&timeout=30#frag?api=K", "http://h:81/x?timeout=30#frag?api=K"),
    ("/x?api%5Fkey=K&a=%20b&Username", "/x?a=%20b"),
    ("/x?api=K&username=U", "/x"),
    ("/x?apiary=1&user=2&a=api_key", None),
    ("/x", None),
    ("/x#api_key=K", None),
])
def test_without_credential_fields_takes_out_those_fields_only(
        location: str, shown: str | None) -> None:
    """Every field named as a credential (any letter case, percent-encoded), nothing else:
    the rest is kept byte for byte, the fragment untouched."""
    assert without_credential_fields(location) == shown


@pytest.mark.parametrize("copied", [
    pytest.param(lambda: f"api={quote(KEY, safe='')}&username={quote(USER, safe='')}",
                 id="validation-fields"),
    pytest.param(lambda: f"API_KEY={quote(KEY, safe='')}", id="another-case"),
    pytest.param(lambda: f"api%5Fkey={quote(KEY, safe='')}&Username={quote(USER)}",
                 id="percent-encoded-name"),
])
async def test_a_hosted_result_url_echoing_the_credentials_gets_none(
        copied: Callable[[], str]) -> None:
    """jobs/download may answer with the URL of a result hosted elsewhere; a service that
    builds it from the request copies the credentials into it as a ``Location`` would.
    That host, and the caller's middleware and trace configs, get none of them; the rest
    of the URL is kept. (The old code sent the URL as the service wrote it: the other
    host received the key.)"""
    hosted = Arrivals()

    async def host(request: web.Request) -> web.Response:
        await hosted.record(request)
        return web.Response(text="Email,Status,Role Based Emails\na@b.com,Valid,no\n",
                            content_type="text/csv")

    async with serve(host) as other:
        async def service(request: web.Request) -> web.Response:
            return web.json_response(
                {"status": "success", "result": f"{other}/r/7.csv?part=1&{copied()}"})

        session, seen = _seeing_session()
        async with session, serve(service) as base, \
                asyncsdk.Client(KEY, USER, base_url=base, session=session) as client:
            rows = [row async for row in client.validation.job(7).rows()]
    assert [row.email for row in rows] == ["a@b.com"]
    ((url, query, headers, _),) = hosted.requests
    assert _credential_fields(query) == [] and query.getall("part") == ["1"]
    assert leaks("\n".join([url, repr(headers), *seen]), [KEY, USER]) == []
