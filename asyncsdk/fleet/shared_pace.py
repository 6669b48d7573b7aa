"""The fleet's pace: every worker's checks leave at one rate, found by one machine.

N worker processes on one API key must behave like one client. Each runs the library's
own rate finder (``asyncsdk.pacing.RateFinder``, the machine ``check_many`` drives in
memory), and all of them feed theirs the same events in the same order, so they all
make the same decisions (a replicated state machine; the finder is deterministic).
``SharedPace`` is a ``asyncsdk.pacing.SendPolicy``: a worker gives it to
``check_many(pace=...)``, which asks it before every send and tells it every answer
(the seam the client's own pace sits behind; no middleware, no session of its own).

* **one stream of events** (a Redis stream, ``XADD ... MAXLEN ~``): what every worker's
  checks did, each event once, in one order: a moment reserved (``sent``), a send that
  had to wait for the schedule (``held_back``), and what came back (``answered``,
  ``refused``, ``failed``, with their times). A worker tells its answers with its next
  call (a refusal at once), and before it reserves a moment it reads every event since
  the last one it applied (``XRANGE`` with an exclusive start, Redis 6.2) and feeds its
  finder, in stream order;
* **one small Lua script** (``_SCRIPT``) appends the events and only stores and hands
  out the schedule: the next free moment, the end of a hold, and the rate (written by
  the workers after they applied the events: the same value from each, the newest
  wins). A moment is one interval after the last one reserved, jittered as the
  library's pace jitters it (``PaceConstants.jitter_low``/``jitter_width``), never
  before a hold ends; a reservation that cannot meet its caller's deadline reserves
  nothing (issue 38: a check that cannot meet its deadline takes no place);
* **one clock**: Redis's ``TIME`` for every worker (a worker converts with the largest
  offset its replies gave over the last second: a late reply gives a low one). An
  answer is timed as its moment plus the time since it on the worker's own loop, so
  the answer times the window is sized on are exact. The seam's times (``admit``'s
  deadline, ``held_until``) are on the client's clock (``engine_clock``): converted
  just before each reservation, once the offset is fresh.

A 429 re-spaces the schedule from its moment at the new rate, as the library's pace
does (but after the last moment already handed out, if that is later: another worker's
check may hold it), and a check whose moment was reserved before a 429 its worker has
heard of since gives that moment back and takes a new one, as the library's pace
re-spaces its waiting checks. A 429 while nothing sent lately was answered holds every
worker for the wait the service asked for (the fleet's pause key, also read by the
workers between batches). The machine's window bounds the fleet's checks in flight
and waiting for their moment, as it bounds a client's: a worker reserves only while
the sends its machine knows unanswered leave room (its own answers free room at once,
the others' once they are told: within ``flush_seconds``, and it looks again every
``poll_seconds``), and one call reserves at most one answer time ahead (the rest of
the window is for the checks in flight); a killed worker's sends count until the
machine forgets them (``send_memory_seconds``).

A worker that joined after the stream was trimmed (or missed events) runs its machine
from what is left: it decides nearly, not exactly, as the others, so its rate is written
only when no worker that saw every event wrote one lately. An unused pace is forgotten
after ``idle_seconds`` (its keys expire; a new generation starts afresh).

Commands of Redis 6.2 and older only (``TIME``, ``HGET``, ``HMGET``, ``HSET``,
``HINCRBY``, ``XADD``, ``XRANGE``, ``DEL``, ``PTTL``, ``SET PX``, ``PEXPIRE``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import attrs
from redis.asyncio import Redis

from asyncsdk.pacing import DEFAULT_CONSTANTS, Admission, PaceConstants, RateFinder

from .store import PAUSE_KEY  # the fleet's pause: a key whose time to live is the hold

__all__ = ["PACE_KEY", "PAUSE_KEY", "Reservation", "SharedPace"]

#: The pace's hash (its schedule, rate, generation); its event stream is ``<key>:events``.
PACE_KEY = "fleet:pace"

# KEYS: the pace's hash, its stream, the pause key.
# ARGV: mode ('sync', 'reserve', 'refused'), now ('': Redis's TIME), idle (ms), the
# stream's length, the caller's generation and last event id, k, k events to append;
# then the mode's own (see ``_Script``). Replies start with now and the generation.
_SCRIPT = """
local function num(s)
  if s == 'inf' then return math.huge elseif s == '-inf' then return -math.huge end
  return tonumber(s)
