"""The library is a guest in the user's process (DESIGN §3): it never touches the garbage
collector, never uses a private attribute of its dependencies outside the one compat
module (``_core/aiohttp_compat.py``), never cancels a task it did not create, and never
clears the frames of an exception that is not its own.

The first three are read from the source (every module of the library; the command line
and the sandbox are applications of their own and are left out of the task rule); the
last two are also shown by behaviour. For frames: an exception raised by the caller's
code anywhere a call passes (a trace hook above or below the library's middleware, a
connector), an ``SDKError`` of the caller's own included, reaches the caller with its
traceback, its frames' locals and its ``__context__`` as the caller's code left them,
while no frame of the library (nor aiohttp's below the middleware) holds a credential.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import os
import sys
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import leaks, serve
from helpers import refused_port
from scripted_server import CHECK_OK, CHECK_PATH, scripted_server
from yarl import URL

import asyncsdk

PACKAGE = Path(asyncsdk.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))
#: The one module allowed to read what aiohttp offers no public API for.
COMPAT = PACKAGE / "_core" / "aiohttp_compat.py"
DEPENDENCIES = {"aiohttp", "yarl", "multidict", "asyncio", "attr", "attrs", "cattrs", "orjson"}
#: Private attributes read on objects of the library's own (module: expressions).
OWN_PRIVATE = {
    "_client.py": {"copy._setup"},  # Client.with_options sets up its copy
    "_core/credentials.py": {"other._value"},  # SecretValue.__eq__
}
#: ``.cancel()`` calls of the library, each on something it made itself.
OWN_CANCELS = {
    "_core/session.py": 2,  # its own pause timer, its own attempt tasks on a caller's session
    "_core/pace.py": 1,  # its own sleep task of a long paced wait the rate's speed-up ended
    "resources/validation/check_many.py": 2,  # its own worker tasks (a stop ends their waits)
    "fleet/shared_pace.py": 1,  # its own reserving and telling tasks (aclose)
    "fleet/worker.py": 1,  # a batch's own watch of the worker's stop
}


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_no_module_touches_the_garbage_collector(path: Path) -> None:
    found = [node.lineno for node in ast.walk(_tree(path))
             if (isinstance(node, ast.Import) and any(a.name == "gc" for a in node.names))
             or (isinstance(node, ast.ImportFrom) and node.module == "gc")
             or (isinstance(node, ast.Name) and node.id == "gc")]
    assert not found, f"{_relative(path)} uses gc at lines {found}"


def _private_uses(path: Path) -> list[str]:
    """Private attributes read on objects that are not ``self``/``cls`` (enum's
    documented ``_name_``/``_value_`` aside), private modules or names imported from a
    dependency, and private names given to ``getattr``/``setattr``/``hasattr``."""
    found = []
    own = OWN_PRIVATE.get(_relative(path), set())
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not (
                node.attr.startswith("__") or node.attr in ("_name_", "_value_", "_missing_")):
            base = ast.unparse(node.value)
            if base not in ("self", "cls") and f"{base}.{node.attr}" not in own:
                found.append(f"{node.lineno}: {base}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in DEPENDENCIES:
            names = [*(node.module or "").split("."), *(a.name for a in node.names)]
            if any(n.startswith("_") for n in names):
                found.append(f"{node.lineno}: from {node.module} import ...")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and ast.unparse(node.args[0]) not in ("self", "cls")
              and str(node.args[1].value).startswith("_")
              and not str(node.args[1].value).startswith("__")):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", [p for p in MODULES if p != COMPAT], ids=_relative)
def test_no_private_attribute_of_a_dependency_outside_the_compat_module(path: Path) -> None:
    found = _private_uses(path)
    assert not found, f"{_relative(path)}: {found}"


def test_the_private_check_sees_the_compat_modules_read() -> None:
    """The oracle itself: the compat module's reads are what the check reports."""
    assert [use.split(": ", 1)[1] for use in _private_uses(COMPAT)] == [
        "getattr(session, '_middlewares', None)", "getattr(session, '_loop', None)"]


def test_the_library_cancels_only_what_it_made() -> None:
    cancels: dict[str, int] = {}
    for path in MODULES:
        relative = _relative(path)
        if relative.startswith(("cli/", "testing/")):
            continue  # applications of their own: their own command and server tasks
        count = sum(1 for node in ast.walk(_tree(path))
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "cancel")
        if count:
            cancels[relative] = count
    assert cancels == OWN_CANCELS, "a new .cancel(): on something the library made?"


