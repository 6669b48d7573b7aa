"""What ``with_raw_response`` shows, for a call of each kind (README "The raw answer",
DESIGN §3): the URL with every credential redacted, the same URL the log lines show,
and the attempts the log lines count.

Before: ``RawResponse.url`` of an answer was the URL with only the credential *fields*
redacted, not scrubbed of the credentials' values as the log lines and an error's
``url`` (and its ``response.url``) are: a key the caller put in a field of their own
(``extra_query``) was in ``raw.url`` and in ``repr(raw)``, percent-encoded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from auth_helpers import leaks

import asyncsdk
from asyncsdk.testing import Sandbox, VirtualClock

KEY = "kÖ+y/Z=9==Qx"
USER = "logging.user"
#: The caller's own fields, holding the credentials' values.
MINE = {"ref": KEY, "who": USER}

Call = Callable[[Any, dict[str, Any]], Awaitable[asyncsdk.RawResponse[Any]]]

#: name: (the call through ``with_raw_response``, its path, retried after a 503).
CALLS: dict[str, tuple[Call, str, bool]] = {
    "validation.check": (lambda raw, w: raw.validation.check(
        "ada@example.org", extra_query=MINE), "/api/v1/single/check", True),
    "contacts.list": (lambda raw, w: raw.contacts.list(extra_query=MINE),
                      "/api/v1/contact/", True),
    "contacts.get": (lambda raw, w: raw.contacts.get(w["list_id"], extra_query=MINE),
                     "/api/v1/contact/{list_id}/", True),
    "validation.create_job": (lambda raw, w: raw.validation.create_job(
        w["file_url"], extra_query=MINE), "/api/v1/jobs/create", False),
    "mail.send": (lambda raw, w: raw.mail.send(
        sender="s@example.com", to="t@example.org", subject="hi", html="<p>x</p>",
        extra_query=MINE), "/api/v1/mail/send/", False),
}


@pytest.mark.parametrize("name", list(CALLS))
async def test_a_raw_answer_shows_no_credential_and_what_the_log_shows(
    name: str, caplog: pytest.LogCaptureFixture,
) -> None:
    call, path, retried = CALLS[name]
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(
            clock=VirtualClock(random=1.0)) as client:
        sb.verify_domain("example.com")
        world = {"list_id": sb.seed_contact_list("News", [{"email": "ada@example.com"}]),
                 "file_url": sb.host_file("email\nada@example.com\n")}
        path = path.format(**world)
        if retried:
            sb.faults.status(path, 503, times=1)
        sb.reset_stats()
        raw = await call(client.with_raw_response, world)
        sent = len([r for r in sb.requests if r.path == path])
    assert raw.status_code == 200
    shown = repr(raw.url) + repr(raw.headers) + repr(raw.request_id)
    assert not leaks(shown, (KEY, USER)), leaks(shown, (KEY, USER))
    assert "ref=REDACTED" in raw.url and "who=REDACTED" in raw.url
    # the attempts and the URL are the ones the DEBUG lines tell
    lines = [r.getMessage() for r in caplog.records
             if r.name == "asyncsdk" and r.levelno == logging.DEBUG]
    found = [re.fullmatch(r"\S+ (\S+) -> \d+ in [\d.]+ ms \(attempt (\d+)\)", line)
             for line in lines]
    assert all(found), lines
    assert [m.group(1) for m in found if m] == [raw.url] * sent
    assert [int(m.group(2)) for m in found if m] == list(range(1, sent + 1))
    assert raw.attempts == sent == (2 if retried else 1)
    assert raw.elapsed == (0.5 if retried else 0.0)  # the backoff waited, on the clock
