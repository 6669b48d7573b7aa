"""Each line once, wherever the application puts its handler (DESIGN §3, README
"Logging": with ``ASYNCSDK_LOG`` set, an application that configures logging gets the
lines through its own handlers, each line once).

Before: the variable's handler stepped aside only for a handler of the root logger.
An application that configured a handler on the ``asyncsdk`` logger (``dictConfig``'s
``loggers``, as ``asyncsdk fleet worker`` does for ``asyncsdk.fleet``), or on a logger
below it, got every line twice: its handler's and the variable's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

KEY = "kÖ+y/Z=9==Qx"
USER = "logging.user"

# The application's handler on ``sys.argv[1]`` (``-``: none), prefixing ``APP``; with
# ``sys.argv[2] == "alone"`` that logger does not propagate. A 503, retried once, given
# up; then a line of the application's own on ``asyncsdk.app`` (a logger below the
# library's, as the fleet's ``asyncsdk.fleet`` is).
SCRIPT = textwrap.dedent(f"""
    import asyncio, logging, sys
    import asyncsdk
    from asyncsdk.testing import Sandbox, VirtualClock

    if sys.argv[1] != "-":
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("APP %(levelname)s %(message)s"))
        mine = logging.getLogger(sys.argv[1])
        mine.addHandler(handler)
        mine.propagate = sys.argv[2] != "alone"

    async def main():
        async with Sandbox(api_key={KEY!r}, username={USER!r}) as sb:
            async with sb.client(max_retries=1, clock=VirtualClock()) as client:
                sb.faults.status("/api/v1/single/check", 503, times=None)
                try:
                    await client.validation.check("ada@example.org")
                except asyncsdk.ServerError:
                    pass
        logging.getLogger("asyncsdk.app").warning("the application's own line")

    asyncio.run(main())
""")

#: What each line says, in order, at INFO.
EXPECTED = ["Retrying GET", "Giving up GET", "the application's own line"]


def _stderr_lines(where: str, propagate: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCSDK_")}
    env["ASYNCSDK_LOG"] = "info"
    done = subprocess.run([sys.executable, "-c", SCRIPT, where, propagate], env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=True)
    return done.stderr.splitlines()


def _said(lines: list[str]) -> list[str]:
    return [next(e for e in EXPECTED if e in line) for line in lines
            if any(e in line for e in EXPECTED)]


@pytest.mark.parametrize(("where", "propagate"), [
    ("asyncsdk", "propagates"),
    ("asyncsdk", "alone"),
])
def test_a_handler_on_the_library_logger_prints_each_line_once(where: str,
                                                                propagate: str) -> None:
    lines = _stderr_lines(where, propagate)
    assert _said(lines) == EXPECTED, lines
    assert all(line.startswith("APP ") for line in lines if _said([line])), lines


def test_a_handler_on_a_logger_below_it_prints_that_loggers_lines_once() -> None:
    lines = _stderr_lines("asyncsdk.app", "propagates")
    assert _said(lines) == EXPECTED, lines
    # the transport's lines reach no handler of the application: the variable's prints
    # them; the application's line is its own handler's
    assert [line.startswith("APP ") for line in lines if _said([line])] == [
        False, False, True], lines


def test_without_a_handler_of_the_application_the_variable_prints_each_line_once() -> None:
    lines = _stderr_lines("-", "propagates")
    assert _said(lines) == EXPECTED, lines
    assert not any(line.startswith("APP ") for line in lines), lines