@pytest.mark.parametrize("own_session", [True, False])
async def test_close_ends_a_call_without_cancelling_the_callers_task(own_session: bool) -> None:
    """The caller's task is never cancelled: its call ends with the SDK's error and the
    task goes on (it awaits something else afterwards) with no cancellation pending."""
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        session = None if own_session else aiohttp.ClientSession()
        client = asyncsdk.Client("k", "u", base_url=server.base_url, session=session)
        after: list[object] = []

        async def caller() -> None:
            try:
                await client.validation.check("a@b.com")
            except asyncsdk.APIConnectionError as exc:
                after.append(exc)
            await asyncio.sleep(0)  # a cancelled task would be cancelled here
            me = asyncio.current_task()
            assert me is not None
            after.append(me.cancelling() if sys.version_info >= (3, 11) else 0)

        task = asyncio.ensure_future(caller())
        await server.wait_for_hits(CHECK_PATH, 1)
        await client.close()
        await asyncio.wait_for(task, 10)
        if session is not None:
            await session.close()
    assert isinstance(after[0], asyncsdk.APIConnectionError) and "closed" in str(after[0])
    assert after[1] == 0 and not task.cancelled()


async def test_an_exception_not_the_librarys_keeps_its_frames() -> None:
    """A caller's trace hook fails inside aiohttp: the exception reaches the caller as it
    is, and the hook's own frame still holds its locals (a debugger, an error tracker)."""
    marker = object()

    async def failing_hook(*_: Any) -> None:
        mine = marker  # a local the caller's debugger must still see
        raise RuntimeError(f"trace hook failed {id(mine)}")

    tracer = aiohttp.TraceConfig()
    tracer.on_request_start.append(failing_hook)

    async def never(request: Any) -> Any:  # pragma: no cover - never reached
        raise AssertionError

    async with serve(never) as base, aiohttp.ClientSession(trace_configs=[tracer]) as s, \
            asyncsdk.Client("k", "u", base_url=base, session=s) as client:
        with pytest.raises(RuntimeError, match="trace hook failed") as info:
            await client.validation.check("a@b.com")
    frames = []
    tb = info.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    hook = [f for f in frames if f.f_code.co_name == "failing_hook"]
    assert hook and hook[0].f_locals.get("mine") is marker


KEY, USER = "k3y+s3cr/t=Ö", "jsmith-the-user"
AIOHTTP = Path(aiohttp.__file__).parent
#: Every trace-config signal a call reaches, and a connector: where the caller's code
#: runs, above the library's middleware (``on_request_start``, ``on_request_end``...)
#: or below it, where aiohttp holds the request with its credentials.
SIGNALS = ["on_request_start", "on_connection_queued_start", "on_connection_create_start",
           "on_connection_create_end", "on_dns_resolvehost_start", "on_dns_cache_miss",
           "on_request_headers_sent", "on_request_chunk_sent", "on_response_chunk_received",
           "on_request_end", "on_request_exception", "on_request_redirect"]
PLACES = [*SIGNALS, "connector"]


class CallersError(Exception):
    """An exception of the caller's own code."""


class CallersSDKError(asyncsdk.SDKError):
    """The caller's own code raising an ``SDKError`` (calling another client, say)."""


class CallersReadOnlySDKError(asyncsdk.SDKError):
    """A caller's ``SDKError`` whose ``url`` and ``body`` are read-only properties:
    theirs to define, not the library's to overwrite."""

    @property
    def url(self) -> str:
        return "http://the-callers-own/"

    @property
    def body(self) -> str:
        return "the caller's body"


KINDS = [CallersError, CallersSDKError, CallersReadOnlySDKError]


class Failing:
    """The caller's code that fails: it keeps locals of its own and raises ``kind``
    from an exception of its own (its ``__cause__`` and ``__context__``), with a note."""

    def __init__(self, kind: type[Exception]) -> None:
        self.kind = kind
        self.marker = object()
        self.raised: list[BaseException] = []
        self.context: list[BaseException] = []
        self.armed = True

    def fail(self) -> None:
        mine = self.marker  # what the caller's debugger must still see
        note = "kept by the caller"
        try:
            raise LookupError("the caller's own context")
        except LookupError as inner:
            self.context.append(inner)
            error = self.kind(f"the caller's code failed ({note}, {id(mine)})")
            if sys.version_info >= (3, 11):  # notes are Python 3.11's
                error.add_note(note)
            self.raised.append(error)
            raise error from inner

    async def hook(self, *_: Any) -> None:
        if self.armed:
            self.fail()

    def session(self, place: str) -> aiohttp.ClientSession:
        """A caller's session whose code fails at ``place``."""
        failing = self

        class Refusing(aiohttp.TCPConnector):
            async def connect(self, *_: Any, **__: Any) -> Any:
                failing.fail()

        if place == "connector":
            return aiohttp.ClientSession(connector=Refusing())
        tracer = aiohttp.TraceConfig()
        getattr(tracer, place).append(self.hook)
        # One connection: a second call waits for it (``on_connection_queued_start``).
        return aiohttp.ClientSession(trace_configs=[tracer],
                                     connector=aiohttp.TCPConnector(limit=1))


