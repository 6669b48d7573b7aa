"""A job's result CSV text -> ``EmailRow``: the hot loop of ``ValidationJob.rows()``.

``email_rows`` reads CSV text pieces (``results.csv_text``) with
``readers.CsvRecordReader`` in small batches; ``EmailRows`` finds the columns, skips
blank records and builds each batch's rows with a ``RowBuilder`` chosen once per file.
Verdicts and flags are read through two memos (each distinct text parsed once), module
globals that no frame holds as a local: a traceback rendered with its locals shows
nothing another result held. ``download()`` counts with ``EmailRows`` only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from itertools import repeat
from typing import Any

from ...models.codes import Verdict
from ...models.validation import EmailRow
from .readers import CsvRecordReader, StreamDecodeError

__all__ = ["EmailRows", "RowBuilder", "email_rows", "read_role", "read_verdict"]


def _header_key(name: str) -> str:
    return "".join(name.split()).casefold().lstrip("\ufeff")


_COLUMNS = {"email": "Email", "name": "Name", "status": "Status",
            "rolebasedemails": "Role Based Emails"}
_REQUIRED = ("email", "status", "rolebasedemails")
_VERDICTS: dict[str, Verdict] = {
    **{v.value.casefold(): v for v in Verdict}, **{v.value: v for v in Verdict}}
#: ``Role Based Emails``: these spellings, in any case and with white space around;
#: any other value (empty included) is None.
_ROLE_WORDS = {"true": True, "false": False, "yes": True, "no": False, "y": True,
               "n": False, "1": True, "0": False}
_ROLES: dict[str, bool] = {**_ROLE_WORDS, **{k.upper(): v for k, v in _ROLE_WORDS.items()},
                           **{k.capitalize(): v for k, v in _ROLE_WORDS.items()}}


def read_role(text: str) -> bool | None:
    """``Role Based Emails`` as a bool: true/false, yes/no, y/n, 1/0 in any case (white
    space around ignored); None for anything else. An unexpected flag never fails a
    result of a million rows."""
    value = _ROLES.get(text)
    if value is None:
        value = _ROLE_WORDS.get(text.strip().casefold())
    return value


def read_verdict(text: str) -> Verdict:
    """``Status`` as a ``Verdict`` (any case, white space around ignored); a verdict this
    library does not know is an unknown ``Verdict`` of the text (stripped), which
    compares equal to it."""
    verdict = _VERDICTS.get(text)
    return verdict if verdict is not None else Verdict(text.strip())


class _Memo(dict[str, Any]):
    """Raw text -> its parsed value, each distinct text parsed once (a dict, so that a
    hit is a plain look-up in C, and ``__missing__`` parses the rest). A result holds
    few distinct verdicts and flags, and short ones: at most ``_MEMO_LIMIT`` texts of up
    to ``_MEMO_TEXT`` characters are kept, so a hostile file of a million distinct or
    long values costs no memory."""

    __slots__ = ("_parse",)

    def __init__(self, parse: Callable[[str], Any], known: dict[str, Any]) -> None:
        super().__init__(known)
        self._parse = parse

    def __missing__(self, text: str) -> Any:
        value = self._parse(text)
        if len(self) < _MEMO_LIMIT and len(text) <= _MEMO_TEXT:
            self[text] = value
        return value

    def __repr__(self) -> str:  # its texts are other results' (see the module docstring)
        return f"<{type(self).__name__} of {len(self)} texts>"


_MEMO_LIMIT = 256
_MEMO_TEXT = 64
_VERDICT_MEMO = _Memo(read_verdict, _VERDICTS)
_ROLE_MEMO = _Memo(read_role, _ROLES)
_new = object.__new__


class RowBuilder:
    """The ``EmailRow``s of a batch of records, for one file's columns. Each row is made
    as ``EmailRow(...)`` makes it, in its two steps: ``object.__new__`` (all at once, in
    C), then the class's own ``__init__`` (attrs' constructor, validators and hooks
    included), called directly with keywords: what ``EmailRow(...)`` would add (the
    call through ``type``, the keywords gathered into a dict and spread again) is about
    a fifth of a row's build. ``EmailRow`` has no ``__new__`` of its own and a plain
    ``type`` (a test holds it so)."""

    __slots__ = ("_email", "_last", "_name", "_role", "_status")

    def __init__(self, index: tuple[int, int, int, int]) -> None:
        """``index``: where the email, name (-1: none), status and role fields are."""
        self._email, self._name, self._status, self._role = index
        self._last = max(index)  # a record without this field is blank or short

    def __call__(self, records: list[list[str]]) -> list[EmailRow]:
        """The rows of ``records`` up to the first record without one of the fields
        (blank or short: ``EmailRows.rows`` decides); no record is measured first."""
        rows: list[EmailRow] = list(map(_new, repeat(EmailRow, len(records))))
        init = EmailRow.__init__  # looked up per batch, as EmailRow(...) looks it up
        at_email, at_name, at_status, at_role = self._email, self._name, self._status, self._role
        r: list[str] = []
        try:
            if at_name < 0:
                for row, r in zip(rows, records, strict=True):
                    init(row, email=r[at_email].strip(), name="",
                         status=_VERDICT_MEMO[r[at_status]], role_based=_ROLE_MEMO[r[at_role]])
            else:
                for row, r in zip(rows, records, strict=True):
                    init(row, email=r[at_email].strip(), name=r[at_name],
                         status=_VERDICT_MEMO[r[at_status]], role_based=_ROLE_MEMO[r[at_role]])
        except IndexError:
            if len(r) > self._last:  # not the record's: raised by the constructor
                raise
            # Rows before ``r`` are built; ``r`` is the first record this short (an equal
            # one before it would have stopped the loop there).
            return rows[:records.index(r)]
        return rows


class EmailRows:
    """CSV records to rows, batch by batch: the first record that is not blank is the
    header, matched to ``Email``, ``Name``, ``Status``, ``Role Based Emails`` ignoring
    case and spaces, in any order; other columns are ignored; ``Name`` may be absent
    (then ""). Blank records are skipped; a record without the header's columns is
    refused. ``rows`` builds a batch's ``EmailRow``s; ``download()`` only counts."""

    __slots__ = ("_build", "_index", "_need", "_seen")

    def __init__(self) -> None:
        self._index: tuple[int, int, int, int] | None = None  # email, name, status, role
        self._build: RowBuilder | None = None  # chosen once the header is read
        self._need = 0
        self._seen = 0  # records before the current batch

    def take(self, records: list[list[str]]) -> list[list[str]]:
        """The records of this batch that are rows (the header and blank records left
        out); raises ``StreamDecodeError`` for a record shorter than the header."""
        if self._index is None:
            records = self._header(records)
            if self._index is None:
                return []
        base = self._seen
        self._seen += len(records)
        if records and min(map(len, records)) < self._need:  # blank records (or short)
            records = self._kept(records, base)
        return records

    def rows(self, batch: list[list[str]]) -> list[EmailRow]:
        """The rows of a batch of CSV records (those ``take`` keeps), built by the file's
        ``RowBuilder``; raises ``StreamDecodeError`` for a record shorter than the header.
        The builder meets a blank or short record where it lacks a field (no record is
        measured first, unlike ``take``): the rest of the batch is then sorted out."""
        build = self._build
        if build is None:
            batch = self._header(batch)
            build = self._build
            if build is None:
                return []
        base = self._seen
        self._seen += len(batch)
        rows = build(batch)
        done = len(rows)
        if done < len(batch):
            rows += build(self._kept(batch[done:], base + done))
        return rows

    @property
    def need(self) -> int:
        """The fields a record must have once the header is read (0 before)."""
        return self._need

    def count(self, records: list[list[str]] | int) -> int:
        """How many rows ``records`` hold, checked as ``take`` checks them (an int: that
        many records, already known to have ``need`` fields each)."""
        if isinstance(records, int):
            self._seen += records
            return records
        return len(self.take(records))

    def finish(self) -> None:
        """Raise ``StreamDecodeError`` if no header was ever read."""
        if self._index is None:
            raise StreamDecodeError("the result CSV is empty: no header record")

    # --- inside ---------------------------------------------------------------------
    def _kept(self, records: list[list[str]], base: int) -> list[list[str]]:
        """``records`` without the blank ones (``base``: the records before them); raises
        for a short one."""
        need = self._need
        return [r for r in records if len(r) >= need or not self._skip(r, records, base)]

    def _skip(self, record: list[str], records: list[list[str]], base: int) -> bool:
        """True for a blank record; raises for a short one."""
        if not record or (len(record) == 1 and not record[0].strip()):
            return True
        line = base + records.index(record) + 1
        raise StreamDecodeError(f"CSV record {line} has {len(record)} fields, expected at "
                                f"least {self._need}")

    def _header(self, records: list[list[str]]) -> list[list[str]]:
        """Read the header from ``records``; the records after it."""
        for at, record in enumerate(records):
            if not record or (len(record) == 1 and not record[0].strip()):
                continue
            index: dict[str, int] = {}
            for column, name in enumerate(record):
                key = _header_key(name)
                if key in _COLUMNS and key not in index:
                    index[key] = column
            missing = [_COLUMNS[k] for k in _REQUIRED if k not in index]
            if missing:
                shown = ", ".join(map(repr, record[:8]))  # cut by jobs, once scrubbed
                raise StreamDecodeError(f"the result CSV lacks the column(s) "
                                        f"{', '.join(missing)} (header: {shown})")
            self._index = (index["email"], index.get("name", -1), index["status"],
                           index["rolebasedemails"])
            self._need = max(index.values()) + 1
            self._build = RowBuilder(self._index)
            self._seen += at + 1
            return records[at + 1:]
        self._seen += len(records)
        return []


