"""Helpers of the fleet tests: the repository root on sys.path, polling with a bound."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path


async def until(check: Callable[[], Awaitable[bool]], *, timeout: float, what: str) -> None:
    """Poll ``check`` every 20 ms until it is true; fail the test after ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file (for failure messages)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
