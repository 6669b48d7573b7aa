"""pytest plugin of asyncsdk: the ``sandbox`` and ``sandbox_client`` fixtures.

Registered through the ``pytest11`` entry point. Options reach the ``Sandbox`` through
the ``asyncsdk_sandbox`` marker (``@pytest.mark.asyncsdk_sandbox(download_shape="json")``)
or by overriding the ``sandbox_options`` fixture. The async fixtures need pytest-asyncio;
they are declared with ``pytest_asyncio.fixture`` so they work in its strict mode too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from ._server import Sandbox

if TYPE_CHECKING:
    from asyncsdk import Client

try:
    import pytest_asyncio

    HAVE_PYTEST_ASYNCIO = True
except ImportError:  # pragma: no cover - without pytest-asyncio the fixtures explain why
    HAVE_PYTEST_ASYNCIO = False

MARKER = "asyncsdk_sandbox"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**options): keyword options for the sandbox fixture's Sandbox"
    )


@pytest.fixture
def sandbox_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Keyword options for ``Sandbox``: the ``asyncsdk_sandbox`` marker's, merged from
    the outermost to the closest. Override this fixture to set options for a module."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers(MARKER))):
        options.update(marker.kwargs)
    return options


if HAVE_PYTEST_ASYNCIO:

    @pytest_asyncio.fixture
    async def sandbox(sandbox_options: dict[str, Any]) -> AsyncIterator[Sandbox]:
        """A started ``Sandbox``, closed after the test."""
        async with Sandbox(**sandbox_options) as sb:
            yield sb

    @pytest_asyncio.fixture
    async def sandbox_client(sandbox: Sandbox) -> AsyncIterator[Client]:
        """``sandbox.client()``, opened and closed around the test."""
        async with sandbox.client() as client:
            yield client

else:  # pragma: no cover

    @pytest.fixture
    def sandbox() -> None:
        """Unavailable: needs pytest-asyncio."""
        pytest.fail("the 'sandbox' fixture needs pytest-asyncio: pip install pytest-asyncio")

    @pytest.fixture
    def sandbox_client() -> None:
        """Unavailable: needs pytest-asyncio."""
        pytest.fail("the 'sandbox_client' fixture needs pytest-asyncio")
