"""Retry-After against urllib3's and openai-python's own test tables (issue 13).

The tables are read from ``<repo root>/../shared/peer-corpora/retry-after/tables.json``
(origins in its SOURCES.md). Every row agrees with its reference, or the deliberate
difference is stated here, per case, and asserted (``_retry.py`` says why):

* ``0`` / a date not in the future -> None (the normal backoff), where urllib3 says 0.
* ``1.0`` (a decimal fraction) is read as 1.0 s, where urllib3 refuses it.
* A wait over ``MAX_RETRY_AFTER`` (60 s) is capped to it, where urllib3 sleeps it whole
  and openai-python ignores a value over 120 s (backs off instead).
"""

from __future__ import annotations

import collections
import datetime as dt
import email.utils
import math
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from auth_helpers import serve
from helpers import corpus_json

import asyncsdk
from asyncsdk import _constants as C
from asyncsdk._core.retry import backoff_delay, parse_retry_after
from asyncsdk.testing import VirtualClock

_EMPTY = {"values": [], "rows": [], "now": 0, "now_utc": "2000-01-01T00:00:00+00:00"}
TABLES: dict[str, Any] = corpus_json("retry-after/tables.json", default=collections.
                                     defaultdict(lambda: _EMPTY))
NO_CAP = math.inf


