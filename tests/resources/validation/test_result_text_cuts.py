"""A JSON download's ``result`` is decided from the whole value, once, whatever the
network's cuts (issue 29, item 5): a hosted result URL with white space around it
(``"http://.../emaillist.csv\\n"``, ``" http://..."``) is that URL at every cut. Before,
``"http://.../emaillist.csv\\n"`` was fetched in 80 cuts and streamed as CSV text in 4,
and ``" http://..."`` fetched in 35 and refused in 48: the start of the value was
released as CSV text as soon as a piece held white space."""

from __future__ import annotations

import json
from typing import Any

import pytest

from asyncsdk import _constants as C
from asyncsdk.resources.validation.readers import StreamDecodeError
from asyncsdk.resources.validation.results import ResultText

URL = "http://files.example.net/jobs/17/emaillist.csv?sig=a1b2"


class FakeAnswer:
    content_type = "application/json"
    content_disposition = None

    def interpret(self, raw: bytes) -> Any:
        raise AssertionError(f"not a refusal: {raw[:80]!r}")


def outcome(chunks: list[bytes]) -> tuple[str, str | None]:
    """The CSV text and the hosted URL that ``ResultText`` makes of the chunks (the
    text is ``"refused: ..."`` where it refuses the answer)."""
    result = ResultText(FakeAnswer())
    texts: list[str] = []
    try:
        for chunk in chunks:
            texts.append(result.feed(chunk))
        texts.append(result.finish())
    except StreamDecodeError as exc:
        return f"refused: {exc}", None
    return "".join(texts), result.hosted_url


def cuts(body: bytes) -> list[list[bytes]]:
    """The body whole, cut once at every place, twice around the value's edges, and in
    pieces of 1, 2, 3 and 5 bytes."""
    out = [[body]] + [[body[:i], body[i:]] for i in range(len(body) + 1)]
    start = body.index(b'"result"')
    out += [[body[:i], body[i:j], body[j:]] for i in range(start, len(body))
            for j in range(i, min(len(body), i + 12))]
    out += [[body[i:i + n] for i in range(0, len(body), n)] for n in (1, 2, 3, 5)]
    return out


def bodies(value: str) -> list[bytes]:
    return [
        json.dumps({"status": "success", "result": value}).encode(),
        json.dumps({"result": value, "status": "success"}, ensure_ascii=False).encode(),
        # slashes escaped, as PHP's json_encode writes them
        json.dumps({"status": "success", "result": value}).replace("/", "\\/").encode(),
    ]


#: value -> (CSV text, hosted URL) that the whole value means
CASES: dict[str, tuple[str, str | None]] = {
    URL: ("", URL),
    URL + "\n": ("", URL),
    " " + URL: ("", URL),
    "\t " + URL + " \r\n": ("", URL),
    "\u2003" + URL + "\u00a0": ("", URL),  # Unicode white space, as str.strip() sees it
    "https://h.example/x": ("", "https://h.example/x"),
    URL + " x": (URL + " x", None),  # white space inside: not a URL, CSV text
    " " + URL + "\nb@example.com,B,Valid,1\n": (
        " " + URL + "\nb@example.com,B,Valid,1\n", None),
    "Email,Name,Status,Role Based Emails\nhttp://h.example/x\n": (
        "Email,Name,Status,Role Based Emails\nhttp://h.example/x\n", None),
    "ftp://h.example/x": ("ftp://h.example/x", None),
    "http:/h.example/x": ("http:/h.example/x", None),
    "\n\n": ("\n\n", None),
}


@pytest.mark.parametrize("value", list(CASES), ids=repr)
def test_the_whole_value_decides_at_every_cut(value: str) -> None:
    for body in bodies(value):
        expected = outcome([body])
        assert expected == CASES[value]
        for chunks in cuts(body):
            assert outcome(chunks) == expected, [len(c) for c in chunks]


@pytest.mark.parametrize("pad", [0, 1, 50])
def test_a_value_longer_than_a_url_may_be_is_csv_text_at_every_cut(pad: int) -> None:
    """The size rule is the whole value's too: ``MAX_HOSTED_URL_CHARS`` characters with
    the white space around it; one more and it is CSV text, wherever cut."""
    url = "http://h.example/" + "x" * (C.MAX_HOSTED_URL_CHARS - 17 - pad - 1)
    fits = " " * pad + url + "\n"
    too_long = " " + fits
    assert len(fits) == C.MAX_HOSTED_URL_CHARS
    for value, expected in ((fits, ("", url)), (too_long, (too_long, None))):
        body = json.dumps({"status": "success", "result": value}).encode()
        assert outcome([body]) == expected
        step = len(body) // 40
        for i in [*range(0, len(body), step), *range(len(body) - 40, len(body))]:
            assert outcome([body[:i], body[i:]]) == expected, i
