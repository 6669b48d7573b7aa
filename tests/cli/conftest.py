"""The command line's tests: a sandbox in a thread, its credentials and URL in the
environment, the test's own folder as the working directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Sandbox]:
    with threaded_sandbox() as sb:
        monkeypatch.setenv("ASYNCSDK_API_KEY", sb.api_key)
        monkeypatch.setenv("ASYNCSDK_USERNAME", sb.username)
        monkeypatch.setenv("ASYNCSDK_BASE_URL", sb.base_url)
        monkeypatch.chdir(tmp_path)
        yield sb
