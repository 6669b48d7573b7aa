"""Issues 31 and 40: bulk work at the service's pace. ``python -m benchmarks.scen_pace [--quick]
[--rounds N] [--only NAME ...] [--no-write]`` (its own table: not part of
``python -m benchmarks``, whose scenarios measure the client's CPU).

A local service (``benchmarks.pace_server``, its own process) enforces a token bucket
per API key: R = 500 checks a second, a burst of 50, 20 ms to answer a check, ``429``
with ``Retry-After: 1`` when the bucket is empty. Each scenario runs asyncsdk with its
defaults (``check_many(addresses)``, nothing tuned) and the floor (raw aiohttp with a
fixed semaphore hand-tuned to the limit: rate x answer time in flight, a 429 sent again
after its Retry-After) in the same round, alternating which goes first, each in fresh
processes; the figures are medians of the rounds (min-max beside). From the service's
log of every request:

* goodput: inputs answered a second from the first request to the last answer, as a
  fraction of the rate the service offered over that time (R, except while its limit is
  lowered);
* 429 share: requests answered 429 / all requests;
* failed for a 429: inputs whose outcome is ``RateLimitError`` (reported by the client);
* once each: every input got exactly one outcome and none was answered (paid) twice.

Scenarios: ``one`` (one process, 1,200 addresses), ``no_retry_after`` (the 429 without
Retry-After), ``slow`` (100 ms to answer), ``drop`` (2,200 addresses; the limit falls to
R/3 one second in, for two seconds, then comes back), ``two`` and ``two_long`` (two
processes on one key, started together: 1,200 addresses in all, 2.4 s at R, and 5,000,
10 s), ``cap`` (issue 40: at most 8 checks of the key in flight, one more answered 429
without Retry-After, the bucket far above what the cap allows; goodput is over 8 / the
service time), ``recovery`` (issue 40: 1,500 addresses; one second in, the service takes
nothing for 2 s, every request 429 with Retry-After, then takes again: the time until
the client is back at 0.9 R and its goodput over the next second, for the client that
lived through it and for a fresh one started as it ends, on a bucket as empty),
``fleet`` and ``fleet4`` (asyncsdk.fleet: 2 or 4 arq workers and Redis, 2,200 addresses
in batches of 100; needs a redis-server, skipped without one). With several processes,
the most requests sent in any span beyond R x its length + the burst is reported (what
the service let through stays under it by construction). Issue 40's targets are checked
on asyncsdk's medians, the floor's of the same run beside each. The table goes to
``benchmarks/RESULTS.md`` between ``<!-- pace40:start -->`` and ``<!-- pace40:end -->``
(appended at the end the first time; issue 31's table stays as it stood; ``--no-write``:
printed only).

The machine may be shared and has few cores: the service, the clients (and Redis and
the workers) share them. The service's rate does not move with the load, the client's
CPU does; an overloaded client shows as goodput below the floor's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._common import ROOT, SERVER_CPU, Section, Target

R = 500.0
BURST = 50
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
# Issue 40's table has its own markers: a run appends it once, then replaces it, and
# leaves issue 31's table (between ``pace:start`` and ``pace:end``) as it stood.
START = "<!-- pace40:start -->"
END = "<!-- pace40:end -->"
#: The addresses the fresh client spends its bucket on before its blackout.
DRAIN = "drain-"
HEADING = "## Issue 40: bulk at the service's pace, the generated table"
SCENARIOS = ("one", "no_retry_after", "slow", "drop", "two", "two_long", "cap", "recovery",
             "fleet", "fleet4")
#: The contender that starts when the service takes again (``recovery``), beside the
#: one that lived through the blackout: its bucket emptied first, as the other's is.
FRESH = "fresh"


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    count: int  # addresses in all
    service: float = 0.02
    retry_after: str | None = "1"
    drop: tuple[float, float, float] | None = None  # at, length, factor (0: a blackout)
    processes: int = 1
    floor_in_flight: int = 11
    rate: float = R
    max_in_flight: int | None = None  # a cap in flight: 429 without Retry-After beyond it

    @property
    def allowed(self) -> float:
        """The rate the service takes at most: its bucket's, or what its cap in flight
        lets through (cap / service time), whichever is lower."""
        if self.max_in_flight is None:
            return self.rate
        return min(self.rate, self.max_in_flight / self.service)

    @property
    def blackout(self) -> bool:
        return self.drop is not None and self.drop[2] == 0.0

    @property
    def contenders(self) -> tuple[str, ...]:
        return ("asyncsdk", FRESH, "floor") if self.blackout else ("asyncsdk", "floor")


def scenarios(quick: bool) -> dict[str, Scenario]:
    def count(full: int) -> int:
        return 300 if quick else full

    # A blackout one second in (0.4 s in a smoke run), for 2 s (1 s): every request
    # 429 with Retry-After; the client then has a second's work and more left.
    blackout = (0.4, 1.0, 0.0) if quick else (1.0, 2.0, 0.0)
    return {s.name: s for s in (
        Scenario("one", "one process", count(1200)),
        Scenario("no_retry_after", "no Retry-After on the 429", count(1200),
                 retry_after=None),
        Scenario("slow", "100 ms service time", count(1200), service=0.1,
                 floor_in_flight=51),
        Scenario("drop", "limit drops to R/3 for 2 s, then back", count(2200),
                 drop=(1.0, 2.0, 1 / 3)),
        Scenario("two", "two processes, one key, 2.4 s", count(1200), processes=2,
                 floor_in_flight=6),
        Scenario("two_long", "two processes, one key, 10 s", count(5000), processes=2,
                 floor_in_flight=6),
        Scenario("cap", "a cap of 8 in flight (429 without Retry-After)", count(1000),
                 retry_after=None, rate=100 * R, max_in_flight=8, floor_in_flight=8),
        Scenario("recovery", "the service takes nothing for "
                 f"{blackout[1]:g} s, then takes again", 600 if quick else 1500,
                 drop=blackout),
        Scenario("fleet", "the arq fleet, 2 workers", count(2200), processes=2,
                 floor_in_flight=6),
        Scenario("fleet4", "the arq fleet, 4 workers", count(2200), processes=4,
                 floor_in_flight=3),
    )}


# --- one run -----------------------------------------------------------------------------
@dataclass
class Run:
    """What one contender did in one round."""

    goodput: float  # x the rate offered
    share_429: float
    failed_429: int
    once_each: bool
    paid_twice: int
    requests: int
    extra: dict[str, float] = field(default_factory=dict)


def _post(url: str, data: dict[str, Any]) -> None:
    request = urllib.request.Request(url, json.dumps(data).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def setup(url: str, s: Scenario, contender: str = "asyncsdk") -> None:
    drop = s.drop
    if contender == FRESH and drop is not None:  # the blackout from the drain on
        drop = (0.0, drop[1], drop[2])
    _post(url + "/control/setup", {"rate": s.rate, "burst": BURST, "service": s.service,
                                   "retry_after": s.retry_after,
                                   "drop": list(drop) if drop else None,
                                   "max_in_flight": s.max_in_flight})


def offered(s: Scenario, start: float, end: float, contender: str = "asyncsdk") -> float:
    """What the service offered between ``start`` and ``end`` (seconds of the run)."""
    tokens = s.allowed * (end - start)
    if s.drop is not None:
        at, length, factor = s.drop
        at = 0.0 if contender == FRESH else at
        overlap = max(0.0, min(end, at + length) - max(start, at))
        tokens -= s.allowed * (1 - factor) * overlap
    return tokens


def restored_at(s: Scenario, contender: str) -> float:
    """When the service takes again after the drop (seconds of the run)."""
    assert s.drop is not None
    at, length, _ = s.drop
    return (0.0 if contender == FRESH else at) + length


def measure(url: str, s: Scenario, reports: list[dict[str, Any]],
            contender: str = "asyncsdk") -> Run:
    """Read the service's log of the run just made, with the clients' ``reports``
    (the fresh client's drain, which only emptied its bucket, left out)."""
    events = [e for e in _get(url + "/control/log")["events"]
              if not str(e[2]).startswith(DRAIN)]
    taken = [e for e in events if e[3]]
    answered = Counter(e[2] for e in taken)
    end = max(e[0] for e in taken) + s.service
    goodput = len(answered) / offered(s, 0.0, end, contender)
    refused = len(events) - len(taken)
    outcomes = sum(r["outcomes"] for r in reports)
    once = (all(r["most_per_input"] == 1 == r["least_per_input"] for r in reports)
            and outcomes == s.count)
    run = Run(goodput, refused / len(events), sum(r["failed_429"] for r in reports),
              once, sum(n - 1 for n in answered.values() if n > 1), len(events))
    if s.blackout:  # the fresh client's figures from its first check
        restore = events[0][0] if contender == FRESH else restored_at(s, contender)
        run.extra.update(_after_blackout(events, s, restore))
    elif s.drop is not None:
        run.extra.update(_around_the_drop(events, s))
    if s.processes > 1:
        run.extra["sent_above"] = above_the_limit([e[0] for e in events], s.rate)
        run.extra["taken_above"] = above_the_limit([e[0] for e in taken], s.rate)
    return run


def above_the_limit(times: list[float], rate: float) -> float:
    """The most requests in any span of the log beyond what a bucket lets through in it
    (``rate`` x its length + the burst): 0 or less means never above the limit by more
    than the burst. (What the service let through is bounded so by construction; what
    the clients sent, 429s included, is the clients' own doing.)"""
    times = sorted(times)
    lowest, most = float("inf"), float("-inf")
    for j, t in enumerate(times):
        level = j - rate * t
        lowest = min(lowest, level)
        most = max(most, level - lowest + 1)
    return float(math.floor(most + 1e-9) - BURST)  # whole requests


def _back_to(times: list[float], since: float, rate: float) -> float:
    """The time from ``since`` until 200 ms of ``times`` (answers) first reach 0.9 x
    ``rate`` (nan: never)."""
    times = sorted(t for t in times if t >= since)
    j = 0
    for i, t in enumerate(times):
        j = max(j, i)
        while j < len(times) and times[j] < t + 0.2:
            j += 1
        if (j - i) >= 0.9 * rate * 0.2:
            return t - since
    return float("nan")


def _after_blackout(events: list[list[Any]], s: Scenario, restore: float
                    ) -> dict[str, float]:
    """From the moment the service takes again: the time until 200 ms of answers first
    reach 0.9 R, the goodput over the next second (x R), and how long the first 200
    checks answered took (the issue's figure: 4-5.5 s for a used client, 0.25 s for a new
    one)."""
    times = sorted(e[0] for e in events if e[3] and e[0] >= restore)
    first = times[199] - restore if len(times) >= 200 else float("nan")
    within = sum(1 for t in times if t < restore + 1.0) / s.allowed
    return {"back_after": _back_to(times, restore, s.allowed), "goodput_1s": within,
            "first_200": first}


def _around_the_drop(events: list[list[Any]], s: Scenario) -> dict[str, float]:
    """The 429 share from one second after the drop to the restore, and the time from
    the restore until 200 ms of answers first reach 0.9 R."""
    assert s.drop is not None
    at, length, _ = s.drop
    low = [e for e in events if at + 1.0 <= e[0] < at + length]
    share = sum(not e[3] for e in low) / len(low) if low else float("nan")
    restore = at + length
    back = _back_to([e[0] for e in events if e[3]], restore, s.allowed)
    return {"429_after_drop": share, "back_after": back}


def run_children(url: str, s: Scenario, contender: str, key: str) -> list[dict[str, Any]]:
    """The scenario's client processes (started together), their reports."""
    start_at = time.time() + 1.5  # every process imported and connected by then
    per = s.count // s.processes
    procs = []
    for p in range(s.processes):
        args = {"url": url, "key": key, "contender": contender, "prefix": f"p{p}-",
                "count": per, "in_flight": s.floor_in_flight, "start_at": start_at}
        if contender == FRESH and s.drop is not None:
            # The blackout starts with the drain (which spends the key's bucket, as the
            # used client's is spent); the client's first check goes when it ends.
            # A little after it ends: a 429 before it would hold the client a second.
            args.update(contender="asyncsdk", drain=BURST + 10, drain_prefix=DRAIN,
                        blackout=s.drop[1] + 0.05)
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks._pace_child",
                                 json.dumps(args)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        procs.append(proc)
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        if proc.returncode:
            raise RuntimeError(f"{contender} client failed: {err[-2000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


# --- the fleet ---------------------------------------------------------------------------
class Fleet:
    """Redis and ``workers`` arq workers of asyncsdk.fleet against the service (one key)."""

    KEY = "fleet-key"

    def __init__(self, url: str, workdir: Path, workers: int = 2) -> None:
        from asyncsdk.fleet.harness import start_redis, start_worker, stop

        self.url = url
        self._stop = stop
        self.redis, self.redis_url = start_redis(workdir)
        env = {"ASYNCSDK_BASE_URL": url, "ASYNCSDK_VALIDATION_URL": url,
               "ASYNCSDK_API_KEY": self.KEY, "ASYNCSDK_USERNAME": "bench-user",
               "FLEET_REDIS_URL": self.redis_url}
        self.logs = [workdir / f"worker{i}.log" for i in range(workers)]
        self.workers = [start_worker(env, log) for log in self.logs]
        deadline = time.monotonic() + 60
        while not all(log.exists() and "Starting worker" in log.read_text(errors="replace")
                      for log in self.logs):
            if time.monotonic() > deadline:
                raise RuntimeError("a fleet worker did not start within 60 s")
            time.sleep(0.1)

    def run(self, s: Scenario, label: str) -> list[dict[str, Any]]:
        return asyncio.run(self._run(s, label))

    async def _run(self, s: Scenario, label: str) -> list[dict[str, Any]]:
        from arq.connections import RedisSettings, create_pool

        from asyncsdk.fleet.store import OutcomeStore, writes_key
        from asyncsdk.fleet.submit import enqueue_batches

        emails = [f"{label}-{i}@example.com" for i in range(s.count)]
        pool = await create_pool(RedisSettings.from_dsn(self.redis_url))
        try:
            await pool.delete("fleet:pace", "fleet:pace:refused", "fleet:pace:answered",
                              "fleet:pause")
            await enqueue_batches(pool, emails, label, 100)
            store = OutcomeStore(pool, label)
            deadline = time.monotonic() + 300
            while await store.count() < s.count:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"fleet run {label}: not done after 300 s")
                await asyncio.sleep(0.02)
            stored = await store.all()
            writes = sum(int(v) for v in (await pool.hgetall(writes_key(label))).values())
        finally:
            await pool.aclose()
        failed = sum(1 for o in stored.values()
                     if (o["error"] or "").startswith("RateLimitError"))
        once = writes == s.count == len(stored)
        return [{"outcomes": len(stored), "failed_429": failed,
                 "most_per_input": 1 if once else 2, "least_per_input": 1}]

    def close(self) -> None:
        for worker in self.workers:
            self._stop(worker)
        self._stop(self.redis)


def fleet_available() -> bool:
    try:
        from asyncsdk.fleet.harness import redis_server_path
    except ImportError:  # the fleet extra (arq, redis) is not installed
        return False
    return redis_server_path() is not None


# --- the rounds --------------------------------------------------------------------------
@contextlib.contextmanager
def service() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.pace_server", "--cpu",
                             str(SERVER_CPU)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the pace server did not start (said {line!r})")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def one_round(url: str, s: Scenario, r: int, fleet: Fleet | None) -> dict[str, Run]:
    order = s.contenders if r % 2 == 0 else s.contenders[::-1]
    runs = {}
    for contender in order:
        setup(url, s, contender)
        if contender == "asyncsdk" and fleet is not None:
            reports = fleet.run(s, f"r{r}")
        else:
            reports = run_children(url, s, contender, f"key-{s.name}-{r}-{contender}")
        runs[contender] = measure(url, s, reports, contender)
    return runs


def measure_all(names: list[str], rounds: int, quick: bool) -> dict[str, dict[str, list[Run]]]:
    found: dict[str, dict[str, list[Run]]] = {}
    table = scenarios(quick)
    with service() as url, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            s = table[name]
            fleet = None
            if name.startswith("fleet"):
                if not fleet_available():
                    print(f"{name}: skipped (no redis-server, or the fleet extra is "
                          "missing)")
                    continue
                fleet = Fleet(url, Path(tmp), s.processes)
            try:
                found[name] = {c: [] for c in s.contenders}
                for r in range(rounds):
                    for contender, run in one_round(url, s, r, fleet).items():
                        found[name][contender].append(run)
                    print(f"{name} round {r}: " + ", ".join(
                        f"{c} {runs[-1].goodput:.2f} R, {runs[-1].share_429:.1%} 429"
                        for c, runs in found[name].items()), flush=True)
            finally:
                if fleet is not None:
                    fleet.close()
    return found


# --- the report --------------------------------------------------------------------------
def _med(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    mid = fmt.format(statistics.median(values))
    if len(values) == 1:
        return mid
    return f"{mid} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def paired(by: dict[str, list[Run]]) -> str:
    """asyncsdk's goodput over the floor's in the same round: the machine's own limits
    (both share its cores with the service) cancel out of this ratio."""
    return _med([a.goodput / f.goodput for a, f in zip(by["asyncsdk"], by["floor"],
                                                       strict=True) if f.goodput],
                "{:.2f}x")


def notes(s: Scenario, runs: list[Run]) -> str:
    """The scenario's own figures (the drop, the blackout, several processes)."""
    def med(key: str, fmt: str) -> str:
        return _med([r.extra[key] for r in runs], fmt)

    parts = []
    if s.blackout:
        parts.append(f"once it takes again: back to 0.9 R after {med('back_after', '{:.2f}')}"
                     f" s, goodput over the next 1 s {med('goodput_1s', '{:.2f}')} R, the "
                     f"first 200 checks in {med('first_200', '{:.2f}')} s")
    elif s.drop is not None:
        parts.append(f"429 from drop+1 s to restore: {med('429_after_drop', '{:.1%}')}; "
                     f"back to 0.9 R after {med('back_after', '{:.2f}')} s")
    if s.processes > 1:
        parts.append(f"sent above R x t + burst (most, any span): {med('sent_above', '{:.0f}')}"
                     f"; let through above it: {med('taken_above', '{:.0f}')}")
    return "; ".join(parts)


def row(s: Scenario, contender: str, runs: list[Run], ratio: str = "") -> list[str]:
    fleet = " (asyncsdk.fleet)" if s.name.startswith("fleet") else ""
    name = {"asyncsdk": f"asyncsdk, defaults{fleet}",
            FRESH: "asyncsdk, defaults, a fresh client started as it takes again",
            "floor": f"floor: fixed semaphore, {s.floor_in_flight} in flight"
                     + (f" x {s.processes} processes" if s.processes > 1 else "")}[contender]
    once = all(r.once_each for r in runs) and not any(r.paid_twice for r in runs)
    return [s.title, name, _med([r.goodput for r in runs], "{:.2f}"), ratio,
            _med([r.share_429 for r in runs], "{:.1%}"),
            str(max(r.failed_429 for r in runs)),
            "yes" if once else f"**no** (paid twice: {max(r.paid_twice for r in runs)})",
            notes(s, runs)]


#: Issue 40's targets (item 3): scenario, what the target says, the figure, op, limit.
TARGETS: tuple[tuple[str, str, str, str, float], ...] = (
    ("one", "one process: goodput >= 0.97 R", "goodput", ">=", 0.97),
    ("one", "one process: <= 2 % of requests 429", "share_429", "<=", 0.02),
    ("no_retry_after", "no Retry-After: goodput >= 0.97 R", "goodput", ">=", 0.97),
    ("no_retry_after", "no Retry-After: <= 2 % 429", "share_429", "<=", 0.02),
    ("drop", "limit R -> R/3 -> R: goodput >= 0.97 of the rate offered", "goodput", ">=",
     0.97),
    ("drop", "limit R -> R/3 -> R: <= 2 % 429", "share_429", "<=", 0.02),
    ("slow", "100 ms service time: goodput >= 0.95 R", "goodput", ">=", 0.95),
    ("two", "two processes, 2.4 s run: goodput >= 0.90 R together", "goodput", ">=", 0.90),
    ("two_long", "two processes, 10 s run: goodput >= 0.95 R together", "goodput", ">=",
     0.95),
    *((name, f"fleet, {workers} workers: {text}", what, op, limit)
      for name, workers in (("fleet", 2), ("fleet4", 4))
      for text, what, op, limit in (("goodput >= 0.95 R", "goodput", ">=", 0.95),
                                    ("<= 3 % 429", "share_429", "<=", 0.03),
                                    ("sent never above R x t + burst", "sent_above", "<=",
                                     0))),
    ("cap", "a cap of 8 in flight: goodput >= 0.90 of what the cap allows", "goodput", ">=",
     0.90),
    ("recovery", "recovery: back to 0.9 R within 1 s of the service taking again",
     "back_after", "<=", 1.0),
)


def _figure(run: Run, what: str) -> float:
    return float(getattr(run, what)) if what in Run.__dataclass_fields__ else run.extra[what]


def _median_of(runs: list[Run], what: str) -> float:
    # nan (never back to 0.9 R) counts as the worst: it sorts last.
    values = sorted((_figure(r, what) for r in runs), key=lambda v: (v != v, v))
    return values[(len(values) - 1) // 2] if values else float("nan")


def targets(found: dict[str, dict[str, list[Run]]]) -> list[Target]:
    """Issue 40's targets, each on asyncsdk's median, the floor's median of the same run
    beside it."""
    out = []
    for name, text, what, op, limit in TARGETS:
        if name not in found:
            out.append(Target(text, None, "not run"))
            continue
        value = _median_of(found[name]["asyncsdk"], what)
        floor = _median_of(found[name]["floor"], what)
        met = value >= limit if op == ">=" else value <= limit
        out.append(Target(text, met, f"median {value:.3g}; the floor {floor:.3g}"))
    runs = [r for by in found.values() for c, rs in by.items() if c != "floor" for r in rs]
    once = all(r.once_each and not r.paid_twice and not r.failed_429 for r in runs)
    out.append(Target("every scenario: each input exactly one outcome, none paid twice, "
                      "none lost to a 429", once))
    return out


HEADERS = ["scenario", "contender", "goodput (x the rate offered)",
           "goodput / the floor's, same round", "429 share",
           "failed for a 429 (worst)", "one outcome each, none paid twice", "notes"]


def section(found: dict[str, dict[str, list[Run]]], rounds: int, quick: bool) -> Section:
    table = scenarios(quick)
    sec = Section(
        "pace", "Issue 40 - bulk at the service's pace, against the hand-tuned floor",
        f"Token bucket per API key (R = {R:.0f}/s, burst {BURST}, 429 + Retry-After: 1 "
        f"unless said), {rounds} rounds, the contenders alternated in each; medians "
        "(min-max). `python -m benchmarks.scen_pace`.", HEADERS)
    for name, by in found.items():
        for contender, runs in by.items():
            ratio = paired(by) if contender == "asyncsdk" else ""
            sec.rows.append(row(table[name], contender, runs, ratio))
    sec.targets.extend(targets(found))
    return sec


def run(*, quick: bool = False, rounds: int | None = None,
        only: list[str] | None = None) -> Section:
    """The harness's entry (``python -m benchmarks --only pace``)."""
    rounds = rounds or (1 if quick else 3)
    names = list(only or (["one", "two"] if quick else SCENARIOS))
    found = measure_all(names, rounds, quick)
    return section(found, rounds, quick)


def write(sec: Section, facts: str, path: Path = RESULTS) -> None:
    block = "\n".join([START, HEADING, "", facts, "", sec.markdown().split("\n", 2)[2],
                       END])
    old = path.read_text(encoding="utf-8")
    # The markers count only on lines of their own: the text around may quote them.
    table = re.compile(f"^{re.escape(START)}$.*?^{re.escape(END)}$", re.S | re.M)
    if table.search(old):
        new = table.sub(lambda _: block, old, count=1)
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scen_pace",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, small inputs")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", nargs="+", choices=SCENARIOS)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    from ._common import machine_facts

    started = time.monotonic()
    facts = machine_facts()
    import os
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    sec = run(quick=args.quick, rounds=args.rounds, only=args.only)
    sec.seconds = time.monotonic() - started
    print(sec.text())
    if not args.no_write and not args.quick:
        write(sec, f"Run {facts['date']}, {sec.seconds:.0f} s; {facts['machine']}; load "
                   f"average at start {load}; Python {facts['python']}, aiohttp "
                   f"{facts['aiohttp']}.")
        print(f"written: {RESULTS.relative_to(ROOT)} (between the pace40 markers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
