"""What users of openai-python and stripe-python reach for on the client:
``with_options(...)`` (a copy with other settings, sharing the connection pool; who
closes what), the configured URLs and settings readable, and a client used once under
``asyncio.run`` that is closed afterwards, from a later loop, without a
``ResourceWarning``."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Iterator

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve

import asyncsdk
from asyncsdk.testing import Sandbox, VirtualClock
from asyncsdk.testing.plugin import threaded_sandbox

CHECK_OK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}


# --- with_options -------------------------------------------------------------------------
async def test_a_copy_has_its_own_settings_and_shares_the_pool(sandbox: Sandbox) -> None:
    async with sandbox.client(max_retries=2, clock=VirtualClock()) as client:
        patient = client.with_options(timeout=300, attempt_timeout=50, max_retries=0)
        assert (patient.timeout, patient.attempt_timeout, patient.max_retries) == (300, 50, 0)
        assert (client.timeout, client.attempt_timeout, client.max_retries) == (60, None, 2)
        await patient.validation.check("ann@example.com")  # the copy's call makes the pool
        assert patient._session is client._session is not None
        await client.validation.check("ann@example.com")
        sandbox.faults.status("/api/v1/single/check", 503, times=1)
        with pytest.raises(asyncsdk.ServerError):  # no retry on the copy
            await patient.validation.check("bob@example.com")
        assert len(sandbox.requests) == 3
        sandbox.faults.status("/api/v1/single/check", 503, times=1)
        await client.validation.check("bob@example.com")  # retried on the client
        assert len(sandbox.requests) == 5
        connector = client._session.connector if client._session else None
        assert connector is not None and connector.limit == 100  # one pool


async def test_a_copy_with_another_account_and_base_url(sandbox: Sandbox) -> None:
    sandbox.add_account("k-two", "user-two")
    seen: list[web.Request] = []

    async def elsewhere(request: web.Request) -> web.Response:
        seen.append(request)
        return web.json_response(CHECK_OK)

    async with serve(elsewhere) as other, sandbox.client() as client:
        two = client.with_options(api_key="k-two", username="user-two")
        await two.validation.check("ann@example.com")
        await client.validation.check("ann@example.com")
        assert [r.query["api"] for r in sandbox.requests] == ["k-two", sandbox.api_key]
        moved = client.with_options(validation_url=other)
        await moved.validation.check("ann@example.com")
        assert seen[0].query["api"] == sandbox.api_key
        assert moved.validation_url == other and moved.contacts_url == client.contacts_url
        assert client.with_options(base_url=other).contacts_url == other


async def test_closing_a_copy_releases_nothing_shared() -> None:
    arrived, release = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        if request.query.get("email") == "slow@b.com":
            arrived.set()
            await release.wait()
        return web.json_response(CHECK_OK)

    async with serve(slow) as base, asyncsdk.Client("k", "u", base_url=base) as client:
        copy = client.with_options(max_retries=0)
        stuck = asyncio.ensure_future(copy.validation.check("slow@b.com"))
        await arrived.wait()
        await copy.close()  # ends the copy's call in flight, at once
        with pytest.raises(asyncsdk.APIConnectionError, match="closed"):
            await stuck
        release.set()
        assert copy.closed and not client.closed
        with pytest.raises(asyncsdk.UsageError, match="closed"):
            await copy.validation.check("a@b.com")
        await client.validation.check("a@b.com")  # the client and its pool go on
        session = client._session
        assert session is not None and not session.closed
    assert session.closed


async def test_closing_the_client_closes_its_copies_and_releases_the_pool() -> None:
    async with serve(_ok) as base:
        client = asyncsdk.Client("k", "u", base_url=base)
        copy = client.with_options(timeout=5)
        copy_of_copy = copy.with_options(max_retries=0)
        await copy_of_copy.validation.check("a@b.com")
        session = client._session
        await client.close()
        assert copy.closed and copy_of_copy.closed and session is not None and session.closed
        with pytest.raises(asyncsdk.UsageError, match="closed"):
            await copy.validation.check("a@b.com")
        later = client.with_options()
        assert later.closed  # a copy of a closed client is closed


async def _ok(_: web.Request) -> web.Response:
    return web.json_response(CHECK_OK)


async def test_a_copy_of_a_client_on_your_session_uses_it_with_its_middlewares() -> None:
    seen: list[str] = []

    async def mine(request: aiohttp.ClientRequest,
                   handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        seen.append(request.url.path)
        return await handler(request)

    async with serve(_ok) as base, \
            aiohttp.ClientSession(middlewares=(mine,)) as session:
        client = asyncsdk.Client("k", "u", base_url=base, session=session)
        copy = client.with_options(max_retries=0)
        await copy.validation.check("a@b.com")
        await copy.close()
        await client.close()
        assert not session.closed  # the caller's, as always
    assert seen == ["/api/v1/single/check"]


@pytest.mark.parametrize(("options", "error"), [
    ({"timeout": -1}, asyncsdk.InvalidInputError),
    ({"max_retries": -1}, asyncsdk.InvalidInputError),
    ({"api_key": ""}, asyncsdk.ConfigurationError),
    ({"username": " u"}, asyncsdk.ConfigurationError),
    ({"base_url": "ftp://h"}, asyncsdk.ConfigurationError),
    ({"mail_url": "https://h/?q"}, asyncsdk.ConfigurationError),
])
def test_with_options_refuses_what_client_refuses(options: dict[str, object],
                                                  error: type[Exception]) -> None:
    client = asyncsdk.Client("k", "u", base_url="https://h")
    with pytest.raises(error):
        client.with_options(**options)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.with_options(max_connections=3)  # type: ignore[call-arg]  # the pool's


# --- readable settings --------------------------------------------------------------------
def test_the_urls_are_readable_without_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCSDK_MAIL_URL", "https://mail.example/")
    monkeypatch.delenv("ASYNCSDK_BASE_URL", raising=False)
    client = asyncsdk.Client("k", "u", base_url="https://me:pw@h.example/prefix/",
                             validation_url="https://v.example")
    assert client.base_url == "https://me:REDACTED@h.example/prefix"
    assert client.contacts_url == client.crm_url == client.invoicing_url == client.base_url
    assert client.validation_url == "https://v.example"
    assert client.mail_url == "https://me:REDACTED@h.example/prefix"  # base_url first
    alone = asyncsdk.Client("k", "u", validation_url="https://v.example")
    assert alone.base_url is None and alone.contacts_url is None
    assert alone.mail_url == "https://mail.example"  # its variable
    monkeypatch.setenv("ASYNCSDK_BASE_URL", "https://env.example")
    assert asyncsdk.Client("k").base_url == "https://env.example"


# --- asyncio.run ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served() -> Iterator[Sandbox]:
    with threaded_sandbox() as sb:
        yield sb


def _resource_warnings(run: object) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()  # type: ignore[operator]
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_client_used_under_asyncio_run_closes_afterwards_without_a_warning(
        served: Sandbox) -> None:
    """The pattern of a script: the client made at the top, used in one
    ``asyncio.run``, closed in another. Its connections were released when the first
    loop ended; ``close()`` from the later loop marks it closed."""
    client = served.client()

    def script() -> None:
        result = asyncio.run(client.validation.check("ann@example.com"))
        assert result.result is asyncsdk.Verdict.VALID
        asyncio.run(client.close())

    assert _resource_warnings(script) == []
    assert client.closed


def test_a_client_left_open_after_asyncio_run_leaves_nothing_open(served: Sandbox) -> None:
    def script() -> None:
        client = served.client()
        asyncio.run(client.contacts.list())
        session = client._session
        assert session is not None and session.closed  # released at the loop's end
        del client

    assert _resource_warnings(script) == []


def test_close_from_another_loop_while_the_first_runs_is_refused(served: Sandbox) -> None:
    client = served.client()
    first = asyncio.new_event_loop()
    try:
        first.run_until_complete(client.contacts.list())
        with pytest.raises(asyncsdk.UsageError, match="event loop"):
            asyncio.run(client.close())
        first.run_until_complete(client.close())
    finally:
        first.close()
    assert client.closed
