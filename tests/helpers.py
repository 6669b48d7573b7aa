"""Constants and small fakes shared by the tests."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiohttp import web

import asyncsdk
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


def corpus_json(relative: str, default: Any) -> Any:
    """A JSON file of the corpora, or ``default`` where they are absent."""
    path = CORPORA / relative
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else default


class SleepRecorder:
    """Stands in for asyncio.sleep: records the delays, returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


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


def skipped_but_counted(client: asyncsdk.Client) -> asyncsdk.Client:
    """``client`` with its sleeps made instant but counted: its clock runs that much
    ahead of the real one, so a call's budget ends after the waits it skipped (a bulk
    call's 429s are sent again until the budget ends, not ``max_retries``)."""
    skipped = [0.0]
    real = client._transport.clock

    async def sleep(delay: float) -> None:
        skipped[0] += delay
        await asyncio.sleep(0)

    client._transport.sleep = sleep
    client._transport.clock = lambda: real() + skipped[0]
    return client


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
