"""The sandbox's mail send takes form data as multipart too, and records it (issue 29,
item 6). Before, a ``multipart/form-data`` body was answered with HTTP 500: the
recording middleware read the body, and the handler's ``request.post()`` then found the
stream already consumed."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from sandbox_helpers import Api

from asyncsdk.testing import SentMail

pytestmark = pytest.mark.asyncsdk_sandbox(verified_domains=["example.com"], credit=5)


def fields(sandbox_api: Api, /, **changes: Any) -> dict[str, str]:
    sb = sandbox_api.sb
    form = {"api": sb.api_key, "username": sb.username, "from": "news@example.com",
            "to": "ada@example.org", "subject": "Grüße",
            "message": "<p>Hi & bye</p>\r\n<p>-- \nline two</p>\n",
            **changes}
    return {k: v for k, v in form.items() if v is not None}


def multipart(form: dict[str, str]) -> aiohttp.MultipartWriter:
    writer = aiohttp.MultipartWriter("form-data")
    for name, value in form.items():
        part = writer.append(value)
        part.set_content_disposition("form-data", name=name)
    return writer


async def send(api: Api, body: Any) -> tuple[int, Any]:
    async with api.http.post("/api/v1/mail/send/", data=body) as resp:
        return resp.status, await resp.json()


async def test_a_multipart_mail_is_sent_and_recorded(api: Api) -> None:
    status, answer = await send(api, multipart(fields(api)))
    assert status == 200
    assert answer == {"status": "success", "message": "Queued", "id": "msg-000001"}
    assert api.sb.outbox == [SentMail(
        id="msg-000001", sender="news@example.com", to="ada@example.org",
        subject="Grüße", message=fields(api)["message"], username=api.sb.username)]
    recorded = api.sb.requests[-1]
    assert recorded.headers["Content-Type"].startswith("multipart/form-data")
    assert recorded.form == fields(api)  # the record reads the multipart body too
    assert api.sb.credit == 4


async def test_a_form_with_a_file_field_is_multipart_and_sent(api: Api) -> None:
    """aiohttp's ``FormData`` turns multipart once a field is a file: the text fields are
    read, the file is no text field."""
    form = aiohttp.FormData(fields(api))
    form.add_field("attachment", b"%PDF-1.4", filename="a.pdf",
                   content_type="application/pdf")
    status, answer = await send(api, form)
    assert status == 200 and answer["status"] == "success"
    assert api.sb.requests[-1].form == fields(api)


@pytest.mark.parametrize("missing", ["from", "to", "subject", "message", "api", "username"])
async def test_a_multipart_mail_missing_a_field_gets_the_service_error(
    api: Api, missing: str
) -> None:
    status, answer = await send(api, multipart(fields(api, **{missing: None})))
    assert status == 200
    assert answer == {"status": "fail", "error": "Required parameter missing or invalid."}


async def test_a_multipart_mail_with_a_wrong_key_is_refused(api: Api) -> None:
    status, answer = await send(api, multipart(fields(api, api="wrong")))
    assert (status, answer) == (200, {
        "status": "fail", "error": "User authentication failed. Wrong API Key or username."})


async def test_a_broken_multipart_body_is_a_missing_parameter_not_a_500(api: Api) -> None:
    async with api.http.post(
            "/api/v1/mail/send/", data=b"--x\r\nnot a part",
            headers={"Content-Type": "multipart/form-data; boundary=x"}) as resp:
        assert resp.status == 200
        assert await resp.json() == {"status": "fail",
                                     "error": "Required parameter missing or invalid."}


async def test_the_urlencoded_form_is_read_as_before(api: Api) -> None:
    status, answer = await send(api, fields(api))
    assert status == 200 and answer["status"] == "success"
    assert api.sb.requests[-1].form == fields(api)
    assert api.sb.outbox[-1].subject == "Grüße"
