"""A sandbox switch or account value the sandbox does not take is refused where it is
set, naming it: ``job_polls="2"`` or ``credit="10"`` answered every later poll or check
with HTTP 500, and ``job_outcome="failed"`` or ``mail_state="Sent"`` made the sandbox
answer what the service never does (a job status "failed")."""

from __future__ import annotations

import dataclasses
import math

import pytest
from sandbox_helpers import Api

from asyncsdk import InvalidInputError
from asyncsdk.testing import Sandbox, Settings

BAD: dict[str, list[object]] = {
    "download_shape": ["xml", "CSV", "", None, 1],
    "role_format": ["yes", "boolean", None, True],
    "job_polls": [-1, "2", 2.0, True, None],
    "job_seconds": [-0.5, math.inf, math.nan, "3", True],
    "job_outcome": ["failed", "Success", "processing", None, False],
    "allow_remote_files": ["yes", 1, None],
    "mail_state": ["Sent", "queued", "", None],
    "max_file_bytes": [-1, 1.5, "64", None],
    "chunk_size": [0, -1, 1.0, None],
    "record": ["no", 0, None],
}
GOOD: dict[str, list[object]] = {
    "download_shape": ["csv", "json", "url"],
    "role_format": ["bool", "str", "int"],
    "job_polls": [0, 1, 10**6],
    "job_seconds": [None, 0, 0.25, 3600],
    "job_outcome": ["success", "fail"],
    "allow_remote_files": [True, False],
    "mail_state": ["Queued", "Send"],
    "max_file_bytes": [0, 1024],
    "chunk_size": [1, 64 * 1024],
    "record": [True, False],
}
CASES = [(name, value) for name, values in BAD.items() for value in values]


def test_every_switch_is_covered() -> None:
    names = {field.name for field in dataclasses.fields(Settings)}
    assert names == set(BAD) == set(GOOD)


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
async def test_a_bad_switch_is_refused_naming_it(sandbox: Sandbox, name: str,
                                                 value: object) -> None:
    before = getattr(sandbox.settings, name)
    with pytest.raises(InvalidInputError, match=f"^{name}: expected ") as refused:
        setattr(sandbox.settings, name, value)
    assert refused.value.field == name
    assert getattr(sandbox.settings, name) == before  # nothing changed
    if name in ("max_file_bytes",):  # not a Sandbox keyword
        return
    with pytest.raises(InvalidInputError) as refused:
        Sandbox(**{name: value})
    assert refused.value.field == name


@pytest.mark.parametrize("name", list(GOOD))
def test_every_documented_value_is_taken(name: str) -> None:
    settings = Settings()
    for value in GOOD[name]:
        setattr(settings, name, value)
        assert getattr(settings, name) == value


@pytest.mark.parametrize("credit", [-1, "10", 1.5, True])
async def test_a_bad_credit_is_refused_naming_it(sandbox: Sandbox, api: Api,
                                                 credit: object) -> None:
    for set_it in (lambda: setattr(sandbox, "credit", credit),
                   lambda: sandbox.add_account("k2", "u2", credit=credit),  # type: ignore[arg-type]
                   lambda: Sandbox(credit=credit)):  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match=r"^credit: expected ") as refused:
            set_it()
        assert refused.value.field == "credit"
    assert sandbox.credit is None
    assert (await api.check("ada@example.com"))["status"] == "success"


@pytest.mark.parametrize(("api_key", "username"), [("", "u"), ("k", ""), (None, "u")])
def test_an_account_needs_a_key_and_a_username(sandbox: Sandbox, api_key: object,
                                               username: object) -> None:
    with pytest.raises(InvalidInputError):
        sandbox.add_account(api_key, username)  # type: ignore[arg-type]


async def test_credit_runs_down_to_zero_and_no_further(sandbox: Sandbox, api: Api) -> None:
    sandbox.credit = 2
    assert [(await api.check("ada@example.com"))["status"] for _ in range(3)] == [
        "success", "success", "fail"]
    assert sandbox.credit == 0


@pytest.mark.parametrize("made", ["success", "fail"])
async def test_make_job_leaves_a_pending_failure_to_the_next_created_job(
    sandbox: Sandbox, api: Api, made: str
) -> None:
    # make_job took the pending failure itself (and ended as asked): the job the test
    # meant to fail succeeded.
    sandbox.settings.job_polls = 0
    sandbox.fail_next_job()
    synthetic = sandbox.make_job(3, status=made)  # type: ignore[arg-type]
    created = await api.create_job(sandbox.host_file("ann@example.com\n"))
    assert (await api.status(created["job_id"])) == {"status": "fail"}
    assert (await api.status(synthetic)) == {"status": made}
    second = await api.create_job(sandbox.host_file("ann@example.com\n"))
    assert (await api.status(second["job_id"])) == {"status": "success"}


@pytest.mark.parametrize("status", ["failed", "processing", "Success", None])
def test_a_job_status_the_service_never_sends_is_refused(sandbox: Sandbox,
                                                         status: object) -> None:
    job_id = sandbox.make_job(1)
    for make in (lambda: sandbox.make_job(1, status=status),  # type: ignore[arg-type]
                 lambda: sandbox.finish_job(job_id, status)):  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError) as refused:
            make()
        assert refused.value.field == "status"
    assert sandbox.state.jobs[job_id].final_status == "success"
    assert list(sandbox.state.jobs) == [job_id]


@pytest.mark.parametrize("count", [-1, 1.0, "2", True])
def test_a_bad_count_of_rows_or_failures_is_refused(sandbox: Sandbox, count: object) -> None:
    with pytest.raises(InvalidInputError, match=r"^rows: "):
        sandbox.make_job(count)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"^count: "):
        sandbox.fail_next_job(count)  # type: ignore[arg-type]
    assert sandbox.state.fail_next_jobs == 0 and not sandbox.state.jobs
