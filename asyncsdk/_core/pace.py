"""The pace of one client's bulk work in one area: when its next attempt may be sent.

DESIGN §3: in bulk (``check_many``, the fleet) a 429 is "not processed, come back
later". The transport re-sends such an attempt after the wait the service asked for,
without spending ``max_retries``, until the call's budget ends it; and every attempt of
a bulk call first awaits its area's ``Pace`` (``ready``), which holds it back while the
service cannot take it:

* **the pacer**: paced attempts leave at the rate the service takes (``RateFinder``),
  each spaced from the last by one interval, jittered (half to one and a half of it): a
  429 re-spaces every waiting worker from that moment, so they are released one by
  one, never in a wave. A moment is reserved only by an attempt that can be sent at it
  within its budget, and one that leaves before it (cancelled) gives it back, so the
  schedule never runs ahead of the attempts that will be sent (issue 38: checks that
  gave up during a hold pushed it out by an interval each, and nothing sent reset it).
  An answer that speeds the rate up (twice or more: the service takes again after a
  blackout, a round trip far shorter than a first one that took minutes) re-spaces
  the schedule from now and ends the long waits for moments laid at the old rate (a
  machine suspended during the first checks left its rate at 0.01/s: the next sends
  reserved moments 100 s apart, and kept them once the rate was back);
* **the window**: at most ``RateFinder.window`` paced attempts in flight (a ``Window``
  resized to it: the rest wait in line, in the engine's park, until one ends);
* **the hold**: a 429 while the service takes nothing at all (nothing sent recently was
  answered) holds every bulk attempt of the area for the wait the service asked for;
  after it they leave paced, or (unpaced calls) spread over a share of that wait (a
  second at most).

Every paced attempt's answer (``done``) feeds the ``RateFinder``. An unpaced bulk call
(``check_many(adaptive=False)``: a caller that paces on its own, as the fleet does
through Redis) honours only the hold. Nothing here knows an area or an operation; the
transport holds one ``Pace`` per area. Time is the transport's (``clock``, ``sleep``,
``rand``), so tests never wait.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from bisect import insort
from collections.abc import Awaitable, Callable
from typing import Any

from .backlog import Backlog
from .pace_state import PaceState
from .rate import RateFinder
from .window import Window

__all__ = ["Pace", "Park", "Ticket"]

#: An answer that raises the finder's rate this many times (or more) re-spaces the
#: schedule from now: a moment laid at the old rate would be a wait the service no
#: longer asks for (a probe's step is at most 1.5 times).
SPED_UP = 2.0
#: Paced waits this long or longer end early when the rate speeds up (shorter ones, an
#: interval at a working rate, are plain sleeps: no task per send).
INTERRUPTIBLE_SECONDS = 0.25

#: Where a wait of the pace waits: until ``waiter`` is done (None: the time alone) or
#: ``seconds`` have passed; the engine's ends early when its client closes.
Park = Callable[["asyncio.Future[None] | None", float], Awaitable[Any]]

class Ticket:
    """One attempt let through by the pace, for ``done``: its send's number and time, and
    whether it holds a place in the window."""

    __slots__ = ("at", "paced", "send")

    def __init__(self, send: int, at: float, paced: bool) -> None:
        self.send = send
        self.at = at
        self.paced = paced


class Pace:
    """See the module docstring. ``park(waiter, seconds)`` waits for ``waiter`` or the
    time, whichever comes first (the session owner's, which ``close()`` wakes)."""

    __slots__ = ("_backlogs", "_clock", "_held_until", "_next", "_park", "_rand",
                 "_respaced", "_returned", "_size", "_sped_up", "_wait_asked",
                 "_wait_held", "_window", "finder")

    def __init__(self, clock: Callable[[], float], park: Park,
                 rand: Callable[[], float]) -> None:
        self._clock = clock
        self._park = park
        self._rand = rand
        self.finder = RateFinder()
        self._next = 0.0  # the pacer's next free moment
        self._held_until = 0.0
        # Re-spacings of the schedule so far (each 429, and a rate that sped up): a paced
        # wait that saw one takes a moment again.
        self._respaced = 0
        # Woken when the rate speeds up: long paced waits end early (``_wait_for``).
        self._sped_up: asyncio.Future[None] | None = None
        # Paced attempts in flight, at most the finder's window; a wait for a place is
        # the engine's park (``close()`` ends it).
        self._size = self.finder.window  # the window's, as last resized
        self._window = Window(self._size, park, clock)
        # Moments given back by waiters that left, (at, end), in order: the next paced
        # sends take them before new ones (since the last 429, which voids them).
        self._returned: list[tuple[float, float]] = []
        # The runs this pace serves, each counting down its inputs (``expect``); a run
        # that is gone is forgotten with it.
        self._backlogs: weakref.WeakSet[Backlog] = weakref.WeakSet()
        # The wait the last 429 asked while the service took checks (0.0: none): what a
        # probe's 429 would cost (``ending``); and the wait of the last hold's 429.
        self._wait_asked = 0.0
        self._wait_held = 0.0

    @property
    def held_until(self) -> float:
        """When the hold of a 429 from a service that took nothing ends (the clock's
        time; past: no hold)."""
        return self._held_until

    @property
    def next_free(self) -> float:
        """The pacer's next free moment (the clock's time; past: a paced send may leave
        now, the hold permitting)."""
        return self._next

    @property
    def in_flight(self) -> int:
        """Paced attempts let through and not yet done."""
        return self._window.in_use

    @property
    def inputs_left(self) -> int | None:
        """The inputs the bulk runs this pace serves have not yet sent (``expect``); None
        while a run's count is unknown, or no run said any."""
        if not self._backlogs:
            return None
        left = 0
        for backlog in self._backlogs:
            if backlog.left is None:
                return None
            left += backlog.left
        return left

    def ending(self, rate: float) -> bool:
        """Whether the inputs left take less than the end's quiet at ``rate``:
        ``no_probe_before_end_seconds``, or the wait the service last asked if longer
        (False while their count is unknown). What the finder asks when a probe is due.

        The wait asked is what a probe's 429 would cost: that of the last 429 while
        the service took checks (none said: none), until another such 429 says
        otherwise; that of a 429 while it took nothing (the hold's: how long an outage
        lasts) only until the hold ends."""
        left = self.inputs_left
        if left is None:
            return False
        quiet = max(self.finder.constants.no_probe_before_end_seconds, self._wait_asked)
        if self._wait_held > quiet and self._clock() < self._held_until:
            quiet = self._wait_held
        return left < rate * quiet

    def expect(self, backlog: Backlog) -> None:
        """A bulk run starts, ``backlog`` its inputs not yet sent: once those of every
        run take less than ``no_probe_before_end_seconds`` at the rate (or the wait the
        service last asked), no probe climbs above what the service was found to take
        (``RateFinder.held_back``)."""
        self._backlogs.add(backlog)

    async def ready(self, paced: bool, deadline: float,
                    park: Park | None = None) -> Ticket | None:
        """Wait until an attempt may be sent; None when it could not be before
        ``deadline`` (then nothing was reserved). ``park``: where a wait waits (default:
        the pace's own; a pace shared by several engines is given the asking one's)."""
        if park is None:
            park = self._park
        if paced:
            window = self._window
            if self.finder.window != self._size:
                window = self._resized()
            if not window.try_acquire() and not await window.acquire(deadline, park):
                return None
            # The usual case, a moment free now, without a coroutine per wait: the same
            # decisions as ``_paced_wait``'s first turn (no wait, so no 429 meanwhile).
            respaced = self._respaced
            now = self._clock()
            moment = self._paced_moment(now, deadline)
            if moment is None:
                self._leave()
                return None
            if moment[0] > now and not await self._left_after_wait(
                    moment, respaced, deadline, park):
                return None
            return self._ticket(True)
        at = self._held_moment()
        if at >= deadline:
            return None
        await self._wait_until(at, park)
        return self._ticket(False)

    def done(self, ticket: Ticket, status: int | None, wait: float | None) -> None:
        """What came of ``ticket``'s attempt: an answer's ``status`` (None: no answer);
        for a 429, ``wait`` is what the service asked for (None: it said nothing)."""
        send = ticket.send
        now = self._clock()
        finder = self.finder
        rate = finder.rate
        try:
            if status is None:
                finder.failed(send)
            elif status != 429:
                finder.answered(send, ticket.at, now)
                if finder.rate > SPED_UP * rate:
                    self._speed_up(now)
            else:
                finder.refused(send, ticket.at, now)
                self._limited(now, wait)
        finally:  # the place is given back whatever the finder made of the answer
            # The finder may have resized the window: room for parked ones.
            window = self._window if finder.window == self._size else self._resized()
            if ticket.paced:
                window.release()

    def snapshot(self) -> PaceState:
        """What the pace is doing now, as its user may see it (``PaceState``; read only:
        nothing is reserved, changed or made). The next send's wait is the one a paced
        attempt asking now would be given: a moment given back if one is left, else the
        pacer's next free one, never before a hold ends (``_paced_moment``)."""
        now = self._clock()
        finder = self.finder
        at = next((a for a, _ in self._returned if a >= now), None)
        if at is None:
            at = max(now, self._next, self._held_until)
        return PaceState(
            phase=finder.phase, rate=finder.rate if math.isfinite(finder.rate) else None,
            service_rate=finder.estimate or None, max_in_flight=math.ceil(finder.window),
            in_flight=self._window.in_use, hold_seconds=max(0.0, self._held_until - now),
            next_send_seconds=at - now, inputs_left=self.inputs_left)

    def _ticket(self, paced: bool) -> Ticket:
        now = self._clock()
        return Ticket(self.finder.sent(now), now, paced)

    # --- the window ------------------------------------------------------------------
    def _resized(self) -> Window:
        """The window, at the finder's size now."""
        size = self.finder.window
        if size != self._size:
            self._size = size
            self._window.resize(size)
        return self._window

    def _leave(self) -> None:
        """A paced attempt ended (or gave up its place)."""
        self._resized().release()

    # --- the moments -----------------------------------------------------------------
    async def _left_after_wait(self, moment: tuple[float, float], respaced: int,
                               deadline: float, park: Park) -> bool:
        """A paced attempt holding a window place and ``moment`` (reserved when the
        schedule had been re-spaced ``respaced`` times) waits for it; False: it gave its place up
        (not before ``deadline``)."""
        try:
            if await self._paced_wait(moment, respaced, deadline, park):
                return True
        except BaseException:
            self._leave()
            raise
        self._leave()
        return False

    async def _paced_wait(self, moment: tuple[float, float], respaced: int,
                          deadline: float, park: Park) -> bool:
        """Wait for the paced ``moment``; a re-spacing meanwhile (a 429, a rate that sped
        up) re-spaces the wait from then (the moment is reserved again, at the new
        rate). False: not before ``deadline``."""
        while True:
            try:
                await self._wait_for(moment[0], park)
            except BaseException:
                self._give_back(moment, respaced)
                raise
            if respaced == self._respaced:
                return True
            respaced = self._respaced
            again = self._paced_moment(self._clock(), deadline)
            if again is None:
                return False
            moment = again

    def _paced_moment(self, now: float, deadline: float) -> tuple[float, float] | None:
        """The moment reserved for the next paced send and the end of its interval: one
        given back if any is left, else one jittered interval after the last one
        reserved; never before a hold ends. None (nothing reserved): not before
        ``deadline``."""
        returned = self._returned
        while returned and returned[0][0] < now:
            del returned[0]  # passed: the schedule is behind it already
        if returned:
            moment = returned[0]
            if moment[0] >= deadline:
                return None
            del returned[0]
        else:
            at = max(now, self._next, self._held_until)
            if at >= deadline:
                return None
            moment = (at, at + self._interval())
            self._next = moment[1]
        if moment[0] > now:
            self.finder.held_back(now, self.ending)
        return moment

    def _give_back(self, moment: tuple[float, float], respaced: int) -> None:
        """A waiter left before its moment: the last one reserved is undone (and any
        given back just before it), any other is left for the next paced send. A
        re-spacing since (``respaced``: a 429, a rate that sped up): the moment is void."""
        if respaced != self._respaced:
            return
        returned = self._returned
        if moment[1] != self._next:
            insort(returned, moment)
            return
        self._next = moment[0]
        while returned and returned[-1][1] == self._next:
            self._next = returned.pop()[0]

    def _held_moment(self) -> float:
        """An unpaced send's moment: now, or spread over the end of a hold."""
        now = self._clock()
        held = self._held_until
        if held <= now:
            return now
        c = self.finder.constants  # the schedule's constants are the machine's record
        return held + self._rand() * min(c.hold_spread_share * (held - now),
                                         c.max_hold_spread_seconds)

    def _interval(self) -> float:
        """One jittered interval of the pacer (half to one and a half of 1 / rate, with
        the default constants)."""
        c = self.finder.constants
        return (c.jitter_low + self._rand() * c.jitter_width) / self.finder.rate

    async def _wait_until(self, at: float, park: Park) -> None:
        delay = at - self._clock()
        if delay > 0:
            await park(None, delay)

    async def _wait_for(self, at: float, park: Park) -> None:
        """Wait until the paced moment ``at``, or (a long wait) until the rate speeds
        up: a moment laid at a rate that was far too low (a first answer after a machine
        was suspended, a blackout's crawl) is not kept once the service is found to take
        more. A short wait (one interval at a working rate) just sleeps: no task."""
        delay = at - self._clock()
        if delay < INTERRUPTIBLE_SECONDS:
            if delay > 0:
                await park(None, delay)
            return
        if self._sped_up is None:
            self._sped_up = asyncio.get_running_loop().create_future()
        sleep = asyncio.ensure_future(park(None, delay))
        try:
            await asyncio.wait((sleep, self._sped_up), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not sleep.done():
                sleep.cancel()  # our own task: the wait it made is over (awaited so
                await asyncio.wait((sleep,))  # as to leave nothing; never raises)
        if not sleep.cancelled():
            sleep.result()  # the park's own error (a client closed) is the wait's

    def _speed_up(self, now: float) -> None:
        """An answer sped the rate up (``SPED_UP`` times or more: the service takes
        again after a blackout, a round trip far shorter than the first): the schedule
        laid at the old rate is dropped, re-spaced from now, and the long waits for its
        moments end (each takes a moment again, at the new rate)."""
        self._respaced += 1
        self._returned.clear()
        self._next = min(self._next, now)
        sped_up = self._sped_up
        if sped_up is not None:
            self._sped_up = None
            if not sped_up.done():
                sped_up.set_result(None)

    def _limited(self, now: float, wait: float | None) -> None:
        """A 429 came: every waiting paced send is re-spaced from now (the service has
        no token left); if the service takes nothing at all, everyone is held for the
        wait it asked."""
        self._respaced += 1
        self._returned.clear()
        self._next = now + self._interval()
        within = max(self.finder.constants.starved_within_seconds, wait or 0.0)
        if wait and self.finder.starved(now, within):
            self._held_until = max(self._held_until, now + wait)
            self._wait_held = wait
        else:  # what a probe's 429 would ask again: kept until another says otherwise
            self._wait_asked = wait or 0.0
