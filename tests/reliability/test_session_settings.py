"""A caller's session whose settings change what aiohttp hands back — ``raise_for_status``
(a bool or a coroutine) and ``auto_decompress=False`` — changes nothing the library
returns or raises: every operation, under the faults that end in a typed error, ends
exactly as it does on the client's own session, after as many requests.

Before: a 404 or 5xx through a ``raise_for_status=True`` session was aiohttp's
``ClientResponseError`` wrapped as ``APIConnectionError`` (the service's text lost, the
wrong class, and retried as a dropped connection), and a gzip answer through an
``auto_decompress=False`` session was a ``ResponseDecodeError``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from reliability_helpers import MAX_RETRIES, OPS, SHAPE_OPS, Op, World, instant, prepare, sandbox
from scripted_server import CHECK_PATH, DOWNLOAD_PATH, dumps, scripted_server

import asyncsdk
from asyncsdk.testing import Faults


async def _refuse(response: aiohttp.ClientResponse) -> None:
    """A caller's ``raise_for_status`` coroutine: raises for anything not 2xx."""
    if not 200 <= response.status < 300:
        raise RuntimeError(f"the caller's check refused {response.status}")


SESSIONS: dict[str, Callable[[], aiohttp.ClientSession]] = {
    "raise_for_status": lambda: aiohttp.ClientSession(raise_for_status=True),
    "raise_for_status_coroutine": lambda: aiohttp.ClientSession(raise_for_status=_refuse),
    "no_auto_decompress": lambda: aiohttp.ClientSession(auto_decompress=False),
}

Inject = Callable[[Faults, str, str], Any]
#: Failures that end in an ``APIError`` of a status (retried or not, per operation).
FAULTS: dict[str, Inject] = {
    "http500": lambda f, path, m: f.status(path, 500, None, method=m),
    "http503_once": lambda f, path, m: f.status(path, 503, 1, method=m, retry_after=0),
    "http429_once": lambda f, path, m: f.rate_limit(path, 1, 1, method=m),
    "html502": lambda f, path, m: f.html_error(path, 502, None, method=m),
    "none": lambda f, path, m: None,
}


async def _outcome(op: Op, fault: str, tmp: Path,
                   session: aiohttp.ClientSession | None) -> tuple[str, int]:
    """What ``op`` ends in under ``fault`` (the error's class, or "ok") and how many
    requests reached its path."""
    tmp.mkdir()
    async with sandbox(**op.options) as sb:
        world: World = prepare(sb, tmp)
        async with sb.client(session=session, max_retries=MAX_RETRIES, clock=instant()) as client:
            op.skip_unless_available(client)
            path = op.target(world)
            FAULTS[fault](sb.faults, path, op.method)
            try:
                await op.call(client, world, None)
                ended = "ok"
            except asyncsdk.SDKError as exc:
                ended = type(exc).__name__
                if isinstance(exc, asyncsdk.APIError) and exc.status_code is not None:
                    ended += f" {exc.status_code}"
            return ended, world.count(op.method, path)


CASES = [pytest.param(op, fault, kind, id=f"{op.name}-{fault}-{kind}")
         for op in (*OPS, *SHAPE_OPS) for fault in FAULTS for kind in SESSIONS
         if not (kind == "no_auto_decompress" and fault != "none")]


@pytest.mark.parametrize(("op", "fault", "kind"), CASES)
async def test_a_callers_session_settings_change_no_outcome(
    op: Op, fault: str, kind: str, tmp_path: Path
) -> None:
    own = await _outcome(op, fault, tmp_path / "own", None)
    async with SESSIONS[kind]() as session:
        theirs = await _outcome(op, fault, tmp_path / "theirs", session)
        assert not session.closed
    assert theirs == own


async def test_a_missing_object_is_not_found_through_a_raise_for_status_session() -> None:
    """The service's own text survives (aiohttp's error would have dropped the body)."""
    async with sandbox() as sb, aiohttp.ClientSession(raise_for_status=True) as session, \
            sb.client(session=session, max_retries=MAX_RETRIES) as client:
        with pytest.raises(asyncsdk.NotFoundError, match="Not found") as caught:
            await client.contacts.get(424242)
    assert sum(1 for r in sb.requests if r.path == "/api/v1/contact/424242/") == 1
    assert caught.value.status_code == 404


@pytest.mark.parametrize("what", ["check", "list", "rows"])
async def test_a_compressed_answer_is_read_through_a_session_without_auto_decompress(
    what: str
) -> None:
    rows = "Email,Name,Status,Role Based Emails\r\nada@example.com,Ada,Valid,False\r\n"
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.gzip_bomb(dumps(
            {"email": "a@b.com", "status": "success", "result": "Valid", "role": False})))
        server.on("/api/v1/contact/", server.gzip_bomb(dumps([])))
        server.on(DOWNLOAD_PATH, server.gzip_bomb(dumps({"status": "success",
                                                          "result": rows})))
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            async with asyncsdk.Client("k", "u", base_url=server.base_url,
                                       session=session) as client:
                if what == "check":
                    assert (await client.validation.check("a@b.com")).email == "a@b.com"
                elif what == "list":
                    assert await client.contacts.list() == []
                else:
                    got = [r async for r in client.validation.job(1).rows()]
                    assert [(r.email, r.name) for r in got] == [("ada@example.com", "Ada")]
            # The caller's own requests still get the session's setting.
            async with session.get(server.base_url + CHECK_PATH) as response:
                assert (await response.read())[:2] == b"\x1f\x8b"
