"""``check_many(pace=...)``: a caller's ``SendPolicy`` lets each check out and hears
each answer, in place of the client's pace (DESIGN §3: one seam; the fleet's
``SharedPace`` is such a policy, tested in tests/fleet).

- ``admit`` is asked before every send (resends included), with the check's deadline
  on the client's clock; ``report`` after every answer, with its status and, for a
  429, its ``Retry-After``;
- a 429 is sent again without spending ``max_retries`` only when ``resends_free`` says
  so;
- a policy that refuses (``admit`` gives None) sends nothing: the input's outcome is
  the error of a spent budget (``RateLimitError`` while the policy holds);
- a ``pace`` that is not a policy, or one given with ``adaptive=False``, is refused at
  the call.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aioresponses import aioresponses
from validation_tools import url_of

import asyncsdk
from asyncsdk.pacing import Admission, PaceState, SendPolicy

CHECK = url_of("/api/v1/single/check")


def ok(email: str) -> dict[str, Any]:
    return {"email": email, "status": "success", "result": "Valid", "role": False}


def sends(mocked: aioresponses) -> int:
    return sum(len(calls) for calls in mocked.requests.values())


class RecordingPolicy:
    """A caller's policy that admits at once (or never: ``refuse``) and writes down
    what it is asked: ("admit", sends so far, deadline) and ("report", status,
    retry_after)."""

    def __init__(self, mocked: aioresponses, *, free: bool = True, refuse: bool = False,
                 held_until: float = 0.0) -> None:
        self.mocked = mocked
        self.free = free
        self.refuse = refuse
        self.held_until = held_until
        self.events: list[tuple[Any, ...]] = []
        self.given: list[object] = []

    async def admit(self, deadline: float) -> Admission | None:
        self.events.append(("admit", sends(self.mocked), deadline))
        if self.refuse:
            return None
        admission = object()
        self.given.append(admission)
        return admission

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        assert admission is self.given[-1]  # its own token, handed back
        self.events.append(("report", status, retry_after))

    def resends_free(self, status: int) -> bool:
        return self.free and status == 429


def test_the_recording_policy_is_a_send_policy() -> None:
    assert isinstance(RecordingPolicy(aioresponses()), SendPolicy)


async def test_the_policy_is_asked_before_every_send_and_told_every_answer(
        client: asyncsdk.Client, mocked: aioresponses,
        clock: asyncsdk.testing.VirtualClock) -> None:
    """A 429 (Retry-After: 2), a 503, then an answer: three sends, each admitted before
    it left, each answer reported with its status (and the 429's wait)."""
    mocked.get(CHECK, status=429, headers={"Retry-After": "2"}, body="slow down")
    mocked.get(CHECK, status=503, body="down")
    mocked.get(CHECK, payload=ok("a@b.com"))
    policy = RecordingPolicy(mocked)
    start = clock.now()
    outcomes = [o async for o in client.validation.check_many(
        ["a@b.com"], pace=policy, request_timeout=20.0)]
    assert [o.ok for o in outcomes] == [True]
    assert [e[:2] for e in policy.events[::2]] == [("admit", 0), ("admit", 1), ("admit", 2)]
    assert policy.events[1::2] == [("report", 429, 2.0), ("report", 503, None),
                                   ("report", 200, None)]
    # The check's budget, on the client's clock (virtual: it moves only by its sleeps).
    assert policy.events[0][2] == start + 20.0
    # The client's own pace was not used: as before any bulk call (a send through it,
    # answered or refused, would have left it a rate).
    assert client.validation.pace() == PaceState()


@pytest.mark.parametrize("free", [True, False])
async def test_a_429_is_resent_free_only_when_the_policy_says_so(
        client: asyncsdk.Client, mocked: aioresponses, free: bool) -> None:
    """Four 429s then an answer, max_retries 2: resent free, the check is answered
    after five sends; not free, it gives up after three (1 + max_retries)."""
    for _ in range(4):
        mocked.get(CHECK, status=429, headers={"Retry-After": "1"}, body="slow down")
    mocked.get(CHECK, payload=ok("a@b.com"))
    policy = RecordingPolicy(mocked, free=free)
    outcomes = [o async for o in client.validation.check_many(["a@b.com"], pace=policy)]
    if free:
        assert outcomes[0].ok and sends(mocked) == 5
    else:
        assert isinstance(outcomes[0].error, asyncsdk.RateLimitError)
        assert sends(mocked) == 3
    assert [e[0] for e in policy.events] == ["admit", "report"] * sends(mocked)


@pytest.mark.parametrize(("held", "error"), [(True, asyncsdk.RateLimitError),
                                             (False, asyncsdk.APITimeoutError)])
async def test_a_policy_that_refuses_sends_nothing(
        client: asyncsdk.Client, mocked: aioresponses,
        clock: asyncsdk.testing.VirtualClock, held: bool,
        error: type[asyncsdk.SDKError]) -> None:
    """``admit`` gives None: no request leaves, nothing is reported, and each input's
    outcome is its budget's error (a RateLimitError naming the wait while the policy
    holds, on the client's clock)."""
    policy = RecordingPolicy(mocked, refuse=True,
                             held_until=clock.now() + 60.0 if held else 0.0)
    outcomes = [o async for o in client.validation.check_many(
        ["a@b.com", "c@d.com"], pace=policy)]
    assert sends(mocked) == 0
    assert [e[0] for e in policy.events] == ["admit", "admit"]
    assert all(isinstance(o.error, error) and o.attempted for o in outcomes)
    if held:
        assert outcomes[0].error.retry_after == pytest.approx(60.0)  # type: ignore[union-attr]


async def test_a_pace_that_is_not_a_policy_is_refused_at_the_call(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        client.validation.check_many(["a@b.com"], pace=object())  # type: ignore[arg-type]
    assert info.value.field == "pace"
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        client.validation.check_many(["a@b.com"], pace=RecordingPolicy(mocked),
                                     adaptive=False)
    assert info.value.field == "adaptive"
    assert sends(mocked) == 0


class GatedPolicy:
    """A policy that lets one check out once ``checks`` wait for it, and the others
    only once an answer was reported (they wait for their moment meanwhile, as behind
    a pace); ``given`` and ``reported`` count admissions and reports."""

    held_until = 0.0

    def __init__(self, checks: int) -> None:
        self.checks = checks
        self.asking = 0
        self.all_asking = asyncio.Event()
        self.answered = asyncio.Event()
        self.given = 0
        self.reported: list[int | None] = []

    async def admit(self, deadline: float) -> Admission | None:
        self.asking += 1
        if self.asking == self.checks:
            self.all_asking.set()
        await self.all_asking.wait()
        if self.given:
            await self.answered.wait()
        self.given += 1
        return object()

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        self.reported.append(status)
        self.answered.set()

    def resends_free(self, status: int) -> bool:
        return status == 429


async def test_checks_waiting_for_their_moment_are_not_sent_once_the_run_stops(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    """DESIGN §2: after a credit failure the run stops sending. The checks waiting for
    their moment when it came are not sent (before: every one of them was, up to
    ``concurrency``, each refused in turn; with the client's own pace, 30-50 checks
    reached a service after the stop, measured): each is "not attempted", and each
    moment given to it is handed back, reported as an attempt without an answer."""
    credit = "The request was refused due to insufficent credit."
    mocked.get(CHECK, payload={"status": "fail", "error": credit}, repeat=True)
    policy = GatedPolicy(6)
    outcomes = [o async for o in client.validation.check_many(
        [f"u{i}@example.com" for i in range(6)], concurrency=6, pace=policy)]
    assert sends(mocked) == 1
    assert len(outcomes) == 6
    assert all(isinstance(o.error, asyncsdk.InsufficientCreditError) for o in outcomes)
    assert [o.attempted for o in outcomes].count(True) == 1
    assert all("not attempted" in str(o.error) for o in outcomes if not o.attempted)
    # A moment given after the stop is handed back (an attempt without an answer); a
    # wait still going on then is cut short (no moment taken).
    assert policy.given == len(policy.reported)
    assert policy.reported[1:] == [None] * (policy.given - 1)
