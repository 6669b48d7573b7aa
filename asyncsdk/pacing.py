"""The pace of bulk work, for drivers outside the client: the rate finder and its
constants (DESIGN §3: the pace is one state machine, driven in memory by ``check_many``
and through Redis by the fleet).

* ``RateFinder``: a pure, deterministic state machine. Give it every event of the sends
  it paces, in order and with their times (``sent``, ``answered``, ``refused``,
  ``failed``, ``held_back``), and read its decisions (``rate``, ``window``,
  ``estimate``, ``phase``). Nothing inside reads a clock or draws a random number: fed
  the same events, two finders decide the same, so N processes that feed theirs one
  ordered stream of events make one pace (the fleet's ``SharedPace``). A driver that
  knows how many inputs it has left gives ``held_back`` an ``ending(rate)``: near the
  end no probe is made whose 429 would wait past it (``check_many`` over a list does).
* ``PaceConstants``: the one frozen record of its constants (and of the schedule's:
  jitter, hold); every driver takes them from the same instance.
* ``Phase``: ``STARTUP``, ``RESTING``, ``PROBING``, ``DARK`` (the service takes
  nothing: its refusals teach nothing until an answer).
* ``SendPolicy``: the seam a bulk call is paced through (``check_many(pace=...)``):
  ``admit(deadline)`` ("may I send, and when": an ``Admission``, or None when not
  before ``deadline``, on the client's clock), ``report(admission, status,
  retry_after)`` ("what came back"), ``resends_free(status)`` and ``held_until``.
  Implement it to pace a run your own way (the fleet's ``SharedPace`` does, through
  Redis).
* ``PaceState``: what the client's own pace is doing, as ``client.validation.pace()``
  shows it (a frozen snapshot: the phase, the rate, the hold, the checks in flight).
"""

from __future__ import annotations

from ._core.pace_state import PaceState
from ._core.policy import Admission, SendPolicy
from ._core.rate import DEFAULT_CONSTANTS, PaceConstants, Phase, RateFinder

__all__ = ["DEFAULT_CONSTANTS", "Admission", "PaceConstants", "PaceState", "Phase",
           "RateFinder", "SendPolicy"]
