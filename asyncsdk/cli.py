"""The ``asyncsdk`` command line: validate lists, check addresses, send mail, read data.

    asyncsdk --sandbox validate examples/emails.csv -o results.csv
    asyncsdk check someone@example.com
    asyncsdk check-many emails.csv -o results.csv --concurrency 32
    asyncsdk mail send --from me@example.com --to you@example.org --subject Hi --html '<p>Hi'
    asyncsdk contacts list          (also leads, customers, products, invoices; get ID)
    asyncsdk sandbox --port 8080

Credentials come from ``--api-key``/``--username``/``--base-url`` or the ``ASYNCSDK_*``
variables; ``--sandbox`` runs the command against an in-process sandbox with demo data.
Results go to stdout (JSON) or the ``-o`` file; progress and errors go to stderr, the
progress only when stderr is a terminal (install the ``cli`` extra for progress bars).
Exit codes: 0 success, 1 the service or the network failed, 2 bad usage or
configuration, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import logging
import os
import sys
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

import attrs

from . import _constants as C
from ._client import Client
from ._errors import ConfigurationError, InvalidInputError, SDKError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
RESOURCES = ("contacts", "leads", "customers", "products", "invoices")
NO_CREDENTIALS = (
    "asyncsdk: no credentials: set ASYNCSDK_API_KEY, ASYNCSDK_USERNAME and "
    "ASYNCSDK_BASE_URL (or pass --api-key/--username/--base-url), or try --sandbox"
)


class UsageProblem(Exception):
    """A command line that cannot work (exit code 2)."""


# --- argument parsing -----------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``asyncsdk`` command."""
    parser = argparse.ArgumentParser(
        prog="asyncsdk", description="Validate email lists and use the service from a shell.")
    parser.add_argument("--sandbox", action="store_true",
                        help="run against an in-process sandbox with demo data")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks and DEBUG logs of the library")
    parser.add_argument("--api-key", help=f"default: ${C.ENV_API_KEY}")
    parser.add_argument("--username", help=f"default: ${C.ENV_USERNAME}")
    parser.add_argument("--base-url", help=f"default: ${C.ENV_BASE_URL}")
    parser.add_argument("--timeout", type=float, default=C.DEFAULT_TIMEOUT,
                        help="seconds per call (default %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="validate a list as a job, end to end")
    validate.add_argument("source", help="a file URL (or, with --sandbox, a local file)")
    validate.add_argument("-o", "--output", required=True, help="where to write the result CSV")
    validate.add_argument("--deadline", type=float, default=None,
                          help="give up waiting after this many seconds")
    validate.add_argument("--poll-interval", type=float, default=C.DEFAULT_POLL_INTERVAL,
                          help="first interval between status polls (default %(default)s s)")

    check = commands.add_parser("check", help="check addresses now; one JSON line each")
    check.add_argument("emails", nargs="+")

    many = commands.add_parser("check-many", help="check every address of a file")
    many.add_argument("file", help="CSV with an email column, or one address per line")
    many.add_argument("-o", "--output", required=True, help="where to write the result CSV")
    many.add_argument("--concurrency", type=int, default=C.DEFAULT_CHECK_CONCURRENCY)

    mail = commands.add_parser("mail", help="transactional mail")
    mail_commands = mail.add_subparsers(dest="mail_command", required=True)
    send = mail_commands.add_parser("send", help="send one HTML mail")
    send.add_argument("--from", dest="sender", required=True)
    send.add_argument("--to", required=True)
    send.add_argument("--subject", required=True)
    body = send.add_mutually_exclusive_group(required=True)
    body.add_argument("--html", help="the HTML body")
    body.add_argument("--html-file", help="a file holding the HTML body")

    for name in RESOURCES:
        area = commands.add_parser(name, help=f"read {name} (JSON on stdout)")
        actions = area.add_subparsers(dest="action", required=True)
        actions.add_parser("list", help=f"all {name}")
        if name != "invoices":  # the interface has no "get" for invoices
            actions.add_parser("get", help="one by id").add_argument("id")

    serve = commands.add_parser("sandbox", help="serve a sandbox until Ctrl-C")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--host", default="127.0.0.1")
    return parser


# --- output helpers -------------------------------------------------------------------
def to_jsonable(value: Any) -> Any:
    """A model (or anything in one) as plain JSON types: dates ISO, decimals as text."""
    from ._convert import to_jsonable as converted

    return converted(value)


def print_json(value: Any, out: TextIO) -> None:
    """One JSON document on ``out``."""
    json.dump(to_jsonable(value), out, ensure_ascii=False)
    out.write("\n")


class Progress:
    """A progress display on stderr when it is a terminal and tqdm is installed
    (extra ``cli``); otherwise it shows nothing."""

    def __init__(self, total: int | None, unit: str, stream: TextIO) -> None:
        self._bar: Any = None
        if not stream.isatty():
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError:
            return
        self._bar = tqdm(total=total, unit=unit, file=stream, dynamic_ncols=True)

    def advance(self, count: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(count)

    def status(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def read_addresses(path: Path) -> Iterator[str]:
    """Addresses of a file read lazily: a CSV with an ``email`` column (any case), or one
    address per line (blank lines and lines starting with # skipped)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        first = handle.readline()
        header = next(csv.reader([first]), [])
        columns = [h.strip().lower() for h in header]
        if "email" in columns and ("," in first or first.strip().lower() == "email"):
            index = columns.index("email")
            for row in csv.reader(handle):
                if len(row) > index and row[index].strip():
                    yield row[index].strip()
            return
        for line in [first, *handle]:
            text = line.strip()
            if text and not text.startswith("#"):
                yield text


def count_addresses(path: Path) -> int:
    """How many addresses ``read_addresses`` will yield (a cheap first pass)."""
    return sum(1 for _ in read_addresses(path))


# --- the commands -----------------------------------------------------------------------
Command = Callable[[Client, argparse.Namespace, "Environment"], Awaitable[int]]


@attrs.define
class Environment:
    """What a command may touch besides the client: streams, and the sandbox if any."""

    stdout: TextIO
    stderr: TextIO
    sandbox: Any = None  # asyncsdk.testing.Sandbox in --sandbox mode


async def cmd_validate(client: Client, args: argparse.Namespace, env: Environment) -> int:
    source: str = args.source
    if not source.startswith(("http://", "https://")):
        path = Path(source)
        if env.sandbox is None:
            raise UsageProblem(
                f"{source}: the service fetches the list from a URL: host the file and pass "
                "its http(s) URL (or try --sandbox, which serves local files)")
        if not await asyncio.to_thread(path.is_file):
            raise UsageProblem(f"{source}: no such file")
        data = await asyncio.to_thread(path.read_bytes)
        source = env.sandbox.host_file(data, name=path.name)
    job = await client.validation.create_job(source)
    print(f"job {job.job_id} submitted", file=env.stderr)
    progress = Progress(None, "poll", env.stderr)

    def on_status(status: Any, elapsed: float) -> None:
        progress.status(f"{elapsed:6.1f}s  {status}")
        progress.advance()

    try:
        await job.wait(interval=args.poll_interval, deadline=args.deadline,
                       on_status=on_status)
    finally:
        progress.close()
    rows = await job.download(args.output)
    print_summary(Path(args.output), rows, env.stdout)
    return EXIT_OK


def print_summary(result_file: Path, rows: int, out: TextIO) -> None:
    """A table of verdicts of a result CSV, as a person wants to read it."""
    verdicts: Counter[str] = Counter()
    roles = 0
    with result_file.open(newline="", encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            verdicts[row.get("Status") or "?"] += 1
            if (row.get("Role Based Emails") or "").strip().lower() in ("true", "1"):
                roles += 1
    print(f"{rows} addresses validated -> {result_file}", file=out)
    print(f"{'verdict':<12}{'count':>8}{'share':>9}", file=out)
    for verdict, count in verdicts.most_common():
        print(f"{verdict:<12}{count:>8}{count / max(rows, 1):>9.1%}", file=out)
    print(f"{'role-based':<12}{roles:>8}{roles / max(rows, 1):>9.1%}", file=out)


async def cmd_check(client: Client, args: argparse.Namespace, env: Environment) -> int:
    failed = 0
    async for outcome in client.validation.check_many(args.emails, concurrency=8):
        if outcome.result is not None:
            print_json(outcome.result, env.stdout)
        else:
            failed += 1
            print_json({"email": outcome.email, "error": str(outcome.error)}, env.stdout)
    return EXIT_FAILED if failed else EXIT_OK


OUTCOME_COLUMNS = ["email", "status", "result", "role", "error", "attempted"]


async def cmd_check_many(client: Client, args: argparse.Namespace, env: Environment) -> int:
    path = Path(args.file)
    if not await asyncio.to_thread(path.is_file):
        raise UsageProblem(f"{args.file}: no such file")
    progress = Progress(count_addresses(path) if env.stderr.isatty() else None, "addr",
                        env.stderr)
    tally: Counter[str] = Counter()
    try:
        with atomic_text_file(Path(args.output)) as handle:
            writer = csv.writer(handle)
            writer.writerow(OUTCOME_COLUMNS)
            async for outcome in client.validation.check_many(
                    read_addresses(path), concurrency=args.concurrency):
                result = outcome.result
                writer.writerow([
                    outcome.email,
                    result.status if result else "fail",
                    str(result.result) if result and result.result is not None else "",
                    "" if result is None or result.role is None else str(result.role),
                    "" if outcome.error is None else str(outcome.error),
                    str(outcome.attempted),
                ])
                tally[str(result.result) if result else "error"] += 1
                progress.advance()
    finally:
        progress.close()
    total = sum(tally.values())
    print(f"{total} addresses checked -> {args.output}", file=env.stdout)
    for verdict, count in tally.most_common():
        print(f"{verdict:<12}{count:>8}", file=env.stdout)
    return EXIT_FAILED if tally.get("error") else EXIT_OK


class atomic_text_file:
    """Write a text file under a temporary name, renamed into place only on success."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.temp = path.with_name(f".{path.name}.{os.getpid()}.part")
        self.handle: IO[str] | None = None

    def __enter__(self) -> IO[str]:
        self.handle = self.temp.open("w", newline="", encoding="utf-8")
        return self.handle

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self.handle is not None
        self.handle.close()
        if exc_type is None:
            os.replace(self.temp, self.path)
        else:
            self.temp.unlink(missing_ok=True)


async def cmd_mail(client: Client, args: argparse.Namespace, env: Environment) -> int:
    html = args.html
    if html is None:
        html = await asyncio.to_thread(Path(args.html_file).read_text, "utf-8")
    sent = await client.mail.send(sender=args.sender, to=args.to, subject=args.subject,
                                  html=html)
    print_json(sent, env.stdout)
    return EXIT_OK


async def cmd_resource(client: Client, args: argparse.Namespace, env: Environment) -> int:
    area = getattr(client, args.command)
    if args.action == "list":
        print_json(await area.list(), env.stdout)
    else:
        print_json(await area.get(args.id), env.stdout)
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "validate": cmd_validate,
    "check": cmd_check,
    "check-many": cmd_check_many,
    "mail": cmd_mail,
    **dict.fromkeys(RESOURCES, cmd_resource),
}


# --- running ------------------------------------------------------------------------------
async def run(args: argparse.Namespace, env: Environment) -> int:
    """Run the parsed command, in sandbox mode or against the configured service."""
    command = COMMANDS[args.command]
    if args.sandbox:
        from .testing import Sandbox

        async with Sandbox(demo_data=True) as sandbox:
            env.sandbox = sandbox
            async with sandbox.client(timeout=args.timeout) as client:
                return await command(client, args, env)
    api_key = args.api_key or os.environ.get(C.ENV_API_KEY)
    if not api_key:
        print(NO_CREDENTIALS, file=env.stderr)
        return EXIT_USAGE
    async with Client(api_key, args.username, base_url=args.base_url,
                      timeout=args.timeout) as client:
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
    if args.command == "sandbox":
        from .testing import run_standalone

        run_standalone(args.port, args.host, out=out)
        return EXIT_OK
    try:
        return asyncio.run(run(args, Environment(stdout=out, stderr=err)))
    except KeyboardInterrupt:
        print("asyncsdk: interrupted", file=err)
        return EXIT_INTERRUPTED
    except (UsageProblem, ConfigurationError, InvalidInputError) as exc:
        return _report(exc, err, args.debug, EXIT_USAGE)
    except SDKError as exc:
        return _report(exc, err, args.debug, EXIT_FAILED)
    except OSError as exc:  # the output file, a local input file
        return _report(exc, err, args.debug, EXIT_FAILED)


def _report(exc: BaseException, err: TextIO, debug: bool, code: int) -> int:
    if debug:
        traceback.print_exception(exc, file=err)
    print(f"asyncsdk: error: {exc}", file=err)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
