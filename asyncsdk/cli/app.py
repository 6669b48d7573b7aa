"""The ``asyncsdk`` command line: validate lists, check addresses, send mail, read data.

    asyncsdk --sandbox validate examples/emails.csv -o results.csv
    asyncsdk jobs wait JOB_ID -o results.csv     (also status, download, rows)
    asyncsdk check someone@example.com
    asyncsdk check-many emails.csv -o results.csv [--resume]
    asyncsdk mail send --from me@example.com --to you@example.org --subject Hi --html '<p>Hi'
    asyncsdk contacts list          (also leads, customers, products, invoices; get ID)
    asyncsdk leads create --json lead.json     (also update ID --json FILE|-, delete ID --yes)
    asyncsdk sandbox --port 8080 [--rate 500 --burst 50]   (also with --sandbox)
    asyncsdk fleet worker|submit|status|export     (the fleet extra: arq and Redis)

Credentials come from ``--api-key``/``--username``/``--base-url`` or the ``ASYNCSDK_*``
variables; ``--sandbox`` runs the command against an in-process sandbox with demo data.
Results go to stdout (JSON) or the ``-o`` file; progress and errors go to stderr, the
progress only when stderr is a terminal. Exit codes: 0 success, 1 the service or the
network failed (or some inputs did), 2 bad usage or configuration (a missing or
unreadable input, an output that cannot be written), 3 the outcome is unknown (``mail
send``, ``validate`` or a resource's create, update or delete got no answer: the mail may
have been sent, the job started, the record made or changed; check before running it
again), 130 interrupted (Ctrl-C), 143
terminated (SIGTERM, handled as Ctrl-C is), 141 the reader of stdout went away
(``| head``).

The modules behind it: ``parser`` (flags); one module per command family: ``jobs``
(validate, jobs), ``check``, ``check_many``, ``mail``, ``resources`` (the resource
areas); ``inputs`` (the input files, also read by the fleet's producer), ``outputs``
(the result CSV and the summary), ``previous`` (an earlier run's result file, for
``--resume``), ``lock`` (one run at a time per output), ``dedupe`` (``--dedupe``),
``join`` (``validate``'s input columns joined to the job's result),
``progress``, ``sandbox`` (the sandbox's rate limit flags), ``common`` (exit codes,
signals, JSON output: ``to_jsonable``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import TextIO
from urllib.parse import urlsplit

from .. import Client, ConfigurationError, InvalidInputError, SDKError, __version__
from .. import _constants as C
from .check import cmd_check
from .check_many import cmd_check_many
from .common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTCOME_UNKNOWN,
    EXIT_USAGE,
    Environment,
    OutcomeUnknown,
    UsageProblem,
    handle_signals,
    print_json,
    signal_name,
    to_jsonable,
)
from .fleet import run_fleet
from .jobs import cmd_jobs, cmd_validate
from .mail import cmd_mail
from .parser import RESOURCES
from .parser import build_parser as _build_parser
from .resources import cmd_resource
from .sandbox import limit_flags, rate_limit_of

__all__ = ["build_parser", "main", "print_json", "run", "to_jsonable"]

NO_CREDENTIALS = (
    "asyncsdk: no credentials: set ASYNCSDK_API_KEY, ASYNCSDK_USERNAME and "
    "ASYNCSDK_BASE_URL (or pass --api-key/--username/--base-url), or try --sandbox"
)

Command = Callable[[Client, argparse.Namespace, Environment], Awaitable[int]]
COMMANDS: dict[str, Command] = {
    "validate": cmd_validate,
    "jobs": cmd_jobs,
    "check": cmd_check,
    "check-many": cmd_check_many,
    "mail": cmd_mail,
    **dict.fromkeys(RESOURCES, cmd_resource),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``asyncsdk`` command."""
    return _build_parser(__version__)


async def run(args: argparse.Namespace, env: Environment) -> int:
    """Run the parsed command, in sandbox mode or against the configured service.

    Ctrl-C and SIGTERM cancel it, at its next ``await``, so that it says what it leaves
    behind and how to finish it. (Python 3.10's ``asyncio.run`` lets Ctrl-C raise
    ``KeyboardInterrupt`` wherever the code is, e.g. between printing a job's id and the
    block that prints how to finish it; 3.11's cancels the task, as this does.)
    """
    task = asyncio.current_task()
    assert task is not None

    def terminated(signum: int) -> None:
        env.signal = signum
        task.cancel()

    with handle_signals(terminated):
        return await run_command(args, env)