@pytest.fixture(params=["UTC", "Asia/Jerusalem", "America/Los_Angeles", None])
def zone(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The machine's local zone (urllib3's ``stub_timezone`` list, plus a negative
    offset): a date must not be read in it."""
    saved = os.environ.get("TZ")
    if request.param is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = request.param
    time.tzset()
    yield request.param
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


@pytest.mark.parametrize("value", TABLES["urllib3.test_parse_retry_after_invalid"]["values"])
def test_urllib3_invalid_values(value: str) -> None:
    if value == "1.0":  # deliberate: an unambiguous decimal fraction is honoured
        assert parse_retry_after(value) == 1.0
    else:  # -1, +1, ²: not digits, not a date -> the normal backoff
        assert parse_retry_after(value) is None


@pytest.mark.parametrize(("value", "expected"), TABLES["urllib3.test_parse_retry_after"]["rows"])
def test_urllib3_seconds(value: str, expected: int) -> None:
    got = parse_retry_after(value, cap=NO_CAP)
    if expected == 0:  # deliberate: "retry now" means the normal backoff, never a 0 s loop
        assert got is None
    else:
        assert got == expected
        assert parse_retry_after(value) == min(expected, C.MAX_RETRY_AFTER)


_SLEEP = TABLES["urllib3.test_respect_retry_after_header_sleep"]


@pytest.mark.parametrize(("value", "respect", "sleep"), _SLEEP["rows"])
def test_urllib3_dates_in_any_local_zone(
    zone: str | None, value: str, respect: bool, sleep: int | None
) -> None:
    if not respect:  # urllib3's respect_retry_after_header=False: no such option here
        pytest.skip("asyncsdk always honours Retry-After")
    now = dt.datetime.fromisoformat(_SLEEP["now_utc"]).timestamp()
    got = parse_retry_after(value, now=now, cap=NO_CAP)
    assert got == sleep  # None where urllib3 does not sleep (a date not in the future)
    if sleep is not None:
        assert parse_retry_after(value, now=now) == min(sleep, C.MAX_RETRY_AFTER)


def test_a_date_without_a_zone_is_utc_not_local_time(zone: str | None) -> None:
    now = dt.datetime(2019, 6, 3, 11, 0, tzinfo=dt.timezone.utc).timestamp()
    for value in ("Mon Jun  3 11:30:12 2019", "Mon, 03 Jun 2019 11:30:12 -0000"):
        assert parse_retry_after(value, now=now, cap=NO_CAP) == 1812


_OPENAI = TABLES["openai.test_parse_retry_after_header"]
OPENAI_MAX_RETRIES = 3  # the client of that test: remaining_retries counts down from 3


@pytest.mark.parametrize(("remaining", "value", "timeout"), _OPENAI["rows"])
def test_openai_rows(remaining: int, value: str, timeout: float) -> None:
    """openai takes the header when 0 < value <= 120 and finite, else backs off."""
    now = float(_OPENAI["now"])
    got = parse_retry_after(value, now=now, cap=NO_CAP)
    retry = OPENAI_MAX_RETRIES - remaining
    backoff = backoff_delay(retry, rand=lambda: 1.0)  # the jitter's upper end
    if got is None:  # we back off too: the same schedule (0.5 s doubling, 8 s cap)
        assert backoff == timeout
        return
    if got == timeout:  # the header honoured by both
        assert 0 < got <= 120
        return
    # Deliberate: a wait over 120 s (openai: backoff) is capped here instead.
    assert timeout == 0.5 and got > 120
    assert parse_retry_after(value, now=now) == C.MAX_RETRY_AFTER


_MAX_DELAY = TABLES["openai.test_retry_after_max_delay"]


@pytest.mark.parametrize(("headers", "retried"), _MAX_DELAY["rows"])
def test_openai_max_delay(headers: dict[str, str], retried: bool) -> None:
    if "retry-after" not in headers:
        pytest.skip("retry-after-ms is not a header asyncsdk reads")
    now = float(_MAX_DELAY["now"])
    wanted = parse_retry_after(headers["retry-after"], now=now, cap=NO_CAP)
    assert wanted is not None and (wanted <= 120) == retried  # the same reading
    # Deliberate: over 120 s openai does not retry; here the wait is capped at 60 s and
    # the retry is taken if it fits in the call's timeout.
    assert parse_retry_after(headers["retry-after"], now=now) == C.MAX_RETRY_AFTER


@pytest.mark.parametrize("value", ["0", "-1", "-10", "Mon, 03 Jun 2019 10:59:00 GMT", "0.0",
                                   " 0 "])
async def test_retry_now_uses_the_normal_backoff_not_a_tight_loop(value: str) -> None:
    """End to end: a 429 saying "retry now" is retried after the jittered backoff."""
    from aiohttp import web

    answers = iter([web.json_response({}, status=429, headers={"Retry-After": value}),
                    web.json_response([])])

    async def handler(request: web.Request) -> web.Response:
        return next(answers)

    clock = VirtualClock(random=1.0)
    async with serve(handler) as base, asyncsdk.Client("k", "u", base_url=base,
                                                       clock=clock) as client:
        assert await client.contacts.list() == []
    assert clock.sleeps == [C.INITIAL_RETRY_DELAY]


@pytest.mark.parametrize("digits", [35, 308, 309, 400, 5000])
def test_a_delay_of_any_length_is_capped_not_ignored(digits: int) -> None:
    """Before: 309 nines or more read as ``inf`` and were ignored (None: the ~0.5 s
    backoff) where the server asked for the longest wait."""
    from asyncsdk import _constants

    assert parse_retry_after("9" * digits) == _constants.MAX_RETRY_AFTER
    assert parse_retry_after("9" * digits, cap=5.0) == 5.0


# --- a date counted from the answer's own Date ----------------------------------------
YEAR = 365 * 86400.0


@pytest.mark.parametrize("skew", [-YEAR, -3600.0, 3600.0, YEAR])
@pytest.mark.parametrize(("value", "respect", "sleep"), _SLEEP["rows"])
def test_urllib3_dates_counted_from_the_answers_date_whatever_this_clock_says(
    value: str, respect: bool, sleep: int | None, skew: float
) -> None:
    """urllib3's rows, the answer dated at their "now": this machine's clock off by
    ``skew`` changes nothing (before: the wait was counted from ``time.time()``)."""
    if not respect:
        pytest.skip("asyncsdk always honours Retry-After")
    sent = dt.datetime.fromisoformat(_SLEEP["now_utc"])
    date = email.utils.format_datetime(sent, usegmt=True)
    got = parse_retry_after(value, date=date, now=sent.timestamp() + skew, cap=NO_CAP)
    assert got == sleep


@pytest.mark.parametrize("date", ["", "not a date", "Mon, 99 Jun 2019 11:00:00 GMT"])
def test_an_answer_without_a_readable_date_is_counted_from_this_machines_time(
        date: str) -> None:
    now = dt.datetime(2019, 6, 3, 11, 0, tzinfo=dt.timezone.utc).timestamp()
    assert parse_retry_after("Mon, 03 Jun 2019 11:00:30 GMT", date=date, now=now) == 30.0


def _http_date(moment: float) -> str:
    return email.utils.formatdate(moment, usegmt=True)


@pytest.mark.parametrize("skew", [-3600.0, -30.0, 30.0, 3600.0])
async def test_a_server_whose_clock_is_off_gets_the_wait_it_asked_for(skew: float) -> None:
    """End to end, on a virtual clock: a 429 dated by a server whose clock is ``skew``
    seconds off this machine's asks for 7 s, as an HTTP date. A ``RateLimitError`` (no
    retry left) says 7 s, and a retry waits 7 s. Before: the date was counted from this
    machine's time: 30 s or an hour behind, a date "in the past" (``retry_after`` None,
    the 0.5 s backoff); ahead, 37 s or the 60 s cap."""
    from aiohttp import web

    limited = [True, True, False]  # the first call's answer, the second's two

    async def handler(request: web.Request) -> web.Response:
        if not limited.pop(0):
            return web.json_response([])
        sent = float(int(time.time() + skew))  # an HTTP date has whole seconds
        return web.json_response({}, status=429, headers={
            "Date": _http_date(sent), "Retry-After": _http_date(sent + 7)})

    clock = VirtualClock(random=1.0)
    async with serve(handler) as base, asyncsdk.Client("k", "u", base_url=base,
                                                       clock=clock) as client:
        with pytest.raises(asyncsdk.RateLimitError) as info:
            await client.with_options(max_retries=0).contacts.list()
        assert info.value.retry_after == 7.0
        assert await client.contacts.list() == []
    assert clock.sleeps == [7.0]
