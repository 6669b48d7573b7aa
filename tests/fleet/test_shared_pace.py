"""The fleet's pace (``asyncsdk.fleet.shared_pace``) on a real redis-server (the fleet
tests' fixture: Redis 6.2, the oldest the fleet supports).

The guarantees of the fleet's pace before it was the library's machine
(``test_fleet_pace.py``), kept: one schedule for every worker, the rate found from the
answered sends between refused ones (whenever a worker tells them), the start-up grown
by answers and not by time, a service that takes nothing holds every worker, two
workers on one key behave like one client. And the issue's proof that the pace is one
machine: one trace of answers fed to ``check_many``'s in-memory pace and to the fleet's
(one fake clock, one jitter source) gives the same moments and the same rates.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import pytest
from arq.connections import ArqRedis
from fleet_tools import until

import asyncsdk
from asyncsdk._core.pace import Pace
from asyncsdk.fleet.shared_pace import PACE_KEY, PAUSE_KEY, Reservation, SharedPace
from asyncsdk.pacing import DEFAULT_CONSTANTS, Phase, RateFinder, SendPolicy
from asyncsdk.testing import RateLimit, RateLimits, Sandbox

C = DEFAULT_CONSTANTS


class FakeClock:
    """One clock for every worker (and the in-memory pace): moves only when waited on.
    It starts far from 0 so that a wait to a moment lands on it exactly."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds

    async def park(self, waiter: asyncio.Future[None] | None, seconds: float) -> None:
        assert waiter is None, "one check at a time: the window never fills"
        self.now += seconds


def fake_paces(pool: ArqRedis, clock: FakeClock, count: int = 2,
               rand: Any = lambda: 0.5) -> list[SharedPace]:
    return [SharedPace(pool, clock=clock, sleep=clock.sleep, rand=rand)
            for _ in range(count)]


async def resting_at(paces: list[SharedPace], rate: float, window: int = 1000) -> None:
    """Every worker's machine past its start-up, at ``rate`` and ``window`` (as the pace
    tests set a finder): one check each first, so they belong to the pace's
    generation."""
    for pace in paces:
        admission = await pace.admit()
        assert admission is not None
        await pace.tell(admission, None, None)
    for pace in paces:
        pace.finder.starting = False
        pace.finder.rate, pace.finder.window = rate, window


async def test_the_script_runs_on_the_suites_redis(pool: ArqRedis) -> None:
    """Every command of the script exists on this server (6.2 in the suite): XRANGE with
    an exclusive start among them (the second worker reads only what is new)."""
    info = await pool.info("server")
    version = tuple(int(p) for p in str(info["redis_version"]).split(".")[:2])
    assert version >= (6, 2)
    a, b = SharedPace(pool), SharedPace(pool)
    admission = await a.admit()
    assert admission is not None
    await a.tell(admission, 429, None)
    assert await a.rate() > 0
    second = await b.admit()
    assert second is not None and second.at >= admission.at
    await b.tell(second, 200, None)
    await b.aclose()
    await a.aclose()
    assert a.finder.phase is b.finder.phase is Phase.RESTING
    assert await pool.xlen(f"{PACE_KEY}:events") >= 4  # sent, refused, sent, answered


async def test_two_workers_share_one_schedule(pool: ArqRedis) -> None:
    """Moments reserved by two workers in turn are one schedule at the fleet's rate:
    one interval apart, whoever asks (not two schedules side by side)."""
    clock = FakeClock()
    paces = fake_paces(pool, clock)
    await resting_at(paces, 200.0)
    moments = []
    for i in range(10):
        admission = await paces[i % 2].admit()
        assert admission is not None
        moments.append(admission.at)
    gaps = [b - a for a, b in itertools.pairwise(moments)]
    assert gaps == pytest.approx([1 / 200] * 9, abs=1e-9)  # jitter 0.5: exactly 1/rate


