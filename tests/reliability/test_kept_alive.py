"""DESIGN §3: an operation not safe to repeat (a create, ``mail.send``, ``jobs/create``)
must not ride on a pooled keep-alive connection, where the server may close the
connection just as the request goes out: the request "may have been sent" and cannot be
retried, so the call would fail for nothing (and aiohttp, left alone, would resend a GET
such as ``jobs/create`` by itself).

The server here answers the first request of each connection, keeps it alive, and
closes it without an answer at the next request on it: every request on a reused
connection meets a "stale" connection. On the old code each unsafe call after a listing
failed with ``APIConnectionError`` (``may_have_been_sent=True``); it is now sent on a
fresh connection, answered, and arrives exactly once.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

import pytest
from aiohttp import web
from auth_helpers import serve
from helpers import API_KEY, USERNAME
from reliability_helpers import OPS, Op, World

import asyncsdk

UNSAFE = [op for op in OPS if not op.safe]
ANSWERS: dict[str, Any] = {
    "/api/v1/mail/send/": {"status": "success", "message": "Send", "id": 7},
    "/api/v1/jobs/create": {"status": "success", "job_id": 5},
}


class ClosesKeptAlive:
    """Answers each connection's first request; closes the connection, unanswered, at
    the next one. Counts the requests that arrived, by method and path."""

    def __init__(self) -> None:
        self.served: set[asyncio.BaseTransport] = set()
        self.arrived: Counter[tuple[str, str]] = Counter()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.arrived[request.method, request.path] += 1
        transport = request.transport
        assert transport is not None
        if transport in self.served:  # a kept-alive connection: closed under the request
            transport.close()
            return web.Response()
        self.served.add(transport)
        if request.method == "POST" and request.content_type == "application/json":
            return web.json_response({"id": 3, **await request.json()}, status=201)
        del body
        return web.json_response(ANSWERS.get(request.path, []))


@pytest.mark.parametrize("op", UNSAFE, ids=str)
async def test_an_unsafe_call_is_sent_once_on_a_fresh_connection(op: Op) -> None:
    server = ClosesKeptAlive()
    async with serve(server.handle) as url:
        world = cast(World, SimpleNamespace(file_url=f"{url}/files/list.csv"))
        async with asyncsdk.Client(API_KEY, USERNAME, base_url=url, max_retries=2) as client:
            await client.contacts.list()  # leaves a kept-alive connection in the pool
            await op.call(client, world, None)  # not on that one: answered
            await op.call(client, world, None)  # nor on the one before
            await client.contacts.list()  # the pool is still the safe calls'
    assert server.arrived[op.method, op.path] == 2  # each once: no resend, by anyone


def test_the_fresh_connections_session_is_released_with_the_loop() -> None:
    """A client that only made unsafe calls, never closed, under ``asyncio.run``: the
    session of its fresh connections is released at the loop's end like the pooled one
    (aiohttp would warn of an unclosed session or connector when it is collected)."""
    clients: list[asyncsdk.Client] = []

    async def main() -> None:
        server = ClosesKeptAlive()
        async with serve(server.handle) as url:
            client = asyncsdk.Client(API_KEY, USERNAME, base_url=url)
            clients.append(client)
            mail = next(op for op in UNSAFE if op.name == "mail.send")
            await mail.call(client, cast(World, SimpleNamespace()), None)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
        clients.clear()
        gc.collect()
    assert [str(w.message) for w in caught if "nclosed" in str(w.message)] == []
