"""Constants and small fakes shared by the tests."""

from __future__ import annotations

import asyncio
import json
import random as _random
import ssl
import time
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiohttp import web

import asyncsdk
from asyncsdk._core.credentials import Credentials
from asyncsdk._core.policy import key_fingerprint
from asyncsdk._core.session import SessionOwner
from asyncsdk._core.transport import Transport, make_transport
from asyncsdk.resources._areas import Area

API_KEY = "sk_live_SECRET_key_0123456789"
USERNAME = "secret-user-name"
BASE = "https://api.test"

#: Public test corpora of other projects, beside the repository (``../shared/
#: peer-corpora``, see its SOURCES.md: one source states no licence, so they are read in
#: place, not copied here). The tests that read them are skipped where it is absent: a
#: checkout of this repository alone still runs the rest.
CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "peer-corpora"
needs_corpora = pytest.mark.skipif(
    not CORPORA.is_dir(), reason="the peer corpora are not beside the repository "
    "(../shared/peer-corpora)")


def corpus_json(relative: str, default: Any) -> Any:
    """A JSON file of the corpora, or ``default`` where they are absent."""
    path = CORPORA / relative
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else default


def rows_of(pieces: list[str]) -> list[Any]:
    """The ``EmailRow``s that ``rows()`` makes of CSV text arriving in ``pieces`` (its
    hot loop, ``_rows.email_rows``, driven without a server); a malformed text raises
    the ``StreamDecodeError`` itself."""
    from asyncsdk.resources.validation.rows import email_rows

    async def texts() -> AsyncGenerator[str, None]:
        for piece in pieces:
            yield piece

    async def collect() -> list[Any]:
        return [row async for row in email_rows(texts(), lambda error: error)]

    return asyncio.run(collect())


@asynccontextmanager
async def tls_server(
    ca: trustme.CA, listing: list[dict[str, Any]] | None = None,
) -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTPS server on 127.0.0.1 with a certificate from ``ca``, answering
    ``/api/v1/contact/`` with ``listing`` (one list by default); yields the base URL and
    the paths it was asked for."""
    seen: list[str] = []
    answer = [{"id": 1, "name": "Newsletter"}] if listing is None else listing

    async def contacts(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.json_response(answer)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    app = web.Application()
    app.router.add_get("/api/v1/contact/", contacts)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}", seen
    finally:
        await runner.cleanup()


def trusting(ca: trustme.CA) -> ssl.SSLContext:
    """A client TLS context that trusts ``ca``."""
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


class SkippedSleeps:
    """A clock (``Client(clock=...)``) on real time whose sleeps return at once, recorded
    in ``sleeps``. ``counted``: its time runs ahead by the sleeps it skipped, so that a
    call's budget ends after the waits it skipped (a bulk call's 429s are sent again
    until the budget ends, not ``max_retries``); else the sleeps cost no time at all.
    ``random``: the jitter (None: ``random.random``)."""

    def __init__(self, *, counted: bool = True, random: float | None = None) -> None:
        self.counted = counted
        self.fixed = random
        self.skipped = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return time.monotonic() + self.skipped

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.counted:
            self.skipped += max(0.0, seconds)
        await asyncio.sleep(0)

    def random(self) -> float:
        return _random.random() if self.fixed is None else self.fixed


class Sleeper(SkippedSleeps):
    """A clock whose sleeps, while ``long``, signal ``sleeping`` and last ``hold``
    seconds at least (for real: only ``close()`` or a cancellation ends them); else
    they are skipped."""

    def __init__(self, hold: float = 10.0) -> None:
        super().__init__(counted=False)
        self.hold = hold
        self.sleeping = asyncio.Event()
        self.long = False

    async def sleep(self, seconds: float) -> None:
        if not self.long:
            await super().sleep(seconds)
            return
        self.sleeping.set()
        await asyncio.sleep(max(seconds, self.hold))


@asynccontextmanager
async def engine_of(clock: Any, base: str = BASE, **settings: Any) -> AsyncIterator[Transport]:
    """The engine alone, composed from its parts as a ``Client`` composes it (for the
    core's own tests: operations of their own, ``CallOptions`` built by hand), on
    ``clock``; closed on exit. ``settings``: ``timeout``, ``max_retries``,
    ``attempt_timeout``."""
    owner = SessionOwner(settings.pop("session", None), max_connections=100,
                         trust_env=False)
    engine = make_transport(
        credentials=Credentials(api_key=API_KEY, username=USERNAME),
        base_urls=dict.fromkeys(Area, base), sessions=owner, clock=clock,
        timeout=settings.pop("timeout", 60.0), max_retries=settings.pop("max_retries", 2),
        **settings)
    try:
        yield engine
    finally:
        await owner.close()


def paced_in_flight(client: asyncsdk.Client, area: Area = Area.VALIDATION) -> int:
    """The attempts ``client``'s pace of ``area`` let out and has not heard of (0 once
    every place in its window is given back). White-box: the client's table of paces."""
    return client._paces.pace(key_fingerprint(API_KEY), area.argument).in_flight


class TokenBucket:
    """A validation service that takes ``rate`` checks a second (a burst of ``burst``)
    and answers 429 with ``retry_after`` when it has no token: a real limit, in real
    time. ``first`` and ``last``: when the first check came and the last was taken."""

    def __init__(self, rate: float, burst: int, retry_after: str) -> None:
        self.rate, self.burst, self.retry_after = rate, burst, retry_after
        self.tokens, self.at = float(burst), time.monotonic()
        self.answered: Counter[str] = Counter()
        self.limited = 0
        self.first = self.last = 0.0

    async def handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        self.first = self.first or now
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            self.limited += 1
            return web.json_response({"detail": "slow down"}, status=429,
                                     headers={"Retry-After": self.retry_after})
        self.tokens -= 1
        self.last = now
        email = request.query["email"]
        self.answered[email] += 1
        return web.json_response({"email": email, "status": "success", "result": "Valid",
                                  "role": False})