@pytest.mark.parametrize("answers", ["in order", "told late"])
async def test_the_rate_is_found_from_send_moments(pool: ArqRedis, answers: str) -> None:
    """200 checks of two workers, one every ms; the service takes 2 of 5 (400/s). The
    answered checks sent between two refused ones, over the time between their sends,
    are the rate it took, whenever the answers are told (a worker tells them with its
    next call: here all of one worker's after every 429): both workers' machines find
    400/s and decide the same rate, ``backoff_share`` x that. Told late, the 429s
    first cut with nothing to show the rate (the finder then yields, as in memory
    when a 429 comes back before a slower check's answer): at most that."""
    clock = FakeClock()
    a, b = fake_paces(pool, clock)
    await resting_at([a, b], 1000.0)
    start = clock.now
    sent: list[tuple[SharedPace, Reservation]] = []
    for i in range(200):
        pace = (a, b)[i % 2]
        admission = await pace.admit()
        assert admission is not None
        sent.append((pace, admission))
    late = []
    for i, (pace, admission) in enumerate(sent):
        clock.now = admission.at + 0.02
        if i % 5 not in (0, 2):
            await pace.tell(admission, 429, None)
        elif answers == "told late" and pace is a:
            late.append((admission, clock.now))
        else:
            await pace.tell(admission, 200, None)
    for admission, answered_at in late:
        clock.now = answered_at
        await a.tell(admission, 200, None)
    await a.aclose()
    await b.aclose()
    clock.now = start + 0.3
    for pace in (a, b):  # each reads what the other told
        admission = await pace.admit()
        assert admission is not None
    assert a.finder.estimate == b.finder.estimate == pytest.approx(400, rel=0.03)
    assert a.finder.rate == b.finder.rate == await a.rate()
    found = C.backoff_share * 400
    if answers == "in order":
        assert a.finder.rate == pytest.approx(found, rel=0.03)
    else:
        assert C.yield_share * 0.97 * found <= a.finder.rate <= 1.03 * found


async def test_the_start_up_grows_with_the_answers_not_with_time(pool: ArqRedis) -> None:
    """Before any answer the fleet has ``start_window`` checks in flight, sent at once
    (the library's start-up window, across the workers), and a second later no more:
    time alone grows nothing (it once grew the fleet's start into a flood). Answers
    make room and widen the window."""
    clock = FakeClock()
    a, b = fake_paces(pool, clock)
    tasks = [asyncio.ensure_future((a, b)[i % 2].admit()) for i in range(40)]

    def admitted() -> list[Reservation]:
        return [t.result() for t in tasks if t.done() and t.result() is not None]

    async def at_least(count: int) -> bool:
        return len(admitted()) >= count

    try:
        await until(lambda: at_least(C.start_window), timeout=10, what="the first window")
        await asyncio.sleep(0.05)  # the others keep waiting (and looking again)
        first = admitted()
        assert len(first) == C.start_window and len({x.at for x in first}) == 1
        clock.now += 1.0
        await asyncio.sleep(0.05)
        assert len(admitted()) == C.start_window  # a second alone: no more
        assert a.finder.phase is b.finder.phase is Phase.STARTUP
        for admission in first:
            clock.now = admission.at + 1.02
            await (a, b)[tasks.index(next(t for t in tasks if t.done() and t.result()
                                          is admission)) % 2].tell(admission, 200, None)
        await until(lambda: at_least(C.start_window + 1), timeout=10, what="room")
        await asyncio.sleep(0.05)
        window = max(a.finder.window, b.finder.window)
        assert C.start_window < len(admitted()) <= C.start_window + math.ceil(window)
        assert a.finder.rate < math.inf  # now paced, at the start-up's gain
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await a.aclose()
        await b.aclose()


