"""The ``asyncsdk_sandbox`` marker as a user writes it: options that cannot reach a
sandbox are refused with a message naming them, never silently dropped."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_plugin import run_user_suite

MARKED = """
import pytest
from asyncsdk.testing import Sandbox

{prelude}

@pytest.mark.asyncsdk_sandbox({arguments})
async def test_marked(sandbox: Sandbox) -> None:
    assert sandbox.state.accounts[sandbox.api_key].credit == 0
"""


def run_marked(tmp_path: Path, arguments: str, prelude: str = "") -> str:
    (tmp_path / "test_marked.py").write_text(
        MARKED.format(arguments=arguments, prelude=prelude))
    done = run_user_suite(tmp_path, "-o", "asyncio_mode=auto",
                          "-o", "asyncio_default_fixture_loop_scope=function", "test_marked.py")
    assert done.returncode == 1, done.stdout + done.stderr  # refused, not passed
    return done.stdout


@pytest.mark.parametrize(("arguments", "named"), [
    ('{"credit": 0}', "positional argument(s) ({'credit': 0},)"),  # was silently ignored
    ("0", "positional argument(s) (0,)"),
    ("credits=0", "unknown Sandbox option 'credits'"),
    ("credit=0, rate_limits=None", "unknown Sandbox option 'rate_limits'"),
])
def test_a_marker_argument_no_sandbox_takes_is_named(tmp_path: Path, arguments: str,
                                                     named: str) -> None:
    out = run_marked(tmp_path, arguments)
    assert named in out
    assert "1 error" in out


@pytest.mark.parametrize("scope", ["module", "session"])
def test_a_marker_on_a_test_of_a_shared_sandbox_is_refused(tmp_path: Path, scope: str) -> None:
    """A shared sandbox takes its options once (``shared_sandbox(...)``): a marker's
    were dropped, and the test ran against a sandbox without them."""
    out = run_marked(tmp_path, "credit=0", prelude=(
        "from asyncsdk.testing.plugin import shared_sandbox\n"
        f"sandbox = shared_sandbox(scope={scope!r})"))
    assert "asyncsdk_sandbox(...) has no effect on this test" in out
    assert "shared_sandbox(scope=..., **options)" in out


def test_a_marker_on_a_test_of_a_users_own_sandbox_fixture_is_refused(tmp_path: Path) -> None:
    out = run_marked(tmp_path, "credit=0", prelude=(
        "@pytest.fixture\n"
        "async def sandbox():\n"
        "    async with Sandbox() as sb:\n"
        "        yield sb"))
    assert "has no effect on this test" in out


def test_marked_and_unmarked_tests_of_the_plugins_sandbox_run(tmp_path: Path) -> None:
    (tmp_path / "test_fine.py").write_text(
        MARKED.format(arguments="credit=0", prelude="pytestmark = pytest.mark.asyncsdk_sandbox()")
        + "\n@pytest.mark.asyncsdk_sandbox(credit=5)\nclass TestClosestWins:\n"
        "    async def test_credit(self, sandbox: Sandbox) -> None:\n"
        "        assert sandbox.state.accounts[sandbox.api_key].credit == 5\n"
        "\n@pytest.mark.asyncsdk_sandbox(credit=0)\ndef test_without_a_sandbox() -> None:\n"
        "    pass\n")
    done = run_user_suite(tmp_path, "-o", "asyncio_mode=auto",
                          "-o", "asyncio_default_fixture_loop_scope=function", "test_fine.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
