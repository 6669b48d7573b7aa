"""Generic incremental readers: UTF-8 bytes, one string member of a JSON object, CSV records.

Each is fed piece by piece and keeps only what it cannot yet decide on, so reading a
large answer costs memory bounded by the piece size (plus one CSV record), never by the
size of the answer. They know nothing of the service or its models (``results`` and
``rows`` map their output to ``EmailRow``).

* ``Utf8Decoder``: bytes to text; a UTF-8 BOM at the very start is dropped.
* ``JsonMemberReader``: one top-level JSON object, handing out the decoded text of one
  string member as it arrives (escapes, ``\\uXXXX`` and surrogate pairs may be split
  anywhere between pieces); the other members are kept, small, in ``fields``. It walks
  the object with the package's one JSON tokenizer (``_serde.json_text``): read as
  ``json.loads`` reads it, raw control characters and bad escapes refused; a lone
  surrogate in the streamed text (which UTF-8 cannot carry) becomes U+FFFD.
* ``CsvRecordReader``: CSV text to records, exactly as ``csv.reader(io.StringIO(text,
  newline=""), strict=True)`` reads the whole text (the ``newline=""`` the csv module
  asks for: CRLF, LF and CR-only line ends), whatever the cuts between pieces.

Every malformation raises ``StreamDecodeError`` (a ``ValueError``).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ... import _constants as C
from ..._serde.json_text import END, MORE, JsonText, Members, StreamDecodeError

__all__ = [
    "CsvRecordReader",
    "JsonMemberReader",
    "StreamDecodeError",
    "Utf8Decoder",
]

_T = TypeVar("_T")


class Utf8Decoder:
    """Bytes to text, incrementally; a UTF-8 BOM at the start is dropped. A refusal
    says at which byte of the whole input the bad sequence starts."""

    __slots__ = ("_decoder", "_fed")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self._fed = 0  # bytes given to ``decode`` so far

    def decode(self, data: bytes, final: bool = False) -> str:
        """The text of ``data`` (a multi-byte character may wait for the next piece)."""
        try:
            text: str = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            raise StreamDecodeError(f"the answer is not valid UTF-8 ({exc.reason} at "
                                    f"byte {self._at(exc, data):,})") from None
        self._fed += len(data)
        if final and self._decoder.getstate()[0]:
            # A body cut inside a BOM (b"\xef", b"\xef\xbb"): utf-8-sig keeps those bytes
            # waiting and, at the end, drops them without a word.
            raise StreamDecodeError("the answer is not valid UTF-8 (unexpected end of data)")
        return text

    def _at(self, exc: UnicodeDecodeError, data: bytes) -> int:
        """Where in the whole input the sequence ``exc`` refused starts: ``exc.object``
        is what the decoder read this time, which ends where ``data`` ends (the bytes it
        kept waiting, then ``data``; a BOM it dropped left out)."""
        return self._fed + len(data) - len(exc.object) + exc.start


# --- JSON: one string member streamed -------------------------------------------------
class JsonMemberReader:
    """Reads one JSON object incrementally, streaming out its top-level string ``member``
    (the object's members walked by ``_serde.json_text``, the package's one JSON
    tokenizer).

    ``feed(text)`` returns the pieces of the member's text decoded from ``text``;
    ``fields`` holds the other top-level members once read (each at most
    ``MAX_SMALL_JSON_VALUE`` characters, as ``json.loads`` reads them); ``started`` /
    ``complete`` tell where the member's string is; ``finish()`` checks the object was
    complete. A member of that name that is not a string, or given twice, is refused.
    """

    def __init__(self, member: str, text: JsonText | None = None) -> None:
        """``text``: the JSON text to read (default: pushed by ``feed``, values capped
        at ``MAX_SMALL_JSON_VALUE``)."""
        self.member = member
        self.fields: dict[str, Any] = {}
        self.started = False
        self.complete = False
        self._text = text or JsonText(max_value=C.MAX_SMALL_JSON_VALUE)
        self._members = Members(self._text, max_key=C.MAX_SMALL_JSON_VALUE)
        self._key: str | None = None  # the member whose value is being read
        self._done = False  # the object's "}" was read

    def feed(self, text: str) -> list[str]:
        """Advance over ``text``; the decoded pieces of the member found in it."""
        self._text.feed(text)
        out: list[str] = []
        self._advance(out)
        return out

    def finish(self) -> None:
        """Raise ``StreamDecodeError`` unless one whole object was read."""
        self._text.feed("", final=True)
        self._advance([])  # a value cut at the very end is read (or refused) now
        if not self._done:
            raise StreamDecodeError("the JSON answer ended before its object did")

    def _advance(self, out: list[str]) -> None:
        """Read on as far as the text goes: members, their values, the streamed text."""
        text = self._text
        while not self._done:
            if self._key is None:
                key = self._members.next()
                if key is MORE:
                    return
                if key is END:
                    self._done = True
                    break
                self._start(key)
            if not self._value(out):
                return
            self._key = None
        if text.skip():
            raise StreamDecodeError("text after the end of the JSON object")

    def _start(self, key: str) -> None:
        """The value of ``key`` begins at pos (its first character there)."""
        if key == self.member:
            if self.started or key in self.fields:
                raise StreamDecodeError(f"the JSON answer has two {key!r} members")
            text = self._text
            if text.text[text.pos] != '"':
                raise StreamDecodeError(f"the JSON member {key!r} is not a string")
            text.pos += 1
            self.started = True
        self._key = key

    def _value(self, out: list[str]) -> bool:
        """Read on in the current member's value; True once it is read whole."""
        key = self._key
        if key == self.member:
            if not self._text.string(out, streamed=True):
                return False
            self.complete = True
            return True
        try:
            value = self._text.whole()
        except RecursionError:
            raise StreamDecodeError(f"the JSON member {key!r} is malformed") from None
        if value is MORE:
            return False
        self.fields[key] = value  # type: ignore[index]
        return True


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
    most ``MAX_CSV_RECORD_CHARS``). It ends inside a quoted field: it is not read again
    until that field closes or outgrows ``csv``'s field limit (``OpenField``), and a line
    end follows, so a field of many line ends (or a long line after it) arriving in
    small pieces costs a reading or two, not one per piece (a megabyte record cost
    seconds).
    """

    __slots__ = ("_buf", "_open")

    def __init__(self) -> None:
        self._buf = ""
        self._open: OpenField | None = None  # the unfinished record's open quoted field

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
        waiting = self._open
        if waiting is not None:  # an unfinished record: read again only if it may end
            if cut <= waiting.read or waiting.still_open(buf):  # the same text, or no end
                self._check_size()
                return ""
            self._open = None
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
        if done < len(head):  # text ending with a line end stops only inside quotes
            self._open = OpenField(self._buf, len(head) - done)
        self._check_size()
        return records

    def _check_size(self) -> None:
        if len(self._buf) > C.MAX_CSV_RECORD_CHARS:
            raise StreamDecodeError("a CSV record is too long (or its quotes are unbalanced)")

    def finish(self) -> list[list[str]]:
        """The last records (the text need not end with a line end)."""
        rest, self._buf, self._open = self._buf, "", None
        return _parse(rest) if rest else []


class OpenField:
    """The quoted field an unfinished record ends in: where its text is known to be
    inside it, and its length there (as ``csv`` counts it), so that the text can grow
    without being read again until the field closes or passes the field limit."""

    __slots__ = ("at", "length", "read")

    def __init__(self, text: str, at: int) -> None:
        """``text[:at]``: a record's start, ending inside a quoted field (the text
        ``csv`` read, up to a line end)."""
        self.at = self.read = at
        # Closed by one more quote, the record reads whole: its last field is this one.
        self.length = len(_parse(text[:at] + '"')[-1][-1])

    def still_open(self, text: str) -> bool:
        """Advance over ``text`` (the same text, grown); False once the field may end
        (a lone quote) or has passed ``csv``'s field limit: ``csv`` must read it."""
        at, length = self.at, self.length
        limit = csv.field_size_limit()
        while length <= limit:
            quote = text.find('"', at)
            if quote < 0:
                self.at, self.length = len(text), length + len(text) - at
                return self.length <= limit
            length += quote - at
            if quote + 1 == len(text):  # the first half of a "" or the closing quote
                self.at, self.length = quote, length
                return length <= limit
            if text[quote + 1] != '"':
                return False
            length += 1  # "" is one quote in the field
            at = quote + 2
        return False


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
