"""A service's rate limit, per API key: a token bucket (``rate`` tokens a second, at most
``burst`` held; a key starts full), an optional cap on the requests of a key in flight,
and a limit that may change while requests come.

``RateLimits`` holds one bucket per key and decides, request by request, whether it is
answered or refused; it knows no HTTP (the sandbox's middleware and the pace benchmark's
server turn a refusal into a 429). Its clock is injected (``time.monotonic`` by default),
so it is tested on a fake one. A refused request takes no token: only answered ones do.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from asyncsdk import InvalidInputError

__all__ = ["LimitStats", "RateLimit", "RateLimits", "Refusal", "TokenBucket", "check_limit"]

Clock = Callable[[], float]

#: The largest burst or cap in flight taken: a bucket holds its tokens as a float.
MAX_COUNT = int(sys.float_info.max)

# Float sums of refills (0.1 s x 10/s, three times) may land a hair under a whole token.
_EPSILON = 1e-9


@dataclass(frozen=True)
class RateLimit:
    """The limit of one API key, as the service enforces it.

    Args:
        rate: tokens added a second (the sustained rate); 0 adds none (once its burst
            is spent, the key is answered nothing: a service that takes nothing).
        burst: the most tokens a key holds (and starts with), at least 1; each
            answered request takes one.
        retry_after: the ``Retry-After`` header of a 429 for an empty bucket, in
            seconds; None sends no header.
        max_in_flight: the most requests of the key being answered at once; one more
            gets a 429 without ``Retry-After`` (None: no cap).
    Raises:
        InvalidInputError: a field out of its range (the error names it).
    """

    rate: float
    burst: int
    retry_after: float | None = 1.0
    max_in_flight: int | None = None

    def __post_init__(self) -> None:
        _check_number("rate", self.rate, "a finite number >= 0")
        _check_count("burst", self.burst, 1)
        if self.retry_after is not None:
            _check_number("retry_after", self.retry_after, "None or a finite number >= 0")
        if self.max_in_flight is not None:
            _check_count("max_in_flight", self.max_in_flight, 1)


def _check_number(field: str, value: object, allowed: str) -> None:
    good = (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)
    if not good:
        raise InvalidInputError(f"{field}: expected {allowed}, got {value!r}", field=field)


def _check_count(field: str, value: object, minimum: int) -> None:
    if (not isinstance(value, int) or isinstance(value, bool) or value < minimum
            or value > MAX_COUNT):
        raise InvalidInputError(
            f"{field}: expected an integer >= {minimum}, got {value!r}",
            field=field)


def check_limit(limit: object, field: str) -> None:
    """``limit`` is a ``RateLimit`` or None, else the error names ``field``: a wrong value
    here would otherwise fail every request of the server, not the call that set it."""
    if limit is not None and not isinstance(limit, RateLimit):
        raise InvalidInputError(
            f"{field}: expected an asyncsdk.testing.RateLimit or None, got "
            f"{type(limit).__name__}", field=field)


class TokenBucket:
    """One key's bucket: ``limit.rate`` tokens a second, ``limit.burst`` at most; full
    when made. Times are readings of the owner's clock, in seconds."""

    def __init__(self, limit: RateLimit, now: float) -> None:
        self.limit = limit
        self.tokens = float(limit.burst)
        self.at = now

    def take(self, now: float) -> bool:
        """Take a token if there is one (True), else leave the bucket as it is."""
        self.refill(now)
        if self.tokens < 1 - _EPSILON:
            return False
        self.tokens = max(0.0, self.tokens - 1)
        return True

    def change(self, limit: RateLimit, now: float) -> None:
        """Apply ``limit`` from ``now``: tokens until now refill at the old rate; a
        smaller burst drops what is above it."""
        self.refill(now)
        self.limit = limit
        self.tokens = min(self.tokens, float(limit.burst))

    def refill(self, now: float) -> None:
        """Add the tokens earned since the last refill, up to the burst."""
        if now > self.at:  # a clock read earlier elsewhere may come late: never refill back
            self.tokens = min(float(self.limit.burst),
                              self.tokens + (now - self.at) * self.limit.rate)
            self.at = now


@dataclass(frozen=True)
class Refusal:
    """A request refused: ``reason`` ``"rate"`` (the bucket was empty) or ``"in_flight"``
    (the cap was reached); ``retry_after`` the header to send (None: none)."""

    reason: Literal["rate", "in_flight"]
    retry_after: float | None


@dataclass
class LimitStats:
    """What the limit did with a key's requests (``RateLimits.stats``).

    ``answered``: let through (each took a token); ``refused``: 429 for an empty bucket;
    ``refused_in_flight``: 429 for the cap; ``in_flight``/``max_in_flight``: answered
    requests not finished now / at most at once; ``first``: the clock's reading at the
    first request, ``last`` at the last one answered (None before). Against a constant
    limit, ``answered <= burst + rate * (last - first)`` always holds.
    """

    answered: int = 0
    refused: int = 0
    refused_in_flight: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    first: float | None = None
    last: float | None = None


