"""The sandbox's service limit (issue 40, item 5): a token bucket per API key, a cap in
flight, a limit that changes while it runs.

- the bucket alone, on a fake clock: rate, burst, refill, refusals that take nothing,
  a change of limit, keys apart, the cap in flight, the counts;
- the sandbox end to end: a burst beyond the bucket gets 429 with the limit's
  Retry-After (or none), refused requests spend no credit, ``sb.limits`` changes take
  effect at once, every request of a key counts (validation, mail, resources), and
  ``check_many`` against it gives every input one answer, never above the limit by more
  than the burst.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from typing import Any

import aiohttp
import pytest

import asyncsdk
from asyncsdk.testing import RateLimit, RateLimits, Sandbox, TokenBucket, VirtualClock

CHECK = "/api/v1/single/check"
#: So slow that no token comes back while a test runs: what a test sees is the burst.
FROZEN = 0.001


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limits_on(limit: RateLimit | None) -> tuple[RateLimits, FakeClock]:
    clock = FakeClock()
    return RateLimits(limit, clock=clock), clock


def admitted(limits: RateLimits, key: str, n: int) -> int:
    """How many of ``n`` requests of ``key`` at this moment are let through (each
    answered at once)."""
    passed = 0
    for _ in range(n):
        if limits.admit(key) is None:
            limits.release(key)
            passed += 1
    return passed


# --- the record ------------------------------------------------------------------------
@pytest.mark.parametrize(("fields", "field"), [
    ({"rate": -1, "burst": 1}, "rate"),
    ({"rate": float("inf"), "burst": 1}, "rate"),
    ({"rate": float("nan"), "burst": 1}, "rate"),
    ({"rate": "5", "burst": 1}, "rate"),
    ({"rate": 5, "burst": -1}, "burst"),
    ({"rate": 5, "burst": 0}, "burst"),  # a bucket that never holds a token
    ({"rate": 5, "burst": 10**400}, "burst"),  # more than a float holds
    ({"rate": 5, "burst": 2.5}, "burst"),
    ({"rate": 5, "burst": True}, "burst"),
    ({"rate": 5, "burst": 1, "retry_after": -0.5}, "retry_after"),
    ({"rate": 5, "burst": 1, "max_in_flight": 0}, "max_in_flight"),
])
def test_a_limit_out_of_range_is_refused_naming_its_field(
        fields: dict[str, Any], field: str) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match=f"^{field}: expected") as info:
        RateLimit(**fields)
    assert info.value.field == field


@pytest.mark.parametrize("wrong", [(500, 50), 500, "500/s", {"rate": 500, "burst": 50}])
def test_a_limit_that_is_no_rate_limit_is_refused_before_the_server_starts(
        wrong: object) -> None:
    """Taken, it would fail every request of the key with a 500, not the call that gave
    it."""
    with pytest.raises(asyncsdk.InvalidInputError, match=r"^rate_limit: expected") as info:
        Sandbox(rate_limit=wrong)  # type: ignore[arg-type]
    assert info.value.field == "rate_limit"
    limits, _ = limits_on(RateLimit(rate=1, burst=1))
    for key in (None, "k"):
        with pytest.raises(asyncsdk.InvalidInputError, match=r"^limit: expected") as info:
            limits.set(wrong, key=key)  # type: ignore[arg-type]
        assert info.value.field == "limit"
    with pytest.raises(asyncsdk.InvalidInputError, match=r"^limit: expected"):
        RateLimits(wrong)  # type: ignore[arg-type]
    assert admitted(limits, "k", 3) == 1  # the limit before stays


@pytest.mark.parametrize("key", ["", 5, b"key"])
def test_a_key_that_no_request_carries_is_refused(key: object) -> None:
    """A request without a key (or with an empty one) is never limited: a limit set for
    one would limit nothing."""
    limits, _ = limits_on(None)
    with pytest.raises(asyncsdk.InvalidInputError, match=r"^key: expected") as info:
        limits.set(RateLimit(rate=1, burst=1), key=key)  # type: ignore[arg-type]
    assert info.value.field == "key"
    assert limits.get() is None


def test_a_limit_is_a_frozen_value() -> None:
    limit = RateLimit(500, 50)
    assert limit == RateLimit(rate=500, burst=50, retry_after=1.0, max_in_flight=None)
    with pytest.raises(AttributeError):
        limit.rate = 1  # type: ignore[misc]


# --- the bucket alone, on a fake clock --------------------------------------------------
def test_a_bucket_starts_full_and_refills_at_its_rate_up_to_its_burst() -> None:
    bucket = TokenBucket(RateLimit(rate=10, burst=3), now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert not bucket.take(0.09)  # 0.9 of a token
    assert bucket.take(0.1)
    assert not bucket.take(0.1)
    assert [bucket.take(60.0) for _ in range(4)] == [True, True, True, False]  # not 600


def test_small_clock_steps_add_up_to_whole_tokens() -> None:
    """0.1 s steps summed in floats (0.7999... - 0.7 < 0.1): each still earns a token
    at 10 a second."""
    bucket = TokenBucket(RateLimit(rate=10, burst=1), now=0.0)
    now = 0.0
    assert bucket.take(now)
    for _ in range(30):
        now += 0.1
        assert bucket.take(now) and not bucket.take(now)


def test_a_refused_request_takes_nothing() -> None:
    limits, clock = limits_on(RateLimit(rate=4, burst=2, retry_after=0.5))
    assert admitted(limits, "k", 2) == 2
    for _ in range(50):  # a client that does not wait
        refusal = limits.admit("k")
        assert refusal is not None and refusal.reason == "rate"
        assert refusal.retry_after == 0.5
    clock.now += 0.25  # one token's time: one answered, as if nothing had been refused
    assert admitted(limits, "k", 5) == 1
    stats = limits.stats("k")
    assert (stats.answered, stats.refused, stats.refused_in_flight) == (3, 54, 0)


def test_keys_have_buckets_of_their_own() -> None:
    limits, _ = limits_on(RateLimit(rate=1, burst=2))
    assert admitted(limits, "a", 5) == 2
    assert admitted(limits, "b", 5) == 2  # a's empty bucket is not b's
    limits.set(RateLimit(rate=1, burst=4), key="c")
    assert admitted(limits, "c", 9) == 4
    assert limits.get("c") == RateLimit(rate=1, burst=4)
    assert limits.get("d") == limits.get() == RateLimit(rate=1, burst=2)


def test_a_limit_changed_while_running_applies_from_then_on() -> None:
    limits, clock = limits_on(RateLimit(rate=10, burst=10))
    assert admitted(limits, "k", 10) == 10
    clock.now += 0.5  # 5 tokens earned at the old rate
    limits.set(RateLimit(rate=1, burst=3))  # a smaller burst drops what is above it
    assert limits.tokens("k") == pytest.approx(3)
    assert admitted(limits, "k", 10) == 3
    clock.now += 1.0
    assert admitted(limits, "k", 10) == 1  # the new rate
    limits.set(RateLimit(rate=100, burst=50))  # a bigger burst is not a gift: earned
    assert admitted(limits, "k", 10) == 0
    clock.now += 0.05
    assert admitted(limits, "k", 10) == 5


def test_a_lifted_limit_answers_everything_and_a_new_one_starts_full() -> None:
    limits, _ = limits_on(RateLimit(rate=1, burst=1))
    assert admitted(limits, "k", 3) == 1
    limits.set(None)
    assert limits.tokens("k") is None
    assert admitted(limits, "k", 100) == 100
    limits.set(RateLimit(rate=1, burst=2))
    assert admitted(limits, "k", 3) == 2
    limits.set(None, key="k")  # this key unlimited, the others not
    assert admitted(limits, "k", 3) == 3 and admitted(limits, "other", 3) == 2


def test_the_cap_in_flight_refuses_without_retry_after_and_takes_no_token() -> None:
    limits, _ = limits_on(RateLimit(rate=FROZEN, burst=5, max_in_flight=2))
    assert limits.admit("k") is None and limits.admit("k") is None
    refusal = limits.admit("k")
    assert refusal is not None
    assert (refusal.reason, refusal.retry_after) == ("in_flight", None)
    assert limits.tokens("k") == pytest.approx(3)  # two taken, none by the refusal
    limits.release("k")
    assert limits.admit("k") is None  # a place freed
    stats = limits.stats("k")
    assert (stats.answered, stats.refused_in_flight, stats.in_flight,
            stats.max_in_flight) == (3, 1, 2, 2)


def test_never_above_the_limit_by_more_than_the_burst() -> None:
    """Requests at random moments, some held a while: over the run the answered never
    exceed burst + rate x time, and a greedy client gets that much."""
    rng = random.Random(7)
    limit = RateLimit(rate=50, burst=8, max_in_flight=6)
    limits, clock = limits_on(limit)
    held: list[float] = []
    for _ in range(5000):
        clock.now += rng.expovariate(400)
        while held and held[0] <= clock.now:
            held.pop(0)
            limits.release("k")
        if limits.admit("k") is None:
            held.append(clock.now + rng.uniform(0, 0.05))
            held.sort()
        stats = limits.stats("k")
        assert stats.first is not None
        assert stats.answered <= limit.burst + limit.rate * (clock.now - stats.first) + 1e-6
        assert stats.in_flight <= 6
    stats = limits.stats("k")
    assert stats.first is not None and stats.last is not None
    assert stats.answered >= 0.9 * limit.rate * (stats.last - stats.first)
    assert stats.refused > 0 and stats.refused_in_flight > 0


def test_counts_of_every_key_together_and_reset() -> None:
    limits, clock = limits_on(RateLimit(rate=1, burst=1))
    admitted(limits, "a", 3)
    clock.now += 5
    admitted(limits, "b", 2)
    total = limits.stats()
    assert (total.answered, total.refused, total.first, total.last) == (2, 3, 100.0, 105.0)
    assert limits.stats("nobody").answered == 0
    assert limits.admit("a") is None  # held
    limits.reset()  # full again, counts zero, the one in flight still counted
    assert limits.stats("a").answered == 0 and limits.stats("a").in_flight == 1
    assert admitted(limits, "a", 2) == 1


def test_another_thread_waits_while_a_request_is_decided() -> None:
    """The plugin's shared sandbox answers in a thread of its own while the test reads
    or changes ``sb.limits`` from another: that thread waits until the request being
    decided is (unlocked, ``stats()`` summed a dict a new key was being added to, and
    ``set``/``reset`` could interleave with a bucket's refill)."""
    limits, clock = limits_on(RateLimit(rate=1, burst=1))
    seen: list[bool] = []
    other = threading.Thread(target=lambda: seen.append(limits.stats().answered == 1))

    armed: list[bool] = []

    def reading() -> float:  # the clock is read while the request is decided
        if armed and not seen:
            other.start()
            other.join(0.05)  # the other thread holds no lock: it would be done by now
            seen.append(other.is_alive())
        return clock.now

    limits.use_clock(reading)
    armed.append(True)
    assert limits.admit("new key") is None
    other.join()
    assert seen == [True, True]  # it waited, and then saw the request decided


def test_a_clock_set_while_running_refills_from_its_own_now() -> None:
    """``sb.limits.use_clock(virtual.now)`` after requests on the system's clock: the buckets
    go on from the new clock's time (they waited for it to reach the old one's, hours
    away), keeping their tokens."""
    # A token per 100 s: on the system's clock, no stall of a loaded machine between
    # the admits (or before the change) refills one (at 10/s, 0.1 s did).
    limits = RateLimits(RateLimit(rate=0.01, burst=2))  # on time.monotonic
    assert admitted(limits, "k", 3) == 2
    virtual = VirtualClock()  # at 0.0
    limits.use_clock(virtual.now)
    assert limits.clock == virtual.now
    assert admitted(limits, "k", 1) == 0  # no token came with the change
    virtual.advance(100)
    assert admitted(limits, "k", 2) == 1
    virtual.advance(10_000)
    assert admitted(limits, "k", 3) == 2
    with pytest.raises(asyncsdk.InvalidInputError, match=r"^clock: expected"):
        limits.use_clock(5.0)  # type: ignore[arg-type]


async def test_the_limit_on_the_clients_virtual_clock_refills_as_it_waits() -> None:
    """One virtual clock for the client and the limit: the run waits for the tokens it
    needs in virtual time, and the limit's bound holds on it, with no real wait."""
    virtual = VirtualClock()
    limit = RateLimit(rate=10, burst=2, retry_after=0.5)
    async with Sandbox(rate_limit=limit) as sb:
        sb.limits.use_clock(virtual.now)
        async with sb.client(clock=virtual) as client:
            outcomes = [o async for o in client.validation.check_many(
                [f"u{i}@example.com" for i in range(12)])]
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok][:2]
    stats = sb.limits.stats(sb.api_key)
    assert stats.answered == 12
    assert stats.first is not None and stats.last is not None
    assert stats.last - stats.first >= (12 - limit.burst) / limit.rate - 1e-9


