"""Generic incremental readers: UTF-8 bytes, one string member of a JSON object, CSV records.

Each is fed piece by piece and keeps only what it cannot yet decide on, so reading a
large answer costs memory bounded by the piece size (plus one CSV record), never by the
size of the answer. They know nothing of the service or its models (``results`` and
``rows`` map their output to ``EmailRow``).

* ``Utf8Decoder``: bytes to text; a UTF-8 BOM at the very start is dropped.
* ``JsonMemberReader``: one top-level JSON object, handing out the decoded text of one
  string member as it arrives (escapes, ``\\uXXXX`` and surrogate pairs may be split
  anywhere between pieces); the other members are kept, small, in ``fields``. Strings
  are read as ``json.loads`` reads them: raw control characters and bad escapes are
  refused; a lone surrogate (which UTF-8 cannot carry) becomes U+FFFD.
* ``CsvRecordReader``: CSV text to records, exactly as ``csv.reader(io.StringIO(text,
  newline=""), strict=True)`` reads the whole text (the ``newline=""`` the csv module
  asks for: CRLF, LF and CR-only line ends), whatever the cuts between pieces.

Every malformation raises ``StreamDecodeError`` (a ``ValueError``).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ... import _constants as C

__all__ = [
    "CsvRecordReader",
    "JsonMemberReader",
    "StreamDecodeError",
    "Utf8Decoder",
]

#: The json module's string scanner (C): decodes a JSON string's inside up to its quote.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = (
    json.decoder.scanstring)  # type: ignore[attr-defined]


#: orjson's parser (the ``speedups`` extra), for a piece of a JSON string that holds no
#: closing quote: 2-3x faster than the json scanner on CSV text full of escaped line ends.
_orjson_loads: Callable[[str], Any] | None
try:
    from orjson import loads as _orjson_loads  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _orjson_loads = None

_T = TypeVar("_T")


class StreamDecodeError(ValueError):
    """The streamed answer is not what it should be (internal)."""


class Utf8Decoder:
    """Bytes to text, incrementally; a UTF-8 BOM at the start is dropped."""

    __slots__ = ("_decoder",)

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")

    def decode(self, data: bytes, final: bool = False) -> str:
        """The text of ``data`` (a multi-byte character may wait for the next piece)."""
        try:
            text: str = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise StreamDecodeError(f"the answer is not valid UTF-8 ({exc.reason})") from None
        if final and self._decoder.getstate()[0]:
            # A body cut inside a BOM (b"\xef", b"\xef\xbb"): utf-8-sig keeps those bytes
            # waiting and, at the end, drops them without a word.
            raise StreamDecodeError("the answer is not valid UTF-8 (unexpected end of data)")
        return text


# --- JSON strings -----------------------------------------------------------------------
#: At the end of a piece, an escape the next piece may complete or extend: a lone
#: backslash, ``\\u`` with fewer than 4 digits, or a high surrogate awaiting its low half
#: (each possibly after a high surrogate).
_UNFINISHED = re.compile(
    r"(?:\\u[dD][89abAB][0-9a-fA-F]{2})?(?:\\u[0-9a-fA-F]{0,3}|\\)?\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _unfinished_escape(text: str, start: int) -> int:
    """Where the escape that the next piece may complete begins in ``text[start:]``
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


class _StringDecoder:
    """Decodes the inside of one JSON string (after its opening quote), incrementally:
    each piece is decoded by the json module's C scanner, cut before an escape the next
    piece may complete."""

    __slots__ = ("_carry", "done")

    def __init__(self) -> None:
        self._carry = ""  # an escape begun at the end of the previous piece
        self.done = False

    def feed(self, text: str, pos: int, out: list[str]) -> int:
        """Decode ``text[pos:]`` into ``out`` up to the closing quote; the index after it
        (or ``len(text)`` when the string goes on in the next piece)."""
        carried = len(self._carry)
        if carried:
            text, pos = self._carry + text[pos:], 0
            self._carry = ""
        # One scan: the text up to an escape the next piece may complete, with a quote
        # put after it. The scanner stops at the string's own closing quote if the piece
        # holds it, else at the added one (the string goes on).
        cut = _unfinished_escape(text, pos)
        inside = text[pos:cut]
        decoded = _whole_piece(inside)
        if decoded is not None:
            end = len(inside) + 1  # not closed in this piece
        else:
            try:
                decoded, end = _scanstring(inside + '"', 0, True)
            except ValueError as exc:
                why = getattr(exc, "msg", "invalid")
                raise StreamDecodeError(f"invalid JSON string ({why})") from None
        # A lone surrogate (only a \u escape makes one) cannot be written as UTF-8. An
        # ASCII result holds none: isascii() is constant time, where looking for "\u"
        # in text full of escaped line ends cost as much as the decoding itself.
        if not decoded.isascii() and "\\u" in inside and _SURROGATE.search(decoded):
            decoded = _SURROGATE.sub("\ufffd", decoded)
        if decoded:
            out.append(decoded)
        if end <= len(inside):  # closed by its own quote
            self.done = True
            return pos + end - carried
        self._carry = text[cut:]
        return len(text) - carried


