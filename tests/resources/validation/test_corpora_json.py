"""The JSON result reader agrees with ``json.loads`` on JSONTestSuite's string cases.

Each corpus file (a string, or an array starting with one) becomes the ``result`` of an
answer object; ``json.loads`` of that same answer is the reference: where it refuses the
answer, the reader refuses it (``StreamDecodeError``); where it reads a string result,
the reader hands out the same text, at every cut of the bytes and in single bytes
(escapes and surrogate pairs split anywhere). A lone surrogate, which UTF-8 cannot
carry, becomes U+FFFD. ``i_`` cases (implementation-defined) may be refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from helpers import CORPORA, needs_corpora

from asyncsdk.resources.validation.readers import (
    JsonMemberReader,
    StreamDecodeError,
    Utf8Decoder,
)

SUITE = CORPORA / "JSONTestSuite" / "test_parsing"
HEAD = b'{"status": "success", "result": '


def cases() -> list[Any]:
    return [pytest.param(p.read_bytes(), p.name[0], id=p.name)
            for p in sorted(SUITE.glob("*.json"))]


def answer_of(data: bytes) -> bytes:
    """The corpus value as the answer's ``result``: an array's brackets taken off."""
    inner = data.strip(b" \t\r\n")
    if inner.startswith(b"[") and inner.endswith(b"]"):
        inner = inner[1:-1]
    return HEAD + inner + b"}"


def reference(body: bytes) -> str | None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    result = value.get("result") if isinstance(value, dict) else None
    if not isinstance(result, str):
        return None
    return re.sub("[\ud800-\udfff]", "\ufffd", result)


def read(chunks: list[bytes]) -> str | None:
    decoder = Utf8Decoder()
    reader = JsonMemberReader("result")
    out: list[str] = []
    try:
        for chunk in chunks:
            out += reader.feed(decoder.decode(chunk))
        out += reader.feed(decoder.decode(b"", True))
        reader.finish()
    except StreamDecodeError:
        return None
    return "".join(out) if reader.complete else None


@pytest.mark.parametrize(("data", "kind"), cases())
def test_strings_are_read_as_json_loads_reads_them(data: bytes, kind: str) -> None:
    body = answer_of(data)
    expected = reference(body)
    splits = [[body[:i], body[i:]] for i in range(len(body) + 1)]
    splits.append([body[i:i + 1] for i in range(len(body))])
    for chunks in splits:
        got = read(chunks)
        if kind == "i" and got is None:
            continue
        assert got == expected, [len(c) for c in chunks]


@needs_corpora
def test_the_suite_is_there() -> None:
    kinds = {c.values[1] for c in cases()}
    assert len(cases()) > 90 and kinds == {"y", "n", "i"}


@pytest.mark.parametrize("char", [chr(c) for c in range(0x20)])
def test_every_raw_control_character_is_refused(char: str) -> None:
    """Regression: raw control characters inside the result were taken as text."""
    body = HEAD + f'"a{char}b"}}'.encode()
    assert reference(body) is None
    for cut in range(len(body) + 1):
        assert read([body[:cut], body[cut:]]) is None
