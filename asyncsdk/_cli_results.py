"""The result CSV of ``validate`` and ``check-many`` (one schema for both), the input
files they read, and the summary printed at the end.

Result columns, in order::

    row,email,verdict,role,error_type,error,attempted[,the input's other columns]

``row`` is the position of the address among the input's addresses (1 = the first), as
rows are written in completion order; ``verdict`` is the service's (Valid, CatchAll,
Unknown, Disposable, Bounce) or empty when there is none; ``role`` True/False/empty;
``error_type`` and ``error`` the class and message of a failure; ``attempted`` False
for an address that was never sent because the run stopped first. The input's other
columns (e.g. ``name``) follow, renamed ``input_<name>`` where a name is already taken.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TextIO

import attrs

from ._cli_common import UsageProblem

RESULT_COLUMNS = ("row", "email", "verdict", "role", "error_type", "error", "attempted")
# A row with a verdict, or one of these errors, is final: --resume does not send it
# again. Any other failure (connection, 5xx, rate limit, credentials, credit) and every
# address not attempted is sent again.
FINAL_ERRORS = frozenset({"InvalidInputError", "InvalidEmailError"})


@attrs.frozen
class InputRow:
    """One address of an input file, with its position and the row's other cells."""

    position: int
    email: str
    extra: tuple[str, ...] = ()


@attrs.define
class InputFile:
    """A CSV with an ``email`` column (any case; other columns are kept), or one address
    per line (blank lines and lines starting with # skipped). Read lazily."""

    path: Path
    extra_columns: tuple[str, ...] = ()

    @classmethod
    def open(cls, path: Path) -> InputFile:
        """Check that ``path`` is a readable file and read its header.

        Raises:
            UsageProblem: no such file.
        """
        if not path.is_file():
            raise UsageProblem(f"{path}: no such file")
        found = cls(path)
        with path.open(newline="", encoding="utf-8-sig") as handle:
            header = found._header(handle.readline())
        if header is not None:
            found.extra_columns = tuple(h for i, h in enumerate(header[1]) if i != header[0])
        return found

    @staticmethod
    def _header(first: str) -> tuple[int, list[str]] | None:
        cells = next(csv.reader([first]), [])
        names = [c.strip().lower() for c in cells]
        if "email" in names and ("," in first or first.strip().lower() == "email"):
            return names.index("email"), [c.strip() for c in cells]
        return None

    def rows(self) -> Iterator[InputRow]:
        """Every address with its position (1-based) and its other cells."""
        position = 0
        with self.path.open(newline="", encoding="utf-8-sig") as handle:
            first = handle.readline()
            header = self._header(first)
            if header is not None:
                index, names = header
                for cells in csv.reader(handle):
                    if len(cells) > index and cells[index].strip():
                        position += 1
                        cells += [""] * (len(names) - len(cells))
                        extra = tuple(c for i, c in enumerate(cells[:len(names)]) if i != index)
                        yield InputRow(position, cells[index].strip(), extra)
                return
            for line in [first, *handle]:
                text = line.strip()
                if text and not text.startswith("#"):
                    position += 1
                    yield InputRow(position, text)


def output_columns(extra_columns: Iterable[str]) -> list[str]:
    """The result header for an input with these other columns."""
    columns = list(RESULT_COLUMNS)
    for name in extra_columns:
        while name in columns:
            name = f"input_{name}"
        columns.append(name)
    return columns


class ResultWriter:
    """Writes result rows to an open text file, flushed row by row so that a run stopped
    by Ctrl-C or a crash keeps every row it finished."""

    def __init__(self, handle: IO[str], columns: list[str]) -> None:
        self.handle = handle
        self.columns = columns
        self.writer = csv.writer(handle)
        self.tally = Tally()

    def header(self) -> None:
        """Write the header line."""
        self.writer.writerow(self.columns)
        self.handle.flush()

    def write(self, row: InputRow, *, verdict: str = "", role: str = "", error_type: str = "",
              error: str = "", attempted: bool = True) -> None:
        """Write one result row and count it."""
        cells = [str(row.position), row.email, verdict, role, error_type, error,
                 str(attempted), *row.extra]
        self.writer.writerow(cells)
        self.handle.flush()
        self.tally.add(dict(zip(self.columns, cells, strict=False)))

    def copy(self, record: Mapping[str, str]) -> None:
        """Write a row read back from an earlier run (``--resume``)."""
        self.writer.writerow([record.get(c) or "" for c in self.columns])
        self.tally.add(record)


@attrs.define
class Tally:
    """Counts of a result file, for the summary."""

    verdicts: Counter[str] = attrs.Factory(Counter)
    roles: int = 0
    total: int = 0
    retryable: int = 0  # rows that --resume sends again


    def add(self, record: Mapping[str, str]) -> None:
        """Count one result row."""
        self.total += 1
        if record.get("verdict"):
            self.verdicts[record["verdict"]] += 1
        elif record.get("attempted") == "False":
            self.verdicts["(not attempted)"] += 1
        else:
            self.verdicts[f"({record.get('error_type') or 'failed'})"] += 1
        if not record.get("verdict") and record.get("error_type") not in FINAL_ERRORS:
            self.retryable += 1
        if record.get("role") == "True":
            self.roles += 1

    @property
    def failed(self) -> int:
        """Rows without a verdict."""
        return self.total - sum(n for v, n in self.verdicts.items() if not v.startswith("("))

    def print(self, headline: str, out: TextIO) -> None:
        """The summary: a table of verdicts (failures in parentheses) whose shares add up
        to 100%, then the role-based addresses on a line of their own (a role address
        also has a verdict, so it is not a row of that table)."""
        print(headline, file=out)
        print(f"{'verdict':<22}{'count':>8}{'share':>9}", file=out)
        for verdict, count in self.verdicts.most_common():
            print(f"{verdict:<22}{count:>8}{count / max(self.total, 1):>9.1%}", file=out)
        print(f"role-based addresses: {self.roles} ({self.roles / max(self.total, 1):.1%}"
              " of all, whatever their verdict)", file=out)


def read_previous(path: Path, columns: list[str]) -> tuple[list[dict[str, str]], int]:
    """The final rows of an earlier run's result file, and how many rows it held.

    A torn last line (a crash in mid-write) or a row that is not final is left out, so
    that ``--resume`` sends that address again.

    Raises:
        UsageProblem: the file is not a result file of this input's shape.
    """
    kept: list[dict[str, str]] = []
    seen = 0
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames != columns:
            raise UsageProblem(
                f"{path}: not a result file of this input (its columns are "
                f"{','.join(reader.fieldnames or [])}); pass another -o")
        for record in reader:
            seen += 1
            if None in record or any(v is None for v in record.values()):
                continue  # torn: fewer or more cells than the header
            if not record["row"].isdigit() or record["attempted"] not in ("True", "False"):
                continue
            if record["verdict"] or record["error_type"] in FINAL_ERRORS:
                kept.append(record)
    return kept, seen
