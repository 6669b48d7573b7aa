"""What every command of the command line shares: exit codes, streams, signals, JSON
output."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import shlex
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import attrs

from .. import SDKError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# A mail or a paid job whose answer never came: it may have gone through. Not 75
# (EX_TEMPFAIL, "try again later"): running the command again is what must not happen
# blindly.
EXIT_OUTCOME_UNKNOWN = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a reader that went away
# Stopped by a signal: 128 + its number, as a shell reports it (130 Ctrl-C, 143 SIGTERM).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class UsageProblem(Exception):
    """A command line that cannot work (exit code 2)."""


class OutcomeUnknown(Exception):
    """A request that changes something (a mail, a paid job, a record's create, update
    or delete) got no answer and may have taken effect (exit code 3): ``failure`` is the
    library's error, ``advice`` says what may have happened and what to check before
    running the command again (or that running it again is safe)."""

    def __init__(self, failure: SDKError, advice: str) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.advice = advice


def outcome_unknown(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a request that is not safe to repeat, leaves its outcome
    unknown: the error's own ``may_have_been_sent`` (no answer after the request may have
    left, a 5xx, an answer that could not be read; README "Retries")."""
    return isinstance(exc, SDKError) and getattr(exc, "may_have_been_sent", False) is True


@attrs.define
class Environment:
    """What a command may touch besides the client: streams, the sandbox if any, and the
    global flags that a printed follow-up command must repeat (never a credential)."""

    stdout: TextIO
    stderr: TextIO
    sandbox: Any = None  # asyncsdk.testing.Sandbox in --sandbox mode
    follow_up_flags: list[str] = attrs.Factory(list)
    credentials_on_command_line: bool = False
    signal: int | None = None  # the signal that stopped the command, if one did

    def command(self, *words: str) -> str:
        """A command line of ``asyncsdk`` with this run's global flags, quoted for a shell
        (a note asks for the credentials where they came from the command line)."""
        note = (" (with your --api-key/--username/--base-url, or the ASYNCSDK_* variables)"
                if self.credentials_on_command_line else "")
        return shlex.join(["asyncsdk", *self.follow_up_flags, *words]) + note

    def say(self, text: str) -> None:
        """One line to stderr, where messages for the person go."""
        print(f"asyncsdk: {text}", file=self.stderr, flush=True)


@contextlib.contextmanager
def not_safe_to_repeat(env: Environment, advice: str) -> Iterator[None]:
    """Around one request that changes something (a mail, a job, a record; an update
    is safe to repeat, but its outcome is still unknown): a failure that leaves its outcome
    unknown becomes ``OutcomeUnknown`` with ``advice``; Ctrl-C or SIGTERM while it is in
    flight says ``advice`` too (and stops as a signal does)."""
    try:
        yield
    except SDKError as exc:
        if outcome_unknown(exc):
            raise OutcomeUnknown(exc, advice) from exc
        raise
    except asyncio.CancelledError:
        env.say(advice)
        raise


def signal_name(signum: int) -> str:
    """How a person knows the signal: Ctrl-C for SIGINT, else its name."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


@contextlib.contextmanager
def handle_signals(handler: Callable[[int], None],
                   signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Within the block, each of ``signals`` calls ``handler(signum)`` on the running
    event loop (the handlers before are restored after). Only in the main thread, where
    Python delivers signals; elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()

    def received(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(handler, signum)

    before = {signum: signal.signal(signum, received) for signum in signals}
    try:
        yield
    finally:
        for signum, previous in before.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


def to_jsonable(value: Any) -> Any:
    """A model as its public ``to_dict()`` (the service's field names and JSON forms), a
    list or dict holding models item by item; any other value (text, numbers) as it is."""
    if isinstance(value, list):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return value


def print_json(value: Any, out: TextIO) -> None:
    """One JSON document on ``out``."""
    json.dump(to_jsonable(value), out, ensure_ascii=False)
    out.write("\n")


def read_text_file(where: str, name: str) -> str:
    """The text of the file ``name``, UTF-8 (a byte order mark is dropped); ``where``
    names it in a refusal (``--html-file body.html``).

    Raises:
        UsageProblem: it is missing, a directory, unreadable or not UTF-8 (one line
            naming ``where`` and, for bytes that are not UTF-8, the line).
    """
    path = Path(name)
    if path.is_dir():
        raise UsageProblem(f"{where}: is a directory, not a file")
    if not path.is_file():
        raise UsageProblem(f"{where}: no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageProblem(f"{where}: cannot read it: {exc.strerror or exc}") from None
    return utf8_text(where, data)


def utf8_text(where: str, data: bytes) -> str:
    """``data`` as UTF-8 text (a byte order mark dropped); ``UsageProblem`` naming
    ``where`` and the line otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UsageProblem(f"{where}, line {line}: not UTF-8 text (byte 0x"
                           f"{data[exc.start]:02x}); save the file as UTF-8") from None


def plain(value: object) -> str:
    """A value as a CSV cell: an enum by its wire value, None as empty."""
    if value is None:
        return ""
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)
