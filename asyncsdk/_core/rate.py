"""Finding the rate a service takes, from the answers to what was sent (``RateFinder``).

A pace spaces the sends of bulk work at ``rate`` and keeps at most ``window`` of them in
flight; this module decides both, from every attempt's answer: answered (the service
took it) or refused with 429 (it did not: "come back later"). It knows no area, no
operation and no clock of its own: every event comes with its times.

**One machine, deterministic.** ``RateFinder`` is a pure state machine: its decisions
are a function of its ``PaceConstants`` and of the events it was given, in order, with
their times; nothing inside reads a clock or draws a random number. Two finders fed the
same events decide the same, to the last bit: ``check_many``'s pace (``_core.pace``)
drives one in memory, and every worker of a fleet drives its own copy with the fleet's
one ordered stream of events, so all of them decide alike (a replicated state machine;
``asyncsdk.fleet.shared_pace``). The public names are in ``asyncsdk.pacing``.

A service that limits a rate (a token bucket, GCRA: R requests a second, a burst of B)
says nothing while it has tokens, and answers 429 once it has none. Two refused sends
bracket the service's refills: between them it took what it refilled, R per second
(give or take one), whatever was sent in between and whoever else spends the same key.
So the rate it takes *from this client* is the answered sends between refused ones,
divided by the time between them (``_estimate_at``): exact while the bucket stayed
below its burst, never too high. In flight follows: ``window`` ~ 2 x rate x the shortest
answer time (BBR's "in flight ~ rate x round trip", with room for jitter).

The phases (``Phase``), in the spirit of BBR's modes:

* ``STARTUP``: nothing known. ``start_window`` attempts go at once; then, like TCP's
  slow start, each answered one widens the window (x ``start_growth`` a round trip, or
  a ``growth_round_seconds`` where round trips are shorter), the sends paced at
  ``start_gain`` x window / round trip, until the first 429 (the service's burst hides
  its rate until then).
* the **cut** (from any phase to ``RESTING``): the first 429 of an episode (a refused
  send made after the last cut) sets the rate to ``backoff_share`` x the service's
  rate as estimated (or ``blind_backoff_share`` x the rate sent at, when no estimate is
  possible yet: the next episode brings one). Later refusals of sends made before the
  cut, or within ``cut_settle_seconds`` after it (the bucket it found empty has refilled
  nothing yet), belong to the same episode: they refine the estimate, never cut again.
* **a cap on checks in flight**, learnt as a window (no phase of its own). A cap of c
  refuses only a send made with c or more others in flight; a rate limit refuses at
  any count. The start-up's first sends leave at once (before any answer), so the
  count is all that differs between them: a 429 of one of them, with at least
  ``min_window`` of those made with it held by the service (not refused; they reach
  it in any order), is a cap of that many (or a burst below the first window). The
  window becomes the cap (the fewest counted over those 429s) and the rate is not
  cut: it paces above the cap (``window_gain`` x cap / the shortest round trip, and
  no rate probes), so that the window, not the rate, holds back. A window full at the
  cap widens by one a ``probe_gap_seconds`` after the cap was found (twice as much
  each gap without a 429: a lifted cap, or a small burst taken for a cap, is left
  fast); a 429 of a send made with the window full sets the cap to its count (found
  twice the same, the next widening waits a rest); a 429 with room below the cap is a
  rate's: the cap is forgotten, the rate falls to what was answered lately, and the
  episode is cut as a rate's. Simulated, a cap of 8 reaches 0.95 of what it lets
  through with 0.9 % of requests 429 (before: 0.70 and 6.4 %: after the start-up the
  cap was taken for a rate). A cap met only after the start-up (one above its first
  window) is still taken for a rate: its 429s come at a count that grew with time, as
  a rate limit's do while the rate climbs (read as a cap, a drop of the limit to R/3
  fell from 0.95 to 0.86 R, simulated).
* ``DARK``: a 429 while nothing sent in the last ``dark_after_seconds`` was answered
  (and the pace has sent that long): the service takes nothing at all (a blackout), so
  its refusals say nothing of its rate: no estimate, no cut (the driver's hold waits
  what the service asked). The first answer after it resumes at ``backoff_share`` x the
  ``peak`` found before it (the start-up again if none was) and probes soon: the
  blackout's first second, still answered from the bucket's last tokens, read as a
  falling limit and left the rate at a quarter of it (0.54 s back to 0.9 R, simulated).
* ``RESTING``: nothing is learnt while no 429 comes, so after a rest (long for a big
  share of the service, short for a small one, and short after an episode this pace
  did not cause, far below the ``peak`` (the highest rate lately found), or while the
  estimate is not sure: too few answers, or below ``far_share`` x the rate answers came
  at lately) the next send held back by the pacer starts the probes.
* ``PROBING``: a step every ``probe_gap_seconds``, each twice the last (at most
  ``near_probe_step`` near the peak, where the bucket's burst hides the limit and a fast
  climb overshoots), until a 429 cuts back to ``RESTING``, at most at the last step
  that stood a probe gap without one. Brackets never span the start of a probe: below
  the limit the bucket may have filled and wasted refills. A probe that fails costs a
  refusal or two, and a refusal costs its check the wait the service asks for: a rate
  that holds rests long. Near the end of the inputs (the driver says so: those left
  take less than ``no_probe_before_end_seconds`` at the rate, or the wait the service
  last asked), a probe climbs no higher than ``backoff_share`` x the estimate (one
  above it falls back to the step that stood), unless the rate is far below the peak:
  a 429 there would hold its check past the end of the run.

Several processes on one key that share no state each find their own share (what the
service takes from them): an episode one of them causes by probing makes the others
yield (``yield_share``), and a small share probes sooner and in steps of at least
``probe_sends_per_round_trip`` (the same for every client of the service), so the shares
converge.
"""

