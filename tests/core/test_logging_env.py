"""ASYNCSDK_LOG switches logging on from the environment (issue 14)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from auth_helpers import leaks

import asyncsdk
from asyncsdk._core import log as _logging

KEY = "kÖ+y/Z=9==Qx"
USER = "o"

SCRIPT = textwrap.dedent(f"""
    import asyncio, asyncsdk
    from asyncsdk.testing import Sandbox

    async def main():
        async with Sandbox(api_key={KEY!r}, username={USER!r}) as sb:
            async with sb.client() as client:
                await client.validation.check("ada@example.org")
                await client.contacts.list()
                try:
                    await client.leads.get(999)
                except asyncsdk.NotFoundError:
                    pass

    asyncio.run(main())
""")


def _run(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCSDK_")}
    if value is not None:
        env["ASYNCSDK_LOG"] = value
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=120, check=True)


def test_asyncsdk_log_debug_prints_redacted_lines_on_stderr() -> None:
    err = _run("debug").stderr
    lines = [line for line in err.splitlines() if "asyncsdk DEBUG" in line]
    assert len(lines) == 3, err
    assert "GET http://127.0.0.1:" in lines[0] and "/api/v1/single/check?" in lines[0]
    assert "api=REDACTED" in lines[0] and "username=REDACTED" in lines[0]
    assert "-> 404" in lines[2] and "(attempt 1)" in lines[2]
    assert not leaks(err, (KEY, USER)), leaks(err, (KEY, USER))


@pytest.mark.parametrize("value", [None, "", "INFO"])
def test_without_debug_no_debug_lines(value: str | None) -> None:
    assert "DEBUG" not in _run(value).stderr


@pytest.fixture
def fresh() -> Iterator[logging.Logger]:
    """A process where no Client has read ASYNCSDK_LOG yet; the handler removed after."""
    logger = logging.getLogger("asyncsdk")
    handlers, level = list(logger.handlers), logger.level
    _logging._done = False
    yield logger
    _logging._done = True
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_read_once_at_the_first_client(
    fresh: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASYNCSDK_LOG", " Debug ")
    before = len(fresh.handlers)
    asyncsdk.Client("k", "u", base_url="https://h.example")
    asyncsdk.Client("k", "u", base_url="https://h.example")
    added = fresh.handlers[before:]
    assert len(added) == 1 and isinstance(added[0], logging.StreamHandler)
    assert added[0].level == fresh.level == logging.DEBUG


def test_info_level_and_unknown_values(fresh: logging.Logger) -> None:
    handler = _logging.setup_logging_from_env({"ASYNCSDK_LOG": "info"})
    assert handler is not None and handler.level == fresh.level == logging.INFO
    _logging._done = False
    with pytest.warns(RuntimeWarning, match="ASYNCSDK_LOG='loud'"):
        assert _logging.setup_logging_from_env({"ASYNCSDK_LOG": "loud"}) is None
    _logging._done = False
    assert _logging.setup_logging_from_env({}) is None
