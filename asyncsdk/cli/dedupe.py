"""``check-many --dedupe``: each address is checked (and paid for) once, and every row
that repeats it gets its outcome.

Two rows hold the same address when their local parts are equal and their domains are
equal but for case (``ann@Example.COM`` repeats ``ann@example.com``; ``ANN@example.com``
does not: a local part may be case-sensitive at its server). A repeat of an address
whose check is in flight waits for its outcome; a repeat of one already answered (in
this run, or in the rows a ``--resume`` keeps) is written at once. Memory: one entry per
distinct address.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .inputs import InputRow
from .outputs import Answer


def address_key(email: str) -> str:
    """What two spellings of one address share: the local part, the domain lower-cased."""
    local, at, domain = email.rpartition("@")
    return f"{local}@{domain.lower()}" if at else email


class Dedupe:
    """The addresses seen so far: answered (their ``Answer``), or in flight (the rows
    that wait for their outcome)."""

    def __init__(self, done: Iterable[Mapping[str, str]] = ()) -> None:
        self.known = {address_key(r["email"]): Answer.of(r) for r in done}
        self.waiting: dict[str, list[InputRow]] = {}
        self.copies = 0  # rows written with the outcome of an earlier row

    def repeat(self, row: InputRow) -> Answer | bool:
        """For a row about to be sent: its address's answer if known (write it), True if
        its address is in flight (the row now waits), False for a first (send it)."""
        key = address_key(row.email)
        known = self.known.get(key)
        if known is not None:
            self.copies += 1
            return known
        waiting = self.waiting.get(key)
        if waiting is not None:
            self.copies += 1
            waiting.append(row)
            return True
        self.waiting[key] = []
        return False

    def answered(self, row: InputRow, answer: Answer) -> list[InputRow]:
        """Record the answer of a sent row; the rows that waited for it."""
        key = address_key(row.email)
        self.known[key] = answer
        return self.waiting.pop(key, [])

    def known_answer(self, row: InputRow) -> Answer | None:
        """The answer of ``row``'s address if it has one (a repeat never sent)."""
        answer = self.known.get(address_key(row.email))
        if answer is not None:
            self.copies += 1
        return answer
