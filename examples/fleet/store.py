"""What the fleet keeps in Redis: one outcome per input, job handles, the shared pause.

Keys (``run`` and ``name`` are the producer's labels):

- ``fleet:{run}:outcomes`` hash: input index -> JSON outcome. Written with ``HSETNX`` as
  each outcome arrives, so the first stored outcome of an input is the only one.
- ``fleet:{run}:writes`` hash: worker pid -> outcomes it wrote, a duplicate attempt
  included (``HINCRBY`` in the same ``MULTI`` as the ``HSETNX``, so even a SIGKILL
  cannot split them): the sum equals the inputs exactly when nothing was stored twice.
- ``fleet:{run}:total``: how many inputs the producer enqueued.
- ``fleet:job:{name}`` / ``:rows`` / ``:state``: a validation job's ``to_dict()``, its
  result rows (row index -> JSON) and ``submitting`` / ``failed`` / ``done``.
- ``fleet:pause``: exists while the service asked the fleet to slow down; its TTL is the
  ``Retry-After`` the service gave. Every worker reads it before sending a check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from redis.asyncio import Redis

import asyncsdk

PAUSE_KEY = "fleet:pause"
#: The pause when a 429 came without a usable Retry-After.
DEFAULT_PAUSE_SECONDS = 1.0
#: Errors that are the address's own outcome; any other error is retried with the batch.
FINAL_ERRORS = (asyncsdk.InvalidInputError, asyncsdk.InvalidEmailError)


def outcomes_key(run: str) -> str:
    """The hash of a run's outcomes (input index -> JSON)."""
    return f"fleet:{run}:outcomes"


def writes_key(run: str) -> str:
    """The hash of how many outcomes each worker pid stored for a run."""
    return f"fleet:{run}:writes"


def total_key(run: str) -> str:
    """How many inputs the producer enqueued for a run."""
    return f"fleet:{run}:total"


def job_key(name: str) -> str:
    """A validation job's saved ``to_dict()`` (JSON)."""
    return f"fleet:job:{name}"


def is_final(outcome: asyncsdk.CheckOutcome) -> bool:
    """True when ``outcome`` is the address's answer: a result, or a fault of the address.

    A rate limit, a connection failure, a 5xx, an authentication or credit failure says
    nothing about the address: the input is left unstored and checked again later.
    """
    return outcome.ok or isinstance(outcome.error, FINAL_ERRORS)


def encode_outcome(index: int, outcome: asyncsdk.CheckOutcome, by: int) -> str:
    """The stored JSON of one outcome (``by``: the worker's pid, for accounting)."""
    result = outcome.result
    error = outcome.error
    return json.dumps({
        "i": index,
        "email": outcome.email,
        "ok": outcome.ok,
        "verdict": None if result is None else str(result.result),
        "role": None if result is None else result.role,
        "error": None if error is None else f"{type(error).__name__}: {error}",
        "by": by,
    })


class OutcomeStore:
    """A run's outcomes in Redis: at most one per input index."""

    def __init__(self, redis: Redis, run: str) -> None:
        self.redis = redis
        self.run = run

    async def stored(self, indices: Iterable[int]) -> set[int]:
        """Which of ``indices`` already have an outcome."""
        wanted = list(indices)
        if not wanted:
            return set()
        values = await self.redis.hmget(outcomes_key(self.run), [str(i) for i in wanted])
        return {i for i, value in zip(wanted, values, strict=True) if value is not None}

    async def put(
        self, index: int, outcome: asyncsdk.CheckOutcome, by: int, pace: FleetPace
    ) -> float:
        """Store the outcome of input ``index`` unless one is there.

        Returns:
            ``pace.remaining()``, read in the same round trip (one ``MULTI``).
        """
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(outcomes_key(self.run), str(index), encode_outcome(index, outcome, by))
            pipe.hincrby(writes_key(self.run), str(by), 1)
            pipe.pttl(pace.key)
            _, _, ms = await pipe.execute()
        return int(ms) / 1000 if int(ms) > 0 else 0.0

    async def count(self) -> int:
        """How many inputs have an outcome."""
        return int(await self.redis.hlen(outcomes_key(self.run)))

    async def all(self) -> dict[int, dict[str, Any]]:
        """Every stored outcome, by input index."""
        raw = await self.redis.hgetall(outcomes_key(self.run))
        return {int(k): json.loads(v) for k, v in raw.items()}


class FleetPace:
    """A pause shared by every worker: one Redis key whose TTL is the service's wish.

    Nothing more than ``SET NX PX`` (the first worker to hear "slow down" starts the
    pause), ``PEXPIRE GT`` (a longer wish extends it, a shorter one never shortens it) and
    ``PTTL`` before each send.
    """

    def __init__(self, redis: Redis, key: str = PAUSE_KEY) -> None:
        self.redis = redis
        self.key = key

    async def pause(self, seconds: float | None) -> None:
        """Ask the whole fleet to send nothing for ``seconds`` (None: the default)."""
        ms = max(1, int(1000 * (seconds if seconds and seconds > 0 else DEFAULT_PAUSE_SECONDS)))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.key, "1", px=ms, nx=True)
            pipe.pexpire(self.key, ms, gt=True)
            await pipe.execute()

    async def remaining(self) -> float:
        """Seconds left of the current pause (0.0 when there is none)."""
        ms = int(await self.redis.pttl(self.key))
        return ms / 1000 if ms > 0 else 0.0
