"""``asyncsdk check-many``: check every address of a file, keeping every paid answer.

Rows are written to the output as each check ends, flushed one by one: a crash keeps
every finished row, and ``--resume`` (the same command again) sends only the addresses
the file lacks. A first Ctrl-C (or SIGTERM) stops sending and waits for the checks in
flight, so that every paid answer is written; a second one stops at once. The input and
the output are checked before anything is sent. A configuration error (no URL, no
username) stops before anything is sent; a run of consecutive connection failures (a
service that is down) stops sending and accounts for the rest as not attempted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .. import (
    APIConnectionError,
    CheckOutcome,
    Client,
    ConfigurationError,
    InvalidInputError,
    ServerError,
)
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Environment,
    UsageProblem,
    handle_signals,
    plain,
    signal_name,
)
from .dedupe import Dedupe, copy_of
from .inputs import InputFile, InputProblem, InputRow
from .lock import output_lock
from .outputs import (
    STDOUT,
    Answer,
    ResultWriter,
    check_output,
    never_left,
    output_columns,
    replaced_file,
    temporary_beside,
)
from .parser import DEFAULT_MAX_CONSECUTIVE_FAILURES
from .previous import read_previous
from .progress import Progress

# Failures that say the service cannot be reached at all (after the client's retries).
DOWN = (APIConnectionError, ServerError)


async def cmd_check_many(client: Client, args: argparse.Namespace, env: Environment) -> int:
    """Check the file's addresses; see the module docstring. Exit 1 if any row failed.

    ``-o -`` writes the rows to standard output (then the summary goes to stderr, and
    ``--resume`` is refused: there is no file to read back). A file output is locked for
    the run's whole life (``lock``): a second run on it is refused.
    """
    source_path = Path(args.file)
    if args.output == STDOUT:
        if args.resume:
            raise UsageProblem("--resume reads the result file of the earlier run: with "
                               "-o - the rows went to standard output; pass -o FILE")
        return await check_file(client, args, env, source_path, None)
    output = Path(args.output)
    await asyncio.to_thread(check_output, output, overwrite=args.overwrite,
                            resume=args.resume, source=source_path)
    with output_lock(output):
        return await check_file(client, args, env, source_path, output)


async def check_file(client: Client, args: argparse.Namespace, env: Environment,
                     source_path: Path, output: Path | None) -> int:
    """Check every address of ``source_path`` into ``output`` (None: stdout)."""
    inputs = await asyncio.to_thread(InputFile.open, source_path)
    columns = output_columns(inputs.extra_columns)
    done: dict[int, dict[str, str]] = {}
    fresh: Replacement | None = None  # a new result file, in place at its first row
    if output is None:
        handle: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        writer = ResultWriter(env.stdout, columns)
        writer.header()
    else:
        handle, writer, done, fresh = await asyncio.to_thread(
            open_output, output, columns, inputs, resume=args.resume,
            overwrite=args.overwrite)
    progress = Progress(inputs.count, "addr", env.stderr)
    progress.advance(len(done))
    run = Run(writer, progress, args.max_consecutive_failures,
              Dedupe(done.values()) if args.dedupe else None,
              on_first_row=fresh.put_in_place if fresh is not None else None)
    source = (row for row in inputs.rows() if row.position not in done)
    try:
        with handle, handle_signals(signal_handler(run, env, args.timeout)):
            stopped = await run.check(client, source, args.concurrency,
                                      left=inputs.count - len(done))
            if stopped is not None and run.interrupted is None:
                run.give_up(source, stopped)
    except ConfigurationError:  # before anything was sent: the old file (if any) stays
        progress.close()
        if fresh is not None:
            await asyncio.to_thread(fresh.discard)
        raise
    except InputProblem as exc:  # the input changed since it was checked
        progress.close()
        env.say(f"error: {exc}")
        env.say(f"{writer.tally.total} finished rows kept in {shown(args)}; a resume would "
                f"stop at the same line: fix {args.file}, then {again(args, env)}")
        return EXIT_USAGE
    except BrokenPipeError:  # `-o - | head`: the reader has what it wanted; quietly
        progress.close()
        raise
    except BaseException:  # a second Ctrl-C, a crash: the rows written so far are kept
        progress.close()
        env.say(f"stopped: {writer.tally.total} finished rows kept in {shown(args)}; to "
                f"check only the rest, {again(args, env)}")
        raise
    finally:  # however it ended, but for a configuration error: the new file in place
        if fresh is not None:
            fresh.put_in_place()
    progress.close()
    return report_end(run, stopped, args, env)


def signal_handler(run: Run, env: Environment, timeout: float) -> Callable[[int], None]:
    """What Ctrl-C and SIGTERM do to ``run``: the first stops sending and lets the checks
    in flight end, so that every paid answer is written; the second cancels the command
    (this task) at once."""
    task = asyncio.current_task()
    assert task is not None

    def on_signal(signum: int) -> None:
        if run.interrupted is None:
            run.interrupt(signum)
            env.signal = signum
            run.progress.close()
            env.say(f"stopping: waiting for the checks in flight to end (at most "
                    f"{timeout:g}s); {signal_name(signum)} again stops at once, "
                    "losing their answers")
        else:
            task.cancel()

    return on_signal


def report_end(run: Run, stopped: Exception | None, args: argparse.Namespace,
               env: Environment) -> int:
    """Say how a run that came to its end ended (interrupted, stopped by a run of
    failures, or with rows to try again) and the command that goes on from there; print
    the summary. Returns the exit code."""
    tally = run.writer.tally
    if run.interrupted is not None:
        env.say(f"interrupted: {tally.total} finished rows kept in {shown(args)} (every "
                f"check sent has its row); to check only the rest, {again(args, env)}")
        return 128 + run.interrupted
    if stopped is not None:
        env.say(f"stopped sending: {stopped}; {run.given_up} addresses not attempted. "
                f"When the service is back, {again(args, env)}")
    elif tally.retryable:
        env.say(f"{tally.retryable} addresses failed or were not attempted; once "
                f"the cause is fixed, this sends only them: {again(args, env)}")
    headline = (f"{tally.total} addresses -> {shown(args)}: {tally.checked} checked, "
                f"{tally.not_attempted} not attempted, {tally.refused} refused before "
                "sending")
    if run.dedupe is not None or tally.duplicates:
        headline += (f", {tally.duplicates} duplicates not sent (they took the outcome of "
                     "the same address)")
    tally.print(headline, env.stderr if args.output == STDOUT else env.stdout)
    return EXIT_FAILED if tally.failed else EXIT_OK


def shown(args: argparse.Namespace) -> str:
    """The output as a person reads it: its path, or standard output."""
    return "standard output" if args.output == STDOUT else str(args.output)


def resume_words(args: argparse.Namespace) -> list[str]:
    """The arguments of this command with ``--resume``: what finishes the job, as this
    run would have (its ``--max-consecutive-failures`` too, where not the default)."""
    words = ["check-many", args.file, "-o", args.output, "--concurrency",
             str(args.concurrency)]
    if args.max_consecutive_failures != DEFAULT_MAX_CONSECUTIVE_FAILURES:
        words += ["--max-consecutive-failures", str(args.max_consecutive_failures)]
    return [*words, *(["--dedupe"] if args.dedupe else []), "--resume"]


def again(args: argparse.Namespace, env: Environment) -> str:
    """How to check only the rest: the ``--resume`` command (not with ``-o -``)."""
    if args.output == STDOUT:
        return "run again with -o FILE: standard output cannot be resumed"
    return f"run: {env.command(*resume_words(args))}"


class Replacement:
    """A new result file, written first under a temporary name that replaces ``path`` at
    its first row (or as the run ends): a run that sends nothing (no URL, no username)
    leaves an existing file, one that ``--overwrite`` would replace, as it was."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.temp = temporary_beside(path)
        self.pending = True

    def put_in_place(self) -> None:
        """Replace ``path`` with the file written so far (its rows go on being appended
        there); once."""
        if self.pending:
            self.pending = False
            os.replace(self.temp, self.path)

    def discard(self) -> None:
        """Remove the file, not yet in place: ``path`` stays as it was."""
        if self.pending:
            self.pending = False
            self.temp.unlink(missing_ok=True)


