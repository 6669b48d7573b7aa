"""Throughput of the fleet with 1 and with 2 worker processes, paired in one run.

    python -m benchmarks.fleet_bench --addresses 20000 --rounds 3

Everything on 127.0.0.1: a throwaway redis-server, the sandbox in this process
(``record=False``), worker processes from ``harness.start_worker``. Each round times
1 worker then 2 workers on the same addresses (a fresh run label each time), from the
enqueue to the last stored outcome, after a warm-up that every worker has served. The
figure is checks per second; the ratio 2-vs-1 is what to compare across machines, and
"1 worker / alone" (against one process running ``check_many`` with no queue, the
floor) is what the queue and the Redis bookkeeping cost. On a
machine with few cores the sandbox, redis and the workers share them: the ratio then
measures how far the fleet scales before the CPU, not the library, is the limit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from arq.connections import ArqRedis, RedisSettings, create_pool

from asyncsdk.fleet.harness import start_redis, start_worker, stop
from asyncsdk.fleet.store import OutcomeStore, writes_key
from asyncsdk.fleet.submit import enqueue_batches
from asyncsdk.testing import Sandbox
from benchmarks._common import ROOT


async def _until_done(pool: ArqRedis, run: str, total: int, timeout: float) -> None:
    store = OutcomeStore(pool, run)
    deadline = time.monotonic() + timeout
    while await store.count() < total:
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run}: not done after {timeout} s")
        await asyncio.sleep(0.01)


async def measure(
    sb: Sandbox, redis_url: str, workers: int, emails: Sequence[str], label: str,
    args: argparse.Namespace, workdir: Path,
) -> float:
    """Checks per second of ``workers`` processes on ``emails``."""
    env = {
        "ASYNCSDK_BASE_URL": sb.base_url, "ASYNCSDK_VALIDATION_URL": sb.base_url,
        "ASYNCSDK_API_KEY": sb.api_key, "ASYNCSDK_USERNAME": sb.username,
        "FLEET_REDIS_URL": redis_url, "FLEET_CONCURRENCY": str(args.concurrency),
        "FLEET_MAX_JOBS": str(args.max_jobs),
    }
    procs: list[subprocess.Popen[bytes]] = []
    pool = await create_pool(RedisSettings.from_dsn(redis_url))
    try:
        procs = [start_worker(env, workdir / f"{label}-{i}.log") for i in range(workers)]
        # Warm-up: a trickle of small batches until every worker has stored something
        # (a worker up early could otherwise take all of a fixed warm-up alone).
        warm, queued = f"{label}-warm", 0
        deadline = time.monotonic() + 120
        while len(await pool.hkeys(writes_key(warm))) < workers:
            if time.monotonic() > deadline:
                raise RuntimeError("a worker did not start within 120 s")
            batch = [f"warm{queued + i}@example.com" for i in range(50)]
            await pool.enqueue_job("check_batch", warm, queued, batch,
                                   _job_id=f"check:{warm}:{queued}")
            queued += len(batch)
            await asyncio.sleep(0.05)
        await _until_done(pool, warm, queued, 60)
        started = time.perf_counter()
        await enqueue_batches(pool, emails, label, args.batch)
        await _until_done(pool, label, len(emails), 600)
        return len(emails) / (time.perf_counter() - started)
    finally:
        for proc in procs:
            stop(proc)
        await pool.aclose()


async def baseline_child(count: int, concurrency: int) -> None:
    """In a child process: ``check_many`` alone, no queue, no Redis; print checks/s."""
    import asyncsdk

    emails = [f"base{i}@example.com" for i in range(count)]
    async with asyncsdk.Client() as client:  # ASYNCSDK_* from the parent
        started = time.perf_counter()
        async for _ in client.validation.check_many(emails, concurrency=concurrency):
            pass
        print(count / (time.perf_counter() - started))


async def baseline(sb: Sandbox, count: int, concurrency: int) -> float:
    """Checks per second of one process running ``check_many`` alone (the floor)."""
    env = {"ASYNCSDK_BASE_URL": sb.base_url, "ASYNCSDK_VALIDATION_URL": sb.base_url,
           "ASYNCSDK_API_KEY": sb.api_key, "ASYNCSDK_USERNAME": sb.username}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "benchmarks.fleet_bench", "--baseline-child", "--addresses",
        str(count), "--concurrency", str(concurrency), cwd=ROOT, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"the baseline child failed ({proc.returncode})")
    return float(out.decode().strip().splitlines()[-1])


async def main(argv: Sequence[str] | None = None) -> None:
    """Run the rounds and print checks/s per round and the 2-vs-1 ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addresses", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--max-jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        await baseline_child(args.addresses, args.concurrency)
        return
    emails = [f"user{i}@example.com" for i in range(args.addresses)]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        redis_proc, redis_url = start_redis(workdir)
        try:
            async with Sandbox(record=False) as sb:
                ratios, overheads = [], []
                for r in range(args.rounds):
                    alone = await baseline(sb, args.addresses, args.concurrency)
                    one = await measure(sb, redis_url, 1, emails, f"r{r}w1", args, workdir)
                    two = await measure(sb, redis_url, 2, emails, f"r{r}w2", args, workdir)
                    ratios.append(two / one)
                    overheads.append(one / alone)
                    print(f"round {r}: check_many alone {alone:6.0f}/s, 1 worker {one:6.0f}/s, "
                          f"2 workers {two:6.0f}/s; 1 worker/alone {one / alone:.2f}, "
                          f"2 vs 1 workers {two / one:.2f}", flush=True)
                print(f"median: 1 worker / check_many alone {statistics.median(overheads):.2f}, "
                      f"2 vs 1 workers {statistics.median(ratios):.2f} ({args.addresses} "
                      f"addresses, batch {args.batch}, concurrency {args.concurrency}, "
                      f"max_jobs {args.max_jobs})")
        finally:
            stop(redis_proc)


if __name__ == "__main__":
    asyncio.run(main())
