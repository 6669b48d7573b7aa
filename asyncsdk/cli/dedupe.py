"""``check-many --dedupe``: each address is checked (and paid for) once, and every row
that repeats it gets its outcome.

Two rows hold the same address when their local parts are equal and their domains are
equal but for case (``ann@Example.COM`` repeats ``ann@example.com``; ``ANN@example.com``
does not: a local part may be case-sensitive at its server). A repeat of an address
whose check is in flight waits for its outcome; a repeat of one already answered (in
this run, or in the rows a ``--resume`` keeps) is written at once. A repeat is written
with the outcome and ``attempted`` False: it was not sent. Memory: one entry per distinct
address.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from .inputs import InputRow
from .outputs import Answer


def address_key(email: str) -> str:
    """What two spellings of one address share: the local part, the domain lower-cased."""
    local, at, domain = email.rpartition("@")
    return f"{local}@{domain.lower()}" if at else email


def copy_of(answer: Answer) -> Answer:
    """What a repeat is written with: its address's outcome, and ``attempted`` False (the
    README's promise: True exactly for the addresses sent)."""
    return attrs.evolve(answer, attempted=False)


class Dedupe:
    """The addresses seen so far: answered (their ``Answer``), or in flight (the rows
    that wait for their outcome)."""

    def __init__(self, done: Iterable[Mapping[str, str]] = ()) -> None:
        self.known = {address_key(r["email"]): Answer.of(r) for r in done}
        self.waiting: dict[str, list[InputRow]] = {}

    def repeat(self, row: InputRow) -> Answer | bool:
        """For a row about to be sent: its address's answer if known (write it: a copy,
        not sent), True if its address is in flight (the row now waits), False for a
        first (send it)."""
        key = address_key(row.email)
        known = self.known.get(key)
        if known is not None:
            return copy_of(known)
        waiting = self.waiting.get(key)
        if waiting is not None:
            waiting.append(row)
            return True
        self.waiting[key] = []
        return False

    def answered(self, row: InputRow, answer: Answer) -> list[InputRow]:
        """Record the answer of a sent row; the rows that waited for it (write them with
        ``copy_of(answer)``)."""
        key = address_key(row.email)
        self.known[key] = answer
        return self.waiting.pop(key, [])

    def known_answer(self, row: InputRow) -> Answer | None:
        """The answer of ``row``'s address if it has one, as a copy (a repeat never
        sent)."""
        answer = self.known.get(address_key(row.email))
        return None if answer is None else copy_of(answer)