def test_the_repr_shows_no_key() -> None:
    limits, _ = limits_on(RateLimit(rate=1, burst=1))
    limits.set(RateLimit(rate=2, burst=2), key="sk_live_SECRET")
    admitted(limits, "sk_live_SECRET", 1)
    assert "SECRET" not in repr(limits)


# --- the sandbox end to end -------------------------------------------------------------
async def raw_check(sb: Sandbox, http: aiohttp.ClientSession, email: str,
                    key: str | None = None) -> tuple[int, str | None, Any]:
    """(status, Retry-After, JSON) of one check sent as is."""
    query = {"email": email, "timeout": "30", "api": key or sb.api_key,
             "username": "u2" if key else sb.username}
    async with http.get(sb.base_url + CHECK, params=query) as answer:
        return answer.status, answer.headers.get("Retry-After"), await answer.json()


@pytest.mark.parametrize(("retry_after", "header"), [(1.0, "1"), (0.25, "0.25"),
                                                     (None, None)])
async def test_a_burst_beyond_the_bucket_is_answered_429_and_spends_no_credit(
        retry_after: float | None, header: str | None) -> None:
    limit = RateLimit(rate=FROZEN, burst=3, retry_after=retry_after)
    async with Sandbox(rate_limit=limit, credit=10) as sb, aiohttp.ClientSession() as http:
        answers = await asyncio.gather(*(raw_check(sb, http, f"u{i}@example.com")
                                         for i in range(5)))
        assert sorted(status for status, _, _ in answers) == [200, 200, 200, 429, 429]
        refused = [a for a in answers if a[0] == 429]
        assert all(wait == header for _, wait, _ in refused)
        assert all(body == {"detail": "Request was throttled."} for _, _, body in refused)
        assert sb.state.accounts[sb.api_key].credit == 7  # the 429s spent nothing
        assert [r.status for r in sb.requests].count(429) == 2  # recorded as answered
        stats = sb.limits.stats(sb.api_key)
        assert (stats.answered, stats.refused) == (3, 2)


