"""``asyncsdk fleet submit|status|export`` against a real redis-server, the sandbox and
the fleet's tasks run in this process (each queued batch run as arq would run it).

The export is compared with what ``asyncsdk check-many`` writes for the same file: the
same columns, the same cells, one row per input, in input order.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from arq.connections import ArqRedis
from arq.jobs import Job
from arq.utils import args_to_string
from fleet_tools import worker
from helpers import refused_port

import asyncsdk
from asyncsdk.cli import main as cli_main
from asyncsdk.cli.fleet import NO_EXTRA
from asyncsdk.cli.inputs import InputFile
from asyncsdk.fleet.submit import submit_file
from asyncsdk.fleet.worker import check_batch, resume_job, submit_job
from asyncsdk.testing import Sandbox

CSV = ("Name;E-Mail;City\n"
       "Ann;ann@example.com;Pune\n"
       ";sales@example.org;Oslo\n"  # a role address, no name
       "Bob;no-at-sign;\n"  # refused before sending
       "Zoe;zoe@mailinator.com;Lima\n"  # disposable
       "Ann again;ann@example.com;Pune\n")  # the same address twice: two rows


async def fleet(*argv: str, redis_url: str) -> tuple[int, str, str]:
    """``asyncsdk fleet ARGV --redis-url URL`` (in a thread: it runs its own loop)."""
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(cli_main, ["fleet", *argv, "--redis-url", redis_url],
                                   stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


async def work_off(pool: ArqRedis, client: asyncsdk.Client) -> int:
    """Run every queued job once, as a worker would; how many ran."""
    ran = 0
    for job_id in await pool.zrange("arq:queue", 0, -1):
        info = await Job(job_id.decode(), pool).info()
        assert info is not None
        task = {"check_batch": check_batch, "submit_job": submit_job,
                "resume_job": resume_job}[info.function]
        await task(worker(client, pool, 1), *info.args)
        await pool.zrem("arq:queue", job_id)
        ran += 1
    return ran


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


async def test_the_export_is_check_manys_result_in_input_order(
    pool: ArqRedis, redis_url: str, tmp_path: Path,
) -> None:
    source = tmp_path / "people.csv"
    source.write_text(CSV, encoding="utf-8")
    code, _, err = await fleet("submit", str(source), "--run", "people", "--batch-size", "2",
                               redis_url=redis_url)
    assert (code, err) == (0, "run people: 5 addresses, 3 new batches enqueued\n")
    async with Sandbox() as sb, sb.client() as client:
        # Batches end in another order than the input's: the last one first.
        for job_id in sorted(await pool.zrange("arq:queue", 0, -1), reverse=True):
            info = await Job(job_id.decode(), pool).info()
            assert info is not None
            await check_batch(worker(client, pool, 1), *info.args)
            await pool.zrem("arq:queue", job_id)
        code, out, _ = await fleet("export", "people", "-o", str(tmp_path / "fleet.csv"),
                                   redis_url=redis_url)
        # A row without a verdict ("no-at-sign"): 1, as check-many exits (it was 0).
        assert code == 1, out
        assert out.startswith("run people: 5 rows -> ")
        # check-many, on the same file against the same sandbox
        many = io.StringIO()
        assert await asyncio.to_thread(
            cli_main, ["--base-url", sb.base_url, "--api-key", sb.api_key, "--username",
                       sb.username, "check-many", str(source), "-o",
                       str(tmp_path / "many.csv")], stdout=many, stderr=io.StringIO()) == code
    exported = rows_of(tmp_path / "fleet.csv")
    checked = sorted(rows_of(tmp_path / "many.csv"), key=lambda r: int(r["row"]))
    assert exported == checked
    assert list(exported[0]) == ["row", "email", "verdict", "role", "error_type", "error",
                                 "attempted", "name", "City"]
    assert [(r["row"], r["email"], r["name"], r["City"]) for r in exported] == [
        ("1", "ann@example.com", "Ann", "Pune"), ("2", "sales@example.org", "", "Oslo"),
        ("3", "no-at-sign", "Bob", ""), ("4", "zoe@mailinator.com", "Zoe", "Lima"),
        ("5", "ann@example.com", "Ann again", "Pune")]
    assert exported[2]["error_type"] == "InvalidInputError"
    assert exported[2]["attempted"] == "False"


async def test_an_export_through_a_link_or_to_a_pipe_keeps_them(
    pool: ArqRedis, redis_url: str, tmp_path: Path,
) -> None:
    """As check-many writes its result: a link stays a link to the new content, and a
    pipe (or a device: ``-o /dev/null``) is written into, never replaced by a file (the
    export renamed its temporary file over whatever the path was)."""
    source = tmp_path / "a.txt"
    source.write_text("ann@example.com\nbob@example.com\n")
    await fleet("submit", str(source), "--run", "a", redis_url=redis_url)
    async with Sandbox() as sb, sb.client() as client:
        assert await work_off(pool, client) == 1
    real = tmp_path / "kept" / "result.csv"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(real)
    code, _, err = await fleet("export", "a", "-o", str(link), "--overwrite",
                               redis_url=redis_url)
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert [r["email"] for r in rows_of(real)] == ["ann@example.com", "bob@example.com"]

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    # Its reader is there first (the export's open does not wait); the CSV fits in the
    # pipe's buffer.
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        code, _, err = await fleet("export", "a", "-o", str(pipe), redis_url=redis_url)
        try:
            read = os.read(reader, 1 << 16)
        except BlockingIOError:  # nothing was written into the pipe
            read = b""
    finally:
        os.close(reader)
    assert code == 0, err
    assert pipe.is_fifo()
    assert read.decode().splitlines()[1:] == [
        "1,ann@example.com,Valid,False,,,True,", "2,bob@example.com,Valid,False,,,True,"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "kept", "latest.csv",
                                                          "pipe"]


async def test_an_unfinished_run_is_not_exported_and_its_status_counts(
    pool: ArqRedis, redis_url: str, tmp_path: Path,
) -> None:
    source = tmp_path / "a.txt"
    source.write_text("".join(f"u{i}@example.com\n" for i in range(10)))
    assert (await fleet("submit", str(source), "--run", "a", "--batch-size", "4",
                        redis_url=redis_url))[0] == 0
    async with Sandbox() as sb, sb.client() as client:
        info = await Job("check:a:4", pool).info()
        assert info is not None
        await check_batch(worker(client, pool, 1), *info.args)
    code, out, _ = await fleet("status", "a", redis_url=redis_url)
    assert code == 0
    assert json.loads(out) == {"run": "a", "kind": "addresses", "state": "running",
                               "total": 10, "done": 4, "left": 6}
    target = tmp_path / "a.csv"
    code, out, err = await fleet("export", "a", "-o", str(target), redis_url=redis_url)
    assert code == 1 and out == ""
    assert err == ("asyncsdk: error: run 'a': 6 of 10 inputs have no outcome yet; export it "
                   "once they do ('asyncsdk fleet status a --wait' waits for them)\n")
    assert not target.exists() and list(tmp_path.glob(".a.csv*")) == []  # nothing written


async def test_the_status_draws_check_manys_bar_on_a_terminal(
    pool: ArqRedis, redis_url: str,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    await pool.set("fleet:t:total", 8)
    await pool.hset("fleet:t:outcomes", mapping={str(i): "{}" for i in range(3)})
    err = Terminal()
    code = await asyncio.to_thread(cli_main, ["fleet", "status", "t", "--redis-url",
                                              redis_url], stdout=io.StringIO(), stderr=err)
    assert code == 0
    assert "3/8" in err.getvalue()


async def test_an_export_refuses_to_overwrite_a_file_unless_told(
    pool: ArqRedis, redis_url: str, tmp_path: Path,
) -> None:
    source = tmp_path / "a.txt"
    source.write_text("ann@example.com\nbob@example.com\n")
    await fleet("submit", str(source), "--run", "a", redis_url=redis_url)
    async with Sandbox() as sb, sb.client() as client:
        assert await work_off(pool, client) == 1
    target = tmp_path / "out.csv"
    target.write_text("keep me\n")
    code, _, err = await fleet("export", "a", "-o", str(target), redis_url=redis_url)
    assert code == 2 and "exists; add --overwrite to replace it" in err
    assert target.read_text() == "keep me\n"
    code, _, _ = await fleet("export", "a", "-o", str(target), "--overwrite",
                             redis_url=redis_url)
    assert code == 0
    assert [r["email"] for r in rows_of(target)] == ["ann@example.com", "bob@example.com"]


async def test_a_job_run_is_submitted_waited_for_and_exported(
    pool: ArqRedis, redis_url: str, tmp_path: Path,
) -> None:
    async with Sandbox(job_polls=0) as sb, sb.client() as client:
        url = sb.host_file("email,name\nann@example.com,Ann\nsales@example.com,\n")
        code, _, err = await fleet("submit", "--job", url, "--run", "list",
                                   redis_url=redis_url)
        assert code == 0, err
        code, out, _ = await fleet("status", "list", redis_url=redis_url)
        assert json.loads(out)["state"] == "queued"
        waiting = asyncio.create_task(fleet("status", "list", "--wait", "--poll", "0.01",
                                            redis_url=redis_url))
        while await work_off(pool, client):  # the submit, then its resume
            pass
        code, out, _ = await asyncio.wait_for(waiting, 30)
    assert code == 0
    assert json.loads(out) == {"run": "list", "kind": "job", "state": "done", "total": 2,
                               "done": 2, "left": 0, "error": None}
    code, out, err = await fleet("export", "list", "-o", "-", redis_url=redis_url)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["row"], r["email"], r["verdict"], r["role"], r["name"]) for r in rows] == [
        ("1", "ann@example.com", "Valid", "False", "Ann"),
        ("2", "sales@example.com", "Valid", "True", "")]
    assert err.startswith("run list: 2 rows -> standard output")


async def test_a_job_url_is_not_a_task_argument_that_arq_logs(
    pool: ArqRedis, redis_url: str,
) -> None:
    """arq logs each task's arguments at INFO (``args_to_string``): a file URL with a
    password or a signed token reached the worker's log. The task now carries the label
    alone; the worker reads the URL the command stored."""
    async with Sandbox(job_polls=0) as sb, sb.client() as client:
        url = sb.host_file("email\nann@example.com\n")
        parts = urlsplit(url)
        secret_url = urlunsplit(parts._replace(
            netloc=f"me:pw-Secret-7@{parts.netloc}", query="sig=Token-Secret-9"))
        code, _, err = await fleet("submit", "--job", secret_url, "--run", "signed",
                                   redis_url=redis_url)
        assert code == 0, err
        (job_id,) = await pool.zrange("arq:queue", 0, -1)
        info = await Job(job_id.decode(), pool).info()
        assert info is not None and info.args == ("signed",) and not info.kwargs
        logged = args_to_string(info.args, info.kwargs)
        assert "Secret" not in logged and "signed" in logged
        while await work_off(pool, client):  # the submit (the URL as given), its resume
            pass
    code, out, _ = await fleet("status", "signed", redis_url=redis_url)
    assert code == 0 and json.loads(out)["state"] == "done"


async def test_a_run_label_is_one_kind_of_run(pool: ArqRedis, redis_url: str,
                                               tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_text("ann@example.com\n")
    assert (await fleet("submit", str(source), "--run", "both", redis_url=redis_url))[0] == 0
    code, _, err = await fleet("submit", "--job", "http://127.0.0.1:9/a.csv", "--run", "both",
                               redis_url=redis_url)
    assert (code, err) == (2, "asyncsdk: error: run 'both' already holds an address file: "
                              "choose another --run\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["submit", "a.txt", "--run", "no spaces"], "--run: expected 1 to 100 letters"),
    (["submit", "a.txt", "--run", "job"], "--run: 'job' names the fleet's own keys"),
    (["submit", "--run", "r"], "give a file of addresses, or --job URL (not both)"),
    (["submit", "a.txt", "--run", "r", "--batch-size", "0"],
     "--batch-size: expected an integer >= 1, got 0"),
    (["submit", "--job", "not-a-url", "--run", "r"],
     "--job: expected an absolute http(s) URL of the file, got 'not-a-url'"),
    (["submit", "--job", "", "--run", "r"], "--job: expected an absolute http(s) URL"),
    (["submit", "--job", "ftp://host/a.csv", "--run", "r"], "--job: expected an absolute"),
    (["submit", "--job", "https://ann:pw-s3cret@/a.csv", "--run", "r"],
     "got 'https://ann:REDACTED@/a.csv'"),
    (["submit", "--job", "https://host:99999/a.csv", "--run", "r"], "--job: expected"),
    (["status", "nothing"], "no run 'nothing' in this Redis"),
    (["export", "nothing", "-o", "-"], "no run 'nothing' in this Redis"),
])
async def test_bad_usage_is_one_line_and_exit_2(
    pool: ArqRedis, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    argv: list[str], message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("ann@example.com\n")
    code, out, err = await fleet(*argv, redis_url=redis_url)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("asyncsdk: error: ") and message in err
    assert await pool.keys("*") == []


async def test_redis_out_of_reach_is_one_line_without_its_password(
    tmp_path: Path,
) -> None:
    with refused_port() as port:
        url = f"redis://:s3cret-pw@127.0.0.1:{port}/0"
        code, _, err = await fleet("status", "r", redis_url=url)
    assert code == 1
    assert err.startswith("asyncsdk: error: cannot reach Redis at 127.0.0.1:")
    assert "s3cret" not in err


def test_redis_out_of_reach_is_one_line_from_the_command_line() -> None:
    """Before: arq tried five times, a second apart, logging a line for each (Python's
    last-resort handler printed them) before the command's own line."""
    with refused_port() as port:
        done = subprocess.run(
            [sys.executable, "-m", "asyncsdk", "fleet", "status", "r", "--redis-url",
             f"redis://:s3cret-pw@127.0.0.1:{port}/0"],
            capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("asyncsdk: error: cannot reach Redis at 127.0.0.1:")
    assert "s3cret" not in done.stderr


def test_the_sandbox_mode_is_refused_for_the_fleet() -> None:
    err = io.StringIO()
    assert cli_main(["--sandbox", "fleet", "status", "r"], stdout=io.StringIO(),
                    stderr=err) == 2
    assert err.getvalue().startswith("asyncsdk: error: --sandbox: the fleet's workers")


@pytest.mark.parametrize("argv", [["fleet", "worker"], ["fleet", "status", "r"],
                                  ["fleet", "export", "r", "-o", "x.csv"]])
def test_without_the_extra_a_fleet_command_says_how_to_install_it(argv: list[str]) -> None:
    # arq and redis made unimportable, as where the extra is not installed.
    code = ("import sys\n"
            "sys.modules['arq'] = sys.modules['redis'] = None\n"
            "from asyncsdk.cli import main\n"
            f"sys.exit(main({argv!r}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == NO_EXTRA + "\n"
    assert "pip install 'asyncsdk[fleet]'" in NO_EXTRA


@pytest.mark.parametrize("second", [
    "email\nann@example.com\nbob@example.com\n",  # the other columns dropped
    "email,name,City\nann@example.com,,Pune\nbob@example.com,Bob,Oslo\n",  # a cell emptied
    "email,name,Town\nann@example.com,Ann,Pune\nbob@example.com,Bob,Oslo\n",  # renamed
])
async def test_the_same_addresses_with_other_cells_are_another_input(
    pool: ArqRedis, redis_url: str, tmp_path: Path, second: str,
) -> None:
    """Before: the label's identity was its addresses alone, so a second file with the
    same addresses and other columns or cells was taken; the export then wrote rows
    wider than its header, or the first file's cells under the second's columns."""
    first = tmp_path / "first.csv"
    first.write_text("email,name,City\nann@example.com,Ann,Pune\nbob@example.com,Bob,Oslo\n")
    (tmp_path / "second.csv").write_text(second)
    assert (await fleet("submit", str(first), "--run", "r", redis_url=redis_url))[0] == 0
    code, _, err = await fleet("submit", str(tmp_path / "second.csv"), "--run", "r",
                               redis_url=redis_url)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("asyncsdk: error: run 'r' already holds these addresses with "
                          "other columns or cells")
    assert (await fleet("submit", str(first), "--run", "r", redis_url=redis_url))[0] == 0
    async with Sandbox() as sb, sb.client() as client:
        await work_off(pool, client)
    code, out, _ = await fleet("export", "r", "-o", "-", redis_url=redis_url)
    assert code == 0
    assert [(r["email"], r["name"], r["City"]) for r in csv.DictReader(io.StringIO(out))] \
        == [("ann@example.com", "Ann", "Pune"), ("bob@example.com", "Bob", "Oslo")]


async def test_the_inputs_cells_are_stored_before_any_batch_is_enqueued(
    pool: ArqRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: the cells were stored after the batches were enqueued, so a run whose
    submit stopped in between (or a fast fleet) was done without them, and its export
    wrote every name empty, saying nothing."""
    source = tmp_path / "people.csv"
    source.write_text(CSV, encoding="utf-8")
    cells_seen: list[int] = []
    enqueue = pool.enqueue_job

    async def watched(*args: Any, **kwargs: Any) -> Any:
        cells_seen.append(await pool.hlen("fleet:people:inputs"))
        return await enqueue(*args, **kwargs)

    monkeypatch.setattr(pool, "enqueue_job", watched)
    assert await submit_file(pool, InputFile.open(source), "people", 2) == 3
    assert cells_seen == [5, 5, 5]


async def test_the_status_of_a_job_with_an_error_exits_1(pool: ArqRedis, redis_url: str,
                                                         ) -> None:
    """Before: a job stuck "submitting" with an error (a person must decide) exited 0."""
    await pool.set("fleet:job:j:state", "submitting")
    await pool.set("fleet:job:j:error", "job 'j' may already have been submitted")
    code, out, _ = await fleet("status", "j", redis_url=redis_url)
    assert code == 1
    assert json.loads(out)["error"] == "job 'j' may already have been submitted"
    await pool.set("fleet:job:j:state", "waiting")
    await pool.delete("fleet:job:j:error")
    assert (await fleet("status", "j", redis_url=redis_url))[0] == 0


@pytest.mark.parametrize("url", ["127.0.0.1:6379", "http://127.0.0.1:6379/0",
                                 "redis://127.0.0.1:port/0", "redis://127.0.0.1:6379/db0",
                                 "redis://:pw-s3cret", "redis://127.0.0.1/0?db=x"])
@pytest.mark.parametrize("argv", [["status", "r"], ["export", "r", "-o", "-"],
                                  ["submit", "--job", "https://h/a.csv", "--run", "r"],
                                  ["worker"]])
def test_a_redis_url_arq_cannot_read_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, url: str, argv: list[str],
) -> None:
    """Before: arq's RuntimeError or ValueError came out as a traceback (exit 1), one
    of them showing what may be a password."""
    monkeypatch.setenv("ASYNCSDK_API_KEY", "sk_test_k")
    monkeypatch.setenv("ASYNCSDK_USERNAME", "someone")
    for given, named in ((["--redis-url", url], "--redis-url"), ([], "FLEET_REDIS_URL")):
        monkeypatch.setenv("FLEET_REDIS_URL", url)
        out, err = io.StringIO(), io.StringIO()
        assert cli_main(["fleet", *argv, *given], stdout=out, stderr=err) == 2
        assert out.getvalue() == "" and err.getvalue().count("\n") == 1
        assert err.getvalue().startswith(f"asyncsdk: error: {named}: expected a Redis URL")
        assert "s3cret" not in err.getvalue()


@pytest.mark.parametrize(("unset", "named"), [
    (["ASYNCSDK_API_KEY"], "ASYNCSDK_API_KEY (or pass --api-key before 'fleet')"),
    (["ASYNCSDK_USERNAME"], "ASYNCSDK_USERNAME (or pass --username before 'fleet')"),
    (["ASYNCSDK_API_KEY", "ASYNCSDK_USERNAME"],
     "ASYNCSDK_API_KEY and ASYNCSDK_USERNAME (or pass --api-key/--username before 'fleet')"),
])
def test_a_worker_without_credentials_does_not_start(
    monkeypatch: pytest.MonkeyPatch, unset: list[str], named: str,
) -> None:
    """Before: no API key was a traceback once arq had started; no username started a
    worker whose every check failed."""
    monkeypatch.setenv("ASYNCSDK_API_KEY", "sk_test_k")
    monkeypatch.setenv("ASYNCSDK_USERNAME", "someone")
    for variable in unset:
        monkeypatch.delenv(variable)
    out, err = io.StringIO(), io.StringIO()
    assert cli_main(["fleet", "worker", "--redis-url", "redis://127.0.0.1:1/0"],
                    stdout=out, stderr=err) == 2
    assert err.getvalue() == f"asyncsdk: error: fleet worker: no credentials: set {named}\n"


def test_a_worker_without_the_services_url_does_not_start(redis_url: str) -> None:
    """Before: it started, and every check of every batch it took failed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCSDK_")}
    done = subprocess.run(
        [sys.executable, "-m", "asyncsdk", "--api-key", "sk_test_k", "--username", "me",
         "fleet", "worker", "--redis-url", redis_url],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "sk_test_k" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        "asyncsdk: error: no URL for the validation service: pass --base-url before "
        "'fleet', or set ASYNCSDK_BASE_URL")


async def test_a_label_holding_a_job_no_worker_took_yet_is_refused_for_a_file(
    pool: ArqRedis, redis_url: str, tmp_path: Path,
) -> None:
    """Before: only the job's saved handle (written once a worker submitted it) marked
    the label, so a file submitted under it meanwhile was taken: status and export then
    showed the file's addresses, and the job went on out of sight."""
    source = tmp_path / "a.txt"
    source.write_text("ann@example.com\n")
    code, _, _ = await fleet("submit", "--job", "https://files.example/a.csv", "--run", "x",
                             redis_url=redis_url)
    assert code == 0
    code, _, err = await fleet("submit", str(source), "--run", "x", redis_url=redis_url)
    assert (code, err) == (2, "asyncsdk: error: run 'x' already holds a file job: choose "
                              "another --run\n")
    assert not await pool.exists("fleet:x:total", "fleet:x:meta")


async def test_a_label_holds_one_job_url(pool: ArqRedis, redis_url: str) -> None:
    """Before: another URL under a job's label said "submitted to the fleet", and was
    dropped (arq kept the first job's id; a later run found the first job's handle)."""
    first = ("submit", "--job", "https://files.example/a.csv", "--run", "x")
    assert await fleet(*first, redis_url=redis_url) == (
        0, "", "job x: submitted to the fleet\n")
    assert await fleet(*first, redis_url=redis_url) == (
        0, "", "job x: already submitted to the fleet (not enqueued again)\n")
    code, _, err = await fleet("submit", "--job", "https://files.example/b.csv", "--run", "x",
                               redis_url=redis_url)
    assert (code, err) == (2, "asyncsdk: error: run 'x' already holds a file job of another "
                              "URL: choose another --run\n")
    assert await pool.zcard("arq:queue") == 1


async def test_a_failed_job_submitted_again_is_queued_for_status(
    pool: ArqRedis, redis_url: str,
) -> None:
    """Before: its state was deleted, so until a worker took it ``status`` said there was
    no such run (exit 2)."""
    async with Sandbox() as sb, sb.client() as client:
        url = f"{sb.base_url}/files/none.csv"  # the service cannot download it
        assert (await fleet("submit", "--job", url, "--run", "j", redis_url=redis_url))[0] == 0
        with pytest.raises(asyncsdk.FileNotDownloadableError):  # as a worker runs it
            await submit_job(worker(client, pool, 1), "j", url)
        code, out, _ = await fleet("status", "j", redis_url=redis_url)
        assert code == 1 and json.loads(out)["state"] == "failed"
        code, _, err = await fleet("submit", "--job", url, "--run", "j", redis_url=redis_url)
        assert (code, err) == (0, "job j: submitted to the fleet\n")
        code, out, _ = await fleet("status", "j", redis_url=redis_url)
    assert code == 0
    assert json.loads(out) == {"run": "j", "kind": "job", "state": "queued", "total": 0,
                               "done": 0, "left": 0, "error": None}
