"""Defects an outside audit of the command line found as a shell user (one test each,
each failing on the code before its fix): every command whose reader goes away ends
quietly, ``mail send --html-file`` refuses a file it cannot use in one line, and
``check-many --overwrite`` keeps the old result file when nothing could be sent."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import (
    CHECK,
    COMMAND,
    asyncsdk,
    checked,
    environment,
    read_rows,
    run,
    start,
    wait_until,
)

from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox

ADDRESSES = "email,name\nann@example.com,Ann\nbob@example.org,Bob\n"
# More rows than a pipe holds (64 KiB): a command writing them meets its reader's end
MANY = [f"user{i}@example.com" for i in range(1500)]
MANY_CSV = "email,name\n" + "".join(f"{a},Name {i}\n" for i, a in enumerate(MANY))


@pytest.fixture
def finished_job() -> Iterator[tuple[Sandbox, int]]:
    """A sandbox in a thread holding one finished validation job, and its id."""
    with threaded_sandbox() as sb:
        done = asyncsdk("validate", sb.host_file(MANY_CSV), "-o", "-",
                        "--poll-interval", "0.01", env=environment(sb))
        assert done.returncode == 0, done.stderr
        yield sb, 1


def head_1(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, list[str]]:
    """``asyncsdk ARGS | head -1``: the reader of standard output goes away after its
    first line, while the command still writes; its exit status and stderr's lines."""
    with subprocess.Popen([*COMMAND, *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.readline()
        child.stdout.close()
        err = child.stderr.read()
        code = child.wait(timeout=60)
    return code, err.splitlines()


@pytest.mark.parametrize("args", [
    ["--sandbox", "check-many", "in.csv", "-o", "-"],
    ["--sandbox", "check-many", "in.csv", "-o", "-", "--dedupe"],
    ["--sandbox", "validate", "in.csv", "-o", "-"],
    ["--sandbox", "check", *MANY],
    ["jobs", "download", "1", "-o", "-"],
    ["jobs", "wait", "1", "-o", "-"],
    ["jobs", "rows", "1"],
], ids=lambda args: " ".join(args[:6]))
def test_a_reader_gone_away_ends_every_command_quietly(
    finished_job: tuple[Sandbox, int], tmp_path: Path, args: list[str]
) -> None:
    (tmp_path / "in.csv").write_text(MANY_CSV, encoding="utf-8")
    sb, _ = finished_job
    code, lines = head_1(*args, env=environment(sb), cwd=tmp_path)
    assert code == 141  # 128 + SIGPIPE, as for a program killed by it
    # `validate` says its job's id as soon as it is submitted; nothing else is said: no
    # "stopped" line, no command to run next, no traceback
    assert [line for line in lines if not line.startswith("job 1 submitted")] == []


@pytest.mark.parametrize(("content", "expected"), [
    (b"<p>caf\xe9</p>", ["line 1", "not UTF-8"]),
    (b"<p>ok</p>\n<p>\xff\xfe</p>", ["line 2", "not UTF-8"]),
], ids=["latin-1", "binary-on-line-2"])
def test_an_html_file_that_is_not_utf8_is_one_line_and_exit_2(
    tmp_path: Path, content: bytes, expected: list[str]
) -> None:
    (tmp_path / "body.html").write_bytes(content)
    done = asyncsdk("--sandbox", "mail", "send", "--from", "me@example.com", "--to",
                    "you@example.org", "--subject", "Hi", "--html-file", "body.html",
                    env=environment(), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()  # one line, no traceback
    assert "--html-file body.html" in line
    for part in expected:
        assert part in line


@pytest.mark.parametrize("name", ["missing.html", "."], ids=["missing", "directory"])
def test_an_html_file_that_cannot_be_read_names_the_flag(tmp_path: Path, name: str) -> None:
    done = asyncsdk("--sandbox", "mail", "send", "--from", "me@example.com", "--to",
                    "you@example.org", "--subject", "Hi", "--html-file", name,
                    env=environment(), cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert f"--html-file {name}:" in line


def test_an_html_file_keeps_its_text_without_the_byte_order_mark(tmp_path: Path) -> None:
    with threaded_sandbox() as sb:
        sb.verify_domain("example.com")
        (tmp_path / "body.html").write_bytes("\ufeff<p>Grüße</p>".encode())
        done = asyncsdk("mail", "send", "--from", "me@example.com", "--to",
                        "you@example.org", "--subject", "Hi", "--html-file", "body.html",
                        env=environment(sb), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        [sent] = [r for r in sb.requests if "mail" in r.path]
    html = next(v for v in (sent.json or sent.form or {}).values() if "<p>" in str(v))
    assert html == "<p>Grüße</p>"


@pytest.mark.parametrize("missing", ["ASYNCSDK_BASE_URL", "ASYNCSDK_USERNAME"])
@pytest.mark.parametrize("extra", [[], ["--dedupe"], ["--concurrency", "1"]],
                         ids=["plain", "dedupe", "one-at-a-time"])
def test_overwrite_keeps_the_old_result_when_nothing_could_be_sent(
    tmp_path: Path, missing: str, extra: list[str]
) -> None:
    (tmp_path / "in.csv").write_text(ADDRESSES, encoding="utf-8")
    old = (b"row,email,verdict,role,error_type,error,attempted,name\n"
           b"1,ann@example.com,Valid,False,,,True,Ann\n")
    (tmp_path / "out.csv").write_bytes(old)
    with threaded_sandbox() as sb:
        env = environment(sb)
        del env[missing]
        done = asyncsdk("check-many", "in.csv", "-o", "out.csv", "--overwrite", *extra,
                        env=env, cwd=tmp_path)
        assert not sb.requests  # nothing was sent
    assert done.returncode == 2
    assert (tmp_path / "out.csv").read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.csv"]


@pytest.mark.parametrize(("text", "line", "cells"), [
    ("email,name\nann@example.com,Ann,extra\n", 2, "3 cells where the header (line 1) has 2"),
    ("# list\nEmail;Name\r\nbob@example.org;\"two\nlines\"\r\nann@example.com;Ann;x;\n",
     5, "4 cells where the header (line 2) has 2"),
    ("mail\tcity\nann@example.com\tParis\nbob@example.org\tRome\tIT\n", 3,
     "3 cells where the header (line 1) has 2"),
], ids=["comma", "semicolon-after-multiline-cell", "tab-third-row"])
def test_a_cell_beyond_the_header_is_refused_naming_the_file_and_line(
    tmp_path: Path, text: str, line: int, cells: str
) -> None:
    (tmp_path / "in.csv").write_text(text, encoding="utf-8")
    done = asyncsdk("--sandbox", "check-many", "in.csv", "-o", "out.csv",
                    env=environment(), cwd=tmp_path)
    assert done.returncode == 2
    [message] = done.stderr.splitlines()
    assert message.startswith(f"asyncsdk: error: in.csv, line {line}: {cells}")
    assert not (tmp_path / "out.csv").exists()  # refused before anything was sent


def test_empty_cells_beyond_the_header_are_a_spreadsheet_s_and_fine(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("email,name\nann@example.com,Ann,,\n", encoding="utf-8")
    done = asyncsdk("--sandbox", "check-many", "in.csv", "-o", "-",
                    env=environment(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].endswith(",True,Ann")


WRITERS = {
    "validate": ["--sandbox", "validate", "in.csv", "-o", "{out}", "--overwrite"],
    "check-many": ["--sandbox", "check-many", "in.csv", "-o", "{out}", "--overwrite"],
    "check-many-new": ["--sandbox", "check-many", "in.csv", "-o", "{out}"],
}


@pytest.mark.parametrize("command", sorted(WRITERS))
@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling-link"])
def test_an_output_given_as_a_symbolic_link_is_written_through_it(
    tmp_path: Path, command: str, dangling: bool
) -> None:
    (tmp_path / "in.csv").write_text(ADDRESSES, encoding="utf-8")
    (tmp_path / "results").mkdir()
    target = tmp_path / "results" / "real.csv"
    if not dangling:
        target.write_text("old\n", encoding="utf-8")
    if not dangling and command == "check-many-new":
        pytest.skip("an existing file needs --overwrite")
    (tmp_path / "link.csv").symlink_to(target)
    args = [a.format(out="link.csv") for a in WRITERS[command]]
    done = asyncsdk(*args, env=environment(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link.csv").is_symlink()  # still a link, to the new result
    rows = target.read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("row,email,verdict") and len(rows) == 3
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["real.csv"]


def test_resume_through_a_symbolic_link_keeps_it_a_link(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text(ADDRESSES, encoding="utf-8")
    target = tmp_path / "real.csv"
    target.write_text("row,email,verdict,role,error_type,error,attempted,name\n"
                      "1,ann@example.com,Valid,False,,,True,Ann\n", encoding="utf-8")
    (tmp_path / "link.csv").symlink_to(target)
    done = asyncsdk("--sandbox", "check-many", "in.csv", "-o", "link.csv", "--resume",
                    env=environment(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "link.csv").is_symlink()
    assert len(target.read_text(encoding="utf-8").splitlines()) == 3


@pytest.mark.parametrize("command", ["validate", "check-many"])
def test_an_output_that_is_a_pipe_is_written_into_not_replaced(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "in.csv").write_text(ADDRESSES, encoding="utf-8")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # Held open for reading and writing (Linux: never blocks), so the command's open
    # does not wait for a reader; its few rows stay in the pipe's buffer until read.
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        args = [a.format(out="fifo") for a in WRITERS[command] if a != "--overwrite"]
        done = asyncsdk(*args, env=environment(), cwd=tmp_path)
        chunks = []
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(held, 65536):
                chunks.append(chunk)
    finally:
        os.close(held)
    received = [b"".join(chunks).decode("utf-8")]
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # not replaced by a regular file
    assert received[0].splitlines()[0].startswith("row,email,verdict")
    assert len(received[0].splitlines()) == 3


@pytest.mark.parametrize("interval", ["31", "45.5", "3600"])
@pytest.mark.parametrize("command", ["validate", "jobs wait"])
def test_a_poll_interval_past_the_longest_pause_is_taken_not_refused_once_paid(
    tmp_path: Path, interval: str, command: str
) -> None:
    # job_polls=0: the first status poll finds the job done, so no pause is waited
    with threaded_sandbox(job_polls=0) as sb:
        env = environment(sb)
        if command == "jobs wait":
            submitted = asyncsdk("validate", sb.host_file(ADDRESSES), "-o", "-",
                                 env=env, cwd=tmp_path)
            assert submitted.returncode == 0, submitted.stderr
            args = ["jobs", "wait", "1", "-o", "out.csv"]
        else:
            args = ["validate", sb.host_file(ADDRESSES), "-o", "out.csv"]
        done = asyncsdk(*args, "--poll-interval", interval, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "max_interval" not in done.stderr
    assert "2 addresses validated -> out.csv" in done.stdout


@pytest.mark.parametrize("second", ["link.csv", "sub/../out.csv", "{tmp}/out.csv"],
                         ids=["symbolic-link", "dot-dot", "absolute"])
def test_an_output_in_use_is_refused_however_the_second_run_names_it(
    server: Sandbox, tmp_path: Path, second: str
) -> None:
    (tmp_path / "in.csv").write_text("email\n" + "\n".join(MANY[:8]) + "\n",
                                     encoding="utf-8")
    (tmp_path / "sub").mkdir()
    output = tmp_path / "out.csv"
    output.write_text("", encoding="utf-8")
    (tmp_path / "link.csv").symlink_to(output)
    server.faults.delay(CHECK, 0.0, times=4)
    server.faults.delay(CHECK, 60.0, times=None)  # then every check is held
    args = ("check-many", "in.csv", "--concurrency", "2")
    with start(*args, "-o", "out.csv", env=environment(server), cwd=tmp_path) as first:
        wait_until(lambda: output.exists() and len(read_rows(output)) == 4
                   and len(checked(server)) == 6, "the first run's 4 rows, 2 checks held")
        # (were it let through, its checks would be held too: a short --timeout ends it)
        code, _, err = run("--timeout", "1", "--max-retries", "0", *args, "-o",
                           second.format(tmp=tmp_path), "--resume")
        assert code == 2, err
        assert f"in use by another run (pid {first.pid}" in err
        assert len(checked(server)) == 6  # the second run sent nothing
        first.kill()  # its held checks would be waited for
        first.communicate(timeout=60)
