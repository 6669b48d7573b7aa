"""The result CSV of ``validate`` and ``check-many`` (one schema for both), the input
files they read, and the summary printed at the end.

Result columns, in order::

    row,email,verdict,role,error_type,error,attempted,name[,the input's other columns]

``row`` is the position of the address among the input's addresses (1 = the first), as
rows are written in completion order; ``verdict`` is the service's (Valid, CatchAll,
Unknown, Disposable, Bounce) or empty when there is none; ``role`` True/False/empty;
``error_type`` and ``error`` the class and message of a failure; ``attempted`` False
for an address that was never sent because the run stopped first; ``name`` the input's
(empty when it has none). The input's other columns follow, renamed ``input_<name>``
where a name is already taken.
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
    """One address of an input file: its position, and the cells of ``name`` and of the
    input's other columns (``InputFile.extra_columns``), in that order."""

    position: int
    email: str
    extra: tuple[str, ...] = ("",)


@attrs.define
class Layout:
    """Where an input CSV keeps the address, the name and its other columns."""

    email: int
    name: int | None
    others: list[int]
    width: int

    @classmethod
    def of(cls, first_line: str) -> tuple[Layout, list[str]] | None:
        """The layout and column names of a header line; None when it is no header."""
        cells = [c.strip() for c in next(csv.reader([first_line]), [])]
        lowered = [c.lower() for c in cells]
        if "email" not in lowered or not ("," in first_line or lowered == ["email"]):
            return None
        email = lowered.index("email")
        name = lowered.index("name") if "name" in lowered else None
        others = [i for i in range(len(cells)) if i not in (email, name)]
        return cls(email, name, others, len(cells)), cells

    def split(self, cells: list[str]) -> tuple[str, ...]:
        """``(name, *others)`` of one record (short records padded with empty cells)."""
        cells = cells + [""] * (self.width - len(cells))
        name = "" if self.name is None else cells[self.name]
        return (name, *(cells[i] for i in self.others))


@attrs.define
class InputFile:
    """A CSV with an ``email`` column (any case; a ``name`` and any other columns are
    kept), or one address per line (blank lines and lines starting with # skipped).
    Read lazily."""

    path: Path
    extra_columns: tuple[str, ...] = ("name",)

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
            header = Layout.of(handle.readline())
        if header is not None:
            layout, names = header
            found.extra_columns = ("name", *(names[i] for i in layout.others))
        return found

    def rows(self) -> Iterator[InputRow]:
        """Every address with its position (1-based), its name and its other cells."""
        position = 0
        with self.path.open(newline="", encoding="utf-8-sig") as handle:
            first = handle.readline()
            header = Layout.of(first)
            if header is not None:
                layout = header[0]
                for cells in csv.reader(handle):
                    if len(cells) > layout.email and cells[layout.email].strip():
                        position += 1
                        yield InputRow(position, cells[layout.email].strip(),
                                       layout.split(cells))
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
