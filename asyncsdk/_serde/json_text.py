"""The one JSON member tokenizer: a window of JSON text read token by token
(``JsonText``), and the members of an object walked one by one over it (``Members``),
wherever the text is cut.

Two readers use it, so JSON text is tokenized by one piece of code:

* ``big_json.read_json`` reads a big answer that is all in memory, a window at a time
  (*pulled*: ``JsonText(refill=...)`` refills the window from the body as it runs out);
* ``resources.validation.readers.JsonMemberReader`` reads the jobs/download answer as
  it arrives (*pushed*: each piece is ``feed``-ed; where the window ends before a token
  does, ``MORE`` says so, and the walk resumes there with the next piece).

What it reads is what ``json.loads`` reads: strings by the json module's own C scanner
(``scanstring``, strict: a raw control character is refused), values by a
``JSONDecoder``'s ``raw_decode``, white space JSON's four characters. The window holds
the text from the token being read (``pos``) to what has come; what is before ``pos``
is dropped as more comes, so memory is bounded by the pieces and by the longest value
read whole (``max_value`` caps it for pushed text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["END", "MORE", "JsonText", "Members", "StreamDecodeError"]


class StreamDecodeError(ValueError):
    """The streamed text is not what it should be (internal: the resources turn it into
    ``ResponseDecodeError``)."""


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The window ends before the token does (pushed text: call again after the next piece).
MORE: Any = _Marker("MORE")
#: The object's closing brace was read (``Members.next``).
END: Any = _Marker("END")

#: The C string scanner ``json`` itself uses (not in its typed surface).
_scanstring: Callable[[str, int, bool], tuple[str, int]] = (
    json.decoder.scanstring)  # type: ignore[attr-defined]
#: ``json.loads``' own value parser (NaN and Infinity accepted, as it accepts them).
LOADS_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().raw_decode

#: orjson's parser (the ``speedups`` extra), for a piece of a long string that holds no
#: closing quote: 2-3x faster than the json scanner on CSV text full of escaped line ends.
_orjson_loads: Callable[[str], Any] | None
try:
    from orjson import loads as _orjson_loads  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _orjson_loads = None

_SPACE = re.compile(r"[ \t\n\r]*")
#: Characters that may continue a number: one cut by the window's edge ("1." of "1.5",
#: "1e" of "1e5") is read again with more text.
_NUMBER_GOES_ON = frozenset("0123456789.eE+-")
_NUMBER_STARTS = frozenset("-0123456789")
#: At the end of a piece, an escape the next piece may complete or extend: a lone
#: backslash, ``\\u`` with fewer than 4 digits, or a high surrogate awaiting its low half
#: (each possibly after a high surrogate).
_UNFINISHED = re.compile(
    r"(?:\\u[dD][89abAB][0-9a-fA-F]{2})?(?:\\u[0-9a-fA-F]{0,3}|\\)?\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What ``_ValueEnd`` looks for: outside strings, inside them, after a scalar.
_STRUCTURE = re.compile(r'["\[\]{}]')
_IN_STRING = re.compile(r'["\\]')
_SCALAR_END = re.compile(r"[ \t\r\n,}\]]")


class JsonText:
    """A window of JSON text, read token by token from ``pos``.

    Pushed (no ``refill``): ``feed`` appends each piece as it comes; a token the window
    cuts gives ``MORE``. Pulled: ``refill(amount)`` gives the text of about ``amount``
    more bytes of the document (None at its end), and the window is refilled
    (``window`` at a time, doubling for a token longer than that) until the token fits.
    ``scan`` parses a value (``JSONDecoder.raw_decode`` or one that refuses more);
    ``max_value`` caps a value read whole from pushed text.
    """

    __slots__ = ("_end", "_final", "_later", "_refill", "base", "max_value", "pos", "scan",
                 "text", "window")

    def __init__(self, refill: Callable[[int], str | None] | None = None, *,
                 window: int = 1 << 16,
                 scan: Callable[[str, int], tuple[Any, int]] = LOADS_SCAN,
                 max_value: int | None = None) -> None:
        self.text = ""
        self.pos = 0
        self.base = 0  # characters of the document before text[0]
        self.window = max(1, window)
        self.scan = scan
        self.max_value = max_value
        self._refill = refill
        self._final = False  # no text comes after the window's
        self._end = _ValueEnd()  # pushed: where the value being read whole ends
        self._later: list[str] = []  # pushed: pieces of that value, joined once it ends

    # --- the window ------------------------------------------------------------------
    def feed(self, text: str, final: bool = False) -> None:
        """Append ``text`` (what is before ``pos`` dropped); ``final``: nothing follows.
        While a value read whole is cut (``whole`` gave ``MORE``), the pieces wait in a
        list, each looked at once for its end, and are joined once: a value arriving in
        many small pieces costs linear work."""
        self._final = self._final or final
        if self._end.started:
            self._end.look_on(text)
            self._later.append(text)
            return
        pos = self.pos
        self.base += pos
        self.text = self.text[pos:] + text if pos < len(self.text) else text
        self.pos = 0

    def _join(self) -> None:
        """The pieces that waited appended to the window (what is before ``pos``
        dropped)."""
        later, self._later = self._later, []
        pos = self.pos
        self.base += pos
        self.text = self.text[pos:] + "".join(later)
        self.pos = 0

    def more(self, amount: int) -> bool:
        """Pulled: the text of ``amount`` more bytes appended; False at the document's
        end, and always for pushed text."""
        if self._refill is None or self._final:
            return False
        text = self._refill(amount)
        self.feed("" if text is None else text, text is None)
        return text is not None

    def skip(self) -> str:
        """Move past white space; the next character, "" where the text ends first."""
        while True:
            pos = self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if pos < len(self.text):
                return self.text[pos]
            if not self.more(self.window):
                return ""

    # --- strings ---------------------------------------------------------------------
    def string(self, out: list[str], *, streamed: bool = False) -> bool:
        """The string whose opening quote is just before ``pos``, decoded into ``out``:
        True when its closing quote was read (``pos`` after it); False where the window
        ends first (what was decoded is in ``out``, ``pos`` at an escape the next text
        may complete). ``streamed``: a long string handed out in pieces, each tried
        whole by orjson first (it usually holds no closing quote), a lone surrogate
        (which UTF-8 cannot carry) becoming U+FFFD; else the string is kept as
        ``json.loads`` reads it."""
        if not streamed:
            try:
                value, end = _scanstring(self.text, self.pos, True)
            except ValueError:
                pass  # it goes on past the window, or is malformed: read piece by piece
            else:
                out.append(value)
                self.pos = end
                return True
        return self._piece(out, streamed)

    def _piece(self, out: list[str], streamed: bool) -> bool:
        """``string`` for the rest of the window: one scan of the text up to an escape
        the next text may complete, with a quote put after it. The scanner stops at the
        string's own closing quote if the window holds it, else at the added one."""
        text, pos = self.text, self.pos
        cut = _unfinished_escape(text, pos)
        inside = text[pos:cut]
        decoded = _whole_piece(inside) if streamed else None
        if decoded is not None:
            end = len(inside) + 1  # not closed in this window
        else:
            try:
                decoded, end = _scanstring(inside + '"', 0, True)
            except ValueError as exc:
                why = getattr(exc, "msg", "invalid")
                raise StreamDecodeError(f"invalid JSON string ({why})") from None
        # A lone surrogate (only a \u escape makes one). An ASCII result holds none:
        # isascii() is constant time, where looking for "\u" first costs a scan.
        if streamed and not decoded.isascii() and "\\u" in inside and _SURROGATE.search(
                decoded):
            decoded = _SURROGATE.sub("\ufffd", decoded)
        if decoded:
            out.append(decoded)
        if end <= len(inside):  # closed by its own quote
            self.pos = pos + end
            return True
        self.pos = cut
        return False

    # --- values read whole -----------------------------------------------------------
    def whole(self) -> Any:
        """The value at ``pos`` parsed in one call, ``pos`` after it; ``MORE`` where the
        (pushed) window ends before the value does. A value that is not JSON raises
        ``StreamDecodeError`` (``RecursionError`` for one nested too deeply)."""
        return self._whole_pushed() if self._refill is None else self._whole_pulled()

    def _parsed(self) -> tuple[Any, int] | None:
        """The value at ``pos`` and where it ends, or None where it may go on past the
        window (or is malformed: only the rest of the text tells). A number that ends
        at the window's edge, or before a character that may continue it, is cut."""
        text, pos = self.text, self.pos
        try:
            item, end = self.scan(text, pos)
        except json.JSONDecodeError:
            return None
        if self._final or text[pos] not in _NUMBER_STARTS or (
                end < len(text) and text[end] not in _NUMBER_GOES_ON):
            return item, end
        return None

    def _whole_pulled(self) -> Any:
        grow = self.window
        while True:
            got = self._parsed()
            if got is not None:
                self.pos = got[1]
                return got[0]
            if self._final:
                raise StreamDecodeError("the JSON text is not one value here")
            self.more(grow)
            grow *= 2

    def _whole_pushed(self) -> Any:
        """Pushed text: the value's end is looked for as the pieces come (``_ValueEnd``,
        each character looked at once), then the value is parsed once."""
        finder = self._end
        if not finder.started:
            finder.look(self.text, self.pos)
        cap = self.max_value
        if finder.end is None and not self._final:
            if cap is not None and finder.seen > cap:
                raise StreamDecodeError(f"a JSON value is longer than {cap} characters")
            return MORE
        finder.reset()
        self._join()
        try:
            item, end = self.scan(self.text, self.pos)
        except json.JSONDecodeError:
            raise StreamDecodeError("malformed JSON value") from None
        if cap is not None and end - self.pos > cap:
            raise StreamDecodeError(f"a JSON value is longer than {cap} characters")
        self.pos = end
        return item


