"""The sandbox's rate limit from the command line: ``--rate --burst --retry-after |
--no-retry-after --max-in-flight`` made into an ``asyncsdk.testing.RateLimit`` (for
``asyncsdk sandbox`` and ``--sandbox``), and repeated in a printed follow-up command."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import UsageProblem

if TYPE_CHECKING:
    from ..testing import RateLimit

__all__ = ["exact", "limit_flags", "rate_limit_of"]

#: The flags that shape a limit, beside ``--rate``, by their ``args`` names.
SHAPING = {"burst": "--burst", "retry_after": "--retry-after",
           "no_retry_after": "--no-retry-after", "max_in_flight": "--max-in-flight"}


def _given(args: argparse.Namespace, name: str) -> bool:
    value = getattr(args, name, None)
    return value is not None and value is not False


def rate_limit_of(args: argparse.Namespace) -> RateLimit | None:
    """The limit the flags ask for (None without ``--rate``).

    Raises:
        UsageProblem: a shaping flag without ``--rate``, or ``--rate`` for a command
            that runs against no sandbox.
    """
    if not _given(args, "rate"):
        for name, flag in SHAPING.items():
            if _given(args, name):
                raise UsageProblem(f"{flag} needs --rate (the sandbox's limit per key)")
        return None
    if args.command != "sandbox" and not args.sandbox:
        raise UsageProblem("--rate limits the sandbox: add --sandbox before the command "
                           "(or serve one with 'asyncsdk sandbox --rate ...')")
    from ..testing import RateLimit

    burst = args.burst if _given(args, "burst") else max(1, round(args.rate / 10))
    retry_after = 1.0 if not _given(args, "retry_after") else args.retry_after
    if _given(args, "no_retry_after"):
        retry_after = None
    in_flight = args.max_in_flight if _given(args, "max_in_flight") else None
    return RateLimit(args.rate, burst, retry_after, in_flight)


def exact(value: float) -> str:
    """``value`` as short as it reads back the same (``500``, ``0.25``, ``1234567``):
    ``:g`` alone keeps six digits, and a follow-up command would get another limit."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def limit_flags(args: argparse.Namespace) -> list[str]:
    """The flags that give the same limit again (empty without one, or with flags the
    command will refuse: it says why when it runs)."""
    try:
        limit = rate_limit_of(args)
    except UsageProblem:
        return []
    if limit is None:
        return []
    flags = ["--rate", exact(limit.rate), "--burst", str(limit.burst)]
    if limit.retry_after is None:
        flags.append("--no-retry-after")
    else:
        flags += ["--retry-after", exact(limit.retry_after)]
    if limit.max_in_flight is not None:
        flags += ["--max-in-flight", str(limit.max_in_flight)]
    return flags