from __future__ import annotations

import enum
import itertools
import math
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import Callable

import attrs

from .._errors import InvalidInputError

__all__ = ["PaceConstants", "Phase", "RateFinder"]


class Phase(enum.Enum):
    """What the finder is doing (see the module docstring)."""

    #: Nothing known yet: the window grows with every answer until the first 429.
    STARTUP = "startup"
    #: After a cut: the rate holds at what the service was found to take.
    RESTING = "resting"
    #: The rate is raised step by step to find whether the service takes more.
    PROBING = "probing"
    #: The service takes nothing (a blackout): refusals teach nothing until an answer.
    DARK = "dark"


@attrs.frozen(kw_only=True)
class PaceConstants:
    """The constants of the pace, each a reason of the design (the module docstring
    tells the machine they drive). One record for every driver: ``check_many``'s pace
    and the fleet's shared one take theirs from the same instance, so they cannot drift.
    Times are seconds; a "share" is a fraction of a rate."""

    # --- the start-up ---------------------------------------------------------------
    #: Attempts sent at once before anything is known (the service's burst takes them).
    start_window: int = 16
    #: The window grows this much a ``growth_round_seconds`` (at most doubling in one
    #: round trip): TCP's slow start, fast enough to find a big service in a few rounds.
    start_growth: float = 1.5
    #: The round of that growth where round trips are shorter than it.
    growth_round_seconds: float = 0.05
    #: Start-up sends are spaced at this multiple of window / round trip: the window,
    #: not the spacing, is what holds them back.
    start_gain: float = 2.0

    # --- the cut --------------------------------------------------------------------
    #: After a 429, this share of the rate the service was found to take: a little
    #: below it, so its bucket refills and the next sends find tokens.
    backoff_share: float = 0.97
    #: Without an estimate yet (the start-up's first 429), this share of the rate sent
    #: at: the next episode brings an estimate.
    blind_backoff_share: float = 0.5
    #: An episode this pace did not cause (another client on the key, or a lower
    #: limit), or one with nothing to show the rate: at most this share of the rate.
    yield_share: float = 0.9
    #: A 429 within this long of this pace's own cut or probe is of its own making.
    own_episode_seconds: float = 0.5
    #: A 429 of a send made this soon after the cut is still the cut's episode: the
    #: first sends after it find the bucket empty (it refilled nothing yet), so their
    #: refusals refine the estimate and do not cut again (each new episode without an
    #: estimate cut 10 %: two processes fell from 451 to 197/s in 70 ms, simulated).
    cut_settle_seconds: float = 0.005

    # --- the dark (a blackout) --------------------------------------------------------
    #: A 429 when nothing sent within this long was answered (after sending this long)
    #: means the service takes nothing: its refusals are no estimate of a rate (read as
    #: one, a blackout cut the rate to a quarter), and the first answer resumes near the
    #: peak. Longer than a round trip of any service the pace serves.
    dark_after_seconds: float = 1.0

    # --- the rest and the probes ----------------------------------------------------
    #: An estimate below this share of the peak (or of the rate answers came at
    #: lately) is far from the limit: the probes come soon, and climb fast.
    far_share: float = 0.8
    #: The short rest: after an unsure estimate, far below the peak, or another's episode.
    soon_probe_seconds: float = 0.25
    #: The longest rest, at a sure estimate near the peak (a probe costs 429s).
    longest_rest_seconds: float = 4.0
    #: The rest a send in flight at the rate (a big share rests long, a small one
    #: probes soon: the shares of several clients converge).
    rest_per_send_in_flight_seconds: float = 0.4
    #: A probe's step stands this long without a 429 before the next.
    probe_gap_seconds: float = 0.1
    #: The first probe's step, a share of the rate (each next one twice the last).
    first_probe_step: float = 0.03
    #: The largest step far below the peak (a limit restored: climb fast).
    far_probe_step: float = 0.5
    #: The largest step near the peak, where the bucket's burst hides the limit and a
    #: fast climb overshoots (its flood of 429s costs their waits and skews the estimate).
    near_probe_step: float = 0.12
    #: Every step adds at least this many sends a round trip: the same for every client
    #: of the service, so a small share grows faster than a big one.
    probe_sends_per_round_trip: float = 0.5
    #: How long an estimate is remembered as the peak.
    peak_memory_seconds: float = 10.0
    #: Near the end of the inputs no probe climbs above what the service was found to
    #: take: once those not yet sent take less than this at the rate, or less than the
    #: wait the service last asked. A probe's 429 there would wait past the end of the
    #: run, for a few percent of a second's rate.
    no_probe_before_end_seconds: float = 1.0

    # --- the estimate ---------------------------------------------------------------
    #: Answers over this long are the rate the service was seen to take lately.
    delivery_seconds: float = 0.5
    #: Refused sends this recent bracket the service's refills.
    estimate_memory_seconds: float = 2.0
    #: Two refused sends at most this far apart bracket refills ...
    bracket_gap_seconds: float = 1.0
    #: ... or this many sends at the current rate apart (a slow service).
    bracket_gap_sends: int = 10
    #: The brackets of this last while alone are used where they are sure, or differ
    #: from all of them by more than ``limit_change_share`` (the limit changed).
    recent_brackets_seconds: float = 0.25
    limit_change_share: float = 0.2
    #: An estimate needs brackets covering this long ...
    estimate_needs_seconds: float = 0.02
    #: ... and this many answered sends (also the fewest answers a delivered rate needs).
    estimate_needs_answers: int = 8
    #: With this many answered sends an estimate is sure (one more or less is a few
    #: percent) and the rate rests long at it.
    sure_answers: int = 40
    #: Two episodes' estimates within this share of each other are as sure as one long one.
    agree_share: float = 0.05

    # --- in flight ------------------------------------------------------------------
    #: The fewest attempts in flight, whatever the rate.
    min_window: int = 4
    #: In flight: this many times rate x shortest answer time (room for jitter).
    window_gain: float = 2.0
    #: What is kept of the sends, for the estimate.
    send_memory_seconds: float = 2.0
    #: How long the shortest answer time is kept before a longer one replaces it.
    round_trip_memory_seconds: float = 10.0
    #: The shortest answer time counted (a clock's resolution).
    shortest_round_trip_seconds: float = 1e-4

    # --- the schedule: the drivers' (the finder knows none) ----------------------------
    #: One interval of the schedule is ``(jitter_low + u x jitter_width) / rate``, u
    #: uniform in [0, 1): half to one and a half of 1 / rate, so that waiting senders
    #: leave one by one, never in a wave.
    jitter_low: float = 0.5
    jitter_width: float = 1.0
    #: A 429 while nothing sent within this long (or the wait asked, if longer) was
    #: answered means the service takes nothing: every sender is held for the wait.
    starved_within_seconds: float = 1.0
    #: After such a hold, unpaced senders leave spread over this share of it ...
    hold_spread_share: float = 0.5
    #: ... and over this long at most.
    max_hold_spread_seconds: float = 1.0

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(type(self)):
            _check_constant(field.name, getattr(self, field.name), field.type)


