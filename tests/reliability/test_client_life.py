"""The life of one ``Client`` as its users live it (a web backend sharing one client,
bulk workers, bots): made, entered, shared, copied, given a session, closed. Every
misuse ends in a clear ``SDKError`` (or Python's own ``TypeError`` where an operation is
unsupported) before anything is sent, never in a cryptic aiohttp error or a hang, and
nothing of the caller's is closed or cancelled."""

from __future__ import annotations

import asyncio
import copy
import pickle
import traceback
from collections.abc import Iterator

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve

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



async def test_calls_waiting_on_a_callers_session_it_closes_end_with_an_sdk_error() -> None:
    """The caller closes the session they gave the client while calls wait for one of
    its pooled connections: aiohttp cancels those waits, and that cancellation reached
    the callers' tasks as a bare ``CancelledError`` (a web backend's request handler
    ended as if cancelled). Each call now ends with ``UsageError``; no task is cancelled,
    and each goes on."""
    arrived, release = asyncio.Event(), asyncio.Event()
    queued: list[object] = []
    all_queued = asyncio.Event()

    async def stalled(request: web.Request) -> web.Response:
        arrived.set()
        await release.wait()
        return web.json_response({})

    async def on_queued(*_: object) -> None:
        queued.append(_)
        if len(queued) == 2:
            all_queued.set()

    trace = aiohttp.TraceConfig()
    trace.on_connection_queued_start.append(on_queued)
    async with serve(stalled) as base:
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1),
                                        trace_configs=[trace])
        client = asyncsdk.Client("k", "u", base_url=base, session=session)
        went_on: list[str] = []

        async def caller(name: str) -> BaseException | None:
            try:
                await client.validation.check(f"{name}@example.com")
            except asyncsdk.SDKError as exc:
                await asyncio.sleep(0)  # the task goes on: no cancellation pending
                went_on.append(name)
                return exc
            return None  # pragma: no cover - the session was closed

        tasks = [asyncio.create_task(caller(name)) for name in ("ann", "bob", "cat")]
        await arrived.wait()
        await all_queued.wait()
        await session.close()
        release.set()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()
    assert not [t for t in tasks if t.cancelled()]
    assert all(isinstance(o, asyncsdk.UsageError) and "session given to Client was closed"
               in str(o) for o in outcomes), outcomes
    assert sorted(went_on) == ["ann", "bob", "cat"]

# --- async with ---------------------------------------------------------------------------
async def test_a_client_is_entered_once_and_never_after_its_close(sandbox: Sandbox) -> None:
    """Entered again inside its block, the inner block's end closed the client under the
    outer one (a shared client, under every later request); entered after its close, it
    came back closed, to fail at the next call. Both are refused at the entry."""
    client = sandbox.client()
    async with client as entered:
        assert entered is client
        with pytest.raises(asyncsdk.UsageError, match="already entered"):
            async with client:
                pass  # pragma: no cover - not reached
        result = await client.validation.check("ann@example.com")  # still open
        assert result.result is asyncsdk.Verdict.VALID and not client.closed
    assert client.closed
    with pytest.raises(asyncsdk.UsageError, match="closed"):
        async with client:
            pass  # pragma: no cover - not reached
    closed_first = sandbox.client()
    await closed_first.close()
    with pytest.raises(asyncsdk.UsageError, match="closed"):
        async with closed_first:
            pass  # pragma: no cover - not reached


async def test_a_copy_is_entered_on_its_own_and_not_once_its_parent_closed(
        sandbox: Sandbox) -> None:
    async with sandbox.client() as client:
        copy_of = client.with_options(timeout=30)
        async with copy_of:  # the copy's own block: closes the copy only
            await copy_of.validation.check("ann@example.com")
        assert copy_of.closed and not client.closed
        await client.validation.check("ann@example.com")
        later = client.with_options(timeout=30)
    with pytest.raises(asyncsdk.UsageError, match="closed"):
        async with later:
            pass  # pragma: no cover - not reached


# --- copy, deepcopy, pickle ---------------------------------------------------------------
SECRETS = ("life-key-123", "life-user-456", "life-pass-789")


def _client_with_secrets() -> asyncsdk.Client:
    return asyncsdk.Client(SECRETS[0], SECRETS[1],
                           base_url=f"https://someone:{SECRETS[2]}@api.example.com")


def _text_of(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)) + repr(error.args)


@pytest.mark.parametrize("how", ["copy", "deepcopy", *(f"pickle-{p}" for p in range(6))])
def test_a_client_is_not_copied_or_pickled_and_says_what_to_do(how: str) -> None:
    """``copy.copy`` made a second client on the same session owner: closing it closed
    the first one's pool (``deepcopy`` copied the owner, pool included); pickling failed
    with "Can't pickle local object 'WeakSet...'". Each is now a ``TypeError`` that says
    what to do, and shows no secret."""
    client = _client_with_secrets()
    actions = {"copy": lambda: copy.copy(client), "deepcopy": lambda: copy.deepcopy(client),
               **{f"pickle-{p}": (lambda p=p: pickle.dumps(client, protocol=p))
                  for p in range(6)}}
    with pytest.raises(TypeError) as info:
        actions[how]()
    assert ("with_options" in str(info.value)) if "copy" in how else (
        "make a Client" in str(info.value))
    text = _text_of(info.value) + repr(client)
    assert not [s for s in SECRETS if s in text]



# --- construction -------------------------------------------------------------------------
@pytest.mark.parametrize(("variable", "argument"), [("ASYNCSDK_API_KEY", "api_key"),
                                                    ("ASYNCSDK_USERNAME", "username")])
@pytest.mark.parametrize("bad", [" life-key-123 ", "life-key-123\n", "life\tkey-123"])
def test_a_bad_credential_from_the_environment_names_its_variable(
        monkeypatch: pytest.MonkeyPatch, variable: str, argument: str, bad: str) -> None:
    """The error named the argument alone (``api_key: expected printable text``) for a
    value the caller's code never passed: it now names the variable it came from, and
    the value not at all. Given as an argument, the argument is named alone."""
    monkeypatch.setenv("ASYNCSDK_API_KEY", "k")
    monkeypatch.setenv(variable, bad)
    with pytest.raises(asyncsdk.ConfigurationError) as info:
        asyncsdk.Client(base_url="https://api.example.com")
    assert str(info.value).startswith(f"{argument}, read from {variable}: ")
    assert info.value.field == argument and "key-123" not in _text_of(info.value)
    with pytest.raises(asyncsdk.ConfigurationError) as given:
        asyncsdk.Client(**{"api_key": "k", argument: bad}, base_url="https://api.example.com")
    assert str(given.value).startswith(f"{argument}: ")


@pytest.mark.parametrize("key", [None, ""])
def test_a_copy_without_a_key_is_refused_without_pointing_to_the_environment(
        monkeypatch: pytest.MonkeyPatch, key: str | None) -> None:
    """``with_options(api_key=None)`` said "pass api_key= to Client or set
    ASYNCSDK_API_KEY": a copy reads no variable (set, it changes nothing)."""
    monkeypatch.setenv("ASYNCSDK_API_KEY", "from-the-environment")
    client = asyncsdk.Client("k", "u", base_url="https://api.example.com")
    with pytest.raises(asyncsdk.ConfigurationError) as info:
        client.with_options(api_key=key)  # type: ignore[arg-type]
    assert info.value.field == "api_key" and "ASYNCSDK_API_KEY" not in str(info.value)
    assert "leave api_key out" in str(info.value)
