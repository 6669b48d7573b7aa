"""Finding the rate a service takes, from the answers to what was sent (``RateFinder``).

The engine's pace (``_core.pace``) spaces the sends of bulk work at ``rate`` and keeps at
most ``window`` of them in flight; this module decides both, from every attempt's answer:
answered (the service took it) or refused with 429 (it did not: "come back later"). It
knows no area, no operation and no clock of its own: times are given.

A service that limits a rate (a token bucket, GCRA: R requests a second, a burst of B)
says nothing while it has tokens, and answers 429 once it has none. Two refused sends
bracket the service's refills: between them it took what it refilled, R per second
(give or take one), whatever was sent in between and whoever else spends the same key.
So the rate it takes *from this client* is the answered sends between refused ones,
divided by the time between them (``_estimate_at``): exact while the bucket stayed
below its burst, never too high. In flight follows: ``window`` ~ 2 x rate x the shortest
answer time (BBR's "in flight ~ rate x round trip", with room for jitter).

The phases, as TCP's:

* **start-up**: nothing known. ``START_WINDOW`` attempts go at once; then, like TCP's
  slow start, each answered one widens the window by ``GROWTH`` (x 1.5 a round trip,
  or a ``ROUND`` where round trips are shorter), the sends paced at ``START_GAIN`` x
  window / round trip, until the first 429 (the service's burst hides its rate until
  then).
* **cut**: the first 429 of an episode (a refused send made after the last cut) sets the
  rate to ``BACKOFF`` x the service's rate as estimated (or half the rate sent at, when no
  estimate is possible yet: the next episode brings one). Later refusals of sends made
  before the cut belong to the same episode: they refine the estimate, never cut again.
* **probing**: nothing is learnt while no 429 comes, so the rate is raised now and then
  to find out whether the service takes more (a limit restored, another client gone):
  after a rest (``_plateau``: long for a big share of the service, short for a small
  one, and short after an episode this pace did not cause, far below the ``peak``, the
  highest rate lately found, or while the estimate is not sure: too few answers, or
  below ``FAR`` x the rate answers came at over the last ``DELIVERY`` seconds), a step
  every ``PROBE_GAP``, each twice the last (at most ``NEAR_STEP`` near the peak, where
  the bucket's burst hides the limit and a fast climb overshoots), until a 429.
  Brackets never span the start of a probe: below the limit the bucket may have filled
  and wasted refills. A probe that fails costs a refusal or two, and a refusal costs its
  check the wait the service asks for: a rate that holds rests long.

Several processes on one key share no state: each finds its own share (what the service
takes from it), an episode one of them causes by probing makes the others yield
(``YIELD``), and a small share probes sooner and in steps of at least ``PROBE_UNIT``
sends a round trip (the same for every client of the service), so the shares converge.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right, insort
from collections import deque

__all__ = ["RateFinder"]

#: Start-up: the first window; its growth, ``GROWTH`` times every ``ROUND`` seconds
#: (at most doubling in one round trip); the pacing, a multiple of window / round trip.
START_WINDOW = 16
GROWTH = 1.5
ROUND = 0.05
START_GAIN = 2.0
#: After a 429: this share of the rate the service was found to take.
BACKOFF = 0.97
#: Without an estimate yet: this share of the rate sent at.
BLIND_BACKOFF = 0.5
#: An episode this pace did not cause (it neither probed nor cut within ``SETTLE``
#: seconds: another client on the same key, or a lower limit): at most this share.
YIELD = 0.9
SETTLE = 0.5
#: Below ``FAR`` x peak, or after an episode of another's making, a probe comes after
#: ``FAR_GAP`` seconds; at the peak after ``PLATEAU_PER_FLIGHT`` a send in flight (at
#: most ``PLATEAU``); each probe raises the rate by ``STEP`` (then twice that, ...,
#: up to ``MAX_STEP``), at least ``PROBE_UNIT`` sends a round trip, if no 429 answered
#: the last one within ``PROBE_GAP``.
FAR = 0.8
FAR_GAP = 0.25
PLATEAU = 4.0
PLATEAU_PER_FLIGHT = 0.4
PROBE_GAP = 0.1
STEP = 0.03
MAX_STEP = 0.5
NEAR_STEP = 0.12
#: Answers over this long (or since the first) are the rate the service was seen to take.
DELIVERY = 0.5
PROBE_UNIT = 0.5
#: How long an estimate of the service's rate is remembered as the peak.
PEAK_MEMORY = 10.0
#: Refused sends this recent are used for the estimate; two at most ``GAP`` apart
#: (or ``GAP_SENDS`` sends at the current rate, for a slow service) bracket refills.
ESTIMATE_MEMORY = 2.0
GAP = 1.0
#: The brackets of the last ``RECENT`` seconds alone are used where they are sure, or
#: differ by ``CHANGE`` from all of them (the limit changed).
RECENT = 0.25
CHANGE = 0.2
GAP_SENDS = 10
#: An estimate needs brackets covering this long and this many answered sends; with
#: ``SURE`` answered sends it is sure (one more or less: a few percent) and the rate
#: rests at it, else a probe comes soon: its 429s bracket more.
MIN_SPAN = 0.02
MIN_ANSWERED = 8
SURE = 40
AGREE = 0.05
#: In flight: at least ``MIN_WINDOW``, else ``WINDOW_GAIN`` x rate x shortest answer time.
MIN_WINDOW = 4
WINDOW_GAIN = 2.0
#: What is kept of the sends (for the estimate) and of answer times (for the window).
SEND_MEMORY = 2.0
RTT_MEMORY = 10.0

#: What came of a send (``PENDING`` until its answer).
PENDING, ANSWERED, REFUSED, FAILED = 0, 1, 2, 3


class RateFinder:
    """The rate and the window of one pace, found from its answers (see the module)."""

    __slots__ = ("_answers", "_before", "_ceiling", "_contended", "_cut_at", "_first",
                 "_peak", "_peak_at", "_probe_at", "_probing", "_refused", "_rtt",
                 "_rtt_at", "_states", "_step", "_sure", "_times", "estimate", "rate",
                 "starting", "window")

    def __init__(self) -> None:
        #: Sends a second the pacer spaces paced attempts at (unpaced until a round
        #: trip is known).
        self.rate = math.inf
        #: The most paced attempts in flight.
        self.window: float = START_WINDOW
        #: True until the first 429: the window still grows blindly.
        self.starting = True
        # The recent sends (``SEND_MEMORY``): their times and what came of them, send
        # number ``_first + i`` at ``i`` (plain numbers: nothing for the collector).
        self._times: list[float] = []
        self._states = bytearray()
        self._first = 0
        self._refused: list[float] = []  # send times of refused sends, in order
        self._cut_at = -math.inf
        #: The rate the service was last found to take from this pace (0.0: not yet).
        self.estimate = 0.0
        self._peak = 0.0
        self._peak_at = -math.inf
        self._probe_at = math.inf
        self._step = STEP
        self._probing = False
        self._sure = False  # the last estimate counted SURE answered sends or more
        self._ceiling = math.inf  # the most the current episode's rate may be
        self._contended = False  # the current episode was not of this pace's making
        self._before = 0.0  # the rate before the probes since the last cut
        self._rtt = math.inf
        self._rtt_at = -math.inf
        self._answers: deque[float] = deque()  # when answers came (``DELIVERY`` s)

    # --- what the pace tells ---------------------------------------------------------
    def sent(self, now: float) -> int:
        """An attempt leaves now: its number, for ``answered``, ``refused``, ``failed``."""
        times = self._times
        number = self._first + len(times)
        times.append(now)
        self._states.append(PENDING)
        if times[0] < now - SEND_MEMORY:
            old = bisect_left(times, now - SEND_MEMORY)
            del times[:old]
            del self._states[:old]
            self._first += old
        return number

    def _mark(self, send: int, state: int) -> None:
        at = send - self._first
        if at >= 0:
            self._states[at] = state

    def held_back(self, now: float) -> None:
        """A send had to wait for the pacer: the rate, not the demand, is the limit now;
        a probe that is due is made."""
        if now >= self._probe_at:
            self._probe(now)

    def answered(self, send: int, at: float, now: float) -> None:
        """Send number ``send``, made ``at``, was answered (not 429): the service took it.
        One made before a refused one may complete what the estimate knows (a 429 is
        answered at once, a check later): the episode's estimate is made again."""
        self._mark(send, ANSWERED)
        self._timed(now - at, now)
        self._answers.append(now)
        self._forget_answers(now)
        if self._refused and at < self._refused[-1] and not self._probing:
            estimate = self._estimate_at(now)
            if estimate:
                self._refine(estimate)
        if self.starting:
            self.window *= 1.0 + min(1.0, GROWTH ** (self._rtt / ROUND) - 1.0) / self.window
            self.rate = START_GAIN * self.window / self._rtt

    def failed(self, send: int) -> None:
        """Send number ``send`` got no answer (a failure, a timeout): nothing learnt."""
        self._mark(send, FAILED)

    def refused(self, send: int, at: float, now: float) -> None:
        """Send number ``send``, made ``at``, was answered 429: cut (a new episode) or
        refine (the same one)."""
        self._mark(send, REFUSED)
        insort(self._refused, at)
        estimate = self._estimate_at(now)
        if at >= self._cut_at:
            self._cut(now, estimate)
        elif estimate and not self._probing:  # the same episode: what it shows so far
            self._refine(estimate)

    def starved(self, now: float, within: float) -> bool:
        """True when nothing sent within the last ``within`` seconds was answered: the
        service takes no rate at all now (every worker is to wait what it asks)."""
        since = bisect_left(self._times, now - within)
        return ANSWERED not in self._states[since:]

    # --- deciding -------------------------------------------------------------------
    def _cut(self, now: float, estimate: float) -> None:
        """The first 429 of an episode: the rate falls to what the service takes, never
        above what held before (the rate before a failed probe; ``YIELD`` x the rate for
        an episode this pace did not cause: another client on the same key, or a lower
        limit, which also probes again soon)."""
        contended = not (self.starting or self._probing or now - self._cut_at < SETTLE)
        if self.starting:
            self.rate = self.window / self._rtt if self._rtt < math.inf else 1.0 / ROUND
            self._ceiling = math.inf
        elif self._probing:
            self._ceiling = self._before
        else:  # a new episode the rate caused and nothing to show what it should be:
            # lower it all the same (else the same rate refused again keeps it)
            self._ceiling = YIELD * self.rate if contended or not estimate else self.rate
        self._contended = contended
        self.starting = self._probing = False
        self._cut_at = now
        self._step = STEP
        self._settle(now, estimate)

    def _refine(self, estimate: float) -> None:
        """The episode's estimate, more complete: the rate follows it."""
        self._settle(self._cut_at, estimate)

    def _settle(self, now: float, estimate: float) -> None:
        """The episode's rate: ``BACKOFF`` x the estimate, at most its ceiling (without
        an estimate: the ceiling; blind in the start-up: ``BLIND_BACKOFF`` x the rate);
        and when to probe: soon unless the estimate is sure and near the peak."""
        if estimate:
            self.estimate = estimate
            if estimate >= self._peak or now - self._peak_at > PEAK_MEMORY:
                self._peak = estimate
            if estimate >= FAR * self._peak:
                self._peak_at = now
            self.rate = min(BACKOFF * estimate, self._ceiling)
        elif math.isinf(self._ceiling):
            self.rate *= BLIND_BACKOFF
        else:
            self.rate = min(self.rate, self._ceiling)
        # A sure estimate rests even after the start-up: a probe soon after it cost a
        # tail of 429s waiting their Retry-After (100 ms service: 0.70 R -> 0.90 R).
        soon = self._contended or not self._sure or self.rate < FAR * self._peak
        self._probe_at = self._cut_at + (FAR_GAP if soon else self._plateau())
        self._resize()

    def _probe(self, now: float) -> None:
        """A probe is due and no 429 answered the last: raise the rate by its step (at
        least ``PROBE_UNIT`` sends a round trip: the same for every client of the
        service, so a small one grows faster than a big one), doubling the step each
        time, until a 429 ends the probes."""
        if not self._probing:
            # Sent below the limit since the last refusal, the bucket may have filled
            # and wasted refills: a bracket across this moment would be too low.
            self._refused.clear()
        self._before = self.rate  # it stood a probe gap without a 429
        self._probing = True
        self.rate += max(self._step * self.rate, PROBE_UNIT / self._rtt)
        # Far below the peak lately found (a limit restored), climb fast; near it, the
        # bucket hides the limit until its burst is spent: a fast climb overshoots, and
        # its flood of 429s costs their waits and skews the next estimate.
        far = self.rate < FAR * self._peak
        self._step = min(2.0 * self._step, MAX_STEP if far else NEAR_STEP)
        self._probe_at = now + PROBE_GAP
        self._resize()

    def _plateau(self) -> float:
        """How long the rate rests before probing: ``PLATEAU_PER_FLIGHT`` a send in
        flight (a big share of the service rests long, a small one probes soon)."""
        in_flight = self.rate * self._rtt
        return min(PLATEAU, max(FAR_GAP, PLATEAU_PER_FLIGHT * in_flight))

    def _estimate_at(self, now: float) -> float:
        """The rate the service took from these sends between refused ones, recently
        (answered sends per second of bracketed time); 0.0 when too little is known."""
        refused = self._refused
        while refused and refused[0] < now - ESTIMATE_MEMORY:
            del refused[0]
        if len(refused) < 2:
            return 0.0
        widest = max(GAP, GAP_SENDS / self.rate) if self.rate else GAP
        times, states = self._times, self._states
        span, answered = _chosen(_bracketed(times, states, refused, widest, -math.inf),
                                 _bracketed(times, states, refused, widest, now - RECENT))
        if not span:
            return 0.0
        estimate = answered / span
        # Two episodes' estimates that agree are as sure as one long one; one far below
        # what the service answered lately is not (a flood skews when sends reach the
        # service: the start-up's came out 10-30 % low, measured).
        self._sure = ((answered >= SURE or abs(estimate - self.estimate) <= AGREE * estimate)
                      and estimate >= FAR * self._delivered(now))
        return estimate

    def _delivered(self, now: float) -> float:
        """Answers a second over the last ``DELIVERY`` seconds (or since the first)."""
        self._forget_answers(now)
        answers = self._answers
        if len(answers) < MIN_ANSWERED:
            return 0.0
        return len(answers) / max(now - answers[0], MIN_SPAN)

    def _forget_answers(self, now: float) -> None:
        answers = self._answers
        while answers and answers[0] < now - DELIVERY:
            answers.popleft()

    def _timed(self, elapsed: float, now: float) -> None:
        """An answer came ``elapsed`` after its send: the shortest answer time (kept
        ``RTT_MEMORY`` seconds) sizes the window. A 429 is not one: the service refuses
        at once what it takes time to answer."""
        if elapsed <= self._rtt or now - self._rtt_at > RTT_MEMORY:
            self._rtt, self._rtt_at = max(elapsed, 1e-4), now
            self._resize()

    def _resize(self) -> None:
        if math.isinf(self._rtt) or self.starting:
            return
        self.window = max(MIN_WINDOW, math.ceil(WINDOW_GAIN * self.rate * self._rtt))


