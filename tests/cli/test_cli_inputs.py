"""The files ``check-many`` reads and writes: an input it cannot read as the person
meant (an encoding, a header, broken CSV) or an output it cannot use is refused with one
line naming the file and the line, before anything is sent (and paid for)."""

from __future__ import annotations

import codecs
import csv
from pathlib import Path

import pytest
from cli_support import checked, read_rows, run, write_people

from asyncsdk.testing import Sandbox

COLUMNS = ["row", "email", "verdict", "role", "error_type", "error", "attempted", "name"]




def assert_refused(code: int, err: str, *words: str) -> None:
    """Exit 2 with one line (no traceback) holding every one of ``words``."""
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


LATIN1_MID_FILE = ("email,name\nann@example.com,Ann\nbob@example.com,Bob\n"
                   "jose@example.com,Jos\xe9\n").encode("latin-1")


@pytest.mark.parametrize(("data", "line"), [
    (LATIN1_MID_FILE, "line 4"),
    ("email,name\nann@example.com,Ann\n".encode("utf-16-le"), "line 1"),  # no BOM
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x80", "line 1"),
    (b"email\nann@example.com\nb\xffb@example.com\n", "line 3"),
], ids=["latin-1", "utf-16-without-bom", "binary", "bad-byte"])
def test_an_input_that_is_not_text_is_one_line_naming_the_line(
    server: Sandbox, tmp_path: Path, data: bytes, line: str
) -> None:
    (tmp_path / "in.csv").write_bytes(data)
    code, _, err = run("check-many", "in.csv", "-o", "out.csv")
    assert_refused(code, err, "in.csv", line)
    assert checked(server) == [] and not (tmp_path / "out.csv").exists()


def test_utf16_with_a_byte_order_mark_is_read(server: Sandbox, tmp_path: Path) -> None:
    """What a spreadsheet saves as "Unicode text": UTF-16 with a BOM, tab-separated."""
    text = "E-mail Address\tName\r\nann@example.com\tAnn\r\nbob@example.com\tBöb\r\n"
    (tmp_path / "in.txt").write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    code, _, err = run("check-many", "in.txt", "-o", "out.csv")
    assert code == 0, err
    assert sorted(checked(server)) == ["ann@example.com", "bob@example.com"]
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: r["row"])
    assert [(r["email"], r["name"]) for r in rows] == [("ann@example.com", "Ann"),
                                                      ("bob@example.com", "Böb")]


@pytest.mark.parametrize("header", ["E-mail,Name", "email;name", "EMAIL\tName",
                                    "Email Address,name", "Mail"])
