"""JSON answers read with one semantics (``parse_json``, and ``read_json`` for a big
one, in short C calls for a worker thread), and ``gil_sharer``, which lets the event loop
in while that thread works.

**One reading.** Every answer, and every element of it, is read as ``json.loads`` reads
it, whatever the answer's size, wherever the slices of a big one fall, and with or
without the ``speedups`` extra: integers exact at any size, floats as ``float()``
reads them (a number beyond a double is ``inf``), ``NaN``/``Infinity`` accepted, a lone
surrogate escape kept, a byte order mark or UTF-16/32 accepted. orjson (the extra) is
only a faster way to the same values: it is used where it reads what ``json`` reads,
and ``json`` reads the rest. orjson reads an integer beyond 64 bits as a float, so a
document with a run of 19 digits or more anywhere (``FAST_IS_EXACT_UP_TO``) is read by
``json`` alone; what orjson refuses (a lone surrogate, a number beyond a double, NaN,
a byte order mark) is read by ``json``, which gives the value or the error.

**A big answer off the loop.** Parsing a multi-megabyte listing with one ``json.loads``
holds the GIL for the whole parse, so the event loop cannot run meanwhile even though
the parse is in another thread. Read in pieces, no single C call covers much of the
body; and since a thread that wants the GIL otherwise waits the interpreter's switch
interval (5 ms) before it is handed over, the worker also steps aside every
``OFFLOAD_SHARE_SECONDS``.
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from .. import _constants as C
from .json_text import END, MORE, JsonText, Members, StreamDecodeError

__all__ = ["FAST_IS_EXACT_UP_TO", "FAST_LOADS", "NOT_READ", "gil_sharer", "parse_json",
           "read_json"]

#: orjson's ``loads`` (the ``speedups`` extra), or None: the faster parser, used where it
#: reads what ``json`` reads (module docstring).
FAST_LOADS: Callable[[Any], Any] | None
try:
    from orjson import loads as FAST_LOADS  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    FAST_LOADS = None

#: The longest run of digits with which orjson's numbers are ``json``'s: an integer of
#: 18 digits is within 64 bits; from 19 on it may be beyond, where orjson reads a float.
FAST_IS_EXACT_UP_TO = 18
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_TOO_MANY_DIGITS = b"0" * (FAST_IS_EXACT_UP_TO + 1)
#: Bytes of the body looked at in one call by ``fast_is_exact``.
_LOOK_AT = 1 << 20

_WHITE = " \t\n\r"
#: Containers nested deeper than this are parsed whole, however big.
_MAX_DESCENT = 16
#: Places learned at most (then the members of an object at an unknown key share one).
_MAX_PLACES = 1024
#: A member name longer than this is not spelt out in a place (its members share
#: ``.*``): a place is copied for every member below it.
_MAX_NAME_IN_PLACE = 64

_clock = time.perf_counter
_sleep = time.sleep


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON (orjson refuses them too)


_scan = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode


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


def fast_is_exact(raw: bytes, share: Callable[[], None] | None = None) -> bool:
    """True when the faster parser reads ``raw`` as ``json`` does wherever it accepts it:
    no run of more than ``FAST_IS_EXACT_UP_TO`` digits anywhere (in a string too: a cheap
    look at the bytes, not a parse). ``share`` is called between megabytes."""
    if len(raw) <= _LOOK_AT:  # a small answer: one look
        return _TOO_MANY_DIGITS not in raw.translate(_DIGITS_AS_ZERO)
    for start in range(0, len(raw), _LOOK_AT):
        piece = raw[start:start + _LOOK_AT + FAST_IS_EXACT_UP_TO]  # runs across the edge
        if _TOO_MANY_DIGITS in piece.translate(_DIGITS_AS_ZERO):
            return False
        if share is not None:
            share()
    return True


def parse_json(raw: bytes) -> Any:
    """``json.loads(raw)``: by ``FAST_LOADS`` where it reads the same (module docstring),
    else by ``json``, which raises ``ValueError`` (or ``RecursionError``) for what is not
    JSON."""
    fast = FAST_LOADS
    if fast is not None and fast_is_exact(raw):
        try:
            return fast(raw)
        except ValueError:
            pass  # refused: ``json`` reads it or says why not
    return json.loads(raw)


def read_json(raw: bytes, *, window: int = C.OFFLOAD_WINDOW_BYTES,
              slice_chars: int = C.OFFLOAD_SLICE_CHARS,
              share: Callable[[], None] | None = None,
              loads: Callable[[str], Any] | None = None,
              build: Mapping[str, Callable[[Any], Any]] | None = None) -> Any:
    """``json.loads(raw)`` of a UTF-8 JSON document (a listing, or one object holding
    50,000 contacts), in short C calls; ``share`` (a ``gil_sharer``) is called between
    them. ``NOT_READ`` when it is not one (not UTF-8 JSON, NaN, something after the
    value): the caller then reads it the ordinary way, which gives the error.

    The body is decoded to text ``window`` bytes at a time and tokenized by the
    package's one JSON tokenizer (``json_text``). Values are parsed with
    ``json.JSONDecoder.raw_decode``, except that the reader descends into an array or
    object (reading its members one by one) the first time it meets one at a place in
    the document (``$[]."emaillist"[]``), and keeps doing so at that place while they
    turn out ``slice_chars`` or longer; elements known to be small are parsed a run of
    up to ``slice_chars`` at a time (``_Reader.batch``). So a listing of lists of 1,000
    contacts costs about what ``json.loads`` costs, in calls of at most a slice each.
    (A container far bigger than those before it at the same place is still parsed in
    one call.) With ``loads`` (``FAST_LOADS``: faster, reading as ``json`` does but for
    an integer beyond 64 bits, which it may read as a float, and what it refuses) runs
    are parsed by it first, and by the scanner where it refuses one; a document where
    it would not read as ``json`` does (``fast_is_exact``) is read without it. Every
    element is then what ``json.loads`` makes of it, wherever the slices fall.

    ``build``: place -> a function each value read at that place is handed to at once,
    its result kept instead (a record decoded into its model as soon as it is parsed,
    so its parsed dict dies young: ``listing.builders``). Where one raises a
    ``ValueError`` (or the document is not JSON) the document is read again without
    them: the caller gets the plain values, and finds the failure itself.
    """
    share = share or _nothing
    if loads is not None and not fast_is_exact(raw, share):
        loads = None  # one reading for the whole document: ``json``'s
    got = _read(_Reader(raw, window, slice_chars, share, loads, build or {}))
    if got is NOT_READ and build:  # not JSON, or a value ``build`` refused: read plain
        got = _read(_Reader(raw, window, slice_chars, share, loads, {}))
    return got


def _read(reader: _Reader) -> Any:
    try:
        if not reader.tokens.skip():
            return NOT_READ
        value = reader.value("$", 0)
        return NOT_READ if reader.tokens.skip() else value
    except (ValueError, RecursionError, IndexError):  # IndexError: a text cut short
        return NOT_READ  # the caller reads it as ``json.loads`` does, which says why not


def _nothing() -> None:
    return None


def _text_of(raw: bytes) -> Callable[[int], str | None]:
    """The text of ``raw`` as UTF-8, ``amount`` bytes a call (None at the end). A byte
    order mark first is dropped, as ``json.loads`` of bytes drops it (else the body would
    be parsed whole, in one call, by the caller)."""
    view = memoryview(raw)
    decode = codecs.getincrementaldecoder("utf-8-sig")().decode
    taken = 0

    def refill(amount: int) -> str | None:
        nonlocal taken
        if taken >= len(view):
            return None
        end = min(len(view), taken + amount)
        text: str = decode(view[taken:end], end == len(view))
        taken = end
        return text

    return refill


class _Reader:
    """The state of one ``read_json``: the text window (``tokens``) and what was learned
    about where big containers are (``descend``: place -> whether to go into them)."""

    def __init__(self, raw: bytes, window: int, slice_chars: int,
                 share: Callable[[], None], loads: Callable[[str], Any] | None,
                 build: Mapping[str, Callable[[Any], Any]]) -> None:
        self.window = max(1, window)
        self.tokens = JsonText(_text_of(raw), window=self.window, scan=_scan)
        self.slice_chars = slice_chars
        # Text kept ahead of pos: refilled when less is left (each refill copies what is
        # left, so it must be a fraction of the window, not the window: else every small
        # value would copy a window's worth).
        self.ahead = min(slice_chars, self.window // 2)
        self.share = share
        self.loads = loads
        self.build = build
        self.descend: dict[str, bool] = {}
        self.misses: dict[str, int] = {}  # batches in a row that could not be cut
        self.wait: dict[str, int] = {}  # elements to read one by one before the next

    def fill(self) -> None:
        """Keep ``ahead`` characters of text ahead of pos (a value cut at the edge
        retries with more)."""
        tokens = self.tokens
        if len(tokens.text) - tokens.pos < self.ahead:
            tokens.more(self.window)

    # --- values ---------------------------------------------------------------------
    def value(self, place: str, depth: int) -> Any:
        """The value at pos (after white space), read whole or member by member."""
        self.fill()
        tokens = self.tokens
        first = tokens.text[tokens.pos]
        if first != "[" and first != "{":
            if place not in self.descend:  # scalars here: runs of them can be batched
                self.descend[place] = False
            return tokens.whole()
        start = tokens.base + tokens.pos
        if self.descend.get(place, True) and depth < _MAX_DESCENT:
            item = (self.array(place + "[]", depth + 1) if first == "["
                    else self.members(place, depth + 1))
            if tokens.base + tokens.pos - start < self.slice_chars:
                self.descend[place] = False
            return item
        item = tokens.whole()
        if tokens.base + tokens.pos - start >= self.slice_chars:
            self.descend[place] = True
        return item

    def array(self, place: str, depth: int) -> list[Any]:
        """The array at pos ("[" there), its elements read one by one (each handed to
        ``build[place]`` if there is one)."""
        tokens = self.tokens
        tokens.pos += 1
        out: list[Any] = []
        first = tokens.skip()
        if first == "]":
            tokens.pos += 1
            return out
        if not first:  # the text ends after "[": no element to read
            raise StreamDecodeError("the JSON text ended inside an array")
        share, build = self.share, self.build.get(place)
        while True:
            batch = None
            if self.descend.get(place) is False:
                if self.wait.get(place, 0) > 0:
                    self.wait[place] -= 1
                else:
                    batch = self.batch(place)
            if batch is None:
                item = self.value(place, depth)
                out.append(item if build is None else build(item))
            else:
                out += batch if build is None else map(build, batch)
            batch = None  # its parsed elements die here, not at the next batch
            share()
            mark = tokens.skip()
            tokens.pos += 1
            if mark == "]":
                return out
            if mark != "," or tokens.skip() in ("", "]"):  # "]" after ",": a trailing comma
                raise StreamDecodeError("not an array")

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
        self.fill()
        tokens = self.tokens
        cut = (self.objects_end(place) if tokens.text[tokens.pos] == "{"
               else self.others_end())
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
        text, pos = self.tokens.text, self.tokens.pos
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
        text, pos = self.tokens.text, self.tokens.pos
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
        tokens = self.tokens
        pos = tokens.pos
        run = "[" + tokens.text[pos:cut] + "]"
        if self.loads is not None:
            try:
                items = self.loads(run)
            except ValueError:
                pass  # refused (or past the array's end): the scanner tells which
            else:
                tokens.pos = cut
                return items  # type: ignore[no-any-return]
        try:
            items, end = _scan(run, 0)
        except ValueError:
            return None
        # A run that reaches past the end of this array closes at its "]": then what
        # was parsed is the rest of it, and pos goes to that "]".
        tokens.pos = cut if end == len(run) else pos + end - 2
        return items  # type: ignore[no-any-return]

    def missed(self, place: str) -> None:
        """A batch that could not be cut: read one by one for a while (longer after each
        miss in a row), so a document that defeats ``batch`` costs little extra."""
        self.misses[place] = self.misses.get(place, 0) + 1
        self.wait[place] = 8 << min(self.misses[place], 10)

    def members(self, place: str, depth: int) -> dict[str, Any]:
        """The object at pos ("{" there), its members read one by one (each handed to
        ``build`` at its place if there is one)."""
        tokens = self.tokens
        tokens.pos += 1
        walk = Members(tokens, opened=True)
        out: dict[str, Any] = {}
        build = self.build
        while (key := walk.next()) is not END:
            if key is MORE:
                raise StreamDecodeError("the JSON text ended inside an object")
            here = self.place_of(place, key)
            item = self.value(here, depth)
            convert = build.get(here) if build else None
            out[key] = item if convert is None else convert(item)
        return out

    def place_of(self, place: str, key: str) -> str:
        """The place of member ``key`` of the object at ``place``: ``place."key"`` (the
        name quoted as JSON, so no name reads as a path), or ``place.*`` (shared) for a
        long name or once ``_MAX_PLACES`` are known (a map keyed by ids)."""
        if len(key) > _MAX_NAME_IN_PLACE:
            return place + ".*"
        here = f"{place}.{json.dumps(key)}"
        if here not in self.descend and len(self.descend) >= _MAX_PLACES:
            return place + ".*"
        return here
