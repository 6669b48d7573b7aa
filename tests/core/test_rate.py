"""The rate finder alone (``asyncsdk.pacing``: ``RateFinder``, ``PaceConstants``,
``Phase``), without a loop: times are given.

What is checked: the estimate from refused sends is exact; an unsure one probes soon;
probes near the rate found go in small steps; one episode cuts once; the phases move as
the module says; the constants are one record, checked, and the finder obeys them; and
the machine is deterministic (no clock, no randomness inside). That it decides exactly
as before it was one explicit machine: ``test_rate_traces.py``.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
from pathlib import Path

import attrs
import pytest
from rate_traces import FIXTURE, episode_at_400, replay

import asyncsdk
from asyncsdk.pacing import DEFAULT_CONSTANTS, PaceConstants, Phase, RateFinder

C = DEFAULT_CONSTANTS


def test_the_estimate_is_the_answered_sends_between_refused_ones() -> None:
    """Refused sends bracket the service's refills: the estimate is exact, the rate cut
    to ``backoff_share`` x it."""
    finder = RateFinder()
    episode_at_400(finder)
    assert finder.estimate == pytest.approx(400, rel=0.02)
    assert finder.rate == pytest.approx(C.backoff_share * 400, rel=0.02)
    assert not finder.starting and finder.phase is Phase.RESTING


@pytest.mark.parametrize("answered_before", [0.0, 0.4])
def test_an_estimate_far_below_what_was_answered_lately_probes_again_soon(
        answered_before: float) -> None:
    """The 400/s episode above, after ``answered_before`` seconds of sends answered at
    1000/s (what the service took lately: more than it says now, as after the
    start-up's flood, whose brackets came out low). Alone the estimate is sure and the
    rate rests; after them it is not, and a probe comes soon."""
    finder = RateFinder()
    start = answered_before
    for i in range(int(answered_before * 1000)):
        at = i / 1000
        finder.answered(finder.sent(at), at, at + 0.02)
    episode_at_400(finder, start)
    assert finder.estimate == pytest.approx(400, rel=0.02)
    rested = finder.rate
    finder.held_back(start + 0.2 + 2 * C.soon_probe_seconds)
    assert (finder.rate > rested) is (answered_before > 0)
    assert (finder.phase is Phase.PROBING) is (answered_before > 0)


def test_probes_near_the_rate_found_go_in_small_steps() -> None:
    """After the sure 400/s episode above the rate rests, then probes: near the rate
    found each step is at most 12 % (``near_probe_step``; a doubling step overshot to
    1.5-2.5 R before the bucket's hidden burst was spent, measured), until a 429."""
    finder = RateFinder()
    episode_at_400(finder)
    rates = [finder.rate]
    now = 0.2 + C.longest_rest_seconds
    for _ in range(12):
        now += C.probe_gap_seconds
        finder.held_back(now)
        rates.append(finder.rate)
    steps = [b / a for a, b in itertools.pairwise(rates) if b != a]
    assert len(steps) >= 8
    assert max(steps) <= 1 + C.near_probe_step + 1e-9


def test_one_episode_cuts_once() -> None:
    """Refusals of sends made before the cut refine; only a later send's refusal cuts."""
    finder = RateFinder()
    numbers = [(finder.sent(i / 1000), i / 1000) for i in range(10)]
    for number, at in numbers[:5]:
        finder.answered(number, at, at + 0.02)
    finder.refused(*numbers[5], 0.025)  # the first 429: a cut (blind: no estimate yet)
    cut = finder.rate
    finder.refused(*numbers[6], 0.026)  # sent before the cut: same episode, no new cut
    assert finder.rate == cut
    later = finder.sent(0.04)
    finder.refused(later, 0.04, 0.05)  # sent after the cut (and its settling): a new one
    assert finder.rate < cut


def test_starved_means_nothing_answered_lately() -> None:
    finder = RateFinder()
    number = finder.sent(0.0)
    assert finder.starved(0.5, 1.0)
    finder.answered(number, 0.0, 0.02)
    assert not finder.starved(0.5, 1.0)
    assert finder.starved(2.0, 1.0)


def test_the_phases_move_as_the_module_says() -> None:
    """STARTUP until the first 429, RESTING after a cut, PROBING once a probe is due and
    a send is held back, RESTING again at the 429 that ends the probes: back at the
    last step that stood a probe gap without one."""
    finder = RateFinder()
    assert finder.phase is Phase.STARTUP and finder.starting
    episode_at_400(finder)
    assert finder.phase is Phase.RESTING
    finder.held_back(0.21)  # not yet due: nothing changes
    assert finder.phase is Phase.RESTING
    finder.held_back(0.2 + C.longest_rest_seconds)
    assert finder.phase is Phase.PROBING
    raised = finder.rate
    now = 0.2 + C.longest_rest_seconds + C.probe_gap_seconds
    finder.held_back(now)
    assert finder.rate > raised
    taken = finder.sent(now)
    finder.answered(taken, now, now + 0.02)  # the service takes: a 429 now is a limit
    send = finder.sent(now + 0.02)
    finder.refused(send, now + 0.02, now + 0.021)
    assert finder.phase is Phase.RESTING
    assert finder.rate == raised
    # Nothing answered for ``dark_after_seconds``: a 429 finds the service dark. No
    # probe there; the first answer resumes near the peak (400/s), resting.
    dark = now + 0.02 + C.dark_after_seconds + 0.1
    finder.refused(finder.sent(dark), dark, dark + 0.001)
    assert finder.phase is Phase.DARK
    finder.held_back(dark + 1.0)
    assert finder.phase is Phase.DARK
    back = finder.sent(dark + 1.5)
    finder.answered(back, dark + 1.5, dark + 1.52)
    assert finder.phase is Phase.RESTING
    assert finder.rate >= C.backoff_share * 0.98 * 400


def test_a_blackout_teaches_nothing_and_the_first_answer_resumes_near_the_peak() -> None:
    """The 400/s episode, then the service takes nothing: its bucket's last tokens are
    answered a while, then every send is refused. Its first second reads as a falling
    limit (the rate is cut), but once nothing was answered for ``dark_after_seconds``
    the refusals teach nothing; the first answer after it resumes at ``backoff_share``
    x the rate found before (it stayed at the cut: a quarter of it, slowly probed up)."""
    finder = RateFinder()
    episode_at_400(finder)
    start, every, cut = 0.2, 0.0025, math.inf
    for i in range(round(2.0 / every)):  # 2 s of sends at 400/s, the first 10 taken
        at = start + i * every
        (finder.answered if i < 10 else finder.refused)(finder.sent(at), at, at + 0.02)
        cut = min(cut, finder.rate)
    assert cut < 0.5 * 400  # the blackout's first second, read as a falling limit
    assert finder.phase is Phase.DARK
    back = finder.sent(2.5)
    finder.answered(back, 2.5, 2.52)
    assert finder.rate >= C.backoff_share * 0.98 * 400
    assert finder.phase is Phase.RESTING


def test_a_cap_found_before_any_answer_is_the_window() -> None:
    """The start-up's window goes at once; a cap of 8 in flight refuses 8 of its 16
    sends (in any order: they reach the service as they may) before any answer timed a
    round trip. The window becomes the 8 the service holds (it was 15 before, every
    one above 8 refused again; a blind 10/s before that), and the first answer paces
    at twice window / round trip, so that the window, not the rate, holds back."""
    finder = RateFinder()
    sends = [finder.sent(0.0) for _ in range(C.start_window)]
    for number in sends[1::2]:
        finder.refused(number, 0.0, 0.001)
    assert finder.phase is Phase.RESTING
    assert finder.window == 8 and math.isinf(finder.rate)
    finder.answered(sends[0], 0.0, 0.02)
    assert finder.rate == pytest.approx(C.window_gain * 8 / 0.02)
    assert finder.window == 8


def test_a_start_up_429_read_late_is_the_cap_not_the_dark() -> None:
    """A loaded client reads the start-up's 429s 1.4 s after their sends, nothing sent
    since (the window full) and nothing answered yet: that is no blackout (the refused
    sends are not recent; before, it was the dark, the start-up began again and the cap
    was missed: 0.24 of it, 8 % 429, measured), but the cap of 8 the start-up met."""
    finder = RateFinder()
    sends = [finder.sent(0.0) for _ in range(C.start_window)]
    for number in sends[8:]:
        finder.refused(number, 0.0, 1.4)
    assert finder.phase is Phase.RESTING and finder.window == 8


def capped_at_8() -> tuple[RateFinder, float]:
    """A finder whose start-up met a cap of 8 in flight (8 of its 16 sends refused before
    any answer), its 8 answered 20 ms later; and the time then."""
    finder = RateFinder()
    sends = [finder.sent(0.0) for _ in range(C.start_window)]
    for number in sends[8:]:
        finder.refused(number, 0.0, 0.001)
    for number in sends[:8]:
        finder.answered(number, 0.0, 0.02)
    assert finder.window == 8
    return finder, 0.02


def fill(finder: RateFinder, now: float, count: int) -> list[int]:
    """``count`` sends at ``now``, one after the other (each with the others in flight)."""
    return [finder.sent(now) for _ in range(count)]


def test_a_full_window_at_the_cap_widens_until_a_429_finds_the_cap_again() -> None:
    """With its window full at the cap a probe gap after it was found, the window takes
    one more; the send made with 8 in flight is refused (the cap), and the window is 8
    again without a cut of the rate (it stays above what the cap lets through: the
    window holds back). Found twice, the cap rests long before the next widening; a
    widening that stands a probe gap widens twice as much next (a lifted cap is left
    fast)."""
    finder, now = capped_at_8()
    rate = finder.rate
    now += C.probe_gap_seconds
    sends = fill(finder, now, 8)
    assert finder.window == 9  # the 8th left with 7 in flight: the window was full
    extra = finder.sent(now)  # the 9th, with 8 in flight
    finder.refused(extra, now, now + 0.001)
    assert finder.window == 8 and finder.rate >= rate and finder.phase is Phase.RESTING
    for number in sends:
        finder.answered(number, now, now + 0.02)
    now += 0.02 + C.probe_gap_seconds
    for number in fill(finder, now, 8):  # found again: no widening within the rest
        finder.answered(number, now, now + 0.02)
    assert finder.window == 8
    now += C.longest_rest_seconds
    for wider in (9, 11, 15):  # no 429 at the wider window: twice the step each gap
        sends = fill(finder, now, finder.window)
        assert finder.window == wider
        for number in sends:
            finder.answered(number, now, now + 0.02)
        now += C.probe_gap_seconds


def test_a_refusal_with_room_below_the_cap_is_a_rates() -> None:
    """A cap refuses only a send made with the cap's count in flight; one refused with 2
    in flight and room for 5 more is a rate limit's: the cap is forgotten (the window
    is the rate's again, no longer held at 8 nor widened), and the rate falls to what
    the service answered lately, then is cut as a rate limit's episode."""
    finder, now = capped_at_8()
    rate = finder.rate
    now += 0.05
    sends = fill(finder, now, 3)
    finder.refused(sends[2], now, now + 0.001)
    assert finder.rate < rate and finder.phase is Phase.RESTING
    assert finder.window == max(C.min_window, math.ceil(C.window_gain * finder.rate * 0.02))
    assert finder.window != 8


def test_a_start_up_429_with_nothing_in_flight_is_a_rate_even_with_sends_after_it() -> None:
    """The start-up's first send refused (nothing in flight when it left), its answer
    slow to come while 249 later sends went: no cap refuses a send alone, so it is a
    rate's 429 (a blind cut), not a window of the 249 in flight now (what the in-flight
    count at the refusal, not at the send, made of it)."""
    finder = RateFinder()
    first = finder.sent(0.0)
    for i in range(1, 250):
        finder.sent(i * 0.002)
    finder.refused(first, 0.0, 0.6)
    assert finder.window < 249 and finder.rate < math.inf


def test_the_finder_obeys_its_constants() -> None:
    """Other constants, other decisions: the record is what the finder reads."""
    halving = RateFinder(PaceConstants(backoff_share=0.5))
    episode_at_400(halving)
    assert halving.constants.backoff_share == 0.5
    assert halving.rate == pytest.approx(0.5 * 400, rel=0.02)
    small = RateFinder(PaceConstants(start_window=3))
    assert small.window == 3


def test_the_traces_catch_a_change_of_one_constant() -> None:
    """The oracle of ``test_rate_traces.py`` sees a behaviour change: a backoff of 0.96
    instead of 0.97 makes a recorded trace differ."""
    trace = json.loads(FIXTURE.read_text(encoding="utf-8"))["one process"]
    assert not replay(trace, RateFinder())
    assert replay(trace, RateFinder(PaceConstants(backoff_share=0.96)))


@pytest.mark.parametrize(("field", "value", "allowed"), [
    ("backoff_share", 1.5, "at most 1"),
    ("backoff_share", 0.0, "above 0"),
    ("probe_gap_seconds", -1.0, "above 0"),
    ("jitter_width", math.nan, "finite"),
    ("longest_rest_seconds", math.inf, "finite"),
    ("start_window", 2.5, "whole number"),
    ("sure_answers", True, "whole number"),
    ("far_share", "0.8", "finite number"),
])
def test_constants_that_make_no_sense_are_refused(field: str, value: object,
                                                  allowed: str) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match=allowed) as info:
        PaceConstants(**{field: value})  # type: ignore[arg-type]
    assert info.value.field == field and field in str(info.value)


@pytest.mark.parametrize("constants", [{"start_window": 3}, 5, "defaults"])
def test_a_finder_given_what_is_not_constants_says_so(constants: object) -> None:
    """``RateFinder(constants)`` of another type: ``InvalidInputError`` naming
    ``constants`` (an ``AttributeError`` before)."""
    with pytest.raises(asyncsdk.InvalidInputError, match="PaceConstants") as info:
        RateFinder(constants)  # type: ignore[arg-type]
    assert info.value.field == "constants"


@pytest.mark.parametrize("event", ["answered", "refused", "failed"])
@pytest.mark.parametrize("send", [1, 7, True, 0.0])
def test_an_event_of_a_send_never_made_is_refused(event: str, send: object) -> None:
    """A driver (the fleet) tells the finder of a send it did not number: an
    ``InvalidInputError`` naming ``send``, and the finder is as it was (an
    ``IndexError``, or a float taken for a number, before)."""
    finder = RateFinder()
    finder.sent(0.0)
    before = (finder.rate, finder.window, finder.unanswered())
    args = (send,) if event == "failed" else (send, 0.0, 0.02)
    with pytest.raises(asyncsdk.InvalidInputError, match="send") as info:
        getattr(finder, event)(*args)
    assert info.value.field == "send"
    assert (finder.rate, finder.window, finder.unanswered()) == before


def test_the_constants_are_one_frozen_record_with_a_reason_each() -> None:
    """Frozen (a driver cannot change another's), and every field says why it is."""
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        C.backoff_share = 0.5  # type: ignore[misc]
    source = Path(asyncsdk.pacing.__file__).with_name("_core").joinpath("rate.py")
    lines = source.read_text(encoding="utf-8").splitlines()
    for field in attrs.fields(PaceConstants):
        at = next(i for i, line in enumerate(lines)
                  if line.strip().startswith(f"{field.name}:"))
        above = lines[at - 1].strip()
        assert above.startswith("#:") or lines[at - 1].strip().startswith(
            tuple(f"{f.name}:" for f in attrs.fields(PaceConstants))), field.name


def test_the_finder_reads_no_clock_and_draws_nothing() -> None:
    """Deterministic given its events and constants: the machine's module imports no
    clock, no randomness, no loop (the fleet's workers replicate it from one stream)."""
    source = Path(asyncsdk.pacing.__file__).with_name("_core").joinpath("rate.py")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and not node.level}
    assert imported <= {"__future__", "enum", "itertools", "math", "bisect",
                        "collections", "attrs"}, imported


