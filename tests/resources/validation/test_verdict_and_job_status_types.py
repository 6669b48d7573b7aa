"""Types that say what the README says (issue 29, item 8).

* ``CheckResult.result`` is a ``Verdict``: a success answer without a verdict is a
  ``ResponseDecodeError`` (before: ``CheckResult(result=None)``, typed ``Verdict | None``,
  so ``describe(r.result)`` with ``describe(v: Verdict)`` failed ``mypy --strict``).
* ``JobStatus`` is open like the other enums, and ``job.status()`` returns it as
  ``wait()`` does (before: ``JobStatus | str``, an unknown state as plain text).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aioresponses import aioresponses
from test_typing import _mypy, _revealed
from validation_tools import url_of

import asyncsdk
from asyncsdk import JobStatus, Verdict
from asyncsdk.models.codes import is_known

CHECK = url_of("/api/v1/single/check")
STATUS = url_of("/api/v1/jobs/status")


@pytest.mark.parametrize("answer", [
    {"status": "success", "email": "a@b.com"},
    {"status": "success", "email": "a@b.com", "result": None},
    {"status": "success", "email": "a@b.com", "result": ["Valid"]},
    # A number is no verdict either (it was read as Verdict("5")).
    {"status": "success", "email": "a@b.com", "result": 5},
    {"status": "success", "email": "a@b.com", "result": 0.5},
])
async def test_a_success_answer_without_a_verdict_is_a_decode_error(
    client: asyncsdk.Client, mocked: aioresponses, answer: dict[str, Any]
) -> None:
    mocked.get(CHECK, payload=answer)
    with pytest.raises(asyncsdk.ResponseDecodeError) as caught:
        await client.validation.check("a@b.com")
    assert "result" in str(caught.value)
    assert caught.value.body is not None and "a@b.com" in caught.value.body


@pytest.mark.parametrize(("wire", "expected"), [
    ("Valid", Verdict.VALID), (" catchall ", Verdict.CATCH_ALL), ("Risky", "Risky")])
async def test_a_verdict_is_always_a_verdict(
    client: asyncsdk.Client, mocked: aioresponses, wire: str, expected: str
) -> None:
    mocked.get(CHECK, payload={"status": "success", "email": "a@b.com", "result": wire})
    result = await client.validation.check("a@b.com")
    assert isinstance(result.result, Verdict) and result.result == expected


@pytest.mark.parametrize(("wire", "expected", "known"), [
    ("processing", JobStatus.PROCESSING, True),
    (" Success ", JobStatus.SUCCESS, True),
    ("queued", "queued", False),  # a state the library does not know: still readable
    ("Paused", "Paused", False),
])
async def test_status_returns_a_job_status_known_or_not(
    client: asyncsdk.Client, mocked: aioresponses, wire: str, expected: str, known: bool
) -> None:
    mocked.get(STATUS, payload={"status": wire})
    status = await client.validation.job(5).status()
    assert isinstance(status, JobStatus)
    assert status == expected and str(status) == expected and is_known(status) is known
    if known:
        assert status is expected


async def test_wait_reports_and_returns_job_statuses(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    for wire in ("queued", "processing", "success"):
        mocked.get(STATUS, payload={"status": wire})
    seen: list[object] = []
    done = await client.validation.job(5).wait(interval=0.01,
                                               on_status=lambda s, _: seen.append(s))
    assert done is JobStatus.SUCCESS
    assert seen == ["queued", "processing", "success"]
    assert all(isinstance(s, JobStatus) for s in seen)


def test_mypy_sees_a_verdict_and_job_statuses(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import asyncsdk\n"
        "def describe(verdict: asyncsdk.Verdict) -> str:\n"
        "    return str(verdict)\n"
        "async def f(client: asyncsdk.Client, job: asyncsdk.ValidationJob) -> None:\n"
        "    r = await client.validation.check('a@b.com')\n"
        "    describe(r.result)\n"
        "    reveal_type(r.result)\n"
        "    reveal_type(await job.status())\n"
        "    reveal_type(await job.wait())\n"
        "    await job.wait(on_status=lambda s, t: describe_status(s))\n"
        "def describe_status(status: asyncsdk.JobStatus) -> None:\n"
        "    print(status)\n")
    out, _ = _mypy(str(probe))
    assert _revealed(out) == ["asyncsdk.models.codes.Verdict",
                              "asyncsdk.models.codes.JobStatus",
                              "asyncsdk.models.codes.JobStatus"], out
    assert [line for line in out.splitlines() if ": error:" in line] == [], out
