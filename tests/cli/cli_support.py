"""Running the real ``asyncsdk`` command in a subprocess against a sandbox of this process."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from asyncsdk.cli.app import main
from asyncsdk.testing import Sandbox

CHECK = "/api/v1/single/check"
COMMAND = [sys.executable, "-m", "asyncsdk"]


def environment(sb: Sandbox | None = None, **extra: str) -> dict[str, str]:
    """This process's environment without ASYNCSDK_* variables, plus ``sb``'s
    credentials and URL when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCSDK_")}
    if sb is not None:
        env.update(ASYNCSDK_API_KEY=sb.api_key, ASYNCSDK_USERNAME=sb.username,
                   ASYNCSDK_BASE_URL=sb.base_url)
    env.update(extra)
    return env


def run(*argv: str) -> tuple[int, str, str]:
    """``asyncsdk ARGV`` in this process: the exit status, standard output and error."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def asyncsdk(*args: str, env: dict[str, str], cwd: Path | None = None,
             timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``asyncsdk ARGS`` to the end (``input``: text for its standard input)."""
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout, check=False, input=input)


def _default_sigint() -> None:
    """In the child: Ctrl-C's default action, whatever this process inherited (a shell
    runs a background job with SIGINT ignored, and a child inherits that: the tests'
    Ctrl-C would then never arrive)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(*args: str, env: dict[str, str], **options: Any) -> subprocess.Popen[str]:
    """``asyncsdk ARGS`` started, its output piped (SIGINT reaches it, see
    ``_default_sigint``)."""
    return subprocess.Popen([*COMMAND, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint, **options)


def wait_until(condition: Callable[[], bool], what: str, bound: float = 30.0) -> None:
    """Poll ``condition`` every 10 ms until it holds; fail after ``bound`` seconds."""
    ends = time.monotonic() + bound
    while not condition():
        if time.monotonic() > ends:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a result CSV."""
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def checked(sb: Sandbox) -> list[str]:
    """The addresses of every check request the sandbox has seen, in order."""
    return [r.query["email"] for r in sb.requests if r.path == CHECK]


def write_people(path: Path, count: int) -> list[tuple[str, str]]:
    """A CSV of ``count`` (email, name) rows with the name column first."""
    people = [(f"person{i}@example.com", f"Person {i}") for i in range(count)]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "email"])
        writer.writerows((name, email) for email, name in people)
    return people