end
local function fmt(x)
  if x == math.huge then return 'inf' elseif x == -math.huge then return '-inf' end
  return string.format('%.17g', x)
end
local clock = redis.call('TIME')
local real = ARGV[2] == ''
local now = real and tonumber(clock[1]) + tonumber(clock[2]) / 1000000 or num(ARGV[2])
local idle, length, last = tonumber(ARGV[3]), ARGV[4], ARGV[6]
local gen = redis.call('HGET', KEYS[1], 'gen')
if not gen then  -- a new pace (or one forgotten): a new generation, no events
  gen = clock[1] .. '.' .. clock[2]
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'gen', gen, 'seq', 0)
end
redis.call('PEXPIRE', KEYS[1], idle)
local reply = {fmt(now), gen}
if ARGV[5] ~= gen then return reply end  -- the caller's machine is of another one
local k = tonumber(ARGV[7])
for i = 8, 7 + k do
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', length, '*', 'e', ARGV[i], 'n', seq)
end
redis.call('PEXPIRE', KEYS[2], idle)
local a = 8 + k
local mode = ARGV[1]
if mode == 'sync' then
  local start = last == '' and '-' or '(' .. last
  local entries = redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', ARGV[a])
  for _, entry in ipairs(entries) do
    reply[#reply + 1] = entry[1]
    reply[#reply + 1] = entry[2][2]
    reply[#reply + 1] = entry[2][4]
  end
  return reply
end

-- The schedule's rate: the caller's (its machine applied events up to ARGV[a + 1]) if
-- it is the newest of a machine that saw every event (ARGV[a + 2] = 1), or if none
-- such wrote one lately; else the one stored.
local f = redis.call('HMGET', KEYS[1], 'rate', 'rate_id', 'rate_full', 'rate_at', 'tat',
                     'hold', 'last')
local function newer(x, y)
  local xm, xs = string.match(x, '(%d+)-(%d+)')
  local ym, ys = string.match(y, '(%d+)-(%d+)')
  xm, xs, ym, ys = tonumber(xm), tonumber(xs), tonumber(ym), tonumber(ys)
  return xm > ym or (xm == ym and xs >= ys)
end
local rate, full = num(f[1]), tonumber(ARGV[a + 2])
if not rate or now - num(f[4]) > tonumber(ARGV[a + 3]) or
    (full >= tonumber(f[3]) and newer(ARGV[a + 1], f[2])) then
  rate = num(ARGV[a])
  redis.call('HSET', KEYS[1], 'rate', ARGV[a], 'rate_id', ARGV[a + 1], 'rate_full', full,
             'rate_at', fmt(now))
end
local tat, hold = num(f[5]) or 0, num(f[6]) or 0
local low, width = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
a = a + 6

if mode == 'refused' then
  -- ARGV[a]: a jitter; ARGV[a + 1]: the hold asked (seconds, 0: none). The schedule
  -- starts again one interval of the new rate after now, or after the last moment
  -- handed out if that is later (another worker's check holds it).
  local last = num(f[7]) or 0
  tat = math.max(now, last) + (low + tonumber(ARGV[a]) * width) / rate
  local held = tonumber(ARGV[a + 1])
  if held > 0 then
    hold = math.max(hold, now + held)
    local ms = math.ceil(held * 1000)
    if real and redis.call('PTTL', KEYS[3]) < ms then
      redis.call('SET', KEYS[3], '1', 'PX', ms)
    end
  end
  redis.call('HSET', KEYS[1], 'tat', fmt(tat), 'hold', fmt(hold))
  return reply
end

-- 'reserve': ARGV[a], ARGV[a + 1]: the horizon, the room left in the window; then n,
-- n deadlines, n jitters. Reply: now, gen, the hold's end, how many callers were
-- considered (the rest: beyond now + horizon, or no room), then (i, moment, id) for
-- each moment reserved, in order.
local horizon, room = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
local n = tonumber(ARGV[a + 2])
-- The room the caller saw, less what others reserved since it looked.
for _, entry in ipairs(redis.call('XRANGE', KEYS[2], last == '' and '-' or '(' .. last, '+')) do
  if string.sub(entry[2][2], 1, 1) == 's' then room = room - 1 end
end
if real then
  local left = redis.call('PTTL', KEYS[3])
  if left > 0 then hold = math.max(hold, now + left / 1000) end
end
reply[#reply + 1] = fmt(hold)
reply[#reply + 1] = n
local used, noted, last = 0, false, num(f[7]) or 0
for i = 1, n do
  local at = math.max(now, tat, hold)
  if used >= room or (i > 1 and at > now + horizon) then reply[4] = i - 1 break end
  if at < num(ARGV[a + 2 + i]) then
    used = used + 1
    tat, last = at + (low + tonumber(ARGV[a + 2 + n + used]) * width) / rate, at
    if at > now and not noted then
      noted = true
      local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
      redis.call('XADD', KEYS[2], 'MAXLEN', '~', length, '*', 'e', 'h ' .. fmt(now), 'n', seq)
    end
    local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
    local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', length, '*', 'e', 's ' .. fmt(at),
                          'n', seq)
    reply[#reply + 1] = i
    reply[#reply + 1] = fmt(at)
    reply[#reply + 1] = id
  end
end
redis.call('HSET', KEYS[1], 'tat', fmt(tat), 'hold', fmt(hold), 'last', fmt(last))
return reply
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _fmt(value: float) -> str:
    """A float as the script reads it back exactly (``repr``; infinity as ``inf``)."""
    return "inf" if value == math.inf else repr(value)


def _retrieved(task: asyncio.Task[Any]) -> None:
    """A task of ours whose caller left: its error is known (its events stay in the
    outbox), never reported as unretrieved."""
    if not task.cancelled():
        task.exception()


@attrs.frozen
class Reservation:
    """What ``SharedPace.admit`` gives: a moment reserved on the fleet's schedule (the
    fleet's clock) and its ``sent`` event's id in the stream, for ``report``; ``local``:
    the same moment on this worker's loop clock, as its wait began (nan: not known);
    ``heard``: the 429s this worker had heard of when it was reserved (one heard since
    voids it)."""

    at: float
    send: str
    local: float = math.nan
    heard: int = 0  # the 429s this worker had heard of when it was reserved


class _ClockOffset:
    """The fleet's clock (Redis's ``TIME``) minus this loop's, from the replies: each
    sample (the reply's time less the loop's as the reply arrives) is low by that
    reply's delay, never high, so the largest of the last ``memory`` seconds is the
    truest. The last sample alone moved by the delays (up to 16 ms on a busy machine):
    answer times timed across two samples came out shorter than the service's own, and
    the window sized on them held the fleet at 0.6-0.8 R."""

    __slots__ = ("_memory", "_samples")

    def __init__(self, memory: float = 1.0) -> None:
        self._memory = memory
        self._samples: deque[tuple[float, float]] = deque()  # (loop time, sample), the
        # samples falling: the first is the largest

    def add(self, fleet_now: float, loop_now: float) -> float:
        """Take one reply's sample; the offset now."""
        samples, sample = self._samples, fleet_now - loop_now
        while samples and samples[-1][1] <= sample:
            samples.pop()
        samples.append((loop_now, sample))
        while samples[0][0] < loop_now - self._memory:
            samples.popleft()
        return samples[0][1]


class _Replica:
    """This worker's copy of the machine and where it stands in the stream: the finder,
    the generation it belongs to, the last event applied, and whether it saw every
    event of the generation (only then does it decide exactly as the others)."""

    __slots__ = ("finder", "full", "generation", "last_id", "last_sent", "sends", "seq")

    #: The most sends awaiting their answer remembered (a killed worker's never come).
    MAX_SENDS = 1 << 16

    def __init__(self, constants: PaceConstants, generation: str = "") -> None:
        self.finder = RateFinder(constants)
        self.generation = generation
        self.last_id = ""
        self.seq = 0
        self.full = True
        self.last_sent = -math.inf
        self.sends: dict[str, int] = {}  # a sent event's id -> the finder's send number

    def apply(self, entries: Sequence[tuple[str, str, int]]) -> None:
        """Feed the finder these events of the stream, in order."""
        for event_id, event, seq in entries:
            self.full = self.full and seq == self.seq + 1
            self.seq, self.last_id = seq, event_id
            kind, *fields = event.split()
            if kind == "s":
                self._sent(event_id, float(fields[0]))
            elif kind == "h":
                self.finder.held_back(float(fields[0]))
            else:
                self._answer(kind, fields)

    def _sent(self, event_id: str, at: float) -> None:
        # The schedule's moments only grow (one clock); this keeps the finder's
        # send times in order even if a clock stepped back.
        self.last_sent = at = max(at, self.last_sent)
        sends = self.sends
        sends[event_id] = self.finder.sent(at)
        if len(sends) > 2 * self.MAX_SENDS:
            self.sends = dict(list(sends.items())[-self.MAX_SENDS:])

    def _answer(self, kind: str, fields: list[str]) -> None:
        number = self.sends.pop(fields[0], None)
        if number is None:  # sent before this machine's first event: not known
            return
        if kind == "f":
            self.finder.failed(number)
            return
        at, now = float(fields[1]), float(fields[2])
        if kind == "a":
            self.finder.answered(number, at, now)
        else:
            self.finder.refused(number, at, now)


class SharedPace:
    """The fleet's pace (see the module docstring); one per worker process, a
    ``SendPolicy`` for ``check_many(pace=...)``.

    ``admit(deadline)`` waits for a check's moment (None: not before ``deadline``; then
    nothing was reserved), ``report(admission, status, retry_after)`` says what came of
    it (``tell``: the same, awaited until a refusal is applied). ``engine_clock``: the
    ``now`` of the clock of the client whose checks it paces, on which ``admit``'s
    deadline and ``held_until`` are (default: ``time.monotonic``, a ``Client``'s
    without ``clock=``; with ``clock``, that one). ``clock`` and ``sleep`` (tests)
    replace Redis's time and the loop's waits: a fake clock for every worker; ``rand``
    draws the jitters (the same source as an in-memory pace's gives the same
    moments)."""

    def __init__(self, redis: Redis, *, constants: PaceConstants = DEFAULT_CONSTANTS,
                 key: str = PACE_KEY, pause_key: str = PAUSE_KEY,
                 rand: Callable[[], float] = random.random,
                 clock: Callable[[], float] | None = None,
                 engine_clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 idle_seconds: float = 600.0, stream_length: int = 100_000,
                 horizon_seconds: float = 0.05, max_batch: int = 32,
                 stale_seconds: float = 1.0, flush_seconds: float = 0.002,
                 poll_seconds: float = 0.005) -> None:
        self.redis = redis
        self.constants = constants
        self.keys = (key, f"{key}:events", pause_key)
        self._script = redis.register_script(_SCRIPT)
        self._rand = rand
        self._clock = clock
        self._engine_now = engine_clock or clock or time.monotonic
        self._sleep = sleep
        self._settings = (int(idle_seconds * 1000), stream_length)
        self._horizon = horizon_seconds
        self._max_batch = max_batch
        self._stale = stale_seconds
        self._flush_seconds = flush_seconds
        self._poll_seconds = poll_seconds
        self._room = asyncio.Event()  # set when this worker hears of an answer
        self._replica = _Replica(constants)
        self._offset = 0.0  # the fleet's clock minus this loop's (``_ClockOffset``)
        self._offsets = _ClockOffset()
        self._heard = 0  # the 429s of the fleet this worker's machine applied
        self._outbox: list[str] = []  # events told with the next call
        self._jitters: deque[float] = deque()  # drawn, not used yet (in order)
        self._hold = -math.inf  # the fleet's hold's end, as the last reservation saw it
        # (a check's future, its deadline on the client's clock)
        self._waiting: list[tuple[asyncio.Future[Reservation | None], float]] = []
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refusals: set[asyncio.Task[Any]] = set()  # reported, not yet applied
        self._reserver: asyncio.Task[None] | None = None
        self._flusher: asyncio.Task[None] | None = None

    # --- what a worker calls -----------------------------------------------------------
    @property
    def finder(self) -> RateFinder:
        """This worker's copy of the fleet's machine."""
        return self._replica.finder

    def now(self) -> float:
        """The fleet's clock (Redis's time, or the test's)."""
        if self._clock is not None:
            return self._clock()
        return asyncio.get_running_loop().time() + self._offset

    @property
    def held_until(self) -> float:
        """When the fleet's hold ends, as this worker last saw it (the client's clock;
        past: none)."""
        return self._hold - self.now() + self._engine_now()

    def resends_free(self, status: int) -> bool:
        """A 429: "not processed, come back later", as in the client's own pace."""
        return status == 429

    async def admit(self, deadline: float = math.inf) -> Reservation | None:
        """Wait for this check's moment on the fleet's schedule (the checks of this
        worker waiting at once are given theirs by one call, ``max_batch`` at most);
        None when it could not be before ``deadline`` (the client's clock,
        ``engine_clock``: then nothing was reserved). A caller that leaves before its
        moment tells it unused."""
        while True:
            admission = await self._reserved(deadline)
            if admission is None:
                return None
            try:
                delay = admission.at - self.now()
                if self._clock is None:  # its answer is timed on this loop's clock
                    admission = attrs.evolve(
                        admission, local=asyncio.get_running_loop().time() + delay)
                if delay > 0:
                    await self._sleep(delay)
            except BaseException:
                self._tell_later(f"f {admission.send}")
                raise
            if admission.heard == self._heard:
                return admission
            # A 429 was heard while it waited: its moment was spaced at the rate before
            # the cut. It is given back and a new one reserved, as the library's pace
            # re-spaces its waiting sends (sent at the old rate, each refused one cut
            # again: 5 cuts of 10 % in a row, traced).
            self._tell_later(f"f {admission.send}")

    async def _reserved(self, deadline: float) -> Reservation | None:
        """This check's place in the next reservation (None: not before ``deadline``)."""
        waiter: asyncio.Future[Reservation | None] = (
            asyncio.get_running_loop().create_future())
        self._waiting.append((waiter, deadline))
        self._kick()
        return await waiter

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        """What came of ``admission``'s check: an answer's ``status`` (None: no answer);
        for a 429, ``retry_after`` is the wait the service asked (None: it said nothing).
        A refusal is told at once (it cuts the rate and re-spaces the schedule, in a
        task of ours that the next reservation waits for: the lock is first come, first
        served), the rest with this worker's next call."""
        refusal = self._told(cast(Reservation, admission), status, retry_after)
        if refusal is not None:
            task = self._spawn(refusal)
            self._refusals.add(task)
            task.add_done_callback(self._refusals.discard)

    async def settled(self) -> None:
        """Return once every refusal reported so far is applied in Redis (its hold, the
        fleet's pause key, set): what a worker reads next sees it."""
        if self._refusals:
            await asyncio.wait(list(self._refusals))

    async def tell(self, admission: Reservation, status: int | None,
                   retry_after: float | None) -> None:
        """``report``, returning once a refusal is applied in Redis (its error, if
        Redis failed, raised here)."""
        refusal = self._told(admission, status, retry_after)
        if refusal is not None:
            await asyncio.shield(self._spawn(refusal))

    def _told(self, admission: Reservation, status: int | None, retry_after: float | None,
              ) -> Callable[[], Awaitable[Any]] | None:
        """Put ``admission``'s event in the outbox; a refusal's work to do at once."""
        if status is None:
            self._tell_later(f"f {admission.send}")
            return None
        now = self._answered_at(admission)
        kind = "r" if status == 429 else "a"
        event = f"{kind} {admission.send} {_fmt(admission.at)} {_fmt(now)}"
        if status != 429:
            self._tell_later(event)
            return None
        self._outbox.append(event)
        self._room.set()
        return lambda: self._refused(now, retry_after)

    def _answered_at(self, admission: Reservation) -> float:
        """Now, on the fleet's clock, as ``admission``'s moment plus the time since it
        on this loop's clock: its answer time is exact, whatever the offset did since."""
        if math.isnan(admission.local):
            return self.now()
        return admission.at + (asyncio.get_running_loop().time() - admission.local)

    async def catch_up(self) -> None:
        """Tell this worker's events now and apply every event of the fleet told so
        far: ``finder`` then stands where the fleet's machine does."""
        await self._shielded(self._sync)

    async def rate(self) -> float:
        """The fleet's rate now, as stored (checks a second; 0.0 before its first)."""
        value: Any = await self.redis.hget(self.keys[0], "rate")  # type: ignore[misc]
        return float(_text(value)) if value is not None else 0.0

    async def aclose(self) -> None:
        """Tell this worker's last events and stop its own tasks (a worker's shutdown;
        the pace's state stays in Redis for the others)."""
        for task in (self._reserver, self._flusher):
            if task is not None and not task.done():
                task.cancel()
        await asyncio.gather(*(t for t in (self._reserver, self._flusher) if t),
                             *self._tasks, return_exceptions=True)
        for waiter, _ in self._waiting:
            if not waiter.done():
                waiter.set_exception(RuntimeError("the fleet's pace was closed"))
        self._waiting = []
        if self._outbox:
            await self._shielded(self._sync)

    # --- the calls to Redis ------------------------------------------------------------
    def _shielded(self, work: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
        """Run ``work`` under the lock, in a task of ours that a caller's cancellation
        does not stop (its events and reply are never half applied)."""
        return asyncio.shield(self._spawn(work))

    def _spawn(self, work: Callable[[], Awaitable[Any]]) -> asyncio.Task[Any]:
        """``work`` under the lock, in a task of ours (``aclose`` waits for it; its
        error is retrieved: its events stay in the outbox)."""
        async def locked() -> Any:
            async with self._lock:
                return await work()

        task = asyncio.get_running_loop().create_task(locked())
        self._tasks.add(task)
        task.add_done_callback(_retrieved)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _call(self, mode: str, extra: Sequence[str | float] = (),
                    now: float | None = None) -> list[str] | None:
        """One run of the script, telling the events of the outbox; its reply as text.
        None: the pace is of another generation than this worker's machine, which is
        made afresh (the script did nothing: the events were of the old one)."""
        events, self._outbox = self._outbox, []
        if now is None and self._clock is not None:
            now = self._clock()
        replica = self._replica
        try:
            raw = await self._script(keys=self.keys, args=[
                mode, "" if now is None else _fmt(now), *self._settings,
                replica.generation, replica.last_id, len(events), *events, *extra])
        except BaseException:
            self._outbox[:0] = events
            raise
        reply = [_text(value) for value in raw]
        if self._clock is None:
            self._offset = self._offsets.add(float(reply[0]),
                                             asyncio.get_running_loop().time())
        if reply[1] != replica.generation:
            self._replica = _Replica(self.constants, reply[1])
            return None
        return reply

    async def _sync(self) -> None:
        """Tell this worker's events, and apply every new event of the stream."""
        page = 1000
        while True:
            reply = await self._call("sync", [page])
            if reply is None:
                continue
            entries = [(reply[i], reply[i + 1], int(reply[i + 2]))
                       for i in range(2, len(reply), 3)]
            self._replica.apply(entries)
            self._heard += sum(1 for _, event, _ in entries if event.startswith("r "))
            if len(entries) < page:
                return

    def _rate_args(self) -> list[str | float]:
        replica, c = self._replica, self.constants
        return [_fmt(replica.finder.rate), replica.last_id or "0-0", int(replica.full),
                self._stale, c.jitter_low, c.jitter_width]

    async def _refused(self, now: float, retry_after: float | None) -> None:
        """A 429: the finder cuts (after every event before it is applied); the
        schedule is re-spaced from ``now`` at the new rate, and held for the wait asked
        if nothing sent lately was answered."""
        await self._sync()
        finder = self._replica.finder
        within = max(self.constants.starved_within_seconds, retry_after or 0.0)
        hold = retry_after if retry_after and finder.starved(now, within) else 0.0
        jitter = self._jitter(1)[0]
        at = now if self._clock is not None else None  # else Redis's own time
        if await self._call("refused", [*self._rate_args(), jitter, hold], at) is None:
            self._jitters.appendleft(jitter)  # a new generation: nothing to re-space

    def _jitter(self, count: int) -> list[float]:
        jitters = self._jitters
        while len(jitters) < count:
            jitters.append(self._rand())
        return [jitters.popleft() for _ in range(count)]

    # --- reserving moments -------------------------------------------------------------
    def _kick(self) -> None:
        if self._reserver is None or self._reserver.done():
            self._reserver = asyncio.get_running_loop().create_task(self._reserve_all())

    async def _reserve_all(self) -> None:
        """Reserve the moments of the checks waiting, in order, a batch a call: those
        within ``_lead()`` of now (one at least); the rest by a later call, made
        once the last moment given is near (the rate may have changed by then)."""
        while True:
            self._waiting = [(w, d) for w, d in self._waiting if not w.done()]
            batch = self._waiting[:self._max_batch]
            if not batch:
                return
            try:
                last = await self._shielded(functools.partial(self._reserve, batch))
            except Exception as error:  # every check waiting hears it
                for waiter, _ in batch:
                    if not waiter.done():
                        waiter.set_exception(error)
                continue
            if last is None:  # the window is full
                await self._wait_for_room()
                continue
            left = last - self.now() - self._lead() / 2
            if left > 0 and any(not w.done() for w, _ in self._waiting):
                await self._sleep(left)

    async def _reserve(self, batch: list[tuple[asyncio.Future[Reservation | None], float]],
                       ) -> float | None:
        """One reservation for ``batch`` (after every event so far is applied), within
        the room the window leaves: each waiter reserved for gets its admission, one
        whose deadline cannot be met gets None; the rest stay waiting. The last moment
        reserved; None when the window left no room."""
        self._room.clear()  # an answer heard from now on may make room
        await self._sync()
        finder = self._replica.finder
        room = max(0, math.ceil(finder.window) - finder.unanswered())
        jitters = self._jitter(len(batch))
        # The client's deadlines on the fleet's clock (the offset fresh from the sync).
        shift = 0.0 if self._engine_now is self._clock else self.now() - self._engine_now()
        reply = await self._call("reserve", [
            *self._rate_args(), self._lead(), room, len(batch),
            *(_fmt(deadline + shift) for _, deadline in batch), *jitters])
        if reply is None:  # a new generation: nothing reserved, try again
            self._jitters.extendleft(reversed(jitters))
            return -math.inf
        self._hold = float(reply[2])
        considered = int(reply[3])
        if not considered:
            self._jitters.extendleft(reversed(jitters))
            return None
        given = {int(reply[i]): Reservation(float(reply[i + 1]), reply[i + 2],
                                            heard=self._heard)
                 for i in range(4, len(reply), 3)}
        self._jitters.extendleft(reversed(jitters[len(given):]))
        for index, (waiter, deadline) in enumerate(batch[:considered], 1):
            admission = given.get(index)
            self._waiting.remove((waiter, deadline))
            if waiter.done():  # left while its moment was reserved: unused
                if admission is not None:
                    self._tell_later(f"f {admission.send}")
            else:
                waiter.set_result(admission)
        return max((a.at for a in given.values()), default=-math.inf)

    def _lead(self) -> float:
        """How far ahead one call reserves: ``horizon_seconds``, at most one answer time
        (the window is ``window_gain`` x rate x answer time: the moments held ahead, like
        the library's waiting sends, leave the rest of it to the checks in flight and
        the answers not told yet). A 50 ms lead against 20 ms answers filled the window
        with moments ahead: the fleet sent at 0.4-0.65 of its own rate (traced)."""
        finder = self._replica.finder
        return min(self._horizon,
                   finder.window / (self.constants.window_gain * finder.rate))

    async def _wait_for_room(self) -> None:
        """Until this worker hears of an answer, or ``poll_seconds`` (another's)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._room.wait(), self._poll_seconds)

    # --- telling later -----------------------------------------------------------------
    def _tell_later(self, event: str) -> None:
        """``event`` goes with this worker's next call, or within ``flush_seconds``
        if none comes (the other machines wait for it: an unanswered send bounds
        what their estimate may count)."""
        self._outbox.append(event)
        self._room.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        # Until the outbox is empty: an event told while a flush was on its way (its call
        # had taken the outbox) waited for a next call, which a quiet worker never makes.
        while self._outbox:
            await asyncio.sleep(self._flush_seconds)
            if not self._outbox:
                return
            try:
                await self._shielded(self._sync)
            except Exception:
                # Redis unreachable: the events stay in the outbox, told with the next
                # call (whose caller hears the error).
                return
