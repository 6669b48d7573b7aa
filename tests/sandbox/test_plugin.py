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


def run_user_suite(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in a separate process, in a directory holding a user's project."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "error::ResourceWarning", *args],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120,
    )


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    # The plugin is loaded in every pytest run wherever asyncsdk is installed: it must
    # not import aiohttp (0.3 s) or the sandbox's server until a fixture is used.
    code = ("import sys, asyncsdk.testing.plugin as p; "
            "print(sorted(m for m in sys.modules if m.startswith(('aiohttp', "
            "'asyncsdk.testing._', 'asyncsdk._client', 'asyncsdk._core.transport', "
            "'cattrs.gen'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


SHARED = """
import pytest
import asyncsdk
from asyncsdk.testing.plugin import shared_sandbox

sandbox = shared_sandbox(scope="{scope}", credit=3)
SEEN = []

async def test_one(sandbox, sandbox_client):
    SEEN.append(sandbox)
    await sandbox_client.validation.check("ann@example.com")

async def test_two(sandbox, sandbox_client):
    SEEN.append(sandbox)
    await sandbox_client.validation.check("bob@example.com")

async def test_three(sandbox, sandbox_client):  # each test runs in a loop of its own
    SEEN.append(sandbox)
    await sandbox_client.validation.check("cy@example.com")
    with pytest.raises(asyncsdk.InsufficientCreditError):  # the 3 credits are shared
        await sandbox_client.validation.check("dee@example.com")

def test_one_sandbox_served_them_all():
    assert len(SEEN) == 3 and SEEN[0] is SEEN[1] is SEEN[2]
    assert [r.query["email"] for r in SEEN[0].requests] == [
        "ann@example.com", "bob@example.com", "cy@example.com", "dee@example.com"]
"""


@pytest.mark.parametrize("scope", ["module", "session"])
def test_one_sandbox_shared_by_a_module_or_session(tmp_path: Path, scope: str) -> None:
    (tmp_path / "test_shared.py").write_text(SHARED.replace("{scope}", scope))
    done = run_user_suite(tmp_path, "-o", "asyncio_mode=auto",
                          "-o", "asyncio_default_fixture_loop_scope=function",
                          "-o", "asyncio_default_test_loop_scope=function", "test_shared.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


def test_threaded_sandbox_serves_clients_of_any_loop() -> None:
    import asyncio

    from asyncsdk.testing.plugin import threaded_sandbox

    async def check(sb: Sandbox, email: str) -> asyncsdk.CheckResult:
        async with sb.client() as client:
            return await client.validation.check(email)

    with threaded_sandbox(credit=5) as sb:
        first = asyncio.run(check(sb, "ann@example.com"))
        second = asyncio.run(check(sb, "x@mailinator.com"))  # a second, new loop
        assert sb.credit == 3
    assert first.result is asyncsdk.Verdict.VALID
    assert second.result is asyncsdk.Verdict.DISPOSABLE
    import threading

    assert not [t for t in threading.enumerate() if t.name == "asyncsdk-sandbox"]


LOOP_SCOPED_TEST = """
import pytest

@pytest.mark.asyncio(loop_scope="module")
async def test_on_the_module_loop(sandbox_client):
    await sandbox_client.validation.check("ann@example.com")
"""


@pytest.mark.parametrize("options", [
    ("-o", "asyncio_default_fixture_loop_scope=function"),
    ("-o", "asyncio_default_fixture_loop_scope=session"),
])
def test_a_test_on_another_loop_than_the_fixtures_fails_at_once(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    """Before: every call hung until the client's timeout (60 s), then the teardown
    raised ``UsageError``. Now the fixture says why, before anything runs."""
    (tmp_path / "test_loops.py").write_text(LOOP_SCOPED_TEST)
    done = run_user_suite(tmp_path, "-o", "asyncio_mode=strict", *options, "test_loops.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "asyncio_default_fixture_loop_scope = module" in done.stdout
    assert "APITimeoutError" not in done.stdout


def test_a_test_on_the_fixtures_loop_runs(tmp_path: Path) -> None:
    (tmp_path / "test_loops.py").write_text(LOOP_SCOPED_TEST)
    done = run_user_suite(tmp_path, "-o", "asyncio_mode=strict",
                          "-o", "asyncio_default_fixture_loop_scope=module", "test_loops.py")
    assert done.returncode == 0, done.stdout + done.stderr
