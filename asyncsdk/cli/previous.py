"""What an earlier run of ``check-many`` left in its result file, for ``--resume``.

A crash can only tear the file's *last* record: rows are written whole, one after
another, and a resume rewrites the file with its final rows before it appends. So the
file is read with a strict CSV parser, and:

* the bytes after the last line end are a record cut in mid-write: left out;
* a record still inside a quoted cell where the complete lines end (a crash just after
  a line end *inside* a quoted multi-line cell) is torn too: left out;
* the last record with fewer cells than the header is torn: left out;
* anything else that is not a well-formed row (a row number that is not a plain
  positive integer, an ``attempted`` that is not True/False, a record of the wrong
  width before the last, text that is not UTF-8, broken CSV) is not a file this command
  wrote: refused in one line (exit 2), and the file is left untouched.

Every address left out is checked again by the resume.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path

import attrs

from .common import UsageProblem
from .inputs import InputProblem, Lines
from .outputs import FINAL_ERRORS

_ROW_NUMBER = re.compile(r"[1-9][0-9]*")


@attrs.define
class Previous:
    """What an earlier run's result file holds (``read_previous``)."""

    final: list[dict[str, str]] = attrs.Factory(list)  # kept: --resume skips them
    retried: list[dict[str, str]] = attrs.Factory(list)  # well-formed, sent again
    torn: int = 0  # records left out because a crash cut them (0 or 1)


def whole_lines_size(path: Path, chunk: int = 64 * 1024) -> int:
    """The size of ``path`` up to and including its last line end (0: none)."""
    with path.open("rb") as raw:
        end = raw.seek(0, os.SEEK_END)
        while end > 0:
            start = max(end - chunk, 0)
            raw.seek(start)
            block = raw.read(end - start)
            cut = max(block.rfind(b"\n"), block.rfind(b"\r"))
            if cut >= 0:
                return start + cut + 1
            end = start
    return 0


class _Prefix(io.RawIOBase):
    """The first ``size`` bytes of a binary file."""

    def __init__(self, raw: io.BufferedReader, size: int) -> None:
        self.raw, self.left = raw, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


@contextlib.contextmanager
def whole_lines(path: Path) -> Iterator[Lines]:
    """The lines of ``path`` that end with a line end, checked to be UTF-8 text."""
    size = whole_lines_size(path)
    with path.open("rb") as raw:
        text = io.TextIOWrapper(io.BufferedReader(_Prefix(raw, size)), encoding="utf-8",
                                errors="surrogateescape", newline="")
        with text:
            yield Lines(path, text, "utf-8")


def not_ours(lines: Lines, what: str, number: int | None = None) -> UsageProblem:
    """The refusal of a file this command did not write (one line, exit 2)."""
    return UsageProblem(f"{lines.problem(f'not a result file of this command ({what})', number)}"
                        "; pass another -o (or --overwrite to start again)")


def records(lines: Lines) -> Iterator[tuple[int, list[str] | None]]:
    """``(first line, cells)`` of each record, strictly parsed; the cells are None for a
    record cut where the whole lines end (inside a quoted cell), which is the last.

    Raises:
        UsageProblem: broken CSV before the end.
    """
    stream = iter(lines)
    reader = csv.reader(stream, strict=True)
    while True:
        start = lines.number + 1
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            if next(stream, None) is None:  # the end came inside the record: torn
                yield start, None
                return
            raise not_ours(lines, str(exc), start) from None
        if cells is None:
            return
        yield start, cells


def well_formed(record: dict[str, str]) -> str | None:
    """What is wrong with a row of the right width, or None."""
    if not _ROW_NUMBER.fullmatch(record["row"]):
        return f"row {record['row']!r} is not a row number"
    if record["attempted"] not in ("True", "False"):
        return f"attempted {record['attempted']!r} is not True or False"
    return None


def read_previous(path: Path, columns: list[str]) -> Previous:
    """The rows of an earlier run's result file, final or to check again (see the
    module's docstring).

    Raises:
        UsageProblem: not a result file of this input's shape, or not one this command
            wrote (not UTF-8, broken CSV, a malformed row): one line.
    """
    found = Previous()
    try:
        with whole_lines(path) as lines:
            parsed = records(lines)
            header = next(parsed, (1, None))[1]
            if header != columns:
                raise UsageProblem(
                    f"{path}: not a result file of this input (its columns are "
                    f"{','.join(header or [])}); pass another -o")
            pending: tuple[int, list[str] | None] | None = None
            for item in parsed:
                if pending is not None:
                    keep(found, lines, *pending, last=False, columns=columns)
                pending = item
            if pending is not None:
                keep(found, lines, *pending, last=True, columns=columns)
    except InputProblem as exc:
        raise UsageProblem(f"{exc}; pass another -o (or --overwrite)") from None
    return found


def keep(found: Previous, lines: Lines, start: int, cells: list[str] | None, *,
         last: bool, columns: list[str]) -> None:
    """File one record as final, to check again, or torn (the last only); refuse one
    that this command cannot have written."""
    if cells is None or (last and len(cells) < len(columns)):
        found.torn += 1
        return
    if len(cells) != len(columns):
        raise not_ours(lines, f"{len(cells)} cells where the header has {len(columns)}",
                       start)
    record = dict(zip(columns, cells, strict=True))
    wrong = well_formed(record)
    if wrong is not None:
        raise not_ours(lines, wrong, start)
    if record["verdict"] or record["error_type"] in FINAL_ERRORS:
        found.final.append(record)
    else:
        found.retried.append(record)
