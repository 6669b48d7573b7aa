"""Near the end of a run the pace makes no probe whose 429 would wait past the end
(``PaceConstants.no_probe_before_end_seconds``): the finder's rule, the pace's count of
the inputs its runs have left (``Backlog``), and ``check_many`` counting them down.

Why: a probe's 429 holds its check for the wait the service asks (1 s), so one in the
last second of a run ends it up to a second late for a few percent of a second's rate
(the figures: benchmarks/RESULTS.md, "no probe whose 429 would wait past the end")."""

from __future__ import annotations

import asyncio
import itertools
import math
import random
from collections.abc import Callable

import pytest
from helpers import API_KEY, USERNAME
from rate_traces import episode_at_400
from test_pace import park
from test_rate_dark_and_cap import Service, run
from virtual_time import virtual_loop

import asyncsdk
from asyncsdk._core.backlog import Backlog
from asyncsdk._core.pace import Pace
from asyncsdk.models.validation import CheckResult
from asyncsdk.pacing import DEFAULT_CONSTANTS, Phase, RateFinder
from asyncsdk.resources.validation.check_many import check_many
from asyncsdk.testing import RateLimit, Sandbox

C = DEFAULT_CONSTANTS
SEEDS = 6
FOUND = C.backoff_share * 400  # the rate after the 400/s episode of ``episode_at_400``
DUE = 0.2 + C.longest_rest_seconds  # a probe is due by then, however long the rest


def near(rate: float) -> bool:
    return True


def far(rate: float) -> bool:
    return False


def test_a_due_probe_is_made_only_while_the_end_is_far() -> None:
    asked: list[float] = []

    def ending(rate: float) -> bool:
        asked.append(rate)
        return True

    finder = RateFinder()
    episode_at_400(finder)
    finder.held_back(0.25, ending)  # resting, no probe due: the end is not asked about
    assert asked == []
    finder.held_back(DUE, ending)
    assert asked == [pytest.approx(FOUND, rel=0.02)]
    assert finder.phase is Phase.RESTING and finder.rate == pytest.approx(FOUND, rel=0.02)
    finder.held_back(DUE + 0.01, far)  # more inputs came: the probe is made after all
    assert finder.phase is Phase.PROBING and finder.rate > FOUND * 1.02


def test_a_probe_under_way_falls_back_to_the_step_that_stood() -> None:
    finder = RateFinder()
    episode_at_400(finder)
    rates = []
    for k in range(3):
        finder.held_back(DUE + k * C.probe_gap_seconds, far)
        rates.append(finder.rate)
    assert rates[0] < rates[1] < rates[2]
    finder.held_back(DUE + 3 * C.probe_gap_seconds, near)
    assert finder.phase is Phase.RESTING
    assert finder.rate == rates[1]  # it stood a probe gap without a 429
    finder.held_back(DUE + 4 * C.probe_gap_seconds, near)
    assert finder.rate == rates[1]


def test_below_the_rate_found_a_probe_climbs_to_it_and_no_further() -> None:
    finder = RateFinder()
    episode_at_400(finder)
    finder.rate = 0.9 * FOUND  # a yield: below what the service was found to take
    rates = []
    for k in range(8):
        finder.held_back(DUE + k * C.probe_gap_seconds, near)
        rates.append(finder.rate)
    assert rates[0] > 0.9 * FOUND
    assert max(rates) == pytest.approx(C.backoff_share * finder.estimate)
    assert rates[-1] == max(rates)


def test_far_below_the_peak_a_probe_climbs_as_always() -> None:
    """The peak is far above (another client on the key finished: its share is free):
    the end near or not, the same steps."""
    finders = [RateFinder(), RateFinder()]
    for finder, ending in zip(finders, (near, far), strict=True):
        episode_at_400(finder)
        finder.rate = 0.5 * FOUND
        for k in range(4):
            finder.held_back(DUE + k * C.probe_gap_seconds, ending)
    assert finders[0].rate == finders[1].rate > 0.6 * FOUND


async def test_the_pace_is_ending_once_every_runs_inputs_take_less_than_the_quiet() -> None:
    """The pace sums the backlogs of its runs; one of unknown length, or none at all,
    means never; the quiet is the constant or the wait a 429 last asked, if longer."""
    pace = Pace(lambda: 0.0, park, random.Random(1).random)
    assert pace.inputs_left is None and not pace.ending(1.0)  # no run told it anything
    first, second = Backlog(300), Backlog(150)
    pace.expect(first)
    pace.expect(second)
    assert pace.inputs_left == 450
    assert not pace.ending(400.0) and pace.ending(451.0)  # 450 left: 1.0 s at 450/s
    unknown = Backlog(None)
    pace.expect(unknown)
    assert pace.inputs_left is None and not pace.ending(10_000.0)
    del unknown  # a run that is gone is forgotten
    assert pace.inputs_left == 450 and pace.ending(451.0)
    ticket = await pace.ready(False, math.inf)
    assert ticket is not None
    pace.done(ticket, 429, 3.0)  # the service asks 3 s: the last 3 s are quiet
    assert pace.ending(151.0) and not pace.ending(149.0)
    first.left = second.left = 0
    assert pace.ending(1e-9)


def test_backlog_of_a_source() -> None:
    class Broken:
        def __len__(self) -> int:
            raise RuntimeError("no length")

        def __iter__(self) -> object:
            return iter(())

    assert Backlog.of(["a", "b"]).left == 2
    assert Backlog.of(("a",)).left == 1
    assert Backlog.of(x for x in "ab").left is None
    assert Backlog.of(Broken()).left is None
    backlog = Backlog(1)
    backlog.take()
    backlog.take()  # never below 0
    assert backlog.left == 0
    unknown = Backlog(None)
    unknown.take()
    assert unknown.left is None