async def test_a_reservation_that_cannot_meet_its_deadline_takes_no_place(
        pool: ArqRedis) -> None:
    """A check whose deadline comes before its moment reserves nothing: the next check
    gets the moment it would have had (issue 38: checks that gave up pushed the
    schedule out by one interval each)."""
    clock = FakeClock()
    [pace] = fake_paces(pool, clock, count=1)
    await resting_at([pace], 10.0)  # one moment every 0.1 s
    first = await pace.admit()
    assert first is not None
    for _ in range(50):
        assert await pace.admit(deadline=first.at + 0.05) is None
    nxt = await pace.admit()
    assert nxt is not None and nxt.at == pytest.approx(first.at + 0.1, abs=1e-9)


async def test_the_seams_times_are_on_the_clients_clock(pool: ArqRedis) -> None:
    """``admit``'s deadline and ``held_until`` are on the client's clock (``engine_clock``),
    whatever the fleet's (Redis's) is: here 5 s against 1,000 s. A deadline 50 ms after
    the next moment, on the client's clock, is met; one 50 ms before it is not; after a
    429 while nothing was answered, the hold ends 0.3 s later on the client's clock."""
    clock = FakeClock()
    pace = SharedPace(pool, clock=clock, sleep=clock.sleep, rand=lambda: 0.5,
                      engine_clock=lambda: clock.now - 995.0)
    assert isinstance(pace, SendPolicy) and pace.resends_free(429)
    assert not pace.resends_free(503)
    await resting_at([pace], 10.0)  # one moment every 0.1 s
    first = await pace.admit()
    assert first is not None
    engine_at = first.at - 995.0  # its moment, on the client's clock
    assert await pace.admit(deadline=engine_at + 0.05) is None  # the next is at +0.1
    nxt = await pace.admit(deadline=engine_at + 0.15)
    assert nxt is not None and nxt.at == pytest.approx(first.at + 0.1, abs=1e-9)
    clock.now = nxt.at + 5.0
    pace.report(nxt, 429, 0.3)  # nothing was answered lately: it holds
    assert await pace.admit(deadline=clock.now - 995.0 + 0.1) is None  # held 0.3 s
    assert pace.held_until == pytest.approx(clock.now - 995.0 + 0.3, abs=1e-6)
    await pace.aclose()


async def test_a_service_that_takes_nothing_pauses_the_fleet(pool: ArqRedis) -> None:
    a, b = SharedPace(pool), SharedPace(pool)
    admission = await a.admit()
    assert admission is not None
    # Timed from before the tell, so that a loaded machine's delays (between the tell,
    # the read and the admit) widen only the bounds they can explain.
    started = time.monotonic()
    await a.tell(admission, 429, 0.3)  # nothing answered lately: hold everyone 300 ms
    left_ms = await pool.pttl(PAUSE_KEY)
    read_after_ms = 1000 * (time.monotonic() - started)
    assert 300 - read_after_ms - 1 <= left_ms <= 300  # 1: Redis counts whole ms
    await b.admit()  # the other worker waits for the pause's end
    assert time.monotonic() - started >= 0.3 - 0.002  # the pause's end: whole ms too
    await a.aclose()
    await b.aclose()


