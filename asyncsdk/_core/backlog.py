"""``Backlog``: the inputs of one bulk run not yet taken from its source, for its pace.

The pace (``_core.pace``) reads the backlogs of the runs it serves to know when the end
is near: once the inputs left take less than a second or so at the rate, a probe of a
higher rate would gain a few percent of that second, and its 429 would hold a check for
the wait the service asks, past the end of the run (``RateFinder.held_back``). A run over
a source of no known length (a generator, an async iterable) says nothing: its pace
probes as always.
"""

from __future__ import annotations

from collections.abc import Sized

__all__ = ["Backlog"]


class Backlog:
    """The inputs of one bulk run not yet taken: ``left`` (None: unknown). The run counts
    it down as it takes inputs and sets it to 0 when it ends, however it ends."""

    __slots__ = ("__weakref__", "left")

    def __init__(self, left: int | None) -> None:
        self.left = left

    @classmethod
    def of(cls, source: object) -> Backlog:
        """The backlog of a run over ``source``: its length, where it has one (a list, a
        tuple), else unknown."""
        if isinstance(source, Sized):
            try:
                return cls(len(source))
            except Exception:  # a length that fails is no length: unknown
                return cls(None)
        return cls(None)

    def take(self) -> None:
        """One input was taken from the source."""
        if self.left:
            self.left -= 1

    def __repr__(self) -> str:
        return f"Backlog(left={self.left})"
