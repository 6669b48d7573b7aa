"""The address check before sending agrees with the public email corpora (issue 13).

Corpora (read from ``<repo root>/../shared/peer-corpora/email``, see its SOURCES.md):
python-email-validator's syntax tables and isemail's tests.xml. Properties:

* every address a reference calls valid is accepted, and ``check``/``check_many`` send
  it (display-name forms such as ``My Name <me@example.org>`` are not addresses: they
  hold white space outside quotes, which the rule refuses);
* whatever the check refuses, from either corpus, breaks the rule itself: no ``@``, a
  control character, white space outside quotes, or over 254 characters.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from aioresponses import CallbackResult, aioresponses
from helpers import BASE
from helpers import CORPORA as PEER_CORPORA

import asyncsdk
from asyncsdk._checks import check_email

CORPORA = PEER_CORPORA / "email"
pytestmark = pytest.mark.skipif(not CORPORA.is_dir(), reason="peer corpora not beside the repo")

#: email-validator tables whose inputs the reference accepts (with the test's options).
VALID_TABLES = {
    "test_email_valid", "test_email_valid_intl_local_part",
    "test_email_valid_only_if_quoted_local_part", "test_domain_literal",
    "test_email_empty_local", "test_case_insensitive_mailbox_name",
    "test_email_test_domain_name_in_test_environment",
}
#: isemail categories below its validity threshold (ISEMAIL_THRESHOLD).
VALID_CATEGORIES = {"ISEMAIL_VALID_CATEGORY", "ISEMAIL_DNSWARN", "ISEMAIL_RFC5321"}


def _display_name_form(text: str) -> bool:
    return text.endswith(">") and "<" in text


def _validator_cases() -> list[tuple[str, bool]]:
    if not CORPORA.is_dir():
        return []
    rows = json.loads((CORPORA / "email-validator-test_syntax.json").read_text("utf-8"))
    return [(r["input"], r["test"] in VALID_TABLES) for r in rows
            if r["test"] != "test_pyisemail_tests"]  # a copy of isemail's, read below


def _isemail_cases() -> list[tuple[str, bool]]:
    if not CORPORA.is_dir():
        return []
    text = (CORPORA / "isemail-tests.xml").read_text("utf-8")
    out = []
    for test in ET.fromstring(text).iter("test"):  # noqa: S314 - a checked-in corpus
        address = test.findtext("address") or ""
        # The file writes control characters as U+2400 + code (its note 1).
        address = re.sub("[\u2400-\u241f]", lambda m: chr(ord(m.group()) - 0x2400), address)
        out.append((address, test.findtext("category") in VALID_CATEGORIES))
    return out


CASES = _validator_cases() + _isemail_cases()
VALID = sorted({a for a, ok in CASES if ok and not _display_name_form(a)})


def breaks_the_rule(text: str) -> bool:
    """The rule of DESIGN §2, written independently of the library."""
    if "@" not in text or len(text) > 254:
        return True
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return True
    quoted = escaped = False
    for c in text:
        if escaped:
            escaped = False
        elif quoted and c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif not quoted and c.isspace():
            return True
    return False


def _accepted(text: str) -> bool:
    try:
        check_email(text, "email")
    except asyncsdk.InvalidInputError:
        return False
    return True


def test_the_corpora_are_read() -> None:
    assert len(CASES) > 250 and len(VALID) > 60
    assert "me@[IPv6:::1]" in VALID and "test@io" in VALID


@pytest.mark.parametrize("address", VALID)
def test_every_valid_address_is_accepted(address: str) -> None:
    assert _accepted(address)


@pytest.mark.parametrize(("address", "_ok"), CASES)
def test_only_impossible_addresses_are_refused(address: str, _ok: bool) -> None:
    assert _accepted(address) is not breaks_the_rule(address)


@pytest.mark.parametrize("address", ['"quoted with space"@example.com', '"test\\ test"@iana.org',
                                     "me@[IPv6:::1]", "test@io", "me@[127.0.0.1]"])
def test_the_issue_examples_are_accepted(address: str) -> None:
    assert _accepted(address)


def _answer(url: Any, **kwargs: Any) -> CallbackResult:
    email = dict(url.query)["email"]
    return CallbackResult(payload={"email": email, "status": "success", "result": "Valid",
                                   "role": False})


async def test_check_and_check_many_send_every_valid_address(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(re.compile(re.escape(BASE) + r"/api/v1/single/check.*"), callback=_answer,
               repeat=True)
    one = await client.validation.check(VALID[0])
    assert one.result is asyncsdk.Verdict.VALID
    outcomes = [o async for o in client.validation.check_many(VALID, concurrency=8)]
    assert all(o.ok for o in outcomes), [o for o in outcomes if not o.ok][:3]
    assert sorted(o.email for o in outcomes) == VALID
    sent = sum(len(calls) for calls in mocked.requests.values())
    assert sent == len(VALID) + 1
