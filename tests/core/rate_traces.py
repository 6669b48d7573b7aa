"""Traces of the rate finder: event sequences and the decisions it made after each one.

``data/rate_traces.json`` was first written by this module (commit 68cb15f) from the
rate finder as it was before it became one explicit state machine (the refactor changed
no behaviour), and written again for the ``DARK`` phase and the start-up's cap rule
(issue 40 item 3: a change of behaviour meant); ``test_rate_traces.py`` feeds every
trace to today's ``RateFinder`` and asserts exactly the same decisions. Regenerate it
only for a change of behaviour that is meant:

    PYTHONPATH=$PWD:$PWD/tests:$PWD/tests/core python tests/core/rate_traces.py

A trace is the finder's events in order, each ``[kind, *arguments, result, decisions]``:

* ``["s", now, number]`` (``number``: what ``sent`` returned);
* ``["a", send, at, now]``, ``["r", send, at, now]``, ``["f", send]``;
* ``["held_back", now]``; ``["q", now, within, result]``;

and ``decisions`` the finder's ``[rate, window, estimate, phase]`` after the event, or
null where none of them changed. Infinity is written ``"inf"``.

The traces: the scenarios of the unit tests (``test_pace.py``), the paced workers of
``test_pace.py`` against its token bucket on a virtual clock (its finder recorded as the
pace drives it), and seeded random event sequences.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from asyncsdk.pacing import RateFinder

FIXTURE = Path(__file__).resolve().parent / "data" / "rate_traces.json"

#: The events' letters and the finder's methods.
KINDS = {"s": "sent", "a": "answered", "r": "refused", "f": "failed", "h": "held_back",
         "q": "starved"}
Decisions = list[Any]
Event = list[Any]


def _number(value: float) -> float | str:
    return "inf" if value == math.inf else value


def decisions_of(finder: RateFinder) -> Decisions:
    """What the finder decided: its rate, window, estimate and phase (by name)."""
    return [_number(finder.rate), _number(finder.window), finder.estimate,
            finder.phase.value]


class Recorder:
    """A ``RateFinder`` that records each event given to it and the decisions after it
    (what a ``Pace`` drives: the same methods and readings)."""

    def __init__(self, finder: RateFinder | None = None) -> None:
        self.finder = finder or RateFinder()
        self.events: list[Event] = []
        self._last: Decisions | None = None

    def _record(self, event: Event) -> None:
        now = decisions_of(self.finder)
        event.append(None if now == self._last else now)
        self._last = now
        self.events.append(event)

    def __getattr__(self, name: str) -> Any:  # what a pace reads: rate, window, ...
        return getattr(self.finder, name)

    def sent(self, now: float) -> int:
        number = self.finder.sent(now)
        self._record(["s", now, number])
        return number

    def answered(self, send: int, at: float, now: float) -> None:
        self.finder.answered(send, at, now)
        self._record(["a", send, at, now])

    def refused(self, send: int, at: float, now: float) -> None:
        self.finder.refused(send, at, now)
        self._record(["r", send, at, now])

    def failed(self, send: int) -> None:
        self.finder.failed(send)
        self._record(["f", send])

    def held_back(self, now: float) -> None:
        self.finder.held_back(now)
        if self.events and self.events[-1][:2] == ["h", now]:
            return  # the same again: never changes anything (a pace asks once a moment)
        self._record(["h", now])

    def starved(self, now: float, within: float) -> bool:
        result = self.finder.starved(now, within)
        self._record(["q", now, within, result])
        return result


def replay(events: list[Event], finder: RateFinder) -> list[str]:
    """Feed ``events`` to ``finder``; the differences from the recorded decisions (and
    results), one line each (empty: the same decisions throughout)."""
    expected: Decisions | None = None
    wrong: list[str] = []
    for index, (letter, *args, recorded) in enumerate(events):
        kind = KINDS[letter]
        if kind in ("sent", "starved"):
            *args, result = args
            got = getattr(finder, kind)(*args)
            if got != result:
                wrong.append(f"event {index} {kind}{tuple(args)}: {got!r}, recorded {result!r}")
        else:
            getattr(finder, kind)(*args)
        expected = recorded if recorded is not None else expected
        now = decisions_of(finder)
        if now != expected:
            wrong.append(f"event {index} {kind}{tuple(args)}: {now}, recorded {expected}")
    return wrong


# --- the scenarios of the unit tests ---------------------------------------------------
class Events(Protocol):
    """What is given to a finder (a ``RateFinder``, or a ``Recorder`` of one)."""

    def sent(self, now: float) -> int: ...
    def answered(self, send: int, at: float, now: float) -> None: ...
    def refused(self, send: int, at: float, now: float) -> None: ...


def held_back_each_tenth(finder: Events, since: float) -> None:
    """Twelve senders held back, one every 0.1 s after ``since``: what lets probes out."""
    now = since
    for _ in range(12):
        now += 0.1
        finder.held_back(now)


def episode_at_400(finder: Events, start: float = 0.0) -> None:
    """Sends every 1 ms (1000/s) for 0.2 s from ``start`` to a service taking 400/s: it
    takes 2 of every 5 and refuses the rest; each is answered 20 ms after its send."""
    sends = [(finder.sent(start + i / 1000), start + i / 1000) for i in range(200)]
    for i, (number, at) in enumerate(sends):
        if i % 5 in (0, 2):
            finder.answered(number, at, at + 0.02)
        else:
            finder.refused(number, at, at + 0.02)


def steady(finder: Recorder, start: float, end: float, every: float,
           refused: Callable[[int], bool] = lambda i: False, answer: float = 0.02) -> None:
    """Sends every ``every`` seconds from ``start`` to ``end``, each answered ``answer``
    after it (in order; the ``refused(i)`` ones with 429)."""
    count = round((end - start) / every)
    sends = [(finder.sent(start + i * every), start + i * every) for i in range(count)]
    for i, (number, at) in enumerate(sends):
        (finder.refused if refused(i) else finder.answered)(number, at, at + answer)


def branch_scenarios() -> dict[str, list[Event]]:
    """Paths the others seldom take: a climb from far below the peak (the steps double
    up to the largest), an episode of another client's making with an estimate, a probe
    refused where its brackets give an estimate."""
    traces: dict[str, list[Event]] = {}
    finder = Recorder()
    episode_at_400(finder)
    steady(finder, 1.0, 1.2, 0.001, lambda i: i % 10 != 0)  # 100/s taken
    held_back_each_tenth(finder, 1.5)
    traces["a climb from far below the peak"] = finder.events

    finder = Recorder()
    episode_at_400(finder)
    steady(finder, 0.25, 0.9, 0.0025)
    steady(finder, 0.9, 1.0, 0.0025, lambda i: i % 4 == 0)
    traces["another client's episode"] = finder.events

    finder = Recorder()
    sends = [(finder.sent(i * 0.002), i * 0.002) for i in range(250)]
    finder.refused(*sends[0], 0.6)
    late = [(number, at, at + 0.6) for number, at in sends[1:]]
    for number, at, now in late[:120]:
        finder.answered(number, at, now)
    finder.held_back(0.86)
    for i, (number, at, now) in enumerate(late[120:]):
        if at + 0.6 > 0.95:
            break
        (finder.refused if i % 5 == 0 else finder.answered)(number, at, now)
    after = finder.sent(0.9)
    finder.refused(after, 0.9, 0.95)
    traces["a probe refused, with an estimate"] = finder.events
    return traces


def unit_scenarios() -> dict[str, list[Event]]:
    traces: dict[str, list[Event]] = {}

    for before in (0.0, 0.4):
        finder = Recorder()
        for i in range(int(before * 1000)):
            finder.answered(finder.sent(i / 1000), i / 1000, i / 1000 + 0.02)
        episode_at_400(finder, before)
        finder.held_back(before + 0.2 + 0.5)
        traces[f"estimate after answers for {before} s"] = finder.events

    finder = Recorder()
    episode_at_400(finder)
    held_back_each_tenth(finder, 4.2)
    traces["probes near the rate found"] = finder.events

    finder = Recorder()
    numbers = [(finder.sent(i / 1000), i / 1000) for i in range(10)]
    for number, at in numbers[:5]:
        finder.answered(number, at, at + 0.02)
    finder.refused(*numbers[5], 0.025)
    finder.refused(*numbers[6], 0.026)
    later = finder.sent(0.03)
    finder.refused(later, 0.03, 0.05)
    traces["one episode cuts once"] = finder.events

    finder = Recorder()
    episode_at_400(finder)
    steady(finder, 0.2, 2.2, 0.0025, lambda i: i >= 10)  # the service takes nothing
    finder.held_back(2.4)
    steady(finder, 2.5, 2.6, 0.0025)  # and takes again
    traces["a blackout"] = finder.events

    finder = Recorder()
    sends = [finder.sent(0.0) for _ in range(16)]
    for number in sends[8:]:
        finder.refused(number, 0.0, 0.001)
    finder.answered(sends[0], 0.0, 0.02)
    traces["a cap in flight before any answer"] = finder.events

    finder = Recorder()
    number = finder.sent(0.0)
    finder.starved(0.5, 1.0)
    finder.answered(number, 0.0, 0.02)
    finder.starved(0.5, 1.0)
    finder.starved(2.0, 1.0)
    traces["starved"] = finder.events
    return traces


# --- paced workers against a token bucket, on a virtual clock ---------------------------
def simulated(name: str, run: Callable[[Callable[[int], Any]],
                                       Coroutine[Any, Any, Any]]) -> dict[str, list[Event]]:
    """Run ``run(new_pace)`` on a virtual loop; every pace it makes is recorded."""
    from test_pace import park
    from virtual_time import virtual_loop

    from asyncsdk._core.pace import Pace

    recorders: list[Recorder] = []

    def recorded_pace(seed: int = 1) -> Pace:
        loop = asyncio.get_running_loop()
        # Times to the microsecond: the trace's numbers stay short.
        pace = Pace(lambda: round(loop.time(), 6), park, random.Random(seed).random)
        recorder = Recorder(pace.finder)
        pace.finder = recorder  # type: ignore[assignment]
        recorders.append(recorder)
        return pace

    with virtual_loop() as loop:
        loop.run_until_complete(run(recorded_pace))
    if len(recorders) == 1:
        return {name: recorders[0].events}
    return {f"{name} ({i + 1})": r.events for i, r in enumerate(recorders)}


def simulations() -> dict[str, list[Event]]:
    from test_pace import Service, run_workers

    traces: dict[str, list[Event]] = {}

    def workers(service: Service, inputs: int, **options: Any) -> Callable[..., Any]:
        async def run(new: Callable[[int], Any]) -> None:
            await run_workers(new(1), service, inputs, **options)
        return run

    low, high = 50.0, 150.0  # a small service: short traces that still see every phase
    traces |= simulated("one process", workers(Service(limit=lambda t: high), 300))
    traces |= simulated("a limit that drops and comes back", workers(
        Service(limit=lambda t: low if 1.0 <= t < 2.5 else high), 700))
    traces |= simulated("a slow service", workers(
        Service(limit=lambda t: high), 250, answer_time=0.1))
    traces |= simulated("no Retry-After", workers(
        Service(limit=lambda t: high), 250, wait=None))
    traces |= simulated("a restored limit", workers(
        Service(limit=lambda t: low if t < 1.0 else high), 450))

    async def two(new: Callable[[int], Any]) -> None:
        service = Service(limit=lambda t: 150.0)
        await asyncio.gather(run_workers(new(1), service, 250),
                             run_workers(new(2), service, 250))

    traces |= simulated("two paces on one key", two)
    return traces


# --- random sequences -----------------------------------------------------------------
def random_trace(seed: int, events: int = 250) -> list[Event]:
    """Events in random order, on a clock that only moves forward: sends, their answers
    (mostly answered, some refused, a few failed, some never), held-back sends and
    questions. A hidden limit makes refusals likelier while sends come fast; in a calm
    trace they are rare otherwise (its probes climb far)."""
    rand = random.Random(seed)
    finder = Recorder()
    now = 0.0
    pending: list[tuple[int, float]] = []
    recent: list[float] = []
    limit = rand.choice([50.0, 200.0, 800.0])
    quiet = rand.choice([0.15, 0.01])  # refused while not busy
    for _ in range(events):
        now = round(now + rand.expovariate(limit * rand.choice([0.5, 1.0, 2.0])), 6)
        roll = rand.random()
        if roll < 0.45 or not pending:
            pending.append((finder.sent(now), now))
            recent = [t for t in recent if t > now - 0.1] + [now]
        elif roll < 0.88:
            send, at = pending.pop(rand.randrange(len(pending)))
            busy = len(recent) / 0.1 > limit
            what = rand.random()
            if what < 0.05:
                finder.failed(send)
            elif what < (0.7 if busy else quiet):
                finder.refused(send, at, now)
            else:
                finder.answered(send, at, now)
        elif roll < 0.97:
            finder.held_back(now)
        else:
            finder.starved(now, rand.choice([0.05, 1.0]))
        if rand.random() < 0.01:
            now += rand.choice([0.3, 1.0, 5.0])  # a lull
    return finder.events


def random_traces(count: int = 10) -> dict[str, list[Event]]:
    return {f"random {seed}": random_trace(seed) for seed in range(count)}


def main() -> None:
    traces = unit_scenarios() | branch_scenarios() | simulations() | random_traces()
    FIXTURE.parent.mkdir(exist_ok=True)
    text = json.dumps(traces, separators=(",", ":"), allow_nan=False)
    FIXTURE.write_text(text.replace("],[", "],\n[") + "\n", encoding="utf-8")
    print(f"{FIXTURE}: {len(traces)} traces, "
          f"{sum(len(t) for t in traces.values())} events", file=sys.stderr)


if __name__ == "__main__":
    main()