def _whole_piece(inside: str) -> str | None:
    """``inside`` decoded by orjson when, quoted, it is one whole JSON string: every quote
    in it escaped (the string goes on in the next piece), every escape and character
    valid, no lone surrogate. None otherwise, and without orjson: then the json scanner
    finds the closing quote, or says what is wrong."""
    if _orjson_loads is None:
        return None
    try:
        decoded: str = _orjson_loads('"' + inside + '"')  # parsed, a JSON string is a str
    except ValueError:
        return None
    return decoded


# --- JSON objects -----------------------------------------------------------------------
_NOT_WS = re.compile(r"[^ \t\r\n]")
_SCALAR_END = re.compile(r"[ \t\r\n,}\]]")

# States of the object scanner.
_BEFORE_OBJECT, _BEFORE_KEY, _KEY, _COLON, _BEFORE_VALUE, _VALUE, _AFTER_VALUE, _DONE = range(8)


class JsonMemberReader:
    """Reads one JSON object incrementally, streaming out its top-level string ``member``.

    ``feed(text)`` returns the pieces of the member's text decoded from ``text``;
    ``fields`` holds the other top-level members once read (each at most
    ``MAX_SMALL_JSON_VALUE`` characters); ``started`` / ``complete`` tell where the
    member's string is; ``finish()`` checks the object was complete. A member of that
    name that is not a string, or given twice, is refused.
    """

    def __init__(self, member: str) -> None:
        self.member = member
        self.fields: dict[str, Any] = {}
        self.started = False
        self.complete = False
        self._state = _BEFORE_OBJECT
        self._key_parts: list[str] = []
        self._key_decoder: _StringDecoder | None = None
        self._key = ""
        self._value_decoder: _StringDecoder | None = None
        self._value_parts: list[str] = []
        self._value_size = 0
        self._raw_value: list[str] | None = None  # a non-string value, as raw JSON text
        self._depth = 0
        self._raw_in_string = False
        self._raw_escape = False

    def feed(self, text: str) -> list[str]:
        """Advance over ``text``; the decoded pieces of the member found in it."""
        out: list[str] = []
        pos, end = 0, len(text)
        while pos < end:
            state = self._state
            if state == _VALUE:
                pos = self._feed_value(text, pos, out)
                continue
            if state == _KEY:
                assert self._key_decoder is not None
                pos = self._key_decoder.feed(text, pos, self._key_parts)
                if self._key_decoder.done:
                    self._key = "".join(self._key_parts)
                    self._key_parts = []
                    self._key_decoder = None
                    self._state = _COLON
                elif sum(map(len, self._key_parts)) > C.MAX_SMALL_JSON_VALUE:
                    raise StreamDecodeError("a key of the JSON answer is too long")
                continue
            found = _NOT_WS.search(text, pos)  # white space between tokens, skipped at once
            if found is None:
                break
            pos = found.start() + 1
            self._token(text[pos - 1])
        return out

    def _token(self, char: str) -> None:
        """``char``, the next character that is not white space outside a string, in
        the current state."""
        state = self._state
        if state == _BEFORE_OBJECT:
            self._open_object(char)
        elif state == _BEFORE_KEY:
            self._start_key(char)
        elif state == _COLON:
            self._colon(char)
        elif state == _BEFORE_VALUE:
            self._start_value(char)
        elif state == _AFTER_VALUE:
            self._after_value(char)
        else:  # _DONE
            raise StreamDecodeError("text after the end of the JSON object")

    def _open_object(self, char: str) -> None:
        if char != "{":
            raise StreamDecodeError("the JSON answer is not an object")
        self._state = _BEFORE_KEY

    def _start_key(self, char: str) -> None:
        """A key's opening quote, or the ``}`` of an empty object."""
        if char == '"':
            self._key_decoder = _StringDecoder()
            self._state = _KEY
        elif char == "}" and not self.fields and not self.started:
            self._state = _DONE
        else:
            raise StreamDecodeError(f"unexpected {char!r} where a key should be")

    def _colon(self, char: str) -> None:
        if char != ":":
            raise StreamDecodeError(f"unexpected {char!r} after a key")
        self._state = _BEFORE_VALUE

    def _after_value(self, char: str) -> None:
        """``,`` before the next member, or the object's ``}``."""
        if char == ",":
            self._state = _BEFORE_KEY
        elif char == "}":
            self._state = _DONE
        else:
            raise StreamDecodeError(f"unexpected {char!r} after a value")

    def finish(self) -> None:
        """Raise ``StreamDecodeError`` unless one whole object was read."""
        if self._state != _DONE:
            raise StreamDecodeError("the JSON answer ended before its object did")

    # --- values ---------------------------------------------------------------------
    def _start_value(self, char: str) -> None:
        key = self._key
        streamed = key == self.member
        if streamed and (self.started or key in self.fields):
            raise StreamDecodeError(f"the JSON answer has two {key!r} members")
        self._state = _VALUE
        if char == '"':
            self._value_decoder = _StringDecoder()
            self._value_parts = []
            self._value_size = 0
            if streamed:
                self.started = True
            return
        if streamed:
            raise StreamDecodeError(f"the JSON member {key!r} is not a string")
        self._raw_value = [char]
        self._value_size = 1
        self._depth = 1 if char in "[{" else 0
        self._raw_in_string = False
        self._raw_escape = False
        if self._depth == 0 and char not in "-0123456789tfn":
            raise StreamDecodeError(f"unexpected {char!r} where a value should be")

    def _feed_value(self, text: str, pos: int, out: list[str]) -> int:
        decoder = self._value_decoder
        if decoder is None:
            return self._feed_raw(text, pos)
        streaming = self._key == self.member
        parts = out if streaming else self._value_parts
        before = len(parts)
        pos = decoder.feed(text, pos, parts)
        if not streaming:
            self._value_size += sum(len(p) for p in parts[before:])
            if self._value_size > C.MAX_SMALL_JSON_VALUE:
                raise StreamDecodeError(f"the JSON member {self._key!r} is too large")
        if decoder.done:
            if streaming:
                self.complete = True
            else:
                self.fields[self._key] = "".join(self._value_parts)
            self._value_decoder = None
            self._value_parts = []
            self._state = _AFTER_VALUE
        return pos

    def _feed_raw(self, text: str, pos: int) -> int:
        """A number, literal, array or object: kept as raw text, parsed when complete."""
        raw = self._raw_value
        assert raw is not None
        if self._depth == 0:
            stop, complete = _scalar_end(text, pos)
        else:
            stop, complete = self._nested_end(text, pos)
        raw.append(text[pos:stop])
        self._value_size += stop - pos
        if self._value_size > C.MAX_SMALL_JSON_VALUE:
            raise StreamDecodeError(f"the JSON member {self._key!r} is too large")
        if complete:
            self._keep_raw("".join(raw))
        return stop

    def _nested_end(self, text: str, pos: int) -> tuple[int, bool]:
        """Where the array or object being read ends in ``text[pos:]``: the index after
        its closing bracket and True, or ``len(text)`` and False when it goes on. Brackets
        inside its strings do not count."""
        end = len(text)
        while pos < end:
            char = text[pos]
            pos += 1
            if self._raw_in_string:
                self._raw_string_char(char)
            elif char == '"':
                self._raw_in_string = True
            elif char in "[{":
                self._depth += 1
            elif char in "]}":
                self._depth -= 1
                if self._depth == 0:
                    return pos, True
        return pos, False

    def _raw_string_char(self, char: str) -> None:
        """One character inside a string of a raw value: an escape, or its end."""
        if self._raw_escape:
            self._raw_escape = False
        elif char == "\\":
            self._raw_escape = True
        elif char == '"':
            self._raw_in_string = False

    def _keep_raw(self, raw: str) -> None:
        """The complete raw value, parsed, into ``fields``."""
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            raise StreamDecodeError(f"the JSON member {self._key!r} is malformed") from None
        self.fields[self._key] = value
        self._raw_value = None
        self._state = _AFTER_VALUE


