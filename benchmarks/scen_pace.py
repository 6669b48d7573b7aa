"""Issue 31: bulk work at the service's pace. ``python -m benchmarks.scen_pace [--quick]
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
R/3 one second in, for two seconds, then comes back), ``two`` (two processes on one key,
1,100 addresses each, started together), ``fleet`` (asyncsdk.fleet: two fleet workers and
Redis, 2,200 addresses in batches of 100; needs a redis-server, skipped without one). The
table goes to ``benchmarks/RESULTS.md`` between ``<!-- pace:start -->`` and
``<!-- pace:end -->`` (``--no-write``: printed only).

The machine may be shared and has few cores: the service, the clients (and Redis and
the workers) share them. The service's rate does not move with the load, the client's
CPU does; an overloaded client shows as goodput below the floor's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
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
START = "<!-- pace:start -->"
END = "<!-- pace:end -->"
HEADING = "## Issue 31: bulk at the service's pace"
SCENARIOS = ("one", "no_retry_after", "slow", "drop", "two", "fleet")


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    count: int  # addresses in all
    service: float = 0.02
    retry_after: str | None = "1"
    drop: tuple[float, float, float] | None = None
    processes: int = 1
    floor_in_flight: int = 11


def scenarios(quick: bool) -> dict[str, Scenario]:
    def count(full: int) -> int:
        return 300 if quick else full

    return {s.name: s for s in (
        Scenario("one", "one process", count(1200)),
        Scenario("no_retry_after", "no Retry-After on the 429", count(1200),
                 retry_after=None),
        Scenario("slow", "100 ms service time", count(1200), service=0.1,
                 floor_in_flight=51),
        Scenario("drop", "limit drops to R/3 for 2 s, then back", count(2200),
                 drop=(1.0, 2.0, 1 / 3)),
        Scenario("two", "two processes, one key", count(2200), processes=2,
                 floor_in_flight=6),
        Scenario("fleet", "the arq fleet, 2 workers", count(2200), processes=2,
                 floor_in_flight=6),
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


def setup(url: str, s: Scenario) -> None:
    _post(url + "/control/setup", {"rate": R, "burst": BURST, "service": s.service,
                                   "retry_after": s.retry_after,
                                   "drop": list(s.drop) if s.drop else None})


def offered(s: Scenario, start: float, end: float) -> float:
    """Tokens the service offered between ``start`` and ``end`` (seconds of the run)."""
    tokens = R * (end - start)
    if s.drop is not None:
        at, length, factor = s.drop
        overlap = max(0.0, min(end, at + length) - max(start, at))
        tokens -= R * (1 - factor) * overlap
    return tokens


def measure(url: str, s: Scenario, reports: list[dict[str, Any]]) -> Run:
    """Read the service's log of the run just made, with the clients' ``reports``."""
    events = _get(url + "/control/log")["events"]
    taken = [e for e in events if e[3]]
    answered = Counter(e[2] for e in taken)
    end = max(e[0] for e in taken) + s.service
    goodput = len(answered) / offered(s, 0.0, end)
    refused = len(events) - len(taken)
    outcomes = sum(r["outcomes"] for r in reports)
    once = (all(r["most_per_input"] == 1 == r["least_per_input"] for r in reports)
            and outcomes == s.count)
    run = Run(goodput, refused / len(events), sum(r["failed_429"] for r in reports),
              once, sum(n - 1 for n in answered.values() if n > 1), len(events))
    if s.drop is not None:
        run.extra.update(_around_the_drop(events, s))
    return run


def _around_the_drop(events: list[list[Any]], s: Scenario) -> dict[str, float]:
    """The 429 share from one second after the drop to the restore, and the time from
    the restore until 200 ms of answers first reach 0.9 R."""
    assert s.drop is not None
    at, length, _ = s.drop
    low = [e for e in events if at + 1.0 <= e[0] < at + length]
    share = sum(not e[3] for e in low) / len(low) if low else float("nan")
    restore = at + length
    times = sorted(e[0] for e in events if e[3] and e[0] >= restore)
    back = float("nan")
    for i, t in enumerate(times):
        j = i
        while j < len(times) and times[j] < t + 0.2:
            j += 1
        if (j - i) >= 0.9 * R * 0.2:
            back = t - restore
            break
    return {"429_after_drop": share, "back_after": back}


def run_children(url: str, s: Scenario, contender: str, key: str) -> list[dict[str, Any]]:
    """The scenario's client processes (started together), their reports."""
    start_at = time.time() + 1.5  # every process imported and connected by then
    per = s.count // s.processes
    procs = []
    for p in range(s.processes):
        args = {"url": url, "key": key, "contender": contender, "prefix": f"p{p}-",
                "count": per, "in_flight": s.floor_in_flight, "start_at": start_at}
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
    """Redis and two workers of asyncsdk.fleet against the service (one key)."""

    KEY = "fleet-key"

    def __init__(self, url: str, workdir: Path) -> None:
        from asyncsdk.fleet.harness import start_redis, start_worker, stop

        self.url = url
        self._stop = stop
        self.redis, self.redis_url = start_redis(workdir)
        env = {"ASYNCSDK_BASE_URL": url, "ASYNCSDK_VALIDATION_URL": url,
               "ASYNCSDK_API_KEY": self.KEY, "ASYNCSDK_USERNAME": "bench-user",
               "FLEET_REDIS_URL": self.redis_url}
        self.logs = [workdir / f"worker{i}.log" for i in range(2)]
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
    order = ("asyncsdk", "floor") if r % 2 == 0 else ("floor", "asyncsdk")
    runs = {}
    for contender in order:
        setup(url, s)
        if contender == "asyncsdk" and fleet is not None:
            reports = fleet.run(s, f"r{r}")
        else:
            reports = run_children(url, s, contender, f"key-{s.name}-{r}-{contender}")
        runs[contender] = measure(url, s, reports)
    return runs


