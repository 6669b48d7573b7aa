"""The incremental readers of jobs/download, fed chunk lists directly."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from helpers import rows_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncsdk import EmailRow, Verdict
from asyncsdk._serde import json_text as _json_text
from asyncsdk.resources.validation import readers as _stream
from asyncsdk.resources.validation.readers import (
    CsvRecordReader,
    JsonMemberReader,
    StreamDecodeError,
    Utf8Decoder,
)

HEADER = ["Email", "Name", "Status", "Role Based Emails"]


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in [*points, len(data)]:
        pieces.append(data[last:p])
        last = p
    return pieces


def every_split(data: bytes) -> list[list[bytes]]:
    """The body cut in two at every byte, and cut into single bytes."""
    return [[data[:i], data[i:]] for i in range(len(data) + 1)] + [
        [data[i:i + 1] for i in range(len(data))]]


def extract(chunks: list[bytes]) -> tuple[str, dict[str, object]]:
    decoder = Utf8Decoder()
    extractor = JsonMemberReader("result")
    out: list[str] = []
    for chunk in chunks:
        out += extractor.feed(decoder.decode(chunk))
    out += extractor.feed(decoder.decode(b"", True))
    extractor.finish()
    return "".join(out), extractor.fields


def parse_rows(chunks: list[bytes]) -> list[EmailRow]:
    decoder = Utf8Decoder()
    texts = [decoder.decode(chunk) for chunk in chunks]
    return rows_of([*texts, decoder.decode(b"", True)])


# --- UTF-8 ------------------------------------------------------------------------------
@pytest.mark.parametrize("body", [b"\xef", b"\xef\xbb"])
def test_a_body_cut_inside_a_bom_is_no_empty_text(body: bytes) -> None:
    """Before: utf-8-sig kept the bytes of a cut BOM waiting and dropped them at the end,
    so such a body read as an empty result."""
    decoder = Utf8Decoder()
    assert decoder.decode(body) == ""
    with pytest.raises(StreamDecodeError, match="unexpected end of data"):
        decoder.decode(b"", True)


@pytest.mark.parametrize(("body", "text"), [(b"", ""), (b"\xef\xbb\xbf", ""),
                                            (b"\xef\xbb\xbfa", "a")])
def test_a_whole_bom_is_dropped(body: bytes, text: str) -> None:
    decoder = Utf8Decoder()
    assert decoder.decode(body) + decoder.decode(b"", True) == text


# --- JSON string extraction --------------------------------------------------------------
TRICKY = 'a,"b""c"\r\nd\\e/f\tg\u00e9\u20ac\U0001F600 \u2028end'


@pytest.mark.parametrize("ascii_only", [True, False])
def test_result_survives_every_split_point(ascii_only: bool) -> None:
    body = json.dumps({"status": "success", "result": TRICKY},
                      ensure_ascii=ascii_only).encode()
    for chunks in every_split(body):
        text, fields = extract(chunks)
        assert text == TRICKY
        assert fields == {"status": "success"}


def test_surrogate_pair_split_between_escapes() -> None:
    body = b'{"result": "x\\ud83d\\ude00y", "status": "success"}'
    for chunks in every_split(body):
        assert extract(chunks)[0] == "x\U0001F600y"


def test_escaped_backslashes_before_u_are_text_at_every_split() -> None:
    body = b'{"result": "p\\\\u12q\\\\\\ud83d\\ude00\\\\"}'
    for chunks in every_split(body):
        assert extract(chunks)[0] == "p\\u12q\\\U0001F600\\"


def test_lone_surrogates_become_replacement_characters() -> None:
    assert extract([b'{"result": "a\\ud83db\\ude00c\\ud83d"}'])[0] == "a\ufffdb\ufffdc\ufffd"


def test_members_before_and_after_result_and_whitespace() -> None:
    body = (b' \n{ "status" : "success" ,\t"n": [1, {"x": "}\\""}], "ok": true, '
            b'"z": null, "num": -1.5e3, "result" : "r" , "error" : "later" }\n ')
    for chunks in every_split(body):
        text, fields = extract(chunks)
        assert text == "r"
        assert fields == {"status": "success", "n": [1, {"x": '}"'}], "ok": True,
                          "z": None, "num": -1500.0, "error": "later"}


def test_failure_answer_has_no_result() -> None:
    text, fields = extract([b'{"status":"fail","error":"List is currently Processing."}'])
    assert text == ""
    assert fields["error"] == "List is currently Processing."


@pytest.mark.parametrize("body", [
    b'["result"]', b'{"result": "abc', b'{"result": "a\\x"}', b'{"result": "\\u12G4"}',
    b'{"result": "a" "b"}', b'{"result": "a"} x', b'{"a" 1}', b'{"a": @}', b'{"a": [1}',
    b'{"result": "a", "result": "b"}', b'{"a": tru}', b'', b'{,}',
])
def test_malformed_json_is_refused(body: bytes) -> None:
    with pytest.raises(StreamDecodeError):
        extract([body])


def test_invalid_utf8_is_refused() -> None:
    with pytest.raises(StreamDecodeError, match="UTF-8"):
        extract([b'{"result": "\xff"}'])
    with pytest.raises(StreamDecodeError, match="UTF-8"):
        parse_rows([b"Email,Name,Status,Role Based Emails\n\xc3"])


def test_result_is_streamed_not_accumulated() -> None:
    extractor = JsonMemberReader("result")
    assert extractor.feed('{"status":"success","result":"') == []
    assert extractor.feed("abc") == ["abc"]  # handed out at once
    assert extractor.feed("\\n") == ["\n"]
    assert extractor.feed('"}') == []
    extractor.finish()


def _outcome(chunks: list[bytes]) -> object:
    try:
        return extract(chunks)
    except StreamDecodeError:
        return StreamDecodeError


#: Strings that orjson and the json scanner must read alike, or refuse alike, wherever cut.
ORJSON_CASES = [
    json.dumps({"status": "success", "result": TRICKY}).encode(),
    json.dumps({"result": 'a,"b""c"\r\n' * 5, "status": "success"}).encode(),
    b'{"result": "p\\\\u12q\\\\\\ud83d\\ude00\\\\"}',
    b'{"result": "a\\ud83db\\ude00c\\ud83d", "status": "success"}',
    b'{"result": "a\\x"}', b'{"result": "\\u12G4"}', b'{"result": "a\x01b"}',
    b'{"result": "ab\\"}', b'{"result": "a\\/b\\bc\\fd"}', b'{"result": "\\u0000"}',
]


@pytest.mark.skipif(_json_text._orjson_loads is None, reason="orjson (speedups) not installed")
@pytest.mark.parametrize("body", ORJSON_CASES)
def test_orjson_and_the_json_scanner_read_result_strings_alike(
    body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the speedups extra a piece of ``result`` that holds no closing quote is
    decoded by orjson; what comes out (or the refusal) is what the json scanner gives."""
    splits = every_split(body)
    fast = [_outcome(chunks) for chunks in splits]
    monkeypatch.setattr(_json_text, "_orjson_loads", None)
    assert fast == [_outcome(chunks) for chunks in splits]