class _ValueEnd:
    """Where a value in pushed text ends, found as the text comes: brackets counted
    outside strings, a string's escapes skipped, each character looked at once (the
    look goes on in the next piece where it stopped). Lenient: the parse that follows
    judges the value. ``end``: its length once found (a scalar's: up to its delimiter);
    ``seen``: the characters of it looked at so far."""

    __slots__ = ("depth", "end", "escaped", "in_string", "scalar", "seen", "started")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.started = False
        self.end: int | None = None
        self.seen = 0
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.scalar = False

    def look(self, text: str, start: int) -> None:
        """Look for the end of the value that begins at ``text[start]``."""
        first = text[start]
        self.started = True
        self.scalar = first not in '"[{'
        self.in_string, self.depth = first == '"', int(first in "[{")
        self._look(text, start + (not self.scalar), start)

    def look_on(self, piece: str) -> None:
        """Look on in the next piece of text (until the end is found)."""
        if self.end is None:
            self._look(piece, 0, -self.seen)

    def _look(self, text: str, at: int, start: int) -> None:
        """Look at ``text[at:]``, where the value began at ``start`` (negative: in an
        earlier piece)."""
        if self.scalar:  # a number or a literal: up to a delimiter
            found = _SCALAR_END.search(text, at)
            if found is not None:
                self.end = found.start() - start
                return
        else:
            while at < len(text):
                at = self._string_step(text, at) if self.in_string else self._step(text, at)
                if at < 0:
                    self.end = -at - start
                    return
        self.seen = len(text) - start

    def _string_step(self, text: str, at: int) -> int:
        """Inside a string from ``at``: where to look on, or minus the index after the
        value where its closing quote ends it."""
        if self.escaped:
            self.escaped = False
            return at + 1
        found = _IN_STRING.search(text, at)
        if found is None:
            return len(text)
        if found.group() == "\\":
            self.escaped = True
        else:
            self.in_string = False
            if self.depth == 0:
                return -found.end()
        return found.end()

    def _step(self, text: str, at: int) -> int:
        """Outside strings from ``at``: as ``_string_step``, for brackets and quotes."""
        found = _STRUCTURE.search(text, at)
        if found is None:
            return len(text)
        char = found.group()
        if char == '"':
            self.in_string = True
        elif char in "[{":
            self.depth += 1
        else:
            self.depth -= 1
            if self.depth == 0:
                return -found.end()
        return found.end()