def test_two_finders_fed_the_same_events_decide_the_same() -> None:
    a, b = RateFinder(), RateFinder()
    episode_at_400(a)
    episode_at_400(b)
    for now in (4.3, 4.4, 4.5):
        a.held_back(now)
        b.held_back(now)
    assert (a.rate, a.window, a.estimate, a.phase) == (b.rate, b.window, b.estimate,
                                                       b.phase)


def test_a_refusal_just_after_the_cut_is_the_same_episode() -> None:
    """The first sends after a cut find the bucket empty: a refusal of one made within
    ``cut_settle_seconds`` of the cut refines its episode, and does not cut again (each
    such cut took 10 % more: 451 -> 197/s in 70 ms for two processes); one made later
    is a new episode."""
    finder = RateFinder()
    finder.starting = False
    finder.rate = 400.0
    for i in range(20):  # answered at 400/s
        at = i / 400
        finder.answered(finder.sent(at), at, at + 0.02)
    cut_at = 0.06
    finder.refused(finder.sent(0.05), 0.05, cut_at)  # a cut, no estimate yet
    cut = finder.rate
    assert cut < 400.0
    soon = cut_at + C.cut_settle_seconds / 2
    finder.refused(finder.sent(soon), soon, soon + 0.001)
    assert finder.rate == cut
    later = cut_at + 2 * C.cut_settle_seconds
    finder.refused(finder.sent(later), later, later + 0.001)
    assert finder.rate < cut


