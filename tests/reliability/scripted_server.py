"""A tiny local server whose answers a test scripts one request at a time: answer now,
stall until released, or send part of a body and stall. Stalls wait on an event, never
on a clock, and are all released when the server stops."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

Script = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ScriptedServer:
    """``scripts[path]`` is consumed in order; the last one repeats."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Script]] = {}
        self.hits: list[web.Request] = []
        self.release = asyncio.Event()
        self.arrived = asyncio.Condition()
        self.base_url = ""

    def on(self, path: str, *scripts: Script) -> None:
        self.scripts[path] = list(scripts)

    def count(self, path: str) -> int:
        return sum(1 for r in self.hits if r.path == path)

    async def wait_for_hits(self, path: str, n: int) -> None:
        """Until ``n`` requests to ``path`` arrived (bounded by the test's own timeout)."""
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: self.count(path) >= n), 10)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request)
        async with self.arrived:
            self.arrived.notify_all()
        queue = self.scripts.get(request.path)
        if not queue:
            return web.json_response({"error": "no script"}, status=404)
        script = queue.pop(0) if len(queue) > 1 else queue[0]
        return await script(request)

    # --- scripts ------------------------------------------------------------------
    def answer(self, data: Any, status: int = 200, headers: dict[str, str] | None = None
               ) -> Script:
        async def script(request: web.Request) -> web.StreamResponse:
            return web.json_response(data, status=status, headers=headers)
        return script

    def stall(self) -> Script:
        """Never answers until the server stops."""
        async def script(request: web.Request) -> web.StreamResponse:
            await self.release.wait()
            return web.json_response({})
        return script

    def partial(self, head: bytes, content_type: str = "text/csv") -> Script:
        """Headers and ``head`` of a longer body, then a stall."""
        async def script(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": content_type})
            response.content_length = len(head) + 1_000_000
            await response.prepare(request)
            await response.write(head)
            await self.release.wait()
            return response
        return script

    def gzip_bomb(self, data: bytes) -> Script:
        """``data`` gzip-compressed, announced with its (small) compressed length."""
        packed = gzip.compress(data, 9)

        async def script(request: web.Request) -> web.StreamResponse:
            return web.Response(body=packed, headers={
                "Content-Type": "application/json", "Content-Encoding": "gzip"})
        return script


@asynccontextmanager
async def scripted_server() -> AsyncIterator[ScriptedServer]:
    server = ScriptedServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server._handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    server.base_url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        server.release.set()
        await runner.cleanup()


#: The attempt bound of tests that stall an attempt on purpose: long enough that opening
#: a connection to 127.0.0.1 fits in it on a loaded machine (CI once took 192 ms), so
#: the attempt that ends is the stalled one; each stalled attempt costs this long.
STALL_TIMEOUT = 0.25
CHECK_PATH = "/api/v1/single/check"
CHECK_OK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}
DOWNLOAD_PATH = "/api/v1/jobs/download"


def dumps(data: Any) -> bytes:
    return json.dumps(data).encode()