async def test_two_workers_on_one_key_behave_like_one_client(
        pool: ArqRedis, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two clients (two workers) on one key, against the sandbox's limit (400/s, a
    burst of 10): every check answered once, few 429s."""
    async with Sandbox(rate_limit=RateLimit(400, 10, retry_after=0.05),
                       credit=10_000) as sb:
        monkeypatch.setenv("ASYNCSDK_API_KEY", sb.api_key)
        monkeypatch.setenv("ASYNCSDK_USERNAME", sb.username)
        monkeypatch.setenv("ASYNCSDK_BASE_URL", sb.base_url)
        paces = [SharedPace(pool) for _ in range(2)]
        clients = [asyncsdk.Client(max_retries=0) for _ in paces]  # as a worker's: plain

        async def run(client: asyncsdk.Client, pace: SharedPace,
                      prefix: str) -> list[asyncsdk.CheckOutcome]:
            emails = [f"{prefix}{i}@example.com" for i in range(300)]
            return [o async for o in client.validation.check_many(
                emails, concurrency=50, pace=pace)]

        try:
            outcomes = await asyncio.gather(*(run(c, pace, p) for c, pace, p in zip(
                clients, paces, "ab", strict=True)))
        finally:
            for client, pace in zip(clients, paces, strict=True):
                await client.close()
                await pace.aclose()
        stats = sb.limits.stats()
    assert all(o.ok for each in outcomes for o in each)
    assert stats.answered == 600  # none answered twice
    # Few 429s: two workers at one pace. How near the limit they go is a figure of the
    # benchmark, not a wall-clock assert here.
    assert stats.refused < 0.1 * 600, stats


# --- where the fleet lost its rate (issue 40): the driver's own gaps --------------------
async def _events(pool: ArqRedis, kind: str) -> list[list[str]]:
    """The fields of the pace's stream events of ``kind`` (``s``, ``a``, ``f``, ...);
    a ``sent`` event's id is its last field."""
    entries = await pool.xrange(f"{PACE_KEY}:events")
    fields = [(event_id.decode(), entry[b"e"].decode().split())
              for event_id, entry in entries]
    return [f[1:] + ([event_id] if kind == "s" else [])
            for event_id, f in fields if f[0] == kind]


class LateReplies:
    """The Redis a ``SharedPace`` is given, whose script replies reach the worker
    ``seconds`` late (the reply waits for a busy worker's loop), and not before ``gate``
    is set (``held``: the replies it holds); all else is ``redis``'s."""

    def __init__(self, redis: ArqRedis) -> None:
        self._redis = redis
        self.seconds = 0.0
        self.gate = asyncio.Event()
        self.gate.set()
        self.held = 0

    def register_script(self, source: str) -> Callable[..., Awaitable[Any]]:
        script = self._redis.register_script(source)

        async def replies_late(**kwargs: Any) -> Any:
            reply = await script(**kwargs)
            self.held += 1
            try:
                await self.gate.wait()
            finally:
                self.held -= 1
            await asyncio.sleep(self.seconds)
            return reply
        return replies_late

    def __getattr__(self, name: str) -> Any:
        return getattr(self._redis, name)


async def test_a_late_reply_does_not_shorten_an_answer_time(pool: ArqRedis) -> None:
    """A reply that reaches the worker late (a busy machine: up to 16 ms, measured) does
    not shorten the answer times the window is sized on. (It was the worker's clock
    plus the offset of the last reply: one reply 50 ms late made the answer 50 ms
    early, and the shortest answer time, 13.5-14.7 ms against a 20 ms service, held the
    fleet's window, and its rate, at 0.6-0.8 R.) Two guards keep it so, and this
    fails only without both: the offset is the largest of the last second's samples
    (a late reply's is low), and an answer is timed as its moment plus the time since
    it on the worker's own loop (which alone holds once the good samples are a second
    old: not waited for here)."""
    late = LateReplies(pool)
    pace = SharedPace(cast(ArqRedis, late))
    loop = asyncio.get_running_loop()
    admission = await pace.admit()
    assert admission is not None
    sent = loop.time()
    late.seconds = 0.05
    await pace.catch_up()  # one late reply: the offset it gives is 50 ms low
    late.seconds = 0.0
    elapsed = loop.time() - sent
    await pace.tell(admission, 200, None)
    await pace.aclose()
    [(_, at, now)] = await _events(pool, "a")
    assert float(now) - float(at) >= elapsed


