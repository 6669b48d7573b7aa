"""pytest plugin of asyncsdk: the ``sandbox`` and ``sandbox_client`` fixtures.

Registered through the ``pytest11`` entry point, so it is loaded in every pytest run
wherever asyncsdk is installed: it imports nothing heavy (no aiohttp, no server) until
a fixture is used.

Options reach the ``Sandbox`` through the ``asyncsdk_sandbox`` marker
(``@pytest.mark.asyncsdk_sandbox(download_shape="json")``; a service limit:
``asyncsdk_sandbox(rate_limit=RateLimit(rate, burst))``, then ``sandbox.limits``) or by
overriding the ``sandbox_options`` fixture. The async fixtures need pytest-asyncio; they
are declared with ``pytest_asyncio.fixture`` so they work in its strict mode too.

One sandbox for a whole module or session: ``sandbox = shared_sandbox(scope="module")``
in the test module (or a ``conftest.py``). Such a sandbox is served by its own event loop
in a background thread, so it answers whatever loop each test runs in; an ``async``
fixture of wider scope would instead be served by a loop that sits idle while the tests
run, and every call would hang until the client's timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from asyncsdk import Client

    from ._server import Sandbox

try:
    import pytest_asyncio

    HAVE_PYTEST_ASYNCIO = True
except ImportError:  # pragma: no cover - without pytest-asyncio the fixtures explain why
    HAVE_PYTEST_ASYNCIO = False

MARKER = "asyncsdk_sandbox"
Scope = Literal["function", "class", "module", "package", "session"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**options): keyword options for the sandbox fixture's Sandbox"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Refuse the marker on a test whose ``sandbox`` would never read it (one made by
    ``shared_sandbox``, or a fixture of the user's own): its options were silently lost."""
    if item.get_closest_marker(MARKER) is None:
        return
    names = getattr(item, "fixturenames", ())
    if "sandbox" in names and "sandbox_options" not in names:
        pytest.fail(f"@pytest.mark.{MARKER}(...) has no effect on this test: its 'sandbox' "
                    "fixture is not the plugin's (shared_sandbox(...) or one of your own) "
                    "and takes no marker options; give a shared sandbox its options in "
                    "shared_sandbox(scope=..., **options)", pytrace=False)


@contextlib.contextmanager
def threaded_sandbox(**options: Any) -> Iterator[Sandbox]:
    """A started ``Sandbox`` served by its own event loop in a background thread.

    It answers clients of any event loop (and of other processes, e.g. a command line
    under test), for as long as the ``with`` block lasts; then it is closed and the
    thread ends. Its synchronous methods and attributes (``faults``, ``host_file``,
    ``requests``, ``settings``) may be used from the calling thread.

    Args:
        **options: ``Sandbox`` keywords.
    """
    from . import Sandbox

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="asyncsdk-sandbox", daemon=True)
    thread.start()
    try:
        sb = asyncio.run_coroutine_threadsafe(Sandbox(**options).start(), loop).result()
        try:
            yield sb
        finally:
            asyncio.run_coroutine_threadsafe(sb.close(), loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def shared_sandbox(scope: Scope = "module", **options: Any) -> Callable[..., Iterator[Sandbox]]:
    """A ``sandbox`` fixture shared by every test of a ``scope``; assign it by name.

        sandbox = shared_sandbox(scope="module", credit=1000)   # in a test module

    ``sandbox_client`` then gives each test its own client of that one sandbox. State
    (stored data, credit, ``requests``) carries over from test to test. Markers do not
    apply to a shared sandbox (a test marked so fails, saying so): pass its options here.
    """

    def sandbox() -> Iterator[Sandbox]:
        with threaded_sandbox(**options) as sb:
            yield sb

    sandbox.__doc__ = f"One Sandbox for the whole {scope}, served from its own thread."
    return pytest.fixture(scope=scope, name="sandbox")(sandbox)


@pytest.fixture
def sandbox_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Keyword options for ``Sandbox``: the ``asyncsdk_sandbox`` marker's, merged from
    the outermost to the closest. Override this fixture to set options for a module."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers(MARKER))):
        if marker.args:
            pytest.fail(f"@pytest.mark.{MARKER} takes Sandbox keywords only "
                        f"({MARKER}(credit=0)), got the positional argument(s) "
                        f"{marker.args!r}", pytrace=False)
        options.update(marker.kwargs)
    return options


def _unknown_options(options: dict[str, Any]) -> str | None:
    """Why ``options`` are not all ``Sandbox`` keywords (naming the first that is not),
    or None."""
    import inspect

    from . import Sandbox

    known = [name for name in inspect.signature(Sandbox).parameters if name != "self"]
    unknown = [name for name in options if name not in known]
    if not unknown:
        return None
    return (f"@pytest.mark.{MARKER} / sandbox_options: unknown Sandbox option "
            f"{unknown[0]!r}; the options are: {', '.join(known)}")


def _loop_scope_mismatch(request: pytest.FixtureRequest) -> str | None:
    """Why the ``sandbox`` fixture would be served by a loop other than the test's, or
    None. pytest-asyncio runs a fixture on ``asyncio_default_fixture_loop_scope``'s loop
    and a test on its marker's ``loop_scope`` (or ``asyncio_default_test_loop_scope``);
    when they differ, the sandbox's loop sits idle while the test runs, and every call
    would hang until the client's timeout. Said at once instead."""

    def ini(name: str) -> str | None:
        try:
            value = request.config.getini(name)
        except ValueError:  # an older pytest-asyncio without this setting
            return None
        return value if isinstance(value, str) and value else None

    fixture_scope = ini("asyncio_default_fixture_loop_scope") or "function"
    marker = request.node.get_closest_marker("asyncio")
    test_scope = ((marker.kwargs.get("loop_scope") or marker.kwargs.get("scope"))
                  if marker is not None else None)
    test_scope = test_scope or ini("asyncio_default_test_loop_scope") or "function"
    if test_scope == fixture_scope:
        return None
    return (f"the 'sandbox' fixture runs on the {fixture_scope!r} event loop but this test "
            f"runs on the {test_scope!r} loop, so the sandbox could never answer it: set "
            f"asyncio_default_fixture_loop_scope = {test_scope} (pytest.ini), or use "
            f"'sandbox = shared_sandbox(scope=...)', which answers any loop")


if HAVE_PYTEST_ASYNCIO:

    @pytest_asyncio.fixture
    async def sandbox(sandbox_options: dict[str, Any],
                      request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
        """A started ``Sandbox``, closed after the test (on the test's own event loop:
        a test whose loop scope differs from the fixtures' fails at once, saying so)."""
        from . import Sandbox

        refusal = _loop_scope_mismatch(request) or _unknown_options(sandbox_options)
        if refusal is not None:
            pytest.fail(refusal, pytrace=False)
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
