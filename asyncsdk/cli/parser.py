"""The argument parser of the ``asyncsdk`` command: every flag has its help text."""

from __future__ import annotations

import argparse
import math
import platform
from collections.abc import Callable

from .. import _constants as C
from .fleet import add_fleet_actions
from .resources import CREATE_INPUT, RECORD, UPDATE_INPUT, actions_of

RESOURCES = ("contacts", "leads", "customers", "products", "invoices")
DEFAULT_MAX_CONSECUTIVE_FAILURES = 20


def count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum``, refused before anything is sent."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    return parse


def port(text: str) -> int:
    """An argparse type: a TCP port number, 0 to 65535 (0: any free port)."""
    value = count(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def seconds(*, zero: bool) -> Callable[[str], float]:
    """An argparse type: finite seconds, > 0 (or >= 0 with ``zero``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
            bound = ">= 0" if zero else "> 0"
            raise argparse.ArgumentTypeError(f"expected seconds {bound}, got {text!r}")
        return value

    return parse


def given_text(text: str) -> str:
    """An argparse type: text that is not blank (a blank flag is a mistake, never "use
    the default"; the library would refuse it under its Python argument's name)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a value, got {text!r}")
    return text


def build_parser(version: str) -> argparse.ArgumentParser:
    """The argument parser of the ``asyncsdk`` command (``version``: the library's)."""
    parser = argparse.ArgumentParser(
        prog="asyncsdk", description="Validate email lists and use the service from a shell.")
    add_global_flags(parser, version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_validate_flags(
        commands.add_parser("validate", help="validate a list as a job, end to end"))
    add_jobs_actions(commands.add_parser("jobs", help="reach a validation job by its id"))
    add_check_flags(commands.add_parser("check", help="check addresses now; one JSON line each"))
    add_check_many_flags(commands.add_parser(
        "check-many", help="check every address of a file, a result row each as it comes"))
    add_mail_actions(commands.add_parser("mail", help="transactional mail"))
    for name in RESOURCES:
        add_resource_actions(commands.add_parser(
            name, help=f"{', '.join(actions_of(name))} {name} (JSON on stdout)"), name)
    add_sandbox_flags(commands.add_parser("sandbox", help="serve a sandbox until Ctrl-C"))
    add_fleet_actions(commands.add_parser(
        "fleet", help="scale out on arq and Redis: worker, submit, status, export"))
    return parser


def add_global_flags(parser: argparse.ArgumentParser, version: str) -> None:
    """The flags given before the command: the account, the service, the client's limits."""
    parser.add_argument("--version", action="version",
                        version=f"asyncsdk {version} (Python {platform.python_version()})",
                        help="print the version and exit")
    parser.add_argument("--sandbox", action="store_true",
                        help="run against an in-process sandbox with demo data")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks and DEBUG logs of the library")
    parser.add_argument("--api-key", type=given_text,
                        help=f"the account's API key (default: ${C.ENV_API_KEY})")
    parser.add_argument("--username", type=given_text,
                        help=f"the account's username (default: ${C.ENV_USERNAME})")
    parser.add_argument("--base-url", type=given_text,
                        help=f"the service's URL for every area (default: ${C.ENV_BASE_URL})")
    parser.add_argument("--timeout", type=seconds(zero=False), default=C.DEFAULT_TIMEOUT,
                        help="seconds per call, retries included (default %(default)s)")
    parser.add_argument("--max-retries", type=count(0), default=C.DEFAULT_MAX_RETRIES,
                        help="retries of a failed call after the first attempt "
                             "(default %(default)s)")
    add_limit_flags(parser, default=None)


def add_validate_flags(validate: argparse.ArgumentParser) -> None:
    """``validate SOURCE -o FILE``."""
    validate.epilog = (
        "Exit status 3: the submission got no answer (a timeout, a broken connection, a "
        "5xx, an answer it cannot read): a job may have been started and charged. The "
        "service cannot find a job without its id: check before submitting again.")
    validate.add_argument("source", help="a file URL (or, with --sandbox, a local file)")
    validate.add_argument("-o", "--output", required=True,
                          help="where to write the result CSV (- for standard output)")
    add_overwrite_flag(validate, before="submitting anything")
    add_wait_flags(validate)


def add_jobs_actions(jobs: argparse.ArgumentParser) -> None:
    """``jobs status|wait|download|rows JOB_ID``."""
    jobs_commands = jobs.add_subparsers(dest="jobs_command", required=True, metavar="ACTION")
    for name, text in (("status", "print the job's status"),
                       ("wait", "wait for the job to end; with -o, write its result"),
                       ("download", "write the result of a finished job"),
                       ("rows", "print the result's rows, one JSON line each")):
        action = jobs_commands.add_parser(name, help=text)
        action.add_argument("job_id", type=count(0), metavar="JOB_ID",
                            help="the id that validate printed")
        if name == "wait":
            action.add_argument("-o", "--output",
                                help="where to write the result CSV (- for standard output)")
            add_overwrite_flag(action, before="waiting for the job")
            add_wait_flags(action)
        elif name == "download":
            action.add_argument("-o", "--output", required=True,
                                help="where to write the result CSV (- for standard output)")
            add_overwrite_flag(action, before="downloading anything")


def add_check_flags(check: argparse.ArgumentParser) -> None:
    """``check EMAIL...``."""
    check.add_argument("emails", nargs="+", metavar="EMAIL", help="the addresses to check")


def add_check_many_flags(many: argparse.ArgumentParser) -> None:
    """``check-many FILE -o FILE``, with ``--resume`` or ``--overwrite``."""
    many.add_argument("file", help="CSV whose header has an email column (email, e-mail, "
                                   "mail or email address; separated by , ; or tab; other "
                                   "columns are kept), or one address per line; UTF-8, or "
                                   "UTF-16 with a byte order mark")
    many.add_argument("-o", "--output", required=True,
                      help="the result CSV, written row by row as checks end; - for "
                           "standard output (then no --resume)")
    many.add_argument("--concurrency", type=count(1), default=C.DEFAULT_CHECK_CONCURRENCY,
                      help="checks in flight at most (default %(default)s); the pace "
                           "sends fewer where the service takes fewer")
    again = many.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="keep the finished rows of the output file and check only the "
                            "addresses it lacks (or that failed and may succeed now); "
                            "without the file, a new run")
    again.add_argument("--overwrite", action="store_true",
                       help="start again, replacing an existing output file")
    many.add_argument("--dedupe", action="store_true",
                      help="check each address once (the domain compared without case) "
                           "and write its outcome on every row that repeats it")
    many.add_argument("--max-consecutive-failures", type=count(0),
                      default=DEFAULT_MAX_CONSECUTIVE_FAILURES, metavar="N",
                      help="stop sending after N checks in a row found the service "
                           "unreachable or failing (5xx); 0 never stops "
                           "(default %(default)s)")


def add_mail_actions(mail: argparse.ArgumentParser) -> None:
    """``mail send --from --to --subject --html|--html-file``."""
    mail_commands = mail.add_subparsers(dest="mail_command", required=True, metavar="ACTION")
    send = mail_commands.add_parser(
        "send", help="send one HTML mail",
        epilog="Exit status 3: the send got no answer (a timeout, a broken connection, a "
               "5xx, an answer it cannot read): the mail may have been sent. The service "
               "cannot look a mail up: check with the recipient before sending again.")
    send.add_argument("--from", dest="sender", required=True,
                      help="the sender's address (its domain must be verified)")
    send.add_argument("--to", required=True, help="the recipient's address")
    send.add_argument("--subject", required=True, help="the subject, one line")
    body = send.add_mutually_exclusive_group(required=True)
    body.add_argument("--html", help="the HTML body")
    body.add_argument("--html-file", help="a file holding the HTML body")


def add_resource_actions(area: argparse.ArgumentParser, name: str) -> None:
    """``NAME list|get ID|create|update ID|delete ID``: the actions the library's area
    has (invoices: list, update and delete)."""
    actions = area.add_subparsers(dest="action", required=True, metavar="ACTION")
    has = actions_of(name)
    record = RECORD[name]
    one = f"{'an' if record[0] in 'aeiou' else 'a'} {record}"  # an invoice, a lead
    actions.add_parser("list", help=f"all {name}")
    if "get" in has:
        add_id(actions.add_parser("get", help=f"one {record} by id"), "to read")
    if "create" in has:
        add_json_flag(actions.add_parser(
            "create", help=f"create {one} from a JSON object",
            epilog=f"Exit status 3: the create got no answer (a timeout, a broken "
                   f"connection, a 5xx, an answer it cannot read): the {record} may have "
                   f"been created. Look for it before creating it again."),
            CREATE_INPUT[name])
    if "update" in has:
        update = actions.add_parser(
            "update", help=f"change {one} from a JSON object",
            epilog="Exit status 3: the update got no answer: it may have been made. "
                   "Running the command again is safe (it sends the same change).")
        add_id(update, "to change")
        add_json_flag(update, UPDATE_INPUT[name], records=name == "contacts")
    if "delete" in has:
        add_delete_flags(actions.add_parser(
            "delete", help=f"delete {one} (needs --yes)",
            epilog="Exit status 3: the delete got no answer: it may have been made. "
                   "Running the command again is safe (a second delete answers not "
                   "found if the first went through)."))


def add_id(action: argparse.ArgumentParser, what: str) -> None:
    """The ``ID`` argument of an action on one record."""
    action.add_argument("id", metavar="ID", help=f"the id of the record {what}")


def add_json_flag(action: argparse.ArgumentParser, model: object, *,
                  records: bool = False) -> None:
    """``--json FILE|-``: the JSON object an action sends, read as ``model``'s
    ``from_dict`` reads it (``records``: ``{"data": [MODEL, ...]}``)."""
    name = getattr(model, "__name__", "")
    shape = (f'{{"data": [{name}, ...]}} (a "contact" key, if given, must be ID)'
             if records else f"the fields of {name}")
    action.add_argument("--json", required=True, metavar="FILE",
                        help=f"a file holding one JSON object, - for standard input: "
                             f"{shape}, as its to_dict() writes them; checked before "
                             f"anything is sent")


def add_delete_flags(delete: argparse.ArgumentParser) -> None:
    """``delete ID --yes``: never asked on a terminal (the command runs in scripts),
    so a delete must be asked for in so many words."""
    add_id(delete, "to delete")
    delete.add_argument("--yes", action="store_true",
                        help="delete it: the service cannot undo a delete, and without "
                             "--yes the command refuses (it never asks)")


def add_sandbox_flags(serve: argparse.ArgumentParser) -> None:
    """``sandbox --port --host`` and the rate limit's flags."""
    serve.add_argument("--port", type=port, default=8080,
                       help="port to listen on; 0 picks a free one (default %(default)s)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="interface to listen on (default %(default)s)")
    # Suppressed defaults: given before the command (as with --sandbox), they stay.
    add_limit_flags(serve, default=argparse.SUPPRESS)


def rate(text: str) -> float:
    """An argparse type: requests a second, a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a rate >= 0 a second, got {text!r}")
    return value


def add_limit_flags(parser: argparse.ArgumentParser, *, default: object) -> None:
    """``--rate --burst --retry-after|--no-retry-after --max-in-flight``: the sandbox's
    limit per API key (``asyncsdk.testing.RateLimit``), for ``sandbox`` and
    ``--sandbox``."""
    limit = parser.add_argument_group(
        "the sandbox's rate limit per API key (with --sandbox or the sandbox command)")
    limit.add_argument("--rate", type=rate, default=default, metavar="PER_SECOND",
                       help="answer each key at most this many requests a second (a "
                            "token bucket); more are answered 429")
    limit.add_argument("--burst", type=count(1), default=default, metavar="N",
                       help="requests a key may send at once (the bucket's size; default "
                            "a tenth of --rate, at least 1)")
    retry = limit.add_mutually_exclusive_group()
    retry.add_argument("--retry-after", type=seconds(zero=True), default=default,
                       metavar="SECONDS", help="the 429's Retry-After (default 1)")
    retry.add_argument("--no-retry-after", action="store_true", default=default,
                       help="answer 429 without Retry-After")
    limit.add_argument("--max-in-flight", type=count(1), default=default, metavar="N",
                       help="answer at most N requests of a key at once; one more is "
                            "answered 429 without Retry-After")


def add_overwrite_flag(parser: argparse.ArgumentParser, *, before: str) -> None:
    """``--overwrite``: without it an existing ``-o`` file is refused, ``before`` the
    command does anything (as ``check-many`` does)."""
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing output file (without it, the command "
                             f"refuses one before {before})")


def add_wait_flags(parser: argparse.ArgumentParser) -> None:
    """``--deadline`` and ``--poll-interval``, for the commands that wait for a job."""
    parser.add_argument("--deadline", type=seconds(zero=True), default=None,
                        help="stop waiting after this many seconds (the job goes on; "
                             "the command to finish it is printed)")
    parser.add_argument("--poll-interval", type=seconds(zero=False),
                        default=C.DEFAULT_POLL_INTERVAL,
                        help="first interval between status polls (default %(default)s s)")
