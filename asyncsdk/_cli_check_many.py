"""``asyncsdk check-many``: check every address of a file, keeping every paid answer.

Rows are written to the output as each check ends, flushed one by one: Ctrl-C or a
crash keeps every finished row, and ``--resume`` (the same command again) sends only the
addresses the file lacks. A configuration error (no URL, no username) stops before
anything is sent; a run of consecutive connection failures (a service that is down)
stops sending and accounts for the rest as not attempted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ._cli_common import EXIT_FAILED, EXIT_OK, Environment, UsageProblem, plain
from ._cli_progress import Progress
from ._cli_results import InputFile, InputRow, ResultWriter, output_columns, read_previous
from ._client import Client
from ._errors import APIConnectionError, ConfigurationError, ServerError
from .models.validation import CheckOutcome

# Failures that say the service cannot be reached at all (after the client's retries).
DOWN = (APIConnectionError, ServerError)


async def cmd_check_many(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """Check the file's addresses; see the module docstring. Exit 1 if any row failed."""
    inputs = await asyncio.to_thread(InputFile.open, Path(args.file))
    output = Path(args.output)
    columns = output_columns(inputs.extra_columns)
    handle, writer, done = await asyncio.to_thread(
        open_output, output, columns, inputs, resume=args.resume, overwrite=args.overwrite)
    total = await asyncio.to_thread(count_rows, inputs) if env.stderr.isatty() else None
    progress = Progress(total, "addr", env.stderr)
    progress.advance(len(done))
    run = Run(writer, progress, args.max_consecutive_failures)
    source = (row for row in inputs.rows() if row.position not in done)
    try:
        with handle:
            stopped = await run.check(client, source, args.concurrency)
            if stopped is not None:
                run.give_up(source, stopped)
    except ConfigurationError:
        progress.close()
        if not done and writer.tally.total == 0:
            # nothing was sent: leave no file behind
            await asyncio.to_thread(output.unlink, missing_ok=True)
        raise
    except BaseException:  # Ctrl-C, a crash: the rows written so far are kept
        progress.close()
        rows = writer.tally.total
        env.say(f"stopped: {rows} finished rows kept in {output}; to check only the "
                f"rest, run: {env.command(*resume_words(args))}")
        raise
    progress.close()
    if stopped is not None:
        env.say(f"stopped sending: {stopped}; {run.given_up} addresses not attempted. "
                f"When the service is back: {env.command(*resume_words(args))}")
    elif writer.tally.retryable:
        env.say(f"{writer.tally.retryable} addresses failed or were not attempted; once "
                f"the cause is fixed, this sends only them: "
                f"{env.command(*resume_words(args))}")
    writer.tally.print(f"{writer.tally.total} addresses checked -> {output}", env.stdout)
    return EXIT_FAILED if writer.tally.failed else EXIT_OK


def count_rows(inputs: InputFile) -> int:
    """How many addresses the input holds (a first pass, for the progress bar's total)."""
    return sum(1 for _ in inputs.rows())


def resume_words(args: argparse.Namespace) -> list[str]:
    """The arguments of this command with ``--resume``: what finishes the job."""
    return ["check-many", args.file, "-o", args.output, "--concurrency", str(args.concurrency),
            "--resume"]


