"""The one JSON member tokenizer (``_serde.json_text``) reads what ``json.loads`` reads,
wherever the text is cut: pushed piece by piece (jobs/download) or pulled a window at a
time (a big answer in memory), member names, values read whole and strings streamed.

Where ``json.loads`` refuses a document, the tokenizer refuses it too
(``StreamDecodeError``); a value arriving in many small pieces is parsed once.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncsdk._serde.json_text import END, LOADS_SCAN, MORE, JsonText, Members, StreamDecodeError
from asyncsdk.resources.validation.readers import JsonMemberReader

PROPERTY = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

texts = st.text(max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12)
objects = st.dictionaries(texts, json_values, max_size=6)
layouts = st.sampled_from([{}, {"separators": (",", ":")}, {"indent": 1},
                           {"ensure_ascii": False}, {"separators": (" ,\n", " :\t")}])


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    out, last = [], 0
    for point in [*points, len(text)]:
        out.append(text[last:point])
        last = point
    return out


def no_lone_surrogates(text: str) -> str:
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


#: A member no document here has: nothing is streamed.
NONE = "\x00 none"


def pushed(pieces: list[str], streamed: str = NONE) -> dict[str, Any]:
    """The members of the pieces' object as the jobs/download reader reads them, fed
    piece by piece (the ``streamed`` member's pieces joined)."""
    return read(JsonMemberReader(streamed), pieces)


def read(reader: JsonMemberReader, pieces: list[str]) -> dict[str, Any]:
    streamed: list[str] = []
    for piece in pieces:
        streamed += reader.feed(piece)
    reader.finish()
    return {**reader.fields, **({reader.member: "".join(streamed)} if reader.started else {})}


def pulled(document: str, window: int) -> dict[str, Any]:
    """The members of ``document``, pulled ``amount`` characters at a time."""
    taken = 0

    def refill(amount: int) -> str | None:
        nonlocal taken
        if taken >= len(document):
            return None
        start, taken = taken, taken + amount
        return document[start:taken]

    return read(JsonMemberReader(NONE, JsonText(refill, window=window)), [""])


@PROPERTY
@given(value=objects, layout=layouts, cuts=st.lists(st.integers(0, 10**6), max_size=12))
def test_members_read_from_pushed_pieces_are_json_loads(
    value: dict[str, Any], layout: dict[str, Any], cuts: list[int],
) -> None:
    document = json.dumps(value, **layout)
    assert pushed(pieces_of(document, cuts)) == json.loads(document)


@PROPERTY
@given(value=objects, layout=layouts)
def test_members_read_from_pushed_single_characters_are_json_loads(
    value: dict[str, Any], layout: dict[str, Any],
) -> None:
    document = json.dumps(value, **layout)
    assert pushed(list(document)) == json.loads(document)


@PROPERTY
@given(value=objects, layout=layouts, window=st.integers(1, 64))
def test_members_read_from_a_pulled_window_are_json_loads(
    value: dict[str, Any], layout: dict[str, Any], window: int,
) -> None:
    document = json.dumps(value, **layout)
    assert pulled(document, window) == json.loads(document)


@PROPERTY
@given(value=objects, streamed=st.text(max_size=40), layout=layouts,
       cuts=st.lists(st.integers(0, 10**6), max_size=12))
def test_a_streamed_string_member_is_the_string_json_loads_reads(
    value: dict[str, Any], streamed: str, layout: dict[str, Any], cuts: list[int],
) -> None:
    """A string handed out piece by piece as it arrives: joined, the string
    ``json.loads`` reads (a lone surrogate, which UTF-8 cannot carry, as U+FFFD); the
    other members beside it as ``json.loads`` reads them."""
    value = {**value, "result": streamed}
    document = json.dumps(value, **layout)
    got = pushed(pieces_of(document, cuts), streamed="result")
    expected = json.loads(document)
    assert got.pop("result") == no_lone_surrogates(expected.pop("result"))
    assert got == expected


def test_every_cut_of_a_document_with_escapes_reads_the_same() -> None:
    value = {"a\\\"b": "x\\u00e9\ud83d\ude00\"\n", "n": [-1.5e-3, 12345678901234567890],
             "o": {"k": [True, False, None, "]}"]}, "s": "\ud800", "e": ""}
    for layout in ({}, {"ensure_ascii": False}):
        document = json.dumps(value, **layout)
        for cut in range(len(document) + 1):
            assert pushed([document[:cut], document[cut:]]) == json.loads(document), cut


@PROPERTY
@given(value=objects, cut=st.integers(0, 400),
       junk=st.sampled_from(["", "x", "]", "}", ",", " ", "{", "1", '"', "\\", ":"]),
       cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_what_json_loads_refuses_the_tokenizer_refuses(
    value: dict[str, Any], cut: int, junk: str, cuts: list[int],
) -> None:
    whole = json.dumps(value)
    document = whole[:cut] + junk + whole[cut:]
    try:
        expected = json.loads(document)
    except ValueError:
        expected = StreamDecodeError
    if not isinstance(expected, dict):
        expected = StreamDecodeError
    try:
        got: Any = pushed(pieces_of(document, cuts))
    except StreamDecodeError:
        got = StreamDecodeError
    assert got == expected


@pytest.mark.parametrize("body", ['{"a": 1', '{"a" 1}', '{"a": [1}', '{"a": 1,}', '{,}',
                                  '{"a": tru}', '["a"]', '{"a": 1} x', '{"a": "b\x01"}',
                                  '{"a": "\\x"}', '{"a\\x": 1}', '{"a": 1 "b": 2}', ""])
def test_malformed_objects_are_refused_wherever_cut(body: str) -> None:
    for cut in range(len(body) + 1):
        with pytest.raises(StreamDecodeError):
            pushed([body[:cut], body[cut:]])


def test_nan_and_infinity_are_read_as_json_loads_reads_them() -> None:
    document = '{"a": NaN, "b": -Infinity, "c": Infinity}'
    got = pushed(list(document))
    assert repr(got) == repr(json.loads(document))


def test_a_value_arriving_a_character_at_a_time_is_parsed_once() -> None:
    """Linear work: the end of a value read whole is found as its pieces come (each
    character looked at once), and the value parsed once, not once per piece."""
    calls: list[int] = []

    def scan(text: str, pos: int) -> tuple[Any, int]:
        calls.append(len(text) - pos)
        return LOADS_SCAN(text, pos)

    nested = {"k": [{"s": 'x"]}' * 50, "n": list(range(200))}] * 20}
    document = json.dumps({"big": nested, "n": 12345, "s": "a\\\"" * 300})
    reader = JsonMemberReader(NONE, JsonText(scan=scan))
    assert read(reader, list(document)) == json.loads(document)
    assert len(calls) == 3
    assert sum(calls) < 2 * len(document)


def test_a_pushed_value_longer_than_its_cap_is_refused() -> None:
    reader = JsonMemberReader(NONE, JsonText(max_value=100))
    reader.feed('{"a": [' + "1, " * 20)
    with pytest.raises(StreamDecodeError, match="longer than 100"):
        reader.feed("1, " * 20)
    reader = JsonMemberReader(NONE, JsonText(max_value=100))
    with pytest.raises(StreamDecodeError, match="longer than 100"):  # whole, still too long
        reader.feed('{"a": "' + "x" * 120 + '", "b": 1}')


def test_a_long_pushed_key_is_refused_past_its_cap() -> None:
    text = JsonText()
    members = Members(text, max_key=100)
    text.feed('{"' + "k" * 60)
    assert members.next() is MORE
    text.feed("k" * 60)
    with pytest.raises(StreamDecodeError, match="too long"):
        members.next()


def test_the_walk_resumes_where_the_text_was_cut() -> None:
    text = JsonText()
    members = Members(text)
    for piece, expected in [("  ", MORE), ("{", MORE), (' "ab', MORE), ('c" ', MORE),
                            (": ", MORE), ("1", "abc")]:
        text.feed(piece)
        assert members.next() == expected
    text.feed("2 }")
    assert text.whole() == 12
    assert members.next() is END


def test_the_pieces_of_a_value_wait_uncopied_until_it_ends() -> None:
    """Linear work (regression): while a value read whole is cut, each new piece was
    appended to the window, copying all of the value so far again (quadratic for a
    value dribbled a character at a time, up to its 64 K cap). Now the pieces wait in a
    list, each looked at once, and are joined once the value ends."""
    text = JsonText()
    members = Members(text)
    text.feed('{"a": [')
    assert members.next() == "a"
    assert text.whole() is MORE
    for _ in range(5_000):
        text.feed("1,")
        assert text.whole() is MORE
        assert len(text.text) < 20  # the window is not copied again for each piece
    text.feed('1], "b": 2}')
    assert text.whole() == [1] * 5_001
    assert members.next() == "b"
    assert text.whole() == 2
    assert members.next() is END
