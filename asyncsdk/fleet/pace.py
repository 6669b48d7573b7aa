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

* start-up: ``START`` sends a second, x``GROWTH`` every ``ROUND``, but never past
  ``START_GAIN`` x the rate the fleet was answered at in the rounds before last (time
  alone grew it into a flood while the batches were starting), and never back, until
  the first 429;
* a 429 of a check sent after the last cut (a new episode) cuts the rate to ``BACKOFF``
  x the rate the service takes from the fleet, found by send moments: the checks
  answered whose moment lies between the moments of two refused checks (at most
  ``GAP`` apart, none before the last probe began), over the time between those
  moments; but never below ``FLOOR`` x the rate the fleet was answered at over the last
  ``DELIVERY`` (what the service was seen to take), nor below half the rate refused
  (``BLIND``): a CPU stall then a burst makes brackets far too low. Later 429s of the
  episode's checks, and its answers told late, refine it;
* it rests ``PLATEAU`` (as the library's pace rests with ten checks in flight; only
  ``SOON`` unless the estimate counted ``SURE`` answers and is at least ``FAR`` x the
  rate answered), then probes while checks wait for the schedule: the rate raised by
  ``STEP``, then twice that, ... up to ``MAX_STEP``, every ``PROBE_GAP``, never past
  ``GAIN`` x the rate answered, until a 429 (a failed probe goes back to the rate
  before it). Every probe that finds the limit costs a few checks the service's
  ``Retry-After``: small steps make it few, and a long rest makes it rare;
* a 429 when no check of the fleet was answered for a second holds every worker for the
  wait the service asked for (the pause).

A check's moment is the one ``ready`` reserved for it, plus how late the worker's event
loop sent it; a worker tells the moments of its answered checks with its next call, a
refused check's at once. The time is Redis's own (``TIME``), one clock for every worker.
Commands of Redis 6.2 and older only (``TIME``, ``HMGET``, ``HSET``, ``PTTL``,
``SET PX``, ``PEXPIRE``, ``ZADD``, ``ZCOUNT``, ``ZRANGEBYSCORE``, ``ZREMRANGEBYSCORE``);
the keys expire after ``IDLE_SECONDS`` unused, so an idle fleet starts afresh.