#: The constants that are shares of a rate at most (a cut never raises it).
_AT_MOST_ONE = frozenset({"backoff_share", "blind_backoff_share", "yield_share",
                          "far_share"})


def _check_constant(name: str, value: object, kind: object) -> None:
    """A clear error for a constant that would make no sense: not a finite number above
    zero (a whole one for counts; at most 1 for a share a cut takes)."""
    whole = kind in (int, "int")
    if (isinstance(value, bool) or not isinstance(value, int if whole else (int, float))
            or not math.isfinite(value) or value <= 0):
        what = "a whole number" if whole else "a finite number"
        raise InvalidInputError(f"PaceConstants.{name} must be {what} above 0, "
                                f"not {value!r}", field=name)
    if name in _AT_MOST_ONE and value > 1:
        raise InvalidInputError(f"PaceConstants.{name} must be at most 1, not {value!r}",
                                field=name)


#: What came of a send (``PENDING`` until its answer).
PENDING, ANSWERED, REFUSED, FAILED = 0, 1, 2, 3


class _Sends:
    """The recent sends: their times, what came of them and how many others were in
    flight (unanswered) when each left (plain numbers: nothing for the collector), kept
    ``memory`` seconds. Send number ``base + i`` is at ``i``; the kept ones start at
    ``start``: the forgotten ones before it are dropped in one go once they are half
    the lists (dropping each as it aged moved the whole lists once a send: 0.1 MB at
    6,000 sends a second)."""

    __slots__ = ("base", "counts", "memory", "pending", "start", "states", "times")

    def __init__(self, memory: float) -> None:
        self.memory = memory
        self.times: list[float] = []
        self.states = bytearray()
        self.counts: list[int] = []
        self.base = 0  # the number of the send at index 0
        self.start = 0  # the index of the first send kept
        self.pending = 0  # the kept sends still ``PENDING``

    def add(self, now: float) -> int:
        times = self.times
        number = self.base + len(times)
        times.append(now)
        self.states.append(PENDING)
        self.counts.append(self.pending)
        self.pending += 1
        start, forget = self.start, now - self.memory
        if times[start] < forget:  # those made before ``forget`` are forgotten
            old = bisect_left(times, forget, start)
            self.pending -= self.states.count(PENDING, start, old)
            self.start = old
            if 2 * old >= len(times):
                self._drop_forgotten()
        return number

    def _drop_forgotten(self) -> None:
        old = self.start
        del self.times[:old]
        del self.states[:old]
        del self.counts[:old]
        self.base += old
        self.start = 0

    def mark(self, send: int, state: int) -> None:
        at = send - self.base
        if at >= len(self.times) or isinstance(send, bool) or not isinstance(send, int):
            raise InvalidInputError(f"send: expected the number of a send that was made "
                                    f"(sent() returns it), got {send!r}", field="send")
        if at >= self.start:
            if self.states[at] == PENDING:
                self.pending -= 1
            self.states[at] = state

    def unanswered(self) -> int:
        return self.pending

    def held_until(self, at: float) -> int:
        """How many of the sends made ``at`` or before were not refused (nor failed)."""
        states, start = self.states, self.start
        end = bisect_right(self.times, at, start)
        return (end - start - states.count(REFUSED, start, end)
                - states.count(FAILED, start, end))

    def in_flight_at(self, send: int) -> int | None:
        """How many other sends were unanswered when ``send`` left (None: forgotten)."""
        at = send - self.base
        return self.counts[at] if at >= self.start else None

    def answered_since(self, since: float) -> bool:
        """Whether a send made ``since`` then or later was answered."""
        return self.states.find(ANSWERED, bisect_left(self.times, since, self.start)) >= 0

    def bracketed(self, refused: list[float], widest: float,
                  since: float) -> tuple[tuple[float, int], tuple[float, int]]:
        """The time between consecutive refused sends at most ``widest`` apart, and the
        answered sends between them: of every such pair, and of those made ``since``
        then or later (one pass, each sum in the same order as alone); only up to the
        first send still unanswered (what is not known yet would count as not taken)."""
        times, states, start = self.times, self.states, self.start
        pending = states.find(PENDING, start)
        known = math.inf if pending < 0 else times[pending]
        span = recent_span = 0.0
        answered = recent_answered = 0
        for a, b in itertools.pairwise(refused):
            if b - a <= widest and b <= known:
                count = states.count(ANSWERED, bisect_right(times, a, start),
                                     bisect_left(times, b, start))
                span += b - a
                answered += count
                if a >= since:
                    recent_span += b - a
                    recent_answered += count
        return (span, answered), (recent_span, recent_answered)


