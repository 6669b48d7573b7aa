"""The example scripts work: a web backend, a resumable bulk worker, a bot."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from aiohttp.test_utils import TestClient, TestServer

from asyncsdk.testing import Sandbox

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_web_backend_shares_one_client() -> None:
    backend = load("web_backend")
    async with Sandbox() as sandbox:
        client = sandbox.client()
        app = backend.make_app(client)
        async with TestClient(TestServer(app)) as http:
            valid = await (await http.get("/check", params={"email": "ann@example.com"})).json()
            role = await (await http.get("/check", params={"email": "sales@example.com"})).json()
            bad = await http.get("/check", params={"email": "nope"})
            assert app[backend.CLIENT] is client  # the same client served every request
        assert valid == {"email": "ann@example.com", "valid": True, "verdict": "Valid",
                         "role": False}
        assert role["role"] is True
        assert bad.status == 400
        assert client.closed  # closed with the app



async def test_web_backend_answers_a_502_for_an_unreadable_answer() -> None:
    """Its docstring: the service refusing 502, no answer 504. Before, an answer the
    library could not read (``ResponseDecodeError``) escaped the handler: a bare 500."""
    backend = load("web_backend")
    async with Sandbox() as sandbox:
        app = backend.make_app(sandbox.client())
        async with TestClient(TestServer(app)) as http:
            sandbox.faults.invalid_json("/api/v1/single/check")
            unreadable = await http.get("/check", params={"email": "ann@example.com"})
            sandbox.faults.reset("/api/v1/single/check", times=None)
            unanswered = await http.get("/check", params={"email": "ann@example.com"})
            assert unreadable.status == 502 and unanswered.status == 504
            assert "unreadable" in (await unreadable.json())["error"]

async def test_bulk_worker_resumes_a_saved_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = load("bulk_worker")
    monkeypatch.setattr(worker, "STATE", tmp_path / "state.json")
    output = tmp_path / "out.csv"
    async with Sandbox(job_polls=0) as sandbox, sandbox.client() as client:
        url = sandbox.host_file("email\nann@example.com\nbob@mailinator.com\n")
        # First run "crashes" right after submitting: only the saved state survives.
        job = await client.validation.create_job(url)
        worker.save_state(job.to_dict())
        creates_before = sum("jobs/create" in r.path for r in sandbox.requests)
        rows = await worker.run(client, url, output)
        creates_after = sum("jobs/create" in r.path for r in sandbox.requests)
    assert rows == 2
    assert creates_after == creates_before == 1  # resumed, not resubmitted (and paid) again
    assert not worker.STATE.exists()
    assert "bob@mailinator.com" in output.read_text()


async def test_bot_answers_about_addresses() -> None:
    bot = load("bot")
    async with Sandbox() as sandbox, sandbox.client() as client:
        reply = await bot.answer(client, "is bob@example.com valid? and x@mailinator.com?")
        nothing = await bot.answer(client, "hello there")
    assert "bob@example.com looks valid." in reply
    assert "x@mailinator.com is a disposable address." in reply
    assert "Send me an email address" in nothing


async def test_bulk_worker_forgets_a_saved_job_the_service_does_not_know(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a saved job the service no longer knew (the ``--sandbox`` service dies
    with its process) made every later run fail with ``JobNotFoundError``."""
    worker = load("bulk_worker")
    monkeypatch.setattr(worker, "STATE", tmp_path / "state.json")
    worker.save_state({"job_id": 99, "file_url": None, "submitted_at": None})
    async with Sandbox(job_polls=0) as sandbox, sandbox.client() as client:
        url = sandbox.host_file("email\nann@example.com\n")
        rows = await worker.run(client, url, tmp_path / "out.csv")
        creates = sum("jobs/create" in r.path for r in sandbox.requests)
    assert rows == 1 and creates == 1
    assert not worker.STATE.exists()


async def test_bulk_worker_does_not_resume_the_job_of_another_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a state file left by a run on list A made a run on list B resume A's job
    and write A's result as B's, without a word."""
    worker = load("bulk_worker")
    monkeypatch.setattr(worker, "STATE", tmp_path / "state.json")
    output = tmp_path / "out.csv"
    async with Sandbox(job_polls=0) as sandbox, sandbox.client() as client:
        first = sandbox.host_file("email\nann@example.com\n")
        other = sandbox.host_file("email\nbob@example.com\n")
        job = await client.validation.create_job(first)
        worker.save_state(job.to_dict())
        with pytest.raises(SystemExit, match="another list"):
            await worker.run(client, other, output)
        creates = sum("jobs/create" in r.path for r in sandbox.requests)
    assert creates == 1 and not output.exists()
    assert worker.STATE.exists()  # kept: job A is still to be finished
