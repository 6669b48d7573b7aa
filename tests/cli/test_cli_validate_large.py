"""``asyncsdk --sandbox validate`` (the README's first command) on a list far over
64 KiB: every address is validated and written, once (issue 38, item 2: the sandbox
read the hosted file cut, and the command reported 4,818 of 6,000)."""

from __future__ import annotations

from pathlib import Path

from cli_support import read_rows, run

COUNT = 20_000


def test_a_list_over_64_kib_is_validated_whole(tmp_path: Path) -> None:
    source = tmp_path / "emails.csv"
    emails = [f"user{i}@example.com" for i in range(COUNT)]
    source.write_text("email,name\n" + "".join(f"{e},User {i}\n" for i, e in enumerate(emails)))
    assert source.stat().st_size > 8 * 64 * 1024
    output = tmp_path / "results.csv"
    code, out, err = run("--sandbox", "validate", str(source), "-o", str(output),
                         "--poll-interval", "0.01")
    assert code == 0, err
    assert f"{COUNT} addresses validated" in out
    rows = read_rows(output)
    assert [row["email"] for row in rows] == emails
    assert [row["name"] for row in rows] == [f"User {i}" for i in range(COUNT)]
