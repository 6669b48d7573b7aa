"""A ``Client`` dropped without ``close()`` says so itself (issue 29, item 2): one
``ResourceWarning`` naming ``asyncsdk.Client`` and how to close it, without a
credential. Before, a client in a reference cycle (``with_raw_response`` makes one) was
collected with its session in one pass, and when aiohttp's connector was finalised
first (it closes itself as it warns), the client judged its session closed and said
nothing: only aiohttp's "Unclosed client session" / "Unclosed connector" remained."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve

import asyncsdk
from asyncsdk.testing import Sandbox

KEY = "k3y-Zq9/sekret=="
USER = "ursula.user"
CHECK_OK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}


def dropped_unclosed(use: Callable[[asyncsdk.Client], Awaitable[Any]]) -> list[str]:
    """The warnings of a client that made its calls (``use``) and was dropped unclosed:
    the texts of those naming the client (the session itself is then closed cleanly)."""
    sessions: list[aiohttp.ClientSession] = []

    async def main() -> None:
        async with Sandbox(api_key=KEY, username=USER) as sb:
            client = sb.client()
            await use(client)
            session = client._session
            assert session is not None
            sessions.append(session)
            del client
            gc.collect()
            await session.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    assert sessions and sessions[0].closed
    shown = [warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
             for w in caught]
    for text in shown:
        assert KEY not in text and USER not in text, text
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
            and "asyncsdk.Client" in str(w.message)]


def says_how_to_close(ours: list[str]) -> None:
    assert len(ours) == 1, ours
    assert "unclosed asyncsdk.Client" in ours[0]
    assert "await client.close()" in ours[0] and "async with" in ours[0]


def test_a_client_in_a_reference_cycle_warns_when_dropped() -> None:
    async def use(client: asyncsdk.Client) -> None:
        await client.with_raw_response.contacts.list()  # the client now in a cycle
        await client.validation.check("ada@example.org")

    says_how_to_close(dropped_unclosed(use))


def test_a_client_warns_whatever_aiohttp_finalised_before_it() -> None:
    """In one collection the order of finalisers is not the program's: the session's
    connector may be finalised (closing itself) before the client. The cycle above
    met that order only now and then; here it is made certain (the regression test:
    it failed before the fix)."""
    async def use(client: asyncsdk.Client) -> None:
        await client.contacts.list()
        session = client._session
        assert session is not None and session.connector is not None
        await session.connector.close()  # as the connector's finaliser does

    says_how_to_close(dropped_unclosed(use))


def test_a_plain_dropped_client_warns_once() -> None:
    async def use(client: asyncsdk.Client) -> None:
        await client.contacts.list()
        await client.leads.list()

    says_how_to_close(dropped_unclosed(use))


# --- issue 38, item 8: dropped with a call in flight ----------------------------------------
CALLS: dict[str, Callable[[asyncsdk.Client], Awaitable[Any]]] = {
    "contacts.list": lambda c: c.contacts.list(),
    "raw contacts.list": lambda c: c.with_raw_response.contacts.list(),
    "raw validation.check": lambda c: c.with_raw_response.validation.check("a@b.com"),
}


def _dropped(call: Callable[[asyncsdk.Client], Awaitable[Any]], how: str) -> list[str]:
    """Every ``ResourceWarning`` (ours and aiohttp's) of a client dropped unclosed while
    ``call`` is held by the server (``how``: its task then ``cancelled`` or
    ``abandoned``), or once it was answered (``idle``); the collector runs only after
    the loop (a client kept alive by a reference cycle would be found only then, its
    connections already released with the loop, and say nothing)."""
    async def main() -> None:
        asked, release = asyncio.Event(), asyncio.Event()

        async def held(request: web.Request) -> web.Response:
            asked.set()
            if how != "idle":
                await release.wait()
            return web.json_response([] if "contact" in request.path else CHECK_OK)

        async with serve(held) as base:
            client = asyncsdk.Client(KEY, USER, base_url=base)
            task = asyncio.ensure_future(call(client))
            await asked.wait()
            if how == "cancelled":
                task.cancel()
            if how == "idle":
                await task
            del client
            release.set()
            await asyncio.gather(task, return_exceptions=True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize("how", ["cancelled", "abandoned", "idle"])
@pytest.mark.parametrize("name", list(CALLS))
def test_a_client_dropped_with_a_call_in_flight_warns_once(name: str, how: str) -> None:
    """Before: a client that had used ``with_raw_response`` (kept on it, so the client
    was in a reference cycle) and was dropped, a call in flight or not, said nothing:
    it was collected after its loop had released the connections."""
    says_how_to_close(_dropped(CALLS[name], how))