async def run_command(args: argparse.Namespace, env: Environment) -> int:
    """``run``, without the signal handler."""
    command = COMMANDS[args.command]
    limit = rate_limit_of(args)  # refused here without --sandbox
    if args.sandbox:
        from ..testing import Sandbox

        async with Sandbox(demo_data=True, rate_limit=limit) as sandbox:
            env.sandbox = sandbox
            async with sandbox.client(timeout=args.timeout,
                                      max_retries=args.max_retries) as client:
                return await command(client, args, env)
    api_key = args.api_key or os.environ.get(C.ENV_API_KEY)
    if not api_key:
        print(NO_CREDENTIALS, file=env.stderr)
        return EXIT_USAGE
    async with Client(api_key, args.username, base_url=args.base_url, timeout=args.timeout,
                      max_retries=args.max_retries) as client:
        return await command(client, args, env)


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Entry point of ``asyncsdk`` and ``python -m asyncsdk``; returns the exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        stdout, stderr: streams to write to (default: the process's).
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    args = build_parser().parse_args(argv)
    if args.debug:
        logging.basicConfig(stream=err, level=logging.WARNING)
        logging.getLogger(C.LOGGER_NAME).setLevel(logging.DEBUG)
    try:
        code = dispatch(args, out, err)
        out.flush()  # a reader gone away is found here, not at interpreter exit
        return code
    except BrokenPipeError:
        # `asyncsdk ... | head`: the reader has all it wanted. Exit quietly as a program
        # killed by SIGPIPE would; stdout goes to devnull so the interpreter's own final
        # flush cannot complain either.
        if out is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        return EXIT_BROKEN_PIPE


def dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the command, turning every expected failure into one line and an exit code."""
    if args.command == "sandbox":
        return serve_sandbox(args, out, err)
    if args.command == "fleet":  # its own loops: arq's worker, or Redis alone
        return run_fleet(args, out, err)
    env = make_environment(args, out, err)
    try:
        return asyncio.run(run(args, env))
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, SIGTERM
        return stopped_by_signal(env, err)
    except BrokenPipeError:
        raise
    except (UsageProblem, ConfigurationError, InvalidInputError) as exc:
        return report(exc, err, args.debug, EXIT_USAGE)
    except OutcomeUnknown as exc:  # a mail or a paid job may have gone through
        report(exc.failure, err, args.debug, EXIT_OUTCOME_UNKNOWN)
        print(f"asyncsdk: {exc.advice}", file=err)
        return EXIT_OUTCOME_UNKNOWN
    except SDKError as exc:
        return report(exc, err, args.debug, EXIT_FAILED)
    except OSError as exc:  # writing the output file failed
        return report(exc, err, args.debug, EXIT_FAILED)


def make_environment(args: argparse.Namespace, out: TextIO, err: TextIO) -> Environment:
    """The command's streams, and the global flags that a command it prints must repeat
    to run as this one did. A flag that may carry a secret is never printed: a note then
    asks for the credentials instead."""
    flags, hidden = [], bool(args.api_key or args.username)
    if args.base_url:
        parts = urlsplit(args.base_url)
        if parts.username or parts.password or parts.query or parts.fragment:
            hidden = True  # it may carry a secret: never printed
        else:
            flags = ["--base-url", args.base_url]
    if getattr(args, "sandbox", False):  # a command to run next runs against one too
        flags = ["--sandbox", *limit_flags(args), *flags]
    flags += call_flags(args)
    return Environment(stdout=out, stderr=err, follow_up_flags=flags,
                       credentials_on_command_line=hidden)


def call_flags(args: argparse.Namespace) -> list[str]:
    """``--timeout`` and ``--max-retries`` where this run was given other values than
    the defaults: the command it prints runs its calls as this one did."""
    flags: list[str] = []
    if args.timeout != C.DEFAULT_TIMEOUT:
        flags += ["--timeout", repr(args.timeout)]
    if args.max_retries != C.DEFAULT_MAX_RETRIES:
        flags += ["--max-retries", str(args.max_retries)]
    return flags


def stopped_by_signal(env: Environment, err: TextIO) -> int:
    """Say that Ctrl-C or a signal stopped the command; its exit code (130, or 128 + the
    signal's number as a shell reports it)."""
    if env.signal is None or env.signal == signal.SIGINT:
        print("asyncsdk: interrupted", file=err)
        return EXIT_INTERRUPTED
    print(f"asyncsdk: stopped by {signal_name(env.signal)}", file=err)
    return 128 + env.signal


def serve_sandbox(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``asyncsdk sandbox``: serve until Ctrl-C; a port that cannot be bound is one line."""
    from ..testing import run_standalone

    try:
        limit = rate_limit_of(args)
    except (UsageProblem, InvalidInputError) as exc:  # the limit refused: one line
        return report(exc, err, args.debug, EXIT_USAGE)
    try:
        run_standalone(args.port, args.host, out=out, rate_limit=limit)
    except OSError as exc:
        if args.debug:
            traceback.print_exception(exc, file=err)
        print(f"asyncsdk: error: cannot listen on {args.host}:{args.port}: "
              f"{exc.strerror or exc} (choose another --port; 0 picks a free one)", file=err)
        return EXIT_USAGE
    return EXIT_OK


def report(exc: BaseException, err: TextIO, debug: bool, code: int) -> int:
    """Print ``exc`` as one line (with its traceback under ``--debug``); return ``code``."""
    if debug:
        traceback.print_exception(exc, file=err)
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        text = f"{exc.filename}: {exc.strerror}"
    print(f"asyncsdk: error: {text}", file=err)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
