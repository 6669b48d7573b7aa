"""A big JSON document read in short C calls, for a worker thread (see ``read_json``),
and ``gil_sharer``, which lets the event loop in while that thread works.

Parsing a multi-megabyte listing with one ``json.loads`` holds the GIL for the whole
parse, so the event loop cannot run meanwhile even though the parse is in another
thread. Read in pieces, no single C call covers much of the body; and since a thread
that wants the GIL otherwise waits the interpreter's switch interval (5 ms) before it is
handed over, the worker also steps aside every ``OFFLOAD_SHARE_SECONDS``.
"""

from __future__ import annotations

import codecs
import json
import re
import time
from collections.abc import Callable
from typing import Any

from .. import _constants as C

__all__ = ["NOT_READ", "gil_sharer", "read_json"]

_SPACE = re.compile(r"[ \t\n\r]*")
_WHITE = " \t\n\r"
#: Characters that may continue a number: a number cut by the text window's edge
#: ("1." of "1.5", "1e" of "1e5") is followed by one of them.
_NUMBER_GOES_ON = frozenset("0123456789.eE+-")
#: Containers nested deeper than this are parsed whole, however big.
_MAX_DESCENT = 16
#: Places learned at most (then the members of an object at an unknown key share one).
_MAX_PLACES = 1024

_clock = time.perf_counter
_sleep = time.sleep


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON (orjson refuses them too)


_scan = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode
#: The C string scanner ``json`` itself uses (not in its typed surface).
_scan_string: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class _Bad(Exception):
    """The body is not JSON (the caller reads it the ordinary way)."""


def gil_sharer(every: float = C.OFFLOAD_SHARE_SECONDS) -> Callable[[], None]:
    """A function for a worker thread to call often (it costs a clock read): once
    ``every`` seconds have passed since it last stepped aside, it sleeps a moment, which
    releases the GIL so that a thread waiting for it (the event loop's) takes it at once,
    instead of after the interpreter's switch interval of 5 ms."""
    clock, sleep, pause = _clock, _sleep, C.OFFLOAD_SHARE_PAUSE
    next_at = clock() + every

    def share() -> None:
        nonlocal next_at
        if clock() >= next_at:
            sleep(pause)
            next_at = clock() + every

    return share


#: What ``read_json`` gives for a body it cannot read (not UTF-8 JSON).
NOT_READ: Any = object()


def read_json(raw: bytes, *, window: int = C.OFFLOAD_WINDOW_BYTES,
              slice_chars: int = C.OFFLOAD_SLICE_CHARS,
              share: Callable[[], None] | None = None,
              loads: Callable[[str], Any] | None = None) -> Any:
    """``json.loads(raw)`` of a UTF-8 JSON document (a listing, or one object holding
    50,000 contacts), in short C calls; ``share`` (a ``gil_sharer``) is called between
    them. ``NOT_READ`` when it is not one (not UTF-8 JSON, NaN, something after the
    value): the caller then reads it the ordinary way, which gives the error.

    The body is decoded to text ``window`` bytes at a time. Values are parsed with
    ``json.JSONDecoder.raw_decode``, except that the reader descends into an array or
    object (reading its members one by one) the first time it meets one at a place in
    the document (``$[].emaillist[]``), and keeps doing so at that place while they
    turn out ``slice_chars`` or longer; elements known to be small are parsed a run of
    up to ``slice_chars`` at a time (``_Reader.batch``). So a listing of lists of 1,000
    contacts costs about what ``json.loads`` costs, in calls of at most a slice each.
    (A container far bigger than those before it at the same place is still parsed in
    one call.) With ``loads`` (``orjson.loads``: faster) runs are parsed by it first,
    and by the scanner where it refuses one; values are then what ``loads`` makes.
    """
    reader = _Reader(raw, window, slice_chars, share or _nothing, loads)
    try:
        if not reader.skip():
            return NOT_READ
        value = reader.value("$", 0)
        return NOT_READ if reader.skip() else value
    except (_Bad, ValueError, RecursionError):
        return NOT_READ


def _nothing() -> None:
    return None


