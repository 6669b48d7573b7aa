"""A call's time: the budget of the whole call and the bound of each attempt, as
aiohttp's ``ClientTimeout`` (``TimeLimits``).

* ``timeout`` is one budget for the whole call, retries and their pauses included.
* An attempt of a safe operation is bounded by ``attempt_timeout`` (default: a share of
  the budget) so that a stalled one is abandoned and retried within the budget; aiohttp
  bounds the wait for a connection a moment earlier than the whole attempt, so that a
  timeout there is told apart as "surely not sent".
* An attempt of an unsafe operation is never abandoned early (it may have arrived): the
  rest of the budget bounds it, and its wait for a connection ends a moment earlier, so
  that a call that never got one says "not sent" (a stream's too).
* A stream (a download) bounds the wait for a connection and each read, not its length,
  by what is left of the budget as its attempt begins (the whole of it, for a first
  attempt). aiohttp has no bound of a stream's head alone (each redirect hop gets its
  reads' bounds afresh): the transport ends the head, every hop included, and the body
  of an answer refused or retried, when that rest of the budget ends (a loop of slow
  redirects, a head or an error's body dripped a byte at a time).
* No bound is rounded up to a whole second (aiohttp's default from 5 s on: up to a second
  past the budget): every ``ClientTimeout`` here has ``ceil_threshold=inf``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Awaitable
from typing import TypeVar

import aiohttp
import attrs

from .. import _constants as C
from .._checks import check_seconds

if sys.version_info >= (3, 11):
    from asyncio import timeout as _timeout
else:  # the same, from the package aiohttp itself needs before 3.11
    from async_timeout import timeout as _timeout

__all__ = ["TimeLimits", "ran_out", "within"]

T = TypeVar("T")

#: The whole attempt ends this much after aiohttp's bound of the wait for a connection,
#: so that a timeout while connecting is aiohttp's (known as not sent): aiohttp starts
#: that bound a little after the attempt's own, after building the request.
CONNECT_MARGIN = 0.05


@attrs.frozen
class TimeLimits:
    """A client's time limits; ``attempt`` gives one attempt's ``ClientTimeout``.

    ``timeout`` is a call's whole budget, ``attempt_timeout`` one attempt's bound (None:
    ``DEFAULT_ATTEMPT_SHARE`` of the call's budget).
    """

    timeout: float
    attempt_timeout: float | None = None
    #: An attempt bound -> its ``ClientTimeout``: the same few bounds serve nearly
    #: every call, so each is built once.
    _bounds: dict[float, aiohttp.ClientTimeout] = attrs.field(factory=dict, init=False,
                                                               repr=False)
    #: ``for_call(None, None, safe)`` by ``safe``: the pair of nearly every call.
    _defaults: tuple[tuple[float, float | None], tuple[float, float | None]] = attrs.field(
        init=False, repr=False)

    @_defaults.default
    def _default_pairs(self) -> tuple[tuple[float, float | None], tuple[float, float | None]]:
        return (self.timeout, None), (self.timeout, self.per_attempt(self.timeout, None))

    def budget(self, request_timeout: float | None) -> float:
        """The call's time budget: its ``request_timeout`` (checked) or the client's."""
        if request_timeout is None:
            return self.timeout
        return float(check_seconds(request_timeout, "request_timeout"))

    def per_attempt(self, budget: float, attempt_timeout: float | None) -> float:
        """One attempt's bound: the call's ``attempt_timeout`` (checked), the client's,
        or ``DEFAULT_ATTEMPT_SHARE`` of the budget."""
        if attempt_timeout is not None:
            return float(check_seconds(attempt_timeout, "attempt_timeout"))
        if self.attempt_timeout is not None:
            return self.attempt_timeout
        return budget * C.DEFAULT_ATTEMPT_SHARE

    def for_call(self, request_timeout: float | None, attempt_timeout: float | None,
                 safe: bool) -> tuple[float, float | None]:
        """A call's ``(budget, per_attempt)``, both checked; an unsafe operation's
        attempt is never abandoned (it may have arrived): its bound is None."""
        if request_timeout is None and attempt_timeout is None:
            return self._defaults[safe]
        budget = self.budget(request_timeout)
        per_attempt = self.per_attempt(budget, attempt_timeout)
        return budget, per_attempt if safe else None

    def attempt(self, remaining: float, per_attempt: float | None) -> aiohttp.ClientTimeout:
        """The ``ClientTimeout`` of an attempt with ``remaining`` seconds of the budget
        left: bounded by ``per_attempt`` (a safe operation), never past the budget."""
        if per_attempt is None:  # the whole rest; a wait for a connection told apart
            return aiohttp.ClientTimeout(total=remaining, connect=_connect_bound(remaining),
                                         ceil_threshold=math.inf)
        total = min(per_attempt + CONNECT_MARGIN, remaining)
        cached = self._bounds.get(total)
        if cached is None:
            if len(self._bounds) >= 64:  # the rest of a budget varies: keep it small
                self._bounds.clear()
            # Exact timers (never rounded up to a whole second).
            cached = self._bounds[total] = aiohttp.ClientTimeout(
                total=total, connect=_connect_bound(total),
                ceil_threshold=math.inf)
        return cached

    @staticmethod
    def stream(remaining: float, budget: float) -> aiohttp.ClientTimeout:
        """The ``ClientTimeout`` of a stream: no total (a download may take long); the
        wait for a connection and every read bounded (a stall must not hang), by what
        is left of the budget: the head of an attempt made late in it (after a retry's
        wait) must not have the whole budget again."""
        return aiohttp.ClientTimeout(total=None, connect=_connect_bound(remaining),
                                     sock_read=min(budget, remaining),
                                     ceil_threshold=math.inf)


def _connect_bound(total: float) -> float:
    """aiohttp's bound of the wait for a connection in an attempt bounded by ``total``:
    a moment earlier, so that a call that never got a connection says "not sent"."""
    return max(total - CONNECT_MARGIN, total / 2)


def ran_out(budget: float, per_attempt: float | None, left: float, attempts: int) -> str:
    """Which bound a call's timeout was, in words: the call's budget, or (a safe call
    whose last attempt began with more of the budget left than its bound) the
    attempts' ``attempt_timeout``. ``left``: the budget left as the last attempt began;
    ``attempts``: how many were made."""
    if per_attempt is None or per_attempt + CONNECT_MARGIN >= left:
        return (f"the call's budget ran out: {budget:g} s (request_timeout, else the "
                f"client's timeout), {attempts} attempt(s)")
    return (f"each attempt's bound passed: {per_attempt:g} s (attempt_timeout), "
            f"{attempts} attempt(s)")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``await awaitable``, ended after ``seconds`` (``asyncio.TimeoutError``). In the
    awaiting task itself, not one of its own (as ``asyncio.wait_for`` before 3.12): a
    task more would let a stream's connection close before its first read (aiohttp then
    drops what had arrived)."""
    async with _timeout(seconds):
        return await awaitable
