"""The life of one ``Client`` as its users live it (a web backend sharing one client,
bulk workers, bots): made, entered, shared, copied, given a session, closed. Every
misuse ends in a clear ``SDKError`` (or Python's own ``TypeError`` where an operation is
unsupported) before anything is sent, never in a cryptic aiohttp error or a hang, and
nothing of the caller's is closed or cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import aiohttp
import pytest

import asyncsdk
from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox


@pytest.fixture
def served() -> Iterator[Sandbox]:
    with threaded_sandbox() as sb:
        yield sb


# --- a caller's session -----------------------------------------------------------------
async def _new_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession()


def test_a_callers_session_of_another_event_loop_is_refused_before_anything_is_sent(
        served: Sandbox) -> None:
    """aiohttp failed deep inside ("Event loop is closed", "Timeout context manager
    should be used inside a task"): a RuntimeError naming neither the client nor the
    session. Now a ``UsageError`` says which, and the session is left as it was."""
    other = asyncio.new_event_loop()
    session = other.run_until_complete(_new_session())
    try:
        client = served.client(session=session)

        async def call() -> None:
            await client.validation.check("ann@example.com")

        with pytest.raises(asyncsdk.UsageError, match="session given to Client belongs to "
                                                      "another event loop"):
            asyncio.run(call())
        assert served.requests == [] and not session.closed
        # In its own loop the same session serves the same client.
        result = other.run_until_complete(client.validation.check("ann@example.com"))
        assert result.result is asyncsdk.Verdict.VALID
        other.run_until_complete(client.close())
        assert not session.closed
    finally:
        other.run_until_complete(session.close())
        other.close()
