"""``validate`` of a local file: the input's other columns joined to the job's result.

The service answers a job with its own columns (address, name, verdict, role), one row
per address, and keeps nothing else of the input. So each result row is matched to the
input's row that holds the same address, as the input wrote it (the first one not yet
matched: an address listed twice matches its rows in turn), and written with that row's
position and other columns, as ``check-many`` writes them. A result address that the
input does not hold is numbered after the input's addresses, its other columns empty.

A list given as a URL is fetched by the service, never by the command: there is nothing
to join, and the result has the service's columns only.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from .. import EmailRow
from .common import UsageProblem
from .inputs import InputFile, InputRow


class InputJoin:
    """The rows of an input file by address, taken one by one as result rows match."""

    def __init__(self, inputs: InputFile) -> None:
        self.extra_columns = inputs.extra_columns
        self.count = inputs.count
        self.unmatched = 0
        self.rows: dict[str, deque[InputRow]] = {}
        for row in inputs.rows():
            self.rows.setdefault(row.email, deque()).append(row)

    @classmethod
    def read(cls, path: Path) -> InputJoin | None:
        """The join of ``path``; None when ``check-many``'s reader refuses it (a
        headerless file with columns, say), which the service may still take: its
        result then has the service's columns only."""
        try:
            return cls(InputFile.open(path))
        except UsageProblem:
            return None

    def row_of(self, result: EmailRow) -> InputRow:
        """The input row of ``result`` (its position, the service's name and the input's
        other cells)."""
        queue = self.rows.get(result.email)
        if queue:
            found = queue.popleft()
            return InputRow(found.position, result.email, (result.name, *found.extra[1:]))
        self.unmatched += 1
        blanks = ("",) * (len(self.extra_columns) - 1)
        return InputRow(self.count + self.unmatched, result.email, (result.name, *blanks))