async def test_a_single_check_refused_is_a_rate_limit_error() -> None:
    limit = RateLimit(rate=FROZEN, burst=1, retry_after=2)
    async with Sandbox(rate_limit=limit) as sb, sb.client(max_retries=0) as client:
        await client.validation.check("ann@example.com")
        with pytest.raises(asyncsdk.RateLimitError) as info:
            await client.validation.check("bob@example.com")
    assert info.value.retry_after == 2


async def test_changes_of_sb_limits_take_effect_at_once() -> None:
    async with Sandbox(rate_limit=RateLimit(rate=FROZEN, burst=1)) as sb, \
            aiohttp.ClientSession() as http:
        sb.add_account("key-2", "u2")

        async def statuses(n: int, key: str | None = None) -> list[int]:
            return [(await raw_check(sb, http, "a@example.com", key))[0] for _ in range(n)]

        assert await statuses(2) == [200, 429]
        assert await statuses(2, "key-2") == [200, 429]  # a bucket of its own
        sb.limits.set(None)
        assert await statuses(3) == [200, 200, 200]
        sb.limits.set(RateLimit(rate=FROZEN, burst=2, retry_after=None))
        assert await statuses(3) == [200, 200, 429]
        sb.limits.set(RateLimit(rate=FROZEN, burst=5), key="key-2")
        assert await statuses(6, "key-2") == [200] * 5 + [429]
        assert await statuses(1) == [429]  # the primary key's limit did not move


