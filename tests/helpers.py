"""Constants and small fakes shared by the tests."""

from __future__ import annotations

import asyncio
import json
import random as _random
import socket
import ssl
import time
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trustme
from aiohttp import web

from asyncsdk._core.credentials import Credentials
from asyncsdk._core.session import SessionOwner
from asyncsdk._core.transport import Transport, make_transport
from asyncsdk.resources._areas import Area
from asyncsdk.testing import RateLimit, RateLimits

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


@contextmanager
def refused_port() -> Iterator[int]:
    """A port of 127.0.0.1 where every connect is refused, for as long as the block runs.

    The socket stays bound (never listening) until the block ends: a port closed at once
    is free again, and the next server of the same test or of another worker may get it
    (a request meant to be refused was answered 200 in CI)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


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


class TokenBucket:
    """A validation service that takes ``rate`` checks a second per key (a burst of
    ``burst``) and answers 429 with ``retry_after`` (seconds; None: no header) when the
    key has no token: the sandbox's limit (``asyncsdk.testing.RateLimits``, the one
    bucket of the tests, the benchmark and users' tests) behind a bare check handler, in
    real time. ``answered``: the checks answered, by address; ``limited``: the 429s."""

    def __init__(self, rate: float, burst: int, retry_after: float | str | None) -> None:
        wait = None if retry_after is None else float(retry_after)
        self.limits = RateLimits(RateLimit(rate, burst, retry_after=wait))
        self.answered: Counter[str] = Counter()

    @property
    def limited(self) -> int:
        return self.limits.stats().refused

    async def handle(self, request: web.Request) -> web.Response:
        key = request.query.get("api", "")
        refusal = self.limits.admit(key)
        if refusal is not None:
            wait = refusal.retry_after
            headers = {} if wait is None else {"Retry-After": f"{wait:g}"}
            return web.json_response({"detail": "slow down"}, status=429, headers=headers)
        try:
            email = request.query["email"]
            self.answered[email] += 1
            return web.json_response({"email": email, "status": "success",
                                      "result": "Valid", "role": False})
        finally:
            self.limits.release(key)


def same_all_the_way_down(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (an enum is not its plain value; an
    error is the same class with the same text)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(same_all_the_way_down(getattr(a, f.name), getattr(b, f.name))
                   for f in attrs.fields(type(a)))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same_all_the_way_down, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_all_the_way_down(a[k], b[k]) for k in a)
    if isinstance(a, BaseException):
        return str(a) == str(b)
    return bool(a == b)


def watch_decoding_as_parsed(monkeypatch: pytest.MonkeyPatch,
                             answer: Any = None) -> tuple[list[int], list[int]]:
    """Spies on a big listing read with ``listing.builders``: ``parsed[0]``, the
    characters the big-answer reader has parsed so far (counted where a parse succeeds:
    the scanner, and the runs of ``answer._run_loads()`` when ``answer``, the
    ``_core.answer`` module, is given); ``seen``, that count when each ``Contact`` was
    decoded."""
    from asyncsdk._serde import big_json, listing
    from asyncsdk.models.contacts import Contact

    parsed, seen = [0], []
    real_scan, real_decode = big_json._scan, listing.decode

    def scan(text: str, pos: int) -> tuple[Any, int]:
        item, end = real_scan(text, pos)
        parsed[0] += end - pos
        return item, end

    def decode(data: Any, model: Any) -> Any:
        if model is Contact:
            seen.append(parsed[0])
        return real_decode(data, model)

    monkeypatch.setattr(big_json, "_scan", scan)
    monkeypatch.setattr(listing, "decode", decode)
    if answer is not None:
        run_loads = answer._run_loads()

        def parse_run(text: str) -> Any:
            items = run_loads(text)
            parsed[0] += len(text)
            return items

        monkeypatch.setattr(answer, "_run_loads",
                            lambda: None if run_loads is None else parse_run)
    return parsed, seen