@pytest.mark.skipif(_json_text._orjson_loads is None, reason="orjson (speedups) not installed")
def test_orjson_decodes_a_piece_only_while_the_string_goes_on() -> None:
    """The fast path is live: a piece with every quote escaped is decoded by orjson; one
    that holds the closing quote, a lone surrogate or a bad escape is left to the json
    scanner (None)."""
    assert _json_text._whole_piece('a,\\"b\\"\\r\\n\\u00e9') == 'a,"b"\r\n\u00e9'
    assert _json_text._whole_piece("") == ""
    for piece in ('ab", "status": "success"}', "ab\\ud800", "ab\\x", 'ab"'):
        assert _json_text._whole_piece(piece) is None


@pytest.mark.skipif(_json_text._orjson_loads is None, reason="orjson (speedups) not installed")
@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60), ascii_only=st.booleans(),
       cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_orjson_result_strings_at_random_cuts(
    text: str, ascii_only: bool, cuts: list[int]
) -> None:
    body = json.dumps({"result": text, "status": "success"}, ensure_ascii=ascii_only)
    try:
        data = body.encode()
    except UnicodeEncodeError:  # a lone surrogate, raw: not UTF-8
        return
    chunks = split_at(data, cuts)
    fast = _outcome(chunks)
    saved, _json_text._orjson_loads = _json_text._orjson_loads, None
    try:
        assert fast == _outcome(chunks)
    finally:
        _json_text._orjson_loads = saved


