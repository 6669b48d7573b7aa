"""How long the wait a 429 asked stays the end's quiet (``Pace.ending``: no probe
above the rate found while the inputs left take less than the quiet, so that a probe's
429 does not hold a check past the end of a run).

Before: the last wait a 429 asked was kept for the client's life, and a 429 without a
wait did not replace it: one long ``Retry-After`` early on (a service at its quota
when the first checks came, asking a minute) kept the last minute of every later run,
of every size, without a probe. Now the wait counts while a 429 would cost it: a
hold's (the service took nothing) until the hold ends, that of a 429 while the
service took checks until a later 429 says otherwise (none said: none).

The clock is a number the test moves: nothing waits."""

from __future__ import annotations

import math
import random

from test_pace import park

from asyncsdk._core.backlog import Backlog
from asyncsdk._core.pace import Pace, Ticket
from asyncsdk.pacing import DEFAULT_CONSTANTS

QUIET = DEFAULT_CONSTANTS.no_probe_before_end_seconds  # 1 s
LEFT = 450  # the inputs the run has left


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.backlog: Backlog | None = None

    def __call__(self) -> float:
        return self.now


def paced_run() -> tuple[Pace, Clock]:
    """A pace on ``Clock`` serving a run with ``LEFT`` inputs left (its backlog held by
    the clock: the pace forgets a run that is gone)."""
    clock = Clock()
    pace = Pace(clock, park, random.Random(1).random)
    clock.backlog = Backlog(LEFT)
    pace.expect(clock.backlog)
    return pace, clock


def quiet_is(pace: Pace, seconds: float) -> bool:
    """Whether the end's quiet is ``seconds`` now (to 1 %): ``ending(rate)`` is True
    from the rate at which the inputs left take that long."""
    return pace.ending(LEFT / seconds * 1.01) and not pace.ending(LEFT / seconds * 0.99)


async def sent(pace: Pace) -> Ticket:
    """A send the pace lets out now (unpaced: no hold is on when it is asked)."""
    ticket = await pace.ready(False, math.inf)
    assert ticket is not None
    return ticket



async def test_a_holds_wait_counts_until_the_hold_ends() -> None:
    pace, clock = paced_run()
    pace.done(await sent(pace), 429, 60.0)  # nothing answered yet: a hold of 60 s
    assert pace.held_until == 60.0
    clock.now = 30.0
    assert quiet_is(pace, 60.0)
    clock.now = 60.0  # the hold is over: a probe's 429 asks what it asks, not a minute
    for _ in range(3):
        pace.done(await sent(pace), 200, None)
    assert quiet_is(pace, QUIET)  # before: the minute's quiet, for good
    clock.now = 3600.0
    assert quiet_is(pace, QUIET)


async def test_the_wait_of_a_429_while_the_service_takes_checks_stands() -> None:
    """A probe's 429 asking 3 s: the last 3 s stay quiet, however long after."""
    pace, clock = paced_run()
    pace.done(await sent(pace), 200, None)
    clock.now = 0.5
    pace.done(await sent(pace), 429, 3.0)  # the service takes checks: no hold
    assert pace.held_until < clock.now
    for now in (1.0, 10.0, 3600.0):
        clock.now = now
        assert quiet_is(pace, 3.0)


async def test_a_429_without_a_wait_ends_the_quiet_an_earlier_one_asked() -> None:
    pace, clock = paced_run()
    pace.done(await sent(pace), 200, None)
    clock.now = 0.5
    pace.done(await sent(pace), 429, 3.0)
    clock.now = 2.0
    pace.done(await sent(pace), 200, None)
    pace.done(await sent(pace), 429, None)  # the service asks no wait any more
    clock.now = 5.0
    assert quiet_is(pace, QUIET)  # before: 3 s still


async def test_a_hold_after_a_probes_wait_counts_until_it_ends() -> None:
    """The service took checks (a 429 asked 3 s), then nothing (a 429 asked 20 s): the
    hold's wait while it lasts, the probe's after it, until a later 429 says otherwise."""
    pace, clock = paced_run()
    pace.done(await sent(pace), 200, None)
    clock.now = 0.5
    pace.done(await sent(pace), 429, 3.0)
    clock.now = 10.0  # nothing answered for over 3 s: the next 429 holds
    pace.done(await sent(pace), 429, 20.0)
    assert pace.held_until == 30.0
    clock.now = 29.0
    assert quiet_is(pace, 20.0)
    clock.now = 30.0
    assert quiet_is(pace, 3.0)  # before: 20 s, for good
    pace.done(await sent(pace), 200, None)
    pace.done(await sent(pace), 429, 2.0)
    assert quiet_is(pace, 2.0)