def _scalar_end(text: str, pos: int) -> tuple[int, bool]:
    """Where the number or literal being read ends in ``text[pos:]`` (before white
    space, ``,``, ``}`` or ``]``), and whether it ends there or may go on."""
    match = _SCALAR_END.search(text, pos)
    return (match.start(), True) if match else (len(text), False)


# --- CSV --------------------------------------------------------------------------------
#: The line boundaries of ``str.splitlines`` that are no line end to ``csv`` (which
#: reads ``io`` lines: CR, LF, CRLF).
_OTHER_LINE_BOUNDARIES = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _lines(text: str) -> list[str] | io.StringIO:
    """``text``'s lines as ``csv`` reads them from ``io.StringIO(text, newline="")``:
    ``text.splitlines(True)`` (the same lines, read faster) unless ``text`` holds a
    boundary only ``splitlines`` knows; then the ``io`` lines.
    Every reading of CSV text here takes its lines from this function."""
    for boundary in _OTHER_LINE_BOUNDARIES:  # each a memchr-fast scan; usually none found
        if boundary in text:
            return io.StringIO(text, newline="")
    return text.splitlines(True)


def _parse(text: str) -> list[list[str]]:
    try:
        return list(csv.reader(_lines(text), strict=True))
    except csv.Error as exc:
        raise StreamDecodeError(f"malformed CSV: {exc}") from None