def _unfinished_escape(text: str, start: int) -> int:
    """Where the escape that the next text may complete begins in ``text[start:]``
    (``len(text)`` when there is none)."""
    end = len(text)
    match = _UNFINISHED.search(text, max(start, end - 13))
    at = match.start() if match is not None else end
    if at == end:
        return end
    run = at
    while run > start and text[run - 1] == "\\":
        run -= 1
    if (at - run) % 2 == 0:  # an escape indeed, not text after an escaped backslash
        return at
    # "\\\\uD83D\\u12": the first "\\u" is text; an escape may still follow it
    inner = text.find("\\", at + 1)
    return inner if inner >= 0 else end


def _whole_piece(inside: str) -> str | None:
    """``inside`` decoded by orjson when, quoted, it is one whole JSON string: every quote
    in it escaped (the string goes on), every escape and character valid, no lone
    surrogate. None otherwise, and without orjson: then the json scanner finds the
    closing quote, or says what is wrong."""
    if _orjson_loads is None:
        return None
    try:
        decoded: str = _orjson_loads('"' + inside + '"')  # parsed, a JSON string is a str
    except ValueError:
        return None
    return decoded


# --- the members of an object ------------------------------------------------------------
_OPEN, _FIRST, _KEY_NEXT, _KEY, _COLON, _VALUE, _AFTER, _DONE = range(8)


