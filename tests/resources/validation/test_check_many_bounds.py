"""check_many's promises as properties, driven by a scripted ``check`` (no network): one
outcome per input, at most ``concurrency`` in flight, at most ``concurrency`` inputs read
ahead of the consumer whatever its pace, no task per check, errors of the run."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import pytest

import asyncsdk
from asyncsdk.models.validation import CheckResult
from asyncsdk.resources.validation.check_many import check_many

BOUND = 10


class Script:
    """A stand-in for ``Validation.check``: each check yields to the loop a random number
    of times, counts what is in flight, and can fail for chosen addresses."""

    def __init__(self, seed: int, fail: dict[str, Exception] | None = None) -> None:
        self.rng = random.Random(seed)
        self.fail = fail or {}
        self.now = self.peak = 0
        self.sent: list[str] = []
        self.tasks: set[asyncio.Task[Any]] = set()

    async def __call__(self, email: str, *, validity_timeout: float,
                       request_timeout: float | None) -> CheckResult:
        if not isinstance(email, str) or "@" not in email:
            raise asyncsdk.InvalidInputError(f"email: not an address: {email!r}",
                                             field="email")
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        self.sent.append(email)
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            for _ in range(self.rng.randrange(4)):
                await asyncio.sleep(0)
            if email in self.fail:
                raise self.fail[email]
            return CheckResult(email=email, status="success", result=asyncsdk.Verdict.VALID)
        finally:
            self.now -= 1


def run(script: Script, emails: Iterable[Any] | AsyncIterator[Any], concurrency: int,
        adaptive: bool = False) -> Any:
    return check_many(script, emails, concurrency=concurrency, adaptive=adaptive,
                      validity_timeout=30, request_timeout=None)


@pytest.mark.parametrize("seed", range(12))
async def test_one_outcome_per_input_bounded_in_flight_and_read_ahead(seed: int) -> None:
    rng = random.Random(seed)
    concurrency = rng.choice([1, 2, 3, 7, 16])
    count = rng.randrange(0, 120)
    inputs: list[Any] = [f"u{i}@example.com" for i in range(count)]
    for i in rng.sample(range(count), k=min(count, 5)):
        inputs[i] = rng.choice(["nope", 5, None])
    script = Script(seed)
    received: list[asyncsdk.CheckOutcome] = []
    read = 0

    def counted() -> Iterator[Any]:
        nonlocal read
        for value in inputs:
            read += 1
            # an input is read only while fewer than `concurrency` are unreceived
            assert read - len(received) <= concurrency
            yield value

    async def slow_source() -> AsyncIterator[Any]:
        for value in counted():
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            yield value

    async def consume() -> None:
        source = counted() if seed % 2 else slow_source()
        async for outcome in run(script, source, concurrency):
            received.append(outcome)
            for _ in range(rng.randrange(4)):  # a consumer of uneven pace
                await asyncio.sleep(0)

    await asyncio.wait_for(consume(), BOUND)
    assert sorted(o.email for o in received) == sorted(
        v if isinstance(v, str) else repr(v) for v in inputs)
    assert script.peak <= concurrency
    assert sorted(script.sent) == sorted(v for v in inputs if isinstance(v, str) and "@" in v)
    for outcome in received:
        assert outcome.ok == ("@" in outcome.email)
        assert outcome.ok or isinstance(outcome.error, asyncsdk.InvalidInputError)
    # checks run in a fixed pool of workers: no task per check
    assert len(script.tasks) <= concurrency


async def test_a_consumer_that_stops_taking_stops_the_reading() -> None:
    class Endless:
        """An endless input that counts what was read of it."""

        read = 0

        def __iter__(self) -> Endless:
            return self

        def __next__(self) -> str:
            self.read += 1
            return f"x{self.read}@example.com"

    source = Endless()
    it = run(Script(1), source, 8)
    first = await asyncio.wait_for(it.__anext__(), BOUND)
    assert first.ok
    for _ in range(50):  # the workers run freely while the consumer takes nothing
        await asyncio.sleep(0)
    assert source.read <= 1 + 8  # the one received, and 8 waiting or in flight
    await it.aclose()


async def test_an_unexpected_error_of_a_check_comes_after_the_others_outcomes() -> None:
    inputs = [f"u{i}@example.com" for i in range(6)]
    script = Script(2, fail={inputs[2]: ZeroDivisionError("bug")})
    received: list[str] = []

    async def consume() -> None:
        async for outcome in run(script, inputs, 6):
            received.append(outcome.email)

    with pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(consume(), BOUND)
    # every other check sent was delivered; nothing was sent after the error
    assert sorted(received) == sorted(e for e in script.sent if e != inputs[2])
    assert inputs[2] in script.sent


async def test_a_source_error_before_any_input_is_raised() -> None:
    def broken() -> Iterator[str]:
        raise LookupError("nothing to read")
        yield  # pragma: no cover

    with pytest.raises(LookupError):
        async for _ in run(Script(3), broken(), 4):
            pass


async def test_adaptive_limit_bounds_the_checks_in_flight() -> None:
    inputs = [f"u{i}@example.com" for i in range(60)]
    limited = asyncsdk.RateLimitError("slow down", operation="validation.check",
                                      status_code=429)
    script = Script(4, fail={e: limited for e in inputs[:8]})
    outcomes = [o async for o in run(script, inputs, 8, adaptive=True)]
    assert len(outcomes) == 60
    assert sum(isinstance(o.error, asyncsdk.RateLimitError) for o in outcomes) == 8
    assert script.peak <= 8
