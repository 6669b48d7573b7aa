"""A big JSON array read in short C calls, for a worker thread (see ``read_json_array``).

Parsing a multi-megabyte listing with one ``json.loads`` holds the GIL for the whole
parse, so the event loop cannot run meanwhile even though the parse is in another
thread. Read element by element, the longest stretch is one element's parse.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from typing import Any

from . import _constants as C

__all__ = ["read_json_array", "same"]

_SPACE = re.compile(r"[ \t\n\r]*")


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON (orjson refuses them too)


_scan = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode


def same(item: Any) -> Any:
    """The element itself (``each`` of ``read_json_array`` that keeps the parsed data)."""
    return item


def read_json_array(raw: bytes, each: Callable[[Any], Any],
                    window: int = C.OFFLOAD_WINDOW_BYTES) -> list[Any] | None:
    """``[each(element) for element in json.loads(raw)]`` for a UTF-8 JSON array, in
    short C calls: the body is decoded to text ``window`` bytes at a time and each
    element parsed (``json.JSONDecoder.raw_decode``), handed to ``each`` and dropped
    before the next. Run in a worker thread, so the event loop gets the GIL between
    those calls (one C call holding it is as long as one element's parse).

    None when the body is anything else (not an array, not UTF-8 JSON, NaN, something
    after the array): the caller then reads it the ordinary way, which gives the error.
    An element that does not fit the window widens it (doubling, so a huge element costs
    no more than a plain parse).
    """
    decode_text = codecs.getincrementaldecoder("utf-8")().decode
    view = memoryview(raw)
    size = len(raw)
    taken = 0
    text = ""
    pos = 0

    def more(amount: int) -> bool:  # the next ``amount`` bytes as text onto ``text``
        nonlocal text, pos, taken
        if taken >= size:
            return False
        end = min(size, taken + amount)
        text = text[pos:] + decode_text(view[taken:end], end == size)
        pos, taken = 0, end
        return True

    def next_char() -> str:  # the next character that is not white space ("" at the end)
        nonlocal pos
        while True:
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if pos < len(text) or not more(window):
                return text[pos:pos + 1]

    out: list[Any] = []
    try:
        if next_char() != "[":
            return None
        pos += 1
        if next_char() == "]":
            pos += 1
        else:
            while True:
                grow = window
                while True:
                    try:
                        item, end = _scan(text, pos)
                    except json.JSONDecodeError:
                        if taken >= size:
                            return None  # bad JSON
                        # else cut by the window's edge: widen it
                    else:
                        # Complete only where "," or "]" follows: a number cut by the
                        # window's edge ("1." of "1.5") parses too.
                        after = _SPACE.match(text, end).end()  # type: ignore[union-attr]
                        if (after < len(text) and text[after] in ",]") or taken >= size:
                            break
                    more(grow)
                    grow *= 2
                pos = end
                out.append(each(item))
                del item
                mark = next_char()
                pos += 1
                if mark == "]":
                    break
                if mark != ",":
                    return None
                next_char()
        if next_char():
            return None  # something after the array
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError too
        return None
    return out
