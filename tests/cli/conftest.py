"""The command line's tests: a sandbox in a thread, its credentials and URL in the
environment, the test's own folder as the working directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox


def serve(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **options: Any) -> Iterator[Sandbox]:
    """A threaded sandbox (``options``: ``Sandbox`` keywords) whose credentials and URL
    are in the environment, ``tmp_path`` the working directory."""
    with threaded_sandbox(**options) as sb:
        monkeypatch.setenv("ASYNCSDK_API_KEY", sb.api_key)
        monkeypatch.setenv("ASYNCSDK_USERNAME", sb.username)
        monkeypatch.setenv("ASYNCSDK_BASE_URL", sb.base_url)
        monkeypatch.chdir(tmp_path)
        yield sb


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    yield from serve(monkeypatch, tmp_path)


@pytest.fixture
def demo_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    """``server`` with the demo data: a record of every area to change or delete."""
    yield from serve(monkeypatch, tmp_path, demo_data=True)
