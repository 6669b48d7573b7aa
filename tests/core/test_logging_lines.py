"""Logging a user can use (issue 29, item 7): each retry at INFO with its reason and
wait, a call given up at WARNING, one DEBUG line per attempt, URLs redacted; and each
line printed once, whether the application configured logging or not.

Before: ``ASYNCSDK_LOG=info`` printed nothing through 503 retries and a final failure
(the only log call was the DEBUG line); with ``logging.basicConfig()`` and
``ASYNCSDK_LOG=debug`` every line was printed twice (the variable's handler and the
application's root handler); and once calls were given up at WARNING, a program that
had configured no logging at all got Python's last-resort "Giving up ..." lines on
stderr from the library.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap

import pytest

import asyncsdk
from asyncsdk.testing import Sandbox, VirtualClock

KEY = "kÖ+y/Z=9==Qx"
USER = "logging.user"
CHECK = "/api/v1/single/check"


async def test_retries_at_info_and_the_give_up_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="asyncsdk")
    clock = VirtualClock(random=1.0)  # the full backoff: 0.5, 1, 2 seconds
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(max_retries=3,
                                                                    clock=clock) as client:
        sb.faults.status(CHECK, 503, times=None)
        with pytest.raises(asyncsdk.ServerError):
            await client.validation.check("ada@example.org")
    records = [r for r in caplog.records if r.name == "asyncsdk"]
    assert [r.levelno for r in records] == [logging.INFO] * 3 + [logging.WARNING]
    lines = [r.getMessage() for r in records]
    for line, (wait, attempt) in zip(lines[:3], [("0.50", 2), ("1.00", 3), ("2.00", 4)],
                                     strict=True):
        assert re.fullmatch(
            rf"Retrying GET http://127\.0\.0\.1:\d+{CHECK}\?\S*api=REDACTED\S* "
            rf"in {wait} seconds \(attempt {attempt}: HTTP 503\)", line), line
    assert re.match(rf"Giving up GET http://127\.0\.0\.1:\d+{CHECK}\?\S* after 4 attempt\(s\)"
                    r": .*HTTP 503", lines[3]), lines[3]
    assert clock.sleeps == [0.5, 1.0, 2.0]
    for line in lines:
        assert KEY not in line and USER not in line
        assert "username=REDACTED" in line


async def test_a_connection_failure_retry_names_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="asyncsdk")
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(
            clock=VirtualClock(random=0.5)) as client:
        sb.faults.reset(CHECK, times=2)
        assert (await client.validation.check("ada@example.org")).email == "ada@example.org"
    records = [r for r in caplog.records if r.name == "asyncsdk"]
    assert [r.levelno for r in records] == [logging.INFO] * 2
    dropped = "the server closed the connection without an answer"
    # a dropped kept-alive connection is retried at once, the next drop after a backoff:
    # both are retries, and both are said
    assert records[0].getMessage().endswith(f" in 0.00 seconds (attempt 2: {dropped})")
    assert records[1].getMessage().endswith(f" in 0.50 seconds (attempt 3: {dropped})")


# --- the lines as a user's process prints them ------------------------------------------
SCRIPT = textwrap.dedent(f"""
    import asyncio, logging, sys
    import asyncsdk
    from asyncsdk.testing import Sandbox, VirtualClock

    async def main():
        if "configured" in sys.argv:
            logging.basicConfig(format="APP %(levelname)s %(name)s %(message)s")
        async with Sandbox(api_key={KEY!r}, username={USER!r}) as sb:
            client = sb.client(max_retries=3, clock=VirtualClock())  # no real waits
            if "configured-later" in sys.argv:  # after the first Client read the variable
                logging.basicConfig(format="APP %(levelname)s %(name)s %(message)s")
            sb.faults.status({CHECK!r}, 503, times=None)
            try:
                await client.validation.check("ada@example.org")
            except asyncsdk.ServerError:
                print("raised ServerError", file=sys.stderr)
            await client.close()

    asyncio.run(main())
""")


def run_script(log: str | None, *args: str) -> list[str]:
    """The stderr lines of SCRIPT run with ``ASYNCSDK_LOG=log`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCSDK_")}
    if log is not None:
        env["ASYNCSDK_LOG"] = log
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=True)
    lines = done.stderr.splitlines()
    assert lines[-1] == "raised ServerError", done.stderr
    for line in lines:
        assert KEY not in line and USER not in line, line
    return lines[:-1]


def kinds(lines: list[str]) -> list[str]:
    """Each line as what it reports: the attempt, a retry, the give-up."""
    out = []
    for line in lines:
        found = re.search(r"-> 503 in .*\(attempt (\d)\)|Retrying .*\(attempt (\d): HTTP 503\)"
                          r"|Giving up GET .* after 4 attempt", line)
        assert found, line
        attempt, retry = found.groups()
        out.append(f"attempt {attempt}" if attempt else f"retry {retry}" if retry else "gave up")
    return out


INFO_LINES = ["retry 2", "retry 3", "retry 4", "gave up"]
DEBUG_LINES = ["attempt 1", "retry 2", "attempt 2", "retry 3", "attempt 3", "retry 4",
               "attempt 4", "gave up"]


def test_asyncsdk_log_info_prints_the_retries_and_the_give_up() -> None:
    lines = run_script("info")
    assert kinds(lines) == INFO_LINES
    assert all(re.match(r"\[.+ asyncsdk (INFO|WARNING)\] ", line) for line in lines), lines


@pytest.mark.parametrize("when", ["configured", "configured-later"])
def test_with_the_applications_logging_each_line_is_printed_once(when: str) -> None:
    """``logging.basicConfig()`` and ``ASYNCSDK_LOG=debug``: the application's handler
    prints each line (in its format), the variable's handler steps aside; also when
    logging is configured after the first client read the variable."""
    lines = run_script("debug", when)
    assert kinds(lines) == DEBUG_LINES
    assert all(line.startswith("APP ") and " asyncsdk " in line for line in lines), lines


def test_an_application_with_its_logging_and_no_variable_gets_the_warnings() -> None:
    """The logger propagates: configured logging (WARNING, as ``basicConfig``) shows
    the give-up, without the variable."""
    assert kinds(run_script(None, "configured")) == ["gave up"]


def test_a_program_without_logging_or_the_variable_prints_nothing_of_the_library() -> None:
    """A ``NullHandler`` on the library's logger: Python's last-resort handler does not
    print the library's warnings in a program that configured no logging."""
    assert run_script(None) == []
