"""``check-many`` run as a user runs it (a subprocess) against a sandbox of this process:
no paid answer is lost to Ctrl-C, --resume pays for nothing twice, configuration errors
and a service that is down stop early and say why."""

from __future__ import annotations

import csv
import signal
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import (
    asyncsdk,
    checked,
    environment,
    read_rows,
    start,
    wait_until,
    write_people,
)

from asyncsdk.testing import Sandbox
from asyncsdk.testing.plugin import threaded_sandbox

COLUMNS = ["row", "email", "verdict", "role", "error_type", "error", "attempted", "name"]


@pytest.fixture
def server() -> Iterator[Sandbox]:
    with threaded_sandbox() as sb:
        yield sb


def rows_written(path: Path) -> int:
    if not path.exists():
        return 0
    return max(path.read_text(encoding="utf-8").count("\n") - 1, 0)


def assert_rows_match_input(rows: list[dict[str, str]], people: list[tuple[str, str]]) -> None:
    for row in rows:
        email, name = people[int(row["row"]) - 1]
        assert (row["email"], row["name"]) == (email, name)  # the input's other columns kept


def test_ctrl_c_keeps_every_finished_row_and_resume_sends_only_the_rest(
    server: Sandbox, tmp_path: Path
) -> None:
    people = write_people(tmp_path / "people.csv", 300)
    output = tmp_path / "results.csv"
    server.faults.delay("/api/v1/single/check", 0.02, times=None)  # ~200 checks/s at 4
    args = ("check-many", "people.csv", "-o", "results.csv", "--concurrency", "4")
    env = environment(server)
    with start(*args, env=env, cwd=tmp_path) as run:
        wait_until(lambda: rows_written(output) >= 20, "the first rows in the output")
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    kept = read_rows(output)
    assert 20 <= len(kept) < 300
    assert list(kept[0]) == COLUMNS
    assert all(r["verdict"] == "Valid" and r["attempted"] == "True" for r in kept)
    assert_rows_match_input(kept, people)
    assert len({r["row"] for r in kept}) == len(kept)

    server.faults.clear()
    before = len(checked(server))
    done = asyncsdk(*args, "--resume", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    resent = checked(server)[before:]
    kept_emails = {r["email"] for r in kept}
    # Exactly the addresses the file lacked were sent, each once: nothing paid twice.
    assert Counter(resent) == Counter(e for e, _ in people if e not in kept_emails)
    final = read_rows(output)
    assert sorted(int(r["row"]) for r in final) == list(range(1, 301))
    assert_rows_match_input(final, people)
    assert "300 addresses -> results.csv: 300 checked, 0 not attempted" in done.stdout


def test_resume_of_a_finished_file_sends_nothing(server: Sandbox, tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 30)
    args = ("check-many", "people.csv", "-o", "out.csv")
    env = environment(server)
    assert asyncsdk(*args, env=env, cwd=tmp_path).returncode == 0
    assert len(checked(server)) == 30
    again = asyncsdk(*args, env=env, cwd=tmp_path)
    assert again.returncode == 2 and "--resume" in again.stderr  # never overwritten silently
    assert asyncsdk(*args, "--resume", env=env, cwd=tmp_path).returncode == 0
    assert len(checked(server)) == 30
    assert len(read_rows(tmp_path / "out.csv")) == 30


def test_resume_sends_again_what_failed_or_was_torn(server: Sandbox, tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 6)
    output = tmp_path / "out.csv"
    with output.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerow(["1", "person0@example.com", "Valid", "False", "", "", "True",
                         "Person 0"])
        writer.writerow(["2", "person1@example.com", "", "", "ServerError", "503", "True",
                         "Person 1"])
        writer.writerow(["3", "person2@example.com", "", "", "AuthenticationError", "no",
                         "False", "Person 2"])
        handle.write("4,person3@example.com,Val")  # a crash in mid-write
    done = asyncsdk("check-many", "people.csv", "-o", "out.csv", "--resume",
                    env=environment(server), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(checked(server)) == [f"person{i}@example.com" for i in range(1, 6)]
    assert sorted(int(r["row"]) for r in read_rows(output)) == [1, 2, 3, 4, 5, 6]


def test_resume_refuses_the_output_of_another_input(server: Sandbox, tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 5)
    env = environment(server)
    assert asyncsdk("check-many", "people.csv", "-o", "out.csv", env=env,
                    cwd=tmp_path).returncode == 0
    (tmp_path / "other.txt").write_text("x@example.com\ny@example.com\n")
    done = asyncsdk("check-many", "other.txt", "-o", "out.csv", "--resume", env=env,
                    cwd=tmp_path)
    assert done.returncode == 2 and "another" in done.stderr
    assert len(checked(server)) == 5


@pytest.mark.parametrize("missing", ["ASYNCSDK_BASE_URL", "ASYNCSDK_USERNAME"])
def test_a_configuration_error_is_one_line_and_sends_nothing(
    server: Sandbox, tmp_path: Path, missing: str
) -> None:
    write_people(tmp_path / "people.csv", 200)
    env = environment(server)
    del env[missing]
    done = asyncsdk("check-many", "people.csv", "-o", "out.csv", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert missing in done.stderr
    assert checked(server) == []
    assert not (tmp_path / "out.csv").exists()


def test_a_service_that_is_down_stops_the_run_early(tmp_path: Path) -> None:
    people = write_people(tmp_path / "people.csv", 200)
    with socket.socket() as closed:  # bound, never listening: every connect is refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        env = environment(ASYNCSDK_API_KEY="k", ASYNCSDK_USERNAME="u", ASYNCSDK_BASE_URL=url)
        done = asyncsdk("--max-retries", "0", "check-many", "people.csv", "-o", "out.csv",
                        "--concurrency", "2", "--max-consecutive-failures", "5",
                        env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert "stopped sending" in done.stderr and "--resume" in done.stderr
    rows = read_rows(tmp_path / "out.csv")
    assert sorted(int(r["row"]) for r in rows) == list(range(1, len(people) + 1))
    attempted = [r for r in rows if r["attempted"] == "True"]
    assert 5 <= len(attempted) <= 5 + 2  # the streak, and at most the checks in flight
    assert all(r["error_type"] == "APIConnectionError" for r in rows)
    assert all("consecutive" in r["error"] for r in rows if r["attempted"] == "False")


def test_check_many_and_validate_write_one_schema(server: Sandbox, tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 12)
    env = environment(server)
    url = server.host_file((tmp_path / "people.csv").read_bytes())
    server.settings.job_polls = 0
    many = asyncsdk("check-many", "people.csv", "-o", "many.csv", env=env, cwd=tmp_path)
    job = asyncsdk("validate", url, "-o", "job.csv", "--poll-interval", "0.01", env=env,
                   cwd=tmp_path)
    assert many.returncode == 0 and job.returncode == 0, many.stderr + job.stderr
    from_many, from_job = read_rows(tmp_path / "many.csv"), read_rows(tmp_path / "job.csv")
    assert list(from_many[0]) == list(from_job[0]) == COLUMNS

    def key(rows: list[dict[str, str]]) -> list[tuple[str, ...]]:
        return sorted((r["row"], r["email"], r["verdict"], r["role"], r["name"]) for r in rows)

    assert key(from_many) == key(from_job)


@pytest.mark.parametrize("flag", [("--concurrency", "0"), ("--concurrency", "x"),
                                  ("--max-consecutive-failures", "-1")])
def test_bad_numbers_are_refused_before_anything(
    server: Sandbox, tmp_path: Path, flag: tuple[str, str]
) -> None:
    write_people(tmp_path / "people.csv", 3)
    done = asyncsdk("check-many", "people.csv", "-o", "out.csv", *flag,
                    env=environment(server), cwd=tmp_path)
    assert done.returncode == 2 and flag[0] in done.stderr
    assert checked(server) == [] and not (tmp_path / "out.csv").exists()


def test_check_without_a_url_is_one_line_and_exit_2() -> None:
    done = asyncsdk("check", "ann@example.com", "bob@example.com",
                    env=environment(ASYNCSDK_API_KEY="k", ASYNCSDK_USERNAME="u"))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "ASYNCSDK_BASE_URL" in done.stderr


def test_after_an_authentication_failure_the_rest_waits_for_resume(
    server: Sandbox, tmp_path: Path
) -> None:
    write_people(tmp_path / "people.csv", 40)
    args = ("check-many", "people.csv", "-o", "out.csv", "--concurrency", "1")
    wrong = environment(server, ASYNCSDK_API_KEY="wrong-key")
    done = asyncsdk(*args, env=wrong, cwd=tmp_path)
    assert done.returncode == 1
    assert "--resume" in done.stderr and "wrong-key" not in done.stderr
    rows = read_rows(tmp_path / "out.csv")
    assert len(rows) == 40 and sum(r["attempted"] == "False" for r in rows) == 39
    assert len(checked(server)) == 1
    again = asyncsdk(*args, "--resume", env=environment(server), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(checked(server)) == 41
    assert all(r["verdict"] == "Valid" for r in read_rows(tmp_path / "out.csv"))


def test_every_input_column_is_kept_and_name_always_has_its_place(
    server: Sandbox, tmp_path: Path
) -> None:
    (tmp_path / "crm.csv").write_text(
        "id,Company,EMAIL,Name,row\n7,Acme,ann@example.com,Ann,x\n8,Bee,bob@example.com\n")
    (tmp_path / "plain.txt").write_text("# a list\nann@example.com\n\nbob@example.com\n")
    env = environment(server)
    for source, output in (("crm.csv", "crm-out.csv"), ("plain.txt", "plain-out.csv")):
        done = asyncsdk("check-many", source, "-o", output, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    crm = sorted(read_rows(tmp_path / "crm-out.csv"), key=lambda r: r["row"])
    assert list(crm[0]) == [*COLUMNS, "id", "Company", "input_row"]
    assert [(r["row"], r["email"], r["name"], r["id"], r["Company"], r["input_row"])
            for r in crm] == [("1", "ann@example.com", "Ann", "7", "Acme", "x"),
                              ("2", "bob@example.com", "", "8", "Bee", "")]
    plain = sorted(read_rows(tmp_path / "plain-out.csv"), key=lambda r: r["row"])
    assert list(plain[0]) == COLUMNS  # a plain list has the same columns as validate
    assert [(r["row"], r["email"], r["name"]) for r in plain] == [
        ("1", "ann@example.com", ""), ("2", "bob@example.com", "")]


def test_a_stop_on_failures_records_every_check_that_was_sent(
    server: Sandbox, tmp_path: Path
) -> None:
    """The checks in flight when the run of failures stops the input still finish and are
    written as attempted: nothing the service may have charged is recorded as unsent."""
    write_people(tmp_path / "people.csv", 60)
    server.faults.status("/api/v1/single/check", 503, times=3)  # the run of failures...
    server.faults.delay("/api/v1/single/check", 0.2, times=None)  # ...while others fly
    done = asyncsdk("--max-retries", "0", "check-many", "people.csv", "-o", "out.csv",
                    "--concurrency", "4", "--max-consecutive-failures", "3",
                    env=environment(server), cwd=tmp_path)
    assert done.returncode == 1 and "stopped sending" in done.stderr, done.stderr
    rows = read_rows(tmp_path / "out.csv")
    assert sorted(int(r["row"]) for r in rows) == list(range(1, 61))
    sent = Counter(checked(server))
    attempted = Counter(r["email"] for r in rows if r["attempted"] == "True")
    assert sent == attempted  # every address that reached the service, and only those
    assert any(r["verdict"] == "Valid" for r in rows)  # the ones in flight finished
    assert all("consecutive" in r["error"] for r in rows if r["attempted"] == "False")


def hold_after(server: Sandbox, answered: int, seconds: float) -> None:
    """The first ``answered`` checks are answered at once, every later one held
    ``seconds`` on the server (in flight, already received: paid for)."""
    server.faults.delay("/api/v1/single/check", 0.0, times=answered)
    server.faults.delay("/api/v1/single/check", seconds, times=None)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_first_ctrl_c_or_sigterm_writes_the_checks_in_flight(
    server: Sandbox, tmp_path: Path, signum: int, code: int
) -> None:
    """Interrupted while 4 checks are held at the service, the command waits for them
    and writes their rows: every address the service received is in the file, and the
    resume sends each other address once (nothing is paid for twice)."""
    people = write_people(tmp_path / "people.csv", 40)
    output = tmp_path / "results.csv"
    hold_after(server, 8, 1.0)
    args = ("check-many", "people.csv", "-o", "results.csv", "--concurrency", "4")
    env = environment(server)
    with start(*args, env=env, cwd=tmp_path) as run:
        wait_until(lambda: rows_written(output) == 8 and len(checked(server)) == 12,
                   "8 rows written and 4 checks held at the service")
        run.send_signal(signum)
        _, err = run.communicate(timeout=30)
    assert run.returncode == code, err
    kept = read_rows(output)
    assert Counter(r["email"] for r in kept) == Counter(checked(server))  # all 12
    assert "Traceback" not in err and "--resume" in err
    assert "stopping" in err  # it said that it waits for the checks in flight
    assert all(r["verdict"] == "Valid" for r in kept)
    assert_rows_match_input(kept, people)

    server.faults.clear()
    done = asyncsdk(*args, "--resume", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Counter(checked(server)) == Counter(e for e, _ in people)  # each paid once
    assert sorted(int(r["row"]) for r in read_rows(output)) == list(range(1, 41))


def test_a_second_ctrl_c_stops_at_once(server: Sandbox, tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 40)
    output = tmp_path / "results.csv"
    hold_after(server, 8, 60.0)  # the checks in flight would take a minute
    with start("check-many", "people.csv", "-o", "results.csv", "--concurrency", "4",
               env=environment(server), cwd=tmp_path) as run:
        assert run.stderr is not None
        wait_until(lambda: rows_written(output) == 8 and len(checked(server)) == 12,
                   "8 rows written and 4 checks held at the service")
        run.send_signal(signal.SIGINT)
        assert "stopping" in run.stderr.readline()
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=20)
    assert run.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err
    assert len(read_rows(output)) == 8  # the 4 held were given up: a resume sends them
