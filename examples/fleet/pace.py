"""The fleet's shared pace: every worker's checks leave at one rate, kept in Redis.

Each worker process has one ``asyncsdk.Client``; its client paces its own checks, but N
clients on one key would each find a share of the limit, and each keep its own. So the
fleet runs ``check_many(adaptive=False)`` (no pace of the client's) and paces every
attempt itself, through an aiohttp middleware on the worker's session
(``SharedPace.middleware``): before a check is sent, one Lua script (``_SCRIPT``, one
round trip) reserves its moment on the fleet's GCRA schedule, one interval of the fleet's
rate after the moment reserved before it (jittered: never a wave), never before the
fleet's pause ends (``store.PAUSE_KEY``); the attempt then waits for it. N workers so
behave like one client, and keep in flight only what the pace allows (its rate times the
service's answer time): the rest wait for their moment, not at the service.

The rate is found as the library's pace finds it (``asyncsdk._core.rate``, in short):

* start-up: ``START`` sends a second, x``GROWTH`` every ``ROUND`` until the first 429;
* a 429 of a check sent after the last cut cuts the rate to ``BACKOFF`` x the rate the
  service takes from the fleet: the checks it answered between two of its 429s (counted
  by every worker, reported with its next call) over the time between them;
* it rests ``PLATEAU``, then probes: the rate raised by ``STEP``, then twice that, ...
  every ``PROBE_GAP``, until a 429 (a failed probe goes back to the rate before it);
* a 429 when no check of the fleet was answered for a second holds every worker for the
  wait the service asked for (the pause).

The time is Redis's own (``TIME``), one clock for every worker. Commands of Redis 6.2 and
older only (``TIME``, ``HMGET``, ``HSET``, ``PTTL``, ``SET PX``, ``PEXPIRE``, ``RPUSH``,
``LTRIM``, ``LRANGE``); the keys expire after ``IDLE_SECONDS`` unused, so an idle fleet
starts afresh.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from redis.asyncio import Redis

import asyncsdk

from .store import PAUSE_KEY

#: The pace's hash and its recent 429s (``moment:answered`` pairs).
PACE_KEY = "fleet:pace"
REFUSALS_KEY = "fleet:pace:refusals"
#: Only the checks are paced (jobs and their polls go as they come).
CHECK_PATH = "/api/v1/single/check"
#: An unused pace is forgotten after this long.
IDLE_SECONDS = 600
#: The most moments one call reserves for a worker's waiting checks, and how far ahead
#: (seconds; the script's ``HORIZON``, in microseconds).
MAX_BATCH = 32
HORIZON = 0.05

_SCRIPT = """
local START, GROWTH, ROUND = 100, 1.5, 50000
local BACKOFF, BLIND, YIELD = 0.97, 0.5, 0.9
local PLATEAU, SOON, PROBE_GAP, STEP, MAX_STEP = 3000000, 250000, 100000, 0.03, 0.5
local MEMORY, GAP, MIN_SPAN, MIN_ANSWERED = 1000000, 500000, 20000, 8
local STARVED, MAX_RATE, HORIZON = 1000000, 1000000, 50000
local mode, idle = ARGV[1], tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local f = redis.call('HMGET', KEYS[1], 'rate', 'tat', 'cut', 'probe', 'step', 'start',
                     'answered', 'answered_at', 'before', 'probing')
local rate, tat, cut = tonumber(f[1]) or 0, tonumber(f[2]) or 0, tonumber(f[3]) or 0
local probe, step = tonumber(f[4]) or 0, tonumber(f[5]) or STEP
local start = tonumber(f[6]) or now
local answered = (tonumber(f[7]) or 0) + tonumber(ARGV[2])
local answered_at = tonumber(f[8]) or 0
local before, probing = tonumber(f[9]) or 0, tonumber(f[10]) or 0
if tonumber(ARGV[2]) > 0 then answered_at = now end
local function fmt(x) return string.format('%.17g', x) end
local function starting(at) return math.min(MAX_RATE, START * GROWTH ^ ((at - start) / ROUND)) end
if cut == 0 then rate = starting(now) end

