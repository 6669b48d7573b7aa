"""The job-result readers agree with Python's csv module on public CSV test corpora.

Reference: ``csv.reader(io.StringIO(text, newline=""), strict=True)`` over the whole text
(``newline=""`` as the csv module asks: CRLF, LF and CR-only line ends). Every case is
sent in both wire shapes (a CSV body; JSON ``{"status": "success", "result": text}``)
and cut into pieces of 1, 2, 3 and 7 bytes, left whole, and cut in two at every byte.
The corpora are read from ``<repo root>/../shared/peer-corpora`` (see its SOURCES.md).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from helpers import CORPORA, corpus_json, needs_corpora

from asyncsdk.resources.validation.readers import CsvRecordReader, StreamDecodeError
from asyncsdk.resources.validation.results import ResultText

#: Cases of the issue, each failing before: a last record with a quoted line break and no
#: final line end, quotes inside unquoted fields followed by more records, CR-only ends.
EXTRA = {
    "quoted-newline-last-record": 'foo,bar,baz\n1,"No man is an island,\nEntire of itself",3',
    "quote-in-unquoted-field": 'a"b\r\nnext,record\r\n',
    "o-brien": 'Email,Name\r\nx@y.z,O"Brien\r\nq@r.s,"Plain"\r\n',
    "quote-in-unquoted-then-quoted": 'x,a"b,"c\r\nd",e\r\nf,g\r\n',
    "cr-only": "a,b\rc,\"d\re\"\rf,g\r",
    "cr-only-no-final": "a,b\rc,d",
    "crlf-quoted-crlf": 'a,"b\r\nc"\r\nd,e\r\n',
    "blank-lines": "\r\n\n\ra,b\r\n\r\nc,d\n",
    "unterminated": 'a,"b\nc',
    "text-after-quote": '"a"b,c\n',
}


def corpus_cases() -> list[Any]:
    cases: list[Any] = []
    for folder in ("csv-spectrum/csvs", "csv-test-data/csv"):
        for path in sorted((CORPORA / folder).glob("*.csv")):
            cases.append(pytest.param(path.read_bytes(), id=f"{folder.split('/')[0]}:{path.name}"))
    table = corpus_json("cpython-csv/test_csv_reader_cases.json", default=[])
    for case in table:
        if "text" in case:
            cases.append(pytest.param(case["text"].encode(), id=f"cpython:{case['id']}"))
            continue
        for ending in case["lineterminators"]:  # the round trip: written, then read back
            out = io.StringIO(newline="")
            csv.writer(out, lineterminator=ending).writerows(case["rows"])
            cases.append(pytest.param(out.getvalue().encode(),
                                      id=f"cpython:{case['id']}:{ending!r}"))
    for name, text in EXTRA.items():
        cases.append(pytest.param(text.encode(), id=f"issue:{name}"))
    return cases


def reference(text: str) -> list[list[str]] | None:
    """The records csv reads from the whole text, or None where it refuses it."""
    try:
        return list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        return None


class FakeAnswer:
    def __init__(self, content_type: str) -> None:
        self.content_type = content_type
        self.content_disposition = None

    def interpret(self, raw: bytes) -> Any:
        raise AssertionError(f"not a refusal: {raw[:80]!r}")


def chunkings(body: bytes) -> list[list[bytes]]:
    out = [[body]] + [[body[i:i + n] for i in range(0, len(body), n)] for n in (1, 2, 3, 7)]
    out += [[body[:i], body[i:]] for i in range(len(body) + 1)]
    return out


def read(chunks: list[bytes], content_type: str) -> tuple[str, list[list[str]] | None]:
    """The CSV text and the records the readers make of a body (records None: refused)."""
    result = ResultText(FakeAnswer(content_type))
    reader = CsvRecordReader()
    texts: list[str] = []
    records: list[list[str]] = []
    try:
        for chunk in chunks:
            text = result.feed(chunk)
            texts.append(text)
            records += reader.feed(text)
        text = result.finish()
        texts.append(text)
        records += reader.feed(text)
        records += reader.finish()
    except StreamDecodeError:
        return "".join(texts), None
    return "".join(texts), records


def bodies(data: bytes) -> list[tuple[str, bytes, str]]:
    text = data.decode("utf-8-sig")
    return [
        ("csv", data, "text/csv"),
        ("json", json.dumps({"status": "success", "result": text}).encode(), "application/json"),
        ("json-utf8", json.dumps({"result": text, "status": "success"},
                                 ensure_ascii=False).encode(), "application/json"),
    ]


@pytest.mark.parametrize("data", corpus_cases())
def test_records_agree_with_csv_in_both_shapes_at_every_chunking(data: bytes) -> None:
    text = data.decode("utf-8-sig")
    expected = reference(text)
    for shape, body, content_type in bodies(data):
        for chunks in chunkings(body):
            got_text, got = read(chunks, content_type)
            cuts = [len(c) for c in chunks]
            assert got == expected, (shape, cuts)
            if expected is not None:
                assert got_text == text, (shape, cuts)


@needs_corpora
def test_the_corpora_are_there() -> None:
    """The corpus tests above must not pass by finding nothing."""
    assert len(corpus_cases()) > 60


def test_a_long_cr_only_result_is_read() -> None:
    """Regression: a 1.5 MB CR-only file failed with "a CSV record is too long"."""
    text = "Email,Name,Status,Role Based Emails\r" + "a@b.com,N,Valid,True\r" * 75_000
    data = text.encode()
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)]
    _, records = read(chunks, "text/csv")
    assert records == reference(text)
