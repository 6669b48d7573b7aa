"""The pytest plugin's fixtures, used the way a user's own test suite uses them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import asyncsdk
from asyncsdk.testing import Sandbox


async def test_fixtures_give_a_started_sandbox_and_its_client(
    sandbox: Sandbox, sandbox_client: asyncsdk.Client
) -> None:
    result = await sandbox_client.validation.check("ann@example.com")
    assert result.result is asyncsdk.Verdict.VALID
    assert sandbox.requests[-1].path == "/api/v1/single/check"
    assert sandbox.requests[-1].query["api"] == sandbox.api_key


@pytest.mark.asyncsdk_sandbox(role_format="str", credit=1)
async def test_marker_options_reach_the_sandbox(sandbox_client: asyncsdk.Client) -> None:
    result = await sandbox_client.validation.check("sales@example.com")
    assert result.role is True  # sent as the text "True"
    with pytest.raises(asyncsdk.InsufficientCreditError):
        await sandbox_client.validation.check("ann@example.com")


USER_TEST = """
import pytest
import asyncsdk

@pytest.mark.asyncio
async def test_user_code(sandbox_client):
    result = await sandbox_client.validation.check("x@mailinator.com")
    assert result.result is asyncsdk.Verdict.DISPOSABLE
"""


def test_fixtures_work_in_a_users_strict_mode_suite(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-o", "asyncio_mode=strict", "-W", "error::ResourceWarning", "test_user.py"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
