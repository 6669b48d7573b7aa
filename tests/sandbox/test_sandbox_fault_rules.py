"""Fault rules as a user's test writes them: each kind spoils exactly the requests it
was asked for, of its path and method only, then stops; a rule that could never apply,
or an option its kind does not read, is refused when added, naming it."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from asyncsdk import InvalidInputError
from asyncsdk.testing import FaultKind, Sandbox

CHECK = "/api/v1/single/check"
CONTACTS = "/api/v1/contact/"


async def send(sb: Sandbox, http: aiohttp.ClientSession, path: str,
               method: str = "GET") -> None:
    """One request, whatever comes back (a reset, a cut body: the record says)."""
    params = ({"api_key": sb.api_key} if path == CONTACTS else
              {"api": sb.api_key, "username": sb.username, "email": "a@example.com",
               "timeout": "5"})
    try:
        async with http.request(method, sb.base_url + path, params=params,
                                json={} if method == "POST" else None) as answer:
            await answer.read()
    except aiohttp.ClientError:
        pass


@pytest.mark.parametrize("kind", list(FaultKind))
@pytest.mark.parametrize("times", [1, 3])
async def test_a_rule_spoils_exactly_its_requests_then_stops(kind: FaultKind,
                                                             times: int) -> None:
    options = {"seconds": 0.0} if kind is FaultKind.DELAY else {}
    # A fresh connection each time: aiohttp re-sends a GET once after a reset on a
    # kept-alive one, which would hide how many the rule spoiled.
    fresh = aiohttp.TCPConnector(force_close=True)
    async with Sandbox() as sb, aiohttp.ClientSession(connector=fresh) as http:
        rule = sb.faults.add(CHECK, kind, times, method="GET", **options)
        await send(sb, http, CHECK, "POST")  # another method: untouched
        await send(sb, http, CONTACTS)  # another path: untouched
        for _ in range(times + 2):
            await send(sb, http, CHECK)
        assert (rule.remaining, rule.hits) == (0, times)
        assert sb.faults.pending == []
        sb.faults.add(CHECK, kind, None, **options)
        sb.faults.clear()
        await send(sb, http, CHECK)  # cleared: untouched
    spoiled = [(r.method, r.path) for r in sb.requests if r.fault is not None]
    assert spoiled == [("GET", CHECK)] * times
    assert sb.faults.applied == [("GET", CHECK, kind)] * times
    checks = [r for r in sb.requests if r.method == "GET" and r.path == CHECK]
    faults = [r.fault for r in checks]
    assert faults[:times] == [kind.value] * times  # the first ones, then none
    assert faults[times:] == [None] * (len(checks) - times)
    assert len(checks) >= times + 3  # more after a reset: aiohttp re-sends a GET once


async def test_rules_combine_in_the_order_added() -> None:
    async with Sandbox() as sb, aiohttp.ClientSession() as http:
        sb.faults.status(CHECK, 500, times=1)
        sb.faults.html_error("/api/v1/*", times=2)
        sb.faults.status("*", 503, times=None, method="DELETE")
        for _ in range(4):
            await send(sb, http, CHECK)
    assert [r.status for r in sb.requests] == [500, 502, 502, 200]


@pytest.mark.parametrize(("call", "field"), [
    (lambda f: f.status("api/v1/single/check"), "path"),  # no leading "/": never matched
    (lambda f: f.status(CHECK + "?email=a@example.com"), "path"),
    (lambda f: f.status("http://127.0.0.1:8080" + CHECK), "path"),
    (lambda f: f.status("/api/*/check"), "path"),  # "*" only ends a prefix
    (lambda f: f.status(""), "path"),
    (lambda f: f.add(None, "status"), "path"),
    (lambda f: f.status(CHECK, times=1.5), "times"),  # spoiled 2
    (lambda f: f.status(CHECK, times="2"), "times"),  # TypeError when a request came
    (lambda f: f.status(CHECK, times=True), "times"),
    (lambda f: f.status(CHECK, times=-1), "times"),
    (lambda f: f.add(CHECK, "explode"), "kind"),
    (lambda f: f.add(CHECK, "status", statuss=500), "statuss"),  # ignored: a 503
    (lambda f: f.add(CHECK, "delay", status=500), "status"),
    (lambda f: f.add(CHECK, "truncated", seconds=1), "seconds"),
    (lambda f: f.delay(CHECK, -1), "seconds"),
    (lambda f: f.delay(CHECK, float("inf")), "seconds"),
    (lambda f: f.delay(CHECK, "1"), "seconds"),
    (lambda f: f.rate_limit(CHECK, retry_after=-5), "retry_after"),
    (lambda f: f.status(CHECK, 99), "status"),
    (lambda f: f.status(CHECK, method="GET "), "method"),
    (lambda f: f.random(0.5, path="api/*"), "path"),
    (lambda f: f.random(0.5, kinds=["reset"], seconds=1), "seconds"),
    (lambda f: f.random(2), "rate"),
    (lambda f: f.random(0.5, kinds=[]), "kinds"),
])
def test_a_rule_that_could_not_apply_as_written_is_refused(call: Any, field: str) -> None:
    faults = Sandbox().faults
    with pytest.raises(InvalidInputError) as caught:
        call(faults)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert faults.pending == []


def test_the_rules_as_documented_are_taken() -> None:
    faults = Sandbox().faults
    faults.add("*", FaultKind.STATUS, None, status=500, retry_after="Wed, 21 Oct 2015 07:28:00 GMT",
               body={"detail": "x"})
    faults.add("/api/v1/jobs/*", "reset", 2, method="post", process=True)
    faults.rate_limit(CHECK, retry_after=None)
    faults.delay(CHECK, 0)
    faults.wrong_content_type(CHECK, content_type="text/plain; charset=utf-8")
    faults.random(0.1, kinds=list(FaultKind), seed=3, status=500, seconds=0.01,
                  retry_after=0, content_type="text/plain", process=False)
    assert len(faults.pending) == 5
