"""``asyncsdk check EMAIL...``: check addresses now, one JSON line each on stdout, in the
order of the arguments (each printed as soon as those before it are)."""

from __future__ import annotations

import argparse
import asyncio
from collections import deque
from typing import Any

from .. import CheckOutcome, Client, ConfigurationError
from .common import EXIT_FAILED, EXIT_OK, Environment, print_json


class InOrder:
    """Hands back the outcomes of ``emails``, which come in completion order, in the
    order of ``emails`` (an address given twice takes its outcomes in turn)."""

    def __init__(self, emails: list[str]) -> None:
        self.positions: dict[str, deque[int]] = {}
        for position, email in enumerate(emails):
            self.positions.setdefault(email, deque()).append(position)
        self.waiting: dict[int, CheckOutcome] = {}
        self.next = 0

    def ready(self, outcome: CheckOutcome) -> list[CheckOutcome]:
        """Take ``outcome``; the outcomes now due, in argument order."""
        self.waiting[self.positions[outcome.email].popleft()] = outcome
        due = []
        while self.next in self.waiting:
            due.append(self.waiting.pop(self.next))
            self.next += 1
        return due

    def rest(self) -> list[CheckOutcome]:
        """The outcomes taken but not yet due (the run stopped before those before them
        came), in argument order."""
        return [self.waiting.pop(position) for position in sorted(self.waiting)]


def shown(outcome: CheckOutcome) -> Any:
    """The JSON line of an outcome: the result, or the address and the error."""
    if outcome.result is not None:
        return outcome.result
    return {"email": outcome.email, "error": str(outcome.error)}


async def cmd_check(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """One JSON line per address, in argument order; exit 1 if any check failed."""
    failed = 0
    order = InOrder(args.emails)
    try:
        async for outcome in client.validation.check_many(args.emails, concurrency=8):
            if isinstance(outcome.error, ConfigurationError):
                raise outcome.error  # nothing was sent: one line, exit 2
            for due in order.ready(outcome):
                failed += due.result is None
                print_json(shown(due), env.stdout)
    except asyncio.CancelledError:  # Ctrl-C: every answer that came is still printed
        for due in order.rest():
            print_json(shown(due), env.stdout)
        raise
    return EXIT_FAILED if failed else EXIT_OK
