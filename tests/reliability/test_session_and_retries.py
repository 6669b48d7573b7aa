"""The caller's session is honoured by every call, and attempts are bounded both in
number (``max_retries``, see also tests/test_aiohttp_resend.py) and in time
(``attempt_timeout`` within the call's one ``timeout``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from reliability_helpers import (
    RECIPIENT,
    SENDER,
    contact_list_create,
    instant,
    prepare,
    sandbox,
)
from scripted_server import CHECK_OK, CHECK_PATH, STALL_TIMEOUT, scripted_server

import asyncsdk
import asyncsdk.testing

pytestmark = pytest.mark.skipif(not hasattr(aiohttp, "ClientMiddlewareType"),
                                reason="client middlewares need aiohttp >= 3.12")


async def test_every_call_goes_through_the_callers_session(tmp_path: Path) -> None:
    """Creates, mail.send and jobs/create included: the caller's trace configs see them
    and the caller's middleware signs them (before: a private second session)."""
    traced: list[str] = []

    async def on_start(session: Any, ctx: Any, params: aiohttp.TraceRequestStartParams) -> None:
        traced.append(params.url.path)

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(on_start)

    async def sign(request: aiohttp.ClientRequest, handler: Any) -> aiohttp.ClientResponse:
        request.headers["X-Signed"] = "yes"
        return await handler(request)  # type: ignore[no-any-return]

    async with sandbox() as sb:
        world = prepare(sb, tmp_path)
        async with aiohttp.ClientSession(trace_configs=[trace], middlewares=(sign,),
                                         headers={"X-Team": "t1"}) as session:
            async with sb.client(session=session) as client:
                await client.contacts.create(contact_list_create())
                await client.mail.send(sender=SENDER, to=RECIPIENT, subject="s", html="<p>h")
                await client.validation.create_job(world.file_url)
                await client.validation.check("a@example.com")
                await client.contacts.list()
            assert not session.closed
    paths = ["/api/v1/contact/", "/api/v1/mail/send/", "/api/v1/jobs/create",
             "/api/v1/single/check", "/api/v1/contact/"]
    assert traced == paths
    seen = [r for r in sb.requests if r.path in paths]
    assert len(seen) == len(paths)
    for record in seen:
        headers = {k.lower(): v for k, v in record.headers.items()}
        assert headers.get("x-signed") == "yes", record.path
        assert headers.get("x-team") == "t1", record.path


async def test_a_closed_caller_session_is_an_sdk_error() -> None:
    session = aiohttp.ClientSession()
    client = asyncsdk.Client("k", "u", base_url="http://127.0.0.1:9", session=session)
    await session.close()
    with pytest.raises(asyncsdk.UsageError, match="session"):
        await client.validation.check("a@b.com")  # before: a bare RuntimeError
    await client.close()


async def test_a_stalled_attempt_is_abandoned_and_retried_within_the_budget() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall(), server.answer(CHECK_OK))
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   attempt_timeout=STALL_TIMEOUT, clock=instant()) as client:
            result = await client.validation.check("a@b.com")
        assert result.email == "a@b.com"
        assert server.count(CHECK_PATH) == 2  # before: the first attempt ate the budget


async def test_attempt_timeout_per_call_overrides_the_clients() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall(), server.answer(CHECK_OK))
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=30,
                                   clock=instant()) as client:
            await client.validation.check("a@b.com", attempt_timeout=STALL_TIMEOUT)
        assert server.count(CHECK_PATH) == 2


async def test_an_unsafe_attempt_is_never_abandoned_early() -> None:
    async with scripted_server() as server:
        path = "/api/v1/jobs/create"
        server.on(path, server.stall())
        async with asyncsdk.Client("k", "u", base_url=server.base_url, timeout=0.3,
                                   attempt_timeout=0.01, clock=instant()) as client:
            with pytest.raises(asyncsdk.APITimeoutError) as info:
                await client.validation.create_job("https://files.test/x.csv")
        assert server.count(path) == 1
        assert info.value.may_have_been_sent


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1", True])
def test_attempt_timeout_is_checked(bad: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match="attempt_timeout"):
        asyncsdk.Client("k", base_url="https://h", attempt_timeout=bad)


async def test_the_attempt_timeout_object_is_not_rebuilt_per_call(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[aiohttp.ClientTimeout] = []
    real = aiohttp.ClientTimeout

    def counting(*args: Any, **kwargs: Any) -> aiohttp.ClientTimeout:
        built.append(real(*args, **kwargs))
        return built[-1]

    url = "https://api.test/api/v1/single/check"
    async with asyncsdk.Client("k", "u", base_url="https://api.test") as client:
        with asyncsdk.testing.aioresponses() as mocked:
            mocked.get(f"{url}?email=a%40b.com&timeout=30", payload=CHECK_OK, repeat=True)
            monkeypatch.setattr(aiohttp, "ClientTimeout", counting)
            for _ in range(5):
                await client.validation.check("a@b.com")
            monkeypatch.undo()
            calls = next(iter(mocked.requests.values()))
    assert len(calls) == 5
    assert len(built) <= 1  # before: one per attempt
    # aiohttp bounds the wait for a connection, and a moment later the whole attempt
    assert all(c.kwargs["timeout"].connect == pytest.approx(60.0 / 3) for c in calls)
    assert all(c.kwargs["timeout"].total == pytest.approx(60.0 / 3, abs=0.1) for c in calls)


async def test_a_safe_call_follows_a_redirect_an_unsafe_one_never_does() -> None:
    """A redirect is followed for a request that may be repeated (``check``), and never
    for one that may have had its effect (``mail.send``): the redirected target gets
    nothing, the caller gets the 3xx as an ``APIError``."""
    from aiohttp import web

    def moved(to: str) -> Any:
        async def script(request: web.Request) -> web.StreamResponse:
            return web.Response(status=307, headers={"Location": to})
        return script

    async with scripted_server() as server:
        server.on(CHECK_PATH, moved("/moved/check"))
        server.on("/moved/check", server.answer(CHECK_OK))
        server.on("/api/v1/mail/send/", moved("/moved/mail"))
        server.on("/moved/mail", server.answer({"status": "success", "message": "Send"}))
        async with asyncsdk.Client("k", "u", base_url=server.base_url) as client:
            assert (await client.validation.check("a@b.com")).email == CHECK_OK["email"]
            with pytest.raises(asyncsdk.APIError) as info:
                await client.mail.send(sender="a@b.com", to="c@d.com", subject="s",
                                       html="<p>x</p>")
        assert info.value.status_code == 307
        assert server.count("/moved/check") == 1
        assert server.count("/moved/mail") == 0


@pytest.mark.parametrize("location", ["/api/v1/contact/", "ftp://127.0.0.1/x",
                                      "http://[::1/x"])
async def test_a_redirect_that_cannot_be_followed_is_not_retried(location: str) -> None:
    """A redirect loop (aiohttp's 10 hops) or a redirect to a URL that cannot be fetched
    ends the call after its one attempt: retrying sends the same request into the same
    redirect (before: 3 attempts, 30 requests for a loop with max_retries=2)."""
    async with scripted_server() as server:
        server.on("/api/v1/contact/", server.answer({}, 302, {"Location": location}))
        async with asyncsdk.Client("k", "u", base_url=server.base_url,
                                   max_retries=2, clock=instant()) as client:
            with pytest.raises(asyncsdk.APIConnectionError, match="redirect") as caught:
                await client.contacts.list()
        hops = 10 if location.startswith("/") else 1  # aiohttp stops at its 10th redirect
        assert server.count("/api/v1/contact/") == hops
        assert caught.value.may_have_been_sent