# --- CSV ---------------------------------------------------------------------------------
def test_csv_quoted_fields_crlf_bom_and_any_column_order() -> None:
    body = ("\ufeffrole based emails ,STATUS,extra,Email,name\r\n"
            'True,Valid,x,"a@b.com","Doe, ""JD""\r\nJr"\r\n'
            "0,Bounce,y,c@d.com,\r\n"
            "\r\n"
            "1,Weird,z,e@f.com,É\r\n").encode()
    expected = [
        EmailRow(email="a@b.com", name='Doe, "JD"\r\nJr', status=Verdict.VALID,
                 role_based=True),
        EmailRow(email="c@d.com", name="", status=Verdict.BOUNCE, role_based=False),
        EmailRow(email="e@f.com", name="É", status="Weird", role_based=True),
    ]
    for chunks in every_split(body):
        assert parse_rows(chunks) == expected


@pytest.mark.parametrize(("text", "value"), [
    ("True", True), ("False", False), ("true", True), ("FALSE", False), ("1", True),
    ("0", False), ("Yes", True), ("no", False), ("YES", True), ("Y", True), ("n", False),
    (" tRuE ", True), ("nO", False), ("maybe", None), ("", None), ("2", None),
    ("yess", None), ("t", None)])
def test_role_based_values(text: str, value: bool | None) -> None:
    """Regression: anything but True/False/1/0 failed the whole download; now the
    common spellings are read in any case and an unknown flag is None."""
    rows = parse_rows([f"Email,Name,Status,Role Based Emails\na@b.com,A,Valid,{text}".encode()])
    assert rows[0].role_based is value


@pytest.mark.parametrize("body", [
    b"Email,Name,Status\na@b.com,A,Valid\n",  # no Role Based Emails column
    b"Name,Status,Role Based Emails\nA,Valid,True\n",  # no Email column
    b"Email,Name,Status,Role Based Emails\na@b.com,A\n",  # short record
    b'Email,Name,Status,Role Based Emails\n"a@b.com,A,Valid,True\n',  # unterminated quote
    b'Email,Name,Status,Role Based Emails\n"a"b,A,Valid,True\n',  # text after a quote
    b"",  # no header at all
])
def test_broken_csv_is_refused(body: bytes) -> None:
    with pytest.raises(StreamDecodeError):
        parse_rows(every_split(body)[len(body) // 2])


def test_header_only_gives_no_rows() -> None:
    assert parse_rows([b"Email,Name,Status,Role Based Emails\r\n"]) == []


def test_csv_reader_keeps_only_an_unfinished_record() -> None:
    reader = CsvRecordReader()
    assert reader.feed('a,"b\n') == []
    assert reader.feed('c",d\ne,f') == [["a", "b\nc", "d"]]
    assert reader.finish() == [["e", "f"]]


def test_runaway_record_is_refused() -> None:
    reader = CsvRecordReader()
    reader.feed('a,"b')
    for _ in range(4):  # 900,000 characters of one unfinished record: still kept
        reader.feed('\n","x' * 45_000)
    with pytest.raises(StreamDecodeError, match="too long"):
        reader.feed('\n","x' * 45_000)


def test_a_field_over_the_csv_field_limit_is_refused_as_csv_refuses_it() -> None:
    reader = CsvRecordReader()
    reader.feed('a,"b')
    reader.feed("x\n" * 60_000)  # 120,000 characters: within csv's field limit
    with pytest.raises(StreamDecodeError, match="field limit"):
        reader.feed("x\n" * 10_000)


#: Every line boundary of ``str.splitlines``: only CR, LF and CRLF end a CSV line.
LINE_BOUNDARIES = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from([*LINE_BOUNDARIES, "a", ",", '"']), max_size=40))
def test_csv_lines_are_the_lines_csv_reads_from_io(text: str) -> None:
    # The quick path hands csv ``splitlines`` lines where that is the same thing.
    assert list(_stream._lines(text)) == list(io.StringIO(text, newline=""))


