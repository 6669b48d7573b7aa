"""Incremental readers for jobs/download: a JSON string value and CSV rows.

Both are fed text piece by piece and keep only what they cannot yet decide on, so the
memory of reading a result is bounded by the chunk size (plus one CSV record), never by
the size of the file.

* ``JsonResultExtractor`` reads one top-level JSON object and hands out the decoded text
  of its ``"result"`` string as it arrives (escapes, ``\\uXXXX`` and surrogate pairs may
  be split anywhere between pieces). The other top-level members (``status``, ``error``,
  anything else) are kept, small, in ``fields``, whether they come before or after it.
* ``CsvRowReader`` cuts text into complete CSV records (a newline inside a quoted field
  does not end a record) and parses them with the ``csv`` module.
* ``RowBuilder`` maps the records to ``EmailRow``s by the documented header names.

Every malformation raises ``StreamDecodeError`` (a ``ValueError``); the job layer turns it
into ``ResponseDecodeError``.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

from ._convert import DecodeFailure, parse_bool
from .models.codes import Verdict
from .models.validation import EmailRow

__all__ = [
    "CsvRowReader",
    "JsonResultExtractor",
    "RowBuilder",
    "StreamDecodeError",
    "Utf8Decoder",
]

#: The json module's string scanner (C): decodes a JSON string's inside up to its quote.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = (
    json.decoder.scanstring)  # type: ignore[attr-defined]

#: A member of the JSON object other than ``result`` larger than this is refused.
MAX_SMALL_VALUE = 64 * 1024
#: One CSV record (with its quoted newlines) larger than this is refused.
MAX_RECORD_CHARS = 1024 * 1024


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
        return text


# --- JSON -------------------------------------------------------------------------------
_WS = " \t\r\n"
_SCALAR_END = re.compile(r"[\s,}\]]")

# States of the object scanner.
_BEFORE_OBJECT, _BEFORE_KEY, _KEY, _COLON, _BEFORE_VALUE, _VALUE, _AFTER_VALUE, _DONE = range(8)


class _StringDecoder:
    """Decodes the inside of one JSON string (after its opening quote), incrementally.

    Each piece is cut where it can be decoded on its own (never inside an escape, never
    between the halves of a surrogate pair) and decoded by the json module's C scanner.
    """

    __slots__ = ("_carry", "done")

    def __init__(self) -> None:
        self._carry = ""  # an escape begun at the end of the previous piece
        self.done = False

    def feed(self, text: str, pos: int, out: list[str]) -> int:
        """Decode ``text[pos:]`` into ``out`` up to the closing quote; the index after it
        (or ``len(text)`` when the string goes on in the next piece)."""
        offset = 0
        if self._carry:  # an escape begun in the previous piece: rescan it with this one
            offset = pos - len(self._carry)
            text, pos = self._carry + text[pos:], 0
            self._carry = ""
        match = _SEGMENT.match(text, pos)
        assert match is not None  # the pattern matches the empty string
        end = match.end()
        closing = end < len(text) and text[end] == '"'
        segment = text[pos:end]
        if not closing:  # the piece ended, perhaps on a backslash
            cut = _unfinished_escape(segment)
            self._carry = segment[cut:] + text[end:]
            segment = segment[:cut]
        if segment:
            out.append(_decode_segment(segment))
        if closing:
            self.done = True
            return end + 1 + offset
        return len(text) + offset


#: The inside of a JSON string up to its closing quote (or up to a lone trailing backslash).
_SEGMENT = re.compile(r'(?:[^"\\]+|\\.)*', re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


#: An escape the next piece may complete, at the end of a piece: ``\\u`` with fewer than
#: 4 digits (possibly after a high surrogate), or a high surrogate awaiting its low half.
_UNFINISHED = re.compile(
    r"(?:\\u[dD][89abAB][0-9a-fA-F]{2})?\\u[0-9a-fA-F]{0,3}\Z"
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\Z")


def _unfinished_escape(segment: str) -> int:
    """Where the escape that the next piece may complete starts in ``segment`` (its
    length when there is none)."""
    match = _UNFINISHED.search(segment, max(0, len(segment) - 12))
    if match is None:
        return len(segment)
    start = match.start()
    run = start
    while run > 0 and segment[run - 1] == "\\":
        run -= 1
    if (start - run) % 2 == 0:  # an escape indeed, not text after an escaped backslash
        return start
    # "\\\\uD83D\\u12": the first "\\u" is text; an escape may follow it
    inner = segment.find("\\", start + 1, match.end())
    return inner if inner >= 0 else len(segment)


def _decode_segment(segment: str) -> str:
    try:
        decoded = _scanstring(segment + '"', 0, False)
    except ValueError:
        raise StreamDecodeError("invalid escape in a JSON string") from None
    text: str = decoded[0]
    if _SURROGATE.search(text):  # a lone surrogate cannot be written as UTF-8
        text = _SURROGATE.sub("\ufffd", text)
    return text


class JsonResultExtractor:
    """Reads one JSON object incrementally, streaming out its top-level ``result`` string.

    ``feed(text)`` returns the pieces of the ``result`` text decoded from ``text``;
    ``fields`` holds the other top-level members once read; ``result_started`` /
    ``result_done`` tell where the ``result`` string is; ``finish()`` checks the object
    was complete.
    """

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.result_started = False
        self.result_done = False
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
        """Advance over ``text``; the decoded pieces of ``result`` found in it."""
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
                elif sum(map(len, self._key_parts)) > MAX_SMALL_VALUE:
                    raise StreamDecodeError("a key of the JSON answer is too long")
                continue
            char = text[pos]
            pos += 1
            if char in _WS:
                continue
            if state == _BEFORE_OBJECT:
                if char != "{":
                    raise StreamDecodeError("the JSON answer is not an object")
                self._state = _BEFORE_KEY
            elif state == _BEFORE_KEY:
                if char == '"':
                    self._key_decoder = _StringDecoder()
                    self._state = _KEY
                elif char == "}" and not self.fields and not self.result_started:
                    self._state = _DONE
                else:
                    raise StreamDecodeError(f"unexpected {char!r} where a key should be")
            elif state == _COLON:
                if char != ":":
                    raise StreamDecodeError(f"unexpected {char!r} after a key")
                self._state = _BEFORE_VALUE
            elif state == _BEFORE_VALUE:
                self._start_value(char)
            elif state == _AFTER_VALUE:
                if char == ",":
                    self._state = _BEFORE_KEY
                elif char == "}":
                    self._state = _DONE
                else:
                    raise StreamDecodeError(f"unexpected {char!r} after a value")
            else:  # _DONE
                raise StreamDecodeError("text after the end of the JSON object")
        return out

    def finish(self) -> None:
        """Raise ``StreamDecodeError`` unless one whole object was read."""
        if self._state != _DONE:
            raise StreamDecodeError("the JSON answer ended before its object did")

    @property
    def done(self) -> bool:
        """True once the closing brace of the object was read."""
        return self._state == _DONE

    # --- values ---------------------------------------------------------------------
    def _start_value(self, char: str) -> None:
        key = self._key
        is_result = key == "result"
        if is_result and (self.result_started or "result" in self.fields):
            raise StreamDecodeError("the JSON answer has two results")
        self._state = _VALUE
        if char == '"':
            self._value_decoder = _StringDecoder()
            self._value_parts = []
            self._value_size = 0
            if is_result:
                self.result_started = True
            return
        self._raw_value = [char]
        self._value_size = 1
        self._depth = 1 if char in "[{" else 0
        self._raw_in_string = False
        self._raw_escape = False
        if self._depth == 0 and char not in "-0123456789tfn":
            raise StreamDecodeError(f"unexpected {char!r} where a value should be")

    def _feed_value(self, text: str, pos: int, out: list[str]) -> int:
        decoder = self._value_decoder
        if decoder is not None:
            streaming = self._key == "result"
            parts = out if streaming else self._value_parts
            before = len(parts)
            pos = decoder.feed(text, pos, parts)
            if not streaming:
                self._value_size += sum(len(p) for p in parts[before:])
                if self._value_size > MAX_SMALL_VALUE:
                    raise StreamDecodeError(f"the JSON member {self._key!r} is too large")
            if decoder.done:
                if streaming:
                    self.result_done = True
                else:
                    self.fields[self._key] = "".join(self._value_parts)
                self._value_decoder = None
                self._value_parts = []
                self._state = _AFTER_VALUE
            return pos
        return self._feed_raw(text, pos)

    def _feed_raw(self, text: str, pos: int) -> int:
        """A number, literal, array or object: kept as raw text, parsed when complete."""
        raw = self._raw_value
        assert raw is not None
        start, end = pos, len(text)
        if self._depth == 0:  # a scalar: ends before white space, ',' or '}'
            match = _SCALAR_END.search(text, pos)
            stop = match.start() if match else end
            raw.append(text[pos:stop])
            self._value_size += stop - pos
            pos = stop
            complete = match is not None
        else:
            complete = False
            while pos < end:
                char = text[pos]
                pos += 1
                if self._raw_in_string:
                    if self._raw_escape:
                        self._raw_escape = False
                    elif char == "\\":
                        self._raw_escape = True
                    elif char == '"':
                        self._raw_in_string = False
                elif char == '"':
                    self._raw_in_string = True
                elif char in "[{":
                    self._depth += 1
                elif char in "]}":
                    self._depth -= 1
                    if self._depth == 0:
                        complete = True
                        break
            raw.append(text[start:pos])
            self._value_size += pos - start
        if self._value_size > MAX_SMALL_VALUE:
            raise StreamDecodeError(f"the JSON member {self._key!r} is too large")
        if complete:
            try:
                value = json.loads("".join(raw))
            except ValueError:
                raise StreamDecodeError(f"the JSON member {self._key!r} is malformed") from None
            self.fields[self._key] = value
            self._raw_value = None
            self._state = _AFTER_VALUE
        return pos


# --- CSV --------------------------------------------------------------------------------
class CsvRowReader:
    """Cuts text into complete CSV records and parses them (RFC 4180: quoted fields may
    hold commas, doubled quotes and newlines; CRLF or LF line ends).

    A newline ends a record only when the quotes before it in the record are balanced,
    so a record split across pieces waits, whole, for its end.
    """

    __slots__ = ("_buf", "_cut", "_odd", "_scan", "_started")

    def __init__(self) -> None:
        self._buf = ""
        self._scan = 0  # everything before this index has been looked at
        self._odd = False  # quote parity of buf[_cut:_scan]
        self._cut = 0  # buf[:_cut] holds complete records not yet parsed
        self._started = False

    def feed(self, text: str) -> list[list[str]]:
        """The records completed by ``text``."""
        if not self._started:
            if not text:
                return []
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        buf = self._buf + text if self._buf else text
        self._buf = buf
        pos = self._scan
        last = buf.rfind("\n", pos)
        if last < 0:
            pass
        elif not (self._odd ^ (buf.count('"', pos, last) & 1)):
            # balanced quotes up to the last newline: it ends a record (the usual case)
            self._cut = self._scan = last + 1
            self._odd = False
        else:  # a quoted field spans the end of the text: find the last record end
            while True:
                newline = buf.find("\n", pos)
                if newline < 0:
                    break
                if buf.count('"', pos, newline) % 2:
                    self._odd = not self._odd
                pos = newline + 1
                if not self._odd:
                    self._cut = pos
            self._scan = pos
        if not self._cut:
            if len(buf) > MAX_RECORD_CHARS:
                raise StreamDecodeError(
                    "a CSV record is too long (or its quotes are unbalanced)")
            return []
        complete, self._buf = buf[: self._cut], buf[self._cut:]
        self._scan -= self._cut
        self._cut = 0
        return self._parse(complete)

    def finish(self) -> list[list[str]]:
        """The last records (the text need not end with a newline)."""
        rest, self._buf = self._buf, ""
        self._scan = self._cut = 0
        if self._odd:
            raise StreamDecodeError("the CSV ends inside a quoted field")
        return self._parse(rest) if rest else []

    @staticmethod
    def _parse(text: str) -> list[list[str]]:
        try:
            return list(csv.reader(io.StringIO(text, newline=""), strict=True))
        except csv.Error as exc:
            raise StreamDecodeError(f"malformed CSV: {exc}") from None


def _header_key(name: str) -> str:
    return "".join(name.split()).casefold().lstrip("\ufeff")


_COLUMNS = {"email": "Email", "name": "Name", "status": "Status",
            "rolebasedemails": "Role Based Emails"}
_REQUIRED = ("email", "status", "rolebasedemails")
_VERDICTS: dict[str, Verdict] = {
    **{v.value.casefold(): v for v in Verdict}, **{v.value: v for v in Verdict}}
#: The usual spellings of ``Role Based Emails``, looked up before the general reading.
_ROLES = {"True": True, "False": False, "true": True, "false": False, "1": True, "0": False}


class RowBuilder:
    """Turns CSV records into ``EmailRow``s: the first record is the header, matched to
    ``Email``, ``Name``, ``Status``, ``Role Based Emails`` ignoring case and spaces, in
    any order; other columns are ignored; ``Name`` may be absent (then "")."""

    __slots__ = ("_index", "_line", "_need")

    def __init__(self) -> None:
        self._index: dict[str, int] | None = None
        self._need = 0
        self._line = 0

    @property
    def has_header(self) -> bool:
        """True once the header record was read."""
        return self._index is not None

    def rows(self, records: list[list[str]]) -> list[EmailRow]:
        """The rows of ``records`` (blank records skipped)."""
        out: list[EmailRow] = []
        index = self._index
        for record in records:
            self._line += 1
            if not record or (len(record) == 1 and not record[0].strip()):
                continue
            if index is None:
                index = self._index = self._read_header(record)
                self._need = max(index.values()) + 1
                continue
            if len(record) < self._need:
                raise StreamDecodeError(
                    f"CSV record {self._line} has {len(record)} fields, "
                    f"expected at least {self._need}")
            out.append(self._row(index, record))
        return out

    def _row(self, index: dict[str, int], record: list[str]) -> EmailRow:
        status = record[index["status"]].strip()
        role_text = record[index["rolebasedemails"]]
        role = _ROLES.get(role_text)
        if role is None:
            try:
                role = parse_bool(role_text)
            except DecodeFailure:
                raise StreamDecodeError(
                    f"CSV record {self._line}: Role Based Emails {role_text[:20]!r} is not "
                    "True/False/1/0") from None
        name_at = index.get("name")
        verdict: Verdict = (
            _VERDICTS.get(status) or _VERDICTS.get(status.casefold()) or Verdict(status))
        return EmailRow(
            email=record[index["email"]].strip(),
            name=record[name_at] if name_at is not None else "",
            status=verdict,
            role_based=role,
        )

    def finish(self) -> None:
        """Raise ``StreamDecodeError`` if no header was ever read."""
        if self._index is None:
            raise StreamDecodeError("the result CSV is empty: no header record")

    @staticmethod
    def _read_header(record: list[str]) -> dict[str, int]:
        index: dict[str, int] = {}
        for at, name in enumerate(record):
            key = _header_key(name)
            if key in _COLUMNS and key not in index:
                index[key] = at
        missing = [_COLUMNS[k] for k in _REQUIRED if k not in index]
        if missing:
            shown = ", ".join(repr(n[:40]) for n in record[:8])
            raise StreamDecodeError(
                f"the result CSV lacks the column(s) {', '.join(missing)} (header: {shown})")
        return index