class RateLimits:
    """The limits of a service, one bucket per API key (``sb.limits``).

    ``limit`` applies to every key without one of its own; None limits nothing (the
    requests are still counted). ``admit(key)`` before answering a request, and
    ``release(key)`` when an admitted one is answered.
    """

    def __init__(self, limit: RateLimit | None = None, *, clock: Clock = time.monotonic
                 ) -> None:
        check_limit(limit, "limit")
        self._clock = clock
        self._default = limit
        self._own: dict[str, RateLimit | None] = {}
        self._buckets: dict[str, TokenBucket] = {}
        self._stats: dict[str, LimitStats] = {}
        # The plugin's shared sandbox answers in a thread of its own while a test
        # changes or reads the limits from another: one at a time.
        self._lock = threading.RLock()

    @property
    def clock(self) -> Clock:
        """What the buckets are timed on (seconds; ``time.monotonic`` by default; see
        ``use_clock``)."""
        return self._clock

    def use_clock(self, clock: Clock) -> None:
        """Time the buckets on ``clock`` from now on, even while the server runs
        (``sb.limits.use_clock(virtual_clock.now)``): each keeps its tokens and refills
        from the new clock's now (a bucket timed on the old one would wait for the new
        one to reach its time).

        Raises:
            InvalidInputError: ``clock`` is not callable.
        """
        if not callable(clock):
            raise InvalidInputError("clock: expected a function giving seconds, such as "
                                    "time.monotonic", field="clock")
        with self._lock:
            now, self._clock = self._clock(), clock
            then = clock()
            for bucket in self._buckets.values():
                bucket.refill(now)
                bucket.at = then

    def __repr__(self) -> str:  # no key: keys are credentials
        return f"RateLimits({self._default!r}, {len(self._own)} keys with their own)"

    # -- the limits ---------------------------------------------------------------------
    def get(self, key: str | None = None) -> RateLimit | None:
        """The limit of ``key`` (its own, else every key's), or every key's (no key)."""
        with self._lock:
            if key is not None and key in self._own:
                return self._own[key]
            return self._default

    def set(self, limit: RateLimit | None, *, key: str | None = None) -> None:
        """Change the limit from now on: every key's (no ``key``; a key given its own
        keeps it), or ``key``'s own. A bucket keeps its tokens (refilled at the old rate
        until now; above a smaller burst dropped); None lifts the limit, and a limit set
        later starts full again.

        Raises:
            InvalidInputError: ``limit`` not a ``RateLimit`` nor None, or ``key`` not a
                non-empty string (a request without a key is never limited).
        """
        check_limit(limit, "limit")
        if key is not None and (not isinstance(key, str) or not key):
            raise InvalidInputError("key: expected an API key (a non-empty string) or None",
                                    field="key")
        with self._lock:
            if key is None:
                self._default = limit
            else:
                self._own[key] = limit
            now = self._clock()
            for name in [key] if key is not None else list(self._buckets):
                bucket = self._buckets.get(name)
                new = self.get(name)
                if bucket is None:
                    continue
                if new is None:
                    del self._buckets[name]
                else:
                    bucket.change(new, now)

    def reset(self) -> None:
        """Every bucket full again and every count zero; the limits stay."""
        with self._lock:
            self._buckets.clear()
            in_flight = {key: s.in_flight for key, s in self._stats.items() if s.in_flight}
            self._stats = {key: LimitStats(in_flight=n, max_in_flight=n)
                           for key, n in in_flight.items()}

    # -- the requests -------------------------------------------------------------------
    def admit(self, key: str) -> Refusal | None:
        """Decide on a request of ``key``: None to answer it (it took a token; call
        ``release(key)`` once answered), or why it is refused (nothing taken)."""
        with self._lock:
            now = self._clock()
            stats = self._stats.setdefault(key, LimitStats())
            if stats.first is None:
                stats.first = now
            limit = self.get(key)
            if limit is not None:
                refusal = self._refusal(key, limit, stats, now)
                if refusal is not None:
                    return refusal
            stats.answered += 1
            stats.last = now
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            return None

    def release(self, key: str) -> None:
        """An admitted request of ``key`` is answered (or given up)."""
        with self._lock:
            stats = self._stats.get(key)
            if stats is not None and stats.in_flight > 0:
                stats.in_flight -= 1

    def _refusal(self, key: str, limit: RateLimit, stats: LimitStats, now: float
                 ) -> Refusal | None:
        if limit.max_in_flight is not None and stats.in_flight >= limit.max_in_flight:
            stats.refused_in_flight += 1
            return Refusal("in_flight", None)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(limit, now)
        if bucket.take(now):
            return None
        stats.refused += 1
        return Refusal("rate", limit.retry_after)

    # -- observation --------------------------------------------------------------------
    def stats(self, key: str | None = None) -> LimitStats:
        """A copy of ``key``'s counts, or (no key) every key's together: the counts
        summed, ``max_in_flight`` the highest of one key, ``first`` the earliest and
        ``last`` the latest."""
        with self._lock:
            if key is not None:
                found = self._stats.get(key)
                return LimitStats() if found is None else LimitStats(**vars(found))
            total = LimitStats()
            for one in self._stats.values():
                total.answered += one.answered
                total.refused += one.refused
                total.refused_in_flight += one.refused_in_flight
                total.in_flight += one.in_flight
                total.max_in_flight = max(total.max_in_flight, one.max_in_flight)
                total.first = _earliest(total.first, one.first)
                total.last = _latest(total.last, one.last)
            return total

    def tokens(self, key: str) -> float | None:
        """The tokens ``key`` holds now (None: no limit applies to it); a key not seen
        yet holds its burst."""
        with self._lock:
            limit = self.get(key)
            if limit is None:
                return None
            bucket = self._buckets.get(key)
            if bucket is None:
                return float(limit.burst)
            bucket.refill(self._clock())
            return bucket.tokens


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)
