"""A long member name costs the big-answer reader linear work, as a long string value
does and as ``json.loads`` does (issue 29, item 4). Before, a name cut by the text
window's edge was scanned again from its start after each window more (a 24 MiB name:
about 1.1 s, against 0.05 s for ``json.loads``; four times the length took 12-18 times
as long), and every member below it carried the whole name in its place's key.

No clock here: the work is counted (characters handed to the string scanner, place
keys built), so the test fails on quadratic behaviour on any machine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from asyncsdk._serde import big_json, json_text
from asyncsdk._serde.big_json import read_json


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The characters the string scanner was given to read past, call by call."""
    work: list[int] = []
    real = json_text._scanstring

    def counting(text: str, pos: int, strict: bool) -> tuple[str, int]:
        work.append(len(text) - pos)
        return real(text, pos, strict)

    monkeypatch.setattr(json_text, "_scanstring", counting)
    return work


@pytest.mark.parametrize("length", [10_000, 100_000, 400_000])
def test_a_long_member_name_is_scanned_in_linear_work(scanned: list[int],
                                                      length: int) -> None:
    name = "n" * (length - 7) + "\\u00e9ab"  # an escape near its end
    body = json.dumps([{name: 1, "k": "v"}, {"short": 2}]).encode()
    assert read_json(body, window=256, slice_chars=64) == json.loads(body)
    # doubling the window on each cut: the scans add up to a few times the name
    assert sum(scanned) <= 4 * length + 64 * 1024, (sum(scanned), length)
    assert len(scanned) <= 40


def test_long_names_do_not_make_long_place_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Members below a long name are read one by one (big records, small slices): the
    place of each was ``$.<name>[].<member>``, a copy of the whole name per member."""
    built: list[int] = []
    real_value = big_json._Reader.value

    def value(self: Any, place: str, depth: int) -> Any:
        built.append(len(place))
        return real_value(self, place, depth)

    monkeypatch.setattr(big_json._Reader, "value", value)
    name = "x" * 50_000
    records = [{"a": i, "b": "y" * 60, "c": [i, i], "d": {"e": i}} for i in range(300)]
    body = json.dumps({name: records}).encode()
    assert read_json(body, window=4096, slice_chars=40) == json.loads(body)
    assert sum(built) <= 10 * len(body), (sum(built), len(body))
