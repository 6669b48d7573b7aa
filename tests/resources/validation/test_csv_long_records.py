"""CsvRecordReader and a record that spans many pieces: a quoted field of many line ends
(a Name with an address in it, or a hostile one) is read a bounded number of times,
and every piece still hands out exactly the records it completes.

Before, every piece of such a field read the whole record again (twice: the strict
reader, then line by line): a record of a megabyte in pieces of 1,460 bytes cost about
four seconds of the event loop's time, quadratic in the record's length."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncsdk.resources.validation import readers
from asyncsdk.resources.validation.readers import CsvRecordReader, StreamDecodeError

HEADER = "Email,Name,Status,Role Based Emails,Note\r\n"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text the reader hands to ``csv``, as it hands it."""
    sizes: list[int] = []
    lines = readers._lines

    def counted(text: str) -> list[str] | io.StringIO:
        sizes.append(len(text))
        return lines(text)

    monkeypatch.setattr(readers, "_lines", counted)
    return sizes


def pieces_of(text: str, size: int) -> Iterator[str]:
    return (text[at:at + size] for at in range(0, len(text), size))


@pytest.mark.parametrize("size", [1000, 4096])
def test_a_long_quoted_field_is_not_read_again_for_every_piece(
    parsed: list[int], size: int
) -> None:
    field = ("an address line, with a comma\n" * 3_000)[:-1]  # 90,000 characters
    record = f'a@b.c,"{field}",Valid,1,"{field}"\r\n'
    text = HEADER + record + "d@e.f,N,Bounce,0,\r\n" * 3
    reader = CsvRecordReader()
    records = [r for piece in pieces_of(text, size) for r in reader.feed(piece)]
    records += reader.finish()
    assert records == list(csv.reader(io.StringIO(text, newline=""), strict=True))
    # Two quoted fields: a few readings of the record each, not one per piece (before:
    # about 180 (size 1000) and 45 (size 4096) times the text).
    assert sum(parsed) <= 8 * len(text)


@pytest.mark.parametrize("size", [100, 1000])
def test_a_long_line_after_a_quoted_field_is_not_read_again_for_every_piece(
    parsed: list[int], size: int
) -> None:
    """The field closed, no line end yet: the text ``csv`` would read (the record up to
    the field's last line end) has not changed, and is not read again."""
    field = ("an address line\n" * 5_000)[:-1]
    record = f'a@b.c,"{field}",Valid,1,' + "n" * 100_000 + "\r\n"
    text = HEADER + record + "d@e.f,N,Bounce,0,\r\n"
    reader = CsvRecordReader()
    records = [r for piece in pieces_of(text, size) for r in reader.feed(piece)]
    records += reader.finish()
    assert records == list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert sum(parsed) <= 8 * len(text)


def reference(fed: str) -> list[list[str]]:
    """The records complete in ``fed``: those of the longest run of its lines that
    ``csv`` reads whole, a last CR held back (it may be the first half of a CRLF)."""
    cut = max(fed.rfind("\n"), fed.rfind("\r", 0, len(fed) - 1)) + 1
    lines = fed[:cut].splitlines(True)
    for n in range(len(lines), -1, -1):
        try:
            return list(csv.reader(lines[:n], strict=True))
        except csv.Error:
            continue
    raise AssertionError("unreachable")


def written(rows: list[list[str]], end: str) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator=end).writerows(rows)
    return out.getvalue()


FIELDS = st.text(st.sampled_from(['a', ',', '"', '\n', '\r', ' ']), max_size=12)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(FIELDS, min_size=1, max_size=4), min_size=1, max_size=6),
       end=st.sampled_from(["\r\n", "\n", "\r"]),
       cuts=st.lists(st.integers(0, 400), max_size=12))
def test_each_piece_hands_out_exactly_the_records_it_completes(
    rows: list[list[str]], end: str, cuts: list[int]
) -> None:
    text = written(rows, end)
    points = sorted({c % (len(text) + 1) for c in cuts} | {len(text)})
    reader = CsvRecordReader()
    given_out: list[list[str]] = []
    last = 0
    for point in points:
        given_out += reader.feed(text[last:point])
        last = point
        assert given_out == reference(text[:point])
    given_out += reader.finish()
    assert given_out == list(csv.reader(io.StringIO(text, newline=""), strict=True))


def over_the_limit(fed: str) -> bool:
    """True when ``csv`` refuses the lines of ``fed`` for a field over its limit."""
    cut = max(fed.rfind("\n"), fed.rfind("\r", 0, len(fed) - 1)) + 1
    try:
        list(csv.reader(fed[:cut].splitlines(True), strict=True))
    except csv.Error as exc:
        return "field limit" in str(exc)
    return False


@pytest.mark.parametrize("size", [1, 3, 7, 64])
@pytest.mark.parametrize("field", ['"' * 20 + "x\n" * 9, "x\n" * 20, "x\n" * 20 + "y",
                                   '""x\n' * 30])
def test_the_field_limit_is_met_where_csv_meets_it(size: int, field: str) -> None:
    """A quoted field that passes ``csv``'s field limit while it waits is refused by
    the piece whose lines ``csv`` refuses (``""`` counts as one character)."""
    old = csv.field_size_limit(40)
    try:
        text = 'a,"' + field + '",b\r\nc,d,e\r\n'
        reader = CsvRecordReader()
        records: list[list[str]] = []
        for end in range(size, len(text) + size, size):
            if over_the_limit(text[:end]):
                with pytest.raises(StreamDecodeError, match="field limit"):
                    reader.feed(text[end - size:end])
                return
            records += reader.feed(text[end - size:end])
        assert len(field.replace('""', '"')) <= 40
        assert records + reader.finish() == list(
            csv.reader(io.StringIO(text, newline=""), strict=True))
    finally:
        csv.field_size_limit(old)