def open_output(path: Path, columns: list[str], inputs: InputFile, *, resume: bool,
                overwrite: bool) -> tuple[IO[str], ResultWriter, dict[int, dict[str, str]],
                                          Replacement | None]:
    """Open the result file, and with ``resume`` keep the final rows of an earlier run
    (rewritten through a temporary file, so a crash now loses nothing).

    Returns:
        The open file, its writer, the final rows already there by input position, and
        for a new file its ``Replacement`` (None when the rows are appended to ``path``).
    Raises:
        UsageProblem: the file exists without ``--resume``/``--overwrite``, it was
            made from another input (a row whose address differs from the input's at
            its position, or a position the input does not have), or it cannot be
            written.
    """
    exists = check_output(path, overwrite=overwrite, resume=resume)
    try:
        target = replaced_file(path)
        if target is None:  # a device or a pipe (-o /dev/stdout): written in place
            handle = path.open("w", newline="", encoding="utf-8")
            writer = ResultWriter(handle, columns)
            writer.header()
            return handle, writer, {}, None
        if not (exists and resume):
            fresh = Replacement(target)
            handle = fresh.temp.open("w", newline="", encoding="utf-8")
            writer = ResultWriter(handle, columns)
            writer.header()
            return handle, writer, {}, fresh
        previous = read_previous(path, columns)
        rows = previous.final + previous.retried
        beyond = [r for r in rows if int(r["row"]) > inputs.count]
        if beyond:
            first = min(beyond, key=lambda r: int(r["row"]))
            raise UsageProblem(
                f"{path} was made from another input: it has row {first['row']} "
                f"({first['email']!r}) and {inputs.path} only {inputs.count} addresses; "
                "pass another -o (or --overwrite to start again)")
        by_row = {int(record["row"]): record for record in rows}
        for row in inputs.rows():  # the earlier run must be of this very input
            record = by_row.get(row.position)
            if record is not None and record["email"] != row.email:
                raise UsageProblem(
                    f"{path} was made from another input: its row {row.position} is "
                    f"{record['email']!r}, the input's is {row.email!r}; pass another -o")
        by_position = {int(record["row"]): record for record in previous.final}
        temp = temporary_beside(target)
        with temp.open("w", newline="", encoding="utf-8") as rewrite:
            copier = ResultWriter(rewrite, columns)
            copier.header()
            for position in sorted(by_position):
                copier.copy(by_position[position])
        os.replace(temp, target)
        handle = target.open("a", newline="", encoding="utf-8")
    except PermissionError as exc:
        raise UsageProblem(f"-o {path}: cannot write it: {exc.strerror}") from None
    writer = ResultWriter(handle, columns)
    writer.tally = copier.tally
    return handle, writer, by_position, None


