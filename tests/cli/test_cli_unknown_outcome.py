"""A mail or a paid job whose answer never came may have gone through (issue 38, item 6):
the command says so, says how to check before running it again, and exits with 3, its
own status; a failure that surely sent nothing says nothing of the kind."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from cli_support import environment, run, start, wait_until
from helpers import refused_port

from asyncsdk.cli.app import build_parser
from asyncsdk.testing import Sandbox

MAIL = "/api/v1/mail/send/"
CREATE = "/api/v1/jobs/create"
SEND = ("mail", "send", "--from", "news@example.com", "--to", "ann@example.org",
        "--subject", "Hello", "--html", "<p>Hi</p>")


@pytest.fixture
def mail_server(server: Sandbox) -> Sandbox:
    server.verify_domain("example.com")
    return server


def test_a_mail_sent_whose_answer_was_lost_says_it_may_have_been_sent(
    mail_server: Sandbox,
) -> None:
    mail_server.faults.reset(MAIL, process=True)  # the mail goes out, its answer is lost
    code, out, err = run(*SEND)
    assert code == 3, err
    assert len(mail_server.outbox) == 1  # it was indeed sent
    assert out == "" and "Traceback" not in err
    assert "the mail may have been sent" in err
    assert "check with the recipient" in err and "may send it twice" in err


def test_a_mail_send_that_timed_out_says_it_may_have_been_sent(mail_server: Sandbox) -> None:
    mail_server.faults.delay(MAIL, 5.0)
    code, _, err = run("--timeout", "0.2", *SEND)
    assert code == 3, err
    lines = err.strip().splitlines()
    assert "timed out" in lines[0] and lines[0].startswith("asyncsdk: error: mail.send")
    assert lines[1].startswith("asyncsdk: the mail may have been sent")


def test_a_mail_answered_with_a_5xx_may_have_been_sent_too(mail_server: Sandbox) -> None:
    mail_server.faults.status(MAIL, 502)  # never retried: a proxy may have passed it on
    code, _, err = run(*SEND)
    assert code == 3, err
    assert "the mail may have been sent" in err


def test_a_mail_whose_answer_could_not_be_read_may_have_been_sent(
    mail_server: Sandbox,
) -> None:
    # The service answered (2xx): it may have sent the mail; exit 1 read as "not sent".
    mail_server.faults.invalid_json(MAIL)
    code, _, err = run(*SEND)
    assert code == 3, err
    assert "the mail may have been sent" in err and "Traceback" not in err


def test_a_mail_surely_never_sent_is_a_plain_failure(tmp_path: Path) -> None:
    with refused_port() as port:  # a port nobody listens on: connection refused
        code, _, err = run("--api-key", "k", "--username", "u", "--base-url",
                           f"http://127.0.0.1:{port}", "--max-retries", "0", *SEND)
    assert code == 1, err
    assert "may have been sent" not in err


def test_a_refused_mail_is_a_plain_failure(server: Sandbox) -> None:
    code, _, err = run(*SEND)  # the sender's domain is not verified: the service said no
    assert code == 1, err
    assert "may have been sent" not in err


def test_ctrl_c_while_a_mail_is_in_flight_says_it_may_have_been_sent(
    mail_server: Sandbox, tmp_path: Path,
) -> None:
    mail_server.faults.delay(MAIL, 60.0)
    with start(*SEND, env=environment(mail_server), cwd=tmp_path) as proc:
        wait_until(lambda: any(r.path == MAIL for r in mail_server.requests),
                   "the mail at the service")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "the mail may have been sent" in err and "interrupted" in err


def test_a_job_submitted_whose_answer_was_lost_says_it_may_have_been_started(
    server: Sandbox, tmp_path: Path,
) -> None:
    url = server.host_file("email\nann@example.com\n")
    server.faults.reset(CREATE, process=True)
    code, _, err = run("validate", url, "-o", str(tmp_path / "out.csv"))
    assert code == 3, err
    assert len([r for r in server.requests if r.path == CREATE]) == 1  # sent once
    assert "a validation job may have been started, and charged" in err
    assert "may pay twice" in err
    assert "jobs wait" not in err  # there is no id to wait for
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("command", [["validate"], ["mail", "send"]])
def test_the_help_of_an_unsafe_command_tells_its_exit_status_3(
    command: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    assert "Exit status 3" in " ".join(capsys.readouterr().out.split())


def test_a_mail_answered_2xx_without_success_may_have_been_sent(
    mail_server: Sandbox,
) -> None:
    # A gateway's 200 {"status": "error"}: the command used to print it and exit 0, as
    # if the mail had gone out; neither success nor fail, it may have been sent.
    mail_server.faults.add(MAIL, "status", status=200,
                           body={"status": "error", "error": "Mail quota exceeded"})
    code, out, err = run(*SEND)
    assert code == 3, err
    assert out == "" and "Traceback" not in err
    assert '$.status: expected "success"' in err
    assert "the mail may have been sent" in err
    assert len([r for r in mail_server.requests if r.path == MAIL]) == 1  # sent once


@pytest.mark.parametrize("flag", ["--from", "--to"])
def test_an_address_with_a_line_separator_is_refused_unsent(
    mail_server: Sandbox, flag: str
) -> None:
    argv = list(SEND)  # it would end a header line of the mail: usage, nothing sent
    argv[argv.index(flag) + 1] = '"ann\u2028Bcc: x@example.net"@example.com'
    code, out, err = run(*argv)
    assert code == 2, err
    assert out == "" and "CR/LF" in err and "may have been sent" not in err
    assert not [r for r in mail_server.requests if r.path == MAIL]
