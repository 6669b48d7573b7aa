"""The commands ``asyncsdk fleet worker|submit|status|export`` (the parser is
``asyncsdk.cli.fleet``'s, which imports this module only once a fleet command runs: the
``fleet`` extra is needed from here on).

Exit codes as the rest of the command line: 0 done, 1 a run or job failed, or Redis
could not be reached, 2 bad usage or configuration (a bad setting, an unreadable input,
a label already used for another input, a Redis too old), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import logging.config
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.logs import default_log_config
from redis.exceptions import RedisError

import asyncsdk
from asyncsdk.cli.common import print_json
from asyncsdk.cli.inputs import UsageProblem
from asyncsdk.cli.outputs import (
    STDOUT,
    Tally,
    check_output,
    replaced_file,
    temporary_beside,
)

from .config import SETTINGS, FleetConfig
from .export import NotReady, export_run, run_status
from .store import (
    FleetInputError,
    RedisVersionError,
    RunStalled,
    answer,
    job_key,
    total_key,
)
from .submit import (
    check_job_url,
    check_run_name,
    open_input,
    refuse_other_kind,
    register_job_url,
    submit_file,
    submit_job_run,
    wait_for_job,
    wait_for_run,
)
from .worker import Account, serve

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
Command = Callable[[argparse.Namespace, FleetConfig, ArqRedis, TextIO, TextIO],
                   Awaitable[int]]


def main(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``asyncsdk fleet ACTION``; its exit code (one line on ``err`` for a failure)."""
    config: FleetConfig | None = None
    try:
        config = read_config(args)
        if args.fleet_command == "worker":
            return work(args, config)
        return asyncio.run(with_redis(COMMANDS[args.fleet_command], args, config, out, err))
    except BrokenPipeError:
        raise  # `... export RUN -o - | head`: the command line ends quietly
    except KeyboardInterrupt:
        return say(err, "interrupted", EXIT_INTERRUPTED)
    except Exception as exc:
        known = explain(exc, config)
        if known is None or (args.debug and isinstance(exc, (RedisError, OSError))):
            raise
        return say(err, *known)


def explain(exc: Exception, config: FleetConfig | None) -> tuple[str, int] | None:
    """The line and exit code of an expected failure (None: a bug, raised as it is)."""
    if isinstance(exc, (UsageProblem, FleetInputError, RedisVersionError,
                        asyncsdk.ConfigurationError)):  # a worker's credentials or URL
        return str(exc), EXIT_USAGE
    if isinstance(exc, (NotReady, RunStalled)):
        return str(exc), EXIT_FAILED
    if isinstance(exc, RedisError):
        where = redis_place(config.redis_url) if config is not None else "Redis"
        return f"cannot reach Redis at {where}: {exc}", EXIT_FAILED
    if isinstance(exc, OSError):  # writing the export failed
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}", EXIT_FAILED
    return None


def say(err: TextIO, text: str, code: int) -> int:
    """One line for the person (``asyncsdk: error: ...``); returns ``code``."""
    prefix = "asyncsdk: " if code == EXIT_INTERRUPTED else "asyncsdk: error: "
    print(prefix + text, file=err, flush=True)
    return code


def redis_place(url: str) -> str:
    """Where a Redis URL points, as ``host:port/db``: never its password."""
    parts = urlsplit(url)
    return f"{parts.hostname or '?'}:{parts.port or 6379}{parts.path or ''}"


def read_config(args: argparse.Namespace) -> FleetConfig:
    """The settings: each flag given, else its ``FLEET_*`` variable, else the default.

    Raises:
        UsageProblem: a value that is not a number or out of range (named).
    """
    flags = {s.field: getattr(args, s.field, None) for s in SETTINGS}
    try:
        config = FleetConfig.read(flags=flags)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    check_redis_url(config.redis_url,
                    "--redis-url" if flags["redis_url"] is not None else "FLEET_REDIS_URL")
    return config


def check_redis_url(url: str, named: str) -> None:
    """Refuse a Redis URL arq cannot read (it raised a traceback), naming where it came
    from and what is wrong; the URL is not shown (a password may sit where a port or a
    host is expected).

    Raises:
        UsageProblem: not ``redis://``, ``rediss://`` or ``unix://``, or a port or a
            database that is not a number.
    """
    try:
        RedisSettings.from_dsn(url)
        return
    except (RuntimeError, ValueError):
        pass
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", "unix"):
        why = (f"its scheme is {scheme!r}" if scheme.isalnum() else "it has no scheme")
    else:
        why = "its port or its database is not a number"
    raise UsageProblem(f"{named}: expected a Redis URL such as redis://127.0.0.1:6379/0 "
                       f"(redis://, rediss:// or unix://), but {why}")


def work(args: argparse.Namespace, config: FleetConfig) -> int:
    """``fleet worker``: run until SIGTERM or Ctrl-C (then drain); arq's log lines on
    stderr (``--debug``: arq's DEBUG ones too)."""
    log_config = default_log_config(verbose=args.debug)
    log_config["loggers"]["asyncsdk.fleet"] = {"handlers": ["arq.standard"],
                                               "level": "DEBUG" if args.debug else "INFO"}
    logging.config.dictConfig(log_config)
    account = Account(args.api_key, args.username, args.base_url)
    asyncio.run(serve(config, account))
    return EXIT_OK