class CsvRecordReader:
    """Cuts CSV text into complete records and parses them with the ``csv`` module.

    Each piece is cut after its last line end (a CR that may be the first half of a CRLF
    waits for the next piece) and the part before the cut is parsed by one strict
    ``csv.reader``. When that reader refuses it (the cut fell inside a quoted field, or
    the text is malformed), the records are read line by line to find the true end of
    the last complete record; the unfinished one waits, whole, for the next piece (at
    most ``MAX_CSV_RECORD_CHARS``).
    """

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = ""

    def feed(self, text: str) -> list[list[str]]:
        """The records completed by ``text``."""
        head = self._head(text)
        if not head:
            return []
        records = self._quick(head, list)
        return records if records is not None else self._slow(head)

    def feed_batches(self, text: str) -> Iterator[list[list[str]]]:
        """The records completed by ``text``, as ``feed`` gives them, in batches read
        from at most ``CSV_BATCH_CHARS`` characters each (few records alive at once)."""
        size = C.CSV_BATCH_CHARS
        for at in range(0, len(text), size):  # a text of one batch is not copied
            yield self.feed(text[at:at + size])

    def feed_counted(self, text: str, min_fields: int) -> int | list[list[str]]:
        """How many records ``text`` completes when each has at least ``min_fields``
        fields (counted without keeping them: no list of a chunk's records to build and
        collect); else, or when ``min_fields`` is 0, the records as ``feed`` gives them."""
        if not min_fields:
            return self.feed(text)
        head = self._head(text)
        if not head:
            return 0
        lengths = self._quick(head, _lengths)
        if lengths is None:
            return self._slow(head)
        if lengths and min(lengths) < min_fields:  # rare: the caller judges each record
            return _parse(head)
        return sum(lengths.values())

    # --- inside ---------------------------------------------------------------------
    def _head(self, text: str) -> str:
        """Takes ``text`` in; the text up to its last line end (a CR that may be the
        first half of a CRLF waits for the next piece), "" when there is none."""
        buf = self._buf + text if self._buf else text
        self._buf = buf
        cut = max(buf.rfind("\n"), buf.rfind("\r", 0, len(buf) - 1)) + 1
        if not cut:
            self._check_size()
        return buf[:cut]

    def _quick(self, head: str, collect: Callable[[Iterator[list[str]]], _T]) -> _T | None:
        """``collect`` over the records of ``head`` when the strict reader takes it whole
        (the usual case); None when the exact reading of ``_slow`` must decide: the cut
        fell inside a quoted field (strict ``csv`` refuses the end of data there) or the
        text is malformed. Where the reader takes the text whole, ``_slow`` would read
        the same records (same lines, same strict reader), so no quote count is needed
        first: a quote inside an unquoted field (``O"Brien``) stays on this path."""
        try:
            collected = collect(csv.reader(_lines(head), strict=True))
        except csv.Error:
            return None
        self._buf = self._buf[len(head):]
        return collected

    def _slow(self, head: str) -> list[list[str]]:
        """The complete records of ``head``, read line by line; the rest waits."""
        records, done = _complete_records(head)
        self._buf = self._buf[done:]
        self._check_size()
        return records

    def _check_size(self) -> None:
        if len(self._buf) > C.MAX_CSV_RECORD_CHARS:
            raise StreamDecodeError("a CSV record is too long (or its quotes are unbalanced)")

    def finish(self) -> list[list[str]]:
        """The last records (the text need not end with a line end)."""
        rest, self._buf = self._buf, ""
        return _parse(rest) if rest else []


def _lengths(records: Iterator[list[str]]) -> Counter[int]:
    """How many records of each field count (each record dropped as soon as counted)."""
    return Counter(map(len, records))


def _complete_records(head: str) -> tuple[list[list[str]], int]:
    """The complete records at the start of ``head`` (which ends with a line end) and
    the index where the first unfinished one begins."""
    lines = _lines(head)
    state = [0, False]  # characters handed to the reader; all lines handed

    def source() -> Iterator[str]:
        for line in lines:
            state[0] += len(line)
            yield line
        state[1] = True

    reader = csv.reader(source(), strict=True)
    records: list[list[str]] = []
    done = 0
    try:
        for record in reader:
            records.append(record)
            done = state[0]
    except csv.Error as exc:
        if not state[1]:  # refused before the end: the text is malformed
            raise StreamDecodeError(f"malformed CSV: {exc}") from None
        # the text ended inside a record: it goes on in the next piece
    return records, done
