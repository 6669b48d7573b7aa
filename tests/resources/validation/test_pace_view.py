"""``client.validation.pace()``: the client's bulk pace as its user sees it (a
``PaceState``; each field on a pace composed directly: tests/core/test_pace_state.py).

- before any bulk call it is ``PaceState()``, and looking changes nothing of a run;
- it is the pace of the client's key: a hold the parent's 429 started shows in a copy's
  view, counts down on the client's clock, and shows in no view of another key;
- it holds nothing of the key, and reads on a closed client too;
- a run given ``pace=`` (a fleet worker's) is paced by that policy: it shows nothing
  here, and leaves the client's pace as it was;
- ``inputs_left`` counts the runs still going: a finished run over a generator, whose
  outcomes the caller keeps, hides no later run's count.
"""

from __future__ import annotations

import asyncio
import math
import pickle
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

import attrs
import pytest
from aioresponses import CallbackResult, aioresponses
from helpers import API_KEY, BASE, USERNAME
from test_check_many_policy import RecordingPolicy
from validation_tools import url_of

import asyncsdk
from asyncsdk._core.policy import key_fingerprint
from asyncsdk.pacing import PaceState, Phase

CHECK = url_of("/api/v1/single/check")
EMAILS = [f"u{i}@example.com" for i in range(5)]


def ok(email: str) -> dict[str, Any]:
    return {"email": email, "status": "success", "result": "Valid", "role": False}


async def run(client: asyncsdk.Client, emails: Iterable[str] | AsyncIterable[str],
              **options: Any) -> list[asyncsdk.CheckOutcome]:
    return [o async for o in client.validation.check_many(emails, **options)]


async def test_a_look_before_a_run_changes_nothing_of_it(mocked: aioresponses) -> None:
    """Two clients on equal clocks run the same checks (one at a time, all answered);
    one looked at its pace before, between and after. Both end showing the same
    state: a rate learnt from the answers, nothing in flight, nothing held, the next
    check due within one interval of the rate."""
    mocked.get(CHECK, payload=ok("u@example.com"), repeat=True)
    shown = []
    for look in (True, False):
        async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE,
                                   clock=asyncsdk.testing.VirtualClock(random=0.5)) as c:
            if look:
                assert c.validation.pace() == PaceState()
            async for outcome in c.validation.check_many(EMAILS, concurrency=1):
                assert outcome.ok
                if look:
                    c.validation.pace()
            shown.append(c.validation.pace())
    looked, not_looked = shown
    assert looked == not_looked
    assert looked.phase is Phase.STARTUP and looked.in_flight == 0
    assert looked.rate is not None and math.isfinite(looked.rate)
    assert looked.hold_seconds == 0.0
    assert looked.next_send_seconds <= 1.5 / looked.rate  # one interval at most


async def test_a_hold_shows_in_every_view_of_the_key_and_counts_down(
        client: asyncsdk.Client, mocked: aioresponses,
        clock: asyncsdk.testing.VirtualClock) -> None:
    """The service, having answered nothing, answers the parent's check 429 with
    ``Retry-After: 30``: the parent and its copy show a hold of 30 s (the check, with a
    5 s budget, gave up); a copy with another key shows none. Ten seconds later on the
    client's clock, 20 s are left; after it, none."""
    mocked.get(CHECK, status=429, headers={"Retry-After": "30"}, body="slow down")
    copy = client.with_options(timeout=120)
    other_key = client.with_options(api_key="sk_live_other_key_0123456789")
    [outcome] = await run(client, ["a@b.com"], request_timeout=5)
    assert isinstance(outcome.error, asyncsdk.RateLimitError)
    parents, copys = client.validation.pace(), copy.validation.pace()
    assert parents == copys  # one pace
    assert parents.hold_seconds == parents.next_send_seconds == 30.0
    assert parents.phase is Phase.RESTING and parents.in_flight == 0
    assert other_key.validation.pace() == PaceState()
    clock.advance(10)
    assert copy.validation.pace().hold_seconds == client.validation.pace().hold_seconds == 20
    clock.advance(25)
    assert copy.validation.pace().hold_seconds == 0.0


