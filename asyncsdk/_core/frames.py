"""Which frames of a traceback the library may clear, and clearing them.

A traceback that reaches the library's edge (the transport's, or the middleware's below
it) runs from the frame that caught it down to where it was raised. Its first part is
the library's call: the library's frames and aiohttp's (which hold the request with its
credentials below the middleware), with the standard library's between them (a context
manager's exit, a timeout). That part ends at the first frame of any other code: a
caller's trace hook, connector or middleware. What runs below it is the caller's doing
(their own request, say): those frames are left as they are, but for the library's own
(a client called from a hook, which cleaned its own on the way out).

A chained exception (``__cause__``, ``__context__``) is the library's call's to clear
only where that call caught it: in a frame of its part of a traceback, or in the
library's own code. One that the caller's code caught (their request that failed, which
their hook raises from) is theirs, its frames left as they are but for the library's.

A cleared frame stays in its traceback (so it still shows where an error came from);
only its local variables are dropped. No traceback or chain is ever cut.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from typing import Final

__all__ = ["LIBRARY_FOLDER", "clear_frames"]

#: The folder of the library's modules: the frames of its code are its own to clear.
LIBRARY_FOLDER: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

#: The top-level modules whose frames belong to the library's call when met before any
#: other code's: the library, aiohttp under it, and the standard library between them.
_CALLS_OWN: Final = frozenset({__name__.partition(".")[0], "aiohttp", *sys.stdlib_module_names})


def clear_frames(exc: BaseException, folders: tuple[str, ...]) -> None:
    """Clear the local variables of the finished frames of the library's call (module
    docstring) whose code lives under one of ``folders``, in ``exc``'s traceback and in
    those of the chained exceptions the call caught; and the library's own frames in
    every exception chained to ``exc``."""
    chain = _chained(exc)
    calls = _the_calls(chain)
    for current in chain:
        call = calls.get(id(current))
        tb = current.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            mine = frame.f_code.co_filename.startswith(LIBRARY_FOLDER)
            if mine or (call is not None and id(frame) in call
                        and frame.f_code.co_filename.startswith(folders)):
                with contextlib.suppress(RuntimeError):  # still running: not finished
                    frame.clear()
            tb = tb.tb_next


def _chained(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception chained to it (``__cause__``, ``__context__``)."""
    found: list[BaseException] = []
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) not in seen:
            seen.add(id(current))
            found.append(current)
            pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return found


def _the_calls(chain: list[BaseException]) -> dict[int, set[int]]:
    """The exceptions of ``chain`` that are the library's call's (by id), each with the
    ids of the frames of its call's part: the first (the one at the edge), and each
    caught in such a part or in the library's own code. Repeated until nothing is added:
    one the call caught may be chained only behind one the caller's code made."""
    first = _calls_part(chain[0].__traceback__)
    calls = {id(chain[0]): first}
    frames = set(first)  # the frames of every call's part found so far
    added = True
    while added:
        added = False
        for current in chain:
            if id(current) not in calls and _caught_in(current, frames):
                part = calls[id(current)] = _calls_part(current.__traceback__)
                frames |= part
                added = True
    return calls


def _calls_part(tb: types.TracebackType | None) -> set[int]:
    """The ids of the frames of ``tb`` before the first frame of other code."""
    part: set[int] = set()
    while tb is not None and _is_calls_own(tb.tb_frame):
        part.add(id(tb.tb_frame))
        tb = tb.tb_next
    return part


def _is_calls_own(frame: types.FrameType) -> bool:
    module = frame.f_globals.get("__name__")
    return isinstance(module, str) and module.partition(".")[0] in _CALLS_OWN


def _caught_in(exc: BaseException, frames: set[int]) -> bool:
    """True when ``exc`` was caught (its traceback starts at the frame that caught it) in
    one of ``frames`` or in the library's own code."""
    tb = exc.__traceback__
    return tb is not None and (id(tb.tb_frame) in frames
                               or tb.tb_frame.f_code.co_filename.startswith(LIBRARY_FOLDER))