def measure_all(names: list[str], rounds: int, quick: bool) -> dict[str, dict[str, list[Run]]]:
    found: dict[str, dict[str, list[Run]]] = {}
    table = scenarios(quick)
    with service() as url, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            s = table[name]
            fleet = None
            if name == "fleet":
                if not fleet_available():
                    print("fleet: skipped (no redis-server, or the fleet extra is missing)")
                    continue
                fleet = Fleet(url, Path(tmp))
            try:
                found[name] = {"asyncsdk": [], "floor": []}
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


def row(s: Scenario, contender: str, runs: list[Run], ratio: str = "") -> list[str]:
    extra = ""
    if s.drop is not None:
        extra = (f"429 from drop+1 s to restore: "
                 f"{_med([r.extra['429_after_drop'] for r in runs], '{:.1%}')}; back to "
                 f"0.9 R after {_med([r.extra['back_after'] for r in runs], '{:.2f}')} s")
    name = {"asyncsdk": "asyncsdk, defaults" + (" (asyncsdk.fleet)" if s.name == "fleet"
                                                  else ""),
            "floor": f"floor: fixed semaphore, {s.floor_in_flight} in flight"
                     + (" x 2 processes" if s.processes == 2 else "")}[contender]
    once = all(r.once_each for r in runs) and not any(r.paid_twice for r in runs)
    return [s.title, name, _med([r.goodput for r in runs], "{:.2f}"), ratio,
            _med([r.share_429 for r in runs], "{:.1%}"),
            str(max(r.failed_429 for r in runs)),
            "yes" if once else f"**no** (paid twice: {max(r.paid_twice for r in runs)})",
            extra]


def targets(found: dict[str, dict[str, list[Run]]]) -> list[Target]:
    out = []

    def median_of(name: str, what: str) -> float:
        runs = found[name]["asyncsdk"]
        return statistics.median(getattr(r, what) if what in Run.__dataclass_fields__
                                 else r.extra[what] for r in runs)

    def add(name: str, text: str, what: str, op: str, limit: float) -> None:
        if name not in found:
            out.append(Target(text, None, "not run"))
            return
        value = median_of(name, what)
        met = value >= limit if op == ">=" else value <= limit
        out.append(Target(text, met, f"median {value:.3g}"))

    add("one", "one process: goodput >= 0.95 R", "goodput", ">=", 0.95)
    add("one", "one process: <= 3 % of requests 429", "share_429", "<=", 0.03)
    add("one", "one process: no input failed for a 429", "failed_429", "<=", 0)
    add("no_retry_after", "no Retry-After: goodput >= 0.90 R", "goodput", ">=", 0.90)
    add("no_retry_after", "no Retry-After: <= 5 % 429", "share_429", "<=", 0.05)
    add("slow", "100 ms service time: goodput >= 0.90 R", "goodput", ">=", 0.90)
    add("drop", "limit drop: goodput >= 0.90 of the rate offered", "goodput", ">=", 0.90)
    add("drop", "limit drop: < 10 % 429 from one second after the drop",
        "429_after_drop", "<=", 0.0999)
    add("drop", "limit drop: back to 0.9 R within 1 s of the restore", "back_after", "<=",
        1.0)
    add("two", "two processes: goodput >= 0.90 R together", "goodput", ">=", 0.90)
    add("two", "two processes: <= 5 % 429", "share_429", "<=", 0.05)
    add("fleet", "fleet, 2 workers: goodput >= 0.85 R", "goodput", ">=", 0.85)
    add("fleet", "fleet, 2 workers: <= 5 % 429", "share_429", "<=", 0.05)
    once = all(r.once_each and not r.paid_twice for name in found
               for r in found[name]["asyncsdk"])
    out.append(Target("every scenario: each input exactly one outcome, none paid twice",
                      once))
    return out


HEADERS = ["scenario", "contender", "goodput (x R offered)",
           "goodput / the floor's, same round", "429 share",
           "failed for a 429 (worst)", "one outcome each, none paid twice", "notes"]


def section(found: dict[str, dict[str, list[Run]]], rounds: int, quick: bool) -> Section:
    table = scenarios(quick)
    sec = Section(
        "pace", "Issue 31 - bulk at the service's pace",
        f"Token bucket per API key (R = {R:.0f}/s, burst {BURST}, 429 + Retry-After: 1 "
        f"unless said), {rounds} rounds, asyncsdk and the floor alternated in each; "
        "medians (min-max). `python -m benchmarks.scen_pace`.", HEADERS)
    for name, by in found.items():
        sec.rows.append(row(table[name], "asyncsdk", by["asyncsdk"], paired(by)))
        sec.rows.append(row(table[name], "floor", by["floor"]))
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
    if START in old and END in old:
        head, rest = old.split(START, 1)
        new = head + block + rest.split(END, 1)[1]
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
        print(f"written: {RESULTS.relative_to(ROOT)} (between the pace markers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
