"""``check-many``'s first Ctrl-C (or SIGTERM) "stops sending and waits for the checks
already sent" (README "Command line"), also behind a rate limit, where most of the
``--concurrency`` checks taken wait for their moment of the pace rather than being on
the wire: those are not sent after the signal (old code sent, and paid for, every one of
them, taking seconds), every paid answer has its row, and the resume pays for each
remaining address once: over both runs every address is paid for exactly once."""

from __future__ import annotations

import collections
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import CHECK, asyncsdk, environment, read_rows, start, wait_until

from asyncsdk.testing import RateLimit, Sandbox
from asyncsdk.testing.plugin import threaded_sandbox

ADDRESSES = [f"user{i}@example.com" for i in range(60)]
CONCURRENCY = 16
#: Checks a run may still pay for after the signal: those on the wire then, and what
#: the pace lets out before the next check ends (about one, at 4 a second). Old code
#: paid for every check taken (up to CONCURRENCY, 12 or more measured).
AFTER_SIGNAL = 6


@pytest.fixture
def limited() -> Iterator[Sandbox]:
    """A sandbox that answers 4 checks a second (429 + Retry-After: 1 beyond)."""
    with threaded_sandbox(rate_limit=RateLimit(rate=4, burst=4, retry_after=1.0)) as sb:
        yield sb


def paid(sb: Sandbox) -> list[str]:
    """The addresses of the checks the sandbox answered (a 429 costs nothing)."""
    return [r.query["email"] for r in sb.requests if r.path == CHECK and r.status == 200]


def rows_written(path: Path) -> int:
    return path.read_bytes().count(b"\n") - 1 if path.exists() else 0


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_first_signal_sends_nothing_more_and_every_address_is_paid_once(
        limited: Sandbox, tmp_path: Path, signum: int, code: int) -> None:
    (tmp_path / "emails.txt").write_text("".join(f"{a}\n" for a in ADDRESSES))
    args = ["check-many", "emails.txt", "-o", "results.csv", "--concurrency",
            str(CONCURRENCY)]
    env = environment(limited)
    output = tmp_path / "results.csv"
    with start(*args, env=env, cwd=tmp_path) as run:
        wait_until(lambda: rows_written(output) >= 3, "three rows")
        before = len(paid(limited))
        run.send_signal(signum)
        _, err = run.communicate(timeout=60)
    assert run.returncode == code, err
    first = paid(limited)
    assert len(first) - before <= AFTER_SIGNAL, (before, len(first))
    rows = read_rows(output)
    # Every paid answer has its row, and only those: no row for a check not sent.
    assert sorted(r["email"] for r in rows) == sorted(first)
    assert all(r["verdict"] == "Valid" for r in rows)
    assert "--resume" in err

    limited.limits.set(None)  # the resume, without the limit (not to wait for it)
    again = asyncsdk(*args, "--resume", env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    rows = read_rows(output)
    assert sorted(int(r["row"]) for r in rows) == list(range(1, len(ADDRESSES) + 1))
    assert all(r["verdict"] == "Valid" for r in rows)
    paid_for = collections.Counter(paid(limited))
    assert sorted(paid_for) == sorted(ADDRESSES)
    assert set(paid_for.values()) == {1}  # none paid twice, none lost


@pytest.fixture
def slow() -> Iterator[Sandbox]:
    """A sandbox that answers 2 checks a second (429 + Retry-After: 1 beyond)."""
    with threaded_sandbox(rate_limit=RateLimit(rate=2, burst=2, retry_after=1.0)) as sb:
        yield sb


FEW = ADDRESSES[:10]


def test_a_first_signal_stops_the_checks_waiting_when_every_address_was_read(
        slow: Sandbox, tmp_path: Path) -> None:
    """Every address was read (fewer than ``--concurrency``): the input cannot end any
    more, and old code sent (and paid for) every check still waiting for its moment of
    the pace after the signal; ``check_many(stop=...)`` keeps them back."""
    (tmp_path / "emails.txt").write_text("".join(f"{a}\n" for a in FEW))
    args = ["check-many", "emails.txt", "-o", "results.csv", "--concurrency", "16"]
    env = environment(slow)
    output = tmp_path / "results.csv"
    with start(*args, env=env, cwd=tmp_path) as run:
        wait_until(lambda: rows_written(output) >= 2, "two rows")
        before = len(paid(slow))
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    first = paid(slow)
    assert len(first) - before <= 2, (before, len(first))  # old code: all of FEW
    assert len(first) < len(FEW)
    assert sorted(r["email"] for r in read_rows(output)) == sorted(first)

    slow.limits.set(None)
    again = asyncsdk(*args, "--resume", env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(r["email"] for r in read_rows(output)) == sorted(FEW)
    assert set(collections.Counter(paid(slow)).values()) == {1}
