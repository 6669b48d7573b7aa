"""The fast paths of rows() and download() give what the plain paths give.

* ``CsvRecordReader.feed_counted`` (download's count, no list of records kept) agrees,
  piece by piece, with ``feed``: the same number of records, or the same records where
  one has fewer fields than asked; the same refusals, at every chunking.
* The verdict and role memos give what ``read_verdict`` / ``read_role`` give, and stay
  bounded whatever the values of a hostile file.
* ``EmailRows.rows`` (which measures no record first: its builder stops where a record
  lacks a field) gives the rows, and the refusals, of ``take`` + ``EmailRow(...)``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Callable
from itertools import pairwise
from typing import Any

import pytest
from helpers import CORPORA, needs_corpora, rows_of
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsdk.models.validation import EmailRow
from asyncsdk.resources.validation import rows as _rows
from asyncsdk.resources.validation.readers import CsvRecordReader, StreamDecodeError
from asyncsdk.resources.validation.rows import EmailRows, read_role, read_verdict

#: Short and blank records among long ones, quoted line ends, CR-only ends, refusals.
TEXTS = [
    "Email,Name,Status,Role Based Emails\r\na@b.c,A,Valid,True\r\n\r\nx\r\nq,r\r\n",
    'a,b,c\n1,"x\ny",3\n\n,\n4,5,6',
    "a,b,c\r1,2,3\r\r7,8\r",
    'a,b,c\r\n1,"2\r\n",3\r\nx"y,z,w\r\n',
    'a,b,c\n1,"unterminated\n',
    'a,b,c\n"a"b,c,d\n',
]


def corpus() -> list[str]:
    texts = list(TEXTS)
    for folder in ("csv-spectrum/csvs", "csv-test-data/csv"):
        for path in sorted((CORPORA / folder).glob("*.csv")):
            texts.append(path.read_bytes().decode("utf-8-sig"))
    return texts


def chunkings(text: str) -> list[list[str]]:
    out = [[text]] + [[text[i:i + n] for i in range(0, len(text), n)] for n in (1, 2, 3, 7)]
    out += [[text[:i], text[i:]] for i in range(len(text) + 1)]
    return out


@needs_corpora
def test_the_corpora_are_there() -> None:
    assert len(corpus()) > len(TEXTS) + 10


def assert_agrees_with_feed(
    read: Callable[[CsvRecordReader, str], Any],
    check: Callable[[Any, list[list[str]]], None],
    limit: int | None = None,
) -> None:
    """Over every corpus text at every chunking (the first ``limit`` chunkings): each
    piece read by ``read`` gives what ``feed`` gives (``check(got, expected)``), refuses
    where ``feed`` refuses, and the reader finishes alike."""
    for text in corpus():
        for pieces in chunkings(text)[:limit]:
            plain, other = CsvRecordReader(), CsvRecordReader()
            for piece in pieces:
                try:
                    expected = plain.feed(piece)
                except StreamDecodeError:
                    with pytest.raises(StreamDecodeError):
                        read(other, piece)
                    break
                check(read(other, piece), expected)
            else:
                assert finished(other) == finished(plain)


@pytest.mark.parametrize("min_fields", [0, 1, 2, 3, 4])
def test_feed_counted_agrees_with_feed_at_every_chunking(min_fields: int) -> None:
    def check(got: int | list[list[str]], expected: list[list[str]]) -> None:
        if isinstance(got, int):
            assert min_fields > 0
            assert got == len(expected)
            assert all(len(r) >= min_fields for r in expected)
        else:
            assert got == expected

    assert_agrees_with_feed(lambda reader, piece: reader.feed_counted(piece, min_fields),
                            check)


def finished(reader: CsvRecordReader) -> list[list[str]] | None:
    try:
        return reader.finish()
    except StreamDecodeError:
        return None


def test_the_memos_read_as_the_parsers_do() -> None:
    words = ["Valid", "valid", " VALID ", "CatchAll", "catchall", "Risky", " odd ", "",
             "True", "true", "YES", " y ", "n", "0", "1", "False", "maybe", "tRuE"]
    for _ in range(3):  # the second look-up comes from the memo
        for word in words:
            assert _rows._VERDICT_MEMO[word] == read_verdict(word)
            assert type(_rows._VERDICT_MEMO[word]) is type(read_verdict(word))
            assert _rows._ROLE_MEMO[word] is read_role(word)


def test_the_memos_stay_bounded() -> None:
    rng = random.Random(7)
    for i in range(5_000):
        text = f"status-{i}-{rng.random()}"
        assert _rows._VERDICT_MEMO[text] == text
        assert _rows._ROLE_MEMO[text] is None
    long = "x" * 10_000
    assert _rows._VERDICT_MEMO[long] == long
    assert long not in _rows._VERDICT_MEMO
    limit = _rows._MEMO_LIMIT
    assert len(_rows._VERDICT_MEMO) <= limit
    assert len(_rows._ROLE_MEMO) <= limit


@pytest.mark.parametrize("batch", [1, 2, 5, 64])
def test_feed_batches_agrees_with_feed_at_every_chunking(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rows() reads each piece in batches of at most ``CSV_BATCH_CHARS``: the records,
    joined, are ``feed``'s, and a refusal is the same refusal, wherever the batches cut."""
    from asyncsdk import _constants

    def equal(got: list[list[str]], expected: list[list[str]]) -> None:
        assert got == expected

    monkeypatch.setattr(_constants, "CSV_BATCH_CHARS", batch)
    assert_agrees_with_feed(
        lambda reader, piece: [r for records in reader.feed_batches(piece) for r in records],
        equal, limit=6)