local function estimate()
  local entries = redis.call('LRANGE', KEYS[2], 0, -1)
  local span, got, last_t, last_a = 0, 0, nil, nil
  for _, entry in ipairs(entries) do
    local sep = string.find(entry, ':')
    local t, a = tonumber(string.sub(entry, 1, sep - 1)), tonumber(string.sub(entry, sep + 1))
    if now - t <= MEMORY then
      if last_t and t - last_t <= GAP then
        span, got = span + (t - last_t), got + (a - last_a)
      end
      last_t, last_a = t, a
    end
  end
  if span < MIN_SPAN or got < MIN_ANSWERED then return 0 end
  return got / span * 1000000
end

local result = {fmt(now)}
if mode == 'ready' then
  if cut > 0 and now >= probe then
    before, probing = rate, 1
    rate = rate * (1 + step)
    step, probe = math.min(2 * step, MAX_STEP), now + PROBE_GAP
  end
  local slot = math.max(now, tat)
  local held = redis.call('PTTL', KEYS[3])
  if held > 0 then slot = math.max(slot, now + held * 1000) end
  for i = 6, #ARGV do
    if i > 6 and slot > now + HORIZON then break end
    result[#result + 1] = fmt(slot)
    slot = slot + 1000000 / rate * tonumber(ARGV[i])
  end
  tat = slot
else
  local sent, wait = tonumber(ARGV[4]), tonumber(ARGV[5])
  redis.call('RPUSH', KEYS[2], fmt(now) .. ':' .. fmt(answered))
  redis.call('LTRIM', KEYS[2], -64, -1)
  redis.call('PEXPIRE', KEYS[2], idle)
  local found = estimate()
  if sent >= cut then
    if found > 0 then rate = BACKOFF * found
    elseif probing == 1 then rate = before
    elseif cut == 0 then rate = BLIND * starting(sent)
    else rate = YIELD * rate end
    cut, step, probing = now, STEP, 0
    probe = now + (found > 0 and PLATEAU or SOON)
  elseif found > 0 then
    rate, probe = BACKOFF * found, now + PLATEAU
  end
  if wait > 0 and now - answered_at > math.max(STARVED, wait * 1000) then
    if redis.call('PTTL', KEYS[3]) < wait then
      redis.call('SET', KEYS[3], '1', 'PX', wait)
    end
  end
end
redis.call('HSET', KEYS[1], 'rate', fmt(rate), 'tat', fmt(tat), 'cut', fmt(cut),
           'probe', fmt(probe), 'step', fmt(step), 'start', fmt(start),
           'answered', fmt(answered), 'answered_at', fmt(answered_at),
           'before', fmt(before), 'probing', probing)
redis.call('PEXPIRE', KEYS[1], idle)
return result
"""


def retry_after_ms(value: str | None) -> int:
    """A ``Retry-After`` in seconds as milliseconds; 0 when absent or not a number (an
    HTTP date counts as none: the pace then waits its own backoff)."""
    try:
        seconds = float(value) if value else 0.0
    except ValueError:
        return 0
    return max(0, int(seconds * 1000)) if seconds == seconds else 0


class SharedPace:
    """The fleet's pace in Redis (see the module docstring); one per worker process."""

    def __init__(self, redis: Redis, *, key: str = PACE_KEY, refusals_key: str = REFUSALS_KEY,
                 pause_key: str = PAUSE_KEY, rand: Callable[[], float] = random.random,
                 ) -> None:
        self.redis = redis
        self.keys = (key, refusals_key, pause_key)
        self.rand = rand
        self._script = redis.register_script(_SCRIPT)
        #: Checks of this worker answered (not 429) since its last call to the script.
        self._answered = 0
        #: Checks of this worker waiting for a moment; one call to Redis at a time.
        self._waiting: list[asyncio.Future[tuple[float, float]]] = []
        self._lock = asyncio.Lock()

    async def _call(self, mode: str, sent: str = "0", wait_ms: int = 0,
                    moments: int = 0) -> list[float]:
        """One run of the script: Redis's time then, and (``ready``) the ``moments``
        reserved (microseconds of Redis's clock)."""
        answered, self._answered = self._answered, 0
        jitters = [0.5 + self.rand() for _ in range(moments)]
        try:
            reply = await self._script(keys=self.keys, args=[
                mode, answered, IDLE_SECONDS * 1000, sent, wait_ms, *jitters])
        except BaseException:
            self._answered += answered  # reported with the next call
            raise
        return [float(value) for value in reply]

    async def ready(self) -> float:
        """Wait for this check's moment on the fleet's schedule; its moment (Redis's
        clock, microseconds) for ``refused``. The checks of this worker waiting at once
        are given their moments by one call (``MAX_BATCH`` at most)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            while not waiter.done():
                async with self._lock:
                    if not waiter.done():
                        await self._reserve()
        finally:
            if not waiter.done():
                self._waiting.remove(waiter)
        moment, local = waiter.result()
        delay = local - asyncio.get_running_loop().time()
        if delay > 0:
            await asyncio.sleep(delay)
        return float(moment)

    async def _reserve(self) -> None:
        """Reserve the moments of the checks waiting (in order), one call: those within
        ``HORIZON`` of now (one at least); the rest are reserved by a later call, made
        once the last moment given is near (the rate may have changed by then)."""
        batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
        try:
            now, *moments = await self._call("ready", moments=len(batch))
        except BaseException:
            self._waiting[:0] = batch
            raise
        self._waiting[:0] = batch[len(moments):]
        loop = asyncio.get_running_loop()
        here = loop.time()
        for waiter, moment in zip(batch, moments, strict=False):
            if not waiter.done():
                waiter.set_result((moment, here + (moment - now) / 1e6))
        if self._waiting:  # the lock is held: the next call waits until then
            await asyncio.sleep(max(0.0, (moments[-1] - now) / 1e6 - HORIZON / 2))

    def answered(self) -> None:
        """A check of this worker was answered (not 429)."""
        self._answered += 1

    async def refused(self, moment: float, wait_ms: int) -> None:
        """The check sent at ``moment`` got 429, asking to wait ``wait_ms`` (0: nothing)."""
        await self._call("refused", f"{moment:.0f}", wait_ms)

    async def rate(self) -> float:
        """The fleet's rate now (checks a second; 0.0 before its first check)."""
        value: Any = await self.redis.hget(self.keys[0], "rate")  # type: ignore[misc]
        return float(value) if value is not None else 0.0

    async def middleware(
        self, request: aiohttp.ClientRequest,
        handler: Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]],
    ) -> aiohttp.ClientResponse:
        """aiohttp client middleware: each check leaves at its moment, and its answer
        is told to the pace (the library's own middleware adds the credentials after
        this one: the pace never sees them)."""
        if request.url.path != CHECK_PATH:
            return await handler(request)
        moment = await self.ready()
        response = await handler(request)
        if response.status == 429:
            await self.refused(moment, retry_after_ms(response.headers.get("Retry-After")))
        else:
            self.answered()
        return response


def paced_client(pace: SharedPace, *, max_retries: int, max_connections: int,
                 ) -> tuple[asyncsdk.Client, aiohttp.ClientSession]:
    """A Client whose checks go at the fleet's pace: on a session of the worker's own
    with ``pace.middleware`` (the caller closes both: the client, then the session)."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_connections, limit_per_host=0),
        middlewares=(pace.middleware,))
    return asyncsdk.Client(max_retries=max_retries, session=session), session
