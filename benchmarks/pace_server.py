"""The rate-limited service of the pace benchmark (issue 31), in its own process:
``python -m benchmarks.pace_server [--cpu N]`` prints ``PORT <n>`` and serves on
127.0.0.1 until terminated.

``GET /api/v1/single/check?email=...&api=KEY`` takes a token from KEY's bucket (``rate``
tokens a second, ``burst`` at most; a key starts full): with one, it answers the check
after ``service`` seconds; without, at once ``429`` (``Retry-After: <retry_after>``, or
no header when ``retry_after`` is null). The limit may drop: ``drop = [at, length,
factor]`` multiplies the rate by ``factor`` from ``at`` seconds after the run's first
request, for ``length`` seconds.

``POST /control/setup`` (JSON ``{rate, burst, service, retry_after, drop}``) starts a run
afresh (buckets full, log empty); ``GET /control/log`` gives the run's log: one
``[seconds since its first request, key, email, taken]`` per request, in order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

from aiohttp import web

from ._common import pin

JSON = "application/json"


class Limiter:
    """The buckets of one run, by key, and its log."""

    def __init__(self, rate: float = 500.0, burst: int = 50, service: float = 0.02,
                 retry_after: str | None = "1", drop: list[float] | None = None) -> None:
        self.rate, self.burst, self.service = rate, burst, service
        self.retry_after = retry_after
        self.drop = drop
        self.buckets: dict[str, list[float]] = {}  # key -> [tokens, last refill]
        self.log: list[list[Any]] = []
        self.start: float | None = None

    def limit(self, since: float) -> float:
        if self.drop is not None:
            at, length, factor = self.drop
            if at <= since < at + length:
                return self.rate * factor
        return self.rate

    def take(self, key: str, email: str) -> bool:
        now = time.monotonic()
        if self.start is None:
            self.start = now
        since = now - self.start
        bucket = self.buckets.setdefault(key, [float(self.burst), now])
        bucket[0] = min(self.burst, bucket[0] + (now - bucket[1]) * self.limit(since))
        bucket[1] = now
        taken = bucket[0] >= 1
        if taken:
            bucket[0] -= 1
        self.log.append([round(since, 6), key, email, taken])
        return taken


def build_app() -> web.Application:
    state = {"limiter": Limiter()}

    async def check(request: web.Request) -> web.Response:
        limiter = state["limiter"]
        email = request.query.get("email", "")
        if not limiter.take(request.query.get("api", ""), email):
            headers = {"Retry-After": limiter.retry_after} if limiter.retry_after else {}
            return web.Response(body=b'{"detail": "rate limited"}', status=429,
                                content_type=JSON, headers=headers)
        await asyncio.sleep(limiter.service)
        body = json.dumps({"email": email, "status": "success", "result": "Valid",
                           "role": False})
        return web.Response(text=body, content_type=JSON)

    async def setup(request: web.Request) -> web.Response:
        state["limiter"] = Limiter(**await request.json())
        return web.json_response({"ok": True})

    async def log(request: web.Request) -> web.Response:
        return web.json_response({"events": state["limiter"].log})

    app = web.Application()
    app.router.add_get("/api/v1/single/check", check)
    app.router.add_post("/control/setup", setup)
    app.router.add_get("/control/log", log)
    return app


async def serve(port: int) -> None:
    runner = web.AppRunner(build_app(), access_log=None, handle_signals=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"PORT {bound}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=-1, help="pin to this core")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.cpu >= 0:
        pin(args.cpu)
    os.environ.setdefault("PYTHONASYNCIODEBUG", "0")
    try:
        asyncio.run(serve(args.port))
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(0)


if __name__ == "__main__":
    main()