@settings(max_examples=200, deadline=None)
@given(records=st.lists(st.lists(st.text(st.sampled_from(
           [*LINE_BOUNDARIES, "x", ",", '"']), max_size=6), min_size=1, max_size=4),
           min_size=1, max_size=8),
       cuts=st.lists(st.integers(0, 300), max_size=6))
def test_csv_reader_reads_other_line_boundaries_as_text(
    records: list[list[str]], cuts: list[int],
) -> None:
    # csv.writer quotes a field with CR, LF or a quote, not one with a form feed (say):
    # those stay inside unquoted fields, where only the io lines keep them whole.
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(records)
    text = out.getvalue()
    reader = CsvRecordReader()
    got: list[list[str]] = []
    at = 0
    for cut in [*sorted(cuts), len(text)]:
        got += reader.feed(text[at:cut])
        at = max(at, cut)
    got += reader.finish()
    assert got == list(csv.reader(io.StringIO(text, newline=""), strict=True))


def test_a_quote_inside_an_unquoted_field_is_text_as_csv_reads_it() -> None:
    reader = CsvRecordReader()
    text = 'a,O"Brien,c\r\nd,"e\nf",g\r\n'
    assert reader.feed(text) == [["a", 'O"Brien', "c"], ["d", "e\nf", "g"]]
    assert reader.feed('h,"i\n') == []  # the cut inside a quoted field: the record waits
    assert reader.feed('j",k\n') == [["h", "i\nj", "k"]]
    assert reader.finish() == []


# --- round trip --------------------------------------------------------------------------
# (no NUL on Python 3.10: its csv module neither writes nor reads one)
field_text = st.text(st.characters(
    codec="utf-8", exclude_categories=("Cs",),
    exclude_characters="\x00" if sys.version_info < (3, 11) else ""), max_size=12)
row_values = st.tuples(field_text, field_text,
                       st.sampled_from([*(v.value for v in Verdict), "Other"]),
                       st.booleans())


def serialise(rows: list[tuple[str, str, str, bool]], role_style: int) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for email, name, status, role in rows:
        shown = [str(role), str(role).lower(), str(int(role))][role_style]
        writer.writerow([email, name, status, shown])
    return out.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row_values, max_size=12), role_style=st.integers(0, 2),
       as_json=st.booleans(), ascii_only=st.booleans(),
       cuts=st.lists(st.integers(0, 10_000), max_size=25))
def test_rows_round_trip_in_random_chunks(
    rows: list[tuple[str, str, str, bool]], role_style: int, as_json: bool,
    ascii_only: bool, cuts: list[int],
) -> None:
    text = serialise(rows, role_style)
    if as_json:
        body = json.dumps({"status": "success", "result": text},
                          ensure_ascii=ascii_only).encode()
        decoded, _ = extract(split_at(body, cuts))
        assert decoded == text
        body = decoded.encode()
    else:
        body = text.encode()
    got = parse_rows(split_at(body, cuts))
    # Leading/trailing white space of the email is not significant.
    expected = [
        EmailRow(email=e.strip(), name=n, status=Verdict(s) if s != "Other" else s,
                 role_based=r)
        for e, n, s, r in rows
    ]
    assert got == expected


