"""The validation-job commands: ``validate`` (submit a list, wait, write the result) and
``jobs status|wait|download|rows JOB_ID`` (reach a job known by its id). Both print the
command that finishes a job without paying again when something stops them."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import IO, Any

from .. import Client, JobFailedError, JobNotFoundError, JobTimeoutError, ValidationJob
from .. import _constants as C
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    Environment,
    UsageProblem,
    not_safe_to_repeat,
    plain,
    print_json,
)
from .inputs import InputRow
from .join import InputJoin
from .outputs import (
    STDOUT,
    ResultWriter,
    Tally,
    check_output,
    output_columns,
    replaced_file,
    temporary_beside,
)
from .progress import Progress

#: What an unanswered job submission means, and how to find out before submitting again
#: (the service finds a job only by the id that never came back).
MAY_HAVE_STARTED = (
    "a validation job may have been started, and charged: the request may have reached "
    "the service, but no answer with the job's id came back. The service has no way to "
    "find a job without its id: check the account's credit (or ask the service) before "
    "submitting again, as running this command again may pay twice")


async def cmd_validate(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """Submit a list as a job, wait for it, write its result and a summary.

    Interrupted or past ``--deadline``, it prints the job id and the ``asyncsdk jobs
    wait`` command that finishes the work without submitting (and paying) again. No
    answer to the submission itself: ``OutcomeUnknown`` (exit 3), saying that a job may
    have been started.
    """
    source: str = args.source
    join = None  # a URL's list is the service's to read: no other columns to keep
    if not source.startswith(("http://", "https://")):
        path = Path(source)
        if env.sandbox is None:
            raise UsageProblem(
                f"{source}: the service fetches the list from a URL: host the file and pass "
                "its http(s) URL (or try --sandbox, which serves local files)")
        if await asyncio.to_thread(path.is_dir):
            raise UsageProblem(f"{source}: is a directory, not a file of addresses")
        if not await asyncio.to_thread(path.is_file):
            raise UsageProblem(f"{source}: no such file")
        await asyncio.to_thread(check_writable, args.output, args.overwrite, path)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            raise UsageProblem(f"{source}: cannot read it: {exc.strerror or exc}") from None
        join = await asyncio.to_thread(InputJoin.read, path)
        source = env.sandbox.host_file(data, name=path.name)
    else:  # before the job is paid for
        await asyncio.to_thread(check_writable, args.output, args.overwrite)
    with not_safe_to_repeat(env, MAY_HAVE_STARTED):
        job = await client.validation.create_job(source)
    print(f"job {job.job_id} submitted", file=env.stderr, flush=True)
    return await finish_job(job, args, env, join)


async def finish_job(job: ValidationJob, args: argparse.Namespace, env: Environment,
                     join: InputJoin | None = None) -> int:
    """Wait for ``job`` and, given ``-o``, write its result (with ``join``, the input's
    other columns) and print a summary.

    Whatever stops it (Ctrl-C, SIGTERM, a deadline, a network failure, an output that
    cannot be written), the command that finishes the job without paying again is
    printed; only a job that failed or is unknown at the service has none.
    """
    finished = False
    try:
        await wait_for(job, args, env)
        finished = True
        if args.output is None:
            print("success", file=env.stdout)
            return EXIT_OK
        rows = await write_result(job, args.output, env, join)
    except JobTimeoutError as exc:
        env.say(f"{exc}")
        resume_hint(job, args, env, finished=False)
        return EXIT_FAILED
    except (JobFailedError, JobNotFoundError):
        raise  # nothing left to finish
    except BrokenPipeError:
        raise  # `| head`: the reader has what it wanted; the command ends quietly
    except BaseException:
        resume_hint(job, args, env, finished=finished)  # the job goes on at the service
        raise
    print_summary(rows, args.output, env)
    return EXIT_OK


def check_writable(output: str | None, overwrite: bool, source: Path | None = None) -> None:
    """``check_output`` of a ``-o`` given as a file (``-`` is standard output)."""
    if output is not None and output != STDOUT:
        check_output(Path(output), overwrite=overwrite, source=source)


def print_summary(rows: Tally, output: str, env: Environment) -> None:
    """The summary of a written result: on stdout, or on stderr when the rows went there."""
    shown = "standard output" if output == STDOUT else output
    rows.print(f"{rows.total} addresses validated -> {shown}",
               env.stderr if output == STDOUT else env.stdout)


def resume_hint(job: ValidationJob, args: argparse.Namespace, env: Environment, *,
                finished: bool) -> None:
    """Say how to reach the job again from the command line: ``jobs wait``, or once it
    is ``finished``, ``jobs download``."""
    if env.sandbox is not None:
        env.say(f"job {job.job_id} lived in this command's in-process sandbox, which has "
                "ended with it; run the command again")
        return
    words = ["jobs", "download" if finished else "wait", str(job.job_id)]
    if args.output is not None:
        words += ["-o", args.output]
        if args.overwrite:
            words.append("--overwrite")
    state = "is finished" if finished else "goes on at the service"
    env.say(f"job {job.job_id} {state}; to finish it without paying again, "
            f"run: {env.command(*words)}")


async def wait_for(job: ValidationJob, args: argparse.Namespace, env: Environment) -> None:
    """``job.wait`` with a status line on a terminal."""
    progress = Progress(None, "polls", env.stderr, rate=False)

    def on_status(status: Any, elapsed: float) -> None:
        progress.advance()
        progress.status(f"job {job.job_id}: {plain(status)} after {elapsed:.1f}s")

    try:
        # A first pause longer than the library's longest is the person's choice: the
        # pauses then stay at it (never a refusal after the job was paid for).
        await job.wait(interval=args.poll_interval, deadline=args.deadline,
                       max_interval=max(args.poll_interval, C.DEFAULT_MAX_POLL_INTERVAL),
                       on_status=on_status)
    finally:
        progress.close()


async def write_result(job: ValidationJob, output: str, env: Environment,
                       join: InputJoin | None = None) -> Tally:
    """Stream the job's rows into ``output`` in the result schema: a file, written
    atomically (a temporary file renamed when complete), or ``-``, standard output.
    Returns the counts of the rows."""
    if output == STDOUT:
        return await write_rows(job, env.stdout, env, join)
    path = Path(output)
    target = await asyncio.to_thread(replaced_file, path)
    # A file is written atomically; a device or a pipe (no target) as the rows come.
    written = path if target is None else temporary_beside(target)
    try:
        with written.open("w", newline="", encoding="utf-8") as handle:
            tally = await write_rows(job, handle, env, join)
        if target is not None:
            os.replace(written, target)
    except OSError as exc:
        if exc.strerror:  # named by the file the person asked for, not the temporary one
            raise OSError(exc.errno, f"cannot write it: {exc.strerror}",
                          str(path)) from exc
        raise
    finally:
        if target is not None:
            written.unlink(missing_ok=True)
    return tally


async def write_rows(job: ValidationJob, handle: IO[str], env: Environment,
                     join: InputJoin | None = None) -> Tally:
    """Write the job's rows to ``handle`` (a progress line on a terminal): numbered as
    they come, or with ``join`` by the input's rows, whose other columns they carry."""
    progress = Progress(None, "rows", env.stderr)
    try:
        writer = ResultWriter(handle, output_columns(
            ["name"] if join is None else join.extra_columns))
        writer.header()
        position = 0
        async for row in job.rows():
            position += 1
            at = (InputRow(position, row.email, (row.name,)) if join is None
                  else join.row_of(row))
            writer.write(at, verdict=plain(row.status), role=plain(row.role_based))
            progress.advance()
    finally:
        progress.close()
    return writer.tally


async def cmd_jobs(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """``jobs status|wait|download|rows JOB_ID``: reach a job known by its id."""
    job = client.validation.job(args.job_id)
    if args.jobs_command == "status":
        print(plain(await job.status()), file=env.stdout)
        return EXIT_OK
    if args.jobs_command == "wait":
        await asyncio.to_thread(check_writable, args.output, args.overwrite)
        return await finish_job(job, args, env)
    if args.jobs_command == "download":
        await asyncio.to_thread(check_writable, args.output, args.overwrite)
        rows = await write_result(job, args.output, env)
        print_summary(rows, args.output, env)
        return EXIT_OK
    async for row in job.rows():
        print_json(row, env.stdout)
    return EXIT_OK
