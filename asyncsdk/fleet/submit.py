"""Submit work to the fleet: an address file split into batches, or a file job.

    asyncsdk fleet submit addresses.csv --run may-list --batch-size 1000 --wait
    asyncsdk fleet submit --job https://host/list.csv --run may-file --wait

The input is read as ``asyncsdk check-many`` reads it, by the same reader
(``asyncsdk.cli.inputs``): one address per line, or a CSV whose header names the address
column (``email``, ``E-Mail``, ``Email Address``, ...), separated by ``,`` ``;`` or tab,
in UTF-8 (a byte-order mark is fine) or UTF-16 with one. A file that is missing or cannot
be read that way is refused in one line (exit 2) before anything is enqueued. It is
checked, then streamed, never held in memory. Each batch gets the arq job id
``check:{run}:{start}``, so submitting again enqueues nothing twice; a batch whose job
ended with inputs still without an outcome is enqueued again under a new id
(``check:{run}:{start}:{n}``), and re-checks nothing already stored. A run label holds
one input in one batch size: another file, or another ``--batch-size``, under a label
already used is refused (pick another ``--run``), and so is the same addresses with
other columns or cells (the export writes them beside each outcome). The input's other
cells are stored before its first batch is enqueued, so a run whose outcomes are all in
always has them. ``--wait`` polls Redis until every input has an outcome,
re-enqueueing such batches when progress stops.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import json
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix, job_key_prefix
from arq.jobs import DeserializationError
from arq.jobs import Job as ArqJob

import asyncsdk
from asyncsdk.cli.inputs import InputFile, UsageProblem
from asyncsdk.cli.progress import Progress

from .config import FleetConfig
from .store import (
    FleetInputError,
    Outage,
    OutcomeStore,
    RunStalled,
    answer,
    inputs_key,
    job_key,
    job_source_key,
    jobs_key,
    meta_key,
    total_key,
)

#: The arq queue when none is given (arq's own default, and ``FleetConfig``'s).
DEFAULT_QUEUE = FleetConfig.queue
#: What a run label may be: it names Redis keys (``fleet:{run}:...``).
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: Labels that name the fleet's own keys (``fleet:job:...``, ``fleet:pace...``).
RESERVED = frozenset({"job", "pace", "pause"})
#: Inputs whose other cells one round trip stores.
CHUNK = 1000


def check_run_name(run: str) -> str:
    """``run``, if it can label a run.

    Raises:
        UsageProblem: not 1 to 100 letters, digits, ``.``, ``_`` or ``-`` (starting with
            a letter or digit), or a name the fleet's own keys use.
    """
    if not RUN_NAME.fullmatch(run) or run in RESERVED:
        why = (f"{run!r} names the fleet's own keys" if run in RESERVED else
               f"expected 1 to 100 letters, digits, '.', '_' or '-' (first a letter or "
               f"digit), got {run!r}")
        raise UsageProblem(f"--run: {why}")
    return run


def check_job_url(url: str) -> str:
    """``url``, if the service could be asked to fetch a file from it.

    Raises:
        UsageProblem: not an absolute http(s) URL with a host (a password in it is not
            shown): refused before anything is enqueued, as ``create_job`` would refuse
            it on the worker, where only ``status`` would say so.
    """
    try:
        parts = urlsplit(url)
        # ``port`` raises ValueError for one that is not a number from 0 to 65535
        usable = (parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
                  and (parts.port or 0) >= 0)
    except ValueError:  # a port that is not a number from 0 to 65535
        usable = False
    if not usable or any(c.isspace() or not c.isprintable() for c in url):
        raise UsageProblem(f"--job: expected an absolute http(s) URL of the file, got "
                           f"{asyncsdk.redact_url(url)!r:.100}")
    return url


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
    batch_size: int, *, queue: str = DEFAULT_QUEUE,
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
        known = await answer(pool.hget(jobs_key(run), str(start)))
        job_id = known.decode() if isinstance(known, bytes) else f"check:{run}:{start}"
        job = await pool.enqueue_job("check_batch", run, start, batch, _job_id=job_id,
                                     _queue_name=queue)
        if job is None:  # that id is queued, running, or ended (its result is kept)
            if await pool.exists(job_key_prefix + job_id):
                continue  # queued or running: it will store the rest
            # Ended with inputs left (e.g. failed, or gave up): a new id, the same batch.
            n = await answer(pool.hincrby(jobs_key(run) + ":n", str(start), 1))
            job_id = f"check:{run}:{start}:{n}"
            job = await pool.enqueue_job("check_batch", run, start, batch, _job_id=job_id,
                                         _queue_name=queue)
            if job is None:
                continue
        await answer(pool.hset(jobs_key(run), str(start), job_id))
        enqueued += 1
    return enqueued


async def wait_for_run(
    pool: ArqRedis, run: str, *, poll: float = 0.5,
    requeue: Callable[[], Iterable[str]] | None = None, batch_size: int = 1000,
    requeue_after: float = FleetConfig().requeue_after, queue: str = DEFAULT_QUEUE,
    stream: TextIO | None = None,
) -> int:
    """Wait until every input of ``run`` has an outcome; return the total.

    Once no outcome has come for ``requeue_after`` seconds, batches whose job ended with
    inputs left (arq gave up on them) are enqueued again with ``requeue`` (the input,
    streamed afresh, as for ``enqueue_batches``); without it (``fleet status --wait``
    has no input file) such inputs end the wait, so that it cannot last forever.

    Raises:
        RunStalled: without ``requeue``, inputs that no worker will check.
    """
    err = stream if stream is not None else sys.stderr
    loop = asyncio.get_running_loop()
    store = OutcomeStore(pool, run)
    total = int(await pool.get(total_key(run)) or 0)
    # A bar on a terminal only (as the command line draws it): a log gets the last line.
    progress = Progress(total, "addr", err)
    shown = 0
    last, since = -1, loop.time()
    outage = Outage()  # a Redis restart mid-wait is waited out, as the workers do
    try:
        while (done := await outage.outlast(
                store.count, functools.partial(tell, progress, err, f"run {run}"))) < total:
            if done != last:
                last, since = done, loop.time()
            elif loop.time() - since >= requeue_after:
                await stalled(pool, run, requeue, batch_size, queue,
                              functools.partial(tell, progress, err, f"run {run}"))
                since = loop.time()
            progress.advance(done - shown)
            shown = done
            await asyncio.sleep(poll)
        progress.advance(total - shown)
    finally:
        progress.close()
    print(f"{total}/{total} checked", file=err)
    return total


async def stalled(pool: ArqRedis, run: str, requeue: Callable[[], Iterable[str]] | None,
                  batch_size: int, queue: str, say: Callable[[str], None]) -> None:
    """What a wait does when no outcome came for a while: enqueue again the batches arq
    gave up on (with the input, ``requeue``), else refuse to wait for them; and say so
    when no batch of the run is being checked though one is due (no worker is running,
    or every one is busy elsewhere), which the wait could not tell from a slow run.

    Raises:
        RunStalled: without ``requeue``, inputs that no worker will check.
    """
    if requeue is None:
        await refuse_stalled(pool, run)
    elif again := await enqueue_batches(pool, requeue, run, batch_size, queue=queue):
        say(f"{again} batches enqueued again")
    if await untaken(pool, run, queue):
        say(f"no worker is checking its batches, though they are due: is one running on "
            f"queue {queue!r}? ('asyncsdk fleet worker'); still waiting")


async def unfinished(pool: ArqRedis, run: str) -> AsyncIterator[tuple[int, str]]:
    """Each batch of ``run`` with inputs without an outcome: how many, and its job id."""
    meta = await answer(pool.hget(meta_key(run), "batch_size"))
    total = int(await answer(pool.get(total_key(run))) or 0)
    if meta is None or not total:
        return
    size = int(meta)
    store = OutcomeStore(pool, run)
    for start in range(0, total, size):
        missing = await store.missing(start, min(size, total - start))
        if missing:
            known = await answer(pool.hget(jobs_key(run), str(start)))
            yield missing, (known.decode() if isinstance(known, bytes)
                            else f"check:{run}:{start}")


async def untaken(pool: ArqRedis, run: str, queue: str) -> bool:
    """True when a batch of ``run`` is due in ``queue`` and none is being checked."""
    due = False
    now_ms = time.time() * 1000  # arq's scores: the wall clock, in ms
    async for _, job_id in unfinished(pool, run):
        if await pool.exists(in_progress_key_prefix + job_id):
            return False
        score = await pool.zscore(queue, job_id)
        due = due or (score is not None and score <= now_ms)
    return due


def tell(progress: Progress, err: TextIO, who: str, text: str) -> None:
    """``text`` beside the bar on a terminal, else one line (``who: text``)."""
    progress.status(text)
    if not progress.shown:
        print(f"{who}: {text}", file=err, flush=True)


async def abandoned_batches(pool: ArqRedis, run: str) -> AsyncIterator[tuple[int, str]]:
    """Each batch of ``run`` with inputs without an outcome whose job is neither queued
    nor running (arq no longer holds it): how many, and its job id."""
    async for missing, job_id in unfinished(pool, run):
        if not await pool.exists(job_key_prefix + job_id):
            yield missing, job_id


async def abandoned(pool: ArqRedis, run: str) -> int:
    """How many inputs of ``run`` have no outcome in batches whose job is neither queued
    nor running (arq gave up on it): no worker will check them."""
    return sum([missing async for missing, _ in abandoned_batches(pool, run)])


#: The reason told when arq keeps no result of the job (it keeps one for an hour; a job
#: left queued past its expiry, a day, was never run and has none).
NO_RESULT = ("arq holds neither them nor a result: they failed, or expired before a "
             "worker took them")
#: At most this many reasons are told (each batch may have its own).
MAX_REASONS = 3


async def why_given_up(pool: ArqRedis, job_id: str) -> str:
    """Why arq no longer runs the batch job ``job_id``, in the words of the result it
    keeps (``max 150 retries exceeded``, a ``FleetInputError``, a timeout)."""
    try:
        info = await ArqJob(job_id, pool).result_info()
    except DeserializationError:  # an error class this process cannot read back
        info = None
    if info is None:
        return NO_RESULT
    if info.success:  # it stored them all: they were deleted since
        return f"arq finished {job_id}, and their outcomes were deleted since"
    error = info.result
    text = str(error)
    return f"arq gave up on {job_id}: " + (
        f"{type(error).__name__}: {text}" if text else type(error).__name__)


async def refuse_stalled(pool: ArqRedis, run: str) -> None:
    """Raise when inputs of ``run`` wait for nothing (``abandoned``).

    Raises:
        RunStalled: saying how many, why arq gave up on their batches (as it says), and
            how to enqueue them again.
    """
    left, reasons = 0, []
    async for missing, job_id in abandoned_batches(pool, run):
        left += missing
        why = await why_given_up(pool, job_id)
        if why not in reasons:
            reasons.append(why)
    if left:
        shown = "; ".join(reasons[:MAX_REASONS]) + ("; ..." if len(reasons) > MAX_REASONS
                                                    else "")
        raise RunStalled(
            f"run {run}: {left} inputs have no outcome and no worker will check them "
            f"({shown}): submit the same file again with the same --run to enqueue them")


async def submit_job_run(pool: ArqRedis, name: str, url: str, *,
                         queue: str = DEFAULT_QUEUE) -> bool:
    """Enqueue ``submit_job(name)``, ``url`` stored for it; return False when it is
    already queued or done.

    A job that failed before (``:state`` ``failed``) is submitted again, under a new id,
    its state ``queued`` again (``status`` finds the label until a worker takes it).
    """
    state = job_key(name) + ":state"
    job_id = f"submit:{name}"
    if await pool.get(state) == b"failed":
        async with pool.pipeline(transaction=True) as pipe:
            pipe.delete(job_key(name) + ":error")
            pipe.set(state, "queued")
            await pipe.execute()
        job_id = f"submit:{name}:{await pool.incr(job_key(name) + ':submits')}"
    # The URL in Redis, not in the task's arguments: arq logs those (a password in it).
    await pool.set(job_source_key(name), url)
    job = await pool.enqueue_job("submit_job", name, _job_id=job_id, _queue_name=queue)
    return job is not None


async def wait_for_job(pool: ArqRedis, name: str, *, poll: float = 1.0,
                       stream: TextIO | None = None) -> tuple[str, str]:
    """Wait until job ``name`` is ``done`` or failed; return its state and error (or "").

    Its state is shown beside a count of polls on a terminal, else one line per change.
    """
    err = stream if stream is not None else sys.stderr
    key = job_key(name)
    progress = Progress(None, "polls", err, rate=False)
    last_shown = ""
    outage = Outage()  # a Redis restart mid-wait is waited out, as the workers do

    async def read() -> list[bytes | None]:
        async with pool.pipeline(transaction=False) as pipe:
            pipe.get(key + ":state")
            pipe.get(key + ":error")
            return list(await pipe.execute())

    try:
        while True:
            state, error = await outage.outlast(
                read, functools.partial(tell, progress, err, f"job {name}"))
            if state in (b"done", b"failed") or error is not None:
                return (state or b"failed").decode(), (error or b"").decode()
            shown = f"job {name}: {(state or b'queued').decode()}"
            progress.advance()
            progress.status(shown)
            if not progress.shown and shown != last_shown:  # a log: one line per change
                print(shown, file=err, flush=True)
            last_shown = shown
            await asyncio.sleep(poll)
    finally:
        progress.close()


def cells_fingerprint(inputs: InputFile) -> str:
    """A SHA-256 of the input's other columns and of every input's cells, in order."""
    digest = hashlib.sha256(json.dumps(list(inputs.extra_columns)).encode("utf-8",
                                                                         "surrogatepass"))
    for row in inputs.rows():
        digest.update(b"\n" + json.dumps(list(row.extra)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


async def register_cells(pool: ArqRedis, run: str, inputs: InputFile) -> None:
    """Record the fingerprint of the input's other cells, or refuse one that differs from
    the first submit's (the export would mix the two files' columns and cells).

    Raises:
        FleetInputError: ``run`` holds the same addresses with other columns or cells.
    """
    digest = cells_fingerprint(inputs)
    async with pool.pipeline(transaction=True) as pipe:
        pipe.hsetnx(meta_key(run), "cells", digest)
        pipe.hget(meta_key(run), "cells")
        _, old = await pipe.execute()
    if old.decode() != digest:
        raise FleetInputError(
            f"run {run!r} already holds these addresses with other columns or cells (the "
            f"export writes them beside each outcome): choose another --run for this input, "
            f"or delete the old run's keys (fleet:{run}:*) first")


async def store_input_cells(pool: ArqRedis, run: str, inputs: InputFile) -> None:
    """Record the input's other columns (``name``, then a CSV's own) and, for each input
    with a cell that is not empty, its cells: what the export writes beside the outcome.
    Written again by a second submit of the run (the same values: ``register_cells``)."""
    await answer(pool.hset(meta_key(run), "columns",
                             json.dumps(list(inputs.extra_columns))))
    rows = iter(inputs.rows())
    while chunk := list(itertools.islice(rows, CHUNK)):
        cells = {str(row.position - 1): json.dumps(list(row.extra))
                 for row in chunk if any(row.extra)}
        if cells:
            await answer(pool.hset(inputs_key(run), mapping=cells))


async def refuse_other_kind(pool: ArqRedis, run: str, *, job: bool) -> None:
    """Refuse a run label already used by the other kind of run (addresses or a job):
    ``status`` and ``export`` would not know which one is meant.

    Raises:
        FleetInputError: the label is taken.
    """
    # A job's handle is saved once a worker submitted it; its state from the submit on.
    keys = [meta_key(run)] if job else [job_key(run), job_key(run) + ":state"]
    if await pool.exists(*keys):
        kind = "an address file" if job else "a file job"
        raise FleetInputError(f"run {run!r} already holds {kind}: choose another --run")


async def register_job_url(pool: ArqRedis, name: str, url: str) -> None:
    """Record (a SHA-256 of) the URL of job ``name``, or refuse another one: the label
    holds one job, and another URL under it would be dropped while saying "submitted".

    Raises:
        FleetInputError: the label holds a job of another URL.
    """
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()
    key = job_key(name) + ":url"
    async with pool.pipeline(transaction=True) as pipe:
        pipe.set(key, digest, nx=True)
        pipe.get(key)
        _, old = await pipe.execute()
    if old.decode() != digest:
        raise FleetInputError(f"run {name!r} already holds a file job of another URL: "
                              "choose another --run")


async def submit_file(pool: ArqRedis, inputs: InputFile, run: str, batch_size: int, *,
                      queue: str = DEFAULT_QUEUE) -> int:
    """Enqueue the addresses of ``inputs`` as run ``run``; return how many batches are
    new (see ``enqueue_batches``). The input's other cells are stored first: once every
    outcome is in, the export has them all (even if this command was stopped midway).

    Raises:
        FleetInputError: the label holds another input, another batch size, the same
            addresses with other cells, or a job.
    """
    await refuse_other_kind(pool, run, job=False)
    total, digest = fingerprint(addresses(inputs))
    await register_run(pool, run, total, digest, batch_size)
    await register_cells(pool, run, inputs)
    await store_input_cells(pool, run, inputs)
    return await enqueue_batches(pool, lambda: addresses(inputs), run, batch_size,
                                 queue=queue)