async def test_every_request_of_a_key_counts_not_the_hosted_files() -> None:
    async with Sandbox(rate_limit=RateLimit(rate=FROZEN, burst=3), demo_data=True) as sb:
        url = sb.host_file("email\nann@example.com\n")
        async with sb.client(max_retries=0) as client:
            await client.contacts.list()
            await client.mail.send(sender="news@example.com", to="ann@example.org",
                                   subject="Hi", html="<p>Hi</p>")
            await client.validation.check("ann@example.com")
            with pytest.raises(asyncsdk.RateLimitError):
                await client.contacts.list()
        async with aiohttp.ClientSession() as http, http.get(url) as hosted:
            assert hosted.status == 200
    assert sb.limits.stats(sb.api_key).answered == 3
    assert sb.limits.stats().answered == 3  # the file's fetch was no key's


@pytest.mark.asyncsdk_sandbox(rate_limit=RateLimit(rate=FROZEN, burst=10, max_in_flight=2))
async def test_beyond_the_cap_in_flight_a_429_without_retry_after(sandbox: Sandbox) -> None:
    sandbox.faults.delay(CHECK, 3600.0, times=2)  # two checks held
    async with aiohttp.ClientSession() as http:
        held = [asyncio.ensure_future(raw_check(sandbox, http, f"h{i}@example.com"))
                for i in range(2)]
        while sandbox.limits.stats(sandbox.api_key).in_flight < 2:
            await asyncio.sleep(0.005)
        status, wait, _ = await raw_check(sandbox, http, "third@example.com")
        assert (status, wait) == (429, None)
        for task in held:
            task.cancel()
        await asyncio.gather(*held, return_exceptions=True)
    stats = sandbox.limits.stats(sandbox.api_key)
    assert (stats.answered, stats.refused_in_flight, stats.refused) == (2, 1, 0)