class Counted:
    """Addresses handed out one by one, and how many there are (``len``, for
    ``check_many``'s pace; an estimate from above: repeats that ``--dedupe`` does not send
    are counted, and a run that stops early leaves some)."""

    __slots__ = ("_count", "_emails")

    def __init__(self, emails: Iterator[str], count: int) -> None:
        self._emails = emails
        self._count = count

    def __iter__(self) -> Iterator[str]:
        return self._emails

    def __len__(self) -> int:
        return self._count


class Run:
    """One pass of ``check_many`` over the inputs, writing each outcome as it comes."""

    def __init__(self, writer: ResultWriter, progress: Progress, limit: int,
                 dedupe: Dedupe | None = None,
                 on_first_row: Callable[[], None] | None = None) -> None:
        self.writer = writer
        self.on_first_row = on_first_row  # a new result file goes in place then
        self.progress = progress
        self.limit = limit
        self.dedupe = dedupe  # --dedupe: each address sent once
        self.sent: dict[str, deque[InputRow]] = {}  # handed to check_many, no outcome yet
        self.given_up = 0
        self.stopping = False  # set on a run of failures: feed() hands out no more input
        #: Set on a first Ctrl-C or SIGTERM (``interrupt``): ``check_many``'s ``stop``,
        #: which sends nothing more, not even the checks waiting for their moment of the
        #: pace (an end of the input would send them, and pay for them); those on the
        #: wire finish and are written.
        self.halt = asyncio.Event()
        self.interrupted: int | None = None  # the signal that asked to stop: the same

    def feed(self, source: Iterator[InputRow]) -> Iterator[str]:
        """The addresses of ``source``, remembering each row until its outcome comes;
        ends early once ``stopping`` is set (``check_many`` reads an input only when a
        worker is free, so the checks in flight then finish). With ``--dedupe``, a repeat
        of an address is not sent: it takes that one's outcome."""
        for row in source:
            if self.repeated(row):
                continue
            self.sent.setdefault(row.email, deque()).append(row)
            yield row.email
            if self.stopping:
                return

    def interrupt(self, signum: int) -> None:
        """A first Ctrl-C or SIGTERM: nothing more is sent (``halt``)."""
        self.interrupted = signum
        self.halt.set()

    def repeated(self, row: InputRow) -> bool:
        """True when ``row`` repeats an address (``--dedupe``): written now with its
        outcome, or waiting for the one in flight."""
        if self.dedupe is None:
            return False
        answer = self.dedupe.repeat(row)
        if isinstance(answer, Answer):
            self.write(row, answer)
        return answer is not False

    async def check(self, client: Client, source: Iterator[InputRow],
                    concurrency: int, left: int | None = None) -> Exception | None:
        """Check until the input ends; returns the failure that stopped sending, if any.
        ``left``: the rows of ``source`` (told to ``check_many``, whose pace then makes
        no probe in the run's last second whose 429 would wait past its end).

        A run of failures ends the *input*, and a first Ctrl-C/SIGTERM sets
        ``check_many``'s ``stop`` (``halt``), rather than closing ``check_many``: the
        checks already sent then finish and their outcomes are written, so nothing that
        may have been paid for is lost or recorded as not attempted. Only a cancellation
        (a second signal) closes it (``aclosing``), which cancels the checks in flight.
        """
        streak = 0
        stopped: Exception | None = None
        emails = self.feed(source)
        outcomes = client.validation.check_many(
            emails if left is None else Counted(emails, left), concurrency=concurrency,
            stop=self.halt)
        async with contextlib.aclosing(outcomes):
            async for outcome in outcomes:
                if isinstance(outcome.error, ConfigurationError):
                    raise outcome.error  # before anything was sent: exit 2
                if self.interrupted is not None and not outcome.attempted:
                    continue  # kept from being sent by the interruption: no row
                self.record(outcome)
                streak = streak + 1 if isinstance(outcome.error, DOWN) else 0
                if self.limit and streak >= self.limit and stopped is None:
                    stopped = outcome.error
                    self.stopping = True
        return stopped

    def record(self, outcome: CheckOutcome) -> None:
        """Write the row of one outcome (and, with ``--dedupe``, of its repeats)."""
        queue = self.sent[outcome.email]
        row = queue.popleft()
        if not queue:
            del self.sent[outcome.email]
        answer = answer_of(outcome)
        self.write(row, answer)
        if self.dedupe is not None:
            for repeat in self.dedupe.answered(row, answer):
                self.write(repeat, copy_of(answer))

    def write(self, row: InputRow, answer: Answer) -> None:
        """Write one row and count it done."""
        if self.on_first_row is not None:
            self.on_first_row()
            self.on_first_row = None
        self.writer.answer(row, answer)
        self.progress.advance()

    def give_up(self, source: Iterator[InputRow], stopped: Exception) -> None:
        """Account for every input without an outcome (the rest of ``source``; after
        ``check`` drained, none is in flight) as not attempted (a repeat of an answered
        address, with ``--dedupe``, takes its answer)."""
        why = (f"not attempted: the run stopped after {self.limit} consecutive "
               f"connection failures ({stopped})")
        gone = Answer(error_type=type(stopped).__name__, error=why, attempted=False)
        in_flight = sorted((r for q in self.sent.values() for r in q),
                           key=lambda r: r.position)
        self.sent.clear()
        for row in itertools.chain(in_flight, source):
            known = self.dedupe.known_answer(row) if self.dedupe is not None else None
            if known is None:
                self.given_up += 1
            self.write(row, known or gone)


def answer_of(outcome: CheckOutcome) -> Answer:
    """The cells of an outcome's row. ``attempted`` is True only for a check that was
    sent: an input refused before sending (not an address) was not, nor one its pace
    held back until its budget ran out (``never_left``)."""
    result, error = outcome.result, outcome.error
    if result is not None:
        return Answer(verdict=plain(result.result), role=plain(result.role))
    assert error is not None
    return Answer(error_type=type(error).__name__, error=str(error),
                  attempted=outcome.attempted and not isinstance(error, InvalidInputError)
                  and not never_left(error))