What the worker uses of this module (and all a replacement must offer): the class
``SharedPace``, built once per worker process as ``SharedPace(redis)`` (the worker's
``redis.asyncio.Redis``), and its ``middleware`` (an aiohttp client middleware, put on
the worker's session by ``worker.paced_client``). The pause it honours is
``store.PAUSE_KEY``, set by the worker through ``store.FleetPace``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from redis.asyncio import Redis

from .store import PAUSE_KEY, answer

#: The pace's hash, and the send moments of its recent 429s and answered checks (sorted
#: sets, scored by moment).
PACE_KEY = "fleet:pace"
REFUSED_KEY = "fleet:pace:refused"
ANSWERED_KEY = "fleet:pace:answered"
#: Only the checks are paced (jobs and their polls go as they come).
CHECK_PATH = "/api/v1/single/check"
#: An unused pace is forgotten after this long.
IDLE_SECONDS = 600
#: The most moments one call reserves for a worker's waiting checks, and how far ahead
#: (seconds; the script's ``HORIZON``, in microseconds).
MAX_BATCH = 32
HORIZON = 0.05

# ARGV: mode, idle (ms), the refused moment, its wait (ms), n, n answered moments, the
# jitters of the moments to reserve.
_SCRIPT = """
local START, GROWTH, ROUND, GAIN, START_GAIN = 100, 1.5, 50000, 1.25, 2
local BACKOFF, BLIND, YIELD = 0.97, 0.5, 0.9
local PLATEAU, SOON, PROBE_GAP, STEP, MAX_STEP = 4000000, 250000, 100000, 0.03, 0.12
local MEMORY, GAP, MIN_SPAN, MIN_ANSWERED, SURE = 1000000, 500000, 20000, 8, 40
local STARVED, MAX_RATE, HORIZON = 1000000, 1000000, 50000
local DELIVERY, FLOOR, FAR = 500000, 0.8, 0.9
local mode, idle = ARGV[1], tonumber(ARGV[2])
local sent, wait, told = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local f = redis.call('HMGET', KEYS[1], 'rate', 'tat', 'cut', 'probe', 'step', 'start',
                     'answered_at', 'before', 'probing', 'since', 'floor')
local rate, tat, cut = tonumber(f[1]) or 0, tonumber(f[2]) or 0, tonumber(f[3]) or 0
local probe, step = tonumber(f[4]) or 0, tonumber(f[5]) or STEP
local start = tonumber(f[6]) or now
local answered_at = tonumber(f[7]) or 0
local before, probing, since = tonumber(f[8]) or 0, tonumber(f[9]) or 0, tonumber(f[10]) or 0
-- The current episode's floor (set at its cut, below): its rate is never estimated
-- lower, since a CPU stall then a burst makes a few brackets far below the service's.
local floor = tonumber(f[11]) or 0
local function fmt(x) return string.format('%.17g', x) end

local earliest = math.huge
if told > 0 then
  local entries = {}
  for i = 6, 5 + told do
    entries[#entries + 1] = ARGV[i]
    entries[#entries + 1] = ARGV[i]
    earliest = math.min(earliest, tonumber(ARGV[i]))
  end
  redis.call('ZADD', KEYS[4], unpack(entries))
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. fmt(now - MEMORY - GAP))
  redis.call('PEXPIRE', KEYS[4], idle)
  answered_at = now
end

-- The rate answered over ``span`` up to the last round (whose answers may be untold).
local function taken_over(span)
  local got = redis.call('ZCOUNT', KEYS[4], fmt(now - ROUND - span), '(' .. fmt(now - ROUND))
  return got * 1000000 / span
end
local function taken() return taken_over(3 * ROUND) end
-- Start-up: x GROWTH a ROUND, but never past GAIN x the rate answered (time alone grew
-- it into a flood of 429s), and never back (a lull in the answers is not the service).
local function starting(at)
  return math.min(MAX_RATE, START * GROWTH ^ ((at - start) / ROUND),
                  math.max(START, rate, START_GAIN * taken()))
end
if cut == 0 then rate = starting(now) end

-- Between two refused sends the service took what it refilled: the answered sends
-- between them. Not across a probe's start (``since``): below the limit the bucket
-- may have filled and wasted refills.
local function refusals()
  return redis.call('ZRANGEBYSCORE', KEYS[2], fmt(math.max(since, now - MEMORY)), '+inf')
end
local function estimate(refused)
  local span, got = 0, 0
  for i = 2, #refused do
    local d = tonumber(refused[i]) - tonumber(refused[i - 1])
    if d <= GAP then
      span = span + d
      got = got + redis.call('ZCOUNT', KEYS[4], '(' .. refused[i - 1], '(' .. refused[i])
    end
  end
  if span < MIN_SPAN or got < MIN_ANSWERED then return 0, SOON end
  -- Rest long only at a sure estimate: a stalled CPU may make one episode's low.
  return got / span * 1000000, got >= SURE and PLATEAU or SOON
end

-- Answers told late, of checks sent before the episode's last 429, complete its brackets.
if mode == 'ready' and told > 0 and cut > 0 and probing == 0 then
  local refused = refusals()
  if #refused >= 2 and earliest < tonumber(refused[#refused]) then
    local found, rest = estimate(refused)
    if found > 0 then
      rate, probe = math.max(floor, BACKOFF * found), math.max(probe, now + rest)
    end
  end
end

local result = {fmt(now)}
if mode == 'ready' then
  -- Probe only while checks wait for the schedule, and not past GAIN x the rate
  -- answered: raised while the fleet sent less, a rate meets the next batch untried.
  local top = cut > 0 and now >= probe and tat > now and math.min(MAX_RATE, GAIN * taken())
  if top and rate < top then
    if probing == 0 then since = math.max(now, tat) end
    before, probing = rate, 1
    rate = math.min(top, rate * (1 + step))
    step, probe = math.min(2 * step, MAX_STEP), now + PROBE_GAP
  end
  local slot = math.max(now, tat)
  local held = redis.call('PTTL', KEYS[3])
  if held > 0 then slot = math.max(slot, now + held * 1000) end
  for i = 6 + told, #ARGV do
    if i > 6 + told and slot > now + HORIZON then break end
    result[#result + 1] = fmt(slot)
    slot = slot + 1000000 / rate * tonumber(ARGV[i])
  end
  tat = slot
else
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. fmt(now - MEMORY))
  redis.call('PEXPIRE', KEYS[2], idle)
  local found, rest = estimate(refusals())
  if sent >= cut then
    -- Never below what the service was seen to take lately (a CPU stall then a burst
    -- makes brackets far too low), nor below half the rate refused.
    local delivered = taken_over(DELIVERY)
    floor = math.max(BLIND * rate, FLOOR * delivered)
    if found < FAR * delivered then rest = SOON end
    if found > 0 then rate = math.max(floor, BACKOFF * found)
    elseif probing == 1 then rate = before
    elseif cut == 0 then rate = BLIND * starting(sent)
    else rate = YIELD * rate end
    -- The checks given moments until now went at the rate refused: their 429s to come
    -- are this episode's.
    cut, step, probing = math.max(now, tat), STEP, 0
    probe = now + rest
  elseif found > 0 and probing == 0 then
    rate, probe = math.max(floor, BACKOFF * found), now + rest
  end
  if wait > 0 and now - answered_at > math.max(STARVED, wait * 1000) then
    if redis.call('PTTL', KEYS[3]) < wait then
      redis.call('SET', KEYS[3], '1', 'PX', wait)
    end
  end
end
redis.call('HSET', KEYS[1], 'rate', fmt(rate), 'tat', fmt(tat), 'cut', fmt(cut),
           'probe', fmt(probe), 'step', fmt(step), 'start', fmt(start),
           'answered_at', fmt(answered_at), 'before', fmt(before), 'probing', probing,
           'since', fmt(since), 'floor', fmt(floor))
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

    def __init__(self, redis: Redis, *, key: str = PACE_KEY, refused_key: str = REFUSED_KEY,
                 pause_key: str = PAUSE_KEY, answered_key: str = ANSWERED_KEY,
                 rand: Callable[[], float] = random.random) -> None:
        self.redis = redis
        self.keys = (key, refused_key, pause_key, answered_key)
        self.rand = rand
        self._script = redis.register_script(_SCRIPT)
        #: The moments of this worker's checks answered (not 429) since its last call.
        self._answered: list[str] = []
        #: Checks of this worker waiting for a moment; one call to Redis at a time.
        self._waiting: list[asyncio.Future[tuple[float, float]]] = []
        self._lock = asyncio.Lock()

    async def _call(self, mode: str, sent: str = "0", wait_ms: int = 0,
                    moments: int = 0) -> list[float]:
        """One run of the script: Redis's time then, and (``ready``) the ``moments``
        reserved (microseconds of Redis's clock)."""
        answered, self._answered = self._answered, []
        jitters = [0.5 + self.rand() for _ in range(moments)]
        try:
            reply = await self._script(keys=self.keys, args=[
                mode, IDLE_SECONDS * 1000, sent, wait_ms, len(answered), *answered,
                *jitters])
        except BaseException:
            self._answered[:0] = answered  # told with the next call
            raise
        return [float(value) for value in reply]

    async def ready(self) -> float:
        """Wait for this check's moment on the fleet's schedule; the moment it leaves
        (Redis's clock, microseconds: the one reserved, plus how late this event loop
        woke for it), for ``answered`` and ``refused``. The checks of this worker waiting
        at once are given their moments by one call (``MAX_BATCH`` at most)."""
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
        loop = asyncio.get_running_loop()
        delay = local - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        # A busy loop sends late, checks due over a stall at once: the bucket sees
        # those, and brackets by reserved moments found a fraction of its rate.
        return float(moment + max(0.0, loop.time() - local) * 1e6)

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

    def answered(self, moment: float) -> None:
        """The check sent at ``moment`` was answered (not 429): told with the next call."""
        self._answered.append(repr(moment))

    async def refused(self, moment: float, wait_ms: int) -> None:
        """The check sent at ``moment`` got 429, asking to wait ``wait_ms`` (0: nothing)."""
        await self._call("refused", repr(moment), wait_ms)

    async def rate(self) -> float:
        """The fleet's rate now (checks a second; 0.0 before its first check)."""
        value: Any = await answer(self.redis.hget(self.keys[0], "rate"))
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
            self.answered(moment)
        return response

