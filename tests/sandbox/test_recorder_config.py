"""``vcr_config()``'s last line of defence: a credential field that an answer echoes is
recorded as REDACTED in whichever encoding it comes back, and nothing else changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import pytest

import asyncsdk
from asyncsdk.testing import vcr_config

SECRET = "sk_live_S3cr3t-Key.1~"  # unreserved characters: the same in every encoding
USER = "ann@corp-secret.example"


def query_of(name: str) -> str:
    return urlencode({"email": "a@example.com", name: USER if name == "username" else SECRET,
                      "timeout": "30"})


def url_quoted(times: int) -> Callable[[str], str]:
    """The URL with the field, quoted ``times`` times into another URL's query."""
    def echo(name: str) -> str:
        url = f"https://api.example.com/api/v1/single/check?{query_of(name)}"
        for _ in range(times):
            url = f"https://proxy.example/go?next={quote(url, safe='')}"
        return url
    return echo


def json_quoted(times: int) -> Callable[[str], str]:
    """``{"name": "value"}``, put ``times`` times as a string into another JSON."""
    def echo(name: str) -> str:
        text = json.dumps({name: USER if name == "username" else SECRET, "x": 1})
        for _ in range(times):
            text = json.dumps({"detail": text})
        return text
    return echo


ENCODINGS: dict[str, Callable[[str], str]] = {
    "a query": lambda name: query_of(name),
    "a URL": url_quoted(0),
    "a URL in a URL": url_quoted(1),
    "a URL in a URL in a URL": url_quoted(2),  # leaked before
    "a URL in a URL in a URL in a URL": url_quoted(3),  # leaked before
    "a URL quoted 7 times": url_quoted(7),
    "JSON": json_quoted(0),
    "JSON in a JSON string": json_quoted(1),  # leaked before
    "JSON in JSON in JSON": json_quoted(2),  # leaked before
    "JSON quoted 5 times": json_quoted(5),
    "an HTML link": lambda name: f'<a href="/x?{query_of(name).replace("&", "&amp;")}">',
}


@pytest.mark.parametrize("name", sorted(asyncsdk.CREDENTIAL_FIELDS))
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_an_echoed_credential_is_recorded_redacted_in_any_encoding(name: str,
                                                                    encoding: str) -> None:
    echoed = ENCODINGS[encoding](name)
    assert "S3cr3t" in echoed or "corp-secret" in echoed  # the echo holds it
    hooks: list[Callable[[dict[str, Any]], dict[str, Any]]] = vcr_config()[
        "before_record_response"]
    answer: dict[str, Any] = {"body": {"string": echoed.encode()},
                              "headers": {"Content-Location": [echoed]}}
    for hook in hooks:
        answer = hook(answer)
    for recorded in (answer["body"]["string"].decode(), answer["headers"]["Content-Location"][0]):
        assert "S3cr3t" not in recorded
        assert "corp-secret" not in recorded
        assert "REDACTED" in recorded
        # nothing else changed: the text is the echo with the value replaced
        value = SECRET if name != "username" else USER
        assert recorded.replace("REDACTED", "@") == _with_value_replaced(echoed, value)


def _with_value_replaced(echoed: str, value: str) -> str:
    """``echoed`` with every form of ``value`` (as written, or quoted any times) as "@"."""
    forms = {value}
    for _ in range(10):
        forms |= {quote(form, safe="") for form in forms}
    for form in sorted(forms, key=len, reverse=True):
        echoed = echoed.replace(form, "@")
    return echoed
