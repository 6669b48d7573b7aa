"""``_core.frames.clear_frames``: which frames of a traceback are the library's call's.

The rule is tried on frames of code compiled as if it lived in the library, in aiohttp
and in the caller's module (the rule reads a frame's file and module name, nothing
else), so each case builds exactly the traceback it is about.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from asyncsdk._core.frames import LIBRARY_FOLDER, clear_frames

AIOHTTP_FOLDER = str(Path(aiohttp.__file__).parent) + os.sep
BELOW = (LIBRARY_FOLDER, AIOHTTP_FOLDER)


def _function(name: str, folder: str, module: str, body: str,
              **names: Any) -> Callable[..., Any]:
    """``def name(arg):`` + ``body``, its code in ``folder`` and its module ``module``:
    a frame of it looks like a frame of that code. ``names`` are its globals."""
    source = f"def {name}(arg):\n    secret = 'held'\n" + "".join(
        f"    {line}\n" for line in body.splitlines())
    scope: dict[str, Any] = {"__name__": module, **names}
    filename = f"{folder}fake_{module.replace('.', '_')}.py"
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - the test's own source
    return scope[name]  # type: ignore[no-any-return]


def library(name: str, body: str, **names: Any) -> Callable[..., Any]:
    return _function(name, LIBRARY_FOLDER, "asyncsdk.fake", body, **names)


def in_aiohttp(name: str, body: str, **names: Any) -> Callable[..., Any]:
    return _function(name, AIOHTTP_FOLDER, "aiohttp.fake", body, **names)


def callers(name: str, body: str, **names: Any) -> Callable[..., Any]:
    return _function(name, "/home/someone/app/", "app.hooks", body, **names)


def _raised(inner: Callable[[Any], Any]) -> BaseException:
    """What ``inner(1)`` raises, as the library's edge catches it (the traceback starts
    at a frame of the library's, as at the transport or the middleware)."""
    edge = library("edge", "try:\n    inner(arg)\nexcept BaseException as e:\n    return e",
                   inner=inner)
    exc = edge(1)
    assert isinstance(exc, BaseException), "it did not raise"
    return exc


def _frames(exc: BaseException) -> dict[str, types.FrameType]:
    found = {}
    tb = exc.__traceback__
    while tb is not None:
        found[tb.tb_frame.f_code.co_name] = tb.tb_frame
        tb = tb.tb_next
    return found


def _cleared(frames: dict[str, types.FrameType]) -> set[str]:
    """The names of the frames of ``frames`` whose locals are gone (each made by
    ``_function`` holds ``secret`` until cleared); the edge's own is left out."""
    return {name for name, frame in frames.items()
            if "fake_" in frame.f_code.co_filename and name != "edge"
            and "secret" not in frame.f_locals}


def test_the_calls_frames_are_cleared_down_to_the_first_frame_of_other_code() -> None:
    """The library's call (library, aiohttp) down to a caller's hook: cleared; below the
    hook, the caller's own call into aiohttp is theirs (kept), but a frame of the
    library's own is cleared wherever it is."""
    raising = in_aiohttp("raising", "raise OSError('down')")
    nested_library = library("nested_library", "raising(arg)", raising=raising)
    own_request = in_aiohttp("own_request", "nested_library(arg)",
                             nested_library=nested_library)
    hook = callers("hook", "own_request(arg)", own_request=own_request)
    send = in_aiohttp("send", "hook(arg)", hook=hook)
    middleware = library("middleware", "send(arg)", send=send)
    exc = _raised(middleware)
    frames = _frames(exc)
    clear_frames(exc, BELOW)
    assert _cleared(frames) == {"middleware", "send", "nested_library"}


def test_only_the_librarys_frames_when_only_its_folder_is_given() -> None:
    raising = library("raising", "raise OSError('down')")
    session = in_aiohttp("session", "raising(arg)", raising=raising)
    transport = library("transport", "session(arg)", session=session)
    exc = _raised(transport)
    frames = _frames(exc)
    clear_frames(exc, (LIBRARY_FOLDER,))
    assert _cleared(frames) == {"transport", "raising"}


def test_the_standard_library_between_the_calls_frames_does_not_end_its_part() -> None:
    raising = in_aiohttp("raising", "raise OSError('down')")
    middleware = library("middleware", "raising(arg)", raising=raising)
    # ``functools.reduce`` is the standard library's code calling back into the call's.
    through_stdlib = in_aiohttp("through_stdlib",
                                "functools.reduce(lambda a, b: middleware(b), [0, arg])",
                                middleware=middleware, functools=__import__("functools"))
    exc = _raised(through_stdlib)
    frames = _frames(exc)
    clear_frames(exc, BELOW)
    assert {"through_stdlib", "middleware", "raising"} <= _cleared(frames)


def test_an_exception_the_call_caught_is_followed_one_the_caller_caught_is_not() -> None:
    # The caller's hook catches its own request's failure and raises from it.
    own_failure = in_aiohttp("own_failure", "raise ConnectionError('theirs')")
    hook = callers("hook", "try:\n    own_failure(arg)\n"
                           "except ConnectionError as e:\n    raise LookupError('hook') from e",
                   own_failure=own_failure)
    # aiohttp on the library's request catches a failure, then calls the hook.
    connect = in_aiohttp("connect", "raise OSError('ours')")
    request = in_aiohttp("request", "try:\n    connect(arg)\n"
                                    "except OSError:\n    hook(arg)",
                         connect=connect, hook=hook)
    middleware = library("middleware", "request(arg)", request=request)
    exc = _raised(middleware)
    assert exc.__cause__ is not None and exc.__context__ is not None
    ours = exc.__context__.__context__  # the OSError aiohttp caught on the call's path
    assert isinstance(ours, OSError)
    theirs = exc.__cause__
    frames, their_frames, our_frames = _frames(exc), _frames(theirs), _frames(ours)
    clear_frames(exc, BELOW)
    assert _cleared(frames) == {"middleware", "request"}
    assert _cleared(our_frames) == {"request", "connect"}
    assert _cleared(their_frames) == set()


def test_an_exception_kept_by_the_library_and_raised_from_later_is_followed() -> None:
    failing = in_aiohttp("failing", "raise OSError('ours')")
    kept: list[BaseException] = []
    keep = library("keep", "try:\n    failing(arg)\nexcept OSError as e:\n    kept.append(e)",
                   failing=failing, kept=kept)
    keep(1)
    later = library("later", "raise RuntimeError('later') from kept[0]", kept=kept)
    exc = _raised(later)
    stored = _frames(kept[0])
    clear_frames(exc, BELOW)
    assert _cleared(stored) == {"keep", "failing"}


@pytest.mark.parametrize("attach", ["cause", "context"])
def test_a_chain_through_an_exception_never_raised(attach: str) -> None:
    """An exception made, never raised, with one chained to it: the chained one is
    followed by the same rule (caught by the library: cleared; by the caller: kept)."""
    failing = in_aiohttp("failing", "raise OSError('x')")
    by_library = library("by_library", "try:\n    failing(arg)\n"
                                       "except OSError as e:\n    return e", failing=failing)
    by_caller = callers("by_caller", "try:\n    failing(arg)\n"
                                     "except OSError as e:\n    return e", failing=failing)
    for catcher, expected in ((by_library, {"by_library", "failing"}), (by_caller, set())):
        chained = catcher(1)
        made = RuntimeError("made")
        setattr(made, f"__{attach}__", chained)
        frames = _frames(chained)
        clear_frames(made, BELOW)
        assert _cleared(frames) == expected, catcher
