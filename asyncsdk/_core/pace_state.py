"""``PaceState``: what a client's bulk pace is doing, as its user may see it
(``client.validation.pace()``; public as ``asyncsdk.pacing.PaceState``).

A snapshot, taken when asked: plain numbers a reader understands without the pace's
design (DESIGN §3), to log how fast the service lets a run go, or to tell a stalled
run from a held one. It holds nothing of the key the pace is of: no key, no
fingerprint, in its fields or its repr.
"""

from __future__ import annotations

import attrs

from .rate import DEFAULT_CONSTANTS, Phase

__all__ = ["PaceState"]


@attrs.frozen(kw_only=True)
class PaceState:
    """The state of one bulk pace at one moment. The defaults are a pace's before its
    first bulk check (``PaceState()``: nothing learnt, nothing held).

    Attributes:
        phase: what the pace is doing (``asyncsdk.pacing.Phase``): ``STARTUP`` (nothing
            learnt: the checks in flight grow with each answer until the first 429),
            ``RESTING`` (holding at the rate found), ``PROBING`` (trying a little more),
            ``DARK`` (the service takes nothing: waiting for an answer).
        rate: checks a second the pace sends at now; None while it does not space them
            (before an answer timed a round trip, as in the start-up's first checks:
            the window alone holds them back).
        service_rate: checks a second the service was last found to take from this
            key (what the answers between two 429s showed); None until 429s showed it.
        max_in_flight: the most paced checks on the wire at once now (``check_many``'s
            ``concurrency`` bounds each run too). A paced check is one of a
            ``check_many`` run at the client's pace with ``adaptive=True`` (the
            default); a run with ``adaptive=False`` is held by the hold alone: its
            checks count in neither this nor ``in_flight``, though their answers teach
            the pace (``phase``, ``rate``). A run given ``pace=`` shows nowhere here.
        in_flight: paced checks let out and not yet answered.
        hold_seconds: how long from now every bulk check of this key and area is held
            (a 429 from a service that answered nothing lately holds them for the wait
            it asked); 0.0 when none is.
        next_send_seconds: how long from now the next paced check would wait for its
            moment (the hold included, a place in the window permitting); 0.0: at once.
            (A check of an ``adaptive=False`` run waits for the hold only, and a spread
            of at most a second after it.)
        inputs_left: inputs the running ``check_many`` calls on this pace have not yet
            sent; None while one reads a source of unknown length (a generator), or no
            run has said. A run that ended counts 0 (until it is gone).
    """

    phase: Phase = Phase.STARTUP
    rate: float | None = None
    service_rate: float | None = None
    max_in_flight: int = DEFAULT_CONSTANTS.start_window
    in_flight: int = 0
    hold_seconds: float = 0.0
    next_send_seconds: float = 0.0
    inputs_left: int | None = None
