"""The rate-limited service of the pace benchmark (issue 31), in its own process:
``python -m benchmarks.pace_server [--cpu N]`` prints ``PORT <n>`` and serves on
127.0.0.1 until terminated.

``GET /api/v1/single/check?email=...&api=KEY`` asks KEY's token bucket: the sandbox's own
(``asyncsdk.testing.RateLimits``: ``rate`` tokens a second, ``burst`` at most, a key
starts full; at most ``max_in_flight`` checks of a key at once when set). Let through,
the check is answered after ``service`` seconds; refused, at once ``429`` (``Retry-After:
<retry_after>``, or no header when ``retry_after`` is null or the cap in flight refused
it). The limit may drop: ``drop = [at, length, factor]`` multiplies the rate by
``factor`` from ``at`` seconds after the run's first request, for ``length`` seconds.
A lean server of its own, not the sandbox: it answers nothing else, records only its
log, and keeps the machine's CPU for the clients.

``POST /control/setup`` (JSON ``{rate, burst, service, retry_after, drop,
max_in_flight}``) starts a run afresh (buckets full, log empty); ``GET /control/log``
gives the run's log: one ``[seconds since its first request, key, email, taken]`` per
request, in order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from aiohttp import web

from asyncsdk.testing import RateLimit, RateLimits, Refusal

from ._common import pin

JSON = "application/json"


class Limiter:
    """One run: the sandbox's buckets by key (their limit changed as ``drop`` says), and
    the run's log."""

    def __init__(self, rate: float = 500.0, burst: int = 50, service: float = 0.02,
                 retry_after: str | float | None = "1", drop: list[float] | None = None,
                 max_in_flight: int | None = None) -> None:
        self.base = RateLimit(float(rate), int(burst),
                              None if retry_after is None else float(retry_after),
                              max_in_flight)
        self.service = service
        self.drop = drop
        # The limits' clock is the run's: a change applies at its own moment (the end of
        # a blackout refills from then, not from the next request, which it refused).
        self.now = time.monotonic()
        self.limits = RateLimits(self.base, clock=lambda: self.now)
        self._changed = 0  # the drop's changes applied (its start, its end)
        self.log: list[list[Any]] = []
        self.start: float | None = None

    def limit(self, since: float) -> RateLimit:
        """The limit ``since`` seconds into the run."""
        if self.drop is not None:
            at, length, factor = self.drop
            if at <= since < at + length:
                return RateLimit(self.base.rate * factor, self.base.burst,
                                 self.base.retry_after, self.base.max_in_flight)
        return self.base

    def _change_until(self, since: float) -> None:
        """Apply the drop's changes due by ``since``, each at its moment (tokens until
        then refilled at the rate before)."""
        if self.drop is None or self.start is None:
            return
        at, length, _ = self.drop
        moments = (at, at + length)
        while self._changed < len(moments) and moments[self._changed] <= since:
            moment = moments[self._changed]
            self.now = self.start + moment
            self.limits.set(self.limit(moment))
            self._changed += 1

    def take(self, key: str, email: str) -> Refusal | None:
        """Ask ``key``'s bucket; None: let through (``release(key)`` once answered)."""
        now = time.monotonic()
        if self.start is None:
            self.start = now
        since = now - self.start
        self._change_until(since)
        self.now = now
        refusal = self.limits.admit(key)
        self.log.append([round(since, 6), key, email, refusal is None])
        return refusal


def build_app() -> web.Application:
    state = {"limiter": Limiter()}

    async def check(request: web.Request) -> web.Response:
        limiter = state["limiter"]
        email = request.query.get("email", "")
        key = request.query.get("api", "")
        refusal = limiter.take(key, email)
        if refusal is not None:
            wait = refusal.retry_after
            headers = {} if wait is None else {"Retry-After": f"{wait:g}"}
            return web.Response(body=b'{"detail": "rate limited"}', status=429,
                                content_type=JSON, headers=headers)
        try:
            await asyncio.sleep(limiter.service)
        finally:
            limiter.limits.release(key)
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
    try:
        # debug=False, not PYTHONASYNCIODEBUG=0: any non-empty value of it turns debug on.
        asyncio.run(serve(args.port), debug=False)
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(0)


if __name__ == "__main__":
    main()
