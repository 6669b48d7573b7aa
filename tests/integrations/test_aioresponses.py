"""aioresponses (the real package) through ``asyncsdk.testing.aioresponses``, the mock
the library ships for its users: it works on the installed aiohttp (aioresponses 0.7.x
alone cannot build a response for aiohttp 3.14), a mocked URL is written without
credentials, and what the mock records of every request holds none; a request the mock
lets through to the service (``passthrough_unmatched``) still carries them there."""

from __future__ import annotations

import re

from aioresponses import CallbackResult
from integration_helpers import KEY, USER, assert_the_service_got_them, credentials_in, sandbox
from yarl import URL

import asyncsdk
from asyncsdk.testing import aioresponses

CHECK = {"status": "success", "email": "ann@example.com", "result": "Valid", "role": False}


async def test_mocked_calls_are_written_and_seen_without_credentials() -> None:
    base = "https://api.example.com"
    async with asyncsdk.Client(KEY, USER, base_url=base) as client:
        with aioresponses() as mocked:
            mocked.get(f"{base}/api/v1/single/check?email=ann%40example.com&timeout=30",
                       payload=CHECK)
            mocked.get(re.compile(r".*/api/v1/contact/$"), payload=[], repeat=True)

            async def sent(url: URL, **kwargs: object) -> CallbackResult:
                return CallbackResult(payload={"status": "success", "message": "Queued",
                                               "id": "m1"})

            mocked.post(f"{base}/api/v1/mail/send/", callback=sent)
            assert (await client.validation.check("ann@example.com")).result == "Valid"
            assert await client.contacts.list() == []
            await client.mail.send(sender="me@example.com", to="you@example.org",
                                   subject="hi", html="<p>hi</p>")
            seen = [(str(url), call.kwargs) for (_, url), calls in mocked.requests.items()
                    for call in calls]
    assert len(seen) == 3
    assert seen[2][1]["data"] == {"from": "me@example.com", "to": "you@example.org",
                                  "subject": "hi", "message": "<p>hi</p>"}
    assert not credentials_in(repr(seen))


async def test_what_the_mock_lets_through_reaches_the_service_with_them() -> None:
    async with sandbox() as sb, sb.client() as client:
        with aioresponses(passthrough_unmatched=True) as mocked:
            mocked.get(re.compile(r".*/api/v1/contact/$"), payload=[])
            assert await client.contacts.list() == []  # mocked
            await client.validation.check("ann@example.com")  # to the sandbox
            await client.mail.send(sender="me@example.com", to="you@example.org",
                                   subject="hi", html="<p>hi</p>")
        seen = repr(mocked.requests)
        assert [r.path for r in sb.requests] == ["/api/v1/single/check", "/api/v1/mail/send/"]
        assert assert_the_service_got_them(sb.requests) == 2
    assert "/api/v1/contact/" in seen and "/api/v1/mail/send/" in seen
    assert not credentials_in(seen)

