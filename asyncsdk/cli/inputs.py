"""The input files of ``check-many``: how a file is read, and the rules that tell a CSV
from a plain list of addresses.

Encoding: UTF-8 (a UTF-8 byte order mark is skipped), or UTF-16 when the file starts
with a UTF-16 byte order mark (what spreadsheet tools write as "Unicode text"). Any
other bytes (latin-1, a binary file, UTF-16 without a mark) are refused with the line
they are on. Lines may end in ``\\n``, ``\\r\\n`` or ``\\r``.

The first line that is neither blank nor a ``#`` comment decides what the file is:

* it holds no ``@``: it is a **header**, and one of its columns must name the
  addresses: ``email``, ``e-mail``, ``mail`` or ``email address`` (any case; spaces,
  ``-`` and ``_`` ignored). Its delimiter is whichever of ``,`` ``;`` and tab it
  holds most of. A ``name`` column (any case) is kept as ``name``, every other column
  as it is. The rows are read as strict CSV: an unclosed quote is an error, not rows
  swallowed silently.
* it holds an ``@`` and no delimiter: the file is a **plain list**, one address per
  line (blank lines and lines starting with ``#`` skipped).
* it holds an ``@`` and a delimiter: columns without a header, refused (add one).
  So is a row with a (non-empty) cell beyond the columns of a header that has several.

Every problem is an ``InputProblem``: one line naming the file, the line and what is
wrong (exit code 2). ``InputFile.open`` reads the whole file once, so that a bad line
anywhere is found before anything is sent (and paid for).

The fleet's submit (``asyncsdk/fleet/submit.py``) reads its input with this module
too: ``InputFile.open`` and ``InputFile.rows``, refusing with ``UsageProblem``.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import attrs

from .common import UsageProblem

__all__ = ["InputFile", "InputProblem", "InputRow", "UsageProblem"]

DELIMITERS = (",", ";", "\t")
EMAIL_COLUMNS = frozenset({"email", "mail", "emailaddress", "mailaddress"})
EMAIL_COLUMNS_SHOWN = "email, e-mail, mail or email address (any case)"
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that are not UTF-8 (surrogateescape)
_IGNORED_IN_NAMES = re.compile(r"[\s_-]+")


class InputProblem(UsageProblem):
    """A file that cannot be read as this command expects it (exit code 2)."""


@attrs.frozen
class InputRow:
    """One address of an input file: its position, and the cells of ``name`` and of the
    input's other columns (``InputFile.extra_columns``), in that order."""

    position: int
    email: str
    extra: tuple[str, ...] = ("",)


def encoding_of(path: Path) -> str:
    """The codec to read ``path`` with: by its byte order mark, else UTF-8."""
    with path.open("rb") as handle:
        head = handle.read(4)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8"


class Lines:
    """The lines of an open text file (line ends kept), numbered from 1 as they are
    read (``number``: the last line handed out), each checked to be text."""

    def __init__(self, path: Path, handle: IO[str], encoding: str) -> None:
        self.path, self.handle, self.encoding = path, handle, encoding
        self.number = 0

    def problem(self, what: str, number: int | None = None) -> InputProblem:
        """An ``InputProblem`` about line ``number`` (default: the last one read)."""
        return InputProblem(f"{self.path}, line {number or self.number}: {what}")

    def __iter__(self) -> Iterator[str]:
        shown = "UTF-16" if self.encoding == "utf-16" else "UTF-8"
        while True:
            try:
                line = next(self.handle, None)
            except UnicodeDecodeError as exc:  # UTF-16 only: UTF-8 bytes are escaped
                raise self.problem(f"not {shown} text ({exc.reason}); save the file as "
                                   "UTF-8", self.number + 1) from None
            if line is None:
                return
            self.number += 1
            bad = _ESCAPED.search(line)
            if bad is not None:
                raise self.problem(
                    f"not UTF-8 text (byte 0x{ord(bad.group()) - 0xDC00:02x} at column "
                    f"{bad.start() + 1}); save the file as UTF-8 (or UTF-16 with a BOM)")
            if "\x00" in line:
                raise self.problem("a NUL character: a binary file, or UTF-16 without a "
                                   "byte order mark? save the file as UTF-8")
            yield line


@contextlib.contextmanager
def text_lines(path: Path, encoding: str = "utf-8") -> Iterator[Lines]:
    """``path``'s lines, checked to be text in ``encoding`` (see ``Lines``)."""
    errors = "strict" if encoding == "utf-16" else "surrogateescape"
    with path.open(newline="", encoding=encoding, errors=errors) as handle:
        yield Lines(path, handle, encoding)


def csv_problem(lines: Lines, exc: csv.Error, start: int) -> InputProblem:
    """The ``InputProblem`` of a CSV error in the record that began on line ``start``."""
    text = str(exc)
    if "end of data" in text:
        return lines.problem("a quoted cell is never closed (a '\"' without its closing "
                             "'\"'); fix the file", start)
    if "field limit" in text:
        return lines.problem(f"a cell over {csv.field_size_limit()} characters (an "
                             "unclosed quote?); fix the file", start)
    return lines.problem(f"not valid CSV ({text}); fix the file", start)


def column_key(name: str) -> str:
    """A column name as it is compared: lower case, without spaces, ``-`` or ``_``."""
    return _IGNORED_IN_NAMES.sub("", name.strip().lower())


