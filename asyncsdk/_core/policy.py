"""When a call's attempts may leave, and what they tell: the send policy a call carries
(``CallOptions.policy``), asked by the retry loop around every attempt, the same way for
every call.

* ``admit(deadline)``: "may I send, and when": waits until the attempt may leave; None
  when it could not leave before ``deadline`` (then nothing was reserved).
* ``report(admission, status, retry_after)``: "what came back": the answer's status
  (None: no answer), for a 429 the wait the service asked for.
* ``resends_free(status)``: an answer with ``status`` is sent again without spending
  ``max_retries`` (until the call's budget ends it).
* ``held_until``: when a hold the policy imposes ends (the engine's clock; past: none),
  for the error of a call that was never let out.

Two policies live here (DESIGN §3): ``SINGLE``, the policy of a single call (admitted at
once, deaf, nothing free), and ``PacedPolicy``, a bulk call's (``check_many``): an
area's ``Pace`` (``_core.pace``) lets each attempt out and hears every answer, and a
429 is "not processed, come back later", sent again for free. A caller outside the
engine may bring its own (``check_many(pace=...)``; public as ``asyncsdk.pacing.
SendPolicy``; the fleet's ``SharedPace``, its state in Redis): the protocol is the seam.

Time: ``admit``'s ``deadline`` and ``held_until`` are on the engine's clock (the
``Client``'s ``clock``: ``time.monotonic`` unless ``Client(clock=...)``), the clock the
call's budget is counted on. A policy that keeps another time (the fleet's: Redis's
``TIME``) converts with the client's clock, given to it when it is made (``SharedPace``'s
``engine_clock``): the seam stays one number, and the engine's own policies pay nothing
for it. A caller's policy waits in its own sleeps: ``Client.close()`` does not end them
(only ``PacedPolicy``'s, parked in the engine); the attempt after the wait fails then.

The paces of a client live in its ``PaceTable``, shared with its ``with_options``
copies: one ``Pace`` per (API key, area), so a copy with the same key waits in its
parent's pace, and a copy with another key never does.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeAlias, runtime_checkable

from .clock import Clock
from .pace import Pace, Park, Ticket

__all__ = ["SINGLE", "Admission", "PaceTable", "PacedPolicy", "Park", "SendPolicy",
           "SinglePolicy", "key_fingerprint"]

#: What ``admit`` gave: the policy's own token, handed back to its ``report``.
Admission: TypeAlias = object


@runtime_checkable
class SendPolicy(Protocol):
    """When a call's attempts may leave and what they told (see the module docstring;
    ``isinstance`` checks that the four members are there)."""

    @property
    def held_until(self) -> float:
        """When the policy's hold ends, on the engine's clock (past: no hold)."""
        ...

    async def admit(self, deadline: float) -> Admission | None:
        """Wait until an attempt may be sent; None: not before ``deadline``."""
        ...

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        """What came of the attempt ``admission`` let out."""
        ...

    def resends_free(self, status: int) -> bool:
        """True when an answer with ``status`` is sent again without spending a retry."""
        ...


class SinglePolicy:
    """A single call's policy: every attempt leaves at once, nothing is heard, every
    retry is spent (DESIGN §3's rules)."""

    __slots__ = ()

    held_until = 0.0

    async def admit(self, deadline: float) -> Admission | None:
        """At once."""
        return self

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        """Nothing to hear."""

    def resends_free(self, status: int) -> bool:
        """Never: a single call's 429 spends a retry."""
        return False

    def __repr__(self) -> str:
        return "SINGLE"


#: The policy of every call not given another.
SINGLE = SinglePolicy()

async def _no_park(waiter: asyncio.Future[None] | None, seconds: float) -> None:
    """A ``PaceTable``'s pace is shared by a client and its copies, each with its own
    close: it waits only in the park of the engine that asks (``PacedPolicy.admit``
    gives it to ``Pace.ready``), never in one of its own."""
    raise RuntimeError("a PaceTable's pace waits in the park its caller gives")


class PacedPolicy:
    """A bulk call's policy: each attempt waits for the area's ``pace`` (``adaptive``:
    its rate and window too; else only its holds, for a caller that paces on its own)
    in ``park`` (the engine's waits, which ``close()`` ends); every answer is told to
    it; a 429 is sent again without spending a retry."""

    __slots__ = ("_adaptive", "_done", "_pace", "_park")

    _done: Callable[[Any, int | None, float | None], None]

    def __init__(self, pace: Pace, park: Park, *, adaptive: bool = True) -> None:
        self._pace = pace
        self._park = park
        self._adaptive = adaptive
        # What ``report`` calls, bound once: an admission is one of ``pace``'s tickets
        # (no ``cast`` call per attempt to say so).
        self._done = pace.done

    @property
    def held_until(self) -> float:
        """When the pace's hold (a 429 while the service took nothing) ends."""
        return self._pace.held_until

    @property
    def in_flight(self) -> int:
        """Attempts the pace let out and has not yet heard of."""
        return self._pace.in_flight

    def admit(self, deadline: float) -> Coroutine[Any, Any, Ticket | None]:
        """The pace's ticket, once it lets the attempt out (None: not before
        ``deadline``); its waits in this engine's park. The pace's own coroutine, handed
        out (not awaited in one of this method's: a frame less per attempt)."""
        return self._pace.ready(self._adaptive, deadline, self._park)

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        """Tell the pace what came of the attempt (``admission``: a ``Ticket`` of it)."""
        self._done(admission, status, retry_after)

    def resends_free(self, status: int) -> bool:
        """A 429: "not processed, come back later"."""
        return status == 429


def key_fingerprint(api_key: str | None) -> bytes:
    """What tells API keys apart in a ``PaceTable``, without being one (a digest)."""
    return hashlib.blake2b((api_key or "").encode("utf-8", "surrogatepass"),
                           digest_size=16, person=b"asyncsdk.pace").digest()


class PaceTable:
    """The paces of a client and its copies, one per (key fingerprint, area), each made
    at its first use on ``clock``."""

    __slots__ = ("_clock", "_paces")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._paces: dict[tuple[bytes, str], Pace] = {}

    def pace(self, key: bytes, area: str) -> Pace:
        """The pace of ``area`` for the key whose fingerprint is ``key``."""
        pace = self._paces.get((key, area))
        if pace is None:
            clock = self._clock
            pace = self._paces[key, area] = Pace(clock.now, _no_park, clock.random)
        return pace

    def find(self, key: bytes, area: str) -> Pace | None:
        """The pace of ``area`` for ``key`` if one was made (None: no bulk call has used
        it yet); makes none (a look at a pace is no use of it)."""
        return self._paces.get((key, area))

    def __repr__(self) -> str:  # never a fingerprint: the number of paces only
        return f"<PaceTable paces={len(self._paces)}>"