def test_a_header_names_the_email_column_in_common_ways(
    server: Sandbox, tmp_path: Path, header: str
) -> None:
    delimiter = next((d for d in ";\t," if d in header), ",")
    with (tmp_path / "in.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        handle.write(header + "\n")
        writer.writerows([["ann@example.com", "Ann"], ["bob@example.com", "Bob"]])
    code, _, err = run("check-many", "in.csv", "-o", "out.csv")
    assert code == 0, err
    assert sorted(checked(server)) == ["ann@example.com", "bob@example.com"]  # not lines
    rows = sorted(read_rows(tmp_path / "out.csv"), key=lambda r: r["row"])
    assert [r["email"] for r in rows] == ["ann@example.com", "bob@example.com"]
    if "name" in header.lower():
        assert [r["name"] for r in rows] == ["Ann", "Bob"]


@pytest.mark.parametrize(("first", "words"), [
    ("address,name", ["line 1", "'address', 'name'", "email"]),
    ("Adresse;Nom", ["line 1", "'Adresse', 'Nom'"]),
    ("ann@example.com,Ann", ["line 1", "header"]),
], ids=["unknown-header", "unknown-header-semicolons", "no-header"])
def test_columns_without_an_email_column_are_refused(
    server: Sandbox, tmp_path: Path, first: str, words: list[str]
) -> None:
    delimiter = ";" if ";" in first else ","
    (tmp_path / "in.csv").write_text(
        f"{first}\nbob@example.com{delimiter}Bob\ncat@example.com{delimiter}Cat\n")
    code, _, err = run("check-many", "in.csv", "-o", "out.csv")
    assert_refused(code, err, "in.csv", *words)
    assert checked(server) == []  # no whole line was sent (and paid) as an address


def test_an_unclosed_quote_is_refused_naming_its_line(server: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text('email,name\nann@example.com,Ann\n'
                                     'bob@example.com,"Bob\ncat@example.com,Cat\n')
    code, _, err = run("check-many", "in.csv", "-o", "out.csv")
    assert_refused(code, err, "in.csv", "line 3", "quote")
    assert checked(server) == []


def test_a_cell_over_the_csv_limit_is_refused(server: Sandbox, tmp_path: Path) -> None:
    big = "x" * (csv.field_size_limit() + 1)
    (tmp_path / "in.csv").write_text(f"email,name\nann@example.com,{big}\n")
    code, _, err = run("check-many", "in.csv", "-o", "out.csv")
    assert_refused(code, err, "in.csv", "line 2", "characters")
    assert checked(server) == []


def test_an_input_that_goes_bad_during_the_run_keeps_the_rows_and_says_to_fix_it(
    server: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad line found only while checking (the file changed after it was read): the
    rows of the addresses before it are kept, and the hint says to fix the file first
    (a resume alone would stop at the same line)."""
    from asyncsdk.cli.inputs import InputFile

    source = tmp_path / "in.txt"
    source.write_bytes(b"ann@example.com\nbob@example.com\ncat\xe9@example.com\n")
    monkeypatch.setattr(InputFile, "open", classmethod(lambda cls, path: cls(path, count=3)))
    code, _, err = run("check-many", "in.txt", "-o", "out.csv", "--concurrency", "1")
    assert code == 2, err
    assert "in.txt, line 3" in err and "fix in.txt" in err and "--resume" in err, err
    assert "Traceback" not in err
    assert sorted(r["email"] for r in read_rows(tmp_path / "out.csv")) == [
        "ann@example.com", "bob@example.com"]


def test_resume_refuses_an_output_that_is_not_utf8(server: Sandbox, tmp_path: Path) -> None:
    write_people(tmp_path / "people.csv", 3)
    output = tmp_path / "out.csv"
    output.write_bytes(",".join(COLUMNS).encode() + b"\r\n1,person0@example.com,Valid,"
                       b"False,,,True,P\xe9rson 0\r\n")
    code, _, err = run("check-many", "people.csv", "-o", "out.csv", "--resume")
    assert_refused(code, err, "out.csv", "line 2", "UTF-8")
    assert checked(server) == []


def test_resume_refuses_rows_that_the_input_does_not_have(
    server: Sandbox, tmp_path: Path
) -> None:
    write_people(tmp_path / "people.csv", 6)
    assert run("check-many", "people.csv", "-o", "out.csv")[0] == 0
    before = (tmp_path / "out.csv").read_bytes()
    write_people(tmp_path / "people.csv", 4)  # the same input, shortened
    code, _, err = run("check-many", "people.csv", "-o", "out.csv", "--resume")
    assert_refused(code, err, "out.csv", "row 5", "another input")
    assert len(checked(server)) == 6
    assert (tmp_path / "out.csv").read_bytes() == before


def test_resume_checks_again_a_last_row_torn_in_its_last_cell(
    server: Sandbox, tmp_path: Path
) -> None:
    people = write_people(tmp_path / "people.csv", 3)
    output = tmp_path / "out.csv"
    with output.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerow(["1", "person0@example.com", "Valid", "False", "", "", "True",
                         "Person 0"])
        handle.write("2,person1@example.com,Valid,False,,,True,Pers")  # cut: no line end
    code, _, err = run("check-many", "people.csv", "-o", "out.csv", "--resume")
    assert code == 0, err
    assert sorted(checked(server)) == ["person1@example.com", "person2@example.com"]
    rows = sorted(read_rows(output), key=lambda r: r["row"])
    assert [(r["email"], r["name"]) for r in rows] == [(e, n) for e, n in people]


@pytest.mark.parametrize("flag", ["--overwrite", "--resume"])
def test_the_input_is_never_the_output(server: Sandbox, tmp_path: Path, flag: str) -> None:
    write_people(tmp_path / "same.csv", 3)
    before = (tmp_path / "same.csv").read_bytes()
    code, _, err = run("check-many", "same.csv", "-o", "./same.csv", flag)
    assert_refused(code, err, "input file")
    assert (tmp_path / "same.csv").read_bytes() == before
    assert checked(server) == []


@pytest.mark.parametrize(("output", "words"), [
    ("missing/out.csv", ["no such directory", "missing"]),
    (".", ["is a directory"]),
], ids=["missing-directory", "directory"])
def test_an_output_that_cannot_be_written_is_a_usage_error(
    server: Sandbox, tmp_path: Path, output: str, words: list[str]
) -> None:
    write_people(tmp_path / "people.csv", 3)
    code, _, err = run("check-many", "people.csv", "-o", output)
    assert_refused(code, err, *words)
    assert checked(server) == []


def test_an_input_that_is_a_directory_says_so(server: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    code, _, err = run("check-many", "folder", "-o", "out.csv")
    assert_refused(code, err, "folder", "is a directory")
