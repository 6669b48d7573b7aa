"""Split an address file into batches and enqueue them for the fleet; or submit a job.

    python -m examples.fleet.producer addresses.txt --run may-list --batch-size 1000 --wait
    python -m examples.fleet.producer --job https://host/list.csv --name may-file --wait

(from the repository root; ``FLEET_REDIS_URL`` as for the workers). The input is one
address per line, or a CSV whose header has an ``email`` column. Each batch gets the arq
job id ``check:{run}:{start}``, so running the producer again enqueues nothing twice
(while arq keeps the job or its result); a batch enqueued again later re-checks nothing
already stored. ``--wait`` polls Redis until every input has an outcome.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from arq.connections import ArqRedis, RedisSettings, create_pool

from .store import OutcomeStore, job_key, total_key
from .worker import CONFIG


def read_addresses(path: Path) -> Iterator[str]:
    """The addresses of ``path``: its ``email`` column, or one per line (blanks skipped)."""
    with path.open(newline="", encoding="utf-8") as f:
        first = f.readline()
        if "email" in first.lower() and ("," in first or first.strip().lower() == "email"):
            f.seek(0)
            for row in csv.DictReader(f):
                key = next((k for k in row if k and k.strip().lower() == "email"), None)
                if key is not None and (row[key] or "").strip():
                    yield row[key].strip()
            return
        for line in [first, *f]:
            if line.strip():
                yield line.strip()


async def enqueue_batches(
    pool: ArqRedis, emails: Sequence[str], run: str, batch_size: int,
    *, queue: str = CONFIG.queue,
) -> int:
    """Enqueue ``emails`` as ``check_batch`` jobs of ``batch_size``; return how many new.

    Records the run's total first, so that progress can be read from Redis alone.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
    await pool.set(total_key(run), len(emails))
    enqueued = 0
    for start in range(0, len(emails), batch_size):
        job = await pool.enqueue_job(
            "check_batch", run, start, list(emails[start:start + batch_size]),
            _job_id=f"check:{run}:{start}", _queue_name=queue)
        enqueued += job is not None  # None: that batch is already queued, running or done
    return enqueued


async def wait_for_run(pool: ArqRedis, run: str, *, poll: float = 0.5) -> int:
    """Wait until every input of ``run`` has an outcome; return the total."""
    store = OutcomeStore(pool, run)
    total = int(await pool.get(total_key(run)) or 0)
    while (done := await store.count()) < total:
        print(f"\r{done}/{total} checked", end="", file=sys.stderr, flush=True)
        await asyncio.sleep(poll)
    print(f"\r{total}/{total} checked", file=sys.stderr)
    return total


async def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="the address file")
    parser.add_argument("--run", help="a label for this run (default: the file's stem)")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--job", metavar="URL", help="submit this file URL as a job instead")
    parser.add_argument("--name", help="the job's label (with --job)")
    parser.add_argument("--wait", action="store_true", help="wait until all is done")
    args = parser.parse_args(argv)
    pool = await create_pool(RedisSettings.from_dsn(CONFIG.redis_url))
    try:
        if args.job:
            name = args.name or "job"
            await pool.enqueue_job("submit_job", name, args.job, _job_id=f"submit:{name}",
                                   _queue_name=CONFIG.queue)
            while args.wait and (state := await pool.get(job_key(name) + ":state")) not in (
                    b"done", b"failed"):
                print(f"\rjob {name}: {(state or b'queued').decode()}", end="", file=sys.stderr)
                await asyncio.sleep(1)
            if args.wait:
                rows = await pool.hlen(job_key(name) + ":rows")
                print(f"\rjob {name}: {state.decode()}, {rows} rows", file=sys.stderr)
            return 0
        if args.source is None:
            parser.error("give an address file, or --job URL")
        emails = list(read_addresses(args.source))
        run = args.run or args.source.stem
        new = await enqueue_batches(pool, emails, run, args.batch_size)
        print(f"run {run}: {len(emails)} addresses, {new} new batches enqueued", file=sys.stderr)
        if args.wait:
            await wait_for_run(pool, run)
        return 0
    finally:
        await pool.aclose()


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
