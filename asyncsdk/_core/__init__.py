"""The engine: one call's life from operation to data or error, knowing no area of the
interface and no model (docs/architecture.md).

What the layers above may use of it is exactly ``__all__`` (``tests/test_architecture.py``
holds the resources to it): the ``Engine`` interface and the records it takes
(``CallOptions``, ``Operation``, ``Extras``, a ``SendPolicy``), the ``Clock`` seam, the
credential placements an area names, ``forget_own_frames`` for a stream's own edge,
the ``Window`` primitive (``check_many``'s slots), the ``Backlog`` a bulk run counts
down for its pace and the ``PaceState`` it shows of that pace.
Each name is imported on first use (PEP 562): ``from asyncsdk._core import Placement``
does not load aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from .backlog import Backlog as Backlog
    from .clock import Clock as Clock
    from .clock import SystemClock as SystemClock
    from .credentials import KEY_AND_USER_IN_FORM as KEY_AND_USER_IN_FORM
    from .credentials import KEY_AND_USER_IN_QUERY as KEY_AND_USER_IN_QUERY
    from .credentials import KEY_IN_QUERY as KEY_IN_QUERY
    from .credentials import Placement as Placement
    from .engine import Deadline as Deadline
    from .engine import Engine as Engine
    from .failures import forget_own_frames as forget_own_frames
    from .operation import AreaRules as AreaRules
    from .operation import Extras as Extras
    from .operation import Operation as Operation
    from .options import CallOptions as CallOptions
    from .pace_state import PaceState as PaceState
    from .policy import SINGLE as SINGLE
    from .policy import Admission as Admission
    from .policy import SendPolicy as SendPolicy
    from .streamed import StreamedResponse as StreamedResponse
    from .window import Window as Window

#: Each public name and the module that holds it.
_WHERE = {
    "Backlog": ".backlog",
    "Clock": ".clock", "SystemClock": ".clock",
    "KEY_AND_USER_IN_FORM": ".credentials", "KEY_AND_USER_IN_QUERY": ".credentials",
    "KEY_IN_QUERY": ".credentials", "Placement": ".credentials",
    "Deadline": ".engine", "Engine": ".engine",
    "forget_own_frames": ".failures",
    "AreaRules": ".operation", "Extras": ".operation", "Operation": ".operation",
    "CallOptions": ".options",
    "PaceState": ".pace_state",
    "SINGLE": ".policy", "Admission": ".policy", "SendPolicy": ".policy",
    "StreamedResponse": ".streamed",
    "Window": ".window",
}

__all__ = ["KEY_AND_USER_IN_FORM", "KEY_AND_USER_IN_QUERY", "KEY_IN_QUERY", "SINGLE",
           "Admission", "AreaRules", "Backlog", "CallOptions", "Clock", "Deadline",
           "Engine", "Extras", "Operation", "PaceState", "Placement", "SendPolicy",
           "StreamedResponse", "SystemClock", "Window", "forget_own_frames"]


if not TYPE_CHECKING:  # hidden from type checkers: a module ``__getattr__`` would make
    # every misspelt name an ``Any`` they accept
    __getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