class Members:
    """The members of one JSON object in a ``JsonText``, walked one by one.

    ``next()`` gives the next member's name with ``pos`` at its value (white space
    skipped), ``END`` once the object's "}" is read, or ``MORE`` where the text ends
    first (pushed text: call again once more is in; the walk resumes where it stopped).
    The caller reads the value (``pos`` after it) before calling ``next()`` again.
    ``opened``: the "{" is already read; ``max_key``: the longest name accepted.
    """

    __slots__ = ("_grow", "_key", "_parts", "_state", "_text", "max_key")

    def __init__(self, text: JsonText, *, opened: bool = False,
                 max_key: int | None = None) -> None:
        self._text = text
        self._state = _FIRST if opened else _OPEN
        self._key = ""
        self._parts: list[str] = []
        self._grow = text.window
        self.max_key = max_key

    def next(self) -> Any:
        """The next member's name, ``END`` or ``MORE`` (class docstring)."""
        text = self._text
        while True:
            if self._state == _KEY:
                if not self._read_key():
                    return MORE
                continue
            char = text.skip()
            if not char:
                return MORE
            got = self._step(char)
            if got is not None:
                return got

    def _step(self, char: str) -> Any:
        """``char``, the next character that is not white space, in the current state;
        the name or ``END`` to give, else None (go on)."""
        state = self._state
        if state == _VALUE:  # the value's first character: the caller reads it
            self._state = _AFTER
            return self._key
        self._text.pos += 1
        if state == _AFTER:
            return self._after_value(char)
        if state == _COLON:
            if char != ":":
                raise StreamDecodeError(f"unexpected {char!r} after a key")
            self._state = _VALUE
        elif state == _OPEN:
            if char != "{":
                raise StreamDecodeError("the JSON text is not an object")
            self._state = _FIRST
        elif state == _DONE:
            raise StreamDecodeError("text after the end of the JSON object")
        else:  # _FIRST, _KEY_NEXT
            return self._start_key(char, state)
        return None

    def _start_key(self, char: str, state: int) -> Any:
        if char == '"':
            self._state = _KEY
            return None
        if char == "}" and state == _FIRST:
            self._state = _DONE
            return END
        raise StreamDecodeError(f"unexpected {char!r} where a key should be")

    def _after_value(self, char: str) -> Any:
        if char == ",":
            self._state = _KEY_NEXT
            return None
        if char == "}":
            self._state = _DONE
            return END
        raise StreamDecodeError(f"unexpected {char!r} after a value")

    def _read_key(self) -> bool:
        """Read on in the name (its opening quote read); False where the text ends
        first. Pulled, the window is refilled twice as much after each cut, so a long
        name costs linear work."""
        text, parts = self._text, self._parts
        while not text.string(parts):
            if self.max_key is not None and sum(map(len, parts)) > self.max_key:
                raise StreamDecodeError("a key of the JSON text is too long")
            if not text.more(self._grow):
                return False
            self._grow *= 2
        self._key = "".join(parts)
        parts.clear()
        self._grow = text.window
        self._state = _COLON
        return True
