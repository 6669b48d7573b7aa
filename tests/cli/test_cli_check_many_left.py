"""``check-many`` tells ``check_many`` how many addresses it has left to send (a sized
input: its pace then makes no probe in the run's last second whose 429 would wait past
the end; ``tests/core/test_rate_near_end.py``): all of the file's, then on ``--resume``
only those not yet written."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sized
from pathlib import Path
from typing import Any

import pytest
from cli_support import run, write_people

from asyncsdk.models.validation import CheckOutcome
from asyncsdk.resources.validation.resource import Validation


@pytest.mark.usefixtures("server")
def test_check_many_is_told_the_addresses_left(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 30)
    told: list[int | None] = []
    check_many = Validation.check_many

    def recording(self: Validation, emails: Iterable[str],
                  **options: Any) -> AsyncGenerator[CheckOutcome, None]:
        told.append(len(emails) if isinstance(emails, Sized) else None)
        return check_many(self, emails, **options)

    monkeypatch.setattr(Validation, "check_many", recording)
    code, _, err = run("check-many", "people.csv", "-o", "results.csv")
    assert code == 0, err
    results = tmp_path / "results.csv"
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 31
    results.write_text("".join(lines[:21]), encoding="utf-8")  # 10 rows to do again
    code, _, err = run("check-many", "people.csv", "-o", "results.csv", "--resume")
    assert code == 0, err
    assert told == [30, 10]

