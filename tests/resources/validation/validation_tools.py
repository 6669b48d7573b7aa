"""Helpers shared by the validation and mail tests."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class LocalServer:
    """An aiohttp.web app on a free port; ``routes[path] = handler`` programs it."""

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.requests: list[web.Request] = []
        self.url = ""

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        handler = self.routes.get(request.path)
        if handler is None:
            return web.json_response({"detail": "no route"}, status=404)
        return await handler(request)

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)



def url_of(path: str) -> re.Pattern[str]:
    """A pattern matching ``https://api.test<path>`` with any query."""
    return re.compile(r"^https://api\.test" + re.escape(path) + r"(\?.*)?$")


def other_tasks() -> set[asyncio.Task[Any]]:
    """The tasks of this test's client side (the local server's own tasks left out)."""
    def server_side(task: asyncio.Task[Any]) -> bool:
        code = getattr(task.get_coro(), "cr_code", None)
        return code is not None and "aiohttp/web_" in code.co_filename
    return {t for t in asyncio.all_tasks()
            if t is not asyncio.current_task() and not server_side(t)}


def streaming(body: bytes, content_type: str, piece: int = 7,
              disposition: str | None = None, status: int = 200) -> Handler:
    """A handler that streams ``body`` in pieces of ``piece`` bytes (with ``status``)."""
    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=status)
        response.content_type = content_type
        if disposition:
            response.headers["Content-Disposition"] = disposition
        await response.prepare(request)
        for i in range(0, len(body), piece):
            await response.write(body[i:i + piece])
            await asyncio.sleep(0)
        await response.write_eof()
        return response
    return handle


def stalling(body: bytes, started: asyncio.Event) -> Handler:
    """A handler that sends ``body`` as CSV, sets ``started``, and never ends."""
    async def stall(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "text/csv"
        await response.prepare(request)
        await response.write(body)
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")
    return stall