async def with_redis(command: Command, args: argparse.Namespace, config: FleetConfig,
                     out: TextIO, err: TextIO) -> int:
    """Run ``command`` with a connection to the fleet's Redis (closed after it).

    Connected once: a Redis out of reach is the command's one line at once (arq's five
    tries took five seconds and printed a line each before it)."""
    settings = dataclasses.replace(RedisSettings.from_dsn(config.redis_url), conn_retries=0)
    pool = await create_pool(settings)
    try:
        return await command(args, config, pool, out, err)
    finally:
        await pool.aclose()


async def cmd_submit(args: argparse.Namespace, config: FleetConfig, pool: ArqRedis,
                     out: TextIO, err: TextIO) -> int:
    """``fleet submit FILE --run NAME`` or ``fleet submit --job URL --run NAME``."""
    run = check_run_name(args.run)
    if args.job is not None:
        check_job_url(args.job)
        return await submit_job_command(args, config, pool, run, err)
    if args.batch_size < 1:
        raise UsageProblem(f"--batch-size: expected an integer >= 1, got {args.batch_size}")
    inputs = await asyncio.to_thread(open_input, Path(args.file))
    new = await submit_file(pool, inputs, run, args.batch_size, queue=config.queue)
    total = int(await pool.get(total_key(run)) or 0)
    print(f"run {run}: {total} addresses, {new} new batches enqueued", file=err, flush=True)
    if args.wait:
        await wait_for_run(pool, run, poll=args.poll, requeue=lambda: (
            row.email for row in inputs.rows()), batch_size=args.batch_size,
            requeue_after=config.requeue_after, queue=config.queue, stream=err)
    return EXIT_OK


async def submit_job_command(args: argparse.Namespace, config: FleetConfig,
                             pool: ArqRedis, name: str, err: TextIO) -> int:
    """``fleet submit --job URL --run NAME [--wait]``: 1 when the job failed."""
    await refuse_other_kind(pool, name, job=True)
    await register_job_url(pool, name, args.job)
    # Seen by ``status`` until a worker takes it (never replaces a state it has).
    await pool.set(job_key(name) + ":state", "queued", nx=True)
    if await submit_job_run(pool, name, args.job, queue=config.queue):
        print(f"job {name}: submitted to the fleet", file=err, flush=True)
    else:
        print(f"job {name}: already submitted to the fleet (not enqueued again)",
              file=err, flush=True)
    if not args.wait:
        return EXIT_OK
    state, error = await wait_for_job(pool, name, poll=args.poll, stream=err)
    if state != "done":
        print(f"job {name}: failed: {error or 'see the workers logs'}", file=err)
        return EXIT_FAILED
    rows = await answer(pool.hlen(job_key(name) + ":rows"))
    print(f"job {name}: done, {rows} rows", file=err)
    return EXIT_OK


async def cmd_status(args: argparse.Namespace, config: FleetConfig, pool: ArqRedis,
                     out: TextIO, err: TextIO) -> int:
    """``fleet status RUN [--wait]``: the run's counts as JSON (a bar on a terminal);
    1 for a job that failed or has an error."""
    status = await run_status(pool, args.run)
    if args.wait and not status.finished:
        if status.kind == "job":
            await wait_for_job(pool, args.run, poll=args.poll, stream=err)
        else:
            await wait_for_run(pool, args.run, poll=args.poll, stream=err,
                               requeue_after=config.requeue_after)
        status = await run_status(pool, args.run)
    elif status.kind == "addresses":
        show_bar(status.total, status.done, err)
    print_json(status.to_dict(), out)
    # a job with an error ended without rows, "failed" or stuck "submitting" alike
    return EXIT_FAILED if status.state == "failed" or status.error else EXIT_OK


def show_bar(total: int, done: int, err: TextIO) -> None:
    """The progress bar of ``check-many``, drawn once (on a terminal only)."""
    from asyncsdk.cli.progress import Progress

    progress = Progress(total, "addr", err)
    progress.advance(done)
    progress.close()


async def cmd_export(args: argparse.Namespace, config: FleetConfig, pool: ArqRedis,
                     out: TextIO, err: TextIO) -> int:
    """``fleet export RUN -o FILE``: the result CSV of ``check-many``, written whole or
    not at all (a temporary file renamed at the end); an existing file is refused
    without ``--overwrite``. The summary follows, as ``check-many`` prints it, and so
    does its exit status: 1 when a row has no verdict."""
    if args.output == STDOUT:
        tally = await export_run(pool, args.run, out)
        summary(tally, args, err)
        return EXIT_FAILED if tally.failed else EXIT_OK
    path = Path(args.output)
    await asyncio.to_thread(check_output, path, overwrite=args.overwrite)
    # As check-many writes: a link stays a link (to the new content); a device or a
    # pipe (no target) is written in place, never renamed over (-o /dev/null).
    target = await asyncio.to_thread(replaced_file, path)
    written = path if target is None else temporary_beside(target)
    try:
        with written.open("w", newline="", encoding="utf-8") as handle:
            tally = await export_run(pool, args.run, handle)
        if target is not None:
            os.replace(written, target)
    finally:
        if target is not None:
            written.unlink(missing_ok=True)
    summary(tally, args, out)
    return EXIT_FAILED if tally.failed else EXIT_OK


def summary(tally: Tally, args: argparse.Namespace, stream: TextIO) -> None:
    """``check-many``'s summary of the rows written."""
    shown = "standard output" if args.output == STDOUT else args.output
    tally.print(f"run {args.run}: {tally.total} rows -> {shown}", stream)


COMMANDS: dict[str, Command] = {
    "submit": cmd_submit,
    "status": cmd_status,
    "export": cmd_export,
}
