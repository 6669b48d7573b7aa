"""``asyncsdk check EMAIL...``: check addresses now, one JSON line each on stdout."""

from __future__ import annotations

import argparse

from .. import Client, ConfigurationError
from .common import EXIT_FAILED, EXIT_OK, Environment, print_json


async def cmd_check(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """One JSON line per address; exit 1 if any check failed."""
    failed = 0
    async for outcome in client.validation.check_many(args.emails, concurrency=8):
        if isinstance(outcome.error, ConfigurationError):
            raise outcome.error  # nothing was sent: one line, exit 2
        if outcome.result is not None:
            print_json(outcome.result, env.stdout)
        else:
            failed += 1
            print_json({"email": outcome.email, "error": str(outcome.error)}, env.stdout)
    return EXIT_FAILED if failed else EXIT_OK
