"""The command line, run as a user runs it: exit codes, output files, messages."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASYNCSDK_API_KEY", "ASYNCSDK_USERNAME", "ASYNCSDK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)



def test_without_credentials_says_how_to_set_them() -> None:
    code, out, err = run("check", "a@example.com")
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "ASYNCSDK_API_KEY" in lines[0] and "--sandbox" in lines[0]


def test_validate_needs_a_url_for_the_real_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCSDK_API_KEY", "k")
    code, _, err = run("--base-url", "http://127.0.0.1:9", "validate", "list.csv",
                       "-o", "x.csv")
    assert code == 2
    assert "URL" in err and "--sandbox" in err and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--base-url", "--api-key", "--username"])
@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_connection_flag_is_named_as_the_flag(
        flag: str, blank: str, capsys: pytest.CaptureFixture[str]) -> None:
    # The library names its Python argument (base_url); a shell user typed the flag.
    with pytest.raises(SystemExit) as exited:
        run("--api-key", "k", "--username", "u", flag, blank, "check", "a@example.com")
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"argument {flag}: expected a value" in err and "Traceback" not in err


def test_validate_end_to_end_in_the_sandbox(tmp_path: Path) -> None:
    output = tmp_path / "results.csv"
    code, out, err = run("--sandbox", "validate", str(EXAMPLES / "emails.csv"),
                         "-o", str(output), "--poll-interval", "0.01")
    assert code == 0, err
    with output.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    with (EXAMPLES / "emails.csv").open(newline="") as handle:
        inputs = [r["email"] for r in csv.DictReader(handle)]
    # The result schema of check-many (issue 14), in the input's order.
    assert [r["email"] for r in rows] == inputs
    assert [r["row"] for r in rows] == [str(i) for i in range(1, len(inputs) + 1)]
    verdicts = {r["verdict"] for r in rows}
    assert verdicts == {"Valid", "CatchAll", "Unknown", "Disposable", "Bounce"}
    assert f"{len(inputs)} addresses validated" in out
    for verdict in verdicts:
        assert verdict in out
    assert "role-based" in out
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob(".*"))


def test_check_prints_one_json_line_per_address() -> None:
    code, out, _ = run("--sandbox", "check", "ann@example.com", "sales@example.com",
                       "x@mailinator.com")
    assert code == 0
    results = {r["email"]: r for r in map(json.loads, out.splitlines())}
    assert results["ann@example.com"]["result"] == "Valid"
    assert results["sales@example.com"]["role"] is True
    assert results["x@mailinator.com"]["result"] == "Disposable"


def test_check_reports_a_bad_address_and_fails() -> None:
    code, out, _ = run("--sandbox", "check", "ann@example.com", "not-an-address")
    assert code == 1
    results = {r["email"]: r for r in map(json.loads, out.splitlines())}
    assert "error" in results["not-an-address"]
    assert results["ann@example.com"]["result"] == "Valid"


def test_check_many_writes_a_row_for_every_input(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    addresses = [f"user{i}@example.com" for i in range(40)] + ["broken", "info@example.org"]
    source.write_text("\n".join(addresses) + "\n")
    output = tmp_path / "out.csv"
    code, out, _ = run("--sandbox", "check-many", str(source), "-o", str(output),
                       "--concurrency", "5")
    assert code == 1  # one input failed
    with output.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(r["email"] for r in rows) == sorted(addresses)
    by_email = {r["email"]: r for r in rows}
    assert by_email["broken"]["error"]
    assert by_email["info@example.org"]["role"] == "True"
    assert (f"42 addresses -> {output}: 41 checked, 0 not attempted, 1 refused before "
            "sending") in out
    assert by_email["broken"]["attempted"] == "False"  # refused before sending


def test_list_and_get_print_json() -> None:
    code, out, _ = run("--sandbox", "contacts", "list")
    assert code == 0
    lists = json.loads(out)
    assert isinstance(lists, list) and lists and "id" in lists[0]
    code, out, _ = run("--sandbox", "leads", "get", "1")
    assert code == 0
    assert json.loads(out)["id"] == 1


def test_service_error_is_one_line_unless_debug() -> None:
    code, _, err = run("--sandbox", "leads", "get", "9999")
    assert code == 1
    assert err.strip().count("\n") == 0
    assert err.startswith("asyncsdk: error:") and "Not found" in err
    assert "Traceback" not in err
    code, _, err = run("--sandbox", "--debug", "leads", "get", "9999")
    assert code == 1 and "Traceback" in err


def test_mail_send_in_the_sandbox() -> None:
    code, out, err = run("--sandbox", "mail", "send", "--from", "news@example.com",
                         "--to", "ann@example.org", "--subject", "Hello", "--html", "<p>Hi</p>")
    assert code == 0, err
    sent = json.loads(out)
    assert sent["status"] == "success" and sent["message"] in ("Queued", "Send")


def test_module_entry_point_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "asyncsdk", "--help"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert "validate" in done.stdout and "check-many" in done.stdout


def test_standalone_sandbox_serves_until_interrupted() -> None:
    import signal
    import urllib.request

    with subprocess.Popen(
        [sys.executable, "-m", "asyncsdk", "sandbox", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # see cli_support
    ) as server:
        try:
            assert server.stdout is not None
            banner = [server.stdout.readline() for _ in range(4)]
            assert banner[0].startswith("asyncsdk sandbox listening on http://127.0.0.1:")
            base, key = banner[0].split()[-1], banner[1].split()[-1]
            url = f"{base}/api/v1/contact/?api_key={key}"
            with urllib.request.urlopen(url) as answer:  # noqa: S310 - our own http URL
                assert answer.status == 200
                assert isinstance(json.loads(answer.read()), list)
            server.send_signal(signal.SIGINT)  # Ctrl-C
            assert server.wait(timeout=10) == 0
        finally:
            if server.poll() is None:
                server.kill()


def test_a_follow_up_command_keeps_sandbox_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: under ``--sandbox`` the printed ``--resume`` command left ``--sandbox``
    out, so copying it ran against the real service (or failed for credentials)."""
    import io

    from asyncsdk.cli import app as cli

    seen: list[str] = []

    async def run(args: object, env: object) -> int:
        seen.append(env.command("check-many", "in.csv", "--resume"))  # type: ignore[attr-defined]
        return 0

    monkeypatch.setattr(cli, "run", run)
    args = cli.build_parser().parse_args(["--sandbox", "check-many", "in.csv", "-o", "o.csv"])
    assert cli.dispatch(args, io.StringIO(), io.StringIO()) == 0
    assert seen == ["asyncsdk --sandbox check-many in.csv --resume"]