async def test_an_answer_told_while_a_flush_is_on_its_way_is_told_too(
        pool: ArqRedis) -> None:
    """An answer reported while the pace's flush was on its way (its call had taken the
    events to tell) waited for the worker's next call: on a worker gone quiet, never,
    and every other worker's machine counted that check as in flight meanwhile."""
    late = LateReplies(pool)
    pace = SharedPace(cast(ArqRedis, late))
    first, second = await pace.admit(), await pace.admit()
    assert first is not None and second is not None
    late.gate.clear()
    pace.report(first, 200, None)  # told by a flush whose reply is held

    async def flush_on_its_way() -> bool:
        return late.held == 1

    await until(flush_on_its_way, timeout=30, what="the flush's call")
    pace.report(second, 200, None)
    late.gate.set()

    async def both_told() -> bool:
        return len(await _events(pool, "a")) == 2

    await until(both_told, timeout=10, what="the second answer told (no call came)")
    await pace.aclose()


async def test_the_moments_held_ahead_leave_the_window_to_the_checks_in_flight(
        pool: ArqRedis) -> None:
    """One call reserves the moments of at most one answer time ahead (the window is
    ``window_gain`` x rate x answer time: the rest of it is for the checks in flight),
    however many checks wait and however long ``horizon_seconds``. (With a 50 ms lead
    against 20 ms answers, the moments ahead filled the window: the fleet sent at
    0.4-0.65 of its own rate, traced.)"""
    clock = FakeClock()
    never = asyncio.Event()

    async def parked(seconds: float) -> None:  # every wait stays where it is
        await never.wait()

    pace = SharedPace(pool, clock=clock, sleep=parked, rand=lambda: 0.5,
                      horizon_seconds=0.05)
    await resting_at([pace], 500.0, window=20)  # so: answers in 20 ms, a moment every 2 ms
    before = len(await _events(pool, "s"))
    waiting = [asyncio.ensure_future(pace.admit()) for _ in range(32)]
    try:
        async def reserved() -> bool:
            return len(await _events(pool, "s")) > before

        await until(reserved, timeout=10, what="the first reservation")
        moments = [float(m) for m, _ in (await _events(pool, "s"))[before:]]
    finally:
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        await pace.aclose()
    assert moments and moments[-1] - moments[0] <= 20 / (C.window_gain * 500.0) + 1e-9
    assert len(moments) <= 11  # a moment every 2 ms over 20 ms


async def test_a_429_heard_while_waiting_re_spaces_the_moment(pool: ArqRedis) -> None:
    """A check waiting for a moment reserved before a 429 (by another worker) was
    heard gives it back and takes a new one, at the rate the cut left, as the library's
    pace re-spaces its waiting sends. (Sent at the old rate, such checks were refused
    too, and each cut again: five cuts of 10 % in a row, traced.)"""
    clock = FakeClock()
    gate = asyncio.Event()
    asked: list[float] = []

    async def gated_sleep(seconds: float) -> None:
        asked.append(clock.now + seconds)
        await gate.wait()
        clock.now = max(clock.now, asked[-1])

    a = SharedPace(pool, clock=clock, sleep=clock.sleep, rand=lambda: 0.5)
    b = SharedPace(pool, clock=clock, sleep=gated_sleep, rand=lambda: 0.5)
    await resting_at([a, b], 100.0)
    gate.set()
    refused = await a.admit()
    assert refused is not None
    gate.clear()
    waiting = asyncio.ensure_future(b.admit())
    await until(lambda: _true(bool(asked)), timeout=10, what="b's reservation")
    old = asked[-1]  # b waits for it, one interval after a's
    assert old == pytest.approx(refused.at + 0.01, abs=1e-9)
    [old_send] = [send for at, send in await _events(pool, "s") if float(at) == old]
    clock.now = refused.at + 0.002
    told = clock.now
    await a.tell(refused, 429, None)
    await b.catch_up()  # b hears the 429 while it waits
    rate = b.finder.rate
    assert rate < 100.0
    gate.set()
    admission = await asyncio.wait_for(waiting, 10)
    assert admission is not None
    assert admission.at > old  # not the moment spaced at the old rate
    # The schedule starts again one interval of the new rate (jitter 0.5: exactly
    # 1 / rate) after the refusal, or after the last moment handed out (b's old one).
    assert admission.at == pytest.approx(max(told, old) + 1 / rate, abs=1e-9)
    await a.aclose()
    await b.aclose()
    assert [old_send] in await _events(pool, "f")  # the old one given back, unused


