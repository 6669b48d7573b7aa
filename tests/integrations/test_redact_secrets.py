"""``asyncsdk.redact_secrets``: the credentials of the clients alive in the process, by
value, in the encodings a service may echo them in; no one else's text touched; a client
gone takes its credentials with it, and one of two clients with equal credentials going
leaves the other's covered."""

from __future__ import annotations

import base64
import gc
import json
from urllib.parse import quote

import asyncsdk

KEY, USER = "k3y+/=\u00e4Leak", "jdoe.leaky"


def _forms(secret: str) -> list[str]:
    return [secret, quote(secret, safe=""), json.dumps(secret, ensure_ascii=True)[1:-1],
            quote(quote(secret, safe=""), safe="")]


def test_every_live_clients_credentials_in_any_form() -> None:
    client = asyncsdk.Client(api_key=KEY, username=USER)
    other = asyncsdk.Client(api_key="another-key-2", username="ann",
                            base_url="https://login:pa55word@api.example.com")
    texts = [f"unknown key {form} for {user}" for form in _forms(KEY) for user in _forms(USER)]
    texts += [f"token {base64.b64encode(KEY.encode()).decode()} refused",
              "key another-key-2 of ann (pa55word)"]
    for text in texts:
        redacted = asyncsdk.redact_secrets(text)
        assert KEY not in redacted and USER not in redacted and "another-key-2" not in redacted
        assert "pa55word" not in redacted and "ann" not in redacted.split()
        assert "REDACTED" in redacted, text
    assert asyncsdk.redact_secrets("unknown key for annie, k3y+") == "unknown key for annie, k3y+"
    del client, other


def test_credentials_go_with_their_client_and_equal_ones_stay() -> None:
    text = "unknown key k3y-of-a-twin"
    first = asyncsdk.Client(api_key="k3y-of-a-twin", username="twin")
    second = asyncsdk.Client(api_key="k3y-of-a-twin", username="twin")
    copy = second.with_options(timeout=5)
    del first
    gc.collect()
    assert asyncsdk.redact_secrets(text) == "unknown key REDACTED"
    del second
    gc.collect()
    assert asyncsdk.redact_secrets(text) == "unknown key REDACTED"  # the copy is alive
    del copy
    gc.collect()
    assert asyncsdk.redact_secrets(text) == text
