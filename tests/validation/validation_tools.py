"""Helpers shared by the validation and mail tests."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

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