async def _true(value: bool) -> bool:
    return value


# --- one machine, two drivers: the same trace of answers ------------------------------
def answer_trace(checks: int = 400, seed: int = 5) -> list[tuple[int | None, float | None,
                                                               float]]:
    """What the service answered, check after check: (status, Retry-After, answer
    time). A token bucket of 120/s (a burst of 4) asked 140 times a second on a fake
    clock; first, three checks get no answer and the fourth is refused while nothing
    was answered (a hold); a few later get no answer either."""
    clock = FakeClock()
    limits = RateLimits(RateLimit(120, 4, retry_after=0.05), clock=clock)
    rand = random.Random(seed)
    trace: list[tuple[int | None, float | None, float]] = [(None, None, 0.002)] * 3
    trace.append((429, 0.2, 0.002))
    for i in range(checks):
        answer_time = rand.choice([0.002, 0.004, 0.008, 0.016])
        if i % 61 == 7:
            trace.append((None, None, answer_time))
        elif limits.admit("key") is None:
            limits.release("key")
            trace.append((200, None, answer_time))
        else:
            trace.append((429, 0.05, answer_time))
        clock.now += 1 / 140
    return trace


Decision = tuple[float, float, float, float, str]


def decision(moment: float, finder: RateFinder) -> Decision:
    return (moment, finder.rate, finder.window, finder.estimate, finder.phase.value)


async def in_memory(trace: list[tuple[int | None, float | None, float]],
                    ) -> tuple[list[Decision], list[float]]:
    clock = FakeClock()
    pace = Pace(clock, clock.park, random.Random(11).random)
    decisions, rates = [], []
    for status, wait, answer_time in trace:
        rates.append(pace.finder.rate)  # what the next moment is spaced at
        ticket = await pace.ready(True, math.inf)
        assert ticket is not None
        clock.now += answer_time
        pace.done(ticket, status, wait)
        decisions.append(decision(ticket.at, pace.finder))
    return decisions, rates


async def shared(pool: ArqRedis, trace: list[tuple[int | None, float | None, float]],
                 ) -> tuple[list[Decision], list[float]]:
    clock = FakeClock()
    pace = SharedPace(pool, clock=clock, sleep=clock.sleep, rand=random.Random(11).random)
    decisions, stored = [], []
    for status, wait, answer_time in trace:
        admission = await pace.admit()
        assert admission is not None
        stored.append(await pace.rate())
        clock.now += answer_time
        pace.report(admission, status, wait)  # as check_many tells it (the policy's seam)
        await pace.catch_up()
        decisions.append(decision(admission.at, pace.finder))
    await pace.aclose()
    return decisions, stored


async def test_one_trace_gives_the_same_decisions_in_memory_and_in_redis(
        pool: ArqRedis) -> None:
    """One trace of answers, fed to ``check_many``'s pace (``Pace``, in memory) and to
    the fleet's (``SharedPace``, Redis), each on one fake clock with the same jitter
    source: every check is given the same moment, and both machines decide the same
    rate, window, estimate and phase after it, to the last bit; the rate the fleet's
    schedule used (stored in Redis) is the in-memory pace's."""
    trace = answer_trace()
    assert sum(1 for status, _, _ in trace if status == 429) >= 10  # cuts to see
    expected, rates = await in_memory(trace)
    got, stored = await shared(pool, trace)
    assert {d[4] for d in expected} == {"startup", "resting", "probing"}
    for i, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"check {i}: {have} != {want}"
    assert stored == rates  # the rate each moment was spaced at, the same
