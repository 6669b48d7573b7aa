"""The cyclic garbage collector around a big decode (``paused_gc``).

A listing of tens of thousands of records makes as many tracked objects, none in a
cycle. Left to the collector as usual, they cost two ways: young collections walk them
(an eighth of the decode), and once enough of them reach the oldest generation a *full*
collection walks the whole heap in one C call, holding the GIL (and so the event loop)
for tens of milliseconds. A decode therefore runs inside ``paused_gc``, which does one of
two things, chosen when the first of the decodes running at once begins:

* **pause and promote** (nothing frozen): the collector is switched off, and at the end
  what was made is moved to the oldest generation without a walk (``gc.freeze`` then
  ``gc.unfreeze``, both constant time), so that no young collection walks the whole
  listing in one C call afterwards.
* **full collections held off** (something is already frozen): ``gc.unfreeze`` would thaw
  it too. That is the application's own ``gc.freeze`` (a pre-fork server's), or on
  Python 3.12 the interpreter's: it keeps the immortal ``__mro__``/``__bases__`` tuples
  of the builtin types frozen, shared by every interpreter, and they must stay so. Then
  the collector stays on, so young collections walk the new objects a few thousand at a
  time, and only the full collection is held off (its threshold raised) until the decode
  ends. Free-threaded builds take this way too: there ``gc.freeze`` stops the world and
  visits the whole heap.

Process-wide settings, so counted: the decodes of several threads share one pause, and
the last to end restores what the first found. An application that switched the
collector off keeps it off; thresholds it sets meanwhile are kept.
"""

from __future__ import annotations

import gc
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]

#: Whether ``gc.freeze``/``gc.unfreeze`` are constant time here (not on free-threaded
#: builds, where freezing visits the whole heap).
_FREEZE_IS_CHEAP = not sysconfig.get_config_var("Py_GIL_DISABLED")
#: The full collection's threshold while it is held off: never reached by a decode.
_HELD_OFF = 1 << 30

_lock = threading.Lock()
_pauses = 0  # decodes in progress (in any thread) inside paused_gc
_was_on = False  # whether the first of them found the collector on
_thresholds: tuple[int, ...] | None = None  # as found, while full collections are held off


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the collector paused and what the block made promoted, or
    with only its full collections held off (when something is frozen; see above)."""
    _begin()
    try:
        yield
    finally:
        _end()


def _begin() -> None:
    global _pauses, _was_on, _thresholds
    with _lock:
        if _pauses == 0:
            _was_on = gc.isenabled()
            _thresholds = None
            if _was_on and (gc.get_freeze_count() or not _FREEZE_IS_CHEAP):
                _thresholds = gc.get_threshold()
                gc.set_threshold(*_held(_thresholds))
            elif _was_on:
                gc.disable()
        _pauses += 1


def _end() -> None:
    global _pauses
    with _lock:
        _pauses -= 1
        if _pauses or not _was_on:
            return
        if _thresholds is not None:
            if gc.get_threshold() == _held(_thresholds):  # not changed meanwhile
                gc.set_threshold(*_thresholds)
            return
        if gc.get_freeze_count() == 0:  # still nothing of anyone else's frozen
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def _held(thresholds: tuple[int, ...]) -> tuple[int, ...]:
    """``thresholds`` with the oldest generation's held off."""
    return (*thresholds[:2], *([_HELD_OFF] * (len(thresholds) - 2)))
