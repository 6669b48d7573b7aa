"""The sandbox's rate limit from the command line: ``asyncsdk sandbox --rate ...`` serves
with it, ``--sandbox --rate ...`` runs a command against it, and the flags are refused
where they cannot work."""

from __future__ import annotations

import io
import json
import signal
import socket
import urllib.error
import urllib.request

import pytest
from cli_support import environment, run, start

from asyncsdk.cli.app import build_parser, make_environment
from asyncsdk.cli.sandbox import rate_limit_of
from asyncsdk.testing import RateLimit


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASYNCSDK_API_KEY", "ASYNCSDK_USERNAME", "ASYNCSDK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def status_of(url: str) -> tuple[int, str | None]:
    """(status, Retry-After) of a GET."""
    try:
        with urllib.request.urlopen(url) as answer:  # noqa: S310 - our own http URL
            return answer.status, answer.headers.get("Retry-After")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Retry-After")


def test_the_sandbox_command_serves_with_the_limit() -> None:
    with start("sandbox", "--port", "0", "--rate", "0.001", "--burst", "2",
               "--no-retry-after", env=environment()) as server:
        try:
            assert server.stdout is not None
            banner = [server.stdout.readline() for _ in range(7)]
            assert banner[-1].strip() == (
                "rate limit per API key: 0.001/s, burst 2, 429 without Retry-After")
            base, key = banner[0].split()[-1], banner[1].split()[-1]
            url = f"{base}/api/v1/contact/?api_key={key}"
            assert [status_of(url) for _ in range(3)] == [(200, None), (200, None),
                                                          (429, None)]
            assert server.stdout.readline().split()[:4] == [
                "change", "it:", "PUT", f"{base}/sandbox/limit"]
            change = urllib.request.Request(  # noqa: S310 - the limit changed while it serves
                f"{base}/sandbox/limit", data=b'{"rate": 0, "burst": 1, "retry_after": 2}',
                method="PUT")
            with urllib.request.urlopen(change) as answer:  # noqa: S310 - our own http URL
                assert answer.status == 200
            assert [status_of(url) for _ in range(2)] == [(429, "2"), (429, "2")]
            server.send_signal(signal.SIGINT)  # Ctrl-C
            assert server.wait(timeout=10) == 0
        finally:
            if server.poll() is None:
                server.kill()


def test_a_command_in_sandbox_mode_meets_the_limit() -> None:
    """A burst of one and no token back while it runs: of three addresses one is
    answered; the others wait a Retry-After (1 s) their 0.5 s budget has no room for."""
    code, out, _ = run("--sandbox", "--timeout", "0.5", "--rate", "0.001", "--burst", "1",
                       "check", "a@example.com", "b@example.com", "c@example.com")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [line.get("result") for line in lines].count("Valid") == 1
    refused = [line["error"] for line in lines if line.get("error")]
    assert len(refused) == 2 and all("(HTTP 429)" in error for error in refused)


def test_without_the_flags_a_sandbox_mode_command_is_not_limited() -> None:
    code, out, _ = run("--sandbox", "check", *(f"u{i}@example.com" for i in range(20)))
    assert code == 0 and out.count('"result"') == 20


@pytest.mark.parametrize(("argv", "limit"), [
    (["sandbox", "--rate", "500"], RateLimit(500, 50, 1.0)),
    (["sandbox", "--rate", "5", "--burst", "1", "--retry-after", "0.5"],
     RateLimit(5, 1, 0.5)),
    (["sandbox", "--rate", "0"], RateLimit(0, 1, 1.0)),  # the service takes nothing more
    (["sandbox", "--rate", "3", "--no-retry-after", "--max-in-flight", "8"],
     RateLimit(3, 1, None, 8)),
    (["--rate", "500", "--burst", "7", "sandbox"], RateLimit(500, 7, 1.0)),
    (["--sandbox", "--rate", "40", "check", "a@example.com"], RateLimit(40, 4, 1.0)),
    (["sandbox"], None),
])
def test_the_flags_make_the_limit(argv: list[str], limit: RateLimit | None) -> None:
    assert rate_limit_of(build_parser().parse_args(argv)) == limit


@pytest.mark.parametrize(("argv", "said"), [
    (["--rate", "5", "check", "a@example.com"], "--rate limits the sandbox: add --sandbox"),
    (["--sandbox", "--burst", "5", "check", "a@example.com"], "--burst needs --rate"),
    (["sandbox", "--max-in-flight", "8"], "--max-in-flight needs --rate"),
    (["sandbox", "--no-retry-after", "--port", "0"], "--no-retry-after needs --rate"),
])
def test_flags_that_cannot_work_are_one_line_and_exit_2(argv: list[str], said: str) -> None:
    code, out, err = run(*argv)
    assert code == 2 and out == ""
    assert err.startswith(f"asyncsdk: error: {said}") and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv", [
    ["sandbox", "--rate", "-1"],
    ["sandbox", "--rate", "nan"],
    ["sandbox", "--rate", "5", "--burst", "-1"],
    ["sandbox", "--rate", "5", "--burst", "0"],  # a bucket that never holds a token
    ["sandbox", "--rate", "inf"],
    ["sandbox", "--rate", "fast"],
    ["sandbox", "--rate", "5", "--burst", "2.5"],
    ["sandbox", "--rate", "5", "--retry-after", "nan"],
    ["sandbox", "--rate", "5", "--max-in-flight", "0"],
    ["sandbox", "--rate", "5", "--retry-after", "1", "--no-retry-after"],
])
def test_values_out_of_range_are_refused_by_the_parser(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_a_printed_follow_up_command_keeps_the_limit() -> None:
    args = build_parser().parse_args(["--sandbox", "--rate", "500", "--max-in-flight", "8",
                                      "jobs", "wait", "1"])
    env = make_environment(args, io.StringIO(), io.StringIO())
    assert env.command("jobs", "wait", "1").startswith(
        "asyncsdk --sandbox --rate 500 --burst 50 --retry-after 1 --max-in-flight 8 "
        "jobs wait 1")


def test_a_limit_the_parser_passes_but_the_sandbox_refuses_is_one_line() -> None:
    """Refused before the server starts: on a port taken, the limit is what is said."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        code, out, err = run("sandbox", "--port", port, "--rate", "5",
                             "--burst", "1" + "0" * 400)
    assert code == 2 and out == ""
    assert err.startswith("asyncsdk: error: burst: expected an integer >= 1")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(("given", "rate", "retry_after"), [
    (["--rate", "1234567", "--retry-after", "0.1234567"], 1234567.0, 0.1234567),
    (["--rate", "0.000123456789", "--retry-after", "2"], 0.000123456789, 2.0),
])
def test_a_follow_up_command_gives_exactly_the_same_limit(
        given: list[str], rate: float, retry_after: float) -> None:
    """Its flags are read back to the same limit (six digits, ``:g``, made 1234567 a
    1234570 and 0.1234567 a 0.123457)."""
    args = build_parser().parse_args(["--sandbox", *given, "jobs", "wait", "1"])
    limit = rate_limit_of(args)
    assert limit is not None and (limit.rate, limit.retry_after) == (rate, retry_after)
    again = make_environment(args, io.StringIO(), io.StringIO()).command("jobs", "wait", "1")
    argv = again.split()[1:]
    assert rate_limit_of(build_parser().parse_args(argv)) == limit