def _learn_odd_texts() -> None:
    """Another result, read first: the memos now know its two odd texts (kept out of
    the test's own frame, whose locals the rendered traceback shows too)."""
    other = "Email,Name,Status,Role Based Emails\r\nx@y.z,X,Pluto" + "nium-7,Zirco" + "nium-9\r\n"
    assert len(rows_of([other])) == 1


def test_a_failing_rows_call_shows_no_text_of_another_result_in_its_locals() -> None:
    """The verdict and flag memos are shared by every ``rows()`` of the process: an
    error leaving a later ``rows()`` (its traceback rendered with locals, as error
    trackers do) must not show what another result held (before: the memo dicts were
    locals of the hot loop's frame)."""
    import traceback

    from asyncsdk.resources.validation.rows import email_rows

    _learn_odd_texts()

    async def broken() -> AsyncGenerator[str, None]:
        yield "Email,Name,Status,Role Based Emails\r\n"
        raise RuntimeError("the stream broke")

    async def consume() -> None:
        async for _ in email_rows(broken(), lambda error: error):
            pass

    with pytest.raises(RuntimeError) as info:
        asyncio.run(consume())
    shown = "".join(traceback.TracebackException.from_exception(
        info.value, capture_locals=True).format())
    assert "email_rows" in shown
    assert "Plutonium-7" not in shown and "Zirconium-9" not in shown


#: Headers (field order, Name present or not) and where each puts email, name, status, role.
HEADERS = {
    ("Email", "Name", "Status", "Role Based Emails"): (0, 1, 2, 3),
    ("Status", "x", "Role Based Emails", "Email"): (3, -1, 0, 2),
    ("Role Based Emails", "Email", "Status"): (1, -1, 2, 0),
}
field = st.sampled_from(["", " ", "a@b.c", " d@e.f ", "Valid", "bounce", "Odd", "yes", "0"])
record = st.lists(field, max_size=5)


def by_take(batches: list[list[list[str]]],
            header: tuple[str, ...]) -> tuple[list[EmailRow], str | None]:
    """The rows the plain way: ``take``'s records, each built by calling ``EmailRow``."""
    rows, out = EmailRows(), []
    at_email, at_name, at_status, at_role = HEADERS[header]
    try:
        for batch in batches:
            out += [EmailRow(email=r[at_email].strip(), name=r[at_name] if at_name >= 0 else "",
                             status=read_verdict(r[at_status]), role_based=read_role(r[at_role]))
                    for r in rows.take(batch)]
    except StreamDecodeError as exc:
        return out, str(exc)
    return out, None


def by_rows(batches: list[list[list[str]]]) -> tuple[list[EmailRow], str | None]:
    rows, out = EmailRows(), []
    try:
        for batch in batches:
            out += rows.rows(batch)
    except StreamDecodeError as exc:
        return out, str(exc)
    return out, None


@settings(max_examples=300, deadline=None)
@given(header=st.sampled_from(sorted(HEADERS)), records=st.lists(record, max_size=30),
       cuts=st.lists(st.integers(0, 31), max_size=4), blank_first=st.booleans())
def test_rows_agrees_with_take_and_the_constructor(
    header: tuple[str, ...], records: list[list[str]], cuts: list[int], blank_first: bool,
) -> None:
    """Blank records are skipped and a short one refused (naming its record number) as
    ``take`` does, wherever it falls in a batch and however the batches are cut."""
    every = [[" "], []] * blank_first + [list(header), *records]
    edges = [0, *sorted(min(c, len(every)) for c in cuts), len(every)]
    batches = [every[a:b] for a, b in pairwise(edges)]
    assert by_rows(batches) == by_take(batches, header)