class _Reader:
    """The state of one ``read_json``: the text window and what was learned about
    where big containers are (``descend``: place -> whether to go into them)."""

    def __init__(self, raw: bytes, window: int, slice_chars: int,
                 share: Callable[[], None], loads: Callable[[str], Any] | None) -> None:
        self.view = memoryview(raw)
        self.size = len(raw)
        self.taken = 0  # bytes of raw decoded onto text
        self.text = ""  # a window of the document's text; pos indexes it
        self.pos = 0
        self.base = 0  # characters of the document before text[0]
        self.window = max(1, window)
        self.slice_chars = slice_chars
        # Text kept ahead of pos: refilled when less is left (each refill copies what is
        # left, so it must be a fraction of the window, not the window: else every small
        # value would copy a window's worth).
        self.ahead = min(slice_chars, self.window // 2)
        self.share = share
        self.loads = loads
        self.descend: dict[str, bool] = {}
        self.misses: dict[str, int] = {}  # batches in a row that could not be cut
        self.wait: dict[str, int] = {}  # elements to read one by one before the next
        self.decode_text = codecs.getincrementaldecoder("utf-8")().decode

    # --- the text window ------------------------------------------------------------
    def more(self, amount: int) -> bool:
        """Decode the next ``amount`` bytes onto the text, dropping what is before pos."""
        if self.taken >= self.size:
            return False
        end = min(self.size, self.taken + amount)
        self.base += self.pos
        self.text = self.text[self.pos:] + self.decode_text(
            self.view[self.taken:end], end == self.size)
        self.pos, self.taken = 0, end
        return True

    def skip(self) -> str:
        """Move past white space; the next character ("" at the end of the body)."""
        while True:
            pos = self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if pos < len(self.text):
                return self.text[pos]
            if not self.more(self.window):
                return ""

    # --- values ---------------------------------------------------------------------
    def whole(self) -> Any:
        """The value at pos, parsed in one call (the window widened until it fits)."""
        grow = self.window
        while True:
            text, pos = self.text, self.pos
            try:
                item, end = _scan(text, pos)
            except json.JSONDecodeError:
                if self.taken >= self.size:
                    raise _Bad from None
            else:
                if self.taken >= self.size or (
                        end < len(text) and text[end] not in _NUMBER_GOES_ON):
                    self.pos = end
                    return item
            self.more(grow)  # cut by the window's edge
            grow *= 2

    def value(self, place: str, depth: int) -> Any:
        """The value at pos (after white space), read whole or member by member."""
        if len(self.text) - self.pos < self.ahead:  # (a value cut at the edge retries)
            self.more(self.window)
        first = self.text[self.pos]
        if first != "[" and first != "{":
            if place not in self.descend:  # scalars here: runs of them can be batched
                self.descend[place] = False
            return self.whole()
        start = self.base + self.pos
        if self.descend.get(place, True) and depth < _MAX_DESCENT:
            item = (self.array(place + "[]", depth + 1) if first == "["
                    else self.members(place, depth + 1))
            if self.base + self.pos - start < self.slice_chars:
                self.descend[place] = False
            return item
        item = self.whole()
        if self.base + self.pos - start >= self.slice_chars:
            self.descend[place] = True
        return item

    def array(self, place: str, depth: int) -> list[Any]:
        """The array at pos ("[" there), its elements read one by one."""
        self.pos += 1
        out: list[Any] = []
        if self.skip() == "]":
            self.pos += 1
            return out
        share = self.share
        while True:
            batch = None
            if self.descend.get(place) is False:
                if self.wait.get(place, 0) > 0:
                    self.wait[place] -= 1
                else:
                    batch = self.batch(place)
            if batch is None:
                out.append(self.value(place, depth))
            else:
                out += batch
            share()
            mark = self.skip()
            self.pos += 1
            if mark == "]":
                return out
            if mark != "," or self.skip() in ("", "]"):  # "]" after ",": a trailing comma
                raise _Bad

    def batch(self, place: str) -> list[Any] | None:
        """Many small elements at once: the elements of the array from pos up to a
        separator within ``slice_chars``, parsed in one call, pos left on that
        separator; None (pos unmoved) where that is not a run of whole elements.

        The run is found without knowing where elements end (``objects_end``,
        ``others_end``) and parsed as an array of its own (``parse_run``). That parse
        succeeds only where the cut is at this array's own level: a cut in a string
        leaves it unterminated, one in a nested container leaves that unclosed (and one
        past the end of this array closes the run at the array's own "]"). After a miss
        the next few elements are read one by one (``missed``).
        """
        if len(self.text) - self.pos < self.ahead:
            self.more(self.window)
        cut = self.objects_end(place) if self.text[self.pos] == "{" else self.others_end()
        if cut is None:
            return None
        items = self.parse_run(cut)
        if items is None:
            self.missed(place)
            return None
        self.misses[place] = 0
        return items

    def objects_end(self, place: str) -> int | None:
        """Where a run of objects from pos may end: the last separator in reach that is
        followed by the opening of the object at pos, up to its first member's ":" (so
        ``}, {"uuid":``); None where there is none (a miss where the object at pos has
        no first member to look for, or the cut is not after a ",")."""
        text, pos = self.text, self.pos
        colon = text.find(":", pos, pos + 80)
        if colon < 0:
            self.missed(place)
            return None
        cut = text.rfind(text[pos:colon + 1], pos + 1, pos + self.slice_chars)
        if cut < 0:
            return None  # no element starts in reach: this one is read alone
        cut = len(text[pos:cut].rstrip(_WHITE)) + pos - 1
        if cut <= pos or text[cut] != ",":
            self.missed(place)
            return None
        return cut

    def others_end(self) -> int | None:
        """Where a run of arrays, strings or scalars from pos may end: at the last "],"
        (arrays), '",' (strings) or "," (others) in reach; None where there is none."""
        text, pos = self.text, self.pos
        first = text[pos]
        tail = "]," if first == "[" else '",' if first == '"' else ","
        cut = text.rfind(tail, pos, pos + self.slice_chars)
        while first == '"' and cut > pos and text[cut - 1] == "\\":  # a \" in a string
            cut = text.rfind(tail, pos, cut)
        if cut <= pos:
            return None
        return cut + len(tail) - 1

    def parse_run(self, cut: int) -> list[Any] | None:
        """The elements from pos up to ``cut`` parsed as one array (by ``loads`` first,
        then by the scanner where it refuses), pos moved past them; None (pos unmoved)
        where they are no run of whole elements."""
        pos = self.pos
        run = "[" + self.text[pos:cut] + "]"
        if self.loads is not None:
            try:
                items = self.loads(run)
            except ValueError:
                pass  # refused (or past the array's end): the scanner tells which
            else:
                self.pos = cut
                return items  # type: ignore[no-any-return]
        try:
            items, end = _scan(run, 0)
        except ValueError:
            return None
        # A run that reaches past the end of this array closes at its "]": then what
        # was parsed is the rest of it, and pos goes to that "]".
        self.pos = cut if end == len(run) else pos + end - 2
        return items  # type: ignore[no-any-return]

    def missed(self, place: str) -> None:
        """A batch that could not be cut: read one by one for a while (longer after each
        miss in a row), so a document that defeats ``batch`` costs little extra."""
        self.misses[place] = self.misses.get(place, 0) + 1
        self.wait[place] = 8 << min(self.misses[place], 10)

    def members(self, place: str, depth: int) -> dict[str, Any]:
        """The object at pos ("{" there), its members read one by one."""
        self.pos += 1
        out: dict[str, Any] = {}
        mark = self.skip()
        if mark == "}":
            self.pos += 1
            return out
        while True:
            if mark != '"':
                raise _Bad
            key = self.key()
            if self.skip() != ":":
                raise _Bad
            self.pos += 1
            if not self.skip():
                raise _Bad
            here = f"{place}.{key}"
            if here not in self.descend and len(self.descend) >= _MAX_PLACES:
                here = place + ".*"  # a map keyed by ids: one place for its members
            out[key] = self.value(here, depth)
            mark = self.skip()
            self.pos += 1
            if mark == "}":
                return out
            if mark != ",":
                raise _Bad
            mark = self.skip()

    def key(self) -> str:
        """The member name at pos (a string, '"' there)."""
        while True:
            try:
                key, end = _scan_string(self.text, self.pos + 1)
            except json.JSONDecodeError:
                if not self.more(self.window):
                    raise _Bad from None
            else:
                self.pos = end
                return key
