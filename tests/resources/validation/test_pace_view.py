"""``client.validation.pace()``: the client's bulk pace as its user sees it (a
``PaceState``; each field on a pace composed directly: tests/core/test_pace_state.py).

- before any bulk call it is ``PaceState()``, and looking changes nothing of a run;
- it is the pace of the client's key: a hold the parent's 429 started shows in a copy's
  view, counts down on the client's clock, and shows in no view of another key;
- it holds nothing of the key, and reads on a closed client too.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
from aioresponses import aioresponses
from helpers import API_KEY, BASE, USERNAME
from validation_tools import url_of

import asyncsdk
from asyncsdk._core.policy import key_fingerprint
from asyncsdk.pacing import PaceState, Phase

CHECK = url_of("/api/v1/single/check")
EMAILS = [f"u{i}@example.com" for i in range(5)]


def ok(email: str) -> dict[str, Any]:
    return {"email": email, "status": "success", "result": "Valid", "role": False}


async def run(client: asyncsdk.Client, emails: list[str], **options: Any,
              ) -> list[asyncsdk.CheckOutcome]:
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
    await client.close()
    assert client.validation.pace() == state