@attrs.define
class Layout:
    """Where an input CSV keeps the address, the name and its other columns."""

    email: int
    name: int | None
    others: list[int]
    width: int
    delimiter: str
    names: list[str]

    @classmethod
    def of(cls, first_line: str, lines: Lines) -> Layout | None:
        """The layout of the file whose first line (neither blank nor a comment) is
        ``first_line``; None for a plain list (see the module's docstring)."""
        text = first_line.strip()
        counts = {d: text.count(d) for d in DELIMITERS}
        delimiter = max(DELIMITERS, key=counts.__getitem__)
        if "@" in text:
            if counts[delimiter]:
                raise lines.problem(
                    f"{text[:60]!r} has columns but the file has no header line: add a "
                    f"first line naming them, one of them {EMAIL_COLUMNS_SHOWN}")
            return None
        try:
            cells = [c.strip() for c in next(csv.reader([text], delimiter=delimiter,
                                                        strict=True), [])]
        except csv.Error as exc:
            raise csv_problem(lines, exc, lines.number) from None
        keys = [column_key(c) for c in cells]
        email = next((i for i, k in enumerate(keys) if k in EMAIL_COLUMNS), None)
        if email is None:
            shown = ", ".join(repr(c) for c in cells[:10]) + (", ..." if len(cells) > 10
                                                              else "")
            raise lines.problem(
                f"a header line (it holds no address) without an email column: its "
                f"columns are {shown}; name the column of the addresses "
                f"{EMAIL_COLUMNS_SHOWN}")
        name = keys.index("name") if "name" in keys else None
        others = [i for i in range(len(cells)) if i not in (email, name)]
        return cls(email, name, others, len(cells), delimiter, cells)

    def check_width(self, cells: list[str], lines: Lines, start: int, header: int) -> None:
        """Refuse a record with a cell beyond the header's columns (a cell without a
        column would be dropped; empty ones, a spreadsheet's trailing delimiters, are
        fine). A header of one column shows no delimiter: its rows are not split."""
        if self.width > 1 and any(cell.strip() for cell in cells[self.width:]):
            raise lines.problem(
                f"{len(cells)} cells where the header (line {header}) has {self.width}: "
                f"{cells[self.width][:40]!r} has no column; add its name to the header "
                "or quote a cell that holds the delimiter", start)

    def split(self, cells: list[str]) -> tuple[str, ...]:
        """``(name, *others)`` of one record (short records padded with empty cells)."""
        cells = cells + [""] * (self.width - len(cells))
        name = "" if self.name is None else cells[self.name]
        return (name, *(cells[i] for i in self.others))


@attrs.define
class InputFile:
    """An input file of addresses (see the module's docstring), read lazily by
    ``rows``; ``open`` reads it once to check it and count its addresses."""

    path: Path
    encoding: str = "utf-8"
    layout: Layout | None = None  # None: a plain list
    header_line: int = 0  # the header's line number (0: a plain list)
    count: int = 0  # the addresses it holds
    extra_columns: tuple[str, ...] = ("name",)

    @classmethod
    def open(cls, path: Path) -> InputFile:
        """Check that ``path`` is a readable input, read its header and count its
        addresses (every line is read: a bad one is refused before anything is sent).

        Raises:
            UsageProblem: no such file, a directory, or a file that cannot be read.
            InputProblem: a line that is not text, a header without an email column,
                broken CSV.
        """
        if path.is_dir():
            raise UsageProblem(f"{path}: is a directory, not a file of addresses")
        if not path.is_file():
            raise UsageProblem(f"{path}: no such file")
        try:
            found = cls(path, encoding_of(path))
            with text_lines(path, found.encoding) as lines:
                for line in lines:
                    text = line.strip()
                    if text and not text.startswith("#"):
                        found.layout = Layout.of(text, lines)
                        found.header_line = lines.number if found.layout else 0
                        break
            if found.layout is not None:
                layout = found.layout
                found.extra_columns = ("name", *(layout.names[i] for i in layout.others))
            found.count = sum(1 for _ in found.rows())
        except UnicodeDecodeError as exc:  # pragma: no cover - Lines reports these
            raise UsageProblem(f"{path}: not text ({exc.reason})") from None
        except OSError as exc:
            raise UsageProblem(f"{path}: cannot read it: {exc.strerror or exc}") from None
        return found

    def rows(self) -> Iterator[InputRow]:
        """Every address with its position (1-based), its name and its other cells.

        Raises:
            InputProblem: a line that is not text, broken CSV.
        """
        position = 0
        with text_lines(self.path, self.encoding) as lines:
            layout = self.layout
            if layout is None:
                for line in lines:
                    text = line.strip()
                    if text and not text.startswith("#"):
                        position += 1
                        yield InputRow(position, text)
                return
            for _ in lines:
                if lines.number >= self.header_line:
                    break
            reader = csv.reader(lines, delimiter=layout.delimiter, strict=True)
            start = lines.number + 1
            while True:
                try:
                    cells = next(reader, None)
                except csv.Error as exc:
                    raise csv_problem(lines, exc, start) from None
                if cells is None:
                    return
                layout.check_width(cells, lines, start, self.header_line)
                start = lines.number + 1
                if len(cells) > layout.email and cells[layout.email].strip():
                    position += 1
                    yield InputRow(position, cells[layout.email].strip(),
                                   layout.split(cells))
