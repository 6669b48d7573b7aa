"""The promises of ``check-many`` that a new user found broken (issue 28), one test each:
a torn last row (a quoted line end included) is checked again; a malformed result file
is refused in one line and left untouched; an output in use by another run is refused;
``-o -`` is standard output; the summary and the ``attempted`` column tell what was
sent; ``--dedupe`` checks each address once. And those of issue 38: ``--dedupe``
marks ``attempted`` exactly the addresses it sent; ``validate`` keeps the input's other
columns."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from cli_support import checked, environment, read_rows, run, start, wait_until

from asyncsdk import EmailRow, Verdict
from asyncsdk.cli.check import InOrder
from asyncsdk.cli.inputs import InputFile, InputRow
from asyncsdk.cli.join import InputJoin
from asyncsdk.cli.lock import lock_path
from asyncsdk.models.validation import CheckOutcome
from asyncsdk.testing import RateLimit, Sandbox

CHECK = "/api/v1/single/check"
COLUMNS = ["row", "email", "verdict", "role", "error_type", "error", "attempted", "name"]




def write_input(path: Path, people: list[tuple[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["email", "name"])
        writer.writerows(people)


PEOPLE = [(f"person{i}@example.com", f"First line {i}\nSecond line {i}") for i in range(3)]


def result_row(i: int) -> list[str]:
    email, name = PEOPLE[i]
    return [str(i + 1), email, "Valid", "False", "", "", "True", name]


def result_file(path: Path, *rows: list[str], tail: str = "") -> bytes:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
        handle.write(tail)
    return path.read_bytes()


# A torn last row is checked again, whatever byte the crash cut it at ----------------


@pytest.mark.parametrize("tail", [
    '2,person1@example.com,Valid,False,,,True,"First line 1\n',  # after a quoted \n
    '2,person1@example.com,Valid,False,,,True,"First line 1\r\n',  # after a quoted \r\n
    '2,person1@example.com,Valid,False,,,True,"First line 1\nSec',  # inside the 2nd line
    "2,person1@example.com,Valid,False,,,Tr",  # no line end
], ids=["quoted-lf", "quoted-crlf", "quoted-mid-line", "mid-cell"])
def test_resume_checks_again_a_last_row_torn_anywhere_even_after_a_quoted_line_end(
    server: Sandbox, tmp_path: Path, tail: str,
) -> None:
    write_input(tmp_path / "people.csv", PEOPLE)
    result_file(tmp_path / "out.csv", result_row(0), tail=tail)
    code, _, err = run("check-many", "people.csv", "-o", "out.csv", "--resume")
    assert code == 0, err
    assert sorted(checked(server)) == ["person1@example.com", "person2@example.com"]
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: r["row"])
    assert [(r["email"], r["name"]) for r in rows] == PEOPLE  # no name cut short


# A result file this command did not write is refused, untouched ----------------------


@pytest.mark.parametrize(("rows", "tail", "words"), [
    ([["\u00b2", *result_row(0)[1:]]], "", ["line 2", "'²' is not a row number"]),
    ([["0", *result_row(0)[1:]]], "", ["'0' is not a row number"]),
    ([[*result_row(0)[:6], "yes", result_row(0)[7]]], "", ["attempted 'yes'"]),
    ([result_row(0)[:5], result_row(1)], "", ["line 2", "5 cells where the header has 8"]),
    ([result_row(0)], '2,x@example.com,"Valid"x,False,,,True,n\n3,a,b\n', ["line 4"]),
], ids=["superscript-two", "row-zero", "attempted", "short-row-mid-file", "broken-quote"])
def test_resume_refuses_a_malformed_result_file_in_one_line_and_leaves_it_untouched(
    server: Sandbox, tmp_path: Path, rows: list[list[str]], tail: str, words: list[str],
) -> None:
    write_input(tmp_path / "people.csv", PEOPLE)
    before = result_file(tmp_path / "out.csv", *rows, tail=tail)
    code, out, err = run("check-many", "people.csv", "-o", "out.csv", "--resume")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "out.csv" in err and "not a result file of this command" in err
    for word in words:
        assert word in err, err
    assert (tmp_path / "out.csv").read_bytes() == before
    assert checked(server) == [] and out == ""


# One run at a time on an output ------------------------------------------------------


def test_an_output_in_use_by_another_run_is_refused_and_a_crashed_runs_lock_is_stale(
    server: Sandbox, tmp_path: Path,
) -> None:
    people = [(f"p{i}@example.com", f"P {i}") for i in range(40)]
    write_input(tmp_path / "people.csv", people)
    output = tmp_path / "out.csv"
    server.faults.delay(CHECK, 0.0, times=8)
    server.faults.delay(CHECK, 60.0, times=None)  # then every check is held
    args = ("check-many", "people.csv", "-o", "out.csv", "--concurrency", "4")
    with start(*args, env=environment(server), cwd=tmp_path) as first:
        wait_until(lambda: (len(read_rows(output)) if output.exists() else 0) == 8
                   and len(checked(server)) == 12,
                   "the first run's first 8 rows, and its next 4 checks held at the service")
        sent = len(checked(server))
        code, _, err = run(*args, "--resume")  # the same command again, by mistake
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"in use by another run (pid {first.pid}" in err
        assert len(checked(server)) == sent  # the second run sent nothing
        first.send_signal(signal.SIGKILL)  # a crash: the lock file stays behind
        first.communicate(timeout=30)
    assert lock_path(output).exists()
    server.faults.clear()
    code, _, err = run(*args, "--resume")  # the crashed run's lock is stale
    assert code == 0, err
    assert sorted(int(r["row"]) for r in read_rows(output)) == list(range(1, 41))
    assert not lock_path(output).exists()  # let go at the end


def test_the_lock_is_let_go_however_the_run_ends(server: Sandbox, tmp_path: Path) -> None:
    write_input(tmp_path / "people.csv", PEOPLE)
    server.faults.status(CHECK, 503, times=None)
    code, _, err = run("--max-retries", "0", "check-many", "people.csv", "-o", "out.csv")
    assert code == 1, err
    assert not lock_path(tmp_path / "out.csv").exists()
    (tmp_path / "people.csv").write_bytes(b"email\n\xff@example.com\n")  # now unreadable
    code, _, err = run("check-many", "people.csv", "-o", "out.csv", "--resume")
    assert code == 2, err
    assert not lock_path(tmp_path / "out.csv").exists()
    server.faults.clear()
    write_input(tmp_path / "people.csv", PEOPLE)
    assert run("check-many", "people.csv", "-o", "out.csv", "--resume")[0] == 0


# -o - is standard output ---------------------------------------------------------------


def test_dash_is_standard_output_and_the_summary_goes_to_stderr(
    server: Sandbox, tmp_path: Path,
) -> None:
    write_input(tmp_path / "people.csv", PEOPLE)
    code, out, err = run("check-many", "people.csv", "-o", "-")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert sorted((r["email"], r["name"]) for r in rows) == PEOPLE
    assert "3 addresses -> standard output: 3 checked" in err
    assert not (tmp_path / "-").exists() and os.listdir(tmp_path) == ["people.csv"]


def test_resume_with_dash_is_refused(server: Sandbox, tmp_path: Path) -> None:
    write_input(tmp_path / "people.csv", PEOPLE)
    code, out, err = run("check-many", "people.csv", "-o", "-", "--resume")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "-o -" in err and "standard output" in err
    assert checked(server) == []


# The summary and the attempted column say what was sent ------------------------------


def test_the_summary_tells_checked_not_attempted_and_refused_apart(
    server: Sandbox, tmp_path: Path,
) -> None:
    emails = ["u@example.com", "not-an-address", "x y@z.example",
              *(f"u{i}@example.com" for i in range(49))]
    (tmp_path / "in.txt").write_text("\n".join(emails) + "\n")
    server.faults.status(CHECK, 503, times=None)
    code, out, err = run("--max-retries", "0", "check-many", "in.txt", "-o", "out.csv",
                         "--concurrency", "1", "--max-consecutive-failures", "5")
    assert code == 1, err
    rows = {r["email"]: r for r in read_rows(tmp_path / "out.csv")}
    sent = checked(server)
    assert len(sent) == 6  # u@, then the streak of 5 failures that stopped it
    assert ("52 addresses -> out.csv: 6 checked, 44 not attempted, 2 refused before "
            "sending") in out
    assert {e for e, r in rows.items() if r["attempted"] == "True"} == set(sent)
    assert rows["not-an-address"]["attempted"] == "False"  # refused: never sent
    assert rows["not-an-address"]["error_type"] == "InvalidInputError"



def test_a_check_its_pace_held_back_past_its_budget_is_not_marked_attempted(
    server: Sandbox, tmp_path: Path,
) -> None:
    """A service that takes nothing more (its bucket spent, 429 + Retry-After): the
    checks the pace held until their budget ran out never left, and their own error says
    "not sent" (or that time ran out first). Before, each was written ``attempted`` True
    and counted as checked, as if the service had seen (and charged) it."""
    server.limits.set(RateLimit(rate=0, burst=3, retry_after=1.0))
    emails = [f"u{i}@example.com" for i in range(200)]
    (tmp_path / "in.txt").write_text("\n".join(emails) + "\n")
    code, out, err = run("--timeout", "1", "check-many", "in.txt", "-o", "out.csv")
    assert code == 1, err
    rows = read_rows(tmp_path / "out.csv")
    sent = set(checked(server))
    assert len(sent) < len(emails)  # some never left: the case at hand
    assert {r["email"] for r in rows if r["attempted"] == "True"} == sent
    assert (f"200 addresses -> out.csv: {len(sent)} checked, {200 - len(sent)} not "
            "attempted, 0 refused before sending") in out


def test_the_command_that_finishes_the_job_keeps_this_runs_settings(
    server: Sandbox, tmp_path: Path,
) -> None:
    """README: it "prints the command that finishes the job". Before, that command
    dropped ``--timeout``, ``--max-retries`` and ``--max-consecutive-failures``: the
    resume ran with the defaults (here: stopping after 20 failures, retrying each)."""
    (tmp_path / "in.txt").write_text("ann@example.com\nbob@example.com\n")
    server.faults.status(CHECK, 503, times=None)
    code, _, err = run("--timeout", "2.5", "--max-retries", "0", "check-many", "in.txt",
                       "-o", "out.csv", "--max-consecutive-failures", "0")
    assert code == 1, err
    assert ("run: asyncsdk --timeout 2.5 --max-retries 0 "
            "check-many in.txt -o out.csv --concurrency 64 --max-consecutive-failures 0 "
            "--resume") in err, err

# --dedupe --------------------------------------------------------------------------------


def test_dedupe_checks_each_address_once_and_writes_its_outcome_on_every_repeat(
    server: Sandbox, tmp_path: Path,
) -> None:
    emails = ["ann@example.com", "bob@mailinator.com", "ann@example.com", "ann@EXAMPLE.com",
              "ANN@example.com", "bob@Mailinator.COM", "nope"]
    (tmp_path / "in.txt").write_text("\n".join(emails) + "\n")
    code, out, err = run("check-many", "in.txt", "-o", "out.csv", "--dedupe")
    assert code == 1, err  # "nope" failed
    assert Counter(checked(server)) == Counter(
        ["ann@example.com", "bob@mailinator.com", "ANN@example.com"])  # each once
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: int(r["row"]))
    assert [r["email"] for r in rows] == emails  # every row, its own spelling
    assert [r["verdict"] for r in rows] == ["Valid", "Disposable", "Valid", "Valid", "Valid",
                                            "Disposable", ""]
    assert ("7 addresses -> out.csv: 3 checked, 0 not attempted, 1 refused before sending, "
            "3 duplicates not sent") in out
    # without --dedupe every row is sent, as before
    code, _, _ = run("check-many", "in.txt", "-o", "again.csv")
    assert len(checked(server)) == 3 + 6


def test_dedupe_marks_attempted_exactly_the_addresses_it_sent(
    server: Sandbox, tmp_path: Path,
) -> None:
    # issue 38: the repeats it did not send were marked attempted and counted as checked
    emails = ["ann@example.com", "ann@Example.com", "bob@example.com", "ann@example.com",
              "bob@example.com"]
    (tmp_path / "in.txt").write_text("\n".join(emails) + "\n")
    code, out, err = run("check-many", "in.txt", "-o", "out.csv", "--dedupe")
    assert code == 0, err
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: int(r["row"]))
    assert [r["attempted"] for r in rows] == ["True", "False", "True", "False", "False"]
    assert [r["verdict"] for r in rows] == ["Valid"] * 5  # each with its address's outcome
    assert Counter(checked(server)) == Counter(e for e, r in zip(emails, rows, strict=True)
                                               if r["attempted"] == "True")
    assert ("5 addresses -> out.csv: 2 checked, 0 not attempted, 0 refused before sending, "
            "3 duplicates not sent") in out
    # a resume keeps them all (final rows) and counts them the same way from the file
    code, out, err = run("check-many", "in.txt", "-o", "out.csv", "--dedupe", "--resume")
    assert code == 0, err
    assert len(checked(server)) == 2  # nothing sent again
    assert "2 checked, 0 not attempted, 0 refused before sending, 3 duplicates not sent" in out


def test_dedupe_repeats_of_a_failed_check_are_not_sent_and_a_resume_sends_the_address_once(
    server: Sandbox, tmp_path: Path,
) -> None:
    (tmp_path / "in.txt").write_text("ann@example.com\nann@example.com\nbob@example.com\n")
    server.faults.status(CHECK, 503, times=1)  # ann's check fails; bob's passes
    code, out, err = run("--max-retries", "0", "check-many", "in.txt", "-o", "out.csv",
                         "--dedupe", "--concurrency", "1")
    assert code == 1, err
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: int(r["row"]))
    assert [(r["attempted"], r["error_type"]) for r in rows] == [
        ("True", "ServerError"), ("False", "ServerError"), ("True", "")]
    assert "2 checked, 1 not attempted" in out  # the repeat: not sent, and no outcome
    code, out, err = run("check-many", "in.txt", "-o", "out.csv", "--dedupe", "--resume")
    assert code == 0, err
    assert checked(server) == ["ann@example.com", "bob@example.com", "ann@example.com"]
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: int(r["row"]))
    assert [(r["verdict"], r["attempted"]) for r in rows] == [
        ("Valid", "True"), ("Valid", "False"), ("Valid", "True")]
    assert "2 checked, 0 not attempted, 0 refused before sending, 1 duplicates not sent" in out


def test_dedupe_on_resume_takes_the_outcome_kept_in_the_file(
    server: Sandbox, tmp_path: Path,
) -> None:
    (tmp_path / "in.txt").write_text("ann@example.com\nbob@example.com\nann@Example.com\n")
    result_file(tmp_path / "out.csv",
                ["1", "ann@example.com", "Valid", "False", "", "", "True", ""])
    code, _, err = run("check-many", "in.txt", "-o", "out.csv", "--resume", "--dedupe")
    assert code == 0, err
    assert checked(server) == ["bob@example.com"]
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: int(r["row"]))
    assert [(r["email"], r["verdict"], r["attempted"]) for r in rows] == [
        ("ann@example.com", "Valid", "True"), ("bob@example.com", "Valid", "True"),
        ("ann@Example.com", "Valid", "False")]


@pytest.mark.parametrize("command", [["validate", "people.csv"], ["jobs", "download", "1"]])
def test_dash_is_standard_output_for_the_job_commands_too(
    server: Sandbox, tmp_path: Path, command: list[str],
) -> None:
    write_input(tmp_path / "people.csv", PEOPLE)
    server.settings.job_polls = 0
    if command[0] == "jobs":  # a finished job to download
        url = server.host_file((tmp_path / "people.csv").read_bytes())
        assert run("validate", url, "-o", "first.csv", "--poll-interval", "0.01")[0] == 0
    else:
        command[1] = server.host_file((tmp_path / "people.csv").read_bytes())
    code, out, err = run(*command, "-o", "-", "--poll-interval", "0.01") \
        if command[0] == "validate" else run(*command, "-o", "-")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert sorted((r["email"], r["name"]) for r in rows) == PEOPLE
    assert "3 addresses validated -> standard output" in err
    assert not (tmp_path / "-").exists()


# validate keeps the input's other columns (issue 38) -----------------------------------


def test_validate_of_a_local_file_keeps_the_inputs_other_columns(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text(
        "company,Email,name,notes\n"
        "Acme,ann@example.com,Ann,first\n"
        "Beta,,Nobody,no address: not a row\n"
        "Gamma,bob@mailinator.com,Bob,\"a, b\"\n"
        "Delta,ann@example.com,Ann again,second\n", encoding="utf-8")
    code, out, err = run("--sandbox", "validate", str(tmp_path / "in.csv"), "-o",
                         str(tmp_path / "out.csv"), "--poll-interval", "0.01")
    assert code == 0, err
    with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == [*COLUMNS, "company", "notes"]
        rows = list(reader)
    assert [(r["row"], r["email"], r["name"], r["company"], r["notes"], r["verdict"])
            for r in rows] == [
        ("1", "ann@example.com", "Ann", "Acme", "first", "Valid"),
        ("2", "bob@mailinator.com", "Bob", "Gamma", "a, b", "Disposable"),
        ("3", "ann@example.com", "Ann again", "Delta", "second", "Valid")]
    assert "3 addresses validated" in out


def test_validate_of_a_url_has_the_services_columns_only(
    server: Sandbox, tmp_path: Path,
) -> None:
    url = server.host_file("company,email,name\nAcme,ann@example.com,Ann\n")
    code, _, err = run("validate", url, "-o", "out.csv", "--poll-interval", "0.01")
    assert code == 0, err
    with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == COLUMNS  # the command never reads a URL's list
        assert [(r["row"], r["email"], r["name"]) for r in reader] == [
            ("1", "ann@example.com", "Ann")]


def test_a_result_address_the_input_lacks_is_numbered_after_the_inputs(
    tmp_path: Path,
) -> None:
    (tmp_path / "in.csv").write_text("email,company\nann@example.com,Acme\n")
    join = InputJoin(InputFile.open(tmp_path / "in.csv"))

    def result(email: str) -> EmailRow:
        return EmailRow(email=email, name="N", status=Verdict.VALID, role_based=False)

    assert join.row_of(result("ann@example.com")) == InputRow(1, "ann@example.com",
                                                              ("N", "Acme"))
    # the service rewrote it, or listed it twice: no input row left to join
    assert join.row_of(result("ann@example.com")) == InputRow(2, "ann@example.com", ("N", ""))
    assert join.row_of(result("Bob@x.example")) == InputRow(3, "Bob@x.example", ("N", ""))


def test_validate_of_a_file_the_check_many_reader_refuses_still_runs(tmp_path: Path) -> None:
    # columns without a header: the service takes the first as the address
    (tmp_path / "in.csv").write_text("ann@example.com,Ann\nbob@example.com,Bob\n")
    code, _, err = run("--sandbox", "validate", str(tmp_path / "in.csv"), "-o",
                       str(tmp_path / "out.csv"), "--poll-interval", "0.01")
    assert code == 0, err
    assert [(r["row"], r["email"], r["name"]) for r in read_rows(tmp_path / "out.csv")] == [
        ("1", "ann@example.com", "Ann"), ("2", "bob@example.com", "Bob")]


# check prints in argument order (issue 38) ----------------------------------------------


def test_check_prints_in_the_order_of_the_arguments(server: Sandbox) -> None:
    # issue 38: printed as they completed; "nope" is refused at once, before any answer
    server.faults.delay(CHECK, 0.2, times=None)
    emails = ["ann@example.com", "x@mailinator.com", "nope", "ann@example.com",
              "sales@example.com"]
    code, out, err = run("check", *emails)
    assert code == 1, err  # "nope" failed
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["email"] for line in lines] == emails
    assert [line.get("result") for line in lines] == ["Valid", "Disposable", None, "Valid",
                                                      "Valid"]
    assert "error" in lines[2]


def test_in_order_holds_an_answer_until_those_before_it_came_and_gives_back_the_rest() -> None:
    def outcome(email: str) -> CheckOutcome:
        return cast(CheckOutcome, SimpleNamespace(email=email))

    order = InOrder(["a@x.example", "b@x.example", "a@x.example", "c@x.example"])
    third, second = outcome("a@x.example"), outcome("b@x.example")
    assert order.ready(second) == []  # the first has not come
    assert order.ready(first := outcome("a@x.example")) == [first, second]
    assert order.ready(last := outcome("c@x.example")) == []
    assert order.rest() == [last]  # stopped before the third came: the rest, in order
    assert order.ready(third) == [third]
