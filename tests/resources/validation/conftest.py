"""Fixtures of the validation and mail tests: a real aiohttp.web server on 127.0.0.1
whose routes each test programs, and a client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from helpers import API_KEY, USERNAME
from validation_tools import LocalServer

import asyncsdk
import asyncsdk.testing


@pytest.fixture
async def local() -> AsyncIterator[LocalServer]:
    server = LocalServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.dispatch)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    sockets = site._server.sockets  # type: ignore[union-attr]
    server.url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


@pytest.fixture
async def local_client(local: LocalServer, clock: asyncsdk.testing.VirtualClock
                       ) -> AsyncIterator[asyncsdk.Client]:
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=local.url, clock=clock) as c:
        yield c