def test_the_sends_kept_are_those_of_the_last_send_memory_seconds() -> None:
    """``unanswered`` and ``starved`` see exactly the sends of the last
    ``send_memory_seconds``, long after the first ones were forgotten (forgetting is
    done in batches: the kept ones must not drift), and an answer to a forgotten send
    changes nothing."""
    finder = RateFinder(PaceConstants(send_memory_seconds=0.2))
    sent: list[tuple[int, float]] = []  # (number, time) of every send, all kept here
    answered: set[int] = set()
    for i in range(1000):  # 1 s at 1,000 sends a second: forgotten five times over
        now = i / 1000.0
        sent.append((finder.sent(now), now))
        if i % 3 and i >= 10:  # answer a send made 10 ms ago, one in three left pending
            number, at = sent[i - 10]
            finder.answered(number, at, now)
            answered.add(number)
        elif i >= 241:  # and one made 0.24 s ago, forgotten (perhaps not yet dropped)
            number, at = sent[i - 241]
            finder.answered(number, at, now)
            answered.add(number)
        kept = [number for number, at in sent[-300:] if at >= now - 0.2]
        assert finder.unanswered() == len([n for n in kept if n not in answered]), i
    last = 999 / 1000.0
    early, at = sent[100]  # forgotten long ago, never answered
    finder.answered(early, at, last)
    assert finder.unanswered() == len([n for n, at in sent
                                       if at >= last - 0.2 and n not in answered])
    assert [number for number, _ in sent] == list(range(1000))
    assert not finder.starved(last, 0.02)  # sends made 10-20 ms ago were answered
    assert finder.starved(last + 10.0, 0.02)