def _chain(exc: BaseException, seen: set[int] | None = None) -> Iterator[BaseException]:
    """``exc`` and every exception chained to it, each once."""
    seen = set() if seen is None else seen
    if id(exc) in seen:
        return
    seen.add(id(exc))
    yield exc
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None:
            yield from _chain(linked, seen)


def _frames_of(exc: BaseException) -> list[types.FrameType]:
    return [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]


def _frames(exc: BaseException) -> list[types.FrameType]:
    return [frame for current in _chain(exc) for frame in _frames_of(current)]


def _shown(value: Any) -> str:
    text = repr(value)
    if isinstance(value, (str, URL)):
        text += "\n" + str(value)
    elif isinstance(value, (bytes, bytearray)):
        text += "\n" + bytes(value).decode("utf-8", "replace")
    return text


def _leaks(text: str) -> list[str]:
    """``leaks``, and the key in base64 (standard and URL-safe, with or without padding)."""
    raw = KEY.encode()
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return leaks(text, [KEY, USER]) + [
        form for e in encoded for form in (e, e.rstrip("=")) if form in text]


async def _call(client: asyncsdk.Client, place: str) -> Any:
    """The call that reaches ``place``: one with a body for ``on_request_chunk_sent``."""
    if place == "on_request_chunk_sent":
        return await client.mail.send(sender="a@example.com", to="b@example.com",
                                      subject="hello", html="<p>hi</p>")
    return await client.validation.check("a@b.com")


async def _callers_failure(place: str, failing: Failing) -> BaseException:
    """What a call on a caller's session whose code fails at ``place`` raises."""
    release, first = asyncio.Event(), asyncio.Event()

    async def answer(request: web.Request) -> web.StreamResponse:
        if place == "on_request_redirect" and "hop" not in request.query:
            raise web.HTTPFound(f"{request.path}?hop=1")
        first.set()
        if place in ("on_request_chunk_sent", "on_connection_queued_start"):
            await release.wait()  # the first call holds the one connection
        return web.json_response(CHECK_OK)

    with refused_port() as refused:
        async with serve(answer) as base, failing.session(place) as session:
            if place == "on_request_exception":
                base = f"http://127.0.0.1:{refused}"
            elif place.startswith("on_dns_"):
                base = base.replace("127.0.0.1", "localhost")
            async with asyncsdk.Client(KEY, USER, base_url=base, session=session,
                                       max_retries=0) as client:
                holder = None
                if place == "on_connection_queued_start":
                    failing.armed = False  # the first call is not queued: it takes the connection
                    holder = asyncio.ensure_future(_call(client, place))
                    await asyncio.wait_for(first.wait(), 10)
                    failing.armed = True
                try:
                    await _call(client, place)
                except BaseException as exc:  # what the caller gets, whatever it is
                    return exc
                finally:
                    release.set()
                    if holder is not None:
                        await holder
    raise AssertionError(f"the call passed {place} without failing")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("place", PLACES)
async def test_the_callers_exception_keeps_its_frames_locals_and_context(
        place: str, kind: type[Exception]) -> None:
    failing = Failing(kind)
    got = await _callers_failure(place, failing)
    assert failing.raised, f"the caller's code never ran at {place}: got {got!r}"
    (raised,), (context,) = failing.raised, failing.context
    assert got is raised, f"{place}: the caller got {got!r}, not their own exception"
    assert raised.__context__ is context and raised.__cause__ is context
    if sys.version_info >= (3, 11):
        assert raised.__notes__ == ["kept by the caller"]
    assert str(raised).startswith("the caller's code failed (kept by the caller")
    assert context.__traceback__ is not None
    frames = _frames(raised)
    own = [f for f in frames if f.f_code.co_name == "fail"]
    assert own, "the caller's frame is gone from the traceback"
    assert own[0].f_locals.get("mine") is failing.marker
    assert own[0].f_locals.get("note") == "kept by the caller"
    # No credential in the library's frames, nor in aiohttp's (below the middleware they
    # held the request with its credentials), nor in the exception's texts.
    theirs = [f for f in frames
              if f.f_code.co_filename.startswith((str(PACKAGE) + os.sep, str(AIOHTTP) + os.sep))]
    assert any(str(PACKAGE) in f.f_code.co_filename for f in theirs)
    shown = "\n".join(f"{f.f_code.co_filename}:{f.f_code.co_name}: {name}={_shown(value)}"
                      for f in theirs for name, value in f.f_locals.items())
    assert _leaks(shown) == []
    assert _leaks(f"{raised}\n{raised!r}") == []


