"""The rate finder makes exactly the decisions recorded in ``data/rate_traces.json``.

The traces were recorded from the finder (``rate_traces.py`` says how, from what and
when): the unit tests' scenarios, paced workers against a token bucket on a virtual
clock, seeded random sequences. Every event's result and the finder's rate, window,
estimate and phase after it must be the same, to the last bit: a change of the
machine's behaviour that is not meant shows here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rate_traces import FIXTURE, replay

from asyncsdk.pacing import Phase, RateFinder

TRACES: dict[str, list[Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(TRACES))
def test_the_finder_makes_the_recorded_decisions(name: str) -> None:
    wrong = replay(TRACES[name], RateFinder())
    assert not wrong, f"{len(wrong)} differences, the first: " + "\n".join(wrong[:5])


def test_the_traces_see_every_phase() -> None:
    phases = {event[-1][3] for events in TRACES.values() for event in events if event[-1]}
    assert phases == {phase.value for phase in Phase}