def _chosen(every: tuple[float, int], recent: tuple[float, int]) -> tuple[float, int]:
    """The brackets to estimate from: every recent one (the longer, the surer), or only
    the last ``RECENT`` seconds' where they are sure, or say the limit changed (differ
    by ``CHANGE``); (0.0, 0) when neither is enough."""
    if _enough(*recent) and (recent[1] >= SURE or not _enough(*every) or abs(
            recent[1] / recent[0] - every[1] / every[0]) > CHANGE * every[1] / every[0]):
        return recent
    return every if _enough(*every) else (0.0, 0)


def _enough(span: float, answered: int) -> bool:
    return span >= MIN_SPAN and answered >= MIN_ANSWERED


def _bracketed(times: list[float], states: bytearray, refused: list[float],
               widest: float, since: float) -> tuple[float, int]:
    """The time between consecutive refused sends at most ``widest`` apart (both made
    ``since`` then or later), and the answered sends between them; only up to the first
    send still unanswered (what is not known yet would count as not taken)."""
    pending = states.find(PENDING)
    known = math.inf if pending < 0 else times[pending]
    pairs = [(a, b) for a, b in itertools.pairwise(refused)
             if b - a <= widest and b <= known and a >= since]
    span, answered = 0.0, 0
    for a, b in pairs:
        span += b - a
        first, last = bisect_right(times, a), bisect_left(times, b)
        answered += states.count(ANSWERED, first, last)
    return span, answered