async def test_the_view_holds_nothing_of_the_key(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    """After a run, the view's fields are plain numbers and a phase; neither its repr
    nor its fields hold the key, its fingerprint or the user name. A closed client
    still shows its pace."""
    mocked.get(CHECK, status=429, headers={"Retry-After": "2"}, body="slow down")
    mocked.get(CHECK, payload=ok("a@b.com"), repeat=True)
    assert all(o.ok for o in await run(client, EMAILS))
    state = client.validation.pace()
    assert state != PaceState()
    values = attrs.asdict(state, recurse=False).values()
    assert all(v is None or isinstance(v, (int, float, Phase)) for v in values), values
    fingerprint = key_fingerprint(API_KEY)
    shown = repr(state) + str(state)
    for secret in (API_KEY, USERNAME, fingerprint.hex(), repr(fingerprint)):
        assert secret not in shown
    pickled = pickle.dumps(state)
    assert pickle.loads(pickled) == state
    for raw in (API_KEY.encode(), USERNAME.encode(), fingerprint):
        assert raw not in pickled
    await client.close()
    assert client.validation.pace() == state


async def test_another_client_of_the_same_key_has_its_own_pace(
        client: asyncsdk.Client, mocked: aioresponses,
        clock: asyncsdk.testing.VirtualClock) -> None:
    """The parent's 429 holds its pace; another ``Client`` of the same key, on the
    same clock, shows none (issue 40, item 4: copies share, clients do not)."""
    mocked.get(CHECK, status=429, headers={"Retry-After": "30"}, body="slow down")
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock) as other:
        await run(client, ["a@b.com"], request_timeout=5)
        assert client.validation.pace().hold_seconds == 30.0
        assert other.validation.pace() == PaceState()


async def test_a_run_with_its_own_pace_shows_nothing_here(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    """A run given ``pace=`` (as each fleet worker gives its ``SharedPace``) is asked
    of and told to that policy alone: during it and after it, through a 429 from a
    service that answered nothing (which holds the client's own pace), the client
    shows ``PaceState()``, its own pace never made."""
    shown: list[PaceState] = []

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        shown.append(client.validation.pace())
        if len(shown) == 1:
            return CallbackResult(status=429, headers={"Retry-After": "30"}, body="x")
        return CallbackResult(payload=ok("a@b.com"))

    mocked.get(CHECK, callback=answer, repeat=True)
    policy = RecordingPolicy(mocked)
    assert all(o.ok for o in await run(client, EMAILS[:2], pace=policy))
    assert ("report", 429, 30.0) in policy.events  # the 429 was the policy's to hear
    assert len(shown) == 3 and set(shown) == {PaceState()}
    assert client.validation.pace() == PaceState()


async def test_a_finished_run_of_unknown_length_hides_no_later_count(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    """A run over a generator ends with a failure, whose outcome the caller keeps (its
    traceback keeps the run's count of inputs alive). A later run over a list shows its
    inputs left at each send: the finished run counts as none left, not as unknown
    (it stayed unknown: every later run showed None, and its pace never saw its end
    near)."""
    left: list[int | None] = []
    statuses = iter([500])

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        left.append(client.validation.pace().inputs_left)
        if next(statuses, 200) == 500:
            return CallbackResult(status=500, body="down")
        return CallbackResult(payload=ok("a@b.com"))

    async def source() -> AsyncIterator[str]:
        yield "a@b.com"

    mocked.get(CHECK, callback=answer, repeat=True)
    kept = await run(client.with_options(max_retries=0), source())
    assert not kept[0].ok and left == [None]  # while it ran: unknown
    assert client.validation.pace().inputs_left == 0
    left.clear()
    await run(client, EMAILS[:3], concurrency=1)
    assert left == [2, 1, 0]


async def test_next_send_is_when_the_next_check_leaves(
        client: asyncsdk.Client, mocked: aioresponses,
        clock: asyncsdk.testing.VirtualClock) -> None:
    """On the client's clock, a one-check run started at a look sends its check
    ``next_send_seconds`` after it: at the end of a hold (30 s), then one interval of
    the rate after the check before (answered at once: a wait above 0.0)."""
    sent: list[float] = []

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        sent.append(clock.now())
        if len(sent) == 1:
            return CallbackResult(status=429, headers={"Retry-After": "30"}, body="x")
        return CallbackResult(payload=ok("a@b.com"))

    mocked.get(CHECK, callback=answer, repeat=True)
    await run(client, ["a@b.com"], request_timeout=5)
    waits = []
    for _ in range(2):
        looked, at = client.validation.pace(), clock.now()
        assert all(o.ok for o in await run(client, ["b@c.com"]))
        waits.append((looked.next_send_seconds, sent[-1] - at))
    (shown_hold, given_hold), (shown_next, given_next) = waits
    assert shown_hold == given_hold == 30.0
    assert shown_next > 0.0 and shown_next == pytest.approx(given_next)


def test_the_view_reads_in_no_loop_and_in_another() -> None:
    """A client held in one event loop (``asyncio.run``) and closed there: its view
    reads the same outside any loop and in another loop, raising nothing."""
    clock = asyncsdk.testing.VirtualClock()
    client = asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock)

    async def held_then_closed() -> None:
        async with client:
            await run(client, ["a@b.com"], request_timeout=5)

    async def look() -> PaceState:
        return client.validation.pace()

    with asyncsdk.testing.aioresponses() as mocked:
        mocked.get(CHECK, status=429, headers={"Retry-After": "30"}, body="slow down")
        asyncio.run(held_then_closed())
    state = client.validation.pace()
    assert state.hold_seconds == 30.0
    assert asyncio.run(look()) == state
