"""What a person at a terminal expects of a command: a progress bar, quiet pipes, one-line
errors with conventional exit codes, --version, help for every flag, a summary that adds
up."""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest
from cli_support import COMMAND, asyncsdk, environment, run

from asyncsdk.cli.app import build_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_stdout_closed_early_exits_quietly() -> None:
    # `asyncsdk ... | head`: the reader goes away before the command writes.
    with subprocess.Popen([*COMMAND, "--sandbox", "contacts", "list"], env=environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        assert run.stdout is not None and run.stderr is not None
        run.stdout.close()
        err = run.stderr.read()
        code = run.wait(timeout=60)
    assert err == b""
    assert code == 141  # 128 + SIGPIPE, as a shell reports for a program killed by it


def test_a_busy_port_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = asyncsdk("sandbox", "--port", str(busy.getsockname()[1]), env=environment())
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--port" in done.stderr and "Traceback" not in done.stderr


def test_version() -> None:
    import asyncsdk as sdk

    done = asyncsdk("--version", env=environment())
    assert done.returncode == 0
    assert done.stdout.startswith(f"asyncsdk {sdk.__version__} ")


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += parsers(sub)
    return found


def test_every_flag_and_argument_has_help() -> None:
    missing = [
        f"{p.prog}: {'/'.join(a.option_strings) or a.dest}"
        for p in parsers(build_parser()) for a in p._actions
        if not isinstance(a, argparse._SubParsersAction) and not (a.help or "").strip()
    ]
    assert missing == []



def test_missing_files_are_usage_errors(tmp_path: Path) -> None:
    code, _, err = run("--sandbox", "mail", "send", "--from", "a@example.com", "--to",
                       "b@example.org", "--subject", "Hi", "--html-file",
                       str(tmp_path / "none.html"))
    assert code == 2 and "no such file" in err
    code, _, err = run("--sandbox", "check-many", str(tmp_path / "none.csv"), "-o",
                       str(tmp_path / "o.csv"))
    assert code == 2 and "no such file" in err


def test_summary_shares_add_up_and_role_based_stands_apart(tmp_path: Path) -> None:
    code, out, _ = run("--sandbox", "validate", str(EXAMPLES / "emails.csv"), "-o",
                       str(tmp_path / "r.csv"), "--poll-interval", "0.01")
    assert code == 0
    lines = out.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("verdict"))) + 1:]
    shares = [float(m.group(1)) for x in table if (m := re.search(r"([\d.]+)%$", x))]
    assert sum(shares) == pytest.approx(100.0, abs=0.3)
    assert not any(x.startswith("role-based") and x.endswith("%") for x in table)
    assert any(x.startswith("role-based addresses: 26 ") for x in lines)


def test_a_progress_bar_on_a_terminal_and_none_elsewhere(tmp_path: Path) -> None:
    pty = pytest.importorskip("pty")
    source = tmp_path / "in.txt"
    source.write_text("".join(f"user{i}@example.com\n" for i in range(40)))
    piped = asyncsdk("--sandbox", "check-many", str(source), "-o", str(tmp_path / "a.csv"),
                     env=environment())
    assert piped.returncode == 0 and piped.stderr == ""  # not a terminal: nothing drawn
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen([*COMMAND, "--sandbox", "check-many", str(source), "-o",
                               str(tmp_path / "b.csv")], env=environment(),
                              stdout=subprocess.DEVNULL, stderr=follower) as proc:
            os.close(follower)
            drawn = b""
            while True:
                try:
                    piece = os.read(leader, 4096)
                except OSError:  # the terminal closed with the command
                    break
                if not piece:
                    break
                drawn += piece
            assert proc.wait(timeout=60) == 0
    finally:
        os.close(leader)
    assert b"40/40" in drawn and b"\r" in drawn


@pytest.mark.parametrize(("command", "before"), [
    (["validate"], "before submitting anything"),
    (["jobs", "wait"], "before waiting for the job"),
    (["jobs", "download"], "before downloading anything"),
])
def test_overwrite_help_names_what_the_command_does_first(
    command: list[str], before: str, capsys: pytest.CaptureFixture[str],
) -> None:
    # issue 38: jobs wait/download, which submit nothing, spoke of "submitting"
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    overwrite = shown[shown.index("--overwrite replace"):]
    assert overwrite.startswith("--overwrite replace an existing output file (without it, "
                                f"the command refuses one {before})")
