"""``asyncsdk.redact_url``, the ``url_filter`` handed to tracers and loggers, on URLs a
server reads a credential field from although they are not spelled the plain way:
``;`` between fields, a name percent-encoded once or twice, padded with spaces or
control characters, in compatibility (full-width) forms, a scheme-relative
``//user:password@``. Each such value is replaced; everything else is kept byte for
byte, and a field whose name merely contains a credential name is left alone."""

from __future__ import annotations

import itertools
from urllib.parse import quote

import pytest

import asyncsdk
from asyncsdk import redact_url

SECRET = "s3cr+t%2Fk"


def _spellings(name: str) -> list[str]:
    """Ways of writing the field name ``name`` that a server decodes back to it."""
    full_width = "".join(chr(ord(c) + 0xFEE0) if c.isalnum() or c == "_" else c for c in name)
    every_char = "".join(f"%{ord(c):02X}" for c in name)
    return [
        name, name.upper(), name.title(),
        every_char, every_char.lower(),                   # percent-encoded, either case
        quote(every_char, safe=""),                       # percent-encoded twice
        f"%20{name}", f"{name}%20", f"{name}+", f" {name}", f"{name}%00", f"%09{name}",
        full_width, quote(full_width, safe=""),           # compatibility forms
    ]


CASES = [(name, spelled, separator) for name in sorted(asyncsdk.CREDENTIAL_FIELDS)
         for spelled, separator in itertools.product(_spellings(name), "&;")]


@pytest.mark.parametrize(("name", "spelled", "separator"), CASES)
def test_every_spelling_of_a_credential_field_is_redacted(
        name: str, spelled: str, separator: str) -> None:
    url = (f"https://h.example/p?email=a%40b.com{separator}{spelled}={SECRET}"
           f"{separator}my_{name}=kept{separator}x=1#frag")
    assert redact_url(url) == url.replace(SECRET, "REDACTED")


@pytest.mark.parametrize(("url", "shown"), [
    ("//me:pa55@h.example/p?api=k", "//me:REDACTED@h.example/p?api=REDACTED"),
    ("https://h/p?x=1&amp;api_key=k", "https://h/p?x=1&amp;api_key=REDACTED"),  # HTML-escaped
    ("https://h/p?x=a;b&c=d;e", "https://h/p?x=a;b&c=d;e"),  # no credential: unchanged
    ("https://h/p?api_key=k1&API_KEY=k2;api_key=k3#api=frag",
     "https://h/p?api_key=REDACTED&API_KEY=REDACTED;api_key=REDACTED#api=frag"),
])
def test_tricky_urls(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize("name", [" api", "API_KEY ", "Username", "\uff41\uff50\uff49"])
def test_a_query_to_append_is_redacted_by_the_same_rule(name: str) -> None:
    shown = redact_url("https://h/p", {name: SECRET, "x": "1"})
    assert SECRET not in shown and "REDACTED" in shown and shown.endswith("&x=1")