async def test_check_many_against_the_limit_answers_each_input_once() -> None:
    """A start-up window larger than the burst meets the limit whatever the machine's
    speed; every input is answered once, and the answers never run above the limit by
    more than the burst (the limit's own clock, so no wall-clock bound)."""
    limit = RateLimit(rate=300, burst=4, retry_after=0.05)
    inputs = [f"u{i}@example.com" for i in range(120)]
    async with Sandbox(rate_limit=limit) as sb:
        async with sb.client(max_retries=0) as client:
            outcomes = [o async for o in client.validation.check_many(inputs)]
        answered = Counter(r.query["email"] for r in sb.requests if r.status == 200)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok][:3]
    assert sorted(o.email for o in outcomes) == sorted(inputs)
    assert set(answered.values()) == {1} and len(answered) == 120
    stats = sb.limits.stats(sb.api_key)
    assert stats.refused > 0  # the limit was met: the path under test ran
    assert stats.first is not None and stats.last is not None
    assert stats.answered <= limit.burst + limit.rate * (stats.last - stats.first) + 1e-6


@pytest.mark.parametrize(("limit", "said"), [
    (RateLimit(500, 50), "500/s, burst 50, 429 with Retry-After: 1 s"),
    (RateLimit(2.5, 1, None, 8), "2.5/s, burst 1, 429 without Retry-After, at most 8 in flight"),
    (RateLimit(1234567, 5, 0.1234567), "1234567/s, burst 5, 429 with Retry-After: 0.1234567 s"),
    (None, None),
])
async def test_the_banner_says_the_limit(limit: RateLimit | None, said: str | None) -> None:
    async with Sandbox(rate_limit=limit) as sb:
        lines = [line for line in sb.banner().splitlines() if "rate limit" in line]
    assert lines == ([] if said is None else [f"  rate limit per API key: {said}"])


# --- the limit over HTTP (a sandbox served by the command line) -------------------------
async def put_limit(sb: Sandbox, http: aiohttp.ClientSession, body: str
                    ) -> tuple[int, Any]:
    async with http.put(sb.base_url + "/sandbox/limit", data=body) as answer:
        return answer.status, await answer.json()


async def test_the_limit_changes_over_http_from_the_next_request_on() -> None:
    async with Sandbox(rate_limit=RateLimit(rate=FROZEN, burst=1)) as sb, \
            aiohttp.ClientSession() as http:
        async with http.get(sb.base_url + "/sandbox/limit") as answer:
            assert await answer.json() == {"limit": {
                "rate": FROZEN, "burst": 1, "retry_after": 1.0, "max_in_flight": None}}
        assert (await raw_check(sb, http, "a@example.com"))[0] == 200
        assert (await raw_check(sb, http, "a@example.com"))[:2] == (429, "1")
        assert await put_limit(sb, http, "null") == (200, {"limit": None})
        assert [(await raw_check(sb, http, "a@example.com"))[0] for _ in range(3)] == [200] * 3
        status, said = await put_limit(sb, http, '{"rate": 0, "burst": 2, "retry_after": null}')
        assert status == 200 and said["limit"]["burst"] == 2
        assert sb.limits.get() == RateLimit(0, 2, None)
        answers = [await raw_check(sb, http, "a@example.com") for _ in range(3)]
        assert [a[:2] for a in answers] == [(200, None), (200, None), (429, None)]


@pytest.mark.parametrize(("body", "field"), [
    ('{"rate": -1, "burst": 1}', "rate"),
    ('{"rate": 5, "burst": 0}', "burst"),
    ('{"rate": 5}', "burst"),
    ('{"rate": 5, "burst": 1, "speed": 2}', "speed"),
    ('{"rate": "5", "burst": 1}', "rate"),
    ("[5, 1]", "limit"),
])
async def test_a_limit_refused_over_http_names_its_field_and_changes_nothing(
        body: str, field: str) -> None:
    async with Sandbox(rate_limit=RateLimit(rate=FROZEN, burst=1)) as sb, \
            aiohttp.ClientSession() as http:
        status, said = await put_limit(sb, http, body)
        assert status == 400 and said["field"] == field
        assert said["detail"].startswith(f"{field}: ")
        assert sb.limits.get() == RateLimit(rate=FROZEN, burst=1)
