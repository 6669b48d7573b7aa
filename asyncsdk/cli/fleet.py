"""``asyncsdk fleet worker|submit|status|export``: a validation fleet on arq and Redis.

    asyncsdk fleet worker [--redis-url URL] [--concurrency N] ...
    asyncsdk fleet submit FILE --run NAME [--batch-size N] [--wait]
    asyncsdk fleet submit --job URL --run NAME [--wait]
    asyncsdk fleet status RUN [--wait]
    asyncsdk fleet export RUN -o FILE [--overwrite]

The flags are built here with or without the ``fleet`` extra (arq, redis); the commands
live in ``asyncsdk.fleet.commands``, imported only when one runs: without the extra, a
fleet command says in one line how to install it (exit 2).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TextIO

from .. import _constants as C
from .common import EXIT_USAGE, UsageProblem
from .sandbox import rate_limit_of

__all__ = ["NO_EXTRA", "add_fleet_actions", "run_fleet"]

NO_EXTRA = ("asyncsdk: error: the fleet needs arq and redis: "
            "pip install 'asyncsdk[fleet]'")
#: Where ``--poll`` is not given: seconds between two readings of a run's progress.
POLL_SECONDS = 0.5


def add_fleet_actions(fleet: argparse.ArgumentParser) -> None:
    """``fleet worker|submit|status|export`` and their flags."""
    actions = fleet.add_subparsers(dest="fleet_command", required=True, metavar="ACTION")
    worker = actions.add_parser(
        "worker", help="run a worker until Ctrl-C or SIGTERM (then it drains)",
        description="Run a fleet worker (arq underneath). The service's credentials "
                    "come from --api-key/--username/--base-url (before 'fleet') or the "
                    "ASYNCSDK_* variables; each setting from its flag, else its FLEET_* "
                    "variable.")
    add_settings(worker, every=True)
    submit = actions.add_parser(
        "submit", help="enqueue a file of addresses in batches, or a file job (--job)")
    add_settings(submit, every=False)
    submit.add_argument("file", nargs="?", metavar="FILE",
                        help="the addresses, read as check-many reads them")
    submit.add_argument("--job", metavar="URL",
                        help="submit this file URL as one validation job instead")
    submit.add_argument("--run", required=True, metavar="NAME",
                        help="the run's label: status and export name it (letters, "
                             "digits, . _ -)")
    submit.add_argument("--batch-size", type=int, default=1000, metavar="N",
                        help="addresses per batch (default %(default)s)")
    add_wait_flags(submit, "wait until every input has its outcome (or the job ended)")
    status = actions.add_parser("status", help="a run's progress, as JSON")
    add_settings(status, every=False)
    status.add_argument("run", metavar="RUN", help="the label given to submit --run")
    add_wait_flags(status, "wait until the run is finished")
    export = actions.add_parser(
        "export", help="write a finished run as check-many's result CSV, in input order")
    add_settings(export, every=False)
    export.add_argument("run", metavar="RUN", help="the label given to submit --run")
    export.add_argument("-o", "--output", required=True,
                        help="the result CSV (- for standard output)")
    export.add_argument("--overwrite", action="store_true",
                        help="replace an existing output file")


def add_settings(parser: argparse.ArgumentParser, *, every: bool) -> None:
    """The settings' flags (``every``: all of them, for the worker; else where the
    fleet's Redis and queue are). Read as text: ``FleetConfig.read`` checks them."""
    from ..fleet.config import SETTINGS, WHERE, FleetConfig

    defaults = FleetConfig()
    group = parser.add_argument_group("settings (a flag wins over its FLEET_* variable)")
    for setting in SETTINGS:
        if every or setting.field in WHERE:
            group.add_argument(
                setting.flag, dest=setting.field, metavar="VALUE",
                help=f"{setting.about} (${setting.variable}; default "
                     f"{getattr(defaults, setting.field)})")


def add_wait_flags(parser: argparse.ArgumentParser, text: str) -> None:
    """``--wait``, and the hidden ``--poll`` seconds between two readings."""
    parser.add_argument("--wait", action="store_true", help=text)
    parser.add_argument("--poll", type=float, default=POLL_SECONDS, help=argparse.SUPPRESS)


def run_fleet(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the fleet command of ``args``; its exit code (2 without the extra)."""
    try:
        check_usage(args)
        main = fleet_main()
        if main is None:
            print(NO_EXTRA, file=err)
            return EXIT_USAGE
        if args.fleet_command == "worker":
            check_credentials(args)
    except UsageProblem as exc:
        print(f"asyncsdk: error: {exc}", file=err)
        return EXIT_USAGE
    return main(args, out, err)


def fleet_main() -> Callable[[argparse.Namespace, TextIO, TextIO], int] | None:
    """The fleet's commands (``asyncsdk.fleet.commands.main``); None without the extra."""
    try:
        from ..fleet.commands import main
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("arq", "redis"):
            raise
        return None
    return main


def check_usage(args: argparse.Namespace) -> None:
    """Refuse what no fleet command takes: ``--sandbox`` (workers reach the service over
    the network), a sandbox's ``--rate``, a file with ``--job`` or neither.

    Raises:
        UsageProblem: one line saying what to do instead.
    """
    if args.sandbox:
        raise UsageProblem("--sandbox: the fleet's workers reach the service over the "
                           "network; serve one with 'asyncsdk sandbox' and give its URL "
                           "and credentials (ASYNCSDK_*) to the workers")
    rate_limit_of(args)  # --rate and its kin without --sandbox: refused, and why
    if args.fleet_command == "submit" and (args.job is None) == (args.file is None):
        raise UsageProblem("fleet submit: give a file of addresses, or --job URL "
                           "(not both)")


def check_credentials(args: argparse.Namespace) -> None:
    """Refuse to start a worker that could check nothing: every check needs the API key
    and the username (a worker without one stored, or failed, every batch it took).

    Raises:
        UsageProblem: which ones are missing, and how to give them.
    """
    missing = [(variable, flag) for given, variable, flag in (
        (args.api_key, C.ENV_API_KEY, "--api-key"),
        (args.username, C.ENV_USERNAME, "--username"))
        if not (given or os.environ.get(variable))]
    if missing:
        variables = " and ".join(variable for variable, _ in missing)
        flags = "/".join(flag for _, flag in missing)
        raise UsageProblem(f"fleet worker: no credentials: set {variables} (or pass "
                           f"{flags} before 'fleet')")
