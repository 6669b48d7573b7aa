"""The retry policy, as small predicates (whether an answer or a failure is retried) and
timing (how long to wait: the server's ``Retry-After``, else jittered backoff).

DESIGN §3: connection errors, timeouts, 408, 429 and 5xx are retried for operations safe
to repeat; an unsafe one (a create, ``mail.send``, ``jobs/create``) only where the request
surely never left (connect refused, DNS, the wait for a connection) or the answer was
429. ``max_retries`` is exact. A connection that dropped before any answer (a stale
keep-alive connection) is retried at once, without a pause, once per call; it still
counts as an attempt.

``parse_retry_after`` reads the header as RFC 9110 defines it (``delay-seconds`` or an
HTTP date) and answers None wherever the normal backoff should be used instead. The
decisions, checked against urllib3's and openai-python's test tables
(``tests/test_retry_after_corpus.py``):

* ``0``, a date now or in the past, and anything unreadable give None: "retry now"
  repeated by a struggling server must not turn the client into a tight loop (as
  openai-python does; urllib3 sleeps 0).
* Seconds are ASCII digits, optionally with a decimal fraction (``1.5``): a fraction is
  unambiguous and some gateways send one. A sign (``+1``, ``-1``), an exponent, ``inf``,
  ``nan``, non-ASCII digits (``²``) and underscores are refused as urllib3 refuses them
  (urllib3 refuses ``1.0`` too: the one deliberate difference). Surrounding white space
  is allowed.
* A date without a zone (asctime, ``Mon Jun  3 11:30:12 2019``) or with ``-0000`` is
  UTC, never the machine's local time: HTTP dates are GMT.
* A wait longer than ``MAX_RETRY_AFTER`` is capped to it (openai-python ignores a value
  over 120 s and backs off instead, urllib3 sleeps it whole); the retry is then taken
  only if it can finish within the call's ``timeout``.
* A date is counted from the answer's own ``Date`` (``asked_wait``): both are the
  server's clock, so a client whose clock is off from the server's waits what was
  asked, and no clock of the client's is read (a ``VirtualClock`` client gets the same
  wait). Only an answer without a readable ``Date`` is counted from this machine's time.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import random
import re
import time
from collections.abc import Callable, Mapping

from .. import _constants as C
from .failures import Failure

__all__ = ["asked_wait", "backoff_delay", "parse_retry_after", "retries_answer",
           "retries_at_once", "retries_failure"]

_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)


def asked_wait(headers: Mapping[str, str]) -> float | None:
    """The wait an answer's ``Retry-After`` asks for (``parse_retry_after``), a date
    counted from the answer's ``Date``."""
    return parse_retry_after(headers.get("Retry-After"), date=headers.get("Date"))


def parse_retry_after(
    value: str | None, *, now: float | None = None, date: str | None = None,
    cap: float = C.MAX_RETRY_AFTER,
) -> float | None:
    """Seconds to wait from a ``Retry-After`` header, at most ``cap``; None (use the
    normal backoff) when absent, unreadable, zero, or a date not in the future.

    Args:
        value: the header's value (seconds or an HTTP date).
        now: the current time as a Unix timestamp (default: ``time.time()``), for a date
            when ``date`` is not given or unreadable.
        date: the answer's ``Date`` header, what a date is counted from (the server's
            clock, whatever this machine's says).
        cap: the longest wait returned.
    """
    if not value:
        return None
    value = value.strip(" \t")
    if _SECONDS.fullmatch(value):
        seconds = float(value)
    else:
        when = _http_date(value)
        if when is None:
            return None
        sent = _http_date(date) if date else None
        seconds = when - (sent if sent is not None else time.time() if now is None else now)
    if math.isnan(seconds) or seconds <= 0:
        return None
    # A number of digits too long for a float (inf) still says "wait long": the cap.
    return float(min(seconds, cap))


def _http_date(value: str) -> float | None:
    """An HTTP date as a Unix timestamp (None: unreadable); without a zone, or with
    ``-0000``, it is GMT, never the machine's local time."""
    try:
        when = email.utils.parsedate_to_datetime(value.strip(" \t"))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:  # pragma: no cover - older Pythons return None
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.timestamp()


def backoff_delay(retry: int, rand: Callable[[], float] = random.random) -> float:
    """Full-jitter exponential backoff for the ``retry``-th retry (0-based):
    ``rand() * min(MAX_RETRY_DELAY, INITIAL_RETRY_DELAY * 2**retry)``."""
    return rand() * min(C.MAX_RETRY_DELAY, C.INITIAL_RETRY_DELAY * 2.0 ** min(retry, 64))


def retries_answer(status: int, safe: bool) -> bool:
    """True when an answer with ``status`` is worth another attempt (retries left)."""
    return status in C.RETRYABLE_STATUSES and (safe or status == 429)


def retries_failure(failure: Failure, safe: bool) -> bool:
    """True when an attempt that failed this way is worth another (retries left)."""
    return not failure.fatal and (safe or failure.retry_unsafe)


def retries_at_once(failure: Failure, dropped_before: bool) -> bool:
    """True for the first connection of a call that dropped before any answer: a stale
    keep-alive connection, retried without a pause."""
    return failure.dropped and not dropped_before
