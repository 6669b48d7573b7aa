"""``validate`` leaves no job out of reach: interrupted or past its deadline it prints the
job id and the ``asyncsdk jobs`` command that finishes it, which works."""

from __future__ import annotations

import io
import json
import shlex
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import COMMAND, asyncsdk, environment, read_rows, start

from asyncsdk.cli.app import main
from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox

LIST = "email,name\nann@example.com,Ann\nx@mailinator.com,Xavier\nsales@example.org,Sales\n"


@pytest.fixture
def server() -> Iterator[Sandbox]:
    with threaded_sandbox(job_polls=10_000) as sb:  # jobs run until finished by the test
        yield sb


def printed_command(stderr: str) -> list[str]:
    """The ``asyncsdk ...`` command that the message on stderr says to run."""
    line = next(line for line in stderr.splitlines() if "run: asyncsdk" in line)
    words = shlex.split(line.split("run: ", 1)[1])
    assert words[0] == "asyncsdk"
    return words[1:]


def creates(sb: Sandbox) -> int:
    return sum(r.path.endswith("/jobs/create") for r in sb.requests)


def test_past_the_deadline_validate_prints_the_command_that_finishes_the_job(
    server: Sandbox, tmp_path: Path
) -> None:
    env = environment(server)
    url = server.host_file(LIST)
    late = asyncsdk("validate", url, "-o", "out.csv", "--deadline", "0.2",
                    "--poll-interval", "0.05", env=env, cwd=tmp_path)
    assert late.returncode == 1
    assert "job 1 submitted" in late.stderr and "Traceback" not in late.stderr
    follow_up = printed_command(late.stderr)
    assert follow_up == ["jobs", "wait", "1", "-o", "out.csv"]
    assert server.api_key not in late.stderr and server.username not in late.stderr
    assert not (tmp_path / "out.csv").exists()

    server.finish_job(1)
    done = asyncsdk(*follow_up, "--poll-interval", "0.01", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 addresses validated -> out.csv" in done.stdout
    rows = read_rows(tmp_path / "out.csv")
    assert [(r["email"], r["verdict"], r["role"], r["name"]) for r in rows] == [
        ("ann@example.com", "Valid", "False", "Ann"),
        ("x@mailinator.com", "Disposable", "False", "Xavier"),
        ("sales@example.org", "Valid", "True", "Sales")]
    assert creates(server) == 1  # finished, not submitted (and paid) again


def test_interrupted_validate_prints_the_job_id_and_the_command(
    server: Sandbox, tmp_path: Path
) -> None:
    url = server.host_file(LIST)
    with start("--base-url", server.base_url, "validate", url, "-o", "out.csv",
               "--poll-interval", "0.05", env=environment(
                   ASYNCSDK_API_KEY=server.api_key, ASYNCSDK_USERNAME=server.username),
               cwd=tmp_path) as run:
        assert run.stderr is not None
        assert run.stderr.readline().strip() == "job 1 submitted"
        run.send_signal(signal.SIGINT)
        _, rest = run.communicate(timeout=30)
    assert run.returncode == 130
    assert printed_command(rest) == ["--base-url", server.base_url, "jobs", "wait", "1",
                                     "-o", "out.csv"]


def test_jobs_status_rows_and_download(server: Sandbox, tmp_path: Path) -> None:
    env = environment(server)
    url = server.host_file(LIST)
    late = asyncsdk("validate", url, "-o", "x.csv", "--deadline", "0", env=env, cwd=tmp_path)
    assert late.returncode == 1
    status = asyncsdk("jobs", "status", "1", env=env)
    assert (status.returncode, status.stdout) == (0, "processing\n")
    early = asyncsdk("jobs", "download", "1", "-o", "early.csv", env=env, cwd=tmp_path)
    assert early.returncode == 1 and "Processing" in early.stderr
    server.finish_job(1)
    assert asyncsdk("jobs", "status", "1", env=env).stdout == "success\n"
    rows = asyncsdk("jobs", "rows", "1", env=env)
    assert rows.returncode == 0
    assert [json.loads(line)["email"] for line in rows.stdout.splitlines()] == [
        "ann@example.com", "x@mailinator.com", "sales@example.org"]
    got = asyncsdk("jobs", "download", "1", "-o", "res.csv", env=env, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert [r["verdict"] for r in read_rows(tmp_path / "res.csv")] == [
        "Valid", "Disposable", "Valid"]
    unknown = asyncsdk("jobs", "status", "99", env=env)
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1
    assert creates(server) == 1


def test_jobs_needs_a_job_id() -> None:
    import subprocess

    done = subprocess.run([*COMMAND, "jobs", "wait", "abc"], capture_output=True,
                          text=True, check=False, env=environment())
    assert done.returncode == 2 and "JOB_ID" in done.stderr


@pytest.mark.parametrize("flag", [("--poll-interval", "0"), ("--deadline", "-1"),
                                  ("--deadline", "nan"), ("--timeout", "0")])
def test_bad_wait_flags_are_refused_before_a_job_is_paid_for(
    server: Sandbox, tmp_path: Path, flag: tuple[str, str]
) -> None:
    name, value = flag
    words = ["validate", server.host_file(LIST), "-o", "out.csv", name, value]
    if name == "--timeout":
        words = [name, value, *words[:-2]]
    done = asyncsdk(*words, env=environment(server), cwd=tmp_path)
    assert done.returncode == 2 and name in done.stderr
    assert creates(server) == 0


def test_the_printed_command_never_carries_a_secret(server: Sandbox, tmp_path: Path) -> None:
    url = server.host_file(LIST)
    base = server.base_url.replace("http://", f"http://{server.username}:pw@")
    done = asyncsdk("--api-key", server.api_key, "--username", server.username,
                    "--base-url", base, "validate", url, "-o", "o.csv", "--deadline", "0",
                    env=environment(), cwd=tmp_path)
    assert done.returncode == 1 and "jobs wait 1" in done.stderr
    assert server.api_key not in done.stderr and server.username not in done.stderr
    assert "pw" not in done.stderr


@pytest.mark.parametrize(("output", "words"), [
    ("missing/out.csv", ["no such directory"]),
    (".", ["is a directory"]),
    ("exists.csv", ["exists", "--overwrite"]),
], ids=["missing-directory", "directory", "existing-file"])
def test_validate_checks_the_output_before_the_job_is_paid_for(
    server: Sandbox, tmp_path: Path, output: str, words: list[str]
) -> None:
    (tmp_path / "exists.csv").write_text("keep me\n")
    done = asyncsdk("validate", server.host_file(LIST), "-o", output, env=environment(server),
                    cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert all(word in done.stderr for word in words), done.stderr
    assert creates(server) == 0
    assert (tmp_path / "exists.csv").read_text() == "keep me\n"


def test_jobs_download_refuses_an_existing_output_without_overwrite(
    server: Sandbox, tmp_path: Path
) -> None:
    env = environment(server)
    assert asyncsdk("validate", server.host_file(LIST), "-o", "x.csv", "--deadline", "0",
                    env=env, cwd=tmp_path).returncode == 1
    server.finish_job(1)
    (tmp_path / "res.csv").write_text("keep me\n")
    refused = asyncsdk("jobs", "download", "1", "-o", "res.csv", env=env, cwd=tmp_path)
    assert refused.returncode == 2 and "--overwrite" in refused.stderr
    assert (tmp_path / "res.csv").read_text() == "keep me\n"
    done = asyncsdk("jobs", "download", "1", "-o", "res.csv", "--overwrite", env=env,
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(read_rows(tmp_path / "res.csv")) == 3


def test_an_output_that_fails_after_the_job_exists_prints_the_command_to_finish_it(
    server: Sandbox, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    env = environment(server)
    with start("validate", server.host_file(LIST), "-o", "sub/out.csv", "--poll-interval",
               "0.01", env=env, cwd=tmp_path) as run:
        assert run.stderr is not None
        assert run.stderr.readline().strip() == "job 1 submitted"
        (tmp_path / "sub").rmdir()  # the folder of the output goes away meanwhile
        server.finish_job(1)
        _, err = run.communicate(timeout=30)
    assert run.returncode == 1, err
    assert "Traceback" not in err and "sub/out.csv" in err and ".part" not in err
    follow_up = printed_command(err)
    assert follow_up == ["jobs", "download", "1", "-o", "sub/out.csv"]
    (tmp_path / "sub").mkdir()
    done = asyncsdk(*follow_up, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(read_rows(tmp_path / "sub" / "out.csv")) == 3
    assert creates(server) == 1


def test_sigterm_stops_validate_like_ctrl_c(server: Sandbox, tmp_path: Path) -> None:
    with start("validate", server.host_file(LIST), "-o", "out.csv", "--poll-interval",
               "0.05", env=environment(server), cwd=tmp_path) as run:
        assert run.stderr is not None
        assert run.stderr.readline().strip() == "job 1 submitted"
        run.send_signal(signal.SIGTERM)
        _, rest = run.communicate(timeout=30)
    assert run.returncode == 143, rest
    assert printed_command(rest) == ["jobs", "wait", "1", "-o", "out.csv"]
    assert "SIGTERM" in rest and "Traceback" not in rest


class _CtrlCAfter(io.StringIO):
    """stderr that presses Ctrl-C the moment ``text`` is written to it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def write(self, s: str) -> int:
        written = super().write(s)
        if self.text in s:
            signal.raise_signal(signal.SIGINT)
        return written


def test_ctrl_c_right_after_the_job_id_still_prints_the_command_that_finishes_it(
    server: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C at the worst moment: as ``job 1 submitted`` is printed, before the wait.
    On Python 3.10 the KeyboardInterrupt left from there, and the command that finishes
    the job was never printed (the load-dependent failure of issue 32); the command now
    cancels itself at its next await on every Python."""
    monkeypatch.chdir(tmp_path)
    for name, value in (("API_KEY", server.api_key), ("USERNAME", server.username)):
        monkeypatch.setenv(f"ASYNCSDK_{name}", value)
    err = _CtrlCAfter("job 1 submitted")
    code = main(["--base-url", server.base_url, "validate", server.host_file(LIST), "-o",
                 "out.csv", "--poll-interval", "0.05"], stdout=io.StringIO(), stderr=err)
    assert code == 130, err.getvalue()
    assert printed_command(err.getvalue()) == ["--base-url", server.base_url, "jobs",
                                               "wait", "1", "-o", "out.csv"]
