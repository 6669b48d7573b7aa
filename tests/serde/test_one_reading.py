"""One answer, one reading (issue 29, item 3): every element of an answer is read as
``json.loads`` reads it, whatever the answer's size, wherever the slices of the big-answer
reader fall, and with or without the ``speedups`` extra (orjson).

Before, with orjson installed, one 6,000-record listing read ``2**70 + 1`` as an exact
int in its first and last records and as a rounded float in the 5,998 others: runs of
records went to orjson (which reads an integer beyond 64 bits as a float), single
elements to the ``json`` scanner. orjson is now used only where it reads what ``json``
reads: a document holding a run of 19 digits or more is read by ``json`` alone.

The differential tests run with the real orjson where it is installed (CI's second run)
and always with ``like_orjson``, a stand-in with orjson's documented differences.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncsdk._core import answer as _answer
from asyncsdk._serde import big_json
from asyncsdk._serde.big_json import NOT_READ, parse_json, read_json

PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

INT64_MIN, UINT64_END = -(2**63), 2**64


def _refuse(name: str) -> Any:
    raise ValueError(name)


def like_orjson(text: str | bytes) -> Any:
    """orjson's reading where it differs from ``json.loads``: an integer beyond 64 bits
    becomes a float; NaN, Infinity, a number beyond a double and a lone surrogate are
    refused."""
    if isinstance(text, bytes):
        text = text.decode()
    if "\\ud8" in text.lower() or "\\udc" in text.lower():
        raise ValueError("lone surrogate (as orjson refuses it)")

    def number(digits: str) -> Any:
        value = int(digits)
        return value if INT64_MIN <= value < UINT64_END else float(value)

    def real(digits: str) -> float:
        value = float(digits)
        if math.isinf(value):
            raise ValueError("number is infinity when parsed as double")
        return value

    return json.loads(text, parse_int=number, parse_float=real, parse_constant=_refuse)


def fast_parsers() -> list[Any]:
    parsers: list[Any] = [pytest.param(like_orjson, id="like-orjson")]
    try:
        import orjson
    except ImportError:
        parsers.append(pytest.param(None, id="orjson",
                                    marks=pytest.mark.skip(reason="orjson not installed")))
    else:
        parsers.append(pytest.param(orjson.loads, id="orjson"))
    return parsers


def same(got: Any, expected: Any) -> bool:
    """Equal and of the same types all the way down (``1 == 1.0`` is not the same)."""
    if type(got) is not type(expected):
        return False
    if isinstance(expected, dict):
        return list(got) == list(expected) and all(same(got[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return len(got) == len(expected) and all(map(same, got, expected))
    if isinstance(expected, float) and math.isnan(expected):
        return math.isnan(got)
    return bool(got == expected)


#: Values ``json`` and orjson read differently, or that orjson refuses.
ODD = ["1180591620717411303425",  # 2**70 + 1: a float to orjson
       "18446744073709551616", "-9223372036854775809",  # just past 64 bits
       "18446744073709551615", "-9223372036854775808",  # just within
       '"\\ud800"', "1e400", '"12345678901234567890123"']


def record(i: int, odd: str | None) -> str:
    tail = f', "odd": {odd}' if odd is not None else ""
    return (f'{{"id": {i}, "email": "u{i}@example.com", "score": {i * 0.25}, '
            f'"tags": ["a", "b"]{tail}}}')


def listing(size: int, odd: dict[int, str], every: str | None = None) -> bytes:
    return ("[" + ", ".join(record(i, odd.get(i, every)) for i in range(size))
            + "]").encode()


@pytest.mark.parametrize("fast", fast_parsers())
def test_the_issues_listing_reads_every_big_integer_exactly(fast: Callable[[str], Any],
                                                           ) -> None:
    body = listing(6_000, {}, every=str(2**70 + 1))
    got = read_json(body, loads=fast)
    assert got is not NOT_READ
    kinds = {type(item["odd"]) for item in got}
    assert kinds == {int}, kinds
    assert all(item["odd"] == 2**70 + 1 for item in got)
    assert same(got, json.loads(body))


@PROPERTY
@given(size=st.integers(1, 400), places=st.lists(st.integers(0, 399), max_size=4),
       odd=st.sampled_from(ODD), window=st.sampled_from([64, 512, 4096, 1 << 18]),
       slice_chars=st.sampled_from([40, 300, 2_000, 64 * 1024]))
def test_every_element_reads_as_json_loads_whatever_the_size_and_the_slices(
    size: int, places: list[int], odd: str, window: int, slice_chars: int,
) -> None:
    body = listing(size, {p % size: odd for p in places})
    expected = json.loads(body)
    for fast in [like_orjson, *_real_orjson()]:
        got = read_json(body, window=window, slice_chars=slice_chars, loads=fast)
        assert same(got, expected), (fast, odd, places)
        assert same(parse_json_with(fast, body), expected)


def _real_orjson() -> list[Callable[[Any], Any]]:
    try:
        import orjson
    except ImportError:
        return []
    return [orjson.loads]


def parse_json_with(fast: Callable[[Any], Any], body: bytes) -> Any:
    """``parse_json`` (a small answer's reading) with ``fast`` as the speedups' parser."""
    saved = big_json.FAST_LOADS
    big_json.FAST_LOADS = fast
    try:
        return parse_json(body)
    finally:
        big_json.FAST_LOADS = saved


@pytest.mark.parametrize("fast", fast_parsers())
@pytest.mark.parametrize("odd", ODD)
def test_a_small_answer_reads_as_a_big_one(fast: Callable[[Any], Any], odd: str) -> None:
    """The small answers' reading (``parse_json``, one call) is the big one's."""
    for size in (1, 3, 700):
        body = listing(size, {0: odd, size - 1: odd})
        assert same(parse_json_with(fast, body), json.loads(body))
        assert same(read_json(body, slice_chars=300, loads=fast), json.loads(body))


def test_the_answer_interpreter_reads_with_parse_json() -> None:
    """What the transport uses: ``parse_json`` for a small answer, the speedups' parser
    (or None) for the runs of a big one."""
    assert _answer._json_loads is parse_json
    assert _answer._run_loads() is big_json.FAST_LOADS


@pytest.mark.parametrize("fast", fast_parsers())
def test_nan_and_a_bom_read_as_json_loads_reads_them(fast: Callable[[Any], Any]) -> None:
    """What orjson refuses and ``json.loads`` reads is read, as without the extra."""
    for body in (b"[1, NaN]", b'\xef\xbb\xbf{"a": 1}', b'{"a": "\\udc00"}'):
        assert same(parse_json_with(fast, body), json.loads(body))
    with pytest.raises(ValueError):
        parse_json_with(fast, b"[1,]")


@pytest.mark.parametrize("shift", [-19, -10, -1, 0, 1])
def test_a_long_number_across_the_looks_megabyte_edge_is_seen(shift: int) -> None:
    """``fast_is_exact`` looks at a big body a megabyte at a time: a run of digits cut by
    that edge is still seen (the looks overlap)."""
    number = str(2**70 + 1)  # 22 digits
    head = b'[{"pad": "' + b"x" * ((1 << 20) + shift - 14) + b'"}, '
    body = head + number.encode() + b"]"
    assert body.index(number.encode()) == (1 << 20) + shift
    assert not big_json.fast_is_exact(body)
    assert big_json.fast_is_exact(body.replace(number.encode(), b"1" * 18))
    got = read_json(body, loads=like_orjson)
    assert same(got, json.loads(body))


def test_a_big_answer_with_a_byte_order_mark_is_read_in_slices() -> None:
    """A UTF-8 byte order mark first is dropped by the big-answer reader, as
    ``json.loads`` of bytes drops it: the body is read in slices (not handed back as
    ``NOT_READ``, which the caller would parse whole, holding the loop), wherever the
    window cuts the mark."""
    body = b"\xef\xbb\xbf" + json.dumps([{"id": i, "name": "\u00e9"} for i in range(30)],
                                        ensure_ascii=False).encode()
    for window in range(1, 12):
        got = read_json(body, window=window, slice_chars=40)
        assert got is not big_json.NOT_READ and same(got, json.loads(body)), window
    # Only first: anywhere else it is a character, no JSON outside a string.
    assert read_json(b"[1, \xef\xbb\xbf2]") is big_json.NOT_READ
    assert read_json(b"\xef\xbb\xbf\xef\xbb\xbf[1]") is big_json.NOT_READ
