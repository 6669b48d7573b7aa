"""The settings HTTP recorders need for asyncsdk's requests: ``vcr_config()``.

The library adds the credentials last, below every recorder (README, "Tracing, error
tracking and recording"), so a cassette of its requests holds none. These filters are
the second line: they keep the credential fields out of a cassette whatever made the
request (your own requests with the key, an older asyncsdk), make a request recorded
with them match one made without, and take them out of what a service echoes back (an
error page or a header quoting the URL it was sent, a body quoting the form, a message
quoting the key itself: ``asyncsdk.redact_secrets``, the credentials of every client
alive in the process).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from asyncsdk import CREDENTIAL_FIELDS, redact_secrets

__all__ = ["vcr_config"]

_NAMES = "|".join(sorted(map(re.escape, CREDENTIAL_FIELDS), key=len, reverse=True))
#: A credential field echoed in text: ``name=value`` (a query or form, or one
#: percent-encoded inside another URL, itself quoted inside another, any times over),
#: or ``"name": "value"`` (JSON, or JSON quoted inside a JSON string, any times over:
#: ``\"name\": \"value\"``), the name not part of a longer one. The named groups
#: keep what precedes the value; the value goes.
_ECHOED = re.compile(
    rf"(?:(?<![\w%.-])|(?P<start>%(?:25)*(?:3[fF]|26|3[bB])))"
    rf"(?P<field>(?:{_NAMES})(?:=|%(?:25)*3[dD]))"
    rf"(?:[^&;\s\"'<>#%\\]|%(?!(?:25)*(?:26|3[bB]))[0-9A-Fa-f]{{2}})*"
    rf"|(?P<json>\"(?:{_NAMES})\"\s*:\s*\")(?:[^\"\\]|\\.)*(?=\")"
    rf"|(?P<escaped>(?P<slashes>\\+)\"(?:{_NAMES})(?P=slashes)\"\s*:\s*(?P=slashes)\")"
    rf"[^\"\\]*",
    re.IGNORECASE)


def _redacted_text(text: str) -> str:
    """``text`` without an echoed credential field's value, nor (in any encoding, by
    value) a credential of a client alive in the process: a service may quote the key
    in a sentence of its own ("unknown key ..."), where no field names it."""
    by_name = _ECHOED.sub(lambda m: "".join(
        m.group(name) or "" for name in ("start", "field", "json", "escaped")) + "REDACTED",
        text)
    return redact_secrets(by_name)


def _redacted(value: Any) -> Any:
    """``value`` (text, bytes, or a list of them) with echoed credential fields redacted;
    bytes are read byte for byte (any encoding, the other bytes kept)."""
    if isinstance(value, str):
        return _redacted_text(value)
    if isinstance(value, bytes):
        return _redacted_text(value.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape")
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def without_echoed_credentials(response: dict[str, Any]) -> dict[str, Any]:
    """vcrpy's ``before_record_response``: the recorded answer's body and header values
    without an echoed credential field's value (vcrpy hands over its own copy)."""
    body = response.get("body")
    if isinstance(body, dict) and "string" in body:
        body["string"] = _redacted(body["string"])
    headers = response.get("headers")
    if isinstance(headers, dict):
        for name, value in headers.items():
            headers[name] = _redacted(value)
    return response


def vcr_config(**overrides: Any) -> dict[str, Any]:
    """Keyword arguments for vcrpy (``vcr.VCR(**vcr_config())``,
    ``vcr.use_cassette(path, **vcr_config())``) and for pytest-recording's
    ``vcr_config`` fixture: the credential fields (``asyncsdk.CREDENTIAL_FIELDS``) are
    dropped from every recorded query and form body, the ``Authorization`` header (a
    base URL's login) from every recorded request, and the value of a credential field
    that an answer's body or headers echo (``api_key=...``, ``"api": "..."``), and a
    credential of any client alive in the process quoted anywhere in them, in any
    encoding (``asyncsdk.redact_secrets``), are recorded as ``REDACTED``.

    Args:
        **overrides: more vcrpy options, or replacements of these (``record_mode=``,
            ``match_on=``, ``cassette_library_dir=``...). A ``before_record_response``
            of yours runs after the library's.

    Returns:
        A new dict each time.
    """
    fields = sorted(CREDENTIAL_FIELDS)
    theirs = overrides.pop("before_record_response", None)
    hooks: list[Callable[[dict[str, Any]], Any]] = [without_echoed_credentials]
    if callable(theirs):
        hooks.append(theirs)
    elif isinstance(theirs, Iterable):
        hooks.extend(theirs)
    config: dict[str, Any] = {
        "filter_query_parameters": list(fields),
        "filter_post_data_parameters": list(fields),
        "filter_headers": ["authorization"],
        "before_record_response": hooks,
    }
    config.update(overrides)
    return config