def open_output(path: Path, columns: list[str], inputs: InputFile, *, resume: bool,
                overwrite: bool) -> tuple[IO[str], ResultWriter, set[int]]:
    """Open the result file, and with ``resume`` keep the final rows of an earlier run
    (rewritten through a temporary file, so a crash now loses nothing).

    Returns:
        The open file, its writer, and the input positions already done.
    Raises:
        UsageProblem: the file exists without ``--resume``/``--overwrite``, or it was
            made from another input.
    """
    exists = path.is_file() and path.stat().st_size > 0
    if exists and not (resume or overwrite):
        raise UsageProblem(
            f"{path} exists: add --resume to check only the addresses it lacks, or "
            "--overwrite to start again")
    if not (exists and resume):
        handle = path.open("w", newline="", encoding="utf-8")
        writer = ResultWriter(handle, columns)
        writer.header()
        return handle, writer, set()
    kept, _ = read_previous(path, columns)
    by_position = {int(record["row"]): record for record in kept}
    for row in inputs.rows():  # the earlier run must be of this very input
        record = by_position.get(row.position)
        if record is not None and record["email"] != row.email:
            raise UsageProblem(
                f"{path} was made from another input: its row {row.position} is "
                f"{record['email']!r}, the input's is {row.email!r}; pass another -o")
    temp = path.with_name(f".{path.name}.{os.getpid()}.part")
    with temp.open("w", newline="", encoding="utf-8") as rewrite:
        copier = ResultWriter(rewrite, columns)
        copier.header()
        for position in sorted(by_position):
            copier.copy(by_position[position])
    os.replace(temp, path)
    handle = path.open("a", newline="", encoding="utf-8")
    writer = ResultWriter(handle, columns)
    writer.tally = copier.tally
    return handle, writer, set(by_position)


class Run:
    """One pass of ``check_many`` over the inputs, writing each outcome as it comes."""

    def __init__(self, writer: ResultWriter, progress: Progress, limit: int) -> None:
        self.writer = writer
        self.progress = progress
        self.limit = limit
        self.sent: dict[str, deque[InputRow]] = {}  # handed to check_many, no outcome yet
        self.given_up = 0
        self.stopping = False  # set on a run of failures: feed() hands out no more input

    def feed(self, source: Iterator[InputRow]) -> Iterator[str]:
        """The addresses of ``source``, remembering each row until its outcome comes."""
        for row in source:
            self.sent.setdefault(row.email, deque()).append(row)
            yield row.email
            if self.stopping:
                return

    async def check(self, client: Client, source: Iterator[InputRow],
                    concurrency: int) -> Exception | None:
        """Check until the input ends; returns the failure that stopped sending, if any.

        A run of failures ends the *input* rather than closing ``check_many``: the
        checks already sent then finish and their outcomes are written, so nothing that
        may have been paid for is recorded as not attempted. Ctrl-C closes it
        (``aclosing``), which cancels the checks in flight.
        """
        streak = 0
        stopped: Exception | None = None
        outcomes = client.validation.check_many(self.feed(source), concurrency=concurrency)
        async with contextlib.aclosing(outcomes):
            async for outcome in outcomes:
                if isinstance(outcome.error, ConfigurationError):
                    raise outcome.error  # before anything was sent: exit 2
                self.record(outcome)
                streak = streak + 1 if isinstance(outcome.error, DOWN) else 0
                if self.limit and streak >= self.limit and stopped is None:
                    stopped = outcome.error
                    self.stopping = True
        return stopped

    def record(self, outcome: CheckOutcome) -> None:
        """Write the row of one outcome."""
        queue = self.sent[outcome.email]
        row = queue.popleft()
        if not queue:
            del self.sent[outcome.email]
        result, error = outcome.result, outcome.error
        self.writer.write(
            row,
            verdict=plain(result.result) if result is not None else "",
            role=plain(result.role) if result is not None else "",
            error_type=type(error).__name__ if error is not None else "",
            error=str(error) if error is not None else "",
            attempted=outcome.attempted,
        )
        self.progress.advance()

    def give_up(self, source: Iterator[InputRow], stopped: Exception) -> None:
        """Account for every input without an outcome (the rest of ``source``; after
        ``check`` drained, none is in flight) as not attempted."""
        why = (f"not attempted: the run stopped after {self.limit} consecutive "
               f"connection failures ({stopped})")
        in_flight = sorted((r for q in self.sent.values() for r in q),
                           key=lambda r: r.position)
        self.sent.clear()
        for row in itertools.chain(in_flight, source):
            self.writer.write(row, error_type=type(stopped).__name__, error=why,
                              attempted=False)
            self.given_up += 1
            self.progress.advance()
