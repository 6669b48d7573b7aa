"""Split an address file into batches and enqueue them for the fleet; or submit a job.

    python -m examples.fleet.producer addresses.txt --run may-list --batch-size 1000 --wait
    python -m examples.fleet.producer --job https://host/list.csv --name may-file --wait

(from the repository root; ``FLEET_REDIS_URL`` as for the workers). The input is read as
``asyncsdk check-many`` reads it, by the same reader (``asyncsdk.cli.inputs``): one
address per line, or a CSV whose header names the address column (``email``,
``E-Mail``, ``Email Address``, ...), separated by ``,`` ``;`` or tab, in UTF-8 (a
byte-order mark is fine) or UTF-16 with one. A file that is missing or cannot be read
that way is refused in one line (exit 2) before anything is enqueued. It is checked,
then streamed, never held in memory. Each batch gets the arq job id
``check:{run}:{start}``, so running the producer again enqueues nothing twice; a batch
whose job ended with inputs still without an outcome is enqueued again under a new id
(``check:{run}:{start}:{n}``), and re-checks nothing already stored. A run label holds
one input in one batch size: another file, or another ``--batch-size``, under a label
already used is refused (pick another ``--run``). ``--wait`` polls Redis until every
input has an outcome, re-enqueueing such batches when progress stops.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import job_key_prefix

from asyncsdk.cli.inputs import InputFile, UsageProblem
from asyncsdk.cli.progress import Progress

from .store import FleetInputError, OutcomeStore, job_key, jobs_key, meta_key, total_key
from .worker import CONFIG, FleetConfig

#: Seconds without progress after which ``--wait`` re-enqueues batches whose job ended.
REQUEUE_AFTER_SECONDS = max(30.0, CONFIG.batch_timeout + 10)


def open_input(path: Path) -> InputFile:
    """Check that ``path`` is an address file the command line would read, and how.

    Raises:
        UsageProblem: missing, unreadable, not text, broken CSV, a header without an
            address column: one line naming the file (and the line).
    """
    return InputFile.open(path)


def addresses(inputs: InputFile) -> Iterator[str]:
    """The addresses of a checked input, streamed afresh at each call."""
    return (row.email for row in inputs.rows())


def read_addresses(path: Path) -> Iterator[str]:
    """The addresses of ``path``, read as ``asyncsdk check-many`` reads them.

    Raises:
        UsageProblem: see ``open_input`` (raised here, before any address is given).
    """
    return addresses(open_input(path))


def batches(emails: Iterable[str], batch_size: int) -> Iterator[tuple[int, list[str]]]:
    """``(start, addresses)`` of each batch of ``emails``, streamed."""
    it = iter(emails)
    start = 0
    while batch := list(itertools.islice(it, batch_size)):
        yield start, batch
        start += len(batch)


def fingerprint(emails: Iterable[str]) -> tuple[int, str]:
    """How many addresses, and a SHA-256 of them in order (the input's identity)."""
    digest = hashlib.sha256()
    count = 0
    for email in emails:
        digest.update(email.encode("utf-8", "surrogatepass") + b"\n")
        count += 1
    return count, digest.hexdigest()


async def register_run(pool: ArqRedis, run: str, total: int, digest: str,
                       batch_size: int) -> None:
    """Record the run's input and batch size, or refuse one that differs from the first.

    Raises:
        FleetInputError: ``run`` already holds another input (its outcomes would be
            taken for this one's), or another batch size (batches would overlap and
            their common inputs be checked, and paid for, twice).
    """
    async with pool.pipeline(transaction=True) as pipe:
        pipe.hsetnx(meta_key(run), "digest", digest)
        pipe.hsetnx(meta_key(run), "batch_size", str(batch_size))
        pipe.hsetnx(meta_key(run), "total", str(total))
        pipe.hmget(meta_key(run), ["digest", "batch_size", "total"])
        *_, (old_digest, old_size, old_total) = await pipe.execute()
    if old_digest.decode() != digest:
        raise FleetInputError(
            f"run {run!r} already holds the outcomes of another input ({int(old_total)} "
            f"addresses; this one has {total}): choose another --run for this input, or "
            f"delete the old run's keys (fleet:{run}:*) first")
    if int(old_size) != batch_size:
        raise FleetInputError(
            f"run {run!r} was enqueued with --batch-size {int(old_size)}: use the same size "
            f"(batches of another size would overlap and check their inputs twice)")
    await pool.set(total_key(run), total)


async def enqueue_batches(
    pool: ArqRedis, emails: Sequence[str] | Callable[[], Iterable[str]], run: str,
    batch_size: int, *, queue: str = CONFIG.queue,
) -> int:
    """Enqueue ``emails`` as ``check_batch`` jobs of ``batch_size``; return how many new.

    ``emails`` is a sequence, or a function that streams them afresh each call (it is
    read twice: to record the run's input, then to enqueue). Records the run's total
    first, so that progress can be read from Redis alone. A batch with every outcome
    stored, or whose job is queued or running, is left alone; one whose job ended with
    inputs left (arq gave up on it) is enqueued again under a new job id.

    Raises:
        ValueError: ``batch_size`` < 1.
        FleetInputError: see ``register_run``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
    read: Callable[[], Iterable[str]] = emails if callable(emails) else lambda: emails
    total, digest = fingerprint(read())
    await register_run(pool, run, total, digest, batch_size)
    store = OutcomeStore(pool, run)
    enqueued = 0
    for start, batch in batches(read(), batch_size):
        if not await store.missing(start, len(batch)):
            continue  # every input has its outcome
        job_id = (await pool.hget(jobs_key(run), str(start)) or b"").decode()
        job_id = job_id or f"check:{run}:{start}"
        job = await pool.enqueue_job("check_batch", run, start, batch, _job_id=job_id,
                                     _queue_name=queue)
        if job is None:  # that id is queued, running, or ended (its result is kept)
            if await pool.exists(job_key_prefix + job_id):
                continue  # queued or running: it will store the rest
            # Ended with inputs left (e.g. failed, or gave up): a new id, the same batch.
            n = await pool.hincrby(jobs_key(run) + ":n", str(start), 1)
            job_id = f"check:{run}:{start}:{n}"
            job = await pool.enqueue_job("check_batch", run, start, batch, _job_id=job_id,
                                         _queue_name=queue)
            if job is None:
                continue
        await pool.hset(jobs_key(run), str(start), job_id)
        enqueued += 1
    return enqueued


async def wait_for_run(
    pool: ArqRedis, run: str, *, poll: float = 0.5,
    requeue: Callable[[], Iterable[str]] | None = None, batch_size: int = 1000,
    requeue_after: float = REQUEUE_AFTER_SECONDS, queue: str = CONFIG.queue,
) -> int:
    """Wait until every input of ``run`` has an outcome; return the total.

    With ``requeue`` (the input, streamed afresh, as for ``enqueue_batches``): once no
    outcome has come for ``requeue_after`` seconds, batches whose job ended with inputs
    left are enqueued again, so a batch arq gave up on cannot make this wait forever.
    """
    loop = asyncio.get_running_loop()
    store = OutcomeStore(pool, run)
    total = int(await pool.get(total_key(run)) or 0)
    # A bar on a terminal only (as the command line draws it): a log gets the last line.
    progress = Progress(total, "addr", sys.stderr)
    shown = 0
    last, since = -1, loop.time()
    try:
        while (done := await store.count()) < total:
            if done != last:
                last, since = done, loop.time()
            elif requeue is not None and loop.time() - since >= requeue_after:
                again = await enqueue_batches(pool, requeue, run, batch_size, queue=queue)
                if again:
                    progress.status(f"{again} batches enqueued again")
                    if not progress.shown:
                        print(f"run {run}: {again} batches enqueued again", file=sys.stderr)
                since = loop.time()
            progress.advance(done - shown)
            shown = done
            await asyncio.sleep(poll)
        progress.advance(total - shown)
    finally:
        progress.close()
    print(f"{total}/{total} checked", file=sys.stderr)
    return total


async def submit(pool: ArqRedis, name: str, url: str, *, queue: str = CONFIG.queue) -> bool:
    """Enqueue ``submit_job(name, url)``; return False when it is already queued or done.

    A job that failed before (``:state`` ``failed``) is submitted again, under a new id.
    """
    state = job_key(name) + ":state"
    job_id = f"submit:{name}"
    if await pool.get(state) == b"failed":
        await pool.delete(state, job_key(name) + ":error")
        job_id = f"submit:{name}:{await pool.incr(job_key(name) + ':submits')}"
    job = await pool.enqueue_job("submit_job", name, url, _job_id=job_id, _queue_name=queue)
    return job is not None


async def wait_for_job(pool: ArqRedis, name: str, *, poll: float = 1.0) -> tuple[str, str]:
    """Wait until job ``name`` is ``done`` or failed; return its state and error (or "")."""
    key = job_key(name)
    last_shown = ""
    while True:
        async with pool.pipeline(transaction=False) as pipe:
            pipe.get(key + ":state")
            pipe.get(key + ":error")
            state, error = await pipe.execute()
        if state in (b"done", b"failed") or error is not None:
            return (state or b"failed").decode(), (error or b"").decode()
        shown = f"job {name}: {(state or b'queued').decode()}"
        if sys.stderr.isatty():  # one line rewritten in place
            print(f"\r{shown}", end="", file=sys.stderr, flush=True)
        elif shown != last_shown:  # a log: one line per change
            print(shown, file=sys.stderr, flush=True)
        last_shown = shown
        await asyncio.sleep(poll)


async def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring); 1 when the run or job failed."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="the address file")
    parser.add_argument("--run", help="a label for this run (default: the file's stem)")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--job", metavar="URL", help="submit this file URL as a job instead")
    parser.add_argument("--name", help="the job's label (with --job)")
    parser.add_argument("--wait", action="store_true", help="wait until all is done")
    parser.add_argument("--poll", type=float, default=0.5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.job and args.source is None:
        parser.error("give an address file, or --job URL")
    if args.batch_size < 1:
        parser.error(f"--batch-size: expected an integer >= 1, got {args.batch_size}")
    try:
        config = FleetConfig.from_env()
        inputs = None if args.job else await asyncio.to_thread(open_input, args.source)
    except (ValueError, UsageProblem) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pool = await create_pool(RedisSettings.from_dsn(config.redis_url))
    try:
        if args.job:
            name = args.name or "job"
            await submit(pool, name, args.job, queue=config.queue)
            if not args.wait:
                return 0
            state, error = await wait_for_job(pool, name, poll=args.poll)
            if state != "done":
                print(f"\rjob {name}: failed: {error or 'see the workers logs'}",
                      file=sys.stderr)
                return 1
            rows = await pool.hlen(job_key(name) + ":rows")
            print(f"\rjob {name}: done, {rows} rows", file=sys.stderr)
            return 0
        assert inputs is not None
        source: Path = args.source
        run = args.run or source.stem
        try:
            new = await enqueue_batches(pool, lambda: addresses(inputs), run,
                                        args.batch_size, queue=config.queue)
        except FleetInputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        total = int(await pool.get(total_key(run)) or 0)
        print(f"run {run}: {total} addresses, {new} new batches enqueued", file=sys.stderr)
        if args.wait:
            await wait_for_run(pool, run, poll=args.poll,
                               requeue=lambda: addresses(inputs),
                               batch_size=args.batch_size, queue=config.queue)
        return 0
    finally:
        await pool.aclose()


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