@pytest.mark.parametrize("source", ["list", "generator"])
async def test_check_many_tells_its_pace_the_inputs_left(source: str) -> None:
    emails = [f"a{i}@example.com" for i in range(7)]
    seen: list[int | None] = []
    async with Sandbox(api_key=API_KEY, username=USERNAME) as sb, sb.client(
            max_retries=0) as client:
        assert client.validation.pace().inputs_left is None
        given = emails if source == "list" else (e for e in emails)
        async for _ in client.validation.check_many(given, concurrency=2):
            seen.append(client.validation.pace().inputs_left)
    assert len(seen) == len(emails)
    if source == "list":
        assert seen == sorted(seen, reverse=True)  # type: ignore[type-var]
        assert seen[0] is not None and seen[0] < len(emails) and seen[-1] == 0
    else:
        assert seen == [None] * len(emails)


async def test_a_run_stopped_early_has_nothing_left() -> None:
    """Refused credentials stop the run after its first check: the inputs it never took
    are not left to send (the pace would wait for them)."""
    backlog = Backlog(20)

    async def refused(email: str, *, validity_timeout: float,
                      request_timeout: float | None) -> CheckResult:
        raise asyncsdk.AuthenticationError("refused", operation="validation.check")

    run_ = check_many(refused, [f"a{i}@example.com" for i in range(20)], concurrency=1,
                      adaptive=True, validity_timeout=60.0, request_timeout=None,
                      backlog=backlog)
    first = await anext(run_)
    assert isinstance(first.error, asyncsdk.AuthenticationError)
    assert backlog.left == 19
    rest = [o async for o in run_]
    assert len(rest) == 19 and backlog.left == 0


async def ok(email: str, *, validity_timeout: float,
             request_timeout: float | None) -> CheckResult:
    raise asyncsdk.InvalidInputError("not an address", field="email")  # never sent


@pytest.mark.parametrize("ending", ["closed", "source fails"])
async def test_however_a_run_ends_it_leaves_nothing_to_send(ending: str) -> None:
    """Closed by its consumer after one outcome, or ended by its source's error: the
    run's backlog is 0 (a count left over would keep its pace from the end's rule for
    the runs that share it, until the run is collected)."""
    backlog = Backlog(10)

    def source() -> object:
        yield "a@example.com"
        yield "b@example.com"
        if ending == "source fails":
            raise OSError("the file went away")
        yield from (f"c{i}@example.com" for i in range(8))

    class Counted:
        def __len__(self) -> int:
            return 10

        def __iter__(self) -> object:
            return source()

    run_ = check_many(ok, Counted(), concurrency=1, adaptive=True,  # type: ignore[arg-type]
                      validity_timeout=60.0, request_timeout=None, backlog=backlog)
    if ending == "closed":
        await anext(run_)
        assert backlog.left == 9
        await run_.aclose()
    else:
        with pytest.raises(OSError):
            [o async for o in run_]
    assert backlog.left == 0


class Watched(RateFinder):
    """A finder that records each ``held_back``: when, what the pace said when asked
    whether the end is near (None: not asked, no probe was due), the rate before and
    after."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[float, bool | None, float, float]] = []

    def held_back(self, now: float, ending: Callable[[float], bool] | None = None) -> None:
        assert ending is not None  # the pace always gives one
        before = self.rate
        said: list[bool] = []

        def asked(rate: float) -> bool:
            said.append(ending(rate))
            return said[-1]

        super().held_back(now, asked)
        self.calls.append((now, said[0] if said else None, before, self.rate))


def test_a_run_that_counts_its_inputs_probes_no_higher_near_its_end() -> None:
    """Two processes on one key, 600 inputs each, simulated over a few seeds: told its
    inputs, each pace says the end is near only in its own last second or so (when a
    probe is due then), and from then on its rate never climbs above what the service
    was found to take, unless far below its peak (the other process is done). Not told
    (a source of no length), a pace never says so."""
    near_ends = 0
    for seed, counted in itertools.product(range(SEEDS), (True, False)):
        for calls, end in simulated(seed, counted):
            said = [(now, before, after) for now, near_end, before, after in calls
                    if near_end]
            assert any(near_end is False and after > before
                       for _, near_end, before, after in calls)  # probes while far
            if not counted:
                assert said == []
                continue
            near_ends += bool(said)
            assert all(now >= end - 2.0 for now, _, _ in said)
            known = C.backoff_share * 520  # above the estimate of any share of R = 500
            assert all(after <= max(before, known) for _, before, after in said)
    assert near_ends >= SEEDS


Calls = list[tuple[float, bool | None, float, float]]


def simulated(seed: int, counted: bool) -> list[tuple[Calls, float]]:
    """Two processes on one key (R = 500/s, burst 50, 20 ms, ``Retry-After: 1``), 600
    inputs each: for each, the calls of its finder's ``held_back``, and its end."""
    out: list[tuple[Calls, float]] = []

    async def process(service: Service, i: int) -> None:
        loop = asyncio.get_running_loop()
        pace = Pace(loop.time, park, random.Random(seed * 10 + i).random)
        pace.finder = finder = Watched()
        await run(pace, service, 600, on_the_way=0.0005, seed=7, counted=counted)
        out.append((finder.calls, loop.time()))

    async def main() -> None:
        service = Service(RateLimit(500.0, 50, 1.0), (), 0.02, way_back=0.0005)
        await asyncio.gather(process(service, 0), process(service, 1))

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    return out
