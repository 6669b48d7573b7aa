"""What an error answer may cost and show: its text is kept to ``ERROR_BODY_PREVIEW``
characters (scrubbed first, never cut inside a credential), an answer about to be
retried is read up to ``MAX_RETRIED_BODY_BYTES`` only, the text can always be printed,
and an answer that echoes the request leaves no credential in any frame's locals."""

from __future__ import annotations

import json
import traceback
from typing import Any

import pytest
from aiohttp import web
from auth_helpers import serve
from helpers import API_KEY, USERNAME
from reliability_helpers import assert_no_secrets, exception_text

import asyncsdk
from asyncsdk import _constants
from asyncsdk.testing import VirtualClock

CAP = _constants.ERROR_BODY_PREVIEW


def _client(base: str, **options: Any) -> asyncsdk.Client:
    return asyncsdk.Client(API_KEY, USERNAME, base_url=base, **options)


def _answer(status: int, data: Any) -> Any:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(data, status=status)
    return handler


@pytest.mark.parametrize(("status", "data", "error"), [
    (404, {"detail": "E" * (3 * 1024 * 1024)}, asyncsdk.NotFoundError),
    (200, {"status": "fail", "error": "E" * (3 * 1024 * 1024)}, asyncsdk.APIError),
    (400, {"detail": "x" * (CAP - 3) + " " + API_KEY + " tail"}, asyncsdk.InvalidRequestError),
])
async def test_a_long_error_text_is_cut_after_scrubbing(
    status: int, data: dict[str, str], error: type[asyncsdk.APIError]
) -> None:
    """Before: the whole text (megabytes) was scrubbed on the event loop, twice, and
    kept in ``str(exc)``; a 50 MB text held the loop for 9 s past the call's timeout."""
    async with serve(_answer(status, data)) as base, _client(base, max_retries=0) as client:
        call = (client.validation.check("a@b.com") if data.get("status") == "fail"
                else client.contacts.get(1))
        with pytest.raises(error) as caught:
            await call
    exc = caught.value
    assert exc.error_text is not None
    assert len(exc.error_text) <= CAP + len(API_KEY)
    assert len(str(exc)) < CAP + 200
    assert_no_secrets(exception_text(exc))  # a key across the cut is not shown in part
    assert API_KEY[:8] not in exc.error_text


async def test_an_error_text_with_a_lone_surrogate_can_be_printed() -> None:
    """JSON may spell a lone surrogate ("\\ud800"); before, ``print(exc)`` raised
    ``UnicodeEncodeError``."""
    body = b'{"detail": "bad \\ud800 value"}'

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, status=500, content_type="application/json")

    async with serve(handler) as base, _client(base, max_retries=0) as client:
        with pytest.raises(asyncsdk.ServerError) as caught:
            await client.contacts.list()
    str(caught.value).encode("utf-8")
    assert "bad ? value" in str(caught.value)


async def test_an_answer_about_to_be_retried_is_read_up_to_its_cap(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503 whose retry would not fit in the call's time (``Retry-After``) ends the call
    with the answer read for the retry: read on the loop only up to
    ``MAX_RETRIED_BODY_BYTES`` (before: up to 64 MiB, then parsed on the loop), so a
    longer one is reported by its status alone."""
    monkeypatch.setattr(_constants, "MAX_RETRIED_BODY_BYTES", 64 * 1024)
    sent = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal sent
        sent += 1
        return web.json_response({"detail": "D" * (200 * 1024)}, status=503,
                                 headers={"Retry-After": "30"})

    async with serve(handler) as base, _client(base, max_retries=2, timeout=2) as client:
        with pytest.raises(asyncsdk.ServerError) as caught:
            await client.contacts.list()
    assert sent == 1
    assert caught.value.status_code == 503
    assert caught.value.error_text is None


def _echo(body: dict[str, Any]) -> Any:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({k: v.replace("{url}", str(request.url))
                                  for k, v in body.items()})
    return handler


@pytest.mark.parametrize(("body", "call"), [
    ({"note": "{url}"}, "status"),
    ({"status": "success", "note": "{url}"}, "create_job"),
])
async def test_an_answer_echoing_the_request_leaves_no_credential_in_locals(
    body: dict[str, str], call: str
) -> None:
    """``job.status()`` and ``create_job`` refuse an answer without a status / job id;
    before, their frames kept that answer (the echoed URL, key included) as locals."""
    async with serve(_echo(body)) as base, _client(base, max_retries=0) as client:
        pending = (client.validation.job(1).status() if call == "status"
                   else client.validation.create_job("http://127.0.0.1:9/list.csv"))
        with pytest.raises(asyncsdk.ResponseDecodeError) as caught:
            await pending
    rendered = "".join(traceback.TracebackException.from_exception(
        caught.value, capture_locals=True).format())
    assert_no_secrets(rendered + exception_text(caught.value))
    assert json.dumps(API_KEY)[1:-1] not in rendered


@pytest.mark.parametrize("job_id", [-1, -(2**63), 2**63])
async def test_a_job_id_no_job_handle_takes_is_no_job_id(job_id: int) -> None:
    async with serve(_answer(200, {"status": "success", "job_id": job_id})) as base, \
            _client(base, max_retries=0) as client:
        with pytest.raises(asyncsdk.ResponseDecodeError, match="no job id"):
            await client.validation.create_job("http://127.0.0.1:9/list.csv")


@pytest.mark.parametrize("status", [200, 201])
async def test_an_unreadable_2xx_answer_to_a_create_says_it_may_have_taken_effect(
    status: int
) -> None:
    """A create answered 2xx with no body: before, ``ResponseDecodeError`` without a
    status, which read as if nothing had happened (and invited a second, duplicate
    create)."""
    from asyncsdk.models.products import ProductInput

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status)

    async with serve(handler) as base, _client(base, max_retries=0) as client:
        with pytest.raises(asyncsdk.ResponseDecodeError) as created:
            await client.products.create(ProductInput(name="W", selling_price=1))
        with pytest.raises(asyncsdk.ResponseDecodeError) as read:
            await client.products.get(1)
    assert created.value.status_code == status
    assert "may have taken effect" in str(created.value)
    assert created.value.url is not None and API_KEY not in created.value.url
    assert read.value.status_code == status
    assert "taken effect" not in str(read.value)  # a read changes nothing


@pytest.mark.parametrize(("status", "text", "error", "sends"), [
    (503, "The request was refused due to insufficent credit.",
     asyncsdk.InsufficientCreditError, 1),
    (500, "User authentication failed. Wrong API Key or username.",
     asyncsdk.AuthenticationError, 1),
    (429, "The request was refused due to insufficent credit.",
     asyncsdk.InsufficientCreditError, 1),
    (503, "Something went wrong, try later.", asyncsdk.ServerError, 3),
])
async def test_a_fail_text_decides_before_a_retry(
    status: int, text: str, error: type[asyncsdk.APIError], sends: int
) -> None:
    """Validation and mail failures are read from the body whatever the status: a 5xx
    or 429 whose ``fail`` text says no credit or a wrong key is not retried (before:
    sent 1 + max_retries times, then the same error). An unknown text still is."""
    sent = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal sent
        sent += 1
        return web.json_response({"status": "fail", "error": text}, status=status,
                                 headers={"Retry-After": "0"})

    async with serve(handler) as base, _client(base, max_retries=2,
                                               clock=VirtualClock()) as client:
        with pytest.raises(error):
            await client.validation.check("a@b.com")
    assert sent == sends

