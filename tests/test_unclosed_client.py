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

import asyncsdk
from asyncsdk.testing import Sandbox

KEY = "k3y-Zq9/sekret=="
USER = "ursula.user"


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