class RateFinder:
    """The rate and the window of one pace, found from its answers (see the module).

    Give it every event, in order: ``sent`` when an attempt leaves, then ``answered``,
    ``refused`` or ``failed`` with the number ``sent`` returned; ``held_back`` when a
    send had to wait for the pacer. Read ``rate``, ``window``, ``estimate`` and
    ``phase``. Deterministic: the same events give the same decisions."""

    __slots__ = ("_answers", "_before", "_cap", "_cap_at", "_cap_found", "_cap_step",
                 "_ceiling", "_constants", "_contended", "_cut_at", "_first_answer",
                 "_first_sent", "_growth", "_growth_rtt", "_peak", "_peak_at", "_probe_at",
                 "_refused", "_rtt", "_rtt_at", "_sends", "_step", "_sure", "estimate",
                 "phase", "rate", "window")

    def __init__(self, constants: PaceConstants | None = None) -> None:
        if constants is not None and not isinstance(constants, PaceConstants):
            raise InvalidInputError(f"constants: expected a PaceConstants, got "
                                    f"{type(constants).__name__}", field="constants")
        c = self._constants = constants if constants is not None else DEFAULT_CONSTANTS
        #: Where the machine is (see ``Phase``).
        self.phase = Phase.STARTUP
        #: Sends a second the pacer spaces paced attempts at (unpaced until a round
        #: trip is known).
        self.rate = math.inf
        #: The most paced attempts in flight.
        self.window: float = c.start_window
        #: The rate the service was last found to take from this pace (0.0: not yet).
        self.estimate = 0.0
        self._sends = _Sends(c.send_memory_seconds)
        self._refused: list[float] = []  # send times of refused sends, in order
        self._answers: deque[float] = deque()  # when answers came (``delivery_seconds``)
        self._rtt = math.inf  # the shortest answer time lately, and when it was seen
        self._rtt_at = -math.inf
        self._growth_rtt = -1.0  # the round trip the start-up's growth was computed for
        self._growth = 1.0
        # The current episode: its cut, the most its rate may be, whether another
        # client made it, whether its estimate is sure.
        self._cut_at = -math.inf
        self._ceiling = math.inf
        self._contended = False
        self._sure = False
        self._peak = 0.0  # the highest estimate lately, and when it was last near
        self._peak_at = -math.inf
        self._probe_at = math.inf  # when the rest ends
        self._step = c.first_probe_step  # the next probe's step
        self._before = 0.0  # the rate before the probes since the last cut
        self._first_sent = math.inf  # when the first send left (the dark needs as long)
        # A cap on checks in flight, learnt as a window (inf: none known): the most in
        # flight; when it is next widened, by how much; the cap last found by a 429.
        self._cap = math.inf
        self._cap_at = math.inf
        self._cap_step = 1
        self._cap_found = math.inf
        self._first_answer = math.inf  # when the start-up's first answer came

    @property
    def constants(self) -> PaceConstants:
        """The constants this finder decides by."""
        return self._constants

    @property
    def starting(self) -> bool:
        """True in the start-up (until the first 429): the window still grows blindly."""
        return self.phase is Phase.STARTUP

    @starting.setter
    def starting(self, value: bool) -> None:
        # Tests start a finder past its start-up, at a rate they set.
        if value:
            self.phase = Phase.STARTUP
        elif self.phase is Phase.STARTUP:
            self.phase = Phase.RESTING

    # --- the events ------------------------------------------------------------------
    def sent(self, now: float) -> int:
        """An attempt leaves now: its number, for ``answered``, ``refused``, ``failed``."""
        if now < self._first_sent:
            self._first_sent = now
        sends = self._sends
        if sends.pending >= self._cap - 1 and now >= self._cap_at:
            self._widen(now)  # the window is full at the cap: does it take one more?
        return sends.add(now)

    def held_back(self, now: float, ending: Callable[[float], bool] | None = None) -> None:
        """A send had to wait for the pacer: the rate, not the demand, is the limit now;
        a probe that is due is made (none in the dark: the service takes nothing; none
        at a cap, where the window holds back and widens on its own). ``ending(rate)``,
        asked only then: True when the inputs left take less than
        ``no_probe_before_end_seconds`` at ``rate`` (or the wait last asked): then no
        probe above what the service was found to take."""
        if (now >= self._probe_at and self.phase is not Phase.DARK
                and math.isinf(self._cap)):
            if ending is not None and ending(self.rate):
                self._probe_near_end(now)
            else:
                self._probe(now)

    def answered(self, send: int, at: float, now: float) -> None:
        """Send number ``send``, made ``at``, was answered (not 429): the service took it.
        One made before a refused one may complete what the estimate knows (a 429 is
        answered at once, a check later): the episode's estimate is made again."""
        self._sends.mark(send, ANSWERED)
        if now < self._first_answer:
            self._first_answer = now
        elapsed = now - at
        if elapsed <= self._rtt or now - self._rtt_at > self._constants.round_trip_memory_seconds:
            self._timed(elapsed, now)  # the shortest lately
        phase = self.phase
        if phase is Phase.DARK:
            self._resume(now)
        elif phase is not Phase.STARTUP and math.isinf(self.rate):
            # A cap found before any answer: the first round trip gives the rate, above
            # what the cap lets through, so that the window, not the rate, holds back.
            self.rate = self._constants.window_gain * self.window / self._rtt
            self._resize()
        answers = self._answers
        answers.append(now)  # and those older than ``delivery_seconds`` forgotten:
        forget = now - self._constants.delivery_seconds
        while answers[0] < forget:  # (never the one just added)
            answers.popleft()
        refused = self._refused
        if refused and at < refused[-1] and self.phase is not Phase.PROBING:
            estimate = self._estimate_at(now)
            if estimate:
                self._refine(estimate)
        if self.phase is Phase.STARTUP:
            self._grow_start_up()

    def _grow_start_up(self) -> None:
        """An answer in the start-up: the window grows (x ``start_growth`` a
        ``growth_round_seconds``, at most doubling in a round trip), the sends paced at
        ``start_gain`` x window / round trip."""
        c = self._constants
        rtt = self._rtt
        if rtt != self._growth_rtt:  # the power once a round trip, not once an answer
            rounds = rtt / c.growth_round_seconds
            # At most doubling: a round trip of a minute or more (a slow first answer, a
            # machine suspended with a check in flight) would overflow the power.
            self._growth = (1.0 if rounds * math.log(c.start_growth) >= math.log(2.0)
                            else min(1.0, c.start_growth ** rounds - 1.0))
            self._growth_rtt = rtt
        self.window *= 1.0 + self._growth / self.window
        self.rate = c.start_gain * self.window / rtt

    def failed(self, send: int) -> None:
        """Send number ``send`` got no answer (a failure, a timeout): nothing learnt."""
        self._sends.mark(send, FAILED)

    def refused(self, send: int, at: float, now: float) -> None:
        """Send number ``send``, made ``at``, was answered 429: cut (a new episode) or
        refine (the same one); in the dark (the service takes nothing), nothing."""
        self._sends.mark(send, REFUSED)
        if self._dark(at, now):
            self._darken()  # the driver's hold waits what the service asks
            return
        if self._capped(send, at, now):
            return  # the window, not the rate: nothing to cut
        insort(self._refused, at)
        estimate = self._estimate_at(now)
        if at >= self._cut_at + self._constants.cut_settle_seconds:
            self._cut(now, estimate)
        elif estimate and self.phase is not Phase.PROBING:  # the same episode, so far
            self._refine(estimate)

    def starved(self, now: float, within: float) -> bool:
        """True when nothing sent within the last ``within`` seconds was answered: the
        service takes no rate at all now (every worker is to wait what it asks)."""
        return not self._sends.answered_since(now - within)

    def unanswered(self) -> int:
        """The recent sends (``send_memory_seconds``) whose answer is not known yet: in
        flight, as these events tell (a driver without a count of its own, the fleet,
        keeps its window by it)."""
        return self._sends.unanswered()

    # --- the dark --------------------------------------------------------------------
    def _dark(self, at: float, now: float) -> bool:
        """Whether a 429 now, of a send made ``at``, finds the service taking nothing:
        in the dark already, or nothing sent within ``dark_after_seconds`` answered after
        sending that long, the refused send among them. A 429 that took longer to come
        back says nothing of the service now: a loaded client read the start-up's 429s
        1.4 s late, nothing sent since (the window full), and took a cap for the dark."""
        within = self._constants.dark_after_seconds
        return self.phase is Phase.DARK or (now - self._first_sent >= within
                                            and at >= now - within
                                            and self.starved(now, within))

    def _darken(self) -> None:
        """Into the dark: the rate is already the one it resumes at (``backoff_share`` x
        the peak, if one was found), so that the sends the driver schedules meanwhile
        are not spaced at the cut the blackout's first second made (0.1 s apart at
        10/s: the first sends after it waited for them); the window stays as it was:
        the few sends that find whether the service takes again."""
        c = self._constants
        if self.phase is not Phase.DARK and self._peak > 0.0:
            self.rate = max(self.rate, c.backoff_share * self._peak)
        self.phase = Phase.DARK

    def _resume(self, now: float) -> None:
        """The first answer after the dark: the service takes again, most likely as
        before; the rate resumes at ``backoff_share`` x the peak found before it (the
        start-up again when none was), and a probe comes soon. No bracket spans the
        dark."""
        c = self._constants
        self._refused.clear()
        self._step = c.first_probe_step
        if self._peak <= 0.0:
            self.phase, self.rate, self.window = Phase.STARTUP, math.inf, c.start_window
            self._cap = self._cap_found = self._cap_at = math.inf
            self._first_answer = math.inf
            return
        self.phase = Phase.RESTING
        self.rate = max(self.rate, c.backoff_share * self._peak)
        self._ceiling = math.inf
        self._cut_at = now
        self._probe_at = now + c.soon_probe_seconds
        self._resize()

    # --- the cut ---------------------------------------------------------------------
    def _cut(self, now: float, estimate: float) -> None:
        """The first 429 of an episode: the rate falls to what the service takes, never
        above what held before (the rate before a failed probe; ``yield_share`` x the
        rate for an episode this pace did not cause: another client on the same key,
        or a lower limit, which also probes again soon)."""
        c = self._constants
        phase = self.phase
        contended = phase is Phase.RESTING and now - self._cut_at >= c.own_episode_seconds
        if phase is Phase.STARTUP:
            self.rate = (self.window / self._rtt if self._rtt < math.inf
                         else 1.0 / c.growth_round_seconds)
            self._ceiling = math.inf
        elif phase is Phase.PROBING:
            self._ceiling = self._before
        else:  # a new episode the rate caused and nothing to show what it should be:
            # lower it all the same (else the same rate refused again keeps it)
            self._ceiling = (c.yield_share * self.rate if contended or not estimate
                             else self.rate)
        self._contended = contended
        self.phase = Phase.RESTING
        self._cut_at = now
        self._step = c.first_probe_step
        self._settle(now, estimate)

    def _refine(self, estimate: float) -> None:
        """The episode's estimate, more complete: the rate follows it."""
        self._settle(self._cut_at, estimate)

    def _settle(self, now: float, estimate: float) -> None:
        """The episode's rate: ``backoff_share`` x the estimate, at most its ceiling
        (without an estimate: the ceiling; blind in the start-up: ``blind_backoff_share``
        x the rate); and when to probe: soon unless the estimate is sure and near the
        peak."""
        c = self._constants
        if estimate:
            self.estimate = estimate
            if estimate >= self._peak or now - self._peak_at > c.peak_memory_seconds:
                self._peak = estimate
            if estimate >= c.far_share * self._peak:
                self._peak_at = now
            self.rate = min(c.backoff_share * estimate, self._ceiling)
        elif math.isinf(self._ceiling):
            self.rate *= c.blind_backoff_share
        else:
            self.rate = min(self.rate, self._ceiling)
        # A sure estimate rests even after the start-up: a probe soon after it cost a
        # tail of 429s waiting their Retry-After (100 ms service: 0.70 R -> 0.90 R).
        soon = self._contended or not self._sure or self.rate < c.far_share * self._peak
        self._probe_at = self._cut_at + (c.soon_probe_seconds if soon else self._rest())
        self._resize()

    # --- the probes ------------------------------------------------------------------
    def _probe(self, now: float) -> None:
        """A probe is due and no 429 answered the last: raise the rate by its step (at
        least ``probe_sends_per_round_trip``), doubling the step each time, until a 429
        ends the probes."""
        c = self._constants
        if self.phase is not Phase.PROBING:
            # Sent below the limit since the last refusal, the bucket may have filled
            # and wasted refills: a bracket across this moment would be too low.
            self._refused.clear()
        self._before = self.rate  # it stood a probe gap without a 429
        self.phase = Phase.PROBING
        self.rate += max(self._step * self.rate, c.probe_sends_per_round_trip / self._rtt)
        # Far below the peak lately found (a limit restored), climb fast; near it, the
        # bucket hides the limit until its burst is spent: a fast climb overshoots, and
        # its flood of 429s costs their waits and skews the next estimate.
        far = self.rate < c.far_share * self._peak
        self._step = min(2.0 * self._step, c.far_probe_step if far else c.near_probe_step)
        self._probe_at = now + c.probe_gap_seconds
        self._resize()

    def _probe_near_end(self, now: float) -> None:
        """Near the end of the inputs a probe climbs only to what the service was found
        to take (``backoff_share`` x the estimate), never above it: one under way above
        it falls back (to the rate before its last step, if higher: that stood a probe
        gap without a 429), and rests."""
        c = self._constants
        known = c.backoff_share * self.estimate
        if self.rate < c.far_share * self._peak:
            self._probe(now)
        elif self.rate < known:
            self._probe(now)
            if self.rate > known:
                self.rate = known
                self._resize()
        elif self.phase is Phase.PROBING:
            self.phase = Phase.RESTING
            self.rate = min(self.rate, max(self._before, known))
            self._resize()

    def _rest(self) -> float:
        """How long the rate rests before probing: ``rest_per_send_in_flight_seconds`` a
        send in flight (a big share of the service rests long, a small one probes soon)."""
        c = self._constants
        in_flight = self.rate * self._rtt
        return min(c.longest_rest_seconds,
                   max(c.soon_probe_seconds, c.rest_per_send_in_flight_seconds * in_flight))

    # --- the estimate ----------------------------------------------------------------
    def _estimate_at(self, now: float) -> float:
        """The rate the service took from these sends between refused ones, recently
        (answered sends per second of bracketed time); 0.0 when too little is known."""
        c = self._constants
        refused = self._refused
        while refused and refused[0] < now - c.estimate_memory_seconds:
            del refused[0]
        if len(refused) < 2:
            return 0.0
        widest = (max(c.bracket_gap_seconds, c.bracket_gap_sends / self.rate) if self.rate
                  else c.bracket_gap_seconds)
        span, answered = self._chosen(
            *self._sends.bracketed(refused, widest, now - c.recent_brackets_seconds))
        if not span:
            return 0.0
        estimate = answered / span
        # Two episodes' estimates that agree are as sure as one long one; one far below
        # what the service answered lately is not (a flood skews when sends reach the
        # service: the start-up's came out 10-30 % low, measured).
        self._sure = ((answered >= c.sure_answers
                       or abs(estimate - self.estimate) <= c.agree_share * estimate)
                      and estimate >= c.far_share * self._delivered(now))
        return estimate

    def _chosen(self, every: tuple[float, int],
                recent: tuple[float, int]) -> tuple[float, int]:
        """The brackets to estimate from: every recent one (the longer, the surer), or
        only the last ``recent_brackets_seconds``' where they are sure, or say the limit
        changed; (0.0, 0) when neither is enough."""
        c = self._constants
        if self._enough(*recent) and (
                recent[1] >= c.sure_answers or not self._enough(*every)
                or abs(recent[1] / recent[0] - every[1] / every[0])
                > c.limit_change_share * every[1] / every[0]):
            return recent
        return every if self._enough(*every) else (0.0, 0)

    def _enough(self, span: float, answered: int) -> bool:
        c = self._constants
        return span >= c.estimate_needs_seconds and answered >= c.estimate_needs_answers

    def _delivered(self, now: float) -> float:
        """Answers a second over the last ``delivery_seconds`` (or since the first)."""
        self._forget_answers(now)
        answers = self._answers
        c = self._constants
        if len(answers) < c.estimate_needs_answers:
            return 0.0
        return len(answers) / max(now - answers[0], c.estimate_needs_seconds)

    def _forget_answers(self, now: float) -> None:
        answers = self._answers
        while answers and answers[0] < now - self._constants.delivery_seconds:
            answers.popleft()

    # --- in flight -------------------------------------------------------------------
    def _timed(self, elapsed: float, now: float) -> None:
        """An answer came ``elapsed`` after its send, the shortest lately (or the last
        is older than ``round_trip_memory_seconds``): it sizes the window. A 429 is not
        one: the service refuses at once what it takes time to answer."""
        self._rtt = max(elapsed, self._constants.shortest_round_trip_seconds)
        self._rtt_at = now
        self._resize()

    def _resize(self) -> None:
        if math.isinf(self._rtt) or self.phase is Phase.STARTUP or math.isinf(self.rate):
            return
        c = self._constants
        if self._cap < math.inf:
            # At a cap the window holds back, not the rate: it paces above what the cap
            # lets through, whatever the round trip the first answer timed (a loaded
            # client's first is long: 0.2 s left it at 77/s against a cap of 400/s).
            self.rate = max(self.rate, c.window_gain * self._cap / self._rtt)
        self.window = min(self._cap, max(c.min_window,
                                         math.ceil(c.window_gain * self.rate * self._rtt)))

    # --- a cap on checks in flight ----------------------------------------------------
    def _capped(self, send: int, at: float, now: float) -> bool:
        """Whether a cap on checks in flight explains this refused send: a cap of c
        refuses only a send made with c or more others in flight, a rate limit at any
        count. True (the window is the cap, the rate is not cut) for a start-up send
        made before any answer with ``min_window`` or more of the sends made with it
        held by the service (they left at once: their count is all that differs), and
        for one made with the window full at a cap learnt so (the cap is its count). A refusal with
        room below the cap is a rate's: the cap is forgotten, and the rate falls to
        what was answered lately."""
        c = self._constants
        count = self._sends.in_flight_at(send)
        if count is None:
            return False
        if at < self._first_answer and (self.phase is Phase.STARTUP
                                        or not math.isinf(self._cap)):
            # Before any answer the start-up's sends left at once and reach the service
            # in any order: those made with it that it holds are in flight.
            count = self._sends.held_until(at)
            if count < c.min_window:
                return False  # refused with (almost) nothing in flight: a rate
            self._rest_after_start_up(now)
        elif math.isinf(self._cap):
            return False
        elif count < self._cap_found - 1:
            self._lift_cap(now)
            return False
        self._found_cap(max(c.min_window, count), now)
        return True

    def _rest_after_start_up(self, now: float) -> None:
        """The start-up met a cap: it ends without a cut; unpaced until an answer times
        a round trip (then paced above the cap: ``_resize``)."""
        self.phase, self._cut_at = Phase.RESTING, now
        self._probe_at = now + self._constants.soon_probe_seconds
        if math.isinf(self._rtt):
            self.rate = math.inf

    def _found_cap(self, cap: int, now: float) -> None:
        """A refusal at ``cap`` in flight: at most that many in flight from now on; the
        next widening soon after a new cap, after a rest where the same one is found
        again (a widening that fails costs a 429 and its backoff)."""
        c = self._constants
        again = cap == self._cap_found
        self._cap = self._cap_found = min(self._cap, cap)
        self._cap_step = 1
        self._cap_at = now + (min(c.longest_rest_seconds,
                                  c.rest_per_send_in_flight_seconds * self._cap)
                              if again else c.probe_gap_seconds)
        if math.isinf(self.rate):
            self.window = self._cap
        self._resize()

    def _widen(self, now: float) -> None:
        """The window is full at the cap and none of its sends was refused lately: one
        more in flight (twice as many more each ``probe_gap_seconds`` without a 429: a
        cap that was lifted, or a rate taken for one, is left fast)."""
        if self.phase in (Phase.STARTUP, Phase.DARK):
            return
        self._cap += self._cap_step
        self._cap_step *= 2
        self._cap_at = now + self._constants.probe_gap_seconds
        self._resize()

    def _lift_cap(self, now: float) -> None:
        """A refusal with room below the cap: no cap explains it. The rate (above what
        the cap let through) falls to what the service answered lately."""
        delivered = self._delivered(now)
        self.rate = min(self.rate, delivered or self.window / self._rtt)
        self._cap = self._cap_found = self._cap_at = math.inf
        self._resize()


#: The constants of every pace not given others.
DEFAULT_CONSTANTS = PaceConstants()