def test_rows_are_genuine_email_rows_built_by_their_constructor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every row is made by one call of ``EmailRow``'s constructor (before, issue 27: as
    a "filler" subclass whose class was then swapped), and is an EmailRow in every way
    (type, equality, hash, repr, frozen, evolve, pickle, weak references).
    ``RowBuilder`` makes each row in the two steps of ``EmailRow(...)``
    (``object.__new__``, then ``EmailRow.__init__``): that is the constructor only while
    the class has a plain ``type`` and no ``__new__`` of its own."""
    import pickle
    import weakref

    import attrs

    assert type(EmailRow) is type and EmailRow.__new__ is object.__new__
    body = (b"Status,Email,Role Based Emails,Name\r\nvalid,a@b.com,yes,Ann\r\n"
            b"Odd, c@d.com ,x,\r\n\r\nCatchAll,e@f.g,0,E\r\n")
    made: list[dict[str, Any]] = []
    original = EmailRow.__init__

    def counting(self: EmailRow, **kwargs: Any) -> None:
        made.append(kwargs)
        original(self, **kwargs)

    monkeypatch.setattr(EmailRow, "__init__", counting)
    got = parse_rows([body])
    monkeypatch.undo()
    expected = [
        EmailRow(email="a@b.com", name="Ann", status=Verdict.VALID, role_based=True),
        EmailRow(email="c@d.com", name="", status=Verdict("Odd"), role_based=None),
        EmailRow(email="e@f.g", name="E", status=Verdict.CATCH_ALL, role_based=False)]
    assert got == expected
    assert made == [attrs.asdict(row) for row in expected]
    for row, want in zip(got, expected, strict=True):
        assert type(row) is EmailRow
        assert hash(row) == hash(want) and repr(row) == repr(want)
        assert attrs.asdict(row) == attrs.asdict(want)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            row.email = "x"  # type: ignore[misc]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            del row.email  # type: ignore[misc]
        assert attrs.evolve(row, name="Z") == attrs.evolve(want, name="Z")
        assert pickle.loads(pickle.dumps(row)) == want
        assert weakref.ref(row)() is row


def test_a_row_model_with_a_validator_has_it_run_for_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows go through the model's own constructor, so whatever the model checks is
    checked for every row (shown with a row model whose email has a validator)."""
    import attrs

    from asyncsdk.resources.validation import rows as _rows

    checked: list[str] = []

    @attrs.frozen(kw_only=True)
    class Validated:
        email: str = attrs.field(validator=lambda _, __, value: checked.append(value))
        name: str
        status: Verdict
        role_based: bool | None

    monkeypatch.setattr(_rows, "EmailRow", Validated)
    got = parse_rows([b"Email,Status,Role Based Emails\r\na@b.c,Valid,1\r\nd@e.f,Bounce,0\r\n"])
    assert [type(row) for row in got] == [Validated, Validated]
    assert checked == ["a@b.c", "d@e.f"]


def test_an_index_error_of_the_row_model_is_its_own_not_a_short_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The row builder stops at an ``IndexError`` to find a blank or short record: one
    raised by the model's constructor for a whole record goes on up as it is."""
    import attrs

    from asyncsdk.resources.validation import rows as _rows

    def refuse(_: object, __: object, value: str) -> None:
        if value == "bad@b.c":
            raise IndexError("the model's own")

    @attrs.frozen(kw_only=True)
    class Picky:
        email: str = attrs.field(validator=refuse)
        name: str
        status: Verdict
        role_based: bool | None

    monkeypatch.setattr(_rows, "EmailRow", Picky)
    with pytest.raises(IndexError, match="the model's own"):
        parse_rows([b"Email,Status,Role Based Emails\r\na@b.c,Valid,1\r\nbad@b.c,Bounce,0\r\n"])


def test_rows_before_a_malformed_batch_come_first_then_the_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """rows() reads a piece in ``CSV_BATCH_CHARS`` batches: the rows of the batches before
    the one holding a malformed record are yielded, in order and right, then it raises."""
    import asyncio

    from asyncsdk import _constants
    from asyncsdk.resources.validation.rows import email_rows

    monkeypatch.setattr(_constants, "CSV_BATCH_CHARS", 64)
    good = [f"u{i}@example.com,N{i},Valid,yes\r\n" for i in range(20)]
    text = "Email,Name,Status,Role Based Emails\r\n" + "".join(good) + '"a"b,x,Valid,no\r\n'
    got: list[EmailRow] = []

    async def read() -> None:
        async def pieces() -> AsyncGenerator[str, None]:
            yield text  # one piece: the batches are cut inside it

        async for row in email_rows(pieces(), lambda error: error):
            got.append(row)

    with pytest.raises(StreamDecodeError, match="malformed CSV"):
        asyncio.run(read())
    expected = [EmailRow(email=f"u{i}@example.com", name=f"N{i}", status=Verdict.VALID,
                         role_based=True) for i in range(20)]
    assert len(got) >= 15  # all but the last batch or so
    assert got == expected[:len(got)]
