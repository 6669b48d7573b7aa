"""``Pace.snapshot()``: the pace as its user sees it (``PaceState``, what
``client.validation.pace()`` gives; through a client: tests/resources/validation/
test_pace_view.py), on a pace composed directly, in virtual time.

- a pace before its first send shows ``PaceState()``;
- each field follows the pace: the hold counts down, the checks in flight, the window,
  the rate once it spaces sends, the inputs its runs have left;
- ``next_send_seconds`` is the wait a paced attempt asking then is given (a moment given
  back by a cancelled waiter included);
- looking changes nothing: a pace looked at between every event decides as one never
  looked at;
- a client's table of paces makes no pace for a look (``PaceTable.find``).
"""

from __future__ import annotations

import asyncio
import math

import attrs
import pytest
from test_pace import HOLD, held_pace, new_pace
from virtual_time import virtual_loop

from asyncsdk._core.backlog import Backlog
from asyncsdk._core.policy import PaceTable, key_fingerprint
from asyncsdk.pacing import PaceState, Phase
from asyncsdk.testing import VirtualClock


def test_a_pace_before_its_first_send_shows_the_defaults() -> None:
    async def main() -> PaceState:
        return new_pace().snapshot()

    with virtual_loop() as loop:
        assert loop.run_until_complete(main()) == PaceState()
    fresh = PaceState()
    assert (fresh.phase, fresh.rate, fresh.service_rate) == (Phase.STARTUP, None, None)
    assert (fresh.in_flight, fresh.hold_seconds, fresh.next_send_seconds) == (0, 0.0, 0.0)
    assert fresh.inputs_left is None and fresh.max_in_flight == 16
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fresh.rate = 1.0  # type: ignore[misc]


def test_the_hold_counts_down_and_ends() -> None:
    """A 429 from a service that answered nothing holds the pace ``HOLD`` seconds: the
    hold shows, a paced send would wait for its end, and both go down to 0.0 with time;
    the 429 cut the blind start-up's rate (no estimate of the service's yet)."""
    async def main() -> list[PaceState]:
        pace = await held_pace()
        seen = [pace.snapshot()]
        await asyncio.sleep(1.0)
        seen.append(pace.snapshot())
        await asyncio.sleep(HOLD)
        seen.append(pace.snapshot())
        return seen

    with virtual_loop() as loop:
        at_429, a_second_later, after = loop.run_until_complete(main())
    assert at_429.hold_seconds == at_429.next_send_seconds == HOLD
    assert a_second_later.hold_seconds == pytest.approx(HOLD - 1.0)
    assert a_second_later.next_send_seconds == pytest.approx(HOLD - 1.0)
    assert after.hold_seconds == 0.0 and after.next_send_seconds == 0.0
    assert at_429.phase is Phase.RESTING and at_429.service_rate is None
    assert at_429.rate is not None and math.isfinite(at_429.rate)
    assert at_429.in_flight == after.in_flight == 0


def test_in_flight_window_and_inputs_left_follow_the_pace() -> None:
    async def main() -> list[PaceState]:
        pace = new_pace()
        pace.finder.window = 4.5  # a window may be fractional: 5 places fit below it
        backlog = Backlog(7)
        pace.expect(backlog)
        tickets = [await pace.ready(True, math.inf) for _ in range(3)]
        backlog.left = 4
        seen = [pace.snapshot()]
        for ticket in tickets:
            assert ticket is not None
            pace.done(ticket, 200, None)
        seen.append(pace.snapshot())
        return seen

    with virtual_loop() as loop:
        sending, answered = loop.run_until_complete(main())
    assert sending.in_flight == 3 and sending.max_in_flight == 5
    assert sending.inputs_left == 4
    assert answered.in_flight == 0
    assert answered.rate is not None  # answers came: the sends are spaced at a rate


def test_next_send_is_the_wait_a_paced_attempt_asking_now_is_given() -> None:
    """After a hold, waiters reserve moments one interval apart; one of them (not the
    last) is cancelled, giving its moment back. At each look the wait shown is the one
    the next paced attempt is given: the moment given back first, then the schedule's
    next free one."""
    async def main() -> list[tuple[float, float]]:
        pace = await held_pace()
        pace.finder.window = 100  # every waiter reserves a moment
        loop = asyncio.get_running_loop()
        waiters = [loop.create_task(pace.ready(True, math.inf)) for _ in range(10)]
        await asyncio.sleep(0.5)
        waiters[3].cancel()
        await asyncio.gather(waiters[3], return_exceptions=True)
        shown_and_given = []
        for _ in range(2):  # the moment given back, then one after the last reserved
            shown = pace.snapshot().next_send_seconds
            asked = loop.time()
            ticket = await pace.ready(True, math.inf)
            assert ticket is not None
            shown_and_given.append((shown, loop.time() - asked))
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        return shown_and_given

    with virtual_loop() as loop:
        (shown_back, given_back), (shown_next, given_next) = loop.run_until_complete(main())
    assert given_back > HOLD - 0.5 and shown_back == pytest.approx(given_back)
    assert given_next > 0.0 and shown_next == pytest.approx(given_next)


def test_looking_changes_nothing() -> None:
    """Two paces (the same random draws) see the same events: 429s, answers, a hold;
    one is looked at between every step. Their tickets leave at the same times and
    they show the same at the end."""
    async def drive(look: bool) -> tuple[list[float], PaceState]:
        pace = new_pace(seed=7)
        loop = asyncio.get_running_loop()
        times: list[float] = []
        for i in range(60):
            if look:
                pace.snapshot()
            ticket = await pace.ready(True, math.inf)
            assert ticket is not None
            times.append(loop.time())
            if look:
                pace.snapshot()
            await asyncio.sleep(0.01)
            pace.done(ticket, 429 if i % 7 == 3 else 200, 0.2 if i % 7 == 3 else None)
        return times, pace.snapshot()

    with virtual_loop() as loop:
        looked = loop.run_until_complete(drive(True))
    with virtual_loop() as loop:
        not_looked = loop.run_until_complete(drive(False))
    assert looked == not_looked
    assert looked[1] != PaceState()  # the events moved the pace: the looks had a state


def test_a_look_at_a_clients_paces_makes_none() -> None:
    table = PaceTable(VirtualClock())
    key = key_fingerprint("sk_live_SECRET")
    assert table.find(key, "validation") is None
    assert repr(table) == "<PaceTable paces=0>"
    pace = table.pace(key, "validation")
    assert table.find(key, "validation") is pace
    assert table.find(key_fingerprint("another"), "validation") is None
    assert table.find(key, "contacts") is None
    assert repr(table) == "<PaceTable paces=1>"
