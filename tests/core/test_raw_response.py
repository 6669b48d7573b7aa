"""The raw answer of any call (``client.with_raw_response``) and the ``User-Agent``."""

from __future__ import annotations

import pickle
import platform
import re
from typing import Any

import aiohttp
import pytest
from aioresponses import aioresponses
from helpers import API_KEY, USERNAME

import asyncsdk
from asyncsdk import _constants
from asyncsdk.testing import Sandbox

CHECK_URL = re.compile(r"^https://api\.test/api/v1/single/check\?.*$")
OK_CHECK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}


async def test_raw_response_carries_the_answer(client: asyncsdk.Client,
                                               mocked: aioresponses) -> None:
    mocked.get(CHECK_URL, status=503)
    mocked.get(CHECK_URL, payload=OK_CHECK,
               headers={"X-Request-Id": "req-42", "X-RateLimit-Remaining": "9"})
    raw = await client.with_raw_response.validation.check("a@b.com")
    assert isinstance(raw, asyncsdk.RawResponse)
    assert isinstance(raw.parsed, asyncsdk.CheckResult) and raw.parsed.email == "a@b.com"
    assert raw.status_code == 200
    assert raw.request_id == "req-42"
    assert raw.headers["X-RateLimit-Remaining"] == "9"
    assert raw.attempts == 2 and raw.elapsed >= 0
    assert API_KEY not in raw.url and USERNAME not in raw.url and "REDACTED" in raw.url
    # The plain call is unchanged and leaves nothing behind.
    mocked.get(CHECK_URL, payload=OK_CHECK)
    assert isinstance(await client.validation.check("a@b.com"), asyncsdk.CheckResult)


async def test_raw_response_of_a_listing_and_of_an_error(client: asyncsdk.Client,
                                                         mocked: aioresponses) -> None:
    url = re.compile(r"^https://api\.test/api/v1/contact/(\?.*)?$")
    mocked.get(url, payload=[])
    raw = await client.with_raw_response.contacts.list()
    assert raw.parsed == [] and raw.status_code == 200 and raw.attempts == 1
    mocked.get(url, status=404, payload={"detail": "Not found."},
               headers={"X-Request-Id": "r-9"})
    with pytest.raises(asyncsdk.NotFoundError) as info:
        await client.with_raw_response.contacts.list()
    assert info.value.request_id == "r-9"  # errors already carry the answer


async def test_an_api_error_keeps_its_answers_headers_and_response(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    """Rate-limit headers on a refusal are not lost: ``APIError.headers`` and
    ``APIError.response`` (a ``RawResponse`` of the last answer, after the retries),
    each value scrubbed (a header echoing the request), and both survive pickling (bulk
    workers hand errors between processes)."""
    limited = {"Retry-After": "1", "X-RateLimit-Remaining": "0", "X-Request-Id": "r-7",
               "X-Echo": f"api={API_KEY}&username={USERNAME}"}
    for _ in range(3):
        mocked.get(CHECK_URL, status=429, headers=limited, payload={"detail": "slow down"})
    with pytest.raises(asyncsdk.RateLimitError) as info:
        await client.validation.check("a@b.com")
    error = info.value
    assert error.headers is not None and error.response is not None
    assert error.headers["x-ratelimit-remaining"] == "0"  # any case, as aiohttp's
    assert error.headers["X-Echo"] == "api=REDACTED&username=REDACTED"
    response = error.response
    assert isinstance(response, asyncsdk.RawResponse) and response.parsed is None
    assert (response.status_code, response.request_id, response.attempts) == (429, "r-7", 3)
    assert response.headers is error.headers and response.elapsed >= 0
    assert response.url == error.url and "REDACTED" in response.url
    copy = pickle.loads(pickle.dumps(error))
    assert copy.headers == error.headers and copy.response == error.response
    assert API_KEY not in repr(vars(copy)) and USERNAME not in repr(vars(copy))


async def test_an_api_error_of_one_attempt_and_one_without_an_answer(
        client: asyncsdk.Client, mocked: aioresponses) -> None:
    mocked.get(CHECK_URL, payload={"status": "fail", "error": "Email Format is not correct."},
               headers={"X-Request-Id": "r-1"})
    with pytest.raises(asyncsdk.InvalidEmailError) as info:
        await client.validation.check("a@b.com")
    assert info.value.response is not None and info.value.response.attempts == 1
    assert info.value.response.status_code == 200  # a refusal in the body
    assert asyncsdk.APIError("made by hand").headers is None
    assert asyncsdk.APIError("made by hand").response is None


async def test_raw_response_refuses_what_is_not_one_request(client: asyncsdk.Client) -> None:
    with pytest.raises(asyncsdk.UsageError, match="check_many"):
        await client.with_raw_response.validation.check_many(["a@b.com"])
    with pytest.raises(AttributeError):
        client.with_raw_response.no_such_area  # noqa: B018
    with pytest.raises(AttributeError):
        client.with_raw_response.contacts._list  # noqa: B018


def _agent(headers: dict[str, str]) -> str:
    return {k.lower(): v for k, v in headers.items()}["user-agent"]


async def _agents(**kwargs: Any) -> str:
    async with Sandbox(api_key=API_KEY, username=USERNAME) as sb:
        async with sb.client(**kwargs) as client:
            await client.contacts.list()
        return _agent(sb.requests[-1].headers)


async def test_user_agent_names_the_library_python_and_aiohttp() -> None:
    python = ".".join(platform.python_version_tuple()[:2])
    expected = f"asyncsdk/{asyncsdk.__version__} python/{python} aiohttp/{aiohttp.__version__}"
    assert await _agents() == expected
    assert await _agents(app_name="myapp/1.2") == expected + " myapp/1.2"
    assert asyncsdk.__version__ == _constants.VERSION


async def test_user_agent_with_a_callers_session() -> None:
    async with aiohttp.ClientSession() as session:
        assert (await _agents(session=session, app_name="x/1")).startswith("asyncsdk/")
    async with aiohttp.ClientSession(headers={"User-Agent": "theirs/3"}) as session:
        assert await _agents(session=session) == "theirs/3"  # the caller's choice wins


@pytest.mark.parametrize("bad", ["", " x", "a\nb", 5, "x" * 201])
def test_app_name_is_checked(bad: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match="app_name"):
        asyncsdk.Client("k", base_url="https://h", app_name=bad)


async def test_raw_response_of_an_answer_decoded_off_the_loop(
    client: asyncsdk.Client, mocked: aioresponses, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big answer is finished by another path (a worker thread decodes it): its raw
    response is filled all the same."""
    monkeypatch.setattr(_constants, "OFFLOAD_DECODE_BYTES", 64)
    url = re.compile(r"^https://api\.test/api/v1/contact/(\?.*)?$")
    lists = [{"id": i, "name": f"list {i}", "is_email": True, "is_push": False,
              "is_sms": False, "emaillist": []} for i in range(20)]
    mocked.get(url, status=502)
    mocked.get(url, payload=lists, headers={"X-Request-Id": "big-1"})
    raw = await client.with_raw_response.contacts.list()
    assert [cl.id for cl in raw.parsed] == list(range(20))
    assert raw.status_code == 200 and raw.request_id == "big-1" and raw.attempts == 2
    assert API_KEY not in raw.url and "REDACTED" in raw.url
