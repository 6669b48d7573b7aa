"""The result CSV of ``validate`` and ``check-many`` (one schema for both), the checks
of an output path, and the summary printed at the end (the input files are the
``inputs`` module's).

Result columns, in order::

    row,email,verdict,role,error_type,error,attempted,name[,the input's other columns]

``row`` is the position of the address among the input's addresses (1 = the first), as
rows are written in completion order; ``verdict`` is the service's (Valid, CatchAll,
Unknown, Disposable, Bounce) or empty when there is none; ``role`` True/False/empty;
``error_type`` and ``error`` the class and message of a failure; ``attempted`` True
exactly for the addresses sent (False for one never sent because the run stopped first,
for an input that is not an address, and for a ``--dedupe`` repeat that took the
outcome of its address); ``name`` the input's
(empty when it has none). The input's other columns follow, renamed ``input_<name>``
where a name is already taken.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, TextIO

import attrs

from .. import APITimeoutError, RateLimitError, SDKError
from .common import UsageProblem
from .inputs import InputRow

RESULT_COLUMNS = ("row", "email", "verdict", "role", "error_type", "error", "attempted")
#: ``-o -``: the rows go to standard output.
STDOUT = "-"
# A row with a verdict, or one of these errors, is final: --resume does not send it
# again. Any other failure (connection, 5xx, rate limit, credentials, credit) and every
# address not attempted is sent again.
FINAL_ERRORS = frozenset({"InvalidInputError", "InvalidEmailError"})
#: The error of an input refused before sending (not an address): never sent.
REFUSED = "InvalidInputError"


def never_left(error: SDKError) -> bool:
    """Whether a check's failure says that no attempt of it reached the service (its
    row is not ``attempted``): a ``RateLimitError`` with no answer of its own (the pace
    held it: "not sent"), or a timeout before anything may have been sent (its pace's
    moment came too late)."""
    if isinstance(error, RateLimitError):
        return error.status_code is None
    return isinstance(error, APITimeoutError) and not error.may_have_been_sent


@attrs.frozen
class Answer:
    """The result cells of one address, but for its position, itself and its input's
    columns: what a duplicate of it (``--dedupe``) is written with too."""

    verdict: str = ""
    role: str = ""
    error_type: str = ""
    error: str = ""
    attempted: bool = True

    @classmethod
    def of(cls, record: Mapping[str, str]) -> Answer:
        """The answer of a row read back from a result file."""
        return cls(record["verdict"], record["role"], record["error_type"],
                   record["error"], record["attempted"] == "True")


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

    def answer(self, row: InputRow, answer: Answer) -> None:
        """Write the row of ``row`` with ``answer``'s cells."""
        self.write(row, verdict=answer.verdict, role=answer.role,
                   error_type=answer.error_type, error=answer.error,
                   attempted=answer.attempted)

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
    checked: int = 0  # sent to the service (attempted True)
    refused: int = 0  # refused before sending: not an address (InvalidInputError)
    duplicates: int = 0  # --dedupe: never sent, the outcome of the same address taken
    not_attempted: int = 0  # never sent, and no outcome: the run stopped first

    def add(self, record: Mapping[str, str]) -> None:
        """Count one result row. A row not sent (``attempted`` False) with an outcome
        (a verdict, a final error) took it from a row of the same address: a duplicate."""
        self.total += 1
        error_type = record.get("error_type") or ""
        final = bool(record.get("verdict")) or error_type in FINAL_ERRORS
        if error_type == REFUSED:
            self.refused += 1
        elif record.get("attempted") == "True":
            self.checked += 1
        elif final:
            self.duplicates += 1
        else:
            self.not_attempted += 1
        if record.get("verdict"):
            self.verdicts[record["verdict"]] += 1
        elif not final and record.get("attempted") == "False":
            self.verdicts["(not attempted)"] += 1
        else:
            self.verdicts[f"({error_type or 'failed'})"] += 1
        if not record.get("verdict") and error_type not in FINAL_ERRORS:
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


def replaced_file(path: Path) -> Path | None:
    """The file that writing ``path`` atomically (a temporary file beside it, renamed
    over it) replaces: ``path`` with its symbolic links followed, so that a link stays a
    link to the new content; None when ``path`` is there but not a regular file (a device
    such as ``/dev/null``, a pipe): renaming over it would replace it, so it is written
    in place."""
    if path.exists() and not path.is_file():
        return None
    return Path(os.path.realpath(path))


def temporary_beside(path: Path) -> Path:
    """A temporary file's name in ``path``'s folder, for this process."""
    return path.with_name(f".{path.name}.{os.getpid()}.part")


def check_output(path: Path, *, overwrite: bool, resume: bool | None = None,
                 source: Path | None = None) -> bool:
    """Check, before anything is sent (or paid for), that the result can be written to
    ``path``; returns whether a non-empty file is there already.

    Raises:
        UsageProblem: ``path`` is a directory, is in a folder that does not exist or
            cannot be written, is the input file ``source``, or exists without
            ``overwrite`` (or ``resume``: None for a command without ``--resume``).
    """
    if path.is_dir():
        raise UsageProblem(f"-o {path}: is a directory; pass the name of a file to write")
    folder = path.parent
    if not folder.is_dir():
        raise UsageProblem(f"-o {path}: no such directory: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageProblem(f"-o {path}: cannot write in {folder} (permission denied)")
    exists = path.is_file() and path.stat().st_size > 0
    if source is not None and path.exists() and os.path.samefile(source, path):
        raise UsageProblem(f"-o {path}: is the input file; pass another -o")
    if exists and not (overwrite or resume):
        again = ("add --resume to check only the addresses it lacks, or --overwrite to "
                 "start again") if resume is not None else "add --overwrite to replace it"
        raise UsageProblem(f"-o {path}: exists; {again}")
    return exists
