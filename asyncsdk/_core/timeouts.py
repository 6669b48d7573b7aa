"""A call's time: its limits (``TimeLimits``: the budget of the call, the bound of each
attempt) and the deadlines of the attempts in flight (``AttemptDeadlines``).

Why a deadline table and not aiohttp's ``ClientTimeout(total=...)`` per request: that
costs each request a timer of its own (a ``TimerHandle`` pushed on the loop's heap and
cancelled, a timer context entered around every read): about a tenth of the client CPU
of a small answer such as a ``check``. Here one timer serves every attempt in flight:
it is set for the nearest deadline, and when it fires it cancels the attempts past
theirs (the task's cancellation, as aiohttp's own timeout does), which the transport
turns into a timed-out attempt (``expired``). aiohttp still bounds the wait for a
connection itself (``connect_bound``), so that a timeout there says "surely not sent".
"""

from __future__ import annotations

import asyncio
import math
import sys
from typing import Any

import aiohttp
import attrs

from .. import _constants as C
from .._checks import check_seconds

__all__ = ["AttemptDeadlines", "TimeLimits"]

#: The deadline fires this much after aiohttp's bound of the connect (same length, set a
#: moment later): a timeout while connecting is aiohttp's, and so known as not sent.
_AFTER_CONNECT_BOUND = 0.001


@attrs.frozen
class TimeLimits:
    """A client's time limits and the ``ClientTimeout`` of each attempt.

    ``timeout`` is a call's whole budget, ``attempt_timeout`` one attempt's bound (None:
    ``DEFAULT_ATTEMPT_SHARE`` of the call's budget). Each attempt bound in use gets one
    ``connect_bound``, built once, not one per attempt.
    """

    timeout: float
    attempt_timeout: float | None = None
    #: An attempt's bound -> its ``ClientTimeout`` of the connect only (``connect_bound``).
    connect_bounds: dict[float, aiohttp.ClientTimeout] = attrs.field(factory=dict, init=False)
    #: ``for_call(None, None, safe)`` by ``safe``: the pair of nearly every call, found once.
    defaults: tuple[tuple[float, float | None], tuple[float, float | None]] = attrs.field(
        init=False)

    @defaults.default
    def _defaults(self) -> tuple[tuple[float, float | None], tuple[float, float | None]]:
        per_attempt = self.per_attempt(self.timeout, None)
        return (self.timeout, None), (self.timeout, per_attempt)

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
        budget = self.budget(request_timeout)
        per_attempt = self.per_attempt(budget, attempt_timeout)
        return budget, per_attempt if safe else None

    def connect_bound(self, seconds: float) -> aiohttp.ClientTimeout:
        """The ``ClientTimeout`` of an attempt bounded by ``AttemptDeadlines``: aiohttp
        bounds only the wait for a connection (pool and connect, exactly: never rounded
        up), so that a timeout there is told apart as "surely not sent"; the rest of
        the attempt is bounded by the deadline. Built once per bound in use."""
        cached = self.connect_bounds.get(seconds)
        if cached is None:
            if len(self.connect_bounds) >= 64:  # per-call values: keep it small
                self.connect_bounds.clear()
            cached = self.connect_bounds[seconds] = aiohttp.ClientTimeout(
                connect=seconds, ceil_threshold=math.inf)
        return cached

    def client_timeout(self, remaining: float, per_attempt: float | None,
                        budget: float, streaming: bool) -> aiohttp.ClientTimeout:
        """An attempt's ``ClientTimeout``, ``remaining`` seconds of ``budget`` left."""
        if streaming:
            # No total (a download may take long); the pool wait, the connect and every
            # read are bounded (a stalled read must not hang, nor a full pool).
            return aiohttp.ClientTimeout(total=None, connect=remaining, sock_read=budget)
        # An attempt without a deadline (an unsafe operation: the rest of the budget):
        # ``total`` bounds the whole exchange, body included, so a stalled read cannot
        # hang; a ``sock_read`` could never fire first and costs a timer per chunk.
        if per_attempt is not None and per_attempt < remaining:
            return aiohttp.ClientTimeout(total=per_attempt)
        return aiohttp.ClientTimeout(total=remaining)


class AttemptDeadlines:
    """The deadline of each attempt in flight, by task, enforced by one timer.

    ``start`` before an attempt's first await, ``stop`` once its answer is read (or it
    failed); a task past its deadline is cancelled, and ``expired`` says so when the
    cancellation arrives. Bound to the loop of the first ``start`` (a client's loop).

    Cancellations are counted as ``asyncio.timeout`` counts them: against the task's
    count when the attempt began (a task may call while already cancelling: a clean-up
    after a cancel, or a cancel it swallowed). A deadline that finds another
    cancellation on its way (the caller's, ``close()``'s, aiohttp's bound of the
    connect) lets that one land first and comes back one margin later if it did not.
    """

    __slots__ = ("_base", "_due", "_expired", "_loop", "_timer", "_timer_at")

    def __init__(self) -> None:
        self._due: dict[asyncio.Task[Any], float] = {}
        #: A task's cancellation count when its attempt began, where it was not 0.
        self._base: dict[asyncio.Task[Any], int] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def start(self, task: asyncio.Task[Any], seconds: float) -> None:
        """``task``'s attempt must end within ``seconds`` from now."""
        loop = self._loop
        if loop is None:
            loop = self._loop = task.get_loop()
        due = loop.time() + seconds + _AFTER_CONNECT_BOUND
        self._due[task] = due
        if sys.version_info >= (3, 11) and task.cancelling():
            self._base[task] = task.cancelling()
        elif self._base:
            self._base.pop(task, None)
        if due < self._timer_at:
            self._set_timer(loop, due)

    def stop(self, task: asyncio.Task[Any]) -> None:
        """``task``'s attempt has ended (idempotent)."""
        self._due.pop(task, None)

    def expired(self, task: asyncio.Task[Any] | None) -> bool:
        """True when ``task``'s cancellation came from its attempt's deadline (and only
        from it: a cancellation of someone else's at the same time is kept)."""
        if task is None or task not in self._expired:
            return False
        self._expired.discard(task)
        if sys.version_info >= (3, 11):
            return task.uncancel() <= self._base.get(task, 0)
        return True  # pragma: no cover - 3.10 cannot tell two cancels apart

    def forget(self, task: asyncio.Task[Any]) -> None:
        """The call of ``task`` is over: drop whatever is left of it. A deadline's
        cancellation that never reached the transport (swallowed below it) is withdrawn
        from the task's count, where a caller's ``asyncio.timeout`` would misread it."""
        self._due.pop(task, None)
        if task in self._expired:
            self._expired.discard(task)
            if sys.version_info >= (3, 11):
                task.uncancel()
        if self._base:
            self._base.pop(task, None)

    def _set_timer(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        loop = self._loop
        assert loop is not None
        now = loop.time()
        nearest = math.inf
        for task, due in list(self._due.items()):
            if due > now:
                nearest = min(nearest, due)
            elif task.done():
                del self._due[task]
            elif sys.version_info >= (3, 11) and task.cancelling() > self._base.get(task, 0):
                # Another cancellation is on its way: it lands first; if it is
                # swallowed, this deadline comes back one margin later.
                self._base[task] = task.cancelling()
                due = self._due[task] = now + _AFTER_CONNECT_BOUND
                nearest = min(nearest, due)
            else:
                del self._due[task]
                self._expired.add(task)
                task.cancel()
        if nearest < math.inf:
            self._set_timer(loop, nearest)