@pytest.mark.parametrize("place", [p for p in PLACES if p not in (
    "on_request_headers_sent", "on_request_chunk_sent")])
async def test_a_rendered_traceback_with_locals_holds_no_credential(place: str) -> None:
    """The traceback as an error tracker renders it, every frame's locals included
    (``capture_locals``): no credential, wherever the caller's code failed. (The two
    signals that show the wire itself hand it to the caller's hook, whose own frame
    holds it: README, "Tracing, error tracking and recording".)"""
    got = await _callers_failure(place, Failing(CallersError))
    rendered = "".join(traceback.TracebackException.from_exception(
        got, capture_locals=True).format())
    assert "Traceback" in rendered and "mine = " in rendered
    assert _leaks(rendered) == []


class OwnRequest:
    """The caller's hook makes a request of its own (to a refused port) that fails, and
    either raises from it (``chained``) or lets it through (``through``). It notes the
    locals of aiohttp's frames of that request as they were when it failed."""

    def __init__(self, mode: str, refused: str) -> None:
        self.mode, self.refused = mode, refused
        self.failed: list[BaseException] = []
        self.locals_then: dict[int, tuple[types.FrameType, list[str]]] = {}

    async def hook(self, *_: Any) -> None:
        if self.failed:
            return
        async with aiohttp.ClientSession() as own:
            try:
                await own.get(self.refused)
            except aiohttp.ClientError as exc:
                self.failed.append(exc)
                self.locals_then = {id(f): (f, sorted(f.f_locals)) for f in _frames(exc)
                                    if f.f_code.co_filename.startswith(str(AIOHTTP) + os.sep)}
                if self.mode == "chained":
                    raise CallersError("the caller's hook failed") from exc
                raise


@pytest.mark.parametrize("mode", ["chained", "through"])
@pytest.mark.parametrize("place", ["on_request_start", "on_connection_create_start",
                                   "on_request_headers_sent"])
async def test_a_request_the_callers_hook_made_keeps_aiohttps_frames(
        place: str, mode: str) -> None:
    """The frames aiohttp ran for the caller's own request keep their locals, however the
    failure reaches the caller; aiohttp's and the library's frames of the library's own
    request still hold no credential."""
    async def answer(_: web.Request) -> web.Response:
        return web.json_response(CHECK_OK)

    with refused_port() as refused:
        own = OwnRequest(mode, f"http://127.0.0.1:{refused}")
        tracer = aiohttp.TraceConfig()
        getattr(tracer, place).append(own.hook)
        async with serve(answer) as base, \
                aiohttp.ClientSession(trace_configs=[tracer]) as session, \
                asyncsdk.Client(KEY, USER, base_url=base, session=session,
                                max_retries=0) as client:
            with pytest.raises(Exception) as info:
                await client.validation.check("a@b.com")
    (failed,) = own.failed
    # Chained: the caller's own exception, raised from it. Let through: aiohttp's error
    # of a connection that failed in the call, which the library reads as its own.
    if mode == "chained":
        assert isinstance(info.value, CallersError) and info.value.__cause__ is failed
    else:
        assert isinstance(info.value, asyncsdk.APIConnectionError)
    assert own.locals_then, "the caller's request ran no aiohttp frame"
    changed = [f"{f.f_code.co_name}: {then} -> {sorted(f.f_locals)}"
               for f, then in own.locals_then.values() if sorted(f.f_locals) != then]
    assert changed == []
    # The library's request: its frames and aiohttp's show no credential.
    ours = [f for exc in (info.value, *_chain(failed)) for f in _frames_of(exc)
            if f.f_code.co_filename.startswith((str(PACKAGE) + os.sep, str(AIOHTTP) + os.sep))
            and id(f) not in own.locals_then]
    assert any(str(PACKAGE) in f.f_code.co_filename for f in ours)
    shown = "\n".join(f"{f.f_code.co_name}: {name}={_shown(value)}"
                      for f in ours for name, value in f.f_locals.items())
    assert _leaks(shown) == []