async def email_rows(
    pieces: AsyncGenerator[str, None],
    decode_failed: Callable[[StreamDecodeError], Exception],
) -> AsyncGenerator[EmailRow, None]:
    """The ``EmailRow``s of the CSV text arriving in ``pieces`` (``ValidationJob.rows``
    returns this generator itself: a layer per row would cost as much as the row).
    Each piece is read in ``CsvRecordReader.feed_batches``' batches, each batch's records
    dropped as soon as its rows are built (fewer objects alive for the collector to
    walk while the rows are handed out). Closing it closes ``pieces``; an unreadable
    text raises ``decode_failed(error)``.

    That error is raised outside the ``except`` so that it chains nothing: the
    ``StreamDecodeError`` quotes the records unscrubbed (a header may echo a
    credential) and its frames hold them; the text read leaves this frame's locals
    first (``decode_failed`` scrubs its own text)."""
    builder = EmailRows()
    reader = CsvRecordReader()
    failed: Exception | None = None
    try:
        async with aclosing(pieces):
            async for text in pieces:
                for rows in map(builder.rows, reader.feed_batches(text)):
                    for row in rows:
                        yield row
        for row in builder.rows(reader.finish()):
            yield row
        builder.finish()
    except StreamDecodeError as exc:
        text, reader, rows = "", CsvRecordReader(), []  # the reader kept unread text
        failed = decode_failed(exc)
    if failed is not None:
        raise failed