@pytest.mark.parametrize(("flags", "printed", "note"), [
    ([], "asyncsdk jobs wait 1", False),
    (["--base-url", "https://h.example/x"],
     "asyncsdk --base-url https://h.example/x jobs wait 1", False),
    (["--sandbox", "--base-url", "https://h.example"],
     "asyncsdk --sandbox --base-url https://h.example jobs wait 1", False),
    # a flag that may carry a secret is never printed: a note asks for the credentials
    (["--base-url", "https://me:pw@h.example"], "asyncsdk jobs wait 1", True),
    (["--base-url", "https://h.example/?api=k"], "asyncsdk jobs wait 1", True),
    (["--api-key", "k", "--username", "u"], "asyncsdk jobs wait 1", True),
])
def test_a_printed_command_repeats_the_global_flags_but_no_secret(
    flags: list[str], printed: str, note: bool
) -> None:
    from asyncsdk.cli.app import build_parser, make_environment

    args = build_parser().parse_args([*flags, "jobs", "wait", "1"])
    env = make_environment(args, io.StringIO(), io.StringIO())
    shown = env.command("jobs", "wait", "1")
    assert shown.startswith(printed)
    assert ("--api-key" in shown) is note  # the note names the flags, never a value
    assert "pw" not in shown and "api=k" not in shown
